// matmul: C = A * B with A (M x K), B (K x N) and C (M x N), all row-major f32.
//
// The ladder is about data reuse. Each element of A is needed by N outputs and each element of B by M outputs;
// the variants differ in where that reuse is served from:
//   matmul_naive     every thread reads its whole row of A and column of B from global memory (caches only);
//   matmul_tiled     a workgroup stages 16x16 tiles of A and B in workgroup memory, so each global load is
//                    reused by 16 threads;
//   matmul_register  a workgroup stages 64x16 and 16x64 tiles and each thread computes a 4x4 block of C held in
//                    registers, so each value read from workgroup memory is reused 4 times from a register.
// All sizes are supported: loads outside A or B read as 0 (which adds nothing to the dot products) and stores
// outside C are skipped.

struct Params {
    m: u32,
    k: u32,
    n: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// A[row][col], or 0 outside the matrix.
fn load_a(row: u32, col: u32) -> f32 {
    if (row < params.m && col < params.k) {
        return a[row * params.k + col];
    }
    return 0.0;
}

// B[row][col], or 0 outside the matrix.
fn load_b(row: u32, col: u32) -> f32 {
    if (row < params.k && col < params.n) {
        return b[row * params.n + col];
    }
    return 0.0;
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 1: one thread per element of C, reading straight from global memory.
// Along a row of the workgroup, threads share the same A element (a broadcast) and read consecutive B elements
// (coalesced), but nothing is reused explicitly: 2K loads per 2K flops.
@compute @workgroup_size(16, 16)
fn matmul_naive(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    let row = gid.y;
    if (row >= params.m || col >= params.n) {
        return;
    }
    let k = params.k;
    let n = params.n;
    var acc = 0.0;
    for (var i = 0u; i < k; i += 1u) {
        acc = fma(a[row * k + i], b[i * n + col], acc);
    }
    c[row * n + col] = acc;
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 2: shared-memory tiling.
// The workgroup computes a 16x16 tile of C. It walks along K in steps of 16: each thread loads one element of the
// A tile and one of the B tile into workgroup memory, a barrier makes the tiles visible to all, then every thread
// does 16 multiply-adds from workgroup memory. Each global load now serves 16 threads.
const T: u32 = 16u;

var<workgroup> tile_a: array<f32, 256>; // [row][k], 16 x 16
var<workgroup> tile_b: array<f32, 256>; // [k][col], 16 x 16

@compute @workgroup_size(16, 16)
fn matmul_tiled(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let tx = lid.x;
    let ty = lid.y;
    let row = wid.y * T + ty;
    let col = wid.x * T + tx;
    let num_tiles = (params.k + T - 1u) / T;

    var acc = 0.0;
    // Every thread runs every iteration (the trip count depends only on uniform values), so all of them reach
    // both barriers even when their own element of C lies outside the matrix.
    for (var t = 0u; t < num_tiles; t += 1u) {
        let k0 = t * T;
        // Coalesced: consecutive tx read consecutive addresses of a row of A and of a row of B.
        tile_a[ty * T + tx] = load_a(row, k0 + tx);
        tile_b[ty * T + tx] = load_b(k0 + ty, col);
        workgroupBarrier();

        for (var kk = 0u; kk < T; kk += 1u) {
            acc = fma(tile_a[ty * T + kk], tile_b[kk * T + tx], acc);
        }
        // The next iteration overwrites the tiles: wait until everyone is done reading them.
        workgroupBarrier();
    }

    if (row < params.m && col < params.n) {
        c[row * params.n + col] = acc;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 3: 2D register blocking.
// A 16x16 workgroup computes a 64x64 tile of C; thread (tx, ty) owns the 4x4 block at rows ty*4 .. ty*4+3 and
// columns tx*4 .. tx*4+3, accumulated in 16 registers (four vec4, one per row). Per step of BK = 16 along K:
//   - the workgroup stages a 64x16 slice of A and a 16x64 slice of B in workgroup memory (4 + 4 loads per
//     thread, coalesced);
//   - for each of the 16 k values a thread reads 4 values of A (a column of its rows) and 4 values of B (a row of
//     its columns) as two vec4 loads and performs 16 FMAs: 2 workgroup-memory loads per 16 FMAs instead of the
//     2 per 1 of the tiled kernel.
// The A slice is stored transposed (k-major), so that a thread's 4 row values are contiguous and can be read as
// one vec4; its rows are padded by one vec4 to spread the transposing stores over more memory banks.
const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;
const A_STRIDE: u32 = 17u; // vec4s per k-row of the transposed A slice: 64 floats + 4 padding
const B_STRIDE: u32 = 16u; // vec4s per k-row of the B slice: 64 floats

var<workgroup> slice_a: array<vec4<f32>, 272>; // [k][m / 4], BK x A_STRIDE vec4s
var<workgroup> slice_b: array<vec4<f32>, 256>; // [k][n / 4], BK x B_STRIDE vec4s

// Writes the 4 values of one row of a thread's block, skipping columns outside C.
fn store_c_row(row: u32, col0: u32, v: vec4<f32>) {
    if (row >= params.m) {
        return;
    }
    let n = params.n;
    let base = row * n;
    if (col0 < n) { c[base + col0] = v.x; }
    if (col0 + 1u < n) { c[base + col0 + 1u] = v.y; }
    if (col0 + 2u < n) { c[base + col0 + 2u] = v.z; }
    if (col0 + 3u < n) { c[base + col0 + 3u] = v.w; }
}

@compute @workgroup_size(16, 16)
fn matmul_register(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let tx = lid.x;
    let ty = lid.y;
    let t = ty * 16u + tx; // 0 .. 255
    let m0 = wid.y * BM;   // first row of this workgroup's C tile
    let n0 = wid.x * BN;   // first column
    let num_steps = (params.k + BK - 1u) / BK;

    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);

    for (var step = 0u; step < num_steps; step += 1u) {
        let k0 = step * BK;

        // Stage the slices: element e = t + 256 * j, j = 0..3, of each.
        // A slice (64 rows x 16 k): e -> row e / 16, k e % 16, so 16 consecutive threads read 16 consecutive
        // floats of one row of A. Stored transposed at [k][row].
        // B slice (16 k x 64 columns): e -> k e / 64, column e % 64, so a warp reads 32 consecutive floats of one
        // row of B. Stored as is at [k][column].
        // The divisions by the power-of-two tile sizes are written as shifts and masks.
        for (var j = 0u; j < 4u; j += 1u) {
            let e = t + 256u * j;
            let ar = e >> 4u;   // e / BK
            let ak = e & 15u;   // e % BK
            slice_a[ak * A_STRIDE + (ar >> 2u)][ar & 3u] = load_a(m0 + ar, k0 + ak);
            let bk = e >> 6u;   // e / BN
            let bc = e & 63u;   // e % BN
            slice_b[bk * B_STRIDE + (bc >> 2u)][bc & 3u] = load_b(k0 + bk, n0 + bc);
        }
        workgroupBarrier();

        // The inner product step: an outer product of 4 A values and 4 B values per k.
        for (var kk = 0u; kk < BK; kk += 1u) {
            let av = slice_a[kk * A_STRIDE + ty]; // A[m0 + ty*4 + 0..3][k0 + kk]
            let bv = slice_b[kk * B_STRIDE + tx]; // B[k0 + kk][n0 + tx*4 + 0..3]
            acc0 = fma(vec4<f32>(av.x), bv, acc0);
            acc1 = fma(vec4<f32>(av.y), bv, acc1);
            acc2 = fma(vec4<f32>(av.z), bv, acc2);
            acc3 = fma(vec4<f32>(av.w), bv, acc3);
        }
        workgroupBarrier();
    }

    let row = m0 + ty * 4u;
    let col = n0 + tx * 4u;
    store_c_row(row, col, acc0);
    store_c_row(row + 1u, col, acc1);
    store_c_row(row + 2u, col, acc2);
    store_c_row(row + 3u, col, acc3);
}
