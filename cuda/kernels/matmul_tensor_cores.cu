// matmul on tensor cores: C = A * B for row-major A (M x K), B (K x N) and f32
// C (M x N), in TF32, bf16 or fp16, products summed in f32. A file of its own:
// compiled with the f32 rungs, these templates made every matmul variant's
// first call wait for them (NVRTC took 4.6 s for the whole file on an H200;
// docs/results/nvidia-h200/precision/README.md).

// ---------------------------------------------------------------------------
// The tensor-core rungs (compute capability 8.0 and newer): the same tiling,
// with each warp's block of C computed by `mma.sync` instructions
// instead of FMAs. A tensor core multiplies a 16 x 16 tile of A by a 16 x 8
// tile of B (16 x 8 x 8 in TF32) per instruction, from operands held in
// registers in a layout fixed by the PTX ISA ("mma.m16n8k16 fragments"):
//
//   A (row-major): thread (g = lane / 4, t = lane % 4) holds rows g and g + 8,
//                  columns 2t, 2t + 1 and 2t + 8, 2t + 9;
//   B (column):    rows 2t, 2t + 1 and 2t + 8, 2t + 9 of column g;
//   C (f32):       rows g and g + 8, columns 2t and 2t + 1.
//
// `ldmatrix` loads four 8 x 8 tiles of 16-bit values from shared memory
// straight into that layout (`.trans` transposes them, which turns B's rows
// into the column operand), so no thread shuffles values by hand. Tiles of A
// and B travel from memory to shared memory with `cp.async` (no registers on
// the way), STAGES tiles of K in flight: while the warps multiply tile k, the
// copies of tiles k + 1 .. k + STAGES - 1 are outstanding, and one barrier
// per tile both publishes the tile that landed and frees the stage the warps
// finished with; each step's fragments are loaded while the step before
// multiplies, across that barrier too (`tc_main_loop`). Shared-memory
// rows are padded by 16 bytes so that the eight rows an `ldmatrix` reads
// fall in eight different bank groups. Blocks take their tiles of C in
// groups of TC_GROUP rows of tiles, column by column, so that the blocks
// running at once share rows of A and columns of B in L2.
//
// Precision: bf16 and fp16 multiply 16-bit inputs (the host rounds A and B
// to them once, on the device: `matmul_round_to_bf16` / `_f16`); TF32 hands
// the tensor core each f32 operand, whose low 13 bits it ignores (truncation:
// `tc_to_tf32`). Products are exact and summed in f32 in every precision.
//
// Launch: TC_THREADS threads = warps as (TC_BM / TC_WARP_M) rows x (TC_BN /
// TC_WARP_N) columns of warp tiles, a TC_BM x TC_BN block of C per block, at
// least TC_MIN_BLOCKS blocks an SM (the register budget follows), grid =
// (ceil(N / TC_BN), ceil(M / TC_BM)), dynamic shared memory of TC16_STAGES
// (TC32_STAGES) stages of TC16_BK (TC32_BK) deep tiles. The host chooses
// these (cuda/src/workloads/matmul.rs); bench-suite/peers/tensor_core_lab.py
// times other choices from this same file.
// Any M, K, N: a row whose 16 bytes are not all in range or not aligned
// (K or N not a multiple of 8 halves / 4 floats) is loaded element by
// element with zeros past the edge, and stores are guarded.
// ---------------------------------------------------------------------------
#ifndef TC_THREADS
#error "TC_THREADS is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC_BM
#error "TC_BM is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC_BN
#error "TC_BN is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC_WARP_M
#error "TC_WARP_M is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC_WARP_N
#error "TC_WARP_N is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC_MIN_BLOCKS
#error "TC_MIN_BLOCKS is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC16_STAGES
#error "TC16_STAGES is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC32_STAGES
#error "TC32_STAGES is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC16_BK
#error "TC16_BK is defined by the host: cuda/src/launch.rs"
#endif
#ifndef TC32_BK
#error "TC32_BK is defined by the host: cuda/src/launch.rs"
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TC_AVAILABLE 1
#endif

// Each warp's block of C: TC_WARP_M x TC_WARP_N, as TC_MT x TC_NT mma tiles of 16 x 8.
#define TC_MT (TC_WARP_M / 16)
#define TC_NT (TC_WARP_N / 8)
#define TC_WARPS_N (TC_BN / TC_WARP_N)
// Rows of block tiles a group of blocks walks down before the next column.
#define TC_GROUP 8
static_assert(TC_BM % TC_WARP_M == 0 && TC_BN % TC_WARP_N == 0 && TC_WARP_M % 16 == 0 && TC_WARP_N % 16 == 0,
              "whole warp tiles of whole mma tiles (column tiles in pairs, for ldmatrix.x4.trans)");
static_assert((TC_BM / TC_WARP_M) * TC_WARPS_N * 32 == TC_THREADS, "one warp per warp tile");

__device__ __forceinline__ unsigned tc_shared_address(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void tc_copy16(void* shared, const void* global)
{
#ifdef TC_AVAILABLE
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(tc_shared_address(shared)), "l"(global));
#endif
}

__device__ __forceinline__ void tc_commit()
{
#ifdef TC_AVAILABLE
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int PENDING>
__device__ __forceinline__ void tc_wait()
{
#ifdef TC_AVAILABLE
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#endif
}

// Shared memory is addressed by 32-bit offsets (what `cvta.to.shared` gives): each thread computes its own once
// and adds constants, where generic 64-bit pointers would cost registers and arithmetic in the inner loop.
__device__ __forceinline__ void tc_ldmatrix_x4(unsigned (&r)[4], unsigned shared)
{
#ifdef TC_AVAILABLE
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
#endif
}

__device__ __forceinline__ void tc_ldmatrix_x4_trans(unsigned (&r)[4], unsigned shared)
{
#ifdef TC_AVAILABLE
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
#endif
}

__device__ __forceinline__ unsigned tc_load_shared_32(unsigned shared)
{
    unsigned value = 0;
#ifdef TC_AVAILABLE
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(value) : "r"(shared));
#endif
    return value;
}

__device__ __forceinline__ void tc_copy16_to(unsigned shared, const void* global)
{
#ifdef TC_AVAILABLE
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(global));
#endif
}

// An f32 (as its bits) as a TF32 operand: as it is. The tensor core reads
// the 10 mantissa bits TF32 keeps and ignores the 13 below them, which
// truncates; rounding each operand to nearest first (`cvt.rna.tf32.f32` as
// it left shared memory) cost 16% of the kernel's time at 8192^3 on an H200
// (147 TFLOP/s rounded, 175 truncated; measured:
// docs/results/nvidia-h200/precision/README.md), and truncation is within
// the TF32 check's bound, which allows a directed rounding
// (core/src/precision.rs: `input_unit_roundoff`), as cuBLAS's TF32 needs too.
__device__ __forceinline__ unsigned tc_to_tf32(unsigned bits)
{
    return bits;
}

// One warp's operands for one step of K: A's TC_MT row tiles, B's TC_NT column tiles.
struct TcFragments {
    unsigned a[TC_MT][4];
    unsigned b[TC_NT][2];
};

// The 16-bit precisions: bf16 (BF16) or fp16 values, steps of 16.
template <bool BF16>
struct Tc16 {
    using T = unsigned short;
    static constexpr int BK = TC16_BK, STAGES = TC16_STAGES, STEP = 16;
    static constexpr int A_STRIDE = BK + 8, B_STRIDE = TC_BN + 8;

    // Lanes 0-15 address rows 0-15 of a row tile at column k, lanes 16-31 the same rows at k + 8; for B, lanes
    // 0-15 address rows k .. k + 15 of a pair of column tiles' first 8 columns, lanes 16-31 of the next 8.
    static __device__ __forceinline__ unsigned a_lane(int warp_row, int lane)
    {
        return ((warp_row + (lane & 15)) * A_STRIDE + (lane >> 4) * 8) * sizeof(T);
    }
    static __device__ __forceinline__ unsigned b_lane(int warp_col, int lane)
    {
        return ((lane & 15) * B_STRIDE + warp_col + (lane >> 4) * 8) * sizeof(T);
    }

    // The fragments of step k from this lane's addresses in the stage's A and B.
    static __device__ __forceinline__ void load(TcFragments& f, unsigned a, unsigned b, int k)
    {
#pragma unroll
        for (int mt = 0; mt < TC_MT; ++mt) {
            tc_ldmatrix_x4(f.a[mt], a + (mt * 16 * A_STRIDE + k) * sizeof(T));
        }
#pragma unroll
        for (int np = 0; np < TC_NT / 2; ++np) {
            unsigned r[4];
            tc_ldmatrix_x4_trans(r, b + (k * B_STRIDE + np * 16) * sizeof(T));
            f.b[2 * np][0] = r[0];
            f.b[2 * np][1] = r[1];
            f.b[2 * np + 1][0] = r[2];
            f.b[2 * np + 1][1] = r[3];
        }
    }

    static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
    {
#ifdef TC_AVAILABLE
        if constexpr (BF16) {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        } else {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
#endif
    }
};

// TF32: f32 values rounded to TF32 as they leave shared memory, steps of 8.
// `ldmatrix` moves A's 32-bit values as pairs of 16-bit halves, which lands
// each thread's f32 where the TF32 fragment wants it; B's fragment (rows t
// and t + 4 of column g) is read element by element, the padding spreading a
// warp's 32 reads over 32 banks.
struct Tc32 {
    using T = float;
    static constexpr int BK = TC32_BK, STAGES = TC32_STAGES, STEP = 8;
    static constexpr int A_STRIDE = BK + 4, B_STRIDE = TC_BN + 8;

    static __device__ __forceinline__ unsigned a_lane(int warp_row, int lane)
    {
        return ((warp_row + (lane & 15)) * A_STRIDE + (lane >> 4) * 4) * sizeof(T);
    }
    // Row t, column g of the warp's columns: where (k + t, g) of the first column tile lies, less k.
    static __device__ __forceinline__ unsigned b_lane(int warp_col, int lane)
    {
        return ((lane & 3) * B_STRIDE + warp_col + (lane >> 2)) * sizeof(T);
    }

    static __device__ __forceinline__ void load(TcFragments& f, unsigned a, unsigned b, int k)
    {
#pragma unroll
        for (int mt = 0; mt < TC_MT; ++mt) {
            tc_ldmatrix_x4(f.a[mt], a + (mt * 16 * A_STRIDE + k) * sizeof(T));
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                f.a[mt][i] = tc_to_tf32(f.a[mt][i]);
            }
        }
#pragma unroll
        for (int nt = 0; nt < TC_NT; ++nt) {
            f.b[nt][0] = tc_to_tf32(tc_load_shared_32(b + (k * B_STRIDE + nt * 8) * sizeof(T)));
            f.b[nt][1] = tc_to_tf32(tc_load_shared_32(b + ((k + 4) * B_STRIDE + nt * 8) * sizeof(T)));
        }
    }

    static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
    {
#ifdef TC_AVAILABLE
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
    }
};

// Copies the rows of A (`copy_a`) and of B (`copy_b`) of one BK-deep tile wholly inside the matrices, with rows
// aligned to 16 bytes, into the stage at shared address `stage`: each thread's chunks with `cp.async` from the
// addresses of its first chunks of tile 0 (`a_from`, `b_from`) and to their offsets in a stage (`a_to`, `b_to`).
template <class P>
__device__ __forceinline__ void tc_copy_inside(unsigned stage, bool copy_a, bool copy_b, int K, int N, int k0,
                                               const typename P::T* a_from, const typename P::T* b_from,
                                               unsigned a_to, unsigned b_to)
{
    using T = typename P::T;
    constexpr int VECTOR = 16 / sizeof(T);
    constexpr int A_ROWS_PER_PASS = TC_THREADS / (P::BK / VECTOR), B_ROWS_PER_PASS = TC_THREADS / (TC_BN / VECTOR);
    if (copy_a) {
#pragma unroll
        for (int i = 0; i < TC_BM / A_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + a_to + i * A_ROWS_PER_PASS * P::A_STRIDE * sizeof(T),
                         a_from + k0 + (size_t)i * A_ROWS_PER_PASS * K);
        }
    }
    if (copy_b) {
#pragma unroll
        for (int i = 0; i < P::BK / B_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + b_to + i * B_ROWS_PER_PASS * P::B_STRIDE * sizeof(T),
                         b_from + (size_t)(k0 + i * B_ROWS_PER_PASS) * N);
        }
    }
}

// Copies one BK-deep tile of A and B (16 bytes = VECTOR elements at a time)
// into the stage at shared address `stage` (A's tile, then B's): where the
// whole tile is in range and rows are aligned (`interior`), each thread's
// chunks with `cp.async` from addresses it computed once (`a_from`, `b_from`
// are its first chunks' of tile 0, `a_to`, `b_to` its first chunks' offsets
// in a stage); elsewhere chunk by chunk, `cp.async` where the chunk is in
// range and aligned and elements with zeros past the edges otherwise.
template <class P>
__device__ __forceinline__ void tc_load_tile(unsigned stage, typename P::T* sA, typename P::T* sB,
                                             const typename P::T* __restrict__ A, const typename P::T* __restrict__ B,
                                             int M, int K, int N, int row0, int col0, int k0, bool interior,
                                             bool rows_of_a_aligned, bool rows_of_b_aligned,
                                             const typename P::T* a_from, const typename P::T* b_from,
                                             unsigned a_to, unsigned b_to)
{
    using T = typename P::T;
    constexpr int VECTOR = 16 / sizeof(T);
    constexpr int A_CHUNKS_PER_ROW = P::BK / VECTOR;
    constexpr int B_CHUNKS_PER_ROW = TC_BN / VECTOR;
    static_assert((TC_BM * A_CHUNKS_PER_ROW) % TC_THREADS == 0 && (P::BK * B_CHUNKS_PER_ROW) % TC_THREADS == 0 &&
                      TC_THREADS % A_CHUNKS_PER_ROW == 0 && TC_THREADS % B_CHUNKS_PER_ROW == 0,
                  "every thread copies the same number of chunks, whole rows a pass");
    if (interior) {
        tc_copy_inside<P>(stage, true, true, K, N, k0, a_from, b_from, a_to, b_to);
        return;
    }
#pragma unroll
    for (int i = 0; i < TC_BM * A_CHUNKS_PER_ROW / TC_THREADS; ++i) {
        const int chunk = threadIdx.x + i * TC_THREADS;
        const int r = chunk / A_CHUNKS_PER_ROW, c = (chunk % A_CHUNKS_PER_ROW) * VECTOR;
        const int gr = row0 + r, gk = k0 + c;
        T* dst = sA + r * P::A_STRIDE + c;
        if (rows_of_a_aligned && gr < M && gk + VECTOR <= K) {
            tc_copy16(dst, A + (size_t)gr * K + gk);
        } else {
#pragma unroll
            for (int e = 0; e < VECTOR; ++e) {
                dst[e] = (gr < M && gk + e < K) ? A[(size_t)gr * K + gk + e] : T(0);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < P::BK * B_CHUNKS_PER_ROW / TC_THREADS; ++i) {
        const int chunk = threadIdx.x + i * TC_THREADS;
        const int r = chunk / B_CHUNKS_PER_ROW, c = (chunk % B_CHUNKS_PER_ROW) * VECTOR;
        const int gk = k0 + r, gc = col0 + c;
        T* dst = sB + r * P::B_STRIDE + c;
        if (rows_of_b_aligned && gk < K && gc + VECTOR <= N) {
            tc_copy16(dst, B + (size_t)gk * N + gc);
        } else {
#pragma unroll
            for (int e = 0; e < VECTOR; ++e) {
                dst[e] = (gk < K && gc + e < N) ? B[(size_t)gk * N + gc + e] : T(0);
            }
        }
    }
}

// Stores a warp's TC_WARP_M x TC_WARP_N accumulators into C, guarding the edges.
__device__ __forceinline__ void tc_store(float* C, const float (&acc)[TC_MT][TC_NT][4], int M, int N, int row0,
                                         int col0)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const bool pairs_aligned = (N & 1) == 0;
#pragma unroll
    for (int mt = 0; mt < TC_MT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < TC_NT; ++nt) {
            const int c = col0 + nt * 8 + 2 * t;
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int r = row0 + mt * 16 + g + 8 * half;
                if (r >= M) {
                    continue;
                }
                float* out = C + (size_t)r * N + c;
                const float v0 = acc[mt][nt][2 * half], v1 = acc[mt][nt][2 * half + 1];
                if (pairs_aligned && c + 1 < N) {
                    *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
                } else {
                    if (c < N) out[0] = v0;
                    if (c + 1 < N) out[1] = v1;
                }
            }
        }
    }
}

// The step of a trip at which the copies of B's rows go out (A's at the first): the second where a tile has two
// steps or more (`tc_main_loop`, `tc_matmul`'s `copy_inside`).
template <class P>
constexpr int TC_B_STEP = P::BK / P::STEP > 1 ? 1 : 0;

// The main loop of `tc_matmul` in precision P over `tiles` tiles of K, `copy(tile, step)` issuing the copies of tile
// `tile` that go out at step `step` of a trip, into the accumulators `acc`; `shared` is the stages' shared address,
// `a_lane` and `b_lane` this lane's `ldmatrix` addresses in a stage.
//
// Each step's fragments are loaded while the step before multiplies, across the tile boundary too:
// the barrier that publishes tile t + 1 comes before the last step of tile t, whose fragments are already in
// registers, so the tensor cores still have that step's products while the warps meet. The copies of tile
// t + STAGES - 1 go into the stage of tile t - 1, which every warp left at that barrier in the trip before, and
// are committed (one group a tile) before the wait: when tile t + 1 is waited for, STAGES - 1 + t + 1 groups are
// committed and the first t + 2 must have landed, so STAGES - 2 may still be pending. Loading the next step's
// fragments during this one took bf16 at 8192^3 on an H200 from 317 to 442 TFLOP/s, the copies in two parts to
// 464 (docs/results/nvidia-h200/precision/README.md).
template <class P, class Copy>
__device__ __forceinline__ void tc_main_loop(Copy copy, float (&acc)[TC_MT][TC_NT][4], unsigned shared, unsigned a_lane,
                                             unsigned b_lane, int tiles)
{
    using T = typename P::T;
    constexpr int STAGE = TC_BM * P::A_STRIDE + P::BK * P::B_STRIDE;
    constexpr int STEPS = P::BK / P::STEP;
    constexpr int B_STEP = TC_B_STEP<P>;
#pragma unroll
    for (int s = 0; s < P::STAGES - 1; ++s) {
        if (s < tiles) {
            copy(s, 0);
            if (B_STEP != 0) {
                copy(s, B_STEP);
            }
        }
        tc_commit();
    }
    tc_wait<P::STAGES - 2>();
    __syncthreads();
    TcFragments f[2];
    P::load(f[0], shared + a_lane, shared + b_lane, 0);
#pragma unroll 1
    for (int tile = 0; tile < tiles; ++tile) {
        const unsigned stage = shared + (tile % P::STAGES) * STAGE * sizeof(T);
        const unsigned next = shared + ((tile + 1) % P::STAGES) * STAGE * sizeof(T);
        const int refill = tile + P::STAGES - 1;
#pragma unroll
        for (int step = 0; step < STEPS; ++step) {
            if (refill < tiles) {
                copy(refill, step);
            }
            if (step == B_STEP) {
                tc_commit();
            }
            if (step == STEPS - 1) {
                tc_wait<P::STAGES - 2>();
                __syncthreads();
            }
            if (step + 1 < STEPS) {
                P::load(f[(step + 1) % 2], stage + a_lane, stage + b_lane, (step + 1) * P::STEP);
            } else if (tile + 1 < tiles) {
                P::load(f[(step + 1) % 2], next + a_lane, next + b_lane, 0);
            }
#pragma unroll
            for (int mt = 0; mt < TC_MT; ++mt) {
#pragma unroll
                for (int nt = 0; nt < TC_NT; ++nt) {
                    // Along a row of tiles and back along the next, so that consecutive products share an
                    // operand.
                    const int n = (mt & 1) ? TC_NT - 1 - nt : nt;
                    P::mma(acc[mt][n], f[step % 2].a[mt], f[step % 2].b[n]);
                }
            }
        }
    }
}

// C = A * B on tensor cores in precision P (the launch above).
template <class P>
__device__ __forceinline__ void tc_matmul(const typename P::T* __restrict__ A, const typename P::T* __restrict__ B,
                                          float* __restrict__ C, int M, int K, int N)
{
#ifdef TC_AVAILABLE
    using T = typename P::T;
    constexpr int STAGE = TC_BM * P::A_STRIDE + P::BK * P::B_STRIDE;
    static_assert(P::BK % P::STEP == 0, "whole mma steps per tile of K");
    extern __shared__ __align__(16) unsigned char tc_shared[];
    T* stages = reinterpret_cast<T*>(tc_shared);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int warp_row = (warp / TC_WARPS_N) * TC_WARP_M, warp_col = (warp % TC_WARPS_N) * TC_WARP_N;

    // Block b of the grid takes tile (row, column) walking TC_GROUP rows of tiles down each column in turn.
    const int tile_columns = gridDim.x, tile_rows = gridDim.y;
    const int block = blockIdx.y * tile_columns + blockIdx.x;
    const int group = block / (TC_GROUP * tile_columns), first_row = group * TC_GROUP;
    const int group_rows = min(tile_rows - first_row, TC_GROUP);
    const int in_group = block % (TC_GROUP * tile_columns);
    const int row0 = (first_row + in_group % group_rows) * TC_BM, col0 = (in_group / group_rows) * TC_BN;

    constexpr int VECTOR = 16 / sizeof(T);
    constexpr int A_CHUNKS_PER_ROW = P::BK / VECTOR, B_CHUNKS_PER_ROW = TC_BN / VECTOR;
    const bool a_aligned = K % VECTOR == 0, b_aligned = N % VECTOR == 0;
    const bool block_inside = a_aligned && b_aligned && row0 + TC_BM <= M && col0 + TC_BN <= N;
    const int tiles = (K + P::BK - 1) / P::BK;
    // This thread's first chunk of A and of B in tile 0, in memory and in a stage.
    const int a_row = threadIdx.x / A_CHUNKS_PER_ROW, a_column = (threadIdx.x % A_CHUNKS_PER_ROW) * VECTOR;
    const int b_row = threadIdx.x / B_CHUNKS_PER_ROW, b_column = (threadIdx.x % B_CHUNKS_PER_ROW) * VECTOR;
    const T* a_from = A + (size_t)(row0 + a_row) * K + a_column;
    const T* b_from = B + (size_t)b_row * N + col0 + b_column;
    const unsigned a_to = (a_row * P::A_STRIDE + a_column) * sizeof(T);
    const unsigned b_to = (TC_BM * P::A_STRIDE + b_row * P::B_STRIDE + b_column) * sizeof(T);
    const unsigned shared = tc_shared_address(stages);
    const unsigned a_lane = P::a_lane(warp_row, lane), b_lane = TC_BM * P::A_STRIDE * sizeof(T) + P::b_lane(warp_col, lane);
    float acc[TC_MT][TC_NT][4] = {};

    // The copies of tile `tile` that go out at step `step` of a trip. Where every tile of the block lies inside the
    // matrices and K is whole tiles (every block of a large matmul), A's rows go out at the first step and B's at
    // the second, with no edge path to hold registers; elsewhere the whole tile at the first step.
    auto copy_inside = [&](int tile, int step) {
        tc_copy_inside<P>(shared + (tile % P::STAGES) * STAGE * sizeof(T), step == 0, step == TC_B_STEP<P>, K, N,
                          tile * P::BK, a_from, b_from, a_to, b_to);
    };
    auto copy_with_edges = [&](int tile, int step) {
        if (step != 0) {
            return;
        }
        const int stage = tile % P::STAGES;
        T* sA = stages + stage * STAGE;
        tc_load_tile<P>(shared + stage * STAGE * sizeof(T), sA, sA + TC_BM * P::A_STRIDE, A, B, M, K, N, row0, col0,
                        tile * P::BK, block_inside && (tile + 1) * P::BK <= K, a_aligned, b_aligned, a_from, b_from,
                        a_to, b_to);
    };
    if (block_inside && K % P::BK == 0) {
        tc_main_loop<P>(copy_inside, acc, shared, a_lane, b_lane, tiles);
    } else {
        tc_main_loop<P>(copy_with_edges, acc, shared, a_lane, b_lane, tiles);
    }
    tc_wait<0>();
    tc_store(C, acc, M, N, row0 + warp_row, col0 + warp_col);
#endif
}

extern "C" __global__ void __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS)
matmul_mma_bf16(const unsigned short* A, const unsigned short* B, float* C, int M, int K, int N)
{
    tc_matmul<Tc16<true>>(A, B, C, M, K, N);
}

extern "C" __global__ void __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS)
matmul_mma_f16(const unsigned short* A, const unsigned short* B, float* C, int M, int K, int N)
{
    tc_matmul<Tc16<false>>(A, B, C, M, K, N);
}

extern "C" __global__ void __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS)
matmul_mma_tf32(const float* A, const float* B, float* C, int M, int K, int N)
{
    tc_matmul<Tc32>(A, B, C, M, K, N);
}

// f32 to bf16 / fp16, rounded to nearest even (fp16: ±inf past 65504), for the
// 16-bit rungs and cuBLAS's, or f32 copied as it is (the TMA rung's TF32 A
// where K is not a multiple of 4): a row-major `rows` x `columns` matrix x into
// y, whose rows start `pitch` elements apart (the TMA rungs' tensor maps need
// pitches of 16 bytes; the padding is left as it is, never read). Grid-strided
// over rows (y) and each row's columns (x).
template <class Out, class Convert>
__device__ __forceinline__ void tc_rows(const float* __restrict__ x, Out* __restrict__ y, unsigned long long rows,
                                        unsigned long long columns, unsigned long long pitch, Convert convert)
{
    for (unsigned long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const float* from = x + r * columns;
        Out* to = y + r * pitch;
        for (unsigned long long c = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; c < columns;
             c += (unsigned long long)gridDim.x * blockDim.x) {
            to[c] = convert(from[c]);
        }
    }
}

extern "C" __global__ void matmul_round_to_bf16(const float* x, unsigned short* y, unsigned long long rows,
                                                unsigned long long columns, unsigned long long pitch)
{
    tc_rows(x, y, rows, columns, pitch, [](float v) {
        unsigned short h = 0;
#ifdef TC_AVAILABLE
        asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h) : "f"(v));
#endif
        return h;
    });
}

extern "C" __global__ void matmul_round_to_f16(const float* x, unsigned short* y, unsigned long long rows,
                                               unsigned long long columns, unsigned long long pitch)
{
    tc_rows(x, y, rows, columns, pitch, [](float v) {
        unsigned short h = 0;
#ifdef TC_AVAILABLE
        asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(v));
#endif
        return h;
    });
}

extern "C" __global__ void matmul_copy_rows_f32(const float* x, float* y, unsigned long long rows,
                                                unsigned long long columns, unsigned long long pitch)
{
    tc_rows(x, y, rows, columns, pitch, [](float v) { return v; });
}

// B (K x N, row-major f32) transposed into Bt (N x K, rows `pitch` apart), for
// the TMA rung's TF32 kernel, which reads B K-major. 32 x 32 tiles through
// shared memory (rows of 33, so that a column's reads fall in different banks),
// so that both the reads and the writes are coalesced. Blocks of 32 x 8
// threads; the grid strides over the tiles in both directions.
extern "C" __global__ void matmul_transpose_f32(const float* __restrict__ x, float* __restrict__ y,
                                                unsigned long long rows, unsigned long long columns,
                                                unsigned long long pitch)
{
    __shared__ float tile[32][33];
    for (unsigned long long r0 = blockIdx.y * 32ull; r0 < rows; r0 += gridDim.y * 32ull) {
        for (unsigned long long c0 = blockIdx.x * 32ull; c0 < columns; c0 += gridDim.x * 32ull) {
            for (int i = threadIdx.y; i < 32; i += 8) {
                const unsigned long long r = r0 + i, c = c0 + threadIdx.x;
                if (r < rows && c < columns) {
                    tile[i][threadIdx.x] = x[r * columns + c];
                }
            }
            __syncthreads();
            for (int i = threadIdx.y; i < 32; i += 8) {
                const unsigned long long c = c0 + i, r = r0 + threadIdx.x;
                if (c < columns && r < rows) {
                    y[c * pitch + r] = tile[threadIdx.x][i];
                }
            }
            __syncthreads();
        }
    }
}
