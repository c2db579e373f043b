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
}

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
    let cx = params.x_min + (f32(i) + 0.5) * params.dx;
    let cy = params.y_min + (f32(j) + 0.5) * params.dy;

    var x = 0.0;
    var y = 0.0;
    var count = 0u;
    loop {
        if (count >= params.max_iter) {
            break;
        }
        // Squares are computed once and shared by the escape test and the update.
        let x2 = x * x;
        let y2 = y * y;
        if (x2 + y2 > 4.0) {
            break;
        }
        y = 2.0 * x * y + cy;
        x = x2 - y2 + cx;
        count += 1u;
    }
    counts[gid.y * params.width + i] = count;
}
