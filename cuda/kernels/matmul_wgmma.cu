// matmul on Hopper's warpgroup tensor-core instructions: C = A * B for
// row-major A (M x K) and B (K x N) of bf16 or fp16 values, f32 C (M x N),
// products summed in f32. Compiled for `sm_90a` only (the architecture-
// specific target that has `wgmma`), in a file of its own so that no other
// kernel needs that target.
//
// `wgmma.mma_async` multiplies a 64 x N tile of A by an N-wide tile of B,
// 16 deep, for a whole warpgroup (4 warps, 128 threads) at once, reading both
// operands straight from shared memory through 64-bit "matrix descriptors"
// (the `mma.sync` rungs load every operand into registers first, with
// `ldmatrix`). The descriptors name a canonical layout: here the 128-byte
// swizzle, in which each 8-row x 128-byte atom (1024 bytes, aligned) holds row
// r's 16-byte chunk c at chunk c ^ r, so that the eight rows the hardware
// reads together fall in different banks.
//
//   A is K-major (a row of the tile is 64 consecutive K values, 128 bytes):
//     row m, chunk c at m * 128 + ((c ^ (m % 8)) * 16); 8-row groups 1024
//     bytes apart (the descriptor's stride offset); a step of 16 along K
//     moves the start 32 bytes.
//   B is N-major (row-major K x N, as it is in memory; `wgmma`'s imm-trans-b
//     reads it transposed): atoms of 8 K rows x 64 N values; value (k, n) in
//     atom (k / 8, n / 64), row k % 8, chunk (n % 64) / 8, swizzled alike;
//     atoms along K 1024 bytes apart (stride offset), along N WG_BK / 8 *
//     1024 bytes apart (leading offset); a step of 16 along K moves the
//     start two atoms.
//
// Tiles travel from memory with `cp.async` into WG_STAGES stages (as the
// `mma.sync` rungs' do), and `fence.proxy.async` makes the copies visible
// to `wgmma`, which reads shared memory through the async proxy. Each of the
// block's WG_WARPGROUPS warpgroups computes 64 rows of the block tile; the
// accumulators stay in registers (WG_BN / 2 floats a thread) in the layout of
// `mma.sync`'s C fragments, repeated every 8 columns.
//
// Launch: WG_THREADS threads, grid = (ceil(N / WG_BN), ceil(M / WG_BM)),
// dynamic shared memory of WG_STAGES stages of (WG_BM + WG_BN) x WG_BK values, plus
// 1024 bytes to align the first stage. Any M, K, N: chunks not wholly in
// range or not aligned are copied element by element with zeros past the
// edges, and stores are guarded.
#ifndef WG_BN
#error "WG_BN is defined by the host: cuda/src/workloads/matmul.rs"
#endif
#ifndef WG_STAGES
#error "WG_STAGES is defined by the host: cuda/src/workloads/matmul.rs"
#endif
#ifndef WG_WARPGROUPS
#error "WG_WARPGROUPS is defined by the host: cuda/src/workloads/matmul.rs"
#endif
#define WG_BM (64 * WG_WARPGROUPS)
#define WG_BK 64
#define WG_THREADS (128 * WG_WARPGROUPS)
#define WG_GROUP 8
static_assert(WG_BN == 128, "m64n128k16: 256 columns took every register a thread has and ran slower");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_AVAILABLE 1
#endif

// Bytes of one stage's A tile and B tile.
#define WG_A_BYTES (WG_BM * WG_BK * 2)
#define WG_B_BYTES (WG_BK * WG_BN * 2)

__device__ __forceinline__ unsigned wg_shared_address(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void wg_copy16(unsigned shared, const void* global)
{
#ifdef WG_AVAILABLE
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(global));
#endif
}

// Where, in a stage's A tile, row m's chunk c (8 K values) lies.
__device__ __forceinline__ unsigned wg_a_offset(int m, int c)
{
    return m * 128 + ((c ^ (m & 7)) << 4);
}

// Where, in a stage's B tile, row k's chunk c (8 N values, columns 8c .. 8c + 7) lies.
__device__ __forceinline__ unsigned wg_b_offset(int k, int c)
{
    return ((c >> 3) * (WG_BK / 8) + (k >> 3)) * 1024 + (k & 7) * 128 + (((c & 7) ^ (k & 7)) << 4);
}

// A matrix descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long wg_descriptor(unsigned address, unsigned leading, unsigned stride)
{
    return (unsigned long long)((address & 0x3ffff) >> 4) | ((unsigned long long)(leading >> 4) << 16) |
           ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}

// Copies tile k0 of A (rows row0 ..) and B (columns col0 ..) into the stage at shared address `stage`.
template <class T>
__device__ __forceinline__ void wg_load_tile(unsigned stage, unsigned char* stage_pointer, const T* __restrict__ A,
                                             const T* __restrict__ B, int M, int K, int N, int row0, int col0, int k0,
                                             bool interior)
{
    constexpr int A_CHUNKS = WG_BM * WG_BK / 8, B_CHUNKS = WG_BK * WG_BN / 8;
    static_assert(A_CHUNKS % WG_THREADS == 0, "whole chunks of A a thread");
#pragma unroll
    for (int i = 0; i < A_CHUNKS / WG_THREADS; ++i) {
        const int chunk = threadIdx.x + i * WG_THREADS;
        const int m = chunk / (WG_BK / 8), c = chunk % (WG_BK / 8);
        const int gm = row0 + m, gk = k0 + c * 8;
        const unsigned to = wg_a_offset(m, c);
        if (interior || (gm < M && gk + 8 <= K && K % 8 == 0)) {
            wg_copy16(stage + to, A + (size_t)gm * K + gk);
        } else {
            T* dst = reinterpret_cast<T*>(stage_pointer + to);
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                dst[e] = (gm < M && gk + e < K) ? A[(size_t)gm * K + gk + e] : T(0);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < (B_CHUNKS + WG_THREADS - 1) / WG_THREADS; ++i) {
        const int chunk = threadIdx.x + i * WG_THREADS;
        if (B_CHUNKS % WG_THREADS != 0 && chunk >= B_CHUNKS) {
            break;
        }
        const int k = chunk / (WG_BN / 8), c = chunk % (WG_BN / 8);
        const int gk = k0 + k, gn = col0 + c * 8;
        const unsigned to = WG_A_BYTES + wg_b_offset(k, c);
        if (interior || (gk < K && gn + 8 <= N && N % 8 == 0)) {
            wg_copy16(stage + to, B + (size_t)gk * N + gn);
        } else {
            T* dst = reinterpret_cast<T*>(stage_pointer + to);
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                dst[e] = (gk < K && gn + e < N) ? B[(size_t)gk * N + gn + e] : T(0);
            }
        }
    }
}

// One warpgroup's 64 x 128 x 16 product in the input type TYPE ("bf16" or "f16"): d (64 f32 accumulators a
// thread) += A * B, both read from shared memory through their descriptors; imm-trans-b 1 reads B N-major, scale-d 1
// accumulates. A macro so that the two types share one text of the instruction and its 66 operands.
#define WG_MMA_M64N128K16(TYPE)                                                                                      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                        \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " "                                      \
                 "{"                                                                                                  \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                             \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                   \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                   \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"                     \
                 "}, %64, %65, p, 1, 1, 0, 1;\n}\n"                                                                   \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),    \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),\
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),\
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),\
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),\
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])\
                 : "l"(desc_a), "l"(desc_b), "r"(1))

// One warpgroup's 64 x WG_BN x 16 product: d += A (descriptor) * B (descriptor).
template <bool BF16>
__device__ __forceinline__ void wg_mma(float (&d)[WG_BN / 2], unsigned long long desc_a, unsigned long long desc_b)
{
#ifdef WG_AVAILABLE
    if constexpr (BF16) {
        WG_MMA_M64N128K16("bf16");
    } else {
        WG_MMA_M64N128K16("f16");
    }
#endif
}

// Stores a warpgroup's 64 x WG_BN accumulators, whose first row is row0: d[4j + h] holds column 8j + 2t + (h & 1)
// of row g + 8 (h >> 1) of its warp's 16 (g = lane / 4, t = lane % 4), `mma.sync`'s C fragments every 8 columns.
__device__ __forceinline__ void wg_store(float* __restrict__ C, const float (&d)[WG_BN / 2], int M, int N, int row0,
                                         int col0)
{
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int rows = row0 + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < WG_BN / 8; ++j) {
        const int c = col0 + 8 * j + 2 * t;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int r = rows + 8 * half;
            if (r >= M) {
                continue;
            }
            float* out = C + (size_t)r * N + c;
            const float v0 = d[4 * j + 2 * half], v1 = d[4 * j + 2 * half + 1];
            if ((N & 1) == 0 && c + 1 < N) {
                *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
            } else {
                if (c < N) out[0] = v0;
                if (c + 1 < N) out[1] = v1;
            }
        }
    }
}

template <bool BF16>
__device__ __forceinline__ void wg_matmul(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                                          float* __restrict__ C, int M, int K, int N)
{
#ifdef WG_AVAILABLE
    extern __shared__ __align__(1024) unsigned char wg_shared[];
    // The first stage at the first 1024-byte boundary of the block's shared memory (the swizzle is of address bits).
    const unsigned raw = wg_shared_address(wg_shared);
    const unsigned base = (raw + 1023) & ~1023u;
    unsigned char* stages = wg_shared + (base - raw);
    constexpr unsigned STAGE = WG_A_BYTES + WG_B_BYTES;
    const int warpgroup = threadIdx.x / 128;

    const int tile_columns = gridDim.x, tile_rows = gridDim.y;
    const int block = blockIdx.y * tile_columns + blockIdx.x;
    const int group = block / (WG_GROUP * tile_columns), first_row = group * WG_GROUP;
    const int group_rows = min(tile_rows - first_row, WG_GROUP);
    const int in_group = block % (WG_GROUP * tile_columns);
    const int row0 = (first_row + in_group % group_rows) * WG_BM, col0 = (in_group / group_rows) * WG_BN;
    const bool block_inside = K % 8 == 0 && N % 8 == 0 && row0 + WG_BM <= M && col0 + WG_BN <= N;
    const int tiles = (K + WG_BK - 1) / WG_BK;

    float d[WG_BN / 2];
#pragma unroll
    for (int i = 0; i < WG_BN / 2; ++i) {
        d[i] = 0.0f;
    }
    auto load_tile = [&](int tile) {
        const int stage = tile % WG_STAGES;
        wg_load_tile<unsigned short>(base + stage * STAGE, stages + stage * STAGE, A, B, M, K, N, row0, col0,
                                     tile * WG_BK, block_inside && (tile + 1) * WG_BK <= K);
    };
    // Tiles of K flow through the stages: at trip t, tile t is multiplied while the copies of tiles t + 1 ..
    // t + WG_STAGES - 2 are in flight and the products of tile t - 1 may still run (`wgmma.wait_group 1`), so
    // the stage refilled at trip t is tile t - 2's, which every warpgroup has finished reading.
    static_assert(WG_STAGES >= 3, "a stage being copied, one being multiplied and one finishing");
#pragma unroll
    for (int s = 0; s < WG_STAGES - 2; ++s) {
        if (s < tiles) {
            load_tile(s);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    }
#pragma unroll 1
    for (int tile = 0; tile < tiles; ++tile) {
        // Tile `tile` has landed; the fence hands this thread's copies to the async proxy that `wgmma` reads
        // through, and the barrier publishes every thread's and tells every thread that tile - 2's products are
        // done (each warpgroup waited for them at the end of the last trip).
        asm volatile("cp.async.wait_group %0;\n" ::"n"(WG_STAGES - 3));
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (tile + WG_STAGES - 2 < tiles) {
            load_tile(tile + WG_STAGES - 2);
        }
        asm volatile("cp.async.commit_group;\n" ::);
        const unsigned stage = base + (tile % WG_STAGES) * STAGE;
        const unsigned a = stage + warpgroup * 64 * 128, b = stage + WG_A_BYTES;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int step = 0; step < WG_BK / 16; ++step) {
            wg_mma<BF16>(d, wg_descriptor(a + step * 32, 16, 1024),
                         wg_descriptor(b + step * 2 * 1024, (WG_BK / 8) * 1024, 1024));
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::);

    wg_store(C, d, M, N, row0 + warpgroup * 64, col0);
#endif
}

extern "C" __global__ void __launch_bounds__(WG_THREADS, 1)
matmul_wgmma_bf16(const unsigned short* A, const unsigned short* B, float* C, int M, int K, int N)
{
    wg_matmul<true>(A, B, C, M, K, N);
}

extern "C" __global__ void __launch_bounds__(WG_THREADS, 1)
matmul_wgmma_f16(const unsigned short* A, const unsigned short* B, float* C, int M, int K, int N)
{
    wg_matmul<false>(A, B, C, M, K, N);
}
