//! Memory access patterns: coalescing and shared-memory bank conflicts, measured on one matrix transpose.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 09_memory_access            # every device here
//! cargo run --release -p gpuworthy --example 09_memory_access -- 2048    # another side (default 4096)
//! cargo run --release -p gpuworthy --example 09_memory_access -- 4096 cuda,wgpu   # these devices only
//! ```
//!
//! A transpose moves every element once, like a copy, so a copy of the same matrix is the bar each kernel is held
//! to. Four raw kernels (`gpuworthy::core::raw`), each with a CUDA C body, a WGSL twin and a CPU function, each
//! checked against its reference and timed by the device's clock:
//!
//! - `copy`: reads and writes row by row. The 32 threads of a warp touch 32 consecutive floats, 128 bytes, four
//!   32-byte sectors: the access is *coalesced*.
//! - `transpose_naive`: reads rows, writes columns. Neighbouring threads write `height` floats apart, so each of a
//!   warp's 32 stores lands in its own sector: 32 sectors for 128 useful bytes. This is the *strided* pattern.
//! - `transpose_tiled`: a block loads a 32 x 32 tile into shared memory by rows and writes it out by rows of the
//!   transposed matrix, so both global accesses are coalesced. But it reads the tile by columns: 32 threads read 32
//!   floats 32 words apart, all in one of shared memory's 32 banks, and the hardware serves them one after another
//!   (a 32-way *bank conflict*).
//! - `transpose_padded`: the same with the tile 33 floats wide. A column's words now fall in 32 different banks.
//!
//! The WGSL twins use 16 x 16 tiles (WebGPU guarantees 256 invocations per workgroup, not 1024). On an NVIDIA GPU,
//! `ncu --metrics` shows the cause behind each time (chapter 15 has the command and its counters).

use std::process::ExitCode;
use std::sync::Arc;

use gpuworthy::core::raw::{CpuArgs, Raw, RawKernel, RawParams, Shape};
use gpuworthy::core::{Error, Result, Tolerance, Workload};
use gpuworthy::measure::{MeasureOptions, duration};
use gpuworthy::{Device, DeviceSpec};

/// CUDA C: the copy and the naive transpose, one thread per element.
const CUDA_SIMPLE: &str = r#"
extern "C" __global__ void copy(const float* a, float* b, int width, int height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < height && col < width) b[row * width + col] = a[row * width + col];
}

extern "C" __global__ void transpose_naive(const float* a, float* b, int width, int height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    // b is width rows of height: neighbouring threads (col, col + 1) write height floats apart.
    if (row < height && col < width) b[col * height + row] = a[row * width + col];
}
"#;

/// CUDA C: the transpose through a shared-memory tile, `TILE_WIDTH` floats to a row of the tile (32: conflicts;
/// 33: none). One thread per element, blocks of 32 x 32.
fn cuda_tiled(entry: &str, tile_width: u32) -> String {
    format!(
        r#"
extern "C" __global__ void {entry}(const float* a, float* b, int width, int height) {{
    __shared__ float tile[32][{tile_width}];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = a[y * width + x];  // a row of a: coalesced
    __syncthreads();
    // The tile's column threadIdx.y becomes row (blockIdx.x * 32 + threadIdx.y) of b.
    int out_col = blockIdx.y * 32 + threadIdx.x;
    int out_row = blockIdx.x * 32 + threadIdx.y;
    if (out_col < height && out_row < width) b[out_row * height + out_col] = tile[threadIdx.x][threadIdx.y];
}}
"#
    )
}

/// WGSL: the copy and the naive transpose.
const WGSL_COPY: &str = "
struct Shape { width: u32, height: u32, row: u32 }
@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;

@compute @workgroup_size(16, 16)
fn copy(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.y < shape.height && id.x < shape.width) {
        b[id.y * shape.width + id.x] = a[id.y * shape.width + id.x];
    }
}

@compute @workgroup_size(16, 16)
fn transpose_naive(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.y < shape.height && id.x < shape.width) {
        b[id.x * shape.height + id.y] = a[id.y * shape.width + id.x];
    }
}
";

/// WGSL: the tiled transpose, 16 x 16 tiles `tile_width` floats wide.
fn wgsl_tiled(entry: &str, tile_width: u32) -> String {
    format!(
        "
struct Shape {{ width: u32, height: u32, row: u32 }}
@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
var<workgroup> tile: array<array<f32, {tile_width}>, 16>;

@compute @workgroup_size(16, 16)
fn {entry}(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>) {{
    let x = group.x * 16u + local.x;
    let y = group.y * 16u + local.y;
    if (x < shape.width && y < shape.height) {{
        tile[local.y][local.x] = a[y * shape.width + x];
    }}
    workgroupBarrier();
    let out_col = group.y * 16u + local.x;
    let out_row = group.x * 16u + local.y;
    if (out_col < shape.height && out_row < shape.width) {{
        b[out_row * shape.height + out_col] = tile[local.x][local.y];
    }}
}}
"
    )
}

/// The CPU's transpose, the reference of the GPU kernels: 32 x 32 tiles, each read from `a` a row at a time into
/// a small buffer and written to `b` a row at a time, so that both matrices move a cache line at a time (a strided
/// walk down a power-of-two width would keep evicting its own lines); bands of rows of `b` in parallel on the
/// backend's thread pool.
fn transpose_on_cpu(args: &CpuArgs<'_>, outputs: &mut [&mut [f32]]) {
    use gpuworthy::cpu::rayon::prelude::*;
    const TILE: usize = 32;
    let (width, height) = args.shape.extent();
    let a = args.inputs[0];
    if width == 0 || height == 0 {
        return;
    }
    // b has `width` rows of `height`: a band of TILE rows of b is a band of TILE columns of a.
    outputs[0].par_chunks_mut(TILE * height).enumerate().for_each(|(band, rows)| {
        let first_col = band * TILE;
        let cols = (width - first_col).min(TILE);
        let mut tile = [[0f32; TILE]; TILE];
        for first_row in (0..height).step_by(TILE) {
            let rows_here = (height - first_row).min(TILE);
            let rows_of_a = (first_row..first_row + rows_here).map(|row| &a[row * width + first_col..][..cols]);
            for (r, row_of_a) in rows_of_a.enumerate() {
                for (c, value) in row_of_a.iter().enumerate() {
                    tile[c][r] = *value;
                }
            }
            for (c, column) in tile.iter().enumerate().take(cols) {
                rows[c * height + first_row..c * height + first_row + rows_here].copy_from_slice(&column[..rows_here]);
            }
        }
    });
}

/// The CPU transpose against its definition on a small grid that no tile divides, before it serves as a reference.
fn check_cpu_transpose() -> Result<()> {
    let (width, height) = (53, 37);
    let a: Vec<f32> = (0..width * height).map(|i| i as f32).collect();
    let mut b = vec![0.0; width * height];
    transpose_on_cpu(&CpuArgs { inputs: &[&a], scalars: &[], shape: Shape::Grid { width, height } }, &mut [&mut b]);
    let wrong =
        (0..height).flat_map(|r| (0..width).map(move |c| (r, c))).find(|&(r, c)| b[c * height + r] != a[r * width + c]);
    match wrong {
        Some((r, c)) => Err(Error::invalid(format!("the CPU transpose misplaces element ({r}, {c})"))),
        None => Ok(()),
    }
}

/// The four kernels, in the order the table shows them.
fn kernels() -> Result<Vec<RawKernel>> {
    let exact = Tolerance { absolute: 0.0, relative: 0.0 };
    let transpose = |name: &str, cuda: &str, block: (u32, u32), wgsl: &str| -> Result<RawKernel> {
        Ok(RawKernel::new(name, &["a"], &["b"], &[])?
            .cuda(cuda, name, block)?
            .wgsl(wgsl, name)?
            .cpu(transpose_on_cpu)
            .tolerance(exact))
    };
    Ok(vec![
        RawKernel::new("copy", &["a"], &["b"], &[])?
            .cuda(CUDA_SIMPLE, "copy", (32, 8))?
            .wgsl(WGSL_COPY, "copy")?
            .cpu(|args, outputs| {
                use gpuworthy::cpu::rayon::prelude::*;
                let pieces = args.inputs[0].par_chunks(1 << 16);
                outputs[0].par_chunks_mut(1 << 16).zip(pieces).for_each(|(out, a)| out.copy_from_slice(a));
            })
            .reference("b = a")?,
        transpose("transpose_naive", CUDA_SIMPLE, (32, 8), WGSL_COPY)?,
        transpose("transpose_tiled", &cuda_tiled("transpose_tiled", 32), (32, 32), &wgsl_tiled("transpose_tiled", 16))?,
        transpose(
            "transpose_padded",
            &cuda_tiled("transpose_padded", 33),
            (32, 32),
            &wgsl_tiled("transpose_padded", 17),
        )?,
    ])
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("09_memory_access: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let side: usize =
        match std::env::args().nth(1) {
            None => 4096,
            Some(text) => text.parse().ok().filter(|side| (1..=32768).contains(side)).ok_or_else(|| {
                Error::invalid(format!("the side must be a whole number from 1 to 32768, not `{text}`"))
            })?,
        };
    check_cpu_transpose()?;
    let devices = match std::env::args().nth(2) {
        None => {
            let opened = Device::all_available();
            for (spec, why) in &opened.unavailable {
                println!("{spec}: not here ({why})");
            }
            opened.devices
        }
        Some(list) => {
            list.split(',').map(|spec| Device::open(spec.trim().parse::<DeviceSpec>()?)).collect::<Result<_>>()?
        }
    };
    let kernels: Vec<Arc<RawKernel>> = kernels()?.into_iter().map(Arc::new).collect();
    let shape = Shape::Grid { width: side, height: side };
    let bytes = 8.0 * (side * side) as f64;
    println!(
        "a {side} x {side} float32 matrix, {} MiB each way; kernel time by the device's clock (median)",
        (side * side * 4) >> 20
    );
    println!("  {:<10} {:<18} {:>10} {:>10} {:>10}  check", "device", "kernel", "median", "spread", "GB/s");
    for device in &devices {
        let mut copy_rate = None;
        for kernel in &kernels {
            let params = RawParams::new(Arc::clone(kernel), shape, vec![])?;
            let input = Raw::generate(&params, 1)?;
            let m = device.measure::<Raw>(device.best_variant::<Raw>(&params), &input, &MeasureOptions::quick())?;
            let check = match &m.check {
                Some(Ok(())) => "ok".to_owned(),
                Some(Err(e)) => return Err(Error::invalid(format!("{} on {}: {e}", kernel.name(), device.label()))),
                None => "not checked".to_owned(),
            };
            let rate = bytes / m.kernel.median.as_secs_f64().max(f64::MIN_POSITIVE) / 1e9;
            let share = copy_rate.map_or(String::new(), |copy: f64| format!(" ({:.0}% of copy)", 100.0 * rate / copy));
            copy_rate.get_or_insert(rate);
            println!(
                "  {:<10} {:<18} {:>10} {:>10} {:>10.1}  {check}{share}",
                device.label().to_string(),
                kernel.name(),
                duration(m.kernel.median),
                duration(m.kernel.p75.saturating_sub(m.kernel.p25)),
                rate
            );
        }
    }
    println!("(spread: the middle half of the samples, p75 - p25)");
    Ok(())
}
