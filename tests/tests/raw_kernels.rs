//! Raw kernels on every backend: the seeds' `square_matrix_kernel` (a 2D grid of 16 x 16 blocks), a line kernel of two
//! inputs, two outputs and two scalars whose WGSL folds its dispatch into rows, and a neighbourhood average that no
//! expression can say (checked against its CPU function and, so that the CPU is not checked against itself, against
//! a mean computed here in `f64`), each at shapes around the block edges, on every available
//! device. Also: a kernel without a body for a backend is refused by name there, a wrong kernel fails its check, and a
//! kernel that does not compile reaches the caller with the compiler's log and the kernel's name.
//!
//! A backend that cannot run here is skipped with its reason; `GPUWORTHY_REQUIRE` makes that a failure.

use std::sync::Arc;

use gpuworthy::Device;

#[path = "../../gpuworthy/examples/kernels/mean3.rs"]
mod mean3;
use gpuworthy::core::raw::{Raw, RawKernel, RawParams, Shape, conformance_shapes};
use gpuworthy::core::{Backend, BackendKind, Error, Precision, Workload};

/// The devices to try: every one that opens; a backend `GPUWORTHY_REQUIRE` lists must.
fn devices() -> Vec<Device> {
    gpuworthy_tests::available_devices()
}

const SQUARE_CUDA: &str = r#"
extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
"#;

const SQUARE_WGSL: &str = "
struct Shape { width: u32, height: u32, row: u32 }
@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> matrix: array<f32>;
@group(0) @binding(2) var<storage, read_write> result: array<f32>;

@compute @workgroup_size(16, 16)
fn square_matrix(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.y < shape.height && id.x < shape.width) {
        let idx = id.y * shape.width + id.x;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
";

/// The seeds' kernel, with `wgsl` as its shader.
fn square_matrix(wgsl: &str) -> RawKernel {
    RawKernel::new("square_matrix", &["matrix"], &["result"], &[])
        .unwrap()
        .cuda(SQUARE_CUDA, "square_matrix_kernel", (16, 16))
        .unwrap()
        .wgsl(wgsl, "square_matrix")
        .unwrap()
        .cpu(|args, out| out[0].iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = x * x))
        .reference("result = matrix * matrix")
        .unwrap()
        .flops_per_element(1)
}

fn rotation() -> RawKernel {
    RawKernel::new("rotate", &["x", "y"], &["u", "v"], &["c", "s"])
        .unwrap()
        .cuda(
            r#"extern "C" __global__ void rotate(const float* x, const float* y, float* u, float* v, float c, float s,
                                                  int n) {
                for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                    u[i] = x[i] * c - y[i] * s;
                    v[i] = x[i] * s + y[i] * c;
                }
            }"#,
            "rotate",
            (256, 1),
        )
        .unwrap()
        .wgsl(
            "struct Params { n: u32, height: u32, row: u32, c: f32, s: f32 }
             @group(0) @binding(0) var<uniform> p: Params;
             @group(0) @binding(1) var<storage, read> x: array<f32>;
             @group(0) @binding(2) var<storage, read> y: array<f32>;
             @group(0) @binding(3) var<storage, read_write> u: array<f32>;
             @group(0) @binding(4) var<storage, read_write> v: array<f32>;
             @compute @workgroup_size(64)
             fn rotate(@builtin(global_invocation_id) id: vec3<u32>) {
                 let i = id.x + id.y * p.row;
                 if (i < p.n) {
                     u[i] = x[i] * p.c - y[i] * p.s;
                     v[i] = x[i] * p.s + y[i] * p.c;
                 }
             }",
            "rotate",
        )
        .unwrap()
        .cpu(|args, out| {
            let (c, s) = (args.scalars[0], args.scalars[1]);
            let [u, v] = out else { unreachable!("two outputs") };
            for i in 0..u.len() {
                let (x, y) = (args.inputs[0][i], args.inputs[1][i]);
                u[i] = x * c - y * s;
                v[i] = x * s + y * c;
            }
        })
        .reference("u = x*c - y*s; v = x*s + y*c")
        .unwrap()
}

/// `y[i]` the mean of `x[i-1], x[i], x[i+1]` (the ends repeat their edge): neighbours, which expressions cannot read.
/// The kernel example `08_raw_kernel` sweeps, so that the kernel measured there is the one checked here.
fn neighbourhood_mean() -> RawKernel {
    mean3::neighbourhood_mean().expect("mean3 compiles into a raw kernel")
}

/// The neighbourhood mean of `x` computed apart from the kernel's own CPU function, in `f64`.
fn neighbourhood_mean_in_f64(x: &[f32]) -> Vec<f32> {
    let n = x.len();
    let at = |i: usize| f64::from(x[i]);
    (0..n).map(|i| ((at(i.saturating_sub(1)) + at(i) + at((i + 1).min(n - 1))) / 3.0) as f32).collect()
}

/// An output computed apart from the kernel, for a kernel whose reference is its own CPU function.
type Independent = fn(&[f32]) -> Vec<f32>;

/// A kernel to check: the kernel, whether its shapes are lines, its scalars, and its output computed apart.
type Case = (Arc<RawKernel>, bool, Vec<f32>, Option<Independent>);

/// Runs `kernel` at `shape` on `device` and checks it against its reference, and against `independent` where the
/// reference is the kernel's own CPU function (which the CPU backend runs: checked against itself otherwise).
fn check_on(
    device: &Device,
    kernel: &Arc<RawKernel>,
    shape: Shape,
    scalars: Vec<f32>,
    independent: Option<Independent>,
) -> Result<(), String> {
    let params = RawParams::new(Arc::clone(kernel), shape, scalars).map_err(|e| e.to_string())?;
    let input = Raw::generate(&params, 7).map_err(|e| e.to_string())?;
    let expected = Raw::reference(&input).map_err(|e| e.to_string())?;
    let actual = device.run::<Raw>(device.best_variant::<Raw>(&params), &input).map_err(|e| e.to_string())?;
    Raw::check(&input, &expected, &actual, Precision::Fp32).map_err(|e| e.to_string())?;
    if let Some(independent) = independent {
        let apart = vec![independent(&input.arrays[0])];
        Raw::check(&input, &apart, &actual, Precision::Fp32).map_err(|e| format!("against the f64 mean: {e}"))?;
    }
    Ok(())
}

#[test]
fn raw_kernels_match_their_reference_on_every_backend() {
    let kernels: [Case; 3] = [
        (Arc::new(square_matrix(SQUARE_WGSL)), false, vec![], None),
        (Arc::new(rotation()), true, vec![0.6, 0.8], None),
        (Arc::new(neighbourhood_mean()), true, vec![], Some(neighbourhood_mean_in_f64)),
    ];
    let mut checked = 0;
    for device in devices() {
        for (kernel, line, scalars, independent) in &kernels {
            let mut shapes = conformance_shapes(*line);
            // Past one dimension's workgroup limit on a line (65535 workgroups of 64 on most adapters): folded rows.
            shapes.push(if *line { Shape::Line(65535 * 64 + 100) } else { Shape::Grid { width: 300, height: 1100 } });
            for shape in shapes {
                if let Err(e) = check_on(&device, kernel, shape, scalars.clone(), *independent) {
                    panic!("{} on {} at {shape}: {e}", kernel.name(), device.label());
                }
                checked += 1;
            }
        }
    }
    eprintln!("{checked} raw kernel runs checked");
}

#[test]
fn a_backend_without_a_body_refuses_by_name_and_a_wrong_kernel_fails_its_check() {
    let cpu_only = Arc::new(
        RawKernel::new("cpu_only", &["x"], &["y"], &[]).unwrap().cpu(|a, o| o[0].copy_from_slice(a.inputs[0])),
    );
    let wrong =
        Arc::new(square_matrix(&SQUARE_WGSL.replace("matrix[idx] * matrix[idx]", "matrix[idx] * matrix[idx] + 1e-3")));
    for device in devices() {
        let params = RawParams::new(Arc::clone(&cpu_only), Shape::Line(8), vec![]).unwrap();
        match device.kind() {
            BackendKind::Cpu => assert!(device.check_size::<Raw>(&params).is_ok()),
            kind => {
                let err = device.check_size::<Raw>(&params).unwrap_err();
                assert!(matches!(err, Error::Unsupported { backend, .. } if backend == kind), "{err}");
                assert!(err.to_string().contains("`cpu_only`"), "{err}");
                let input = Raw::generate(&params, 1).unwrap();
                assert!(device.run::<Raw>("kernel", &input).is_err());
            }
        }
        if device.kind() == BackendKind::Wgpu {
            let err = check_on(&device, &wrong, Shape::Grid { width: 20, height: 20 }, vec![], None).unwrap_err();
            assert!(err.contains("result["), "{err}");
        }
    }
}

/// A planted wrong answer: a neighbourhood mean whose CPU function is off passes against itself on the CPU, and fails
/// against the mean computed apart.
#[test]
fn a_wrong_cpu_function_fails_against_the_independent_mean() {
    let wrong = Arc::new(RawKernel::new("mean3", &["x"], &["y"], &[]).unwrap().cpu(|args, out| {
        let x = args.inputs[0];
        let n = x.len();
        for (i, y) in out[0].iter_mut().enumerate() {
            *y = (x[i.saturating_sub(1)] + x[i] + x[(i + 1).min(n - 1)]) / 3.0 + 1e-3;
        }
    }));
    let cpu = Device::cpu().unwrap();
    assert!(check_on(&cpu, &wrong, Shape::Line(1000), vec![], None).is_ok(), "against itself, it passes");
    let err = check_on(&cpu, &wrong, Shape::Line(1000), vec![], Some(neighbourhood_mean_in_f64)).unwrap_err();
    assert!(err.contains("against the f64 mean"), "{err}");
}

#[test]
fn a_kernel_that_does_not_compile_reports_the_log_and_its_name() {
    let broken = Arc::new(
        RawKernel::new("broken", &["x"], &["y"], &[])
            .unwrap()
            .cuda(r#"extern "C" __global__ void broken(const float* x, float* y, int n) { y[0] = undefined_name; }"#, "broken", (64, 1))
            .unwrap()
            .wgsl(
                "@group(0) @binding(1) var<storage, read> x: array<f32>;\n@compute @workgroup_size(64)\nfn broken() {\n  let v = undefined_name;\n}",
                "broken",
            )
            .unwrap()
            .cpu(|a, o| o[0].copy_from_slice(a.inputs[0])),
    );
    for device in devices().into_iter().filter(|d| d.kind().is_gpu()) {
        let params = RawParams::new(Arc::clone(&broken), Shape::Line(8), vec![]).unwrap();
        let input = Raw::generate(&params, 1).unwrap();
        let err = device.run::<Raw>("kernel", &input).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Compile { .. }), "{} : {text}", device.label());
        // The kernel's name (CUDA's error also names the program, `broken in broken.cu`) and the compiler's log.
        assert!(text.contains("kernel `broken") && text.contains("undefined_name"), "{text}");
        if device.kind() == BackendKind::Wgpu {
            assert!(text.contains(":4:"), "the line of the error: {text}");
        }
        eprintln!("{}: {}", device.label(), text.lines().take(3).collect::<Vec<_>>().join(" | "));
    }
}
