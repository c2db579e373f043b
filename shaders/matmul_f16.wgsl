// matmul, fp16 rungs without tensor cores: A and B rounded to f16 once, multiplied with f32 products and sums.
//
// Its own file: a module that enables `f16` cannot be created on an adapter without `shader-f16`, and the f32 rungs
// of `matmul.wgsl` must still work there. Two kernels:
//   matmul_round_to_f16  rounds an f32 matrix to f16 (to nearest even) into a copy padded with zeros to whole
//                        tiles (rows to 128, columns of A to 32 and of B to 128), once per resident input: the
//                        products then read whole tiles without a bounds test, and the zeros add nothing to the
//                        sums. Both 16-bit rungs use it (the cooperative-matrix one is `matmul_coop.wgsl`);
//   matmul_tiled_f16     rung 2 of `matmul.wgsl` on the f16 copies: a 16x16 workgroup stages 16x16 tiles of A and
//                        B in workgroup memory, half the bytes of the f32 tiles, and each thread sums its element
//                        of C in f32. The arithmetic is the f32 rung's: storage alone halves the bytes moved, which a
//                        compute-bound product barely feels; the tensor cores (`coop-f16`) are what make it faster.

enable f16;

// Rounding to f16, padded.

struct Rounding {
    rows: u32,
    cols: u32,
    // Columns of the padded copy, a multiple of 8.
    padded_cols: u32,
    // Eight-half units of the padded copy: padded rows x padded_cols / 8.
    units: u32,
}

@group(0) @binding(4) var<uniform> rounding: Rounding;
@group(0) @binding(5) var<storage, read> wide: array<f32>;
@group(0) @binding(6) var<storage, read_write> narrow: array<vec4<u32>>;

// wide[row][col] rounded to f16, or 0 outside the matrix.
fn narrowed(row: u32, col: u32) -> f16 {
    if (row < rounding.rows && col < rounding.cols) {
        return f16(wide[row * rounding.cols + col]);
    }
    return 0.0h;
}

// Two neighbours of one row, rounded, as one word. `pack2x16float` of values f16 holds exactly is exact whatever
// rounding the driver gives it (naga 30 has no bitcast between vec2<f16> and u32, which would say it directly).
fn narrowed_pair(row: u32, col: u32) -> u32 {
    return pack2x16float(vec2<f32>(f32(narrowed(row, col)), f32(narrowed(row, col + 1u))));
}

@compute @workgroup_size(256)
fn matmul_round_to_f16(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let unit = gid.x + gid.y * groups.x * 256u;
    if (unit >= rounding.units) {
        return;
    }
    let per_row = rounding.padded_cols / 8u;
    let row = unit / per_row;
    let col = (unit % per_row) * 8u;
    narrow[unit] = vec4<u32>(
        narrowed_pair(row, col),
        narrowed_pair(row, col + 2u),
        narrowed_pair(row, col + 4u),
        narrowed_pair(row, col + 6u),
    );
}

// ---------------------------------------------------------------------------------------------------------------
// The tiled product on f16 copies.

struct Shape {
    m: u32,
    n: u32,
    // Columns of the padded A (a multiple of 32) and of the padded B (a multiple of 128).
    padded_k: u32,
    padded_n: u32,
}

@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> a16: array<f16>;
@group(0) @binding(2) var<storage, read> b16: array<f16>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

var<workgroup> tile_a16: array<f16, 256>; // [row][k], 16 x 16
var<workgroup> tile_b16: array<f16, 256>; // [k][col], 16 x 16

@compute @workgroup_size(16, 16)
fn matmul_tiled_f16(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    // Rows and columns up to the next multiple of 16 lie inside the padded copies, which the grid never passes.
    let row = wid.y * 16u + lid.y;
    let col = wid.x * 16u + lid.x;
    let at = lid.y * 16u + lid.x;
    var acc = 0.0;
    for (var k0 = 0u; k0 < shape.padded_k; k0 += 16u) {
        tile_a16[at] = a16[row * shape.padded_k + k0 + lid.x];
        tile_b16[at] = b16[(k0 + lid.y) * shape.padded_n + col];
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk += 1u) {
            // An f16 times an f16 is exact in f32; the sum rounds in f32.
            acc = fma(f32(tile_a16[lid.y * 16u + kk]), f32(tile_b16[kk * 16u + lid.x]), acc);
        }
        workgroupBarrier();
    }
    if (row < shape.m && col < shape.n) {
        c[row * shape.n + col] = acc;
    }
}
