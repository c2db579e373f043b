// matmul on Hopper with the tensor memory accelerator (TMA) and warp
// specialisation: C = A * B with f32 C (M x N) and products summed in f32,
// for row-major A (M x K) and B (K x N) of bf16 or fp16 values, or for TF32
// row-major A and B transposed (N x K, the host's copy: `wgmma` reads TF32
// operands only along K). Compiled for `sm_90a` only, as `matmul_wgmma.cu`
// is, whose layouts and descriptors it shares.
//
// What it does that the `wgmma` rung does not:
//
// - Tiles arrive by the tensor memory accelerator: one thread asks for a
//   whole box of a matrix (`cp.async.bulk.tensor`), described by a tensor map
//   the host encodes once (`cuTensorMapEncodeTiled`, 128-byte swizzle, zeros
//   past the matrix's edges), and the copy engine writes it into shared
//   memory already swizzled, counting its bytes onto a barrier in shared
//   memory (`mbarrier`, "complete_tx"). No thread computes an address or
//   waits for a load.
// - The block's warpgroups specialise: warpgroup 0 produces (one thread of it
//   issues every copy; the warpgroup gives its registers away with
//   `setmaxnreg`), the TMA_CONSUMERS others multiply. Each stage has two
//   barriers: `full` (the copies landed: the producer announces the bytes, the
//   copy engine completes them) and `empty` (every consumer warp has finished
//   reading it). No `__syncthreads` in the loop: producer and consumers meet
//   only on a stage's barriers, and the producer runs up to TMA_STAGES tiles
//   ahead.
// - Tiles of C are 64 * TMA_CONSUMERS rows by 256 columns
//   (`wgmma.m64n256k16`: 128 f32 accumulators a consumer thread, which fit
//   once the producer's registers are given to the consumers): each
//   instruction reads its 64 rows of A once for 256 columns instead of 128,
//   about a sixth less shared-memory traffic per product.
// - Blocks are persistent: a grid of at most one block per SM takes tiles of C
//   in turn (grouped by TMA_GROUP rows, so that the blocks running at once share
//   A's and B's tiles in L2), and the producer fetches the next tile's operands
//   while the consumers store the last one's results.
//
// Launch: TMA_THREADS threads, any grid (blocks stride over the tiles), the
// tensor maps of A (boxes of a tile's depth of K, 128 bytes, x TMA_BM rows)
// and B (16-bit: boxes of 64 columns x 64 K rows; TF32's transposed B: 32 K
// x 256 rows) as `__grid_constant__` parameters, dynamic shared memory of
// TMA_SHARED_BYTES. The matrices' row pitches must be multiples of 16 bytes
// (the tensor map's rule): the host pads rows otherwise.
#ifndef TMA_STAGES
#error "TMA_STAGES is defined by the host: cuda/src/workloads/matmul.rs"
#endif
#ifndef TMA_CONSUMERS
#error "TMA_CONSUMERS is defined by the host: cuda/src/workloads/matmul.rs"
#endif
#define TMA_BM (64 * TMA_CONSUMERS)
#define TMA_BN 256
#define TMA_THREADS (128 * (TMA_CONSUMERS + 1))
#define TMA_GROUP 8
// A row of a tile is 128 bytes, the swizzle's span: 64 bf16 or fp16 values of K, or 32 TF32 values.
#define TMA_A_BYTES (TMA_BM * 128)
#define TMA_B_BYTES (TMA_BN * 128)
#define TMA_STAGE_BYTES (TMA_A_BYTES + TMA_B_BYTES)
// The stages, their two barriers each, and 1024 bytes to align the first stage for the swizzle.
#define TMA_SHARED_BYTES (TMA_STAGES * TMA_STAGE_BYTES + TMA_STAGES * 16 + 1024)
// Registers a thread after `setmaxnreg`: the producer keeps few, the consumers take the rest of the SM's 64K.
#define TMA_PRODUCER_REGISTERS 40
#define TMA_CONSUMER_REGISTERS 232
static_assert(128 * TMA_PRODUCER_REGISTERS + 128 * TMA_CONSUMERS * TMA_CONSUMER_REGISTERS <= 65536,
              "the warpgroups' registers fit in the SM's");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TMA_AVAILABLE 1
#endif

// The opaque 128-byte tensor map the host's `cuTensorMapEncodeTiled` fills (CUDA's `CUtensorMap`).
struct __align__(64) TmaTensorMap {
    unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned tma_shared_address(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void tma_barrier_init(unsigned barrier, unsigned arrivals)
{
#ifdef TMA_AVAILABLE
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals) : "memory");
#endif
}

// The producer's arrival on a `full` barrier, announcing the bytes the copies will complete.
__device__ __forceinline__ void tma_expect_bytes(unsigned barrier, unsigned bytes)
{
#ifdef TMA_AVAILABLE
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
#endif
}

__device__ __forceinline__ void tma_arrive(unsigned barrier)
{
#ifdef TMA_AVAILABLE
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
#endif
}

// Waits until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void tma_wait(unsigned barrier, unsigned parity)
{
#ifdef TMA_AVAILABLE
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(barrier), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}

// Copies the box of `map` whose first element is (inner, outer) into shared memory at `to`, completing its bytes
// on `barrier`.
__device__ __forceinline__ void tma_load(unsigned to, const TmaTensorMap* map, unsigned barrier, int inner, int outer)
{
#ifdef TMA_AVAILABLE
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
                 "[%2];\n" ::"r"(to),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(barrier), "r"(inner), "r"(outer)
                 : "memory");
#endif
}

// A matrix descriptor: start address, leading and stride byte offsets, 128-byte swizzle (`matmul_wgmma.cu`).
__device__ __forceinline__ unsigned long long tma_descriptor(unsigned address, unsigned leading, unsigned stride)
{
    return (unsigned long long)((address & 0x3ffff) >> 4) | ((unsigned long long)(leading >> 4) << 16) |
           ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}

// One warpgroup's 64 x 256 product of one step of K: d (128 f32 accumulators a thread) += A * B, both read from
// shared memory through their descriptors. SHAPE_AND_TYPES names the instruction's shape and types; IMMEDIATES
// its scales (and for 16-bit inputs, imm-trans-a 0 and imm-trans-b 1: B read N-major, as it lies in memory).
#define TMA_MMA_M64N256(SHAPE_AND_TYPES, IMMEDIATES)                                                                                    \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                                       \
                 "wgmma.mma_async.sync.aligned." SHAPE_AND_TYPES " "                                     \
                 "{"                                                                                                  \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                             \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                   \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                   \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                   \
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                   \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                   \
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "       \
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"     \
                 "}, %128, %129, p" IMMEDIATES ";\n}\n"                                                                 \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),    \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),          \
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),        \
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),        \
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),        \
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),        \
                   "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),        \
                   "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),        \
                   "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),        \
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),        \
                   "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),        \
                   "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),        \
                   "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),        \
                   "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]),        \
                   "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),                \
                   "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),               \
                   "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]),               \
                   "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]),               \
                   "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])                              \
                 : "l"(desc_a), "l"(desc_b), "r"(1))

// The three precisions of the rung. A row of a tile holds DEPTH values of K, multiplied STEP at a time; B lies
// N-major (row-major K x N, as in memory) for 16-bit inputs, which `wgmma` transposes as it reads, and K-major
// (the host's transposed copy, N x K) for TF32, which `wgmma` reads only so.
enum TmaPrecision { TMA_BF16, TMA_F16, TMA_TF32 };
template <int P>
struct TmaKind {
    static constexpr int DEPTH = P == TMA_TF32 ? 32 : 64;
    static constexpr int STEP = P == TMA_TF32 ? 8 : 16;
    static constexpr bool B_K_MAJOR = P == TMA_TF32;
};

template <int P>
__device__ __forceinline__ void tma_mma(float (&d)[TMA_BN / 2], unsigned long long desc_a, unsigned long long desc_b)
{
#ifdef TMA_AVAILABLE
    if constexpr (P == TMA_BF16) {
        TMA_MMA_M64N256("m64n256k16.f32.bf16.bf16", ", 1, 1, 0, 1");
    } else if constexpr (P == TMA_F16) {
        TMA_MMA_M64N256("m64n256k16.f32.f16.f16", ", 1, 1, 0, 1");
    } else {
        TMA_MMA_M64N256("m64n256k8.f32.tf32.tf32", ", 1, 1");
    }
#endif
}

// Stores a consumer's 64 x 256 accumulators, whose first row is row0: d[4j + h] holds column 8j + 2t + (h & 1) of
// row g + 8 (h >> 1) of its warp's 16 (g = lane / 4, t = lane % 4), `mma.sync`'s C fragments every 8 columns.
__device__ __forceinline__ void tma_store(float* __restrict__ C, const float (&d)[TMA_BN / 2], int M, int N, int row0,
                                          int col0)
{
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int rows = row0 + warp * 16 + g;
    const bool pairs = (N & 1) == 0;
#pragma unroll
    for (int j = 0; j < TMA_BN / 8; ++j) {
        const int c = col0 + 8 * j + 2 * t;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int r = rows + 8 * half;
            if (r >= M) {
                continue;
            }
            float* out = C + (size_t)r * N + c;
            const float v0 = d[4 * j + 2 * half], v1 = d[4 * j + 2 * half + 1];
            if (pairs && c + 1 < N) {
                *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
            } else {
                if (c < N) out[0] = v0;
                if (c + 1 < N) out[1] = v1;
            }
        }
    }
}

// The first row and column of C's tile number `tile`, in groups of TMA_GROUP rows of tiles taken column by column.
__device__ __forceinline__ void tma_tile_origin(int tile, int tile_rows, int tile_columns, int& row0, int& col0)
{
    const int group = tile / (TMA_GROUP * tile_columns), first_row = group * TMA_GROUP;
    const int group_rows = min(tile_rows - first_row, TMA_GROUP);
    const int in_group = tile % (TMA_GROUP * tile_columns);
    row0 = (first_row + in_group % group_rows) * TMA_BM;
    col0 = (in_group / group_rows) * TMA_BN;
}

template <int P>
__device__ __forceinline__ void tma_matmul(const TmaTensorMap* map_a, const TmaTensorMap* map_b, float* __restrict__ C,
                                           int M, int K, int N)
{
#ifdef TMA_AVAILABLE
    extern __shared__ __align__(1024) unsigned char tma_shared[];
    const unsigned raw = tma_shared_address(tma_shared);
    const unsigned base = (raw + 1023) & ~1023u;
    const unsigned full = base + TMA_STAGES * TMA_STAGE_BYTES, empty = full + TMA_STAGES * 8;
    const int warpgroup = threadIdx.x / 128;
    const int tile_rows = (M + TMA_BM - 1) / TMA_BM, tile_columns = (N + TMA_BN - 1) / TMA_BN;
    const int tiles = tile_rows * tile_columns, depth = (K + TmaKind<P>::DEPTH - 1) / TmaKind<P>::DEPTH;

    if (threadIdx.x == 0) {
        for (int s = 0; s < TMA_STAGES; ++s) {
            tma_barrier_init(full + 8 * s, 1);
            tma_barrier_init(empty + 8 * s, 4 * TMA_CONSUMERS);
        }
        // The barriers' initialisation, visible to the copy engine before its first completion.
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(TMA_PRODUCER_REGISTERS));
        if (threadIdx.x == 0) {
            // Stage use number u (counted over every tile of every tile of C this block takes) goes to stage
            // u % TMA_STAGES; before its second and later uses the consumers must have emptied it.
            int use = 0;
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int row0, col0;
                tma_tile_origin(tile, tile_rows, tile_columns, row0, col0);
                for (int k = 0; k < depth; ++k, ++use) {
                    const int s = use % TMA_STAGES;
                    if (use >= TMA_STAGES) {
                        tma_wait(empty + 8 * s, ((use / TMA_STAGES) - 1) & 1);
                    }
                    const unsigned stage = base + s * TMA_STAGE_BYTES;
                    tma_expect_bytes(full + 8 * s, TMA_STAGE_BYTES);
                    const int k0 = k * TmaKind<P>::DEPTH;
                    tma_load(stage, map_a, full + 8 * s, k0, row0);
                    if constexpr (TmaKind<P>::B_K_MAJOR) {
                        tma_load(stage + TMA_A_BYTES, map_b, full + 8 * s, k0, col0);
                    } else {
#pragma unroll
                        for (int j = 0; j < TMA_BN / 64; ++j) {
                            tma_load(stage + TMA_A_BYTES + j * (TmaKind<P>::DEPTH * 128), map_b, full + 8 * s,
                                     col0 + 64 * j, k0);
                        }
                    }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(TMA_CONSUMER_REGISTERS));
        const int consumer = warpgroup - 1;
        const bool announcer = threadIdx.x % 32 == 0;
        int use = 0;
        float d[TMA_BN / 2];
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int row0, col0;
            tma_tile_origin(tile, tile_rows, tile_columns, row0, col0);
#pragma unroll
            for (int i = 0; i < TMA_BN / 2; ++i) {
                d[i] = 0.0f;
            }
            // One group of products left running while the next stage's are issued; a stage is released once the
            // products that read it are done.
#pragma unroll 1
            for (int k = 0; k < depth; ++k, ++use) {
                const int s = use % TMA_STAGES;
                tma_wait(full + 8 * s, (use / TMA_STAGES) & 1);
                const unsigned stage = base + s * TMA_STAGE_BYTES;
                const unsigned a = stage + consumer * 64 * 128, b = stage + TMA_A_BYTES;
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int step = 0; step < TmaKind<P>::DEPTH / TmaKind<P>::STEP; ++step) {
                    // A step of K moves 32 bytes along a K-major row; along N-major B it moves two 8-row atoms.
                    const unsigned long long desc_b =
                        TmaKind<P>::B_K_MAJOR ? tma_descriptor(b + step * 32, 16, 1024)
                                              : tma_descriptor(b + step * 2 * 1024, (TmaKind<P>::DEPTH / 8) * 1024, 1024);
                    tma_mma<P>(d, tma_descriptor(a + step * 32, 16, 1024), desc_b);
                }
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (k > 0 && announcer) {
                    tma_arrive(empty + 8 * ((use - 1) % TMA_STAGES));
                }
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (depth > 0 && announcer) {
                tma_arrive(empty + 8 * ((use - 1) % TMA_STAGES));
            }
            tma_store(C, d, M, N, row0 + consumer * 64, col0);
        }
    }
#endif
}

extern "C" __global__ void __launch_bounds__(TMA_THREADS, 1)
matmul_tma_bf16(const __grid_constant__ TmaTensorMap map_a, const __grid_constant__ TmaTensorMap map_b, float* C,
                int M, int K, int N)
{
    tma_matmul<TMA_BF16>(&map_a, &map_b, C, M, K, N);
}

extern "C" __global__ void __launch_bounds__(TMA_THREADS, 1)
matmul_tma_f16(const __grid_constant__ TmaTensorMap map_a, const __grid_constant__ TmaTensorMap map_b, float* C,
               int M, int K, int N)
{
    tma_matmul<TMA_F16>(&map_a, &map_b, C, M, K, N);
}

// TF32: A row-major (M x K) and B transposed (N x K, the host's copy), both of f32 values whose low 13 bits the
// tensor core ignores.
extern "C" __global__ void __launch_bounds__(TMA_THREADS, 1)
matmul_tma_tf32(const __grid_constant__ TmaTensorMap map_a, const __grid_constant__ TmaTensorMap map_bt, float* C,
                int M, int K, int N)
{
    tma_matmul<TMA_TF32>(&map_a, &map_bt, C, M, K, N);
}
