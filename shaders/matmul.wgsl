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

// ---------------------------------------------------------------------------------------------------------------
// Rung 4: larger register blocks.
// A 16x16 workgroup computes a 128x128 tile of C; thread (tx, ty) owns an 8x8 block: rows ty*4 .. ty*4+3 and
// 64+ty*4 .. 64+ty*4+3, columns tx*4 .. tx*4+3 and 64+tx*4 .. 64+tx*4+3, accumulated in 16 vec4 registers. Per
// step of WIDE_BK = 16 along K the workgroup stages a 128x16 slice of A (transposed) and a 16x128 slice of B, and
// for each k a thread reads 2 vec4 of A and 2 vec4 of B and performs 64 FMAs: 4 workgroup-memory loads per 64 FMAs
// (rung 3: 2 per 16). Splitting each thread's rows and columns into two groups of four, 64 apart, keeps the vec4
// reads of a warp on consecutive addresses. Each thread fetches the next slice from global memory into registers
// before the FMAs on the current one and stores it to workgroup memory after them (as CUDA's rung 3 does), so the
// loads' latency hides behind the arithmetic instead of stalling every step. Measured through Vulkan on an H200
// (TFLOP/s at 2048 / 4096 / 8192): 35.1 / 36.5 / 37.0 with the fetch ahead, 31.4 / 32.3 / 32.6 without; at 4096
// rung 3 23.8 and cuBLAS 51.0; an 8-deep step (without the fetch ahead) 30.6, and a 128x256 tile with 8x16 blocks
// (as CUDA's warptile) 27.1.
const WIDE_BM: u32 = 128u;
const WIDE_BN: u32 = 128u;
const WIDE_BK: u32 = 16u;
const WIDE_A_STRIDE: u32 = 33u; // vec4s per k-row of the transposed A slice: 128 floats + 4 padding
const WIDE_B_STRIDE: u32 = 32u; // vec4s per k-row of the B slice: 128 floats

var<workgroup> wide_a: array<vec4<f32>, 528>; // [k][m / 4], WIDE_BK x WIDE_A_STRIDE vec4s
var<workgroup> wide_b: array<vec4<f32>, 512>; // [k][n / 4], WIDE_BK x WIDE_B_STRIDE vec4s

// The values of one 16-deep slice that thread t moves from global into workgroup memory: element e = t + 256 j
// (j = 0 .. 7) of the A slice (128 rows x 16 k: row e / 16 = t / 16 + 16 j, k e % 16 = t % 16) and of the B slice
// (16 k x 128 columns: k e / 128 = t / 128 + 2 j, column e % 128 = t % 128).
struct WideSlice {
    a_lo: vec4<f32>, // A rows t / 16 + 0, 16, 32, 48
    a_hi: vec4<f32>, // A rows t / 16 + 64, 80, 96, 112
    b_lo: vec4<f32>, // B k t / 128 + 0, 2, 4, 6
    b_hi: vec4<f32>, // B k t / 128 + 8, 10, 12, 14
}

fn wide_fetch(m0: u32, n0: u32, k0: u32, t: u32) -> WideSlice {
    let ar = m0 + (t >> 4u);
    let ak = k0 + (t & 15u);
    let bk = k0 + (t >> 7u);
    let bc = n0 + (t & 127u);
    var s: WideSlice;
    s.a_lo = vec4<f32>(load_a(ar, ak), load_a(ar + 16u, ak), load_a(ar + 32u, ak), load_a(ar + 48u, ak));
    s.a_hi = vec4<f32>(load_a(ar + 64u, ak), load_a(ar + 80u, ak), load_a(ar + 96u, ak), load_a(ar + 112u, ak));
    s.b_lo = vec4<f32>(load_b(bk, bc), load_b(bk + 2u, bc), load_b(bk + 4u, bc), load_b(bk + 6u, bc));
    s.b_hi = vec4<f32>(load_b(bk + 8u, bc), load_b(bk + 10u, bc), load_b(bk + 12u, bc), load_b(bk + 14u, bc));
    return s;
}

// Stores a fetched slice: A transposed at [k][row] (row t / 16 + 16 j is vec4 t / 64 + 4 j, lane (t / 16) % 4), B at
// [k][column] (vec4 (t % 128) / 4 of k-row t / 128 + 2 j, lane t % 4).
fn wide_store(s: WideSlice, t: u32) {
    let av = (t & 15u) * WIDE_A_STRIDE + (t >> 6u);
    let al = (t >> 4u) & 3u;
    wide_a[av][al] = s.a_lo.x; wide_a[av + 4u][al] = s.a_lo.y;
    wide_a[av + 8u][al] = s.a_lo.z; wide_a[av + 12u][al] = s.a_lo.w;
    wide_a[av + 16u][al] = s.a_hi.x; wide_a[av + 20u][al] = s.a_hi.y;
    wide_a[av + 24u][al] = s.a_hi.z; wide_a[av + 28u][al] = s.a_hi.w;
    let bv = (t >> 7u) * WIDE_B_STRIDE + ((t & 127u) >> 2u);
    let bl = t & 3u;
    let row = 2u * WIDE_B_STRIDE;
    wide_b[bv][bl] = s.b_lo.x; wide_b[bv + row][bl] = s.b_lo.y;
    wide_b[bv + 2u * row][bl] = s.b_lo.z; wide_b[bv + 3u * row][bl] = s.b_lo.w;
    wide_b[bv + 4u * row][bl] = s.b_hi.x; wide_b[bv + 5u * row][bl] = s.b_hi.y;
    wide_b[bv + 6u * row][bl] = s.b_hi.z; wide_b[bv + 7u * row][bl] = s.b_hi.w;
}

@compute @workgroup_size(16, 16)
fn matmul_wide(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let tx = lid.x;
    let ty = lid.y;
    let t = ty * 16u + tx; // 0 .. 255
    let m0 = wid.y * WIDE_BM;
    let n0 = wid.x * WIDE_BN;
    let num_steps = (params.k + WIDE_BK - 1u) / WIDE_BK;

    // acc_<row group><row><column group>: rows ty*4 + r (group 0) or 64 + ty*4 + r (group 1), columns tx*4 .. + 3
    // (column group 0) or 64 + tx*4 .. + 3 (column group 1).
    var acc000 = vec4<f32>(0.0); var acc001 = vec4<f32>(0.0);
    var acc010 = vec4<f32>(0.0); var acc011 = vec4<f32>(0.0);
    var acc020 = vec4<f32>(0.0); var acc021 = vec4<f32>(0.0);
    var acc030 = vec4<f32>(0.0); var acc031 = vec4<f32>(0.0);
    var acc100 = vec4<f32>(0.0); var acc101 = vec4<f32>(0.0);
    var acc110 = vec4<f32>(0.0); var acc111 = vec4<f32>(0.0);
    var acc120 = vec4<f32>(0.0); var acc121 = vec4<f32>(0.0);
    var acc130 = vec4<f32>(0.0); var acc131 = vec4<f32>(0.0);

    var next = wide_fetch(m0, n0, 0u, t);
    for (var step = 0u; step < num_steps; step += 1u) {
        wide_store(next, t);
        workgroupBarrier();
        if (step + 1u < num_steps) {
            // The next slice's loads are in flight while this slice's FMAs run.
            next = wide_fetch(m0, n0, (step + 1u) * WIDE_BK, t);
        }

        for (var kk = 0u; kk < WIDE_BK; kk += 1u) {
            let a0 = wide_a[kk * WIDE_A_STRIDE + ty];       // rows ty*4 + 0..3
            let a1 = wide_a[kk * WIDE_A_STRIDE + 16u + ty]; // rows 64 + ty*4 + 0..3
            let b0 = wide_b[kk * WIDE_B_STRIDE + tx];       // columns tx*4 + 0..3
            let b1 = wide_b[kk * WIDE_B_STRIDE + 16u + tx]; // columns 64 + tx*4 + 0..3
            acc000 = fma(vec4<f32>(a0.x), b0, acc000); acc001 = fma(vec4<f32>(a0.x), b1, acc001);
            acc010 = fma(vec4<f32>(a0.y), b0, acc010); acc011 = fma(vec4<f32>(a0.y), b1, acc011);
            acc020 = fma(vec4<f32>(a0.z), b0, acc020); acc021 = fma(vec4<f32>(a0.z), b1, acc021);
            acc030 = fma(vec4<f32>(a0.w), b0, acc030); acc031 = fma(vec4<f32>(a0.w), b1, acc031);
            acc100 = fma(vec4<f32>(a1.x), b0, acc100); acc101 = fma(vec4<f32>(a1.x), b1, acc101);
            acc110 = fma(vec4<f32>(a1.y), b0, acc110); acc111 = fma(vec4<f32>(a1.y), b1, acc111);
            acc120 = fma(vec4<f32>(a1.z), b0, acc120); acc121 = fma(vec4<f32>(a1.z), b1, acc121);
            acc130 = fma(vec4<f32>(a1.w), b0, acc130); acc131 = fma(vec4<f32>(a1.w), b1, acc131);
        }
        workgroupBarrier();
    }

    let r0 = m0 + ty * 4u;
    let r1 = m0 + 64u + ty * 4u;
    let c0 = n0 + tx * 4u;
    let c1 = n0 + 64u + tx * 4u;
    store_c_row(r0, c0, acc000); store_c_row(r0, c1, acc001);
    store_c_row(r0 + 1u, c0, acc010); store_c_row(r0 + 1u, c1, acc011);
    store_c_row(r0 + 2u, c0, acc020); store_c_row(r0 + 2u, c1, acc021);
    store_c_row(r0 + 3u, c0, acc030); store_c_row(r0 + 3u, c1, acc031);
    store_c_row(r1, c0, acc100); store_c_row(r1, c1, acc101);
    store_c_row(r1 + 1u, c0, acc110); store_c_row(r1 + 1u, c1, acc111);
    store_c_row(r1 + 2u, c0, acc120); store_c_row(r1 + 2u, c1, acc121);
    store_c_row(r1 + 3u, c0, acc130); store_c_row(r1 + 3u, c1, acc131);
}
