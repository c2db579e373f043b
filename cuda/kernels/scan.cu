// scan: the inclusive prefix sum, y[i] = x[0] + ... + x[i].
//
// The loop a CPU runs, y[i] = y[i-1] + x[i], is one chain of n dependent
// additions: a GPU cannot run it in parallel as written. Three rungs reorganise
// the additions:
//
// 1. scan_naive (Hillis-Steele): ceil(log2 n) launches, each adding the value
//    2^k places back. Simple, parallel, and O(n log n) work: it reads and
//    writes the whole array log2(n) times.
// 2. reduce-then-scan (work-efficient): scan_tile_sums adds each tile of
//    SCAN_TILE elements; the tiles' sums are scanned by the same two kernels
//    one level up (the host recurses until one tile holds them); scan_tile then
//    scans each tile starting from its carry. About 3n memory traffic.
// 3. scan_lookback (single pass, decoupled look-back, Merrill and Garland
//    2016): each block takes the next tile in launch order, scans it, publishes
//    its sum, and looks back at its predecessors' published sums until it finds
//    one that already holds its whole prefix. 2n memory traffic: one read, one
//    write, like a copy.
//
// Accuracy rule (the check of core's Scan): no float accumulates along the
// array. Inside a tile each thread adds its SCAN_ITEMS elements in order and
// the threads' totals are combined by a tree (warp shuffles), so an output's
// additions form a tree of depth about log2 of the tile; across tiles the
// carries are scanned by a tree (reduce-then-scan) or kept in double (the
// look-back's published prefixes).

#ifndef SCAN_BLOCK
#error "SCAN_BLOCK is defined by the host: cuda/src/workloads/scan.rs"
#endif
#ifndef SCAN_ITEMS
#error "SCAN_ITEMS is defined by the host: cuda/src/workloads/scan.rs"
#endif
#define SCAN_TILE (SCAN_BLOCK * SCAN_ITEMS)
#define SCAN_WARPS (SCAN_BLOCK / 32)
// Shared-memory index of tile element i, padded by one float per 32 so that a
// thread reading its SCAN_ITEMS consecutive elements meets no bank conflict.
#define PADDED(i) ((i) + ((i) >> 5))

// Rung 1: one step of Hillis-Steele, out[i] = in[i] + in[i - offset].
//
// Launch: block = SCAN_BLOCK threads, one thread per element; the host
// launches it with offset = 1, 2, 4, ... < n, ping-ponging between buffers, the
// first step reading x and the last writing y.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_naive(const float* in, float* out, unsigned long long n, unsigned long long offset)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = i >= offset ? in[i] + in[i - offset] : in[i];
    }
}

// Loads tile `tile` of x into shared memory (coalesced), zero past n.
__device__ __forceinline__ void load_tile(const float* x, unsigned long long n, unsigned long long tile, float* s)
{
    const unsigned long long base = tile * SCAN_TILE;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        const int i = k * SCAN_BLOCK + threadIdx.x;
        s[PADDED(i)] = base + i < n ? x[base + i] : 0.0f;
    }
    __syncthreads();
}

// The sum of the calling thread's SCAN_ITEMS elements of the tile in s, and
// the sum over the whole block (a tree: warp shuffles, then the warps' sums).
__device__ __forceinline__ float block_sum(const float* s, float* warp_sums)
{
    float v = 0.0f;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        v += s[PADDED(threadIdx.x * SCAN_ITEMS + k)];
    }
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, o);
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        warp_sums[warp] = v;
    }
    __syncthreads();
    float total = 0.0f;
    if (warp == 0) {
        total = lane < SCAN_WARPS ? warp_sums[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            total += __shfl_down_sync(0xffffffffu, total, o);
        }
    }
    return total; // valid in thread 0
}

// Scans the tile in s in place (inclusive) and returns the tile's total (in
// every thread). Each thread scans its SCAN_ITEMS consecutive elements in
// order, the threads' totals are scanned by warp shuffles and then the warps'
// totals, and each thread adds the exclusive prefix of the threads before it.
__device__ __forceinline__ float block_scan(float* s, float* warp_sums)
{
    float items[SCAN_ITEMS];
    float run = 0.0f;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        run += s[PADDED(threadIdx.x * SCAN_ITEMS + k)];
        items[k] = run;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float inclusive = run;
    for (int o = 1; o < 32; o <<= 1) {
        const float up = __shfl_up_sync(0xffffffffu, inclusive, o);
        if (lane >= o) {
            inclusive += up;
        }
    }
    if (lane == 31) {
        warp_sums[warp] = inclusive;
    }
    __syncthreads();
    if (warp == 0) {
        float w = lane < SCAN_WARPS ? warp_sums[lane] : 0.0f;
        for (int o = 1; o < SCAN_WARPS; o <<= 1) {
            const float up = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) {
                w += up;
            }
        }
        if (lane < SCAN_WARPS) {
            warp_sums[lane] = w; // inclusive scan of the warps' totals
        }
    }
    __syncthreads();
    // The threads before this one in its warp: their inclusive scan, from the lane before (inclusive - run would
    // add a rounding).
    const float lane_before = __shfl_up_sync(0xffffffffu, inclusive, 1);
    const float exclusive = (warp > 0 ? warp_sums[warp - 1] : 0.0f) + (lane > 0 ? lane_before : 0.0f);
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        s[PADDED(threadIdx.x * SCAN_ITEMS + k)] = exclusive + items[k];
    }
    const float total = warp_sums[SCAN_WARPS - 1];
    __syncthreads();
    return total;
}

// Stores the scanned tile in s to y (coalesced), adding carry to each element
// and rounding once.
template <typename Carry>
__device__ __forceinline__ void store_tile(float* y, unsigned long long n, unsigned long long tile, const float* s, Carry carry)
{
    const unsigned long long base = tile * SCAN_TILE;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        const int i = k * SCAN_BLOCK + threadIdx.x;
        if (base + i < n) {
            y[base + i] = (float)(carry + (Carry)s[PADDED(i)]);
        }
    }
}

// Rung 2a: the sum of each tile of SCAN_TILE elements.
//
// Launch: block = SCAN_BLOCK threads, grid = ceil(n / SCAN_TILE) blocks.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_tile_sums(const float* x, float* sums, unsigned long long n)
{
    __shared__ float s[PADDED(SCAN_TILE)];
    __shared__ float warp_sums[SCAN_WARPS];
    load_tile(x, n, blockIdx.x, s);
    const float total = block_sum(s, warp_sums);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = total;
    }
}

// Rung 2b: scans each tile, starting from the inclusive scan of the tiles
// before it (carries[tile - 1]; carries may be null for a single tile).
//
// Launch: block = SCAN_BLOCK threads, grid = ceil(n / SCAN_TILE) blocks.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_tile(const float* x, float* y, unsigned long long n, const float* carries)
{
    __shared__ float s[PADDED(SCAN_TILE)];
    __shared__ float warp_sums[SCAN_WARPS];
    load_tile(x, n, blockIdx.x, s);
    block_scan(s, warp_sums);
    const float carry = blockIdx.x > 0 ? carries[blockIdx.x - 1] : 0.0f;
    store_tile<float>(y, n, blockIdx.x, s, carry);
}

// The states a tile publishes for the look-back.
#define TILE_EMPTY 0u     // nothing published yet
#define TILE_AGGREGATE 1u // aggregates[tile]: the tile's own sum
#define TILE_PREFIX 2u    // prefixes[tile]: the sum of every element up to the tile's end

// Rung 3: single-pass scan with decoupled look-back.
//
// Launch: block = SCAN_BLOCK threads, grid = ceil(n / SCAN_TILE) blocks. The
// host zeroes *next_tile and flags[0 .. tiles) before every launch.
//
// Forward progress: a block takes its tile number from an atomic counter when
// it starts, so every tile it waits on belongs to a block that started before
// it and is running or done: no block waits on one that cannot be scheduled.
// Each tile publishes its sum (TILE_AGGREGATE) as soon as it has scanned, then
// its inclusive prefix (TILE_PREFIX) once it knows it; the value is written
// first, then a fence, then the flag, and a reader that sees the flag fences
// before reading the value. The published values are doubles, so the chain of
// prefixes from tile to tile adds no float rounding.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_lookback(const float* x, float* y, unsigned long long n, unsigned int* next_tile, unsigned int* flags,
              double* aggregates, double* prefixes)
{
    __shared__ float s[PADDED(SCAN_TILE)];
    __shared__ float warp_sums[SCAN_WARPS];
    __shared__ unsigned long long tile_shared;
    __shared__ double exclusive_shared;
    if (threadIdx.x == 0) {
        tile_shared = atomicAdd(next_tile, 1u);
    }
    __syncthreads();
    const unsigned long long tile = tile_shared;
    load_tile(x, n, tile, s);
    const double aggregate = (double)block_scan(s, warp_sums);

    if (threadIdx.x == 0) {
        if (tile == 0) {
            prefixes[0] = aggregate;
            __threadfence();
            atomicExch(&flags[0], TILE_PREFIX);
        } else {
            aggregates[tile] = aggregate;
            __threadfence();
            atomicExch(&flags[tile], TILE_AGGREGATE);
        }
    }
    if (tile > 0 && threadIdx.x < 32) {
        // The first warp looks back 32 tiles at a time.
        const int lane = threadIdx.x;
        double exclusive = 0.0;
        long long end = (long long)tile - 1; // the window is (end - 31 .. end]
        for (;;) {
            const long long j = end - lane;
            // The whole warp spins until every tile of its window has published something; lanes before tile 0
            // count as a published zero prefix. The loop's exit is the same for every lane.
            unsigned int flag;
            for (;;) {
                flag = j >= 0 ? *(volatile unsigned int*)&flags[j] : TILE_PREFIX;
                if (!__any_sync(0xffffffffu, flag == TILE_EMPTY)) {
                    break;
                }
            }
            __threadfence();
            double value = 0.0;
            if (j >= 0) {
                value = flag == TILE_PREFIX ? *(volatile double*)&prefixes[j] : *(volatile double*)&aggregates[j];
            }
            // The nearest lane holding a prefix ends the look-back: lanes past it (further back) add nothing.
            const unsigned int prefix_lanes = __ballot_sync(0xffffffffu, flag == TILE_PREFIX);
            const int stop = prefix_lanes ? __ffs(prefix_lanes) - 1 : 32;
            if (lane > stop) {
                value = 0.0;
            }
            for (int o = 16; o > 0; o >>= 1) {
                value += __shfl_down_sync(0xffffffffu, value, o);
            }
            exclusive += __shfl_sync(0xffffffffu, value, 0);
            if (prefix_lanes) {
                break;
            }
            end -= 32;
        }
        if (lane == 0) {
            prefixes[tile] = exclusive + aggregate;
            __threadfence();
            atomicExch(&flags[tile], TILE_PREFIX);
            exclusive_shared = exclusive;
        }
    } else if (threadIdx.x == 0) {
        exclusive_shared = 0.0;
    }
    __syncthreads();
    store_tile<double>(y, n, tile, s, exclusive_shared);
}
