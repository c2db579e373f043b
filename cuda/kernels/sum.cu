// sum: out[0] += sum of x[0..n), accumulated into one double.
//
// The host zeroes *out before the launch. Every rung ends with atomicAdd on a
// double: native on sm_60 and later, and far more accurate than a float total.
// The rungs differ in how much work happens before that global atomic.
//
// Accuracy rule: no float accumulator ever sums long sequences on its own.
// A float has a 24-bit significand; adding thousands of values one by one
// into it loses low bits on every addition. Per-thread sums use Kahan
// compensation, and combining across threads is a tree (pairwise), whose
// error grows with log2 of the count instead of linearly.

#ifndef SUM_BLOCK
#error "SUM_BLOCK is defined by the host: cuda/src/launch.rs"
#endif
#define SUM_WARPS (SUM_BLOCK / 32)

// Kahan (compensated) summation step: c carries the rounding error of the
// previous additions and is subtracted from the next term. The explicit
// round-to-nearest intrinsics make sure the compiler keeps the exact order of
// operations (algebraically c is always zero, so reassociation would erase it).
__device__ __forceinline__ void kahan_add(float& sum, float& c, float v)
{
    const float yv = __fsub_rn(v, c);
    const float t = __fadd_rn(sum, yv);
    // Once the total is infinite, (t - sum) - yv would be inf - inf = NaN and turn a legitimate +inf sum into
    // NaN: the compensation is kept only while the total is finite.
    c = isfinite(t) ? __fsub_rn(__fsub_rn(t, sum), yv) : 0.0f;
    sum = t;
}

// Rung 1: one global atomic per element.
//
// Launch: block = SUM_BLOCK (256) threads, grid = ceil(n / 256) blocks.
// Every thread performs an atomicAdd to the same address, so the memory system
// serialises them all: this is the slow baseline that shows why reductions are
// done hierarchically. Adding in double keeps the result accurate even though
// the order of additions is arbitrary.
extern "C" __global__ void __launch_bounds__(SUM_BLOCK)
sum_atomic(const float* x, double* out, unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(out, (double)x[i]);
    }
}

// Rung 2: per-thread partial sums, then a shared-memory tree per block.
//
// Launch: block = SUM_BLOCK (256 threads; the tree needs a power of two),
// any grid >= 1 (the host uses min(ceil(n / 256), 8 * SM count)).
//
// 1. Grid-stride loop: each thread sums its elements x[tid], x[tid + stride],
//    ... (coalesced across the warp) in a Kahan-compensated float.
// 2. Tree reduction in shared memory: at each step the lower half of the
//    active threads adds the upper half's values; __syncthreads between
//    steps makes each step's writes visible to the next. log2(256) = 8 steps.
// 3. One atomicAdd per block instead of one per element.
extern "C" __global__ void __launch_bounds__(SUM_BLOCK)
sum_tree(const float* x, double* out, unsigned long long n)
{
    __shared__ float partial[SUM_BLOCK];

    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    float s = 0.0f, c = 0.0f;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        kahan_add(s, c, x[i]);
    }

    const unsigned int t = threadIdx.x;
    partial[t] = s - c; // fold the compensation back in
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) {
            partial[t] += partial[t + half];
        }
        __syncthreads();
    }
    if (t == 0) {
        atomicAdd(out, (double)partial[0]);
    }
}

// Rung 3: 16-byte loads and warp shuffles.
//
// Launch: block = SUM_BLOCK (256) threads, any grid >= 1 (the host uses
// min(ceil(n / 256), 8 * SM count)). Any alignment of x is accepted.
//
// 1. Vector loads: the main loop reads float4s (16 bytes per instruction).
//    If x is not 16-byte aligned, the first few elements (up to 3) are summed
//    with scalar loads so that the float4 part starts on a 16-byte boundary;
//    the last n % 4 elements (the tail) are also scalar.
//    Each float4 is first added pairwise, then Kahan-added into the thread's sum.
// 2. Warp reduction with __shfl_down_sync: registers are exchanged directly
//    between the 32 lanes of a warp, with no shared memory and no
//    __syncthreads; after 5 steps lane 0 holds the warp's total.
// 3. One shared slot per warp (8 floats), a single barrier, and the first
//    warp reduces those 8 values with shuffles again.
// 4. One atomicAdd per block.
extern "C" __global__ void __launch_bounds__(SUM_BLOCK)
sum_warp(const float* x, double* out, unsigned long long n)
{
    __shared__ float warp_sums[SUM_WARPS];

    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

    // Number of leading scalars before the first 16-byte boundary.
    const unsigned long long misalign = ((unsigned long long)x >> 2) & 3ull; // in floats
    unsigned long long head = (4ull - misalign) & 3ull;
    if (head > n) {
        head = n;
    }
    const unsigned long long n4 = (n - head) >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x + head);

    float s = 0.0f, c = 0.0f;
#pragma unroll 4
    for (unsigned long long i = tid; i < n4; i += stride) {
        const float4 v = x4[i];
        kahan_add(s, c, (v.x + v.y) + (v.z + v.w));
    }
    // Head (before the aligned part) and tail (after it): at most 3 + 3 floats.
    if (tid < head) {
        kahan_add(s, c, x[tid]);
    }
    for (unsigned long long i = head + (n4 << 2) + tid; i < n; i += stride) {
        kahan_add(s, c, x[i]);
    }
    s -= c;

    // Reduce within each warp.
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, offset);
    }
    const unsigned int lane = threadIdx.x & 31u;
    const unsigned int warp = threadIdx.x >> 5;
    if (lane == 0) {
        warp_sums[warp] = s;
    }
    __syncthreads();

    // The first warp reduces the per-warp totals.
    if (warp == 0) {
        const unsigned int nwarps = (blockDim.x + 31u) >> 5;
        float v = (lane < nwarps) ? warp_sums[lane] : 0.0f;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            v += __shfl_down_sync(0xffffffffu, v, offset);
        }
        if (lane == 0) {
            atomicAdd(out, (double)v);
        }
    }
}
