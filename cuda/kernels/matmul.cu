// matmul: C = A * B for row-major A (M x K), B (K x N), C (M x N), all float.
// C is overwritten. Every kernel handles arbitrary M, K, N (out-of-range
// elements are treated as zeros when loading and skipped when storing).
//
// The ladder is about data reuse. Each C element needs a full row of A and a
// column of B (2K loads for 2K flops); the rungs move that reuse from DRAM/L2
// (naive) into shared memory (tiled) and then into registers (register).

#define MATMUL_NAIVE_BLOCK 16
#define MATMUL_TILE 32

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
#define RB_BM 128                      // block tile rows (of C / A)
#define RB_BN 128                      // block tile columns (of C / B)
#define RB_BK 8                        // K depth of one tile
#define RB_TM 8                        // micro-tile rows per thread
#define RB_TN 8                        // micro-tile columns per thread
#define RB_THREADS 256
#define RB_A_PAD 4
#define RB_AS_LD (RB_BM + RB_A_PAD)    // leading dimension of transposed A tile
// float4 loads per thread per K-tile
#define RB_A_LOADS (RB_BM * RB_BK / 4 / RB_THREADS)
#define RB_B_LOADS (RB_BK * RB_BN / 4 / RB_THREADS)

extern "C" __global__ void __launch_bounds__(RB_THREADS, 2)
matmul_register(const float* A, const float* B, float* C, int M, int K, int N)
{
    __shared__ __align__(16) float As[2][RB_BK][RB_AS_LD];
    __shared__ __align__(16) float Bs[2][RB_BK][RB_BN];

    const int tid = threadIdx.x;
    const int tx = tid & 15;  // micro-tile column group
    const int ty = tid >> 4;  // micro-tile row group
    const int bm = blockIdx.y * RB_BM;
    const int bn = blockIdx.x * RB_BN;

    // Vector loads need every row start 16-byte aligned.
    const bool vecA = ((K & 3) == 0) && (((unsigned long long)A & 15ull) == 0);
    const bool vecB = ((N & 3) == 0) && (((unsigned long long)B & 15ull) == 0);
    const bool vecC = ((N & 3) == 0) && (((unsigned long long)C & 15ull) == 0);

    // Where this thread loads from within a tile. A tile: 128 rows x 8 k,
    // two float4 per row. B tile: 8 k x 128 columns, 32 float4 per row.
    int a_row[RB_A_LOADS], a_col[RB_A_LOADS], b_row[RB_B_LOADS], b_col[RB_B_LOADS];
#pragma unroll
    for (int l = 0; l < RB_A_LOADS; ++l) {
        const int idx = tid + l * RB_THREADS;
        a_row[l] = idx / (RB_BK / 4);
        a_col[l] = (idx % (RB_BK / 4)) * 4;
    }
#pragma unroll
    for (int l = 0; l < RB_B_LOADS; ++l) {
        const int idx = tid + l * RB_THREADS;
        b_row[l] = idx / (RB_BN / 4);
        b_col[l] = (idx % (RB_BN / 4)) * 4;
    }

    float4 a_reg[RB_A_LOADS], b_reg[RB_B_LOADS];

    // Global -> registers for the K-tile starting at k0.
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int l = 0; l < RB_A_LOADS; ++l) {
            const int gm = bm + a_row[l];
            const int gk = k0 + a_col[l];
            const float* p = A + (size_t)gm * K + gk;
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
        for (int l = 0; l < RB_B_LOADS; ++l) {
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
        for (int l = 0; l < RB_A_LOADS; ++l) {
            As[s][a_col[l] + 0][a_row[l]] = a_reg[l].x;
            As[s][a_col[l] + 1][a_row[l]] = a_reg[l].y;
            As[s][a_col[l] + 2][a_row[l]] = a_reg[l].z;
            As[s][a_col[l] + 3][a_row[l]] = a_reg[l].w;
        }
#pragma unroll
        for (int l = 0; l < RB_B_LOADS; ++l) {
            *reinterpret_cast<float4*>(&Bs[s][b_row[l]][b_col[l]]) = b_reg[l];
        }
    };

    float acc[RB_TM][RB_TN];
#pragma unroll
    for (int i = 0; i < RB_TM; ++i) {
#pragma unroll
        for (int j = 0; j < RB_TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }

    load_tile(0);
    store_tile(0);
    __syncthreads();

    int stage = 0;
    for (int k0 = 0; k0 < K; k0 += RB_BK) {
        const bool has_next = k0 + RB_BK < K;
        if (has_next) {
            load_tile(k0 + RB_BK); // in flight while we compute below
        }

#pragma unroll
        for (int k = 0; k < RB_BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[stage][k][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[stage][k][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[stage][k][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[stage][k][64 + tx * 4]);
            const float a[RB_TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[RB_TN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < RB_TM; ++i) {
#pragma unroll
                for (int j = 0; j < RB_TN; ++j) {
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

    // Write the 8x8 micro-tile: four float4 per row, bounds-checked.
#pragma unroll
    for (int i = 0; i < RB_TM; ++i) {
        const int gm = bm + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (gm >= M) {
            continue;
        }
        float* crow = C + (size_t)gm * N;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int gn = bn + h * 64 + tx * 4;
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
