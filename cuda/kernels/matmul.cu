// matmul: C = A * B for row-major A (M x K), B (K x N), C (M x N), all float.
// C is overwritten. Every kernel handles arbitrary M, K, N (out-of-range
// elements are treated as zeros when loading and skipped when storing).
//
// The ladder is about data reuse. Each C element needs a full row of A and a
// column of B (2K loads for 2K flops); the rungs move that reuse from DRAM/L2
// (naive) into shared memory (tiled) and then into registers (register).

#ifndef MATMUL_NAIVE_BLOCK
#error "MATMUL_NAIVE_BLOCK is defined by the host: cuda/src/launch.rs"
#endif
#ifndef MATMUL_TILE
#error "MATMUL_TILE is defined by the host: cuda/src/launch.rs"
#endif

// ---------------------------------------------------------------------------
// Rung 1: one thread per C element, reading A and B straight from memory.
//
// Launch: block = (16, 16), grid = (ceil(N / 16), ceil(M / 16)).
// col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y.
// Threads of a warp share the row (A reads are broadcasts) and have
// consecutive columns (B reads are coalesced), but every thread still streams
// K values of A and K of B through the caches: 2 loads per fused multiply-add.
// ---------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(MATMUL_NAIVE_BLOCK * MATMUL_NAIVE_BLOCK)
matmul_naive(const float* A, const float* B, float* C, int M, int K, int N)
{
    const int col = blockIdx.x * MATMUL_NAIVE_BLOCK + threadIdx.x;
    const int row = blockIdx.y * MATMUL_NAIVE_BLOCK + threadIdx.y;
    if (row >= M || col >= N) {
        return;
    }
    const float* a = A + (size_t)row * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc = fmaf(a[k], B[(size_t)k * N + col], acc);
    }
    C[(size_t)row * N + col] = acc;
}

// ---------------------------------------------------------------------------
// Rung 2: shared-memory tiling.
//
// Launch: block = (32, 32) = 1024 threads, grid = (ceil(N / 32), ceil(M / 32)).
// The block walks along K in steps of 32. At each step its threads copy a
// 32x32 tile of A and one of B into shared memory (each thread one element of
// each, coalesced), synchronise, and then every thread reads its row of the A
// tile and column of the B tile from shared memory. Each value loaded from
// global memory is now used 32 times instead of once.
// Bank conflicts: in the inner loop a warp (fixed threadIdx.y) reads one A
// element (a broadcast) and 32 consecutive B elements (32 distinct banks).
// ---------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(MATMUL_TILE * MATMUL_TILE)
matmul_tiled(const float* A, const float* B, float* C, int M, int K, int N)
{
    __shared__ float As[MATMUL_TILE][MATMUL_TILE];
    __shared__ float Bs[MATMUL_TILE][MATMUL_TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * MATMUL_TILE + ty;
    const int col = blockIdx.x * MATMUL_TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += MATMUL_TILE) {
        // Cooperative, bounds-checked loads; zeros outside the matrices
        // contribute nothing to the dot products.
        const int ka = k0 + tx;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        const int kb = k0 + ty;
        Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads(); // tiles complete before anyone reads them

#pragma unroll
        for (int k = 0; k < MATMUL_TILE; ++k) {
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        }
        __syncthreads(); // everyone done reading before the next overwrite
    }
    if (row < M && col < N) {
        C[(size_t)row * N + col] = acc;
    }
}

// ---------------------------------------------------------------------------
// Rung 3: 2D register blocking (a.k.a. thread coarsening / outer products).
//
// Launch: block = 256 threads (1D), grid = (ceil(N / 128), ceil(M / 128)).
//
// Each block computes a 128x128 tile of C, each thread an 8x8 micro-tile held
// in 64 registers. Per step k of the K loop a thread reads 8 A values and 8 B
// values from shared memory and performs 8 x 8 = 64 FMAs: a 4:1 ratio of
// arithmetic to shared-memory loads (the tiled rung has 1:2), which is what
// lets the FMA units, not shared memory, set the pace.
//
// Techniques:
// - A's tile is stored transposed (As[k][m]), so the 8 A values a thread needs
//   for one k are contiguous and come in as float4 reads, like B's.
// - Micro-tile layout: thread (ty, tx) in a 16x16 grid owns rows
//   {4ty..4ty+3} and {64+4ty..64+4ty+3}, columns {4tx..4tx+3} and
//   {64+4tx..64+4tx+3}. A warp's float4 reads of B then cover 16 consecutive
//   float4s (conflict-free), and its A reads are broadcasts.
// - The transposed A tile rows are padded to 132 floats so the scalar
//   transposing stores of one warp land in different banks; 132 keeps every
//   row 16-byte aligned for the float4 reads.
// - Global loads are float4 when the source row allows it (K % 4 == 0 for A,
//   N % 4 == 0 for B, aligned base pointers) and in bounds, otherwise scalar,
//   bounds-checked, zero-filled loads: only edge tiles and odd shapes pay.
// - __launch_bounds__(256, 2) asks the compiler to fit two blocks per SM,
//   i.e. at most 128 registers per thread (64 of them accumulators), so one
//   block's barrier waits overlap with the other block's FMAs.
// - Double buffering: two shared-memory stages. While the block computes on
//   one stage, the next K-tile's global loads are already in flight into
//   registers; they are stored to the other stage afterwards, so one
//   __syncthreads per K-tile suffices and load latency hides behind the FMAs.
// ---------------------------------------------------------------------------
// RB_BM and RB_BN, the block tile rows (of C / A) and columns (of C / B), RB_THREADS, the threads per block, and
// MATMUL_WARPTILE_BN, the columns of a warptile block, come from the host.
#ifndef RB_BM
#error "RB_BM is defined by the host: cuda/src/launch.rs"
#endif
#ifndef RB_BN
#error "RB_BN is defined by the host: cuda/src/launch.rs"
#endif
#ifndef RB_THREADS
#error "RB_THREADS is defined by the host: cuda/src/launch.rs"
#endif
#ifndef MATMUL_WARPTILE_BN
#error "MATMUL_WARPTILE_BN is defined by the host: cuda/src/launch.rs"
#endif
#define RB_TM 8                        // micro-tile rows per thread
#define RB_TN 8                        // micro-tile columns per thread
#define RB_A_PAD 4
#define RB_AS_LD (RB_BM + RB_A_PAD)    // leading dimension of transposed A tile

// The register-blocked kernel of rungs 3 and 4, for a K depth BK per tile, a
// block tile of 128 x BN and one of two ways of giving threads their
// micro-tiles:
// - WARP_TILED = false (rung 3, BN = 128, 8 x 8 per thread): threads form a
//   16 x 16 grid over the block tile; thread (ty, tx) owns rows
//   {4ty..4ty+3, 64+4ty..} and columns {4tx..4tx+3, 64+4tx..}. A warp (two
//   values of ty) reads 2 A float4s (broadcasts) and 16 B float4s (256
//   bytes, two shared-memory wavefronts) per k.
// - WARP_TILED = true (rung 4): the 8 warps form a 2 x 4 grid of 64 x BN/4
//   warp tiles; lane (lr, lc) = (lane / 4, lane % 4) owns rows
//   {4lr.., 32+4lr..} and TN columns, TN/4 float4s 16 apart from 4lc, of its
//   warp tile.
//
// A's rows are `lda` floats apart (K for a whole product; the whole K when a
// split-K slice multiplies K columns of A starting further along its rows).
template <int BK, bool WARP_TILED, int BN = RB_BN, int TN = RB_TN, int AS_LD = RB_AS_LD, bool OVERLAP = false>
__device__ __forceinline__ void
register_blocked(const float* A, const float* B, float* C, int M, int K, int N, int lda)
{
    constexpr int A_LOADS = RB_BM * BK / 4 / RB_THREADS; // float4 loads per thread per K-tile
    constexpr int B_LOADS = BK * BN / 4 / RB_THREADS;
    __shared__ __align__(16) float As[2][BK][AS_LD];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    int row_base, row_step, col_base, col_step;
    if constexpr (WARP_TILED) {
        // Warp tiles of 64 rows x BN / 4 columns; a lane's TN columns are TN / 4 float4s, 16 columns apart (the
        // four lanes of a row of the warp cover 16 columns side by side).
        static_assert(BN == 4 * 4 * TN, "a warp tile is 4 lanes x TN columns wide, four warps across the block");
        const int warp = tid >> 5, lane = tid & 31;
        row_base = (warp >> 2) * 64 + (lane >> 2) * 4;
        col_base = (warp & 3) * (BN / 4) + (lane & 3) * 4;
        row_step = 32;
        col_step = 16;
    } else {
        static_assert(BN == 128 && TN == 8, "the 16 x 16 thread grid covers 128 x 128 in 8 x 8 micro-tiles");
        row_base = (tid >> 4) * 4;
        col_base = (tid & 15) * 4;
        row_step = 64;
        col_step = 64;
    }
    const int bm = blockIdx.y * RB_BM;
    const int bn = blockIdx.x * BN;

    // Vector loads need every row start 16-byte aligned.
    // A float4 never crosses the end of K (K % 4 == 0), so a slice never reads its neighbour's columns.
    const bool vecA = ((K & 3) == 0) && ((lda & 3) == 0) && (((unsigned long long)A & 15ull) == 0);
    const bool vecB = ((N & 3) == 0) && (((unsigned long long)B & 15ull) == 0);
    const bool vecC = ((N & 3) == 0) && (((unsigned long long)C & 15ull) == 0);

    // Where this thread loads from within a tile. A tile: 128 rows x BK k,
    // BK / 4 float4 per row. B tile: BK k x 128 columns, 32 float4 per row.
    int a_row[A_LOADS], a_col[A_LOADS], b_row[B_LOADS], b_col[B_LOADS];
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
        const int idx = tid + l * RB_THREADS;
        a_row[l] = idx / (BK / 4);
        a_col[l] = (idx % (BK / 4)) * 4;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
        const int idx = tid + l * RB_THREADS;
        b_row[l] = idx / (BN / 4);
        b_col[l] = (idx % (BN / 4)) * 4;
    }

    float4 a_reg[A_LOADS], b_reg[B_LOADS];

    // Global -> registers for the K-tile starting at k0.
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int gm = bm + a_row[l];
            const int gk = k0 + a_col[l];
            const float* p = A + (size_t)gm * lda + gk;
            if (vecA && gm < M && gk < K) {
                a_reg[l] = *reinterpret_cast<const float4*>(p);
            } else {
                a_reg[l].x = (gm < M && gk + 0 < K) ? p[0] : 0.0f;
                a_reg[l].y = (gm < M && gk + 1 < K) ? p[1] : 0.0f;
                a_reg[l].z = (gm < M && gk + 2 < K) ? p[2] : 0.0f;
                a_reg[l].w = (gm < M && gk + 3 < K) ? p[3] : 0.0f;
            }
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int gk = k0 + b_row[l];
            const int gn = bn + b_col[l];
            const float* p = B + (size_t)gk * N + gn;
            if (vecB && gk < K && gn < N) {
                b_reg[l] = *reinterpret_cast<const float4*>(p);
            } else {
                b_reg[l].x = (gk < K && gn + 0 < N) ? p[0] : 0.0f;
                b_reg[l].y = (gk < K && gn + 1 < N) ? p[1] : 0.0f;
                b_reg[l].z = (gk < K && gn + 2 < N) ? p[2] : 0.0f;
                b_reg[l].w = (gk < K && gn + 3 < N) ? p[3] : 0.0f;
            }
        }
    };

    // Registers -> shared stage s (A transposed on the way).
    auto store_tile = [&](int s) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            As[s][a_col[l] + 0][a_row[l]] = a_reg[l].x;
            As[s][a_col[l] + 1][a_row[l]] = a_reg[l].y;
            As[s][a_col[l] + 2][a_row[l]] = a_reg[l].z;
            As[s][a_col[l] + 3][a_row[l]] = a_reg[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            *reinterpret_cast<float4*>(&Bs[s][b_row[l]][b_col[l]]) = b_reg[l];
        }
    };

    float acc[RB_TM][TN];
#pragma unroll
    for (int i = 0; i < RB_TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }

    load_tile(0);
    store_tile(0);
    __syncthreads();

    if constexpr (OVERLAP) {
        // Fragments in two register sets: the shared-memory reads for step k + 1 are issued before the FMAs of
        // step k, and at the last step of a tile the next tile's stage is stored, the block synchronises and the
        // next tile's first fragments are read before that step's FMAs, so neither the read latency nor the
        // barrier's drain sits between two steps' FMAs.
        float a_frag[2][RB_TM], b_frag[2][TN];
        auto load_fragments = [&](int s, int k, int f) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[s][k][row_base]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[s][k][row_base + row_step]);
            a_frag[f][0] = a0.x; a_frag[f][1] = a0.y; a_frag[f][2] = a0.z; a_frag[f][3] = a0.w;
            a_frag[f][4] = a1.x; a_frag[f][5] = a1.y; a_frag[f][6] = a1.z; a_frag[f][7] = a1.w;
#pragma unroll
            for (int h = 0; h < TN / 4; ++h) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k][col_base + h * col_step]);
                b_frag[f][4 * h + 0] = v.x;
                b_frag[f][4 * h + 1] = v.y;
                b_frag[f][4 * h + 2] = v.z;
                b_frag[f][4 * h + 3] = v.w;
            }
        };
        static_assert(BK % 2 == 0, "a tile's first step uses fragment set 0");
        load_fragments(0, 0, 0);
        int stage = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
            const bool has_next = k0 + BK < K;
            if (has_next) {
                load_tile(k0 + BK);
            }
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                if (k + 1 < BK) {
                    load_fragments(stage, k + 1, (k + 1) & 1);
                } else if (has_next) {
                    // Every read of the other stage (the previous tile's) came before the previous tile's barrier.
                    store_tile(stage ^ 1);
                    __syncthreads();
                    load_fragments(stage ^ 1, 0, 0);
                }
#pragma unroll
                for (int i = 0; i < RB_TM; ++i) {
#pragma unroll
                    for (int j = 0; j < TN; ++j) {
                        acc[i][j] = fmaf(a_frag[k & 1][i], b_frag[k & 1][j], acc[i][j]);
                    }
                }
            }
            stage ^= 1;
        }
    } else {
        int stage = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
            const bool has_next = k0 + BK < K;
            if (has_next) {
                load_tile(k0 + BK); // in flight while we compute below
            }

#pragma unroll
            for (int k = 0; k < BK; ++k) {
                const float4 a0 = *reinterpret_cast<const float4*>(&As[stage][k][row_base]);
                const float4 a1 = *reinterpret_cast<const float4*>(&As[stage][k][row_base + row_step]);
                const float a[RB_TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                float b[TN];
#pragma unroll
                for (int h = 0; h < TN / 4; ++h) {
                    const float4 v = *reinterpret_cast<const float4*>(&Bs[stage][k][col_base + h * col_step]);
                    b[4 * h + 0] = v.x;
                    b[4 * h + 1] = v.y;
                    b[4 * h + 2] = v.z;
                    b[4 * h + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < RB_TM; ++i) {
#pragma unroll
                    for (int j = 0; j < TN; ++j) {
                        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                    }
                }
            }

            if (has_next) {
                // The other stage was last read in the previous iteration, which
                // ended with a barrier, so it is free to overwrite now.
                store_tile(stage ^ 1);
                __syncthreads();
                stage ^= 1;
            }
        }
    }

    // Write the 8x8 micro-tile: four float4 per row, bounds-checked.
#pragma unroll
    for (int i = 0; i < RB_TM; ++i) {
        const int gm = bm + row_base + (i < 4 ? i : row_step + (i - 4));
        if (gm >= M) {
            continue;
        }
        float* crow = C + (size_t)gm * N;
#pragma unroll
        for (int h = 0; h < TN / 4; ++h) {
            const int gn = bn + col_base + h * col_step;
            const float4 v = make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1],
                                         acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
            if (vecC && gn < N) {
                *reinterpret_cast<float4*>(crow + gn) = v;
            } else {
                if (gn + 0 < N) crow[gn + 0] = v.x;
                if (gn + 1 < N) crow[gn + 1] = v.y;
                if (gn + 2 < N) crow[gn + 2] = v.z;
                if (gn + 3 < N) crow[gn + 3] = v.w;
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(RB_THREADS, 2)
matmul_register(const float* A, const float* B, float* C, int M, int K, int N)
{
    register_blocked<8, false>(A, B, C, M, K, N, K);
}

// ---------------------------------------------------------------------------
// Rung 4: warp tiling with wide micro-tiles.
//
// Launch: block = 256 threads (1D), grid = (ceil(N / 256), ceil(M / 128)).
//
// The same pipeline as rung 3 on a 128 x 256 block tile: each of the 8 warps
// owns a 64 x 64 warp tile and each lane an 8 x 16 micro-tile (128
// accumulators), so one k step reads 2 A and 4 B float4s from shared memory
// for 128 FMAs (rung 3: 4 reads for 64), and a warp's reads of a k row stay
// within 64 + 64 floats: four shared-memory wavefronts for twice the FMAs.
// __launch_bounds__(256, 1): the accumulators need about 220 registers, so
// one block (8 warps) per SM; the FMAs' independence hides the latencies
// that a second block hid in rung 3. Faster than rung 3 at 4096 on an H200
// (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). Profiled variations that gave
// nothing: K depth 16 instead of 8, the 8 x 8 micro-tile with warp tiling
// (with one or two blocks per SM), explicitly double-buffered fragments.
// Below about 2048 x 2048 outputs its 128 x 256 tiles leave SMs idle and
// rung 3 is faster.
// ---------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(RB_THREADS, 1)
matmul_warptile(const float* A, const float* B, float* C, int M, int K, int N)
{
    register_blocked<8, true, MATMUL_WARPTILE_BN, 16>(A, B, C, M, K, N, K);
}

// ---------------------------------------------------------------------------
// Rung 5: rung 3 with its shared-memory reads software-pipelined.
//
// Launch: block = 256 threads (1D), grid = (ceil(N / 128), ceil(M / 128)).
//
// Rung 3's tiles, micro-tiles and two blocks per SM, but each step k's FMAs
// run on fragments read one step earlier: the reads for k + 1 go out before
// the 64 FMAs of k, into a second register set. At the last step of a tile
// the next stage is stored, the block synchronises and the next tile's first
// fragments are read, all before that step's FMAs, so the barrier and the
// shared-memory latency after it overlap arithmetic instead of separating
// two tiles' FMAs. The second fragment set fits in rung 3's 128 registers
// without spilling. Measured on an H200: faster than rungs 3 and 4 from
// 1024 to 8192 (docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). The same
// pipelining on rung 4 (245 registers) or with a K depth of 16 (spills) was
// slower.
// ---------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(RB_THREADS, 2)
matmul_prefetch(const float* A, const float* B, float* C, int M, int K, int N)
{
    register_blocked<8, false, RB_BN, RB_TN, RB_AS_LD, true>(A, B, C, M, K, N, K);
}

// ---------------------------------------------------------------------------
// Rung 6: rung 5 with K split across the grid's z dimension where C alone
// has too few tiles to fill the GPU.
//
// Launch: block = 256 threads (1D), grid = (ceil(N / 128), ceil(M / 128),
// slices); then, where slices > 1, matmul_sum_slices over the M x N outputs.
//
// A 1024 x 1024 C is 64 tiles of 128 x 128: a quarter of the 264 blocks an
// H200's 132 SMs hold at two blocks each, so three quarters of the GPU idle
// (rung 5 runs far below its rate at 4096 there). Slice z multiplies
// columns [z * slice_depth, ...) of A by the same rows of B into its own
// M x N partial product (parts + z * slice_stride); the sum kernel adds the
// slices into C. Where C has tiles enough to fill the GPU, the host runs
// rung 5 itself (this kernel with one slice computes the same, slower).
// Measured on an H200: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so.
// ---------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(RB_THREADS, 2)
matmul_prefetch_split(const float* A, const float* B, float* parts, int M, int K, int N, int slice_depth,
                      unsigned long long slice_stride)
{
    const int k0 = blockIdx.z * slice_depth;
    const int depth = min(slice_depth, K - k0);
    register_blocked<8, false, RB_BN, RB_TN, RB_AS_LD, true>(A + k0, B + (size_t)k0 * N,
                                                             parts + blockIdx.z * slice_stride, M, depth, N, K);
}

// C[i] = the sum over z < slices of parts[z * slice_stride + i], for i < count: float4 at a time where count,
// the stride and both pointers allow it.
extern "C" __global__ void
matmul_sum_slices(const float* parts, float* C, unsigned long long count, int slices,
                  unsigned long long slice_stride)
{
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool vec = ((count | slice_stride) & 3) == 0 && (((unsigned long long)parts | (unsigned long long)C) & 15) == 0;
    if (vec) {
        for (unsigned long long i = first; i < count / 4; i += step) {
            float4 sum = reinterpret_cast<const float4*>(parts)[i];
            for (int z = 1; z < slices; ++z) {
                const float4 v = reinterpret_cast<const float4*>(parts + z * slice_stride)[i];
                sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }
            reinterpret_cast<float4*>(C)[i] = sum;
        }
    } else {
        for (unsigned long long i = first; i < count; i += step) {
            float sum = parts[i];
            for (int z = 1; z < slices; ++z) {
                sum += parts[z * slice_stride + i];
            }
            C[i] = sum;
        }
    }
}

// ---------------------------------------------------------------------------
// The tensor-core rungs (compute capability 8.0 and newer): the same tiling,
// with each warp's 64 x 64 block of C computed by `mma.sync` instructions
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
// finished with. Shared-memory
// rows are padded by 16 bytes so that the eight rows an `ldmatrix` reads
// fall in eight different bank groups. Blocks take their tiles of C in
// groups of TC_GROUP rows of tiles, column by column, so that the blocks
// running at once share rows of A and columns of B in L2.
//
// Precision: bf16 and fp16 multiply 16-bit inputs (the host rounds A and B
// to them once, on the device: `matmul_round_to_bf16` / `_f16`); TF32 rounds
// each f32 operand to TF32 to nearest (`cvt.rna.tf32.f32`) as it leaves
// shared memory. Products are exact and summed in f32 in every precision.
//
// Launch: TC_THREADS (256) threads = 8 warps as 2 (rows) x 4 (columns), a
// TC_BM x TC_BN (128 x 256) block of C per block, grid = (ceil(N / TC_BN),
// ceil(M / TC_BM)), dynamic shared memory of TC16_STAGES (TC32_STAGES)
// stages of TC16_BK (TC32_BK) deep tiles.
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

// Each warp's block of C: 64 x 64, as 4 x 8 mma tiles of 16 x 8.
#define TC_WARP_M 64
#define TC_WARP_N 64
// Rows of block tiles a group of blocks walks down before the next column.
#define TC_GROUP 8
static_assert(TC_THREADS == 256 && TC_BM == 2 * TC_WARP_M && TC_BN == 4 * TC_WARP_N,
              "8 warps as 2 x 4 warp tiles of 64 x 64");

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

// An f32 (as its bits) rounded to TF32, to nearest with ties away from zero.
__device__ __forceinline__ unsigned tc_to_tf32(unsigned bits)
{
    unsigned rounded = bits;
#ifdef TC_AVAILABLE
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(rounded) : "f"(__uint_as_float(bits)));
#endif
    return rounded;
}

// One warp's operands for one step of K: A's 4 row tiles, B's 8 column tiles.
struct TcFragments {
    unsigned a[4][4];
    unsigned b[8][2];
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
        for (int mt = 0; mt < 4; ++mt) {
            tc_ldmatrix_x4(f.a[mt], a + (mt * 16 * A_STRIDE + k) * sizeof(T));
        }
#pragma unroll
        for (int np = 0; np < 4; ++np) {
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
        for (int mt = 0; mt < 4; ++mt) {
            tc_ldmatrix_x4(f.a[mt], a + (mt * 16 * A_STRIDE + k) * sizeof(T));
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                f.a[mt][i] = tc_to_tf32(f.a[mt][i]);
            }
        }
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
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
    constexpr int A_ROWS_PER_PASS = TC_THREADS / A_CHUNKS_PER_ROW, B_ROWS_PER_PASS = TC_THREADS / B_CHUNKS_PER_ROW;
    static_assert((TC_BM * A_CHUNKS_PER_ROW) % TC_THREADS == 0 && (P::BK * B_CHUNKS_PER_ROW) % TC_THREADS == 0,
                  "every thread copies the same number of chunks");
    if (interior) {
#pragma unroll
        for (int i = 0; i < TC_BM / A_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + a_to + i * A_ROWS_PER_PASS * P::A_STRIDE * sizeof(T),
                         a_from + k0 + (size_t)i * A_ROWS_PER_PASS * K);
        }
#pragma unroll
        for (int i = 0; i < P::BK / B_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + b_to + i * B_ROWS_PER_PASS * P::B_STRIDE * sizeof(T),
                         b_from + (size_t)(k0 + i * B_ROWS_PER_PASS) * N);
        }
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

// Stores a warp's 64 x 64 accumulators into C, guarding the edges.
__device__ __forceinline__ void tc_store(float* C, const float (&acc)[4][8][4], int M, int N, int row0, int col0)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const bool pairs_aligned = (N & 1) == 0;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
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

// C = A * B on tensor cores in precision P (the launch above).
template <class P>
__device__ __forceinline__ void tc_matmul(const typename P::T* __restrict__ A, const typename P::T* __restrict__ B,
                                          float* __restrict__ C, int M, int K, int N)
{
#ifdef TC_AVAILABLE
    using T = typename P::T;
    constexpr int STAGE = TC_BM * P::A_STRIDE + P::BK * P::B_STRIDE;
    constexpr int STEPS = P::BK / P::STEP;
    static_assert(P::BK % P::STEP == 0, "whole mma steps per tile of K");
    extern __shared__ __align__(16) unsigned char tc_shared[];
    T* stages = reinterpret_cast<T*>(tc_shared);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int warp_row = (warp >> 2) * TC_WARP_M, warp_col = (warp & 3) * TC_WARP_N;

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
    float acc[4][8][4] = {};

    auto load_tile = [&](int tile) {
        const int stage = tile % P::STAGES;
        T* sA = stages + stage * STAGE;
        tc_load_tile<P>(shared + stage * STAGE * sizeof(T), sA, sA + TC_BM * P::A_STRIDE, A, B, M, K, N, row0, col0,
                        tile * P::BK, block_inside && (tile + 1) * P::BK <= K, a_aligned, b_aligned, a_from, b_from,
                        a_to, b_to);
    };
#pragma unroll
    for (int s = 0; s < P::STAGES - 1; ++s) {
        if (s < tiles) {
            load_tile(s);
        }
        tc_commit();
    }
#pragma unroll 1
    for (int tile = 0; tile < tiles; ++tile) {
        // Tile `tile` has landed (at most STAGES - 2 later groups pending); the barrier publishes it and frees the
        // stage every warp finished multiplying in the previous trip, which the next copy refills.
        tc_wait<P::STAGES - 2>();
        __syncthreads();
        if (tile + P::STAGES - 1 < tiles) {
            load_tile(tile + P::STAGES - 1);
        }
        tc_commit();
        const unsigned stage = shared + (tile % P::STAGES) * STAGE * sizeof(T);
#pragma unroll
        for (int step = 0; step < STEPS; ++step) {
            TcFragments f;
            P::load(f, stage + a_lane, stage + b_lane, step * P::STEP);
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                for (int nt = 0; nt < 8; ++nt) {
                    // Down a column and back up the next, so that consecutive products share an operand.
                    const int n = (mt & 1) ? 7 - nt : nt;
                    P::mma(acc[mt][n], f.a[mt], f.b[n]);
                }
            }
        }
    }
    tc_wait<0>();
    tc_store(C, acc, M, N, row0 + warp_row, col0 + warp_col);
#endif
}

extern "C" __global__ void __launch_bounds__(TC_THREADS, 1)
matmul_mma_bf16(const unsigned short* A, const unsigned short* B, float* C, int M, int K, int N)
{
    tc_matmul<Tc16<true>>(A, B, C, M, K, N);
}

extern "C" __global__ void __launch_bounds__(TC_THREADS, 1)
matmul_mma_f16(const unsigned short* A, const unsigned short* B, float* C, int M, int K, int N)
{
    tc_matmul<Tc16<false>>(A, B, C, M, K, N);
}

extern "C" __global__ void __launch_bounds__(TC_THREADS, 1)
matmul_mma_tf32(const float* A, const float* B, float* C, int M, int K, int N)
{
    tc_matmul<Tc32>(A, B, C, M, K, N);
}

// f32 to bf16 / fp16, rounded to nearest even (fp16: ±inf past 65504), for the
// 16-bit rungs and cuBLAS's. Grid-strided over n.
extern "C" __global__ void matmul_round_to_bf16(const float* x, unsigned short* y, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned short h = 0;
#ifdef TC_AVAILABLE
        asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h) : "f"(x[i]));
#endif
        y[i] = h;
    }
}

extern "C" __global__ void matmul_round_to_f16(const float* x, unsigned short* y, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned short h = 0;
#ifdef TC_AVAILABLE
        asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(x[i]));
#endif
        y[i] = h;
    }
}
