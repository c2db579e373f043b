// stencil: 3x3 box blur with clamp-to-edge borders.
//     dst[r][c] = (sum over dr, dc in {-1, 0, 1} of
//                  src[clamp(r + dr, 0, h - 1)][clamp(c + dc, 0, w - 1)]) / 9
// src and dst are height x width, row-major. A launch computes the output rows
// [row_begin, row_end) (the whole image, or one chunk of a pipelined run whose
// input rows row_begin - 1 .. row_end are on the device); borders clamp to the
// whole image. Every output needs 9 inputs,
// but each input is shared by 9 outputs: the lesson is to read each input
// from DRAM once and serve the reuse from on-chip memory.

#ifndef STENCIL_BLOCK_X
#error "STENCIL_BLOCK_X is defined by the host: cuda/src/launch.rs"
#endif
#ifndef STENCIL_BLOCK_Y
#error "STENCIL_BLOCK_Y is defined by the host: cuda/src/launch.rs"
#endif
// The output tile, 32 x 32, comes from the host.
#ifndef STENCIL_TILE
#error "STENCIL_TILE is defined by the host: cuda/src/launch.rs"
#endif
#define STENCIL_HALO_TILE (STENCIL_TILE + 2) // plus a 1-pixel border

// Rung 1: one thread per output pixel, 9 loads each.
//
// Launch: block = (32, 8), grid = (ceil(width / 32), ceil((row_end - row_begin) / 8)).
// The loads of a warp are coalesced (32 neighbouring columns), and the L1/L2
// caches absorb most of the 9x re-reading, but every pixel still costs
// 9 load instructions plus the clamping arithmetic.
extern "C" __global__ void __launch_bounds__(STENCIL_BLOCK_X * STENCIL_BLOCK_Y)
stencil_naive(const float* src, float* dst, int height, int width, int row_begin, int row_end)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = row_begin + blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= row_end || c >= width) {
        return;
    }
    float s = 0.0f;
#pragma unroll
    for (int dr = -1; dr <= 1; ++dr) {
        const int rr = min(max(r + dr, 0), height - 1);
        const float* row = src + (size_t)rr * width;
#pragma unroll
        for (int dc = -1; dc <= 1; ++dc) {
            const int cc = min(max(c + dc, 0), width - 1);
            s += row[cc];
        }
    }
    dst[(size_t)r * width + c] = s / 9.0f;
}

// Rung 2: shared-memory tile with halo, vector loads and register reuse.
//
// Launch: block = (32, 8), grid = (ceil(width / 32), ceil((row_end - row_begin) / 32)).
// Each block produces a 32 x 32 output tile; thread (tx, ty) computes the 4
// consecutive rows 4*ty .. 4*ty+3 of column tx.
//
// 1. The block copies the 34 x 34 input region its outputs need (the tile
//    plus a 1-pixel halo) into shared memory. Coordinates outside the image
//    are clamped while loading, which implements clamp-to-edge for free: the
//    compute step needs no bounds logic.
//    When the tile's 32 interior columns are inside the image and rows are
//    16-byte aligned (width % 4 == 0), the interior is read as float4 (a warp
//    reads four full 128-byte rows per instruction) and only the two halo
//    columns are scalar. Edge tiles and odd widths use scalar loads.
//    In shared memory, image column c0 sits at tile column STENCIL_OFF = 4
//    and rows are STENCIL_LD = 40 floats long, so every float4 store is
//    16-byte aligned.
// 2. __syncthreads, so the whole tile is present before anyone reads it.
// 3. Register reuse: the 4 outputs of a thread share input rows, so it first
//    forms the 6 horizontal sums h[k] = t[k][c-1] + t[k][c] + t[k][c+1] of
//    rows 4*ty-1 .. 4*ty+4, then each output is h[k] + h[k+1] + h[k+2]:
//    18 shared-memory reads for 4 outputs instead of 36. A warp's reads are
//    32 consecutive floats of one tile row: no bank conflicts.
// DRAM traffic is ~(34 x 34) / (32 x 32) = 1.13 reads per input pixel (the
// halo mostly hits L2) plus one write per output: the kernel runs at memory
// bandwidth, with each input read from DRAM once instead of 9 times.
#define STENCIL_LD 40
#define STENCIL_OFF 4
#define STENCIL_ROWS_PER_THREAD (STENCIL_TILE / STENCIL_BLOCK_Y) // 4

extern "C" __global__ void __launch_bounds__(STENCIL_BLOCK_X * STENCIL_BLOCK_Y)
stencil_tiled(const float* src, float* dst, int height, int width, int row_begin, int row_end)
{
    // tile[i][STENCIL_OFF + j] = src[clamp(r0 - 1 + i)][clamp(c0 + j)], j = -1 .. 32
    __shared__ __align__(16) float tile[STENCIL_HALO_TILE][STENCIL_LD];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * STENCIL_BLOCK_X + tx;
    const int r0 = row_begin + blockIdx.y * STENCIL_TILE; // first output row of the tile
    // The last input row any output of [row_begin, row_end) reads: rows past it may not be on the device yet (a
    // pipelined run uploads them later), and no output this launch writes needs them.
    const int last_row = min(row_end, height - 1);
    const int c0 = blockIdx.x * STENCIL_TILE; // first output column

    const bool vec = ((width & 3) == 0) && ((((unsigned long long)src) & 15ull) == 0) &&
                     (c0 + STENCIL_TILE <= width);
    if (vec) {
        // Interior: 34 rows x 8 float4 = 272 vector loads over 256 threads.
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int idx = tid + k * (STENCIL_BLOCK_X * STENCIL_BLOCK_Y);
            if (idx < STENCIL_HALO_TILE * (STENCIL_TILE / 4)) {
                const int i = idx >> 3;
                const int f = idx & 7;
                const int rr = min(max(r0 - 1 + i, 0), last_row);
                const float4 v =
                    *reinterpret_cast<const float4*>(src + (size_t)rr * width + c0 + 4 * f);
                *reinterpret_cast<float4*>(&tile[i][STENCIL_OFF + 4 * f]) = v;
            }
        }
        // Halo columns c0 - 1 and c0 + 32: 34 rows x 2 scalar loads.
        if (tid < 2 * STENCIL_HALO_TILE) {
            const int i = tid >> 1;
            const int right = tid & 1;
            const int rr = min(max(r0 - 1 + i, 0), last_row);
            const int cc = right ? min(c0 + STENCIL_TILE, width - 1) : max(c0 - 1, 0);
            tile[i][right ? STENCIL_OFF + STENCIL_TILE : STENCIL_OFF - 1] =
                src[(size_t)rr * width + cc];
        }
    } else {
        // Scalar path: one warp per tile row, columns c0-1 .. c0+30, then
        // the last two (c0+31, c0+32) by two lanes.
        const int cl = min(max(c0 - 1 + tx, 0), width - 1);
        const int cr = min(max(c0 - 1 + STENCIL_BLOCK_X + tx, 0), width - 1);
#pragma unroll
        for (int k = 0; k < (STENCIL_HALO_TILE + STENCIL_BLOCK_Y - 1) / STENCIL_BLOCK_Y; ++k) {
            const int i = ty + k * STENCIL_BLOCK_Y;
            if (i < STENCIL_HALO_TILE) {
                const int rr = min(max(r0 - 1 + i, 0), last_row);
                const float* row = src + (size_t)rr * width;
                tile[i][STENCIL_OFF - 1 + tx] = row[cl];
                if (tx < STENCIL_HALO_TILE - STENCIL_BLOCK_X) {
                    tile[i][STENCIL_OFF - 1 + STENCIL_BLOCK_X + tx] = row[cr];
                }
            }
        }
    }
    __syncthreads();

    const int c = c0 + tx;
    if (c >= width) {
        return; // no barrier follows, so an early exit is safe
    }
    const int i0 = ty * STENCIL_ROWS_PER_THREAD; // first of this thread's tile rows
    float h[STENCIL_ROWS_PER_THREAD + 2];
#pragma unroll
    for (int k = 0; k < STENCIL_ROWS_PER_THREAD + 2; ++k) {
        const float* t = &tile[i0 + k][STENCIL_OFF - 1 + tx];
        h[k] = (t[0] + t[1]) + t[2];
    }
#pragma unroll
    for (int k = 0; k < STENCIL_ROWS_PER_THREAD; ++k) {
        const int r = r0 + i0 + k;
        if (r < row_end) {
            dst[(size_t)r * width + c] = ((h[k] + h[k + 1]) + h[k + 2]) / 9.0f;
        }
    }
}
