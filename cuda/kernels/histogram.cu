// histogram: counts[b] += 1 for every x with bin b, over `bins` bins.
//
// Bin rule (identical on every backend): NaN is not counted; otherwise
// b = (int)(x * (float)bins) with an f32 multiply, truncated toward zero and
// clamped to [0, bins - 1], so negative values and -inf land in bin 0 and
// values >= 1 and +inf in bin bins - 1. The host zeroes counts first.
//
// The lesson is atomic contention: many threads incrementing the same
// counters get serialised by the memory system. The rungs move the hot
// counters from global memory (L2 atomics) into each block's shared memory.

#ifndef HISTOGRAM_BLOCK
#error "HISTOGRAM_BLOCK is defined by the host: cuda/src/launch.rs"
#endif
// Largest number of bins a block keeps in shared memory: 12288 x 4 bytes =
// 48 KiB, the most a block may use without opting in to more.
#ifndef HISTOGRAM_SHARED_BINS
#error "HISTOGRAM_SHARED_BINS is defined by the host: cuda/src/launch.rs"
#endif

// The bin of v, or -1 for NaN.
__device__ __forceinline__ int bin_of(float v, int bins)
{
    if (isnan(v)) {
        return -1;
    }
    if (isinf(v)) {
        return v > 0.0f ? bins - 1 : 0;
    }
    const float f = __fmul_rn(v, (float)bins);
    if (!(f > 0.0f)) {
        return 0; // negative (or zero)
    }
    if (f >= (float)bins) {
        return bins - 1; // also keeps the int conversion below in range
    }
    return min((int)f, bins - 1); // (int) truncates toward zero
}

// Rung 1: one global atomic per element.
//
// Launch: block = HISTOGRAM_BLOCK (256) threads, any grid >= 1 (grid-stride).
// Simple and correct, but every increment is a read-modify-write at L2; when
// many values share a bin (skewed data), the atomics on that address queue up
// one behind the other.
extern "C" __global__ void __launch_bounds__(HISTOGRAM_BLOCK)
histogram_global(const float* x, unsigned int* counts, unsigned long long n, int bins)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        const int b = bin_of(x[i], bins);
        if (b >= 0) {
            atomicAdd(&counts[b], 1u);
        }
    }
}

// Rung 2: privatisation in shared memory, with vector loads.
//
// Launch: block = HISTOGRAM_BLOCK (256) threads, any grid >= 1 (the host uses
// min(ceil(n / 256), 4 * SM count)), dynamic shared memory =
// min(bins, 12288) * 4 bytes. x may have any alignment; its 16-byte-aligned
// middle part is read with float4 loads.
//
// - Each block counts into its own copy of the histogram in shared memory
//   (shared-memory atomics are far cheaper than global ones, and only the
//   block's own 256 threads contend for them), then adds its non-zero
//   counters to the global histogram once: one global atomic per bin per
//   block instead of one per element.
// - More than 12288 bins do not fit, so the bins are processed in ranges of
//   12288: for each range the block zeroes its copy, counts the elements that
//   fall into the range, and flushes. Each range re-reads x.
// - Memory parallelism: the grid is small (a few blocks per SM), so each
//   thread must keep several loads in flight or the kernel just waits on DRAM
//   latency. Each thread issues HISTOGRAM_F4_PER_THREAD float4 loads (16
//   values) before counting any of them; positions past the end read as NaN,
//   which has no bin.
// - Skewed data (e.g. 90% of values in one bin) makes many lanes of a warp
//   hit the same shared counter. The usual remedies are a private copy per
//   warp, or warp aggregation (__match_any_sync groups lanes with equal bins
//   and one lane adds __popc(group) for all of them). Both were considered
//   and plain shared-memory atomics were kept: on Hopper the shared-memory
//   unit resolves same-address atomics of one warp instruction quickly, while
//   __match_any_sync is a slow multi-cycle instruction paid on every element.
//   Measured on an H200, aggregation made uniform and even 90%-skewed data
//   slower than plain atomics, which ran both at about the same speed
//   (docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). Per-warp copies would
//   need 8 x bins counters, which fit only for small bin counts, and cost
//   8x the zeroing and flushing, for contention that is not the bottleneck.

#define HISTOGRAM_F4_PER_THREAD 4

// Counts one value into the shared histogram range [lo, lo + range).
__device__ __forceinline__ void count_local(unsigned int* local, float v, int bins, int lo,
                                            int range)
{
    const int key = bin_of(v, bins) - lo; // NaN: bin_of gives -1, so key < 0
    if (key >= 0 && key < range) {
        atomicAdd(&local[key], 1u);
    }
}

extern "C" __global__ void __launch_bounds__(HISTOGRAM_BLOCK)
histogram_private(const float* x, unsigned int* counts, unsigned long long n, int bins)
{
    extern __shared__ unsigned int local[];

    const int shared_bins = min(bins, HISTOGRAM_SHARED_BINS);
    const float nan = __int_as_float(0x7fc00000);
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

    // Split x into a scalar head (up to 3 values before the first 16-byte
    // boundary), an aligned float4 body, and a scalar tail (up to 3 values).
    const unsigned long long misalign = ((unsigned long long)x >> 2) & 3ull;
    unsigned long long head = (4ull - misalign) & 3ull;
    if (head > n) {
        head = n;
    }
    const unsigned long long n4 = (n - head) >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x + head);

    for (int lo = 0; lo < bins; lo += shared_bins) {
        const int range = min(shared_bins, bins - lo);

        for (int j = threadIdx.x; j < range; j += blockDim.x) {
            local[j] = 0u;
        }
        __syncthreads();

        // Grid-stride over the float4 body, HISTOGRAM_F4_PER_THREAD at a time.
        // Loads u of one round are `stride` apart, so each warp instruction
        // still reads 512 contiguous bytes.
        for (unsigned long long base = tid; base < n4; base += stride * HISTOGRAM_F4_PER_THREAD) {
            float4 v[HISTOGRAM_F4_PER_THREAD];
#pragma unroll
            for (int u = 0; u < HISTOGRAM_F4_PER_THREAD; ++u) {
                const unsigned long long i = base + u * stride;
                v[u] = (i < n4) ? x4[i] : make_float4(nan, nan, nan, nan);
            }
#pragma unroll
            for (int u = 0; u < HISTOGRAM_F4_PER_THREAD; ++u) {
                count_local(local, v[u].x, bins, lo, range);
                count_local(local, v[u].y, bins, lo, range);
                count_local(local, v[u].z, bins, lo, range);
                count_local(local, v[u].w, bins, lo, range);
            }
        }
        // Head and tail: at most 3 values each.
        if (tid < head) {
            count_local(local, x[tid], bins, lo, range);
        }
        for (unsigned long long i = head + (n4 << 2) + tid; i < n; i += stride) {
            count_local(local, x[i], bins, lo, range);
        }
        __syncthreads();

        for (int j = threadIdx.x; j < range; j += blockDim.x) {
            const unsigned int c = local[j];
            if (c != 0u) {
                atomicAdd(&counts[lo + j], c);
            }
        }
        __syncthreads(); // flush reads finished before the next range zeroes
    }
}
