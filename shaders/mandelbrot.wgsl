// mandelbrot: for each pixel, the number of iterations of z = z^2 + c (from z = 0) before |z|^2 > 4, at most
// max_iter.
//
// Compute bound with no input data: each thread works on registers only and writes one u32. The lesson is
// divergence: pixels inside the set run all max_iter iterations while their neighbours may escape after a few,
// and the threads of a warp that finish early sit idle until the slowest lane of the warp is done. 16x16
// workgroups keep the lanes of a warp on a compact patch of the image, where iteration counts are similar.

// The host may split a tall image into bands of rows (one output buffer each, within the device's binding limit):
// this dispatch computes image rows [row_start, row_end) into a buffer that starts at row row_start.
struct Params {
    width: u32,
    row_end: u32,     // one past the last image row of this band
    max_iter: u32,
    row_start: u32,   // the first image row of this band
    x_min: f32,   // real part of the left edge
    y_min: f32,   // imaginary part of row 0's edge
    dx: f32,      // pixel width in the complex plane
    dy: f32,      // pixel height
    one: f32,     // 1.0, unknown to the compiler: see "Exact arithmetic" below
    first_row: u32, // the image row that row 0 is: 0, or a band's first row when a device group draws a taller image
    _pad1: u32,
    _pad2: u32,
}

// Exact arithmetic. The reference rounds every product before adding it; a GPU compiler may instead fuse a multiply
// and an add into one FMA, rounding once. Near the boundary of the set (and all along the real axis left of -1.4,
// where the dynamics are chaotic) that changes whole trajectories. WGSL has no way to forbid the fusion, so every
// product that feeds an addition is multiplied by `one`, a 1.0 the compiler cannot see: if it then fuses
// `(a * b) * one + c` into `fma(a * b, one, c)`, the product `a * b` has already been rounded, and the FMA rounds
// `a * b + c` exactly as the separate add would. The counts then match the CPU bit for bit.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> counts: array<u32>;

@compute @workgroup_size(16, 16)
fn mandelbrot_naive(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;                    // column
    let j = params.row_start + gid.y; // image row
    if (i >= params.width || j >= params.row_end) {
        return;
    }
    // Sample the centre of the pixel.
    let one = params.one;
    let cx = params.x_min + (f32(i) + 0.5) * params.dx * one;
    let cy = params.y_min + (f32(params.first_row + j) + 0.5) * params.dy * one;

    var x = 0.0;
    var y = 0.0;
    var count = 0u;
    loop {
        if (count >= params.max_iter) {
            break;
        }
        // Squares are computed once and shared by the escape test and the update.
        let x2 = x * x * one;
        let y2 = y * y * one;
        if (x2 + y2 > 4.0) {
            break;
        }
        y = 2.0 * x * y * one + cy;
        x = x2 - y2 + cx;
        count += 1u;
    }
    counts[gid.y * params.width + i] = count;
}
