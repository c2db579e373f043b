// mandelbrot: escape-iteration count of every pixel.
//
// Compute-bound with almost no memory traffic (one 4-byte store per pixel).
// Its lesson is branch divergence: the 32 threads of a warp run in lockstep,
// so a warp keeps iterating until its slowest pixel escapes (or reaches
// max_iter). 16x16 blocks make each warp a 16x2 patch of neighbouring pixels,
// which tend to have similar counts, so little work is wasted.
//
// Exactness: every operation uses the explicit round-to-nearest intrinsics
// __fmul_rn / __fadd_rn / __fsub_rn. The compiler never contracts these into
// fused multiply-adds, so each step is rounded exactly as on a CPU that does
// not fuse, and the counts match such a CPU bit for bit. (Plain a*b+c would
// be contracted into an FMA, which rounds once instead of twice; over many
// iterations of a chaotic map the tiny difference changes escape counts.)

#ifndef MANDELBROT_BLOCK_X
#error "MANDELBROT_BLOCK_X is defined by the host: cuda/src/launch.rs"
#endif
#ifndef MANDELBROT_BLOCK_Y
#error "MANDELBROT_BLOCK_Y is defined by the host: cuda/src/launch.rs"
#endif

// Launch: block = (16, 16), grid = (ceil(width / 16), ceil((row_end - row_begin) / 16)).
// Thread (i, j) = (column, row_begin + row); pixels outside the rows
// [row_begin, row_end) do nothing. counts is the whole image (width x height
// values): a pipelined run computes it in chunks of rows. first_row is the image
// row that row 0 of counts is: 0 for a whole image, a band's first row when a
// device group's member draws part of a taller image (dy is that image's).
extern "C" __global__ void __launch_bounds__(MANDELBROT_BLOCK_X * MANDELBROT_BLOCK_Y)
mandelbrot_naive(unsigned int* counts, int width, int row_begin, int row_end, unsigned int max_iter,
                 float x_min, float y_min, float dx, float dy, int first_row)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;             // column
    const int j = row_begin + blockIdx.y * blockDim.y + threadIdx.y; // row
    if (i >= width || j >= row_end) {
        return;
    }

    // Pixel centre: x_min + (i + 0.5) * dx, each operation rounded separately.
    const float cx = __fadd_rn(x_min, __fmul_rn(__fadd_rn((float)i, 0.5f), dx));
    const float cy = __fadd_rn(y_min, __fmul_rn(__fadd_rn((float)(first_row + j), 0.5f), dy));

    float x = 0.0f, y = 0.0f;
    unsigned int count = 0;
    while (count < max_iter) {
        const float x2 = __fmul_rn(x, x);
        const float y2 = __fmul_rn(y, y);
        if (__fadd_rn(x2, y2) > 4.0f) {
            break;
        }
        y = __fadd_rn(__fmul_rn(__fmul_rn(2.0f, x), y), cy); // 2*x*y + cy
        x = __fadd_rn(__fsub_rn(x2, y2), cx);                // x^2 - y^2 + cx
        ++count;
    }
    counts[(size_t)j * (size_t)width + (size_t)i] = count;
}
