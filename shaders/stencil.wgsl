// stencil: 3x3 box blur with clamp-to-edge,
//   out[r][c] = (sum over dr, dc in {-1, 0, 1} of img[clamp(r + dr)][clamp(c + dc)]) / 9.
//
// Each input pixel is read by 9 outputs. The ladder:
//   stencil_naive  every thread reads its 9 inputs from global memory and relies on the caches for the reuse;
//   stencil_tiled  the workgroup loads its 16x16 block plus a one-pixel halo (18x18) into workgroup memory once,
//                  so each input is fetched from global memory about 1.27 times instead of 9.
//
// Tall images may be processed in horizontal bands. One dispatch computes image rows
// [row_start, row_start + rows); the bound src slice begins at image row in_row_start and holds every row the band
// needs (clamped to the image); the bound dst slice begins at image row row_start.

struct Params {
    height: u32,        // image height
    width: u32,         // image width
    row_start: u32,     // first image row this dispatch computes
    rows: u32,          // number of rows this dispatch computes
    in_row_start: u32,  // image row held by the first row of src
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

// Image pixel (r, c), r and c already inside the image.
fn img(r: u32, c: u32) -> f32 {
    return src[(r - params.in_row_start) * params.width + c];
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 1: nine global loads per output. Clamping is done on unsigned indices: for offset i in 0..2 (meaning -1..1),
// max(r + i, 1) - 1 is r + i - 1 except that it stops at 0 at the top edge, and min(.., h - 1) stops at the
// bottom edge.
@compute @workgroup_size(16, 16)
fn stencil_naive(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let local_row = gid.y;
    if (c >= params.width || local_row >= params.rows) {
        return;
    }
    let r = params.row_start + local_row;
    let last_row = params.height - 1u;
    let last_col = params.width - 1u;

    var sum = 0.0;
    for (var i = 0u; i < 3u; i += 1u) {
        // Image row r + i - 1, clamped to [0, last_row] without going negative.
        let rr = min(max(r + i, 1u) - 1u, last_row);
        for (var j = 0u; j < 3u; j += 1u) {
            let cc = min(max(c + j, 1u) - 1u, last_col);
            sum = sum + img(rr, cc);
        }
    }
    dst[local_row * params.width + c] = sum / 9.0;
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 2: a tile with a halo in workgroup memory.
// The 18x18 input tile covers image rows tile_r0 - 1 .. tile_r0 + 16 and columns tile_c0 - 1 .. tile_c0 + 16.
// Its 324 pixels are loaded by the 256 threads in two rounds (thread t loads pixels t and t + 256 of the tile in
// row-major order, so consecutive threads read consecutive addresses). Coordinates are clamped to the image,
// which implements the clamp-to-edge rule for free: the halo of an edge tile simply repeats the edge pixels.
const TILE: u32 = 16u;
const HALO_TILE: u32 = 18u; // TILE + 2
const HALO_PIXELS: u32 = 324u; // HALO_TILE * HALO_TILE

var<workgroup> tile: array<f32, HALO_PIXELS>;

@compute @workgroup_size(16, 16)
fn stencil_tiled(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let t = lid.y * TILE + lid.x;
    // Tile origin, in image coordinates, as signed integers so that the halo at -1 can be expressed.
    let tile_r0 = i32(params.row_start + wid.y * TILE) - 1;
    let tile_c0 = i32(wid.x * TILE) - 1;
    let last_col = i32(params.width) - 1;
    // Rows that may be read: the image clamp, further limited to the rows present in src. The second limit only
    // affects rows beyond the band (feeding outputs past its end, which are not stored), so it changes no result
    // but keeps every load inside the bound slice.
    let first_row = i32(params.in_row_start);
    let last_row = min(i32(params.height) - 1, i32(params.row_start + params.rows));

    for (var p = t; p < HALO_PIXELS; p += TILE * TILE) {
        let tr = i32(p / HALO_TILE);
        let tc = i32(p % HALO_TILE);
        let r = clamp(tile_r0 + tr, first_row, last_row);
        let c = clamp(tile_c0 + tc, 0, last_col);
        tile[p] = img(u32(r), u32(c));
    }
    // No thread has returned: all reach the barrier.
    workgroupBarrier();

    let c = wid.x * TILE + lid.x;
    let local_row = wid.y * TILE + lid.y;
    if (c < params.width && local_row < params.rows) {
        var sum = 0.0;
        for (var i = 0u; i < 3u; i += 1u) {
            for (var j = 0u; j < 3u; j += 1u) {
                sum = sum + tile[(lid.y + i) * HALO_TILE + lid.x + j];
            }
        }
        dst[local_row * params.width + c] = sum / 9.0;
    }
}
