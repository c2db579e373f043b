// saxpy: y[i] = a * x[i] + y[i], computed as one fused multiply-add (fmaf),
// i.e. a single rounding, exactly like a CPU fma.
//
// Memory-bound: 8 bytes read and 4 bytes written per element for 2 flops.
// The rungs are the same as for square: one thread per element, then
// 16-byte vector accesses in a grid-stride loop.

// The launch's block size is the backend's (256 by default; the block-size
// lesson launches 32 to 1024), so the bound is the hardware's 1024: with 16
// registers per thread it leaves the compiled code as it is at 256.
#define SAXPY_MAX_BLOCK 1024

// Rung 1: one thread per element.
//
// Launch: block = 256 threads (by default), grid = ceil(n / 256) blocks
// (at most 2^31 - 1). Coalesced: neighbouring threads touch neighbouring
// floats. 64-bit index because n can exceed 2^32.
extern "C" __global__ void __launch_bounds__(SAXPY_MAX_BLOCK)
saxpy_naive(float a, const float* x, float* y, unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = fmaf(a, x[i], y[i]);
    }
}

// Rung 2: float4 loads/stores in a grid-stride loop.
//
// Launch: block = 256 threads (by default), any number of blocks >= 1.
// Requires x and y to be 16-byte aligned (true of any allocation's base).
// Each iteration moves 2 x 16 bytes in and 16 bytes out with three vector
// instructions; the grid-stride loop makes any grid size correct, so the host
// can size the grid to the GPU rather than to n. The n % 4 tail elements are
// done with scalar accesses by the first threads.
extern "C" __global__ void __launch_bounds__(SAXPY_MAX_BLOCK)
saxpy_vec4(float a, const float* x, float* y, unsigned long long n)
{
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long n4 = n >> 2;

    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (unsigned long long i = tid; i < n4; i += stride) {
        const float4 xv = x4[i];
        float4 yv = y4[i];
        yv.x = fmaf(a, xv.x, yv.x);
        yv.y = fmaf(a, xv.y, yv.y);
        yv.z = fmaf(a, xv.z, yv.z);
        yv.w = fmaf(a, xv.w, yv.w);
        y4[i] = yv;
    }

    // Tail: the last n % 4 elements, scalar.
    for (unsigned long long i = (n4 << 2) + tid; i < n; i += stride) {
        y[i] = fmaf(a, x[i], y[i]);
    }
}
