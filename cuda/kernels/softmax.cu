// softmax over each row of a rows x cols row-major matrix:
//     y = exp(x - max_row) / sum_row exp(x - max_row)
//
// Subtracting the row maximum keeps every exponent <= 0, so exp never
// overflows. Special values follow one rule in every kernel here:
//   - a row containing NaN or +inf, or whose maximum is -inf (every entry
//     -inf), becomes NaN in every element;
//   - a single -inf entry in an otherwise finite row gives exactly 0
//     (exp(-inf) = 0).
// NaN and +inf are detected with isnan/isinf: comparisons alone would miss
// NaN (every comparison with NaN is false).
//
// Launch for every kernel in this file but the split ones: one block of
// SOFTMAX_BLOCK (256) threads per row, grid = rows (the split kernels: grid =
// (rows, chunks), one block per chunk of a row). Threads stride over the columns
// (thread t handles columns t, t + 256, ...), so each warp reads contiguous
// memory. Row offsets are computed in 64 bits: rows * cols can exceed 2^31.
//
// Accuracy: a thread may handle up to 2^24 / 256 = 65536 columns, so its
// running sum uses Kahan compensation (see kahan_add); across threads the
// partial sums are combined by a tree of shuffles.

#ifndef SOFTMAX_BLOCK
#error "SOFTMAX_BLOCK is defined by the host: cuda/src/launch.rs"
#endif
#define SOFTMAX_WARPS (SOFTMAX_BLOCK / 32)

// Run-time compilation provides no <math.h> macros; build the special values
// from their bit patterns.
#define NEG_INF __int_as_float(0xff800000)
#define QNAN __int_as_float(0x7fc00000)

// Kahan (compensated) summation step; the _rn intrinsics stop the compiler
// from reassociating the additions (which would cancel the compensation).
__device__ __forceinline__ void kahan_add(float& sum, float& c, float v)
{
    const float yv = __fsub_rn(v, c);
    const float t = __fadd_rn(sum, yv);
    c = __fsub_rn(__fsub_rn(t, sum), yv);
    sum = t;
}

// True for NaN and +inf: the values that make a whole row NaN.
__device__ __forceinline__ bool poisons_row(float v)
{
    return isnan(v) || (isinf(v) && v > 0.0f);
}

// Block-wide maximum: shuffles inside each warp, one shared slot per warp,
// then every thread reads the 8 warp results (so all threads get the answer).
// fmaxf ignores NaN, so NaN must be tracked separately by the caller.
__device__ __forceinline__ float block_max(float v, float* scratch)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    __syncthreads(); // scratch may still be read from an earlier use
    if ((threadIdx.x & 31u) == 0) {
        scratch[threadIdx.x >> 5] = v;
    }
    __syncthreads();
    float m = scratch[0];
#pragma unroll
    for (int w = 1; w < SOFTMAX_WARPS; ++w) {
        m = fmaxf(m, scratch[w]);
    }
    return m;
}

// Block-wide sum, same structure as block_max.
__device__ __forceinline__ float block_sum(float v, float* scratch)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    __syncthreads();
    if ((threadIdx.x & 31u) == 0) {
        scratch[threadIdx.x >> 5] = v;
    }
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < SOFTMAX_WARPS; ++w) {
        s += scratch[w];
    }
    return s;
}

// ---------------------------------------------------------------------------
// Rung 1: unfused, three kernels launched one after another.
// Each pass re-reads the matrix from device memory (x twice, y twice, plus the
// y writes): about 5 x 4 bytes of traffic per element instead of the minimum
// 8, plus two extra launches. The point of the next rung is to remove that.
// ---------------------------------------------------------------------------

// Pass 1: row_max[r] = max of row r, or NaN if the row holds NaN or +inf.
extern "C" __global__ void __launch_bounds__(SOFTMAX_BLOCK)
softmax_unfused_max(const float* x, float* row_max, int rows, int cols)
{
    __shared__ float scratch[SOFTMAX_WARPS];
    const int r = blockIdx.x;
    const float* xr = x + (size_t)r * (size_t)cols;

    float m = NEG_INF;
    int bad = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = xr[c];
        bad |= poisons_row(v);
        m = fmaxf(m, v);
    }
    // __syncthreads_or: a barrier that also ORs a flag over the whole block.
    bad = __syncthreads_or(bad);
    m = block_max(m, scratch);
    if (threadIdx.x == 0) {
        row_max[r] = bad ? QNAN : m;
    }
}

// Pass 2: y = exp(x - max) and row_sum[r] = sum of those. A row whose max is
// NaN (poisoned) or -inf (all entries -inf) is written as NaN, sum included.
extern "C" __global__ void __launch_bounds__(SOFTMAX_BLOCK)
softmax_unfused_exp(const float* x, const float* row_max, float* y, float* row_sum,
                    int rows, int cols)
{
    __shared__ float scratch[SOFTMAX_WARPS];
    const int r = blockIdx.x;
    const size_t base = (size_t)r * (size_t)cols;
    const float m = row_max[r];

    if (isnan(m) || isinf(m)) { // uniform across the block: no thread diverges
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            y[base + c] = QNAN;
        }
        if (threadIdx.x == 0) {
            row_sum[r] = QNAN;
        }
        return;
    }

    float s = 0.0f, comp = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float e = expf(x[base + c] - m);
        y[base + c] = e;
        kahan_add(s, comp, e);
    }
    s = block_sum(s - comp, scratch);
    if (threadIdx.x == 0) {
        row_sum[r] = s;
    }
}

// Pass 3: y /= row_sum[r] (NaN rows stay NaN: NaN / anything is NaN).
extern "C" __global__ void __launch_bounds__(SOFTMAX_BLOCK)
softmax_unfused_normalize(float* y, const float* row_sum, int rows, int cols)
{
    const int r = blockIdx.x;
    const size_t base = (size_t)r * (size_t)cols;
    const float s = row_sum[r];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        y[base + c] = y[base + c] / s;
    }
}

// ---------------------------------------------------------------------------
// Rung 2: fused online softmax, one kernel.
//
// Online softmax keeps, per thread, a running maximum m and a running sum
// s = sum exp(x_i - m) over the values seen so far. When a larger value
// arrives the old sum is rescaled to the new maximum: s *= exp(m_old - m_new).
// So max and sum come out of a single read of x, and a second sweep writes
// y = exp(x - m) * (1 / s). Traffic: x read twice (the second read mostly
// hits L2, since the row was just read) and y written once, with no
// intermediate arrays and one launch, against three launches and two extra
// passes over y in the unfused rung.
//
// Other techniques used:
// - float4 loads/stores when every row starts on a 16-byte boundary
//   (cols % 4 == 0 and x, y aligned), scalar otherwise.
// - __expf: the hardware exp2 approximation (a couple of ulps, denormal
//   results flushed to 0); plenty for softmax and much cheaper than expf.
// - (m, s) pairs are combined across lanes with shuffles and across warps in
//   shared memory: (m1,s1) + (m2,s2) = (M, s1*exp(m1-M) + s2*exp(m2-M)) with
//   M = max(m1, m2). A thread that saw no element holds (-inf, 0); when both
//   maxima are -inf the pair stays (-inf, 0) instead of computing
//   exp(-inf - -inf) = NaN.
// - Streaming cache hints on the second sweep (write_normalized).
// ---------------------------------------------------------------------------

// Folds one new value into a thread's running (m, s, comp) state.
__device__ __forceinline__ void online_add(float v, float& m, float& s, float& comp)
{
    if (v > m) { // also false for NaN, which is tracked by the caller
        // Rescale the sum (and its compensation) to the new maximum.
        // If m was -inf, s and comp are 0 and __expf(-inf) = 0 keeps them 0.
        const float scale = __expf(m - v);
        s *= scale;
        comp *= scale;
        m = v;
    }
    if (m != NEG_INF) { // skip while only -inf has been seen: exp(-inf - -inf) is NaN
        kahan_add(s, comp, __expf(v - m));
    }
}

// Same for four values at once: one rescale per float4.
__device__ __forceinline__ void online_add4(float4 v, float& m, float& s, float& comp)
{
    const float vmax = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (vmax > m) {
        const float scale = __expf(m - vmax);
        s *= scale;
        comp *= scale;
        m = vmax;
    }
    if (m != NEG_INF) {
        const float e = (__expf(v.x - m) + __expf(v.y - m)) + (__expf(v.z - m) + __expf(v.w - m));
        kahan_add(s, comp, e);
    }
}

// Merges (m2, s2) into (m, s).
__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    if (mm == NEG_INF) {
        m = mm;
        s = 0.0f;
    } else {
        s = s * __expf(m - mm) + s2 * __expf(m2 - mm);
        m = mm;
    }
}

// The first sweep of the fused and split kernels over `count` values at xr (float4 loads when `vec`): the block's
// online (max, sum) in (m_out, s_out), the same in every thread, and whether any value poisons the row (NaN or
// +inf). Ends with a barrier; sh_m and sh_s are SOFTMAX_WARPS floats of shared memory.
__device__ __forceinline__ int block_online_stats(const float* xr, int count, bool vec, float& m_out, float& s_out,
                                                  float* sh_m, float* sh_s)
{
    float m = NEG_INF, s = 0.0f, comp = 0.0f;
    int bad = 0;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const int n4 = count >> 2;
        for (int c = threadIdx.x; c < n4; c += blockDim.x) {
            const float4 v = x4[c];
            bad |= poisons_row(v.x) | poisons_row(v.y) | poisons_row(v.z) | poisons_row(v.w);
            online_add4(v, m, s, comp);
        }
    } else {
        for (int c = threadIdx.x; c < count; c += blockDim.x) {
            const float v = xr[c];
            bad |= poisons_row(v);
            online_add(v, m, s, comp);
        }
    }
    s -= comp;

    // Combine (m, s) across the warp with shuffles.
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
        combine(m, s, m2, s2);
    }
    if ((threadIdx.x & 31u) == 0) {
        sh_m[threadIdx.x >> 5] = m;
        sh_s[threadIdx.x >> 5] = s;
    }
    // Barrier + block-wide OR of the poison flag in one instruction.
    bad = __syncthreads_or(bad);

    // Every thread combines the per-warp results itself (8 pairs), which
    // avoids another barrier to broadcast a single answer.
    m = sh_m[0];
    s = sh_s[0];
#pragma unroll
    for (int w = 1; w < SOFTMAX_WARPS; ++w) {
        combine(m, s, sh_m[w], sh_s[w]);
    }
    m_out = m;
    s_out = s;
    return bad;
}

// The second sweep: y = exp(x - m) * inv over `count` values, or NaN throughout for a poisoned row. Streaming cache
// hints: __ldcs marks x's lines as "last use" and __stcs writes y without keeping it in L2, so the output does not
// evict rows other blocks are about to re-read.
__device__ __forceinline__ void write_normalized(const float* xr, float* yr, int count, bool vec, bool poisoned,
                                                 float m, float inv)
{
    if (poisoned) {
        for (int c = threadIdx.x; c < count; c += blockDim.x) {
            yr[c] = QNAN;
        }
        return;
    }
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        const int n4 = count >> 2;
        for (int c = threadIdx.x; c < n4; c += blockDim.x) {
            const float4 v = __ldcs(x4 + c);
            float4 o;
            o.x = __expf(v.x - m) * inv;
            o.y = __expf(v.y - m) * inv;
            o.z = __expf(v.z - m) * inv;
            o.w = __expf(v.w - m) * inv;
            __stcs(y4 + c, o);
        }
    } else {
        for (int c = threadIdx.x; c < count; c += blockDim.x) {
            __stcs(yr + c, __expf(__ldcs(xr + c) - m) * inv);
        }
    }
}

extern "C" __global__ void __launch_bounds__(SOFTMAX_BLOCK)
softmax_fused(const float* x, float* y, int rows, int cols)
{
    __shared__ float sh_m[SOFTMAX_WARPS];
    __shared__ float sh_s[SOFTMAX_WARPS];

    const size_t base = (size_t)blockIdx.x * (size_t)cols;
    // Vector path only if every row start is 16-byte aligned.
    const bool vec = ((cols & 3) == 0) &&
                     ((((unsigned long long)x | (unsigned long long)y) & 15ull) == 0);
    float m, s;
    const int bad = block_online_stats(x + base, cols, vec, m, s, sh_m, sh_s);
    write_normalized(x + base, y + base, cols, vec, bad || m == NEG_INF, m, 1.0f / s);
}

// ---------------------------------------------------------------------------
// Rung 3: split rows, two kernels.
//
// One block per row leaves most of a GPU idle when the rows are few and long
// (256 rows of 65536 columns are 256 blocks for 132 multiprocessors): each
// multiprocessor then has too few loads in flight to keep memory busy. Here
// each row is cut into chunks of chunk_cols columns (a multiple of 2048, from
// gpuworthy_core's split_columns) and the grid is (rows, chunks):
//   softmax_split_stats      block (r, k) computes the online (max, sum) of
//                            its chunk and writes it to part_m, part_s at
//                            r * chunks + k (max NaN for a poisoned chunk);
//   softmax_split_normalize  block (r, k) combines the row's chunks pairs
//                            (every thread, a few pairs) and writes y for its
//                            chunk.
// Traffic is the fused kernel's (x read twice, y written once) plus two floats
// per chunk; the cost is a second launch.
// ---------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(SOFTMAX_BLOCK)
softmax_split_stats(const float* x, float* part_m, float* part_s, int rows, int cols, int chunk_cols)
{
    __shared__ float sh_m[SOFTMAX_WARPS];
    __shared__ float sh_s[SOFTMAX_WARPS];

    const int start = blockIdx.y * chunk_cols;
    const int count = min(chunk_cols, cols - start);
    const bool vec = ((cols & 3) == 0) && ((chunk_cols & 3) == 0) && ((((unsigned long long)x) & 15ull) == 0);
    float m, s;
    const int bad = block_online_stats(x + (size_t)blockIdx.x * (size_t)cols + start, count, vec, m, s, sh_m, sh_s);
    if (threadIdx.x == 0) {
        const size_t at = (size_t)blockIdx.x * gridDim.y + blockIdx.y;
        part_m[at] = bad ? QNAN : m;
        part_s[at] = s;
    }
}

extern "C" __global__ void __launch_bounds__(SOFTMAX_BLOCK)
softmax_split_normalize(const float* x, float* y, const float* part_m, const float* part_s, int rows, int cols,
                        int chunk_cols)
{
    const size_t first = (size_t)blockIdx.x * gridDim.y;
    float m = NEG_INF, s = 0.0f;
    int bad = 0;
    for (unsigned k = 0; k < gridDim.y; ++k) {
        const float pm = part_m[first + k];
        bad |= isnan(pm);
        if (!isnan(pm)) {
            combine(m, s, pm, part_s[first + k]);
        }
    }
    const int start = blockIdx.y * chunk_cols;
    const int count = min(chunk_cols, cols - start);
    const bool vec = ((cols & 3) == 0) && ((chunk_cols & 3) == 0) &&
                     ((((unsigned long long)x | (unsigned long long)y) & 15ull) == 0);
    const size_t base = (size_t)blockIdx.x * (size_t)cols + start;
    write_normalized(x + base, y + base, count, vec, bad || m == NEG_INF, m, 1.0f / s);
}
