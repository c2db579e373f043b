//! Two deliberately broken CUDA kernels, for the lesson on `compute-sanitizer`: an off-by-one bound that writes one
//! float past the end of a buffer, and a shared-memory reduction without `__syncthreads()` between its steps. Run
//! plainly, both may print a plausible answer (the write lands in the allocation's padding; the race may happen to
//! resolve the right way); under the sanitizer both are caught. `--fixed` runs the corrected kernels, which the
//! sanitizer passes; `bounds` or `race` runs only that kernel.
//!
//! ```text
//! cargo build --release -p gpuworthy-cuda --example broken_kernel
//! compute-sanitizer --tool memcheck target/release/examples/broken_kernel bounds         # the access past the end
//! compute-sanitizer --tool racecheck target/release/examples/broken_kernel race          # the missing barrier
//! compute-sanitizer --tool racecheck target/release/examples/broken_kernel race --fixed  # clean
//! ```
//!
//! The kernels are compiled with `-lineinfo`, so the sanitizer names the source line (`broken.cu:N`).

use std::process::ExitCode;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::CompileOptions;

/// The kernels; `FIXED` selects the correct versions.
const SOURCE: &str = r#"
extern "C" __global__ void scale(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef FIXED
    if (i < n) {
#else
    if (i <= n) {          // BUG: one past the end
#endif
        y[i] = 2.0f * x[i];
    }
}

extern "C" __global__ void block_sum(const float* x, float* sums)
{
    __shared__ float partial[256];
    unsigned t = threadIdx.x;
    partial[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (unsigned half = 128; half > 0; half /= 2) {
        if (t < half) {
            partial[t] += partial[t + half];
        }
#ifdef FIXED
        __syncthreads();
#endif
        // BUG (unless FIXED): no barrier, so a thread may read partial[t + half] before its owner has added to it.
    }
    if (t == 0) {
        sums[blockIdx.x] = partial[0];
    }
}
"#;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(bad) = args.iter().find(|a| !["--fixed", "bounds", "race"].contains(&a.as_str())) {
        eprintln!("broken_kernel: unknown argument `{bad}`: expected bounds, race and/or --fixed");
        return ExitCode::from(2);
    }
    let fixed = args.iter().any(|a| a == "--fixed");
    let only = |name: &str| args.iter().any(|a| a == name);
    let (bounds, race) = if only("bounds") || only("race") { (only("bounds"), only("race")) } else { (true, true) };
    match run(fixed, bounds, race) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("broken_kernel: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(fixed: bool, bounds: bool, race: bool) -> Result<(), Box<dyn std::error::Error>> {
    // SAFETY: the probe only tries to open the driver library by name; it calls no CUDA function.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no NVIDIA driver here: this example needs a CUDA GPU".into());
    }
    let context = CudaContext::new(0)?;
    let (major, minor) = context.compute_capability()?;
    let mut options = gpuworthy_cuda::compile_options(major, minor);
    if fixed {
        options.push("-DFIXED".into());
    }
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(
        SOURCE,
        CompileOptions { options, name: Some("broken.cu".into()), ..Default::default() },
    )?;
    let module = context.load_module(ptx)?;
    let stream = context.default_stream();
    println!("{} kernels on {}", if fixed { "fixed" } else { "broken" }, context.name()?);
    if bounds {
        scale(&stream, &module.load_function("scale")?)?;
    }
    if race {
        block_sum(&stream, &module.load_function("block_sum")?)?;
    }
    Ok(())
}

/// `y = 2x` over 1000 floats with 4 blocks of 256 threads: thread 1000 passes the broken bound.
fn scale(stream: &Arc<CudaStream>, function: &cudarc::driver::CudaFunction) -> Result<(), Box<dyn std::error::Error>> {
    let n = 1000i32;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x_device = stream.clone_htod(&x)?;
    let mut y_device = stream.alloc_zeros::<f32>(n as usize)?;
    let config = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let mut launch = stream.launch_builder(function);
    launch.arg(&x_device).arg(&mut y_device).arg(&n);
    // SAFETY: the kernel takes (const float*, float*, int) and both buffers hold n floats; the broken version's
    // write past the end is the point of the example, and lands in the allocation's padding (memcheck reports it).
    unsafe { launch.launch(config) }?;
    let y = stream.clone_dtoh(&y_device)?;
    let right = y.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32);
    println!("scale: y[999] = {}, {}", y[999], if right { "every value right" } else { "WRONG values" });
    Ok(())
}

/// Sums 64 blocks of 256 ones: each block's sum must be 256.
fn block_sum(
    stream: &Arc<CudaStream>,
    function: &cudarc::driver::CudaFunction,
) -> Result<(), Box<dyn std::error::Error>> {
    let blocks = 64usize;
    let x = vec![1.0f32; blocks * 256];
    let x_device = stream.clone_htod(&x)?;
    let mut sums_device = stream.alloc_zeros::<f32>(blocks)?;
    let config = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let mut launch = stream.launch_builder(function);
    launch.arg(&x_device).arg(&mut sums_device);
    // SAFETY: the kernel takes (const float*, float*); x holds 256 floats per block and sums one per block.
    unsafe { launch.launch(config) }?;
    let sums = stream.clone_dtoh(&sums_device)?;
    let wrong = sums.iter().filter(|s| **s != 256.0).count();
    println!("block_sum: {} of {blocks} block sums are 256 (first: {})", blocks - wrong, sums[0]);
    Ok(())
}
