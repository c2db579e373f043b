// stencil: 3x3 box blur with clamp-to-edge,
//   out[r][c] = (sum over dr, dc in {-1, 0, 1} of img[clamp(r + dr)][clamp(c + dc)]) / 9.
//
// Each input pixel is read by 9 outputs. The ladder:
//   stencil_naive  every thread reads its 9 inputs from global memory and relies on the caches for the reuse;
//   stencil_tiled  the workgroup loads its 32x32 block plus a one-pixel halo (34x34) into workgroup memory once,
//                  and each thread reuses horizontal sums for four outputs of a column;
//   stencil_rows   no workgroup memory: each thread walks 8 rows down a column, reusing horizontal sums in
//                  registers.
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
// Rung 2: a tile with a halo in workgroup memory, and register reuse.
// A 32 x 8 workgroup computes a 32 x 32 output tile: it loads the 34 x 34 input tile (image rows tile_r0 - 1 ..
// tile_r0 + 32, columns tile_c0 - 1 .. tile_c0 + 32) into workgroup memory, in rounds of 256 consecutive pixels
// (consecutive threads, consecutive addresses), with coordinates clamped to the image: the clamp-to-edge rule comes
// free, the halo of an edge tile repeating the edge pixels. Then each thread computes four vertically adjacent
// outputs of one column: it forms the six horizontal sums of its input rows once and adds three of them per output,
// 18 workgroup-memory reads for 4 outputs instead of 36. (A 16 x 16 tile with one output per thread, the first form
// of this rung, measured slower than rung 1 through Vulkan on an H200
// (docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so); its loads were
// 1.27 reads per pixel, but 9 workgroup reads and a barrier per output cost more than the L1 cache saves.)
const TILE: u32 = 32u;
const TILE_ROWS_PER_THREAD: u32 = 4u;
const HALO_TILE: u32 = 34u; // TILE + 2
const HALO_PIXELS: u32 = 1156u; // HALO_TILE * HALO_TILE

var<workgroup> tile: array<f32, HALO_PIXELS>;

@compute @workgroup_size(32, 8)
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

    for (var p = t; p < HALO_PIXELS; p += TILE * 8u) {
        let tr = i32(p / HALO_TILE);
        let tc = i32(p % HALO_TILE);
        let r = clamp(tile_r0 + tr, first_row, last_row);
        let c = clamp(tile_c0 + tc, 0, last_col);
        tile[p] = img(u32(r), u32(c));
    }
    // No thread has returned: all reach the barrier.
    workgroupBarrier();

    let c = wid.x * TILE + lid.x;
    if (c >= params.width) {
        return; // no barrier follows
    }
    // This thread's outputs are tile rows i0 .. i0 + 3; they read tile rows i0 .. i0 + 5 (the tile starts one row
    // above the outputs).
    let i0 = lid.y * TILE_ROWS_PER_THREAD;
    var h: array<f32, 6>;
    for (var k = 0u; k < 6u; k += 1u) {
        let base = (i0 + k) * HALO_TILE + lid.x;
        h[k] = (tile[base] + tile[base + 1u]) + tile[base + 2u];
    }
    for (var k = 0u; k < TILE_ROWS_PER_THREAD; k += 1u) {
        let local_row = wid.y * TILE + i0 + k;
        if (local_row < params.rows) {
            dst[local_row * params.width + c] = ((h[k] + h[k + 1u]) + h[k + 2u]) / 9.0;
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 3: column strips in registers, no workgroup memory.
// Each thread computes STRIP vertically adjacent outputs of one column, walking down the column: each input row's
// horizontal sum (three loads, the outer two mostly from the L1 lines its neighbours loaded) is formed once and used
// by three outputs, so a thread makes 3 (STRIP + 2) loads for STRIP outputs (3.75 per output instead of 9), with
// no barrier. A 64 x 1 workgroup covers 64 columns of STRIP rows.
const STRIP: u32 = 8u;

// The horizontal sum of image row r (inside the image) at columns c - 1, c, c + 1, clamped.
fn horizontal_sum(r: u32, c: u32) -> f32 {
    let left = max(c, 1u) - 1u;
    let right = min(c + 1u, params.width - 1u);
    return (img(r, left) + img(r, c)) + img(r, right);
}

@compute @workgroup_size(64, 1)
fn stencil_rows(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let first = gid.y * STRIP; // first local row of the strip
    if (c >= params.width || first >= params.rows) {
        return;
    }
    let r0 = params.row_start + first;
    let last_row = params.height - 1u;
    var above = horizontal_sum(max(r0, 1u) - 1u, c);
    var middle = horizontal_sum(r0, c);
    for (var k = 0u; k < STRIP; k += 1u) {
        let local_row = first + k;
        if (local_row >= params.rows) {
            break;
        }
        let below = horizontal_sum(min(r0 + k + 1u, last_row), c);
        dst[local_row * params.width + c] = ((above + middle) + below) / 9.0;
        above = middle;
        middle = below;
    }
}
