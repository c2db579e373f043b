// s = sum(x*x) on f32 arrays as the CUDA backend generated it before its reductions took four loads a trip and warp
// shuffles (cargo run -p gpuworthy-cuda --example expr_source -- 's = sum(x*x)' - at commit 846bf2a): the kernel
// bench-suite/peers/reduction_lab.py starts from.
static __device__ __forceinline__ float gw_sign(float x) {
    return (isnan(x) || x == 0.0f) ? x : (x > 0.0f ? 1.0f : -1.0f);
}
// A negative base (-inf too) to a finite fractional power is NaN, where C's powf gives +inf for -inf.
static __device__ __forceinline__ float gw_pow(float x, float y) {
    return (x < 0.0f && isfinite(y) && y != truncf(y)) ? __uint_as_float(0x7fc00000u) : powf(x, y);
}
static __device__ __forceinline__ float gw_term(float i0) {
    const float v0 = i0;
    const float v1 = i0;
    const float v2 = v0 * v1;
    return v2;
}
extern "C" __global__ void __launch_bounds__(256) expr_reduce(const float* __restrict__ p_in0, float* __restrict__ partials, long long n) {
    __shared__ float shared_values[256];
    __shared__ bool last_block;
    float acc = __uint_as_float(0x00000000u);
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 4
    for (long long q = first; q < n / 4; q += stride) {
        const float4 x0 = reinterpret_cast<const float4*>(p_in0)[q];
        const float t0 = gw_term(x0.x);
        const float t1 = gw_term(x0.y);
        const float t2 = gw_term(x0.z);
        const float t3 = gw_term(x0.w);
        acc = acc + ((t0 + t1) + (t2 + t3));
    }
    for (long long i = n / 4 * 4 + first; i < n; i += stride) {
        acc = acc + gw_term(p_in0[i]);
    }
    shared_values[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) { shared_values[threadIdx.x] = shared_values[threadIdx.x] + shared_values[threadIdx.x + stride]; }
        __syncthreads();
    }
    unsigned int* counter = reinterpret_cast<unsigned int*>(partials + 1025);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = shared_values[0];
        __threadfence();
        last_block = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    acc = __uint_as_float(0x00000000u);
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) acc = acc + __ldcg(&partials[i]);
    shared_values[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) { shared_values[threadIdx.x] = shared_values[threadIdx.x] + shared_values[threadIdx.x + stride]; }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const float reduced = shared_values[0];
        const float v3 = reduced;
        partials[gridDim.x] = v3;
        *counter = 0u;
    }
}
