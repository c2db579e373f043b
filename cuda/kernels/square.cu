// square: y[i] = x[i] * x[i].
//
// The simplest memory-bound kernel: 4 bytes read and 4 bytes written per
// element, one multiply. Its speed is set entirely by how well the loads and
// stores use DRAM bandwidth, which is what the two rungs below explore.

// The launch's block size is the backend's (256 by default; the block-size
// lesson launches 32 to 1024), so the bound is the hardware's 1024: with 16
// registers per thread it leaves the compiled code as it is at 256.
#define SQUARE_MAX_BLOCK 1024

// Rung 1: one thread per element.
//
// Launch: block = 256 threads (by default), grid = ceil(n / 256) blocks
// (at most 2^31 - 1, which covers n up to 2^32 and far beyond).
// Consecutive threads touch consecutive floats, so each warp's 32 loads
// coalesce into 128 contiguous bytes. The index is computed in 64 bits:
// blockIdx.x * blockDim.x overflows 32 bits once n passes 2^32.
extern "C" __global__ void __launch_bounds__(SQUARE_MAX_BLOCK)
square_naive(const float* x, float* y, unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v * v;
    }
}

// Rung 2: 16-byte vector accesses in a grid-stride loop.
//
// Launch: block = 256 threads (by default), any number of blocks >= 1.
// Requires x and y to be 16-byte aligned (true of any allocation's base).
//
// - float4 loads and stores move 16 bytes per instruction instead of 4, so a
//   warp issues a quarter as many memory instructions for the same bytes and
//   keeps more bytes in flight per thread.
// - The grid-stride loop (i += total threads) decouples the grid from n: the
//   host can launch just enough blocks to fill the GPU, each thread handles
//   several float4s, and every grid size stays correct.
// - The n % 4 leftover floats (the "tail") cannot be a float4; the first
//   threads of the grid handle them with scalar accesses.
extern "C" __global__ void __launch_bounds__(SQUARE_MAX_BLOCK)
square_vec4(const float* x, float* y, unsigned long long n)
{
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long n4 = n >> 2;

    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (unsigned long long i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        v.x *= v.x;
        v.y *= v.y;
        v.z *= v.z;
        v.w *= v.w;
        y4[i] = v;
    }

    // Tail: at most 3 elements. Written as a strided loop so it is correct
    // even for a grid of a single thread.
    for (unsigned long long i = (n4 << 2) + tid; i < n; i += stride) {
        float v = x[i];
        y[i] = v * v;
    }
}
