// matmul, fp16 rung: C = A * B through cooperative matrices (NVIDIA's tensor cores through Vulkan's
// VK_KHR_cooperative_matrix, Apple's SIMD-group matrices), with fp16 A and B and f32 products and sums.
//
// Its own file: a module that enables `wgpu_cooperative_matrix` cannot even be created on an adapter without the
// feature, and the f32 rungs of `matmul.wgsl` must still work there.
//
// A and B are the padded f16 copies `matmul_round_to_f16` (in `matmul_f16.wgsl`) makes once per resident input,
// so the product reads whole tiles without a bounds test, eight halves (one vec4<u32>) per load:
//   matmul_coop_f16      one workgroup of 256 invocations (eight subgroups of 32) computes a 128 x 128 tile of C.
//                        Each step along K stages a 128 x 32 slice of A and a 32 x 128 slice of B in workgroup
//                        memory; each subgroup owns a 64 x 32 block of C as eight 16 x 16 f32 accumulators and
//                        multiplies 16 x 16 x 16 tiles loaded from the staged slices. The next slice is read from
//                        memory into registers while the current one is multiplied.
// The staged rows are padded (40 and 136 halves instead of 32 and 128) so that the eight rows one tile load reads
// start in different banks of workgroup memory.

enable f16;
enable wgpu_cooperative_matrix;

// ---------------------------------------------------------------------------------------------------------------
// The product.

struct Shape {
    m: u32,
    n: u32,
    // Columns of the padded A (a multiple of TILE_K) and of the padded B (a multiple of TILE_N).
    padded_k: u32,
    padded_n: u32,
}

@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> a16: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b16: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

const TILE_M: u32 = 128u;
const TILE_N: u32 = 128u;
const TILE_K: u32 = 32u;
const A_STRIDE: u32 = 40u;
const B_STRIDE: u32 = 136u;

var<workgroup> slice_a: array<f16, 5120>; // TILE_M x A_STRIDE
var<workgroup> slice_b: array<f16, 4352>; // TILE_K x B_STRIDE
var<workgroup> edge: array<f32, 2048>; // one 16 x 16 tile of C per subgroup, for tiles past C's edge

// The eight halves one load brought, in order.
fn halves(v: vec4<u32>) -> array<f16, 8> {
    let p = vec2<f16>(unpack2x16float(v.x));
    let q = vec2<f16>(unpack2x16float(v.y));
    let r = vec2<f16>(unpack2x16float(v.z));
    let s = vec2<f16>(unpack2x16float(v.w));
    return array<f16, 8>(p.x, p.y, q.x, q.y, r.x, r.y, s.x, s.y);
}

// One load's eight halves into the staged slice of A, or of B, from `at`.
fn stage_a(at: u32, v: vec4<u32>) {
    let h = halves(v);
    for (var e = 0u; e < 8u; e += 1u) {
        slice_a[at + e] = h[e];
    }
}

fn stage_b(at: u32, v: vec4<u32>) {
    let h = halves(v);
    for (var e = 0u; e < 8u; e += 1u) {
        slice_b[at + e] = h[e];
    }
}

// The 16 x 16 tile of the staged A at (row, kk), and of the staged B at (kk, col).
fn tile_a(row: u32, kk: u32) -> coop_mat16x16<f16, A> {
    return coopLoadT<coop_mat16x16<f16, A>>(&slice_a[row * A_STRIDE + kk], A_STRIDE);
}

fn tile_b(kk: u32, col: u32) -> coop_mat16x16<f16, B> {
    return coopLoadT<coop_mat16x16<f16, B>>(&slice_b[kk * B_STRIDE + col], B_STRIDE);
}

// Writes the accumulator `tile` whose first element is C[row][col], all of it inside C.
// (Index and stride are `let`s: naga 30's SPIR-V writer needs a cooperative store's operands evaluated before it.)
fn store_inside(tile: coop_mat16x16<f32, C>, row: u32, col: u32) {
    let stride = shape.n;
    let at = row * stride + col;
    coopStoreT(tile, &c[at], stride);
}

// Writes the accumulator `tile` at (row, col) of each subgroup's 64 x 32 block of the workgroup's tile, whose first
// element is C[row0][col0], keeping the elements inside C. Every subgroup of the workgroup calls it together with
// the same (row, col): it holds the workgroup at two barriers.
fn store_at_edge(tile: coop_mat16x16<f32, C>, subgroup: u32, row0: u32, col0: u32, row: u32, col: u32, t: u32) {
    let at = subgroup * 256u;
    coopStoreT(tile, &edge[at], 16u);
    workgroupBarrier();
    // Each invocation copies eight of the 2048 staged elements; the tile of subgroup s starts at
    // C[row0 + 64 (s / 4) + row][col0 + 32 (s % 4) + col].
    for (var e = t * 8u; e < t * 8u + 8u; e += 1u) {
        let s = e / 256u;
        let r = row0 + (s / 4u) * 64u + row + (e % 256u) / 16u;
        let q = col0 + (s % 4u) * 32u + col + e % 16u;
        if (r < shape.m && q < shape.n) {
            c[r * shape.n + q] = edge[e];
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn matmul_coop_f16(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_id) subgroup: u32,
) {
    let row0 = wid.y * TILE_M;
    let col0 = wid.x * TILE_N;
    // The subgroups in a 2 x 4 arrangement, each a 64 x 32 block of the workgroup's tile.
    let block_row = (subgroup / 4u) * 64u;
    let block_col = (subgroup % 4u) * 32u;
    let a_per_row = shape.padded_k / 8u;
    let b_per_row = shape.padded_n / 8u;
    // The loads this invocation makes for each slice: rows t/4 and t/4 + 64 of A's (four loads a row), rows t/16
    // and t/16 + 16 of B's (sixteen a row).
    let a_row = t / 4u;
    let a_unit = t % 4u;
    let b_row = t / 16u;
    let b_unit = t % 16u;
    let b_first = col0 / 8u + b_unit;

    var acc00: coop_mat16x16<f32, C>;
    var acc01: coop_mat16x16<f32, C>;
    var acc10: coop_mat16x16<f32, C>;
    var acc11: coop_mat16x16<f32, C>;
    var acc20: coop_mat16x16<f32, C>;
    var acc21: coop_mat16x16<f32, C>;
    var acc30: coop_mat16x16<f32, C>;
    var acc31: coop_mat16x16<f32, C>;

    var next_a0 = a16[(row0 + a_row) * a_per_row + a_unit];
    var next_a1 = a16[(row0 + a_row + 64u) * a_per_row + a_unit];
    var next_b0 = b16[b_row * b_per_row + b_first];
    var next_b1 = b16[(b_row + 16u) * b_per_row + b_first];

    for (var k0 = 0u; k0 < shape.padded_k; k0 += TILE_K) {
        // Everyone has finished multiplying the previous slice before it is overwritten.
        workgroupBarrier();
        stage_a(a_row * A_STRIDE + a_unit * 8u, next_a0);
        stage_a((a_row + 64u) * A_STRIDE + a_unit * 8u, next_a1);
        stage_b(b_row * B_STRIDE + b_unit * 8u, next_b0);
        stage_b((b_row + 16u) * B_STRIDE + b_unit * 8u, next_b1);
        workgroupBarrier();
        let next = k0 + TILE_K;
        if (next < shape.padded_k) {
            next_a0 = a16[(row0 + a_row) * a_per_row + next / 8u + a_unit];
            next_a1 = a16[(row0 + a_row + 64u) * a_per_row + next / 8u + a_unit];
            next_b0 = b16[(next + b_row) * b_per_row + b_first];
            next_b1 = b16[(next + b_row + 16u) * b_per_row + b_first];
        }
        for (var kk = 0u; kk < TILE_K; kk += 16u) {
            let b0 = tile_b(kk, block_col);
            let b1 = tile_b(kk, block_col + 16u);
            let a0 = tile_a(block_row, kk);
            acc00 = coopMultiplyAdd(a0, b0, acc00);
            acc01 = coopMultiplyAdd(a0, b1, acc01);
            let a1 = tile_a(block_row + 16u, kk);
            acc10 = coopMultiplyAdd(a1, b0, acc10);
            acc11 = coopMultiplyAdd(a1, b1, acc11);
            let a2 = tile_a(block_row + 32u, kk);
            acc20 = coopMultiplyAdd(a2, b0, acc20);
            acc21 = coopMultiplyAdd(a2, b1, acc21);
            let a3 = tile_a(block_row + 48u, kk);
            acc30 = coopMultiplyAdd(a3, b0, acc30);
            acc31 = coopMultiplyAdd(a3, b1, acc31);
        }
    }

    let row = row0 + block_row;
    let col = col0 + block_col;
    if (row0 + TILE_M <= shape.m && col0 + TILE_N <= shape.n) {
        store_inside(acc00, row, col);
        store_inside(acc01, row, col + 16u);
        store_inside(acc10, row + 16u, col);
        store_inside(acc11, row + 16u, col + 16u);
        store_inside(acc20, row + 32u, col);
        store_inside(acc21, row + 32u, col + 16u);
        store_inside(acc30, row + 48u, col);
        store_inside(acc31, row + 48u, col + 16u);
    } else {
        store_at_edge(acc00, subgroup, row0, col0, 0u, 0u, t);
        store_at_edge(acc01, subgroup, row0, col0, 0u, 16u, t);
        store_at_edge(acc10, subgroup, row0, col0, 16u, 0u, t);
        store_at_edge(acc11, subgroup, row0, col0, 16u, 16u, t);
        store_at_edge(acc20, subgroup, row0, col0, 32u, 0u, t);
        store_at_edge(acc21, subgroup, row0, col0, 32u, 16u, t);
        store_at_edge(acc30, subgroup, row0, col0, 48u, 0u, t);
        store_at_edge(acc31, subgroup, row0, col0, 48u, 16u, t);
    }
}
