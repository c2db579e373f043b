//! Raw kernels: a computation the expression language cannot say (a 2D grid with its own indexing, a gather, a loop
//! per element), written by hand once per backend and carried through the house like any workload.
//!
//! A [`RawKernel`] is a signature (input arrays, output arrays, scalars, and a [`Shape`]: a line of `n` elements or a
//! grid of `width x height`) and any of three bodies: CUDA C with its entry point and block shape, WGSL with its entry
//! point, a Rust function for the CPU. A backend it has no body for answers [`Error::Unsupported`], never a panic. Its
//! reference is an expression (checked within the bounds every expression gets) or, failing that, its CPU function
//! (checked within a [`Tolerance`]). [`Raw`] is the workload every raw kernel runs as: like an expression's, its
//! parameters carry the kernel, so that one type serves every kernel and the harness, sweeps, calibration and `auto`
//! take it without an edit.
//!
//! The calling conventions, which every body follows (they are the seeds' `load_inline` convention, kept):
//!
//! - CUDA: `extern "C" __global__ void entry(const float* in0, ..., float* out0, ..., float s0, ..., int n)` for a
//!   line, `..., int width, int height)` for a grid, element `(row, col)` at `row * width + col`. The grid is
//!   `ceil(n / block.x)` blocks for a line, `ceil(width / block.x) x ceil(height / block.y)` for a grid.
//! - WGSL: binding 0 a uniform `struct { width: u32, height: u32, row: u32, s0: f32, ... }` (`width` is `n` and
//!   `height` 1 for a line; `row` is the number of invocations along x of the whole dispatch, so that a line longer
//!   than one dimension's workgroup limit folds into rows: element `id.x + id.y * row`), then one
//!   `array<f32>` storage binding per input (`read`) and per output (`read_write`), in order. The workgroup size is
//!   read from the shader.
//! - CPU: a function of [`CpuArgs`] writing every element of each output slice; it runs on the backend's thread pool,
//!   so rayon's parallel iterators inside it use every core.
//!
//! ```
//! use gpuworthy_core::raw::{RawKernel, Shape, RawParams, Raw};
//! use gpuworthy_core::Workload;
//!
//! let kernel = RawKernel::new("square_matrix", &["matrix"], &["result"], &[])?
//!     .cpu(|args, outputs| {
//!         for (y, x) in outputs[0].iter_mut().zip(args.inputs[0]) {
//!             *y = x * x;
//!         }
//!     })
//!     .reference("result = matrix * matrix")?;
//! let params = RawParams::new(kernel.into(), Shape::Grid { width: 3, height: 2 }, vec![])?;
//! let input = Raw::generate(&params, 1)?;
//! let expected = Raw::reference(&input)?;
//! assert_eq!(expected[0][4], input.arrays[0][4] * input.arrays[0][4]);
//! # Ok::<(), gpuworthy_core::Error>(())
//! ```

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::expr::{Expr, Outputs, Program, check as check_expression, limits};
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload};

/// The extent of a raw kernel's arrays: every input and output holds [`Shape::elements`] elements.
///
/// ```
/// use gpuworthy_core::raw::Shape;
///
/// let grid = Shape::Grid { width: 512, height: 256 };
/// assert_eq!(grid.elements()?, 131072);
/// assert_eq!(grid.to_string(), "512x256");
/// assert_eq!(Shape::Line(1024).to_string(), "1024");
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `n` elements in a line, indexed by one coordinate.
    Line(usize),
    /// `width x height` elements, row-major: element `(row, col)` at `row * width + col`.
    Grid {
        /// Elements per row (CUDA's x).
        width: usize,
        /// Rows (CUDA's y).
        height: usize,
    },
}

impl Shape {
    /// The elements of each array, or an error where `width x height` overflows.
    ///
    /// ```
    /// use gpuworthy_core::raw::Shape;
    ///
    /// assert_eq!(Shape::Line(1000).elements()?, 1000);
    /// assert_eq!(Shape::Grid { width: 16, height: 4 }.elements()?, 64);
    /// assert!(Shape::Grid { width: usize::MAX, height: 2 }.elements().is_err());
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn elements(&self) -> Result<usize> {
        match *self {
            Shape::Line(n) => Ok(n),
            Shape::Grid { width, height } => width.checked_mul(height).ok_or_else(|| Error::TooLarge {
                what: format!("a grid of {width} x {height} elements"),
                limit: format!("{} elements in one array", usize::MAX),
            }),
        }
    }

    /// `(width, height)`: a line is `n` wide and one high.
    ///
    /// ```
    /// use gpuworthy_core::raw::Shape;
    ///
    /// assert_eq!(Shape::Line(1000).extent(), (1000, 1));
    /// assert_eq!(Shape::Grid { width: 4, height: 3 }.extent(), (4, 3));
    /// ```
    pub fn extent(&self) -> (usize, usize) {
        match *self {
            Shape::Line(n) => (n, 1),
            Shape::Grid { width, height } => (width, height),
        }
    }

    /// The same kind of shape holding about `n` elements: a line of `n`, or the square grid nearest it.
    ///
    /// ```
    /// use gpuworthy_core::raw::Shape;
    ///
    /// assert_eq!(Shape::Line(8).like(1 << 20), Shape::Line(1 << 20));
    /// assert_eq!(Shape::Grid { width: 2, height: 2 }.like(1 << 20), Shape::Grid { width: 1024, height: 1024 });
    /// ```
    pub fn like(&self, n: usize) -> Shape {
        match self {
            Shape::Line(_) => Shape::Line(n),
            Shape::Grid { .. } => {
                let side = (n as f64).sqrt().round() as usize;
                Shape::Grid { width: side, height: side }
            }
        }
    }

    /// Reads `1024`, `2^20` (a line) or `512x512` (a grid).
    ///
    /// ```
    /// use gpuworthy_core::raw::Shape;
    ///
    /// assert_eq!(Shape::parse("2^10")?, Shape::Line(1024));
    /// assert_eq!(Shape::parse("512x256")?, Shape::Grid { width: 512, height: 256 });
    /// assert!(Shape::parse("lots").is_err());
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Shape> {
        let count = |part: &str| -> Result<usize> {
            let part = part.trim();
            let value = match part.split_once('^') {
                Some((base, exp)) => base
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .zip(exp.trim().parse::<u32>().ok())
                    .and_then(|(b, e)| b.checked_pow(e)),
                None => part.parse::<usize>().ok(),
            };
            value.ok_or_else(|| {
                Error::invalid(format!("`{part}` is not a size: write a count (1024, 2^20) or WIDTHxHEIGHT (512x512)"))
            })
        };
        let shape = match text.split_once(['x', 'X']) {
            Some((width, height)) => Shape::Grid { width: count(width)?, height: count(height)? },
            None => Shape::Line(count(text)?),
        };
        shape.elements()?;
        Ok(shape)
    }
}

impl fmt::Display for Shape {
    /// `1024` for a line, `512x512` for a grid, as the built-in workloads' sizes read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Line(n) => write!(f, "{n}"),
            Shape::Grid { width, height } => write!(f, "{width}x{height}"),
        }
    }
}

/// What a raw kernel's CPU function is given: its inputs, its scalars and the shape.
///
/// ```
/// use gpuworthy_core::raw::{RawKernel, Shape};
///
/// // y = x + a * column, on a grid: the function reads the shape to find each element's column.
/// let kernel = RawKernel::new("by_column", &["x"], &["y"], &["a"])?.cpu(|args, outputs| {
///     let (width, _) = args.shape.extent();
///     for (i, (y, x)) in outputs[0].iter_mut().zip(args.inputs[0]).enumerate() {
///         *y = x + args.scalars[0] * (i % width) as f32;
///     }
/// });
/// let mut y = [0.0; 4];
/// kernel.run_cpu(&[&[1.0; 4]], &[10.0], Shape::Grid { width: 2, height: 2 }, &mut [&mut y[..]])?;
/// assert_eq!(y, [1.0, 11.0, 1.0, 11.0]);
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CpuArgs<'a> {
    /// One slice per input, in the signature's order, each of the shape's length.
    pub inputs: &'a [&'a [f32]],
    /// One value per scalar, in the signature's order.
    pub scalars: &'a [f32],
    /// The arrays' extent.
    pub shape: Shape,
}

/// A raw kernel's CPU body: reads the inputs and writes every element of each output (one slice per output, in the
/// signature's order, each of the shape's length; their old contents are unspecified).
///
/// ```
/// use gpuworthy_core::raw::{CpuArgs, CpuFunction, RawKernel, Shape};
///
/// let kernel = RawKernel::new("copy", &["x"], &["y"], &[])?
///     .cpu(|args, out| out[0].copy_from_slice(args.inputs[0]));
/// let body: &CpuFunction = kernel.cpu_function().expect("a CPU body was given");
/// let mut y = [0.0f32; 2];
/// body(&CpuArgs { inputs: &[&[1.0, 2.0]], scalars: &[], shape: Shape::Line(2) }, &mut [&mut y[..]]);
/// assert_eq!(y, [1.0, 2.0]);
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
pub type CpuFunction = dyn Fn(&CpuArgs<'_>, &mut [&mut [f32]]) + Send + Sync;

/// A raw kernel's CUDA body.
///
/// ```
/// use gpuworthy_core::raw::{CudaBody, RawKernel};
///
/// # const CUDA: &str = r#"extern "C" __global__ void negate(const float* x, float* y, int n) {
/// #     int i = blockIdx.x * blockDim.x + threadIdx.x;
/// #     if (i < n) y[i] = -x[i];
/// # }"#;
/// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?.cuda(CUDA, "negate", (256, 1))?;
/// let body: &CudaBody = kernel.cuda_body().expect("a CUDA body was given");
/// assert_eq!((body.entry.as_str(), body.block), ("negate", (256, 1)));
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaBody {
    /// CUDA C declaring `extern "C" __global__` the entry point, with the module's calling convention.
    pub source: String,
    /// The entry point's name.
    pub entry: String,
    /// Threads per block along x and y (y is 1 for a line).
    pub block: (u32, u32),
}

/// A raw kernel's WGSL body.
///
/// ```
/// use gpuworthy_core::raw::{RawKernel, WgslBody};
///
/// # const WGSL: &str = "
/// # struct Shape { width: u32, height: u32, row: u32 }
/// # @group(0) @binding(0) var<uniform> shape: Shape;
/// # @group(0) @binding(1) var<storage, read> x: array<f32>;
/// # @group(0) @binding(2) var<storage, read_write> y: array<f32>;
/// # @compute @workgroup_size(256)
/// # fn negate(@builtin(global_invocation_id) id: vec3<u32>) {
/// #     let i = id.x + id.y * shape.row;
/// #     if (i < shape.width) { y[i] = -x[i]; }
/// # }";
/// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?.wgsl(WGSL, "negate")?;
/// let body: &WgslBody = kernel.wgsl_body().expect("a WGSL body was given");
/// assert_eq!(body.entry, "negate");
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WgslBody {
    /// WGSL declaring the compute entry point, with the module's binding convention.
    pub source: String,
    /// The entry point's name.
    pub entry: String,
}

/// A computation written by hand per backend, with its signature and reference ([the module](self)).
///
/// ```
/// use gpuworthy_core::raw::RawKernel;
///
/// let kernel = RawKernel::new("axpy", &["x", "y"], &["z"], &["a"])?
///     .cpu(|args, out| {
///         for ((z, x), y) in out[0].iter_mut().zip(args.inputs[0]).zip(args.inputs[1]) {
///             *z = args.scalars[0] * x + y;
///         }
///     })
///     .reference("z = a * x + y")?
///     .flops_per_element(2);
/// assert_eq!((kernel.name(), kernel.scalars().len()), ("axpy", 1));
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Clone)]
pub struct RawKernel {
    name: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    scalars: Vec<String>,
    flops_per_element: u64,
    cuda: Option<CudaBody>,
    wgsl: Option<WgslBody>,
    cpu: Option<Arc<CpuFunction>>,
    reference: Option<ExpressionReference>,
    tolerance: Tolerance,
}

/// A reference expression, with where its inputs and outputs sit in the kernel's signature.
#[derive(Debug, Clone)]
struct ExpressionReference {
    program: Arc<Program>,
    /// For each of the program's inputs, the kernel's input of that name.
    inputs: Vec<usize>,
    /// For each of the program's scalars, the kernel's scalar of that name.
    scalars: Vec<usize>,
    /// For each of the program's outputs, the kernel's output of that name.
    outputs: Vec<usize>,
}

impl fmt::Debug for RawKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawKernel")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("scalars", &self.scalars)
            .field("cuda", &self.cuda.as_ref().map(|b| &b.entry))
            .field("wgsl", &self.wgsl.as_ref().map(|b| &b.entry))
            .field("cpu", &self.cpu.is_some())
            .field("reference", &self.reference.as_ref().map(|r| r.program.outputs.len()))
            .finish()
    }
}

/// Whether `name` is an identifier in C, WGSL and the expression language alike.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The default tolerance of a backend's result against a CPU function's: a few `f32` ulp, and an absolute part for
/// results near zero.
///
/// ```
/// use gpuworthy_core::raw::DEFAULT_TOLERANCE;
///
/// assert!(DEFAULT_TOLERANCE.accepts(1.0, 1.0 + 5e-6));
/// assert!(!DEFAULT_TOLERANCE.accepts(1.0, 1.001));
/// ```
pub const DEFAULT_TOLERANCE: Tolerance = Tolerance { absolute: 1e-6, relative: 1e-5 };

impl RawKernel {
    /// A kernel called `name` that reads `inputs`, writes `outputs` and takes `scalars`, with no body yet. Every name
    /// must be an identifier, distinct from the others; at least one output; the expression language's limits on
    /// arrays and scalars hold.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// let kernel = RawKernel::new("saxpy", &["x", "y"], &["z"], &["a"])?;
    /// assert_eq!(kernel.outputs(), ["z"]);
    /// assert!(RawKernel::new("1x", &["x"], &["y"], &[]).is_err()); // not an identifier
    /// assert!(RawKernel::new("k", &["x"], &["x"], &[]).is_err()); // one name, two arguments
    /// assert!(RawKernel::new("k", &["x"], &[], &[]).is_err()); // no output
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn new(name: &str, inputs: &[&str], outputs: &[&str], scalars: &[&str]) -> Result<RawKernel> {
        if !is_identifier(name) {
            return Err(Error::invalid(format!("`{name}` cannot name a kernel: use letters, digits and `_`")));
        }
        if outputs.is_empty() {
            return Err(Error::invalid(format!("the kernel `{name}` writes no output")));
        }
        if inputs.len() + outputs.len() > limits::MAX_ARRAYS {
            return Err(Error::TooLarge {
                what: format!("{} arrays in the kernel `{name}`", inputs.len() + outputs.len()),
                limit: format!("{} arrays", limits::MAX_ARRAYS),
            });
        }
        if scalars.len() > limits::MAX_SCALARS {
            return Err(Error::TooLarge {
                what: format!("{} scalars in the kernel `{name}`", scalars.len()),
                limit: format!("{} scalars", limits::MAX_SCALARS),
            });
        }
        let all: Vec<&str> = inputs.iter().chain(outputs).chain(scalars).copied().collect();
        for (i, arg) in all.iter().enumerate() {
            if !is_identifier(arg) {
                return Err(Error::invalid(format!("`{arg}` cannot name an argument of `{name}`")));
            }
            if all[..i].contains(arg) {
                return Err(Error::invalid(format!("`{arg}` names two arguments of `{name}`")));
            }
        }
        let owned = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        Ok(RawKernel {
            name: name.to_owned(),
            inputs: owned(inputs),
            outputs: owned(outputs),
            scalars: owned(scalars),
            flops_per_element: 0,
            cuda: None,
            wgsl: None,
            cpu: None,
            reference: None,
            tolerance: DEFAULT_TOLERANCE,
        })
    }

    /// Adds the CUDA body: `source` declaring `extern "C" __global__ void entry(...)`, launched with `block` threads
    /// per block (`(256, 1)` for a line, `(16, 16)` for the seeds' grid). A block of no threads or more than 1024 is
    /// refused.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// const CUDA: &str = r#"extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    ///     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ///     if (i < n) y[i] = a * x[i];
    /// }"#;
    /// let kernel = RawKernel::new("scale", &["x"], &["y"], &["a"])?;
    /// let kernel = kernel.cuda(CUDA, "scale", (256, 1))?; // NVRTC compiles it on a CUDA device
    /// assert!(kernel.cuda_body().is_some());
    /// assert!(kernel.clone().cuda(CUDA, "scale", (64, 64)).is_err()); // 4096 threads per block
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn cuda(mut self, source: &str, entry: &str, block: (u32, u32)) -> Result<RawKernel> {
        let threads = u64::from(block.0) * u64::from(block.1);
        if threads == 0 || threads > 1024 {
            return Err(Error::invalid(format!(
                "a block of {} x {} threads: CUDA takes 1 to 1024 threads per block",
                block.0, block.1
            )));
        }
        if !is_identifier(entry) {
            return Err(Error::invalid(format!("`{entry}` cannot be a CUDA entry point")));
        }
        self.cuda = Some(CudaBody { source: source.to_owned(), entry: entry.to_owned(), block });
        Ok(self)
    }

    /// Adds the WGSL body: `source` declaring `@compute fn entry`, with the bindings of the module's convention.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// const WGSL: &str = "
    /// struct Shape { width: u32, height: u32, row: u32, a: f32 }
    /// @group(0) @binding(0) var<uniform> shape: Shape;
    /// @group(0) @binding(1) var<storage, read> x: array<f32>;
    /// @group(0) @binding(2) var<storage, read_write> y: array<f32>;
    /// @compute @workgroup_size(256)
    /// fn scale(@builtin(global_invocation_id) id: vec3<u32>) {
    ///     let i = id.x + id.y * shape.row;
    ///     if (i < shape.width) { y[i] = shape.a * x[i]; }
    /// }";
    /// let kernel = RawKernel::new("scale", &["x"], &["y"], &["a"])?.wgsl(WGSL, "scale")?;
    /// assert_eq!(kernel.wgsl_body().map(|body| body.entry.as_str()), Some("scale"));
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn wgsl(mut self, source: &str, entry: &str) -> Result<RawKernel> {
        if !is_identifier(entry) {
            return Err(Error::invalid(format!("`{entry}` cannot be a WGSL entry point")));
        }
        self.wgsl = Some(WgslBody { source: source.to_owned(), entry: entry.to_owned() });
        Ok(self)
    }

    /// Adds the CPU body.
    ///
    /// ```
    /// use gpuworthy_core::raw::{RawKernel, Shape};
    ///
    /// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?
    ///     .cpu(|args, out| out[0].iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = -x));
    /// let mut y = [0.0; 2];
    /// kernel.run_cpu(&[&[1.0, -2.0]], &[], Shape::Line(2), &mut [&mut y[..]])?;
    /// assert_eq!(y, [-1.0, 2.0]);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn cpu(mut self, function: impl Fn(&CpuArgs<'_>, &mut [&mut [f32]]) + Send + Sync + 'static) -> RawKernel {
        self.cpu = Some(Arc::new(function));
        self
    }

    /// Sets the reference to an expression of the kernel's own names: it must assign every output, read only the
    /// kernel's inputs and scalars, and be elementwise. Results are then checked within the bounds an expression's
    /// are.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// let kernel = RawKernel::new("scale", &["x"], &["y"], &["a"])?.reference("y = a * x")?;
    /// assert!(kernel.clone().reference("y = a * w").is_err()); // `w` is not one of its inputs
    /// assert!(kernel.clone().reference("y = sum(x)").is_err()); // a reduction
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn reference(mut self, source: &str) -> Result<RawKernel> {
        let expr = Expr::parse(source).map_err(|e| {
            Error::invalid(format!("the reference of `{}` does not parse:\n{}", self.name, e.render(source)))
        })?;
        let scalars: Vec<&str> =
            expr.operands().into_iter().filter(|name| self.scalars.iter().any(|s| s == name)).collect();
        let program = expr.bind(&scalars).map_err(|e| {
            Error::invalid(format!("the reference of `{}` is not a program:\n{}", self.name, e.render(source)))
        })?;
        if program.reduction.is_some() {
            return Err(Error::invalid(format!(
                "the reference of `{}` is a reduction; a raw kernel's is elementwise",
                self.name
            )));
        }
        let position = |names: &[String], name: &str, what: &str| {
            names.iter().position(|n| n == name).ok_or_else(|| {
                Error::invalid(format!(
                    "the reference of `{}` uses `{name}`, which is not one of its {what} ({})",
                    self.name,
                    names.join(", ")
                ))
            })
        };
        let inputs = program.inputs.iter().map(|n| position(&self.inputs, n, "inputs")).collect::<Result<Vec<_>>>()?;
        let outputs =
            program.outputs.iter().map(|o| position(&self.outputs, &o.name, "outputs")).collect::<Result<Vec<_>>>()?;
        if let Some(missing) = self.outputs.iter().enumerate().find(|(i, _)| !outputs.contains(i)) {
            return Err(Error::invalid(format!("the reference of `{}` does not assign `{}`", self.name, missing.1)));
        }
        let scalars = program.scalars.iter().map(|n| position(&self.scalars, n, "scalars")).collect::<Result<_>>()?;
        self.reference = Some(ExpressionReference { program: Arc::new(program), inputs, scalars, outputs });
        Ok(self)
    }

    /// Sets the tolerance a backend's result is held to against the CPU function, where the reference is not an
    /// expression ([`DEFAULT_TOLERANCE`] otherwise).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use gpuworthy_core::raw::{Raw, RawKernel, RawParams, Shape};
    /// use gpuworthy_core::{Precision, Tolerance, Workload};
    ///
    /// let kernel = RawKernel::new("fast_exp", &["x"], &["y"], &[])?
    ///     .cpu(|args, out| out[0].iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = x.exp()))
    ///     .tolerance(Tolerance { absolute: 0.0, relative: 1e-3 });
    /// let input = Raw::generate(&RawParams::new(Arc::new(kernel), Shape::Line(8), vec![])?, 1)?;
    /// let expected = Raw::reference(&input)?;
    /// let close = vec![expected[0].iter().map(|y| y * 1.0001).collect()]; // 1e-4 off: within 1e-3
    /// assert!(Raw::check(&input, &expected, &close, Precision::Fp32).is_ok());
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn tolerance(mut self, tolerance: Tolerance) -> RawKernel {
        self.tolerance = tolerance;
        self
    }

    /// Sets the arithmetic operations one element costs, for the roofline: unless set, its reference expression's,
    /// counted as an expression's cost counts them (special functions apart); 0 where it has neither.
    ///
    /// ```
    /// use gpuworthy_core::Workload;
    /// use gpuworthy_core::raw::{Raw, RawKernel, RawParams, Shape};
    ///
    /// let kernel = RawKernel::new("axpy", &["x", "y"], &["z"], &["a"])?.reference("z = a * x + y")?;
    /// let cost = |kernel: RawKernel| Raw::cost(&RawParams::new(kernel.into(), Shape::Line(1000), vec![2.0]).unwrap());
    /// assert_eq!((cost(kernel.clone()).flops, cost(kernel.clone()).bytes), (2000, 12000)); // the reference's two
    /// assert_eq!(cost(kernel.flops_per_element(5)).flops, 5000); // as set
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn flops_per_element(mut self, flops: u64) -> RawKernel {
        self.flops_per_element = flops;
        self
    }

    /// The arithmetic operations one element costs ([`RawKernel::flops_per_element`]): as set, else its reference
    /// expression's, else 0.
    pub fn element_flops(&self) -> u64 {
        if self.flops_per_element > 0 {
            return self.flops_per_element;
        }
        self.reference.as_ref().map_or(0, |r| r.program.cost_per_element().flops)
    }

    /// The kernel's name.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// assert_eq!(RawKernel::new("square_matrix", &["matrix"], &["result"], &[])?.name(), "square_matrix");
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input arrays' names, in order.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// assert_eq!(RawKernel::new("axpy", &["x", "y"], &["z"], &["a"])?.inputs(), ["x", "y"]);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn inputs(&self) -> &[String] {
        &self.inputs
    }

    /// The output arrays' names, in order.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// assert_eq!(RawKernel::new("polar", &["x", "y"], &["r", "theta"], &[])?.outputs(), ["r", "theta"]);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn outputs(&self) -> &[String] {
        &self.outputs
    }

    /// The scalars' names, in order.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// assert_eq!(RawKernel::new("affine", &["x"], &["y"], &["a", "b"])?.scalars(), ["a", "b"]);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn scalars(&self) -> &[String] {
        &self.scalars
    }

    /// The CUDA body, if any.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// let kernel = RawKernel::new("k", &["x"], &["y"], &[])?;
    /// assert!(kernel.cuda_body().is_none()); // a CUDA device answers "unsupported" for this kernel
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn cuda_body(&self) -> Option<&CudaBody> {
        self.cuda.as_ref()
    }

    /// The WGSL body, if any.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// let kernel = RawKernel::new("k", &["x"], &["y"], &[])?;
    /// assert!(kernel.wgsl_body().is_none()); // a wgpu device answers "unsupported" for this kernel
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn wgsl_body(&self) -> Option<&WgslBody> {
        self.wgsl.as_ref()
    }

    /// The CPU body, if any.
    ///
    /// ```
    /// use gpuworthy_core::raw::RawKernel;
    ///
    /// let kernel = RawKernel::new("copy", &["x"], &["y"], &[])?;
    /// assert!(kernel.cpu_function().is_none());
    /// let kernel = kernel.cpu(|args, out| out[0].copy_from_slice(args.inputs[0]));
    /// assert!(kernel.cpu_function().is_some());
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn cpu_function(&self) -> Option<&CpuFunction> {
        self.cpu.as_deref()
    }

    /// Runs the CPU body on `inputs` into `outputs` (each of the shape's length), or refuses where there is none. A
    /// panic inside the function becomes [`Error::Device`] naming the kernel.
    ///
    /// ```
    /// use gpuworthy_core::raw::{RawKernel, Shape};
    ///
    /// let kernel = RawKernel::new("double", &["x"], &["y"], &[])?
    ///     .cpu(|args, out| out[0].iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = 2.0 * x));
    /// let mut y = vec![0.0; 3];
    /// kernel.run_cpu(&[&[0.0, 1.0, 2.0]], &[], Shape::Line(3), &mut [&mut y[..]])?;
    /// assert_eq!(y, [0.0, 2.0, 4.0]);
    /// let bodiless = RawKernel::new("none", &["x"], &["y"], &[])?;
    /// assert!(bodiless.run_cpu(&[&[1.0]], &[], Shape::Line(1), &mut [&mut [0.0][..]]).is_err());
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn run_cpu(&self, inputs: &[&[f32]], scalars: &[f32], shape: Shape, outputs: &mut [&mut [f32]]) -> Result<()> {
        let function =
            self.cpu.as_deref().ok_or_else(|| Error::unsupported(crate::BackendKind::Cpu, self.name.clone()))?;
        // A panic in the caller's function is that function's error, not the process's end.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            function(&CpuArgs { inputs, scalars, shape }, outputs);
        }))
        .map_err(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Error::Device {
                backend: crate::BackendKind::Cpu,
                message: format!("the CPU function of `{}` panicked: {why}", self.name),
            }
        })
    }
}

/// The parameters of a raw kernel's run: the kernel, the shape, each input's range and each scalar's value.
///
/// ```
/// use std::sync::Arc;
/// use gpuworthy_core::Workload;
/// use gpuworthy_core::raw::{Raw, RawKernel, RawParams, Shape};
///
/// let kernel = Arc::new(RawKernel::new("scale", &["x"], &["y"], &["a"])?.reference("y = a * x")?);
/// let mut params = RawParams::new(kernel, Shape::Line(1000), vec![2.0])?;
/// params.ranges[0] = (0.0, 1.0); // x drawn from [0, 1)
/// let input = Raw::generate(&params, 1)?;
/// assert!(input.arrays[0].iter().all(|x| (0.0..1.0).contains(x)));
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RawParams {
    /// The kernel.
    pub kernel: Arc<RawKernel>,
    /// The arrays' extent.
    pub shape: Shape,
    /// The range each input is drawn from, uniformly (`[-1, 1)` unless set), in the kernel's order of inputs.
    pub ranges: Vec<(f32, f32)>,
    /// Each scalar's value, in the kernel's order.
    pub scalars: Vec<f32>,
}

impl PartialEq for RawParams {
    /// The same kernel (the same value, not only the same name) at the same shape, ranges and scalars.
    fn eq(&self, other: &RawParams) -> bool {
        Arc::ptr_eq(&self.kernel, &other.kernel)
            && self.shape == other.shape
            && self.ranges == other.ranges
            && self.scalars == other.scalars
    }
}

impl RawParams {
    /// `kernel` at `shape`, its inputs drawn from `[-1, 1)`, with these scalar values (one per scalar). A kernel
    /// with neither a reference expression nor a CPU function cannot be checked, and is refused.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use gpuworthy_core::raw::{RawKernel, RawParams, Shape};
    ///
    /// let scale = Arc::new(RawKernel::new("scale", &["x"], &["y"], &["a"])?.reference("y = a * x")?);
    /// let params = RawParams::new(Arc::clone(&scale), Shape::Grid { width: 3, height: 2 }, vec![2.0])?;
    /// assert_eq!((params.len(), params.ranges.len()), (6, 1));
    /// assert!(RawParams::new(scale, Shape::Line(4), vec![]).is_err()); // `a` has no value
    /// let bare = Arc::new(RawKernel::new("bare", &["x"], &["y"], &[])?);
    /// assert!(RawParams::new(bare, Shape::Line(4), vec![]).is_err()); // nothing to check it against
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn new(kernel: Arc<RawKernel>, shape: Shape, scalars: Vec<f32>) -> Result<RawParams> {
        if kernel.reference.is_none() && kernel.cpu.is_none() {
            return Err(Error::invalid(format!(
                "the kernel `{}` has nothing to be checked against: give it a reference expression or a CPU function",
                kernel.name
            )));
        }
        if scalars.len() != kernel.scalars.len() {
            return Err(Error::invalid(format!(
                "the kernel `{}` takes {} scalar(s) ({}), but {} values were given",
                kernel.name,
                kernel.scalars.len(),
                kernel.scalars.join(", "),
                scalars.len()
            )));
        }
        shape.elements()?;
        let ranges = vec![(-1.0, 1.0); kernel.inputs.len()];
        Ok(RawParams { kernel, shape, ranges, scalars })
    }

    /// The same run at another shape.
    ///
    /// ```
    /// use gpuworthy_core::raw::{RawKernel, RawParams, Shape};
    ///
    /// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?.reference("y = -x")?;
    /// let small = RawParams::new(kernel.into(), Shape::Grid { width: 16, height: 16 }, vec![])?;
    /// assert_eq!(small.with_shape(Shape::Grid { width: 1024, height: 1024 }).len(), 1 << 20);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn with_shape(&self, shape: Shape) -> RawParams {
        RawParams { shape, ..self.clone() }
    }

    /// The elements of each array (0 where the shape overflows, which [`RawParams::new`] refuses).
    ///
    /// ```
    /// use gpuworthy_core::raw::{RawKernel, RawParams, Shape};
    ///
    /// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?.reference("y = -x")?;
    /// assert_eq!(RawParams::new(kernel.into(), Shape::Grid { width: 3, height: 2 }, vec![])?.len(), 6);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.shape.elements().unwrap_or(0)
    }

    /// Whether the arrays are empty.
    ///
    /// ```
    /// use gpuworthy_core::raw::{RawKernel, RawParams, Shape};
    ///
    /// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?.reference("y = -x")?;
    /// assert!(RawParams::new(kernel.into(), Shape::Grid { width: 0, height: 3 }, vec![])?.is_empty());
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Display for RawParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shape.fmt(f)
    }
}

/// A raw kernel's input: its parameters and one array per input.
///
/// ```
/// use gpuworthy_core::Workload;
/// use gpuworthy_core::raw::{Raw, RawInput, RawKernel, RawParams, Shape};
///
/// let kernel = RawKernel::new("double", &["x"], &["y"], &[])?.reference("y = 2 * x")?;
/// let params = RawParams::new(kernel.into(), Shape::Line(3), vec![])?;
/// let input = RawInput { params, arrays: vec![vec![1.0, 2.0, 3.0]] };
/// assert_eq!(Raw::reference(&input)?, vec![vec![2.0, 4.0, 6.0]]);
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RawInput {
    /// The parameters it was made with.
    pub params: RawParams,
    /// One array per input, each of the shape's length.
    pub arrays: Vec<Vec<f32>>,
}

impl RawInput {
    /// The arrays as slices.
    ///
    /// ```
    /// use gpuworthy_core::raw::{RawInput, RawKernel, RawParams, Shape};
    ///
    /// let kernel = RawKernel::new("add", &["x", "y"], &["z"], &[])?.reference("z = x + y")?;
    /// let params = RawParams::new(kernel.into(), Shape::Line(2), vec![])?;
    /// let input = RawInput { params, arrays: vec![vec![1.0, 2.0], vec![3.0, 4.0]] };
    /// assert_eq!(input.slices(), [&[1.0, 2.0][..], &[3.0, 4.0][..]]);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn slices(&self) -> Vec<&[f32]> {
        self.arrays.iter().map(Vec::as_slice).collect()
    }
}

/// The workload of a raw kernel ([the module](self)); its output is one array per kernel output.
///
/// ```
/// use gpuworthy_core::raw::{Raw, RawKernel, RawParams, Shape};
/// use gpuworthy_core::{Precision, Workload};
///
/// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?.reference("y = -x")?;
/// let input = Raw::generate(&RawParams::new(kernel.into(), Shape::Line(100), vec![])?, 1)?;
/// let expected = Raw::reference(&input)?;
/// assert_eq!(expected[0][5], -input.arrays[0][5]);
/// assert!(Raw::check(&input, &expected, &expected, Precision::Fp32).is_ok());
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Raw;

/// The lengths the ladders of a raw kernel take: 2^10 to 2^26 elements, as the 1D workloads'.
fn lengths(quick: bool) -> Vec<usize> {
    let (step, to) = if quick { (4, 22) } else { (2, 26) };
    (10..=to).step_by(step).map(|p| 1usize << p).collect()
}

/// The shapes a raw kernel is swept at: lines of 2^10 to 2^26 elements, or square grids of as many, like `params`.
///
/// ```
/// use gpuworthy_core::raw::{RawKernel, RawParams, Shape, raw_ladder};
///
/// let kernel = RawKernel::new("negate", &["x"], &["y"], &[])?.reference("y = -x")?;
/// let params = RawParams::new(kernel.into(), Shape::Grid { width: 4, height: 4 }, vec![])?;
/// let sizes: Vec<String> = raw_ladder(&params, true).iter().map(|p| p.to_string()).collect();
/// assert_eq!(sizes, ["32x32", "128x128", "512x512", "2048x2048"]);
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
pub fn raw_ladder(params: &RawParams, quick: bool) -> Vec<RawParams> {
    lengths(quick).into_iter().map(|n| params.with_shape(params.shape.like(n))).collect()
}

impl Workload for Raw {
    const NAME: &'static str = "raw";
    const LESSON: &'static str = "your own kernel, written per backend, checked and measured like the rest";
    type Params = RawParams;
    type Input = RawInput;
    type Output = Vec<Vec<f32>>;

    fn params(input: &RawInput) -> RawParams {
        input.params.clone()
    }

    fn validate(input: &RawInput) -> Result<()> {
        let p = &input.params;
        let kernel = &p.kernel;
        if input.arrays.len() != kernel.inputs.len() || p.scalars.len() != kernel.scalars.len() {
            return Err(Error::invalid(format!(
                "the kernel `{}` takes {} input(s) and {} scalar(s), but {} and {} were given",
                kernel.name,
                kernel.inputs.len(),
                kernel.scalars.len(),
                input.arrays.len(),
                p.scalars.len()
            )));
        }
        let n = p.shape.elements()?;
        if let Some((name, array)) = kernel.inputs.iter().zip(&input.arrays).find(|(_, a)| a.len() != n) {
            return Err(Error::invalid(format!(
                "the input `{name}` of `{}` holds {} elements, but its shape {} holds {n}",
                kernel.name,
                array.len(),
                p.shape
            )));
        }
        Ok(())
    }

    fn generate(params: &RawParams, seed: u64) -> Result<RawInput> {
        crate::memory::check_host_memory::<Self>(params)?;
        let n = params.shape.elements()?;
        if params.ranges.len() != params.kernel.inputs.len() {
            return Err(Error::invalid("one range per input array is needed"));
        }
        let arrays = params
            .ranges
            .iter()
            .enumerate()
            .map(|(k, &(low, high))| rng::uniform_f32(seed, k as u64, n, low, high))
            .collect();
        Ok(RawInput { params: params.clone(), arrays })
    }

    fn reference(input: &RawInput) -> Result<Vec<Vec<f32>>> {
        Self::validate(input)?;
        let p = &input.params;
        let kernel = &p.kernel;
        let n = p.shape.elements()?;
        if let Some(reference) = &kernel.reference {
            let (inputs, scalars) = reference_arguments(reference, input);
            let crate::expr::Reference::Elementwise(values) = reference.program.reference(&inputs, &scalars)? else {
                return Err(Error::invalid("a raw kernel's reference is elementwise"));
            };
            let mut outputs = vec![Vec::new(); kernel.outputs.len()];
            for (values, &slot) in values.iter().zip(&reference.outputs) {
                outputs[slot] = values.iter().map(|b| b.value as f32).collect();
            }
            return Ok(outputs);
        }
        let mut outputs = vec![vec![0.0f32; n]; kernel.outputs.len()];
        let mut views: Vec<&mut [f32]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        kernel.run_cpu(&input.slices(), &p.scalars, p.shape, &mut views)?;
        Ok(outputs)
    }

    fn check(
        input: &RawInput,
        expected: &Vec<Vec<f32>>,
        actual: &Vec<Vec<f32>>,
        _: Precision,
    ) -> std::result::Result<(), Mismatch> {
        let kernel = &input.params.kernel;
        if actual.len() != kernel.outputs.len() {
            return Err(Mismatch::new(format!("{} outputs, expected {}", actual.len(), kernel.outputs.len())));
        }
        if let Some(reference) = &kernel.reference {
            let (inputs, scalars) = reference_arguments(reference, input);
            let bounded = reference
                .program
                .reference(&inputs, &scalars)
                .map_err(|e| Mismatch::new(format!("the reference could not be computed: {e}")))?;
            let ordered = reference.outputs.iter().map(|&slot| actual[slot].clone()).collect();
            return check_expression(&reference.program, &bounded, &Outputs::Elementwise(ordered))
                .map_err(|m| Mismatch::new(format!("{}: {}", kernel.name, m.message)));
        }
        let (width, _) = input.params.shape.extent();
        let grid = matches!(input.params.shape, Shape::Grid { .. });
        for ((name, want), got) in kernel.outputs.iter().zip(expected).zip(actual) {
            kernel.tolerance.check_slices(want, got, |i| {
                if grid {
                    format!("{name}[{}, {}]", i / width.max(1), i % width.max(1))
                } else {
                    format!("{name}[{i}]")
                }
            })?;
        }
        Ok(())
    }

    fn host_bytes(params: &RawParams) -> Option<u64> {
        let arrays = (params.kernel.inputs.len() + params.kernel.outputs.len()) as u64;
        (params.shape.elements().ok()? as u64).checked_mul(4 * arrays)
    }

    fn cost(params: &RawParams) -> Cost {
        let n = params.len() as u64;
        let arrays = (params.kernel.inputs.len() + params.kernel.outputs.len()) as u64;
        Cost { bytes: 4 * arrays * n, flops: params.kernel.element_flops() * n, elements: n }
    }

    /// Not used: a raw kernel's ladder depends on its shape ([`raw_ladder`]).
    fn ladder() -> Vec<RawParams> {
        Vec::new()
    }

    fn quick_ladder() -> Vec<RawParams> {
        Vec::new()
    }

    fn conformance_params() -> Vec<RawParams> {
        Vec::new()
    }

    fn special_inputs() -> Vec<(&'static str, RawInput)> {
        Vec::new()
    }
}

/// The reference program's inputs and scalars, taken from the kernel's by name.
fn reference_arguments<'a>(reference: &ExpressionReference, input: &'a RawInput) -> (Vec<&'a [f32]>, Vec<f32>) {
    let inputs = reference.inputs.iter().map(|&k| input.arrays[k].as_slice()).collect();
    let scalars = reference.scalars.iter().map(|&k| input.params.scalars[k]).collect();
    (inputs, scalars)
}

/// The shapes every backend must compute a raw kernel at: empty, one element, a few past a block, a grid that is not
/// a multiple of 16 either way.
///
/// ```
/// use gpuworthy_core::raw::{Shape, conformance_shapes};
///
/// assert!(conformance_shapes(true).contains(&Shape::Line(0))); // the empty line too
/// assert!(conformance_shapes(false).iter().all(|shape| matches!(shape, Shape::Grid { .. })));
/// ```
pub fn conformance_shapes(line: bool) -> Vec<Shape> {
    if line {
        vec![Shape::Line(0), Shape::Line(1), Shape::Line(5), Shape::Line(1000), Shape::Line(4099)]
    } else {
        vec![
            Shape::Grid { width: 0, height: 3 },
            Shape::Grid { width: 1, height: 1 },
            Shape::Grid { width: 17, height: 5 },
            Shape::Grid { width: 100, height: 33 },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> RawKernel {
        RawKernel::new("square_matrix", &["matrix"], &["result"], &[]).unwrap().cpu(|args, outputs| {
            for (y, x) in outputs[0].iter_mut().zip(args.inputs[0]) {
                *y = x * x;
            }
        })
    }

    #[test]
    fn signatures_are_checked_when_made() {
        for (name, inputs, outputs, scalars, expected) in [
            ("1x", &["x"][..], &["y"][..], &[][..], "cannot name a kernel"),
            ("k", &["x"][..], &[][..], &[][..], "writes no output"),
            ("k", &["x"][..], &["x"][..], &[][..], "names two arguments"),
            ("k", &["x y"][..], &["y"][..], &[][..], "cannot name an argument"),
        ] {
            let err = RawKernel::new(name, inputs, outputs, scalars).unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
        }
        let many: Vec<String> = (0..=limits::MAX_ARRAYS).map(|i| format!("x{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(RawKernel::new("k", &many, &["y"], &[]).unwrap_err().to_string().contains("16 arrays"));
        let k = RawKernel::new("k", &["x"], &["y"], &[]).unwrap();
        assert!(k.clone().cuda("", "k", (64, 64)).unwrap_err().to_string().contains("1 to 1024"));
        assert!(k.clone().cuda("", "k(", (16, 16)).is_err());
        assert!(k.clone().wgsl("", "").is_err());
    }

    #[test]
    fn a_reference_expression_must_match_the_signature() {
        let k = RawKernel::new("k", &["x"], &["y", "z"], &["a"]).unwrap();
        for (source, expected) in [
            ("y = a * w; z = x", "`w`, which is not one of its inputs"),
            ("y = a * x", "does not assign `z`"),
            ("y = x; q = x", "`q`, which is not one of its outputs"),
            ("y = sum(x)", "reduction"),
            ("y = x +", "does not parse"),
        ] {
            let err = k.clone().reference(source).unwrap_err().to_string();
            assert!(err.contains(expected), "{source}: {err}");
        }
        assert!(k.reference("z = x; y = a * x").is_ok(), "outputs in any order");
    }

    #[test]
    fn a_kernel_without_a_reference_or_cpu_function_cannot_be_checked_and_is_refused() {
        let k = Arc::new(RawKernel::new("k", &["x"], &["y"], &[]).unwrap());
        assert!(RawParams::new(k, Shape::Line(4), vec![]).unwrap_err().to_string().contains("nothing to be checked"));
        let k = Arc::new(square());
        assert!(RawParams::new(k, Shape::Line(4), vec![1.0]).unwrap_err().to_string().contains("0 scalar(s)"));
    }

    #[test]
    fn the_check_catches_a_wrong_element_by_its_row_and_column() {
        for kernel in [square(), square().reference("result = matrix * matrix").unwrap()] {
            let params = RawParams::new(Arc::new(kernel), Shape::Grid { width: 7, height: 3 }, vec![]).unwrap();
            let input = Raw::generate(&params, 5).unwrap();
            let expected = Raw::reference(&input).unwrap();
            assert!(Raw::check(&input, &expected, &expected, Precision::Fp32).is_ok());
            let mut wrong = expected.clone();
            wrong[0][9] += 0.01;
            let err = Raw::check(&input, &expected, &wrong, Precision::Fp32).unwrap_err().to_string();
            assert!(err.contains("result[1, 2]") || err.contains("result[9]"), "{err}");
        }
    }

    #[test]
    fn shapes_parse_display_and_refuse_overflow() {
        assert_eq!(Shape::parse("2^10").unwrap(), Shape::Line(1024));
        assert_eq!(Shape::parse("512x256").unwrap(), Shape::Grid { width: 512, height: 256 });
        assert_eq!(Shape::parse("512x256").unwrap().to_string(), "512x256");
        assert!(Shape::parse("lots").unwrap_err().to_string().contains("WIDTHxHEIGHT"));
        assert!(Shape::parse("2^40x2^40").is_err());
        let params = RawParams::new(Arc::new(square()), Shape::Grid { width: 4, height: 4 }, vec![]).unwrap();
        let ladder: Vec<String> = raw_ladder(&params, true).iter().map(|p| p.to_string()).collect();
        assert_eq!(ladder, ["32x32", "128x128", "512x512", "2048x2048"]);
    }

    #[test]
    fn inputs_of_the_wrong_length_are_refused_by_name() {
        let params = RawParams::new(Arc::new(square()), Shape::Line(8), vec![]).unwrap();
        let mut input = Raw::generate(&params, 1).unwrap();
        input.arrays[0].pop();
        assert!(Raw::validate(&input).unwrap_err().to_string().contains("`matrix`"));
    }
}
