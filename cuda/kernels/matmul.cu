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
