//! Expressions on CUDA: CUDA C generated from the program's graph (never from its text: names become `i0`, `o1`,
//! `v7`, numbers their exact bits), compiled by NVRTC through the backend's cache ([`CudaBackend::custom_kernel`]:
//! keyed by a hash of source, options and architecture, so each expression compiles once per process and its
//! compile time is the first call's).
//!
//! An elementwise kernel reads every input four elements at a time (`float4`; the last, partial group element by
//! element), computes them through one inlined function of the element's values (inlined twice, in a loop of two
//! trips, which keeps NVRTC's time down: [`element_copies`]), and writes `float4`s; a grid-stride loop covers any
//! length with a bounded grid. Where the element calls two special functions or more, the kernel is bound by the
//! instructions it issues, and each thread computes eight elements with no loop (`eight_a_thread_source`), the
//! element inlined eight times and the grid covering the array. Where the element calls a special
//! function, whose code NVRTC compiles once per inlined copy, a process's first calls run a kernel of one copy, one
//! element a thread ([`first_call_source`]), which compiles in about half the time, while that kernel compiles on a
//! thread of its own; launches take it once it is ready, and the disk cache keeps it for the next process. A reduction fuses its map into the same loop, combines each
//! block's terms in shared memory into one partial, and the last block to finish combines the partials and applies the
//! post-map, in the same launch. CUDA's math library meets the language's semantics where C does (`fminf` is IEEE minNum, `powf` of a
//! negative base and a fractional exponent is NaN, `rintf` rounds half to even); `sign` is spelled out.

use std::fmt::Write;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, PushKernelArg};
use gpuworthy_core::expr::codegen::{self, Dialect};
use gpuworthy_core::expr::{ArrayView, ExprInput, ExprParams, Expression, Func, Outputs, Program, Reduce, Type};
use gpuworthy_core::{Dtype, Error, Implements, PartOutput, Result, Workload};

use crate::custom::find_custom_kernel;
use crate::pipeline::{OutputFrom, Pipeline, expression_chunks};
use crate::{CudaBackend, CustomKernel, HostMemory, driver_error, launch_config, lock};

/// Threads per block of the generated kernels.
const BLOCK: u32 = 256;

/// The most blocks of a reduction's first pass.
const REDUCE_BLOCKS: u64 = 1024;

/// The most blocks of an elementwise kernel: enough to fill any GPU several times over; the grid-stride loop does
/// the rest.
const MAP_BLOCKS: u64 = 65535;

/// The blocks of an elementwise kernel of `program` over `n` elements of `dtype`: a thread per group of 16 bytes (a
/// `float4`, or eight 16-bit elements; the last one partial), up to [`MAP_BLOCKS`], the grid-stride loop doing the
/// rest; or, for the kernels with no loop (`eight_a_thread_without_a_loop`), a thread per eight elements, as many
/// blocks as that takes (2^31 - 1 blocks of 256 threads would cover 2^42 elements, more than a GPU holds).
fn map_blocks(n: usize, dtype: Dtype, program: &Program) -> u64 {
    let elements = n as u64;
    if eight_a_thread_without_a_loop(program, dtype) {
        return elements.div_ceil(8).div_ceil(u64::from(BLOCK)).max(1);
    }
    let group = Stored(dtype).group() as u64;
    elements.div_ceil(group).div_ceil(u64::from(BLOCK)).clamp(1, MAP_BLOCKS)
}

/// A number as CUDA C: its exact bits, so that no decimal printout rounds it and no text of the user's reaches the
/// kernel.
fn number(value: f32) -> String {
    format!("__uint_as_float({:#010x}u)", value.to_bits())
}

/// CUDA C as the shared lowering writes it ([`codegen`]): CUDA's math library by name, `where` as `?:`, `clamp` as
/// `fminf(fmaxf(...))`, and the helpers of [`HELPERS`] where C's functions differ from the language; with
/// `sixteen_bit`, `exp`, `sin` and `cos` in their storage-sized forms ([`SIXTEEN_BIT_HELPERS`]).
struct CudaC {
    sixteen_bit: bool,
}

impl CudaC {
    /// CUDA's math library for every function, as on `f32` arrays.
    const LIBRARY: CudaC = CudaC { sixteen_bit: false };

    /// The storage-sized form of `func` on 16-bit arrays, and whether it sets the element's `far` flag (an argument
    /// its reduction does not reach).
    fn sixteen_bit_form(func: Func) -> Option<(&'static str, bool)> {
        match func {
            Func::Exp => Some(("gw_exp16", false)),
            Func::Sin => Some(("gw_sin16", true)),
            Func::Cos => Some(("gw_cos16", true)),
            _ => None,
        }
    }

    /// The math library's (or a helper's) name of each function that is a plain call.
    fn function(func: Func) -> &'static str {
        match func {
            Func::Abs => "fabsf",
            Func::Min => "fminf",
            Func::Max => "fmaxf",
            Func::Sqrt => "sqrtf",
            Func::Exp => "expf",
            Func::Exp2 => "exp2f",
            Func::Log => "logf",
            Func::Log2 => "log2f",
            Func::Pow => "gw_pow",
            Func::Sin => "sinf",
            Func::Cos => "cosf",
            Func::Tan => "tanf",
            Func::Tanh => "tanhf",
            Func::Asin => "asinf",
            Func::Acos => "acosf",
            Func::Atan => "atanf",
            Func::Atan2 => "atan2f",
            Func::Floor => "floorf",
            Func::Ceil => "ceilf",
            Func::Round => "rintf",
            Func::Trunc => "truncf",
            Func::Fma => "fmaf",
            Func::Sign => "gw_sign",
            Func::Erf => "erff",
            Func::Expm1 => "expm1f",
            Func::Log1p => "log1pf",
            Func::Sinh => "sinhf",
            Func::Cosh => "coshf",
            Func::Where | Func::Clamp => "",
        }
    }
}

impl Dialect for CudaC {
    fn type_name(&self, ty: Type) -> &'static str {
        if ty == Type::Boolean { "bool" } else { "float" }
    }

    fn number(&self, value: f32) -> String {
        number(value)
    }

    fn input(&self, k: usize) -> String {
        format!("i{k}")
    }

    fn scalar(&self, k: usize) -> String {
        format!("s{k}")
    }

    fn call(&self, func: Func, a: &[String]) -> String {
        match func {
            Func::Where => format!("({} ? {} : {})", a[0], a[1], a[2]),
            Func::Clamp => format!("fminf(fmaxf({}, {}), {})", a[0], a[1], a[2]),
            _ => match CudaC::sixteen_bit_form(func).filter(|_| self.sixteen_bit) {
                Some((name, true)) => format!("{name}({}, far)", a.join(", ")),
                Some((name, false)) => format!("{name}({})", a.join(", ")),
                None => format!("{}({})", CudaC::function(func), a.join(", ")),
            },
        }
    }

    fn declaration(&self, ty: &str, name: &str, value: &str) -> String {
        format!("const {ty} {name} = {value};")
    }
}

/// How a generated kernel reads and writes an array stored as a [`Dtype`]: `f32` elements, four at a time as a
/// `float4`; or 16-bit elements, eight at a time as a `uint4`, so that a thread moves 16 bytes a load either way
/// (four 16-bit elements a thread, 8 bytes a load, left `y = a*x + b` on bf16 at 2996 GB/s on an H200, where f32
/// arrays moved 4188: docs/results/nvidia-h200/half/). Elements are widened to `float`s as they are read and rounded
/// to nearest even as they are written: f16 by the `cvt` instructions, bf16 by `cvt` from sm_80 on and in integer
/// arithmetic before, bit for bit as the CPU rounds; a pair of neighbours is rounded and packed into one word by one
/// instruction (`cvt.rn.bf16x2.f32`, `cvt.rn.f16x2.f32`) from sm_80 on. No header is included: NVRTC's minimal mode
/// has none of `cuda_fp16.h`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stored(Dtype);

impl Stored {
    /// The C type of one element as stored.
    fn element(self) -> &'static str {
        if self.0.is_half() { "unsigned short" } else { "float" }
    }

    /// The helpers the reads and writes call: the widening and rounding of one element, and of a pair of neighbours
    /// into one word ([`Stored::NARROW2`], with the type's `cvt`).
    fn helpers(self) -> String {
        let one = match self.0 {
            Dtype::F32 => return String::new(),
            Dtype::F16 => {
                "static __device__ __forceinline__ float gw_widen(unsigned short h) {\n    \
                 float f;\n    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n    return f;\n}\n\
                 static __device__ __forceinline__ unsigned short gw_narrow(float f) {\n    \
                 unsigned short h;\n    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n    return h;\n}\n"
            }
            Dtype::Bf16 => {
                "static __device__ __forceinline__ float gw_widen(unsigned short h) {\n    \
                 return __uint_as_float((unsigned)h << 16);\n}\n\
                 static __device__ __forceinline__ unsigned short gw_narrow(float f) {\n\
                 #if __CUDA_ARCH__ >= 800\n    \
                 unsigned short h;\n    asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n    return h;\n\
                 #else\n    \
                 const unsigned b = __float_as_uint(f);\n    \
                 return (unsigned short)(isnan(f) ? ((b >> 16) | 0x40u) : ((b + 0x7fffu + ((b >> 16) & 1u)) >> 16));\n\
                 #endif\n}\n"
            }
        };
        let pair = if self.0 == Dtype::F16 { "f16x2" } else { "bf16x2" };
        format!("{one}{}", Self::NARROW2.replace("{pair}", pair))
    }

    /// `gw_narrow2(lo, hi)`: two floats rounded and packed into one word, `lo` in the low half; `{pair}` is the
    /// packed type's `cvt` suffix (`f16x2`, `bf16x2`), from sm_80 on; before, two `gw_narrow`s.
    const NARROW2: &'static str = "static __device__ __forceinline__ unsigned gw_narrow2(float lo, float hi) {\n\
                 #if __CUDA_ARCH__ >= 800\n    \
                 unsigned r;\n    asm(\"cvt.rn.{pair}.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n    return r;\n\
                 #else\n    \
                 return gw_narrow(lo) | ((unsigned)gw_narrow(hi) << 16);\n\
                 #endif\n}\n";

    /// The four `f32` elements at `q` (counted in fours) of array `pointer`, as a `float4`.
    fn load4(self, pointer: &str, q: &str) -> String {
        debug_assert!(!self.0.is_half(), "16-bit arrays are read eight elements at a time");
        format!("reinterpret_cast<const float4*>({pointer})[{q}]")
    }

    /// The statements that read the eight 16-bit elements at `q` (counted in eights) of `pointer`, one `uint4`, into
    /// the floats `{name}_0` to `{name}_7`.
    fn load8(self, pointer: &str, q: &str, name: &str) -> String {
        self.widen8(&format!("reinterpret_cast<const uint4*>({pointer})[{q}]"), name)
    }

    /// As [`Stored::load8`], through the read-only data cache (`__ldg`), for an array no thread writes while the
    /// kernel runs (a reduction's inputs).
    fn load8_read_only(self, pointer: &str, q: &str, name: &str) -> String {
        self.widen8(&format!("__ldg(reinterpret_cast<const uint4*>({pointer}) + ({q}))"), name)
    }

    /// The statements that widen the `uint4` `word` into the floats `{name}_0` to `{name}_7`.
    fn widen8(self, word: &str, name: &str) -> String {
        let mut s = format!("const uint4 {name}_r = {word};\n");
        for (w, word) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                s,
                "{name}_{} = gw_widen({name}_r.{word} & 0xffffu); {name}_{} = gw_widen({name}_r.{word} >> 16);",
                2 * w,
                2 * w + 1
            );
        }
        s
    }

    /// Element `i` of array `pointer`, as a `float`.
    fn load(self, pointer: &str, i: &str) -> String {
        if self.0.is_half() { format!("gw_widen({pointer}[{i}])") } else { format!("{pointer}[{i}]") }
    }

    /// The statement that writes `value` (a `float4`) as the four `f32` elements at `q` of `pointer`.
    fn store4(self, pointer: &str, q: &str, value: &str) -> String {
        debug_assert!(!self.0.is_half(), "16-bit arrays are written eight elements at a time");
        format!("reinterpret_cast<float4*>({pointer})[{q}] = {value};")
    }

    /// The statement that writes the floats `{name}_0` to `{name}_7` as the eight 16-bit elements at `q` of `pointer`,
    /// one `uint4`.
    fn store8(self, pointer: &str, q: &str, name: &str) -> String {
        let pairs: Vec<String> =
            (0..4).map(|w| format!("gw_narrow2({name}_{}, {name}_{})", 2 * w, 2 * w + 1)).collect();
        format!("reinterpret_cast<uint4*>({pointer})[{q}] = make_uint4({});", pairs.join(", "))
    }

    /// `value` (a `float`) as stored.
    fn narrow(self, value: &str) -> String {
        if self.0.is_half() { format!("gw_narrow({value})") } else { value.to_owned() }
    }

    /// Elements one thread reads at a time: 16 bytes, a `float4` or a `uint4` of eight 16-bit elements.
    fn group(self) -> usize {
        16 / self.0.bytes()
    }
}

fn statements(program: &Program, roots: &[usize]) -> String {
    codegen::statements(&CudaC::LIBRARY, program, &program.reached(roots))
}

/// The storage-sized forms of `exp`, `sin` and `cos` that kernels on 16-bit arrays call, whose results are rounded to
/// 8 bits (bf16) or 11 (f16): CUDA's `expf` and `sinf` are exact to a few units in the last place of an `f32`, and
/// their range reductions and polynomials cost about 40 instructions an element, which bound the kernel on an H200
/// (`y = exp(-x*x) * sin(3*x)` on bf16 arrays took 103 µs against a copy's 66 at 2^26). Here `exp` is the
/// special-function unit's `2^(x log2 e)` (`__expf`: 2 + 1.173|x| ulp). `sin` reduces the angle by whole turns (2 pi
/// in three parts, the first times any multiple up to the reach exact, so that the reduced angle is exact up to the
/// last part's rounding, as the WGSL kernels reduce it; `k` rounded by adding 1.5 x 2^23, which keeps the sign of a
/// zero argument where `rintf` would not), then takes `sin.approx` (about 2^-21 absolute) on
/// [-pi, pi], or `r` itself below 1/64 in magnitude, where an absolute error would be a large relative one and the
/// cubic term is under 2^-14 of `r`. `cos` reduces by half turns from pi/2 (three parts of pi), so that its zeros
/// fall where `r` is small, and takes the sine of `r` the same way, the sign from the turns' parity. Near the zeros
/// of `sin` at odd multiples of pi the error is the unit's absolute one, within the function table's bound; there
/// only, half turns would keep it relative, at two integer operations an element for the sign. On 2^26 bf16 elements
/// uniform in [-1, 1) the lab's kernel of these forms took 68.8 µs against 74.4 for the half-turn sine with the cubic
/// below 1/16 and 67.1 for a copy (docs/results/nvidia-h200/half/sine-lab.txt); the half-turn forms took 73.7 µs
/// against the math library's 102.7 (docs/results/nvidia-h200/half/functions-lab.txt). An argument past the
/// reduction's reach (2^18), or not finite, sets `far`, and the kernel recomputes that thread's elements by the math
/// library (`gw_element_far`): the bounds of the function table's `cuda_sixteen_bit` column hold for every argument.
const SIXTEEN_BIT_HELPERS: &str = "static __device__ __forceinline__ float gw_exp16(float x) { return __expf(x); }\n\
// sin x = sin(x - 2 pi k), k = rint(x / (2 pi)).\n\
static __device__ __forceinline__ float gw_sin16(float x, bool& far) {\n    \
    far |= !(fabsf(x) <= 262144.0f);\n    \
    const float t = fmaf(x, 0.159154943f, 12582912.0f);\n    \
    const float k = t - 12582912.0f;\n    \
    const float r = fmaf(-k, 3.019916050561733e-7f, fmaf(-k, 0.0019350051879882812f, fmaf(-k, 6.28125f, x)));\n    \
    return fabsf(r) < 0.015625f ? r : __sinf(r);\n}\n\
// cos x = (-1)^(m + 1) sin(x - (m + 1/2) pi), m = rint(x / pi - 1/2).\n\
static __device__ __forceinline__ float gw_cos16(float x, bool& far) {\n    \
    far |= !(fabsf(x) <= 262144.0f);\n    \
    const float t = fmaf(x, 0.318309886f, -0.5f) + 12582912.0f;\n    \
    const float j = (t - 12582912.0f) + 0.5f;\n    \
    const float r = fmaf(-j, 1.50995799e-7f, fmaf(-j, 9.67502594e-4f, fmaf(-j, 3.140625f, x)));\n    \
    const float v = fabsf(r) < 0.015625f ? r : __sinf(r);\n    \
    return __int_as_float(__float_as_int(v) ^ (~__float_as_int(t) << 31));\n}\n";

/// The statement that computes one element by the math library (`gw_element_far`, of [`elementwise_parts`]) from the
/// values `values` (each input's, then each scalar) into the variables `outputs`.
fn far_call(values: &[String], outputs: &[String]) -> String {
    let assign: Vec<String> = outputs.iter().enumerate().map(|(j, y)| format!("{y} = r.o{j};")).collect();
    format!("{{ const gw_far_outputs r = gw_element_far({}); {} }}", values.join(", "), assign.join(" "))
}

/// The element function's statements in the storage-sized dialect, where they differ from the math library's: the
/// program calls `exp`, `sin` or `cos` and its arrays are 16-bit.
fn sixteen_bit_statements(program: &Program, stored: Stored, roots: &[usize]) -> Option<String> {
    if !stored.0.is_half() || program.reduction.is_some() {
        return None;
    }
    let sized = codegen::statements(&CudaC { sixteen_bit: true }, program, &program.reached(roots));
    (sized != statements(program, roots)).then_some(sized)
}

const HELPERS: &str = "static __device__ __forceinline__ float gw_sign(float x) {\n    \
                       return (isnan(x) || x == 0.0f) ? x : (x > 0.0f ? 1.0f : -1.0f);\n}\n\
                       // A negative base (-inf too) to a finite fractional power is NaN, where C's powf gives +inf for -inf.\n\
                       static __device__ __forceinline__ float gw_pow(float x, float y) {\n    \
                       return (x < 0.0f && isfinite(y) && y != truncf(y)) ? __uint_as_float(0x7fc00000u) : powf(x, y);\n}\n";

/// The parameters of the element function: each input's value, then each scalar.
fn element_parameters(program: &Program) -> Vec<String> {
    (0..program.inputs.len())
        .map(|k| format!("float i{k}"))
        .chain((0..program.scalars.len()).map(|k| format!("float s{k}")))
        .collect()
}

/// How many times an elementwise kernel inlines the element function: eight (one per element of a thread's eight,
/// no loop: `eight_a_thread_without_a_loop`) where one element calls two special functions or more, two otherwise.
///
/// NVRTC's time grows with every inlined copy, and two copies (a loop of two trips over a `float4`'s pairs, not
/// unrolled) compile faster than four; the kernels run as fast, or faster, except where the element's own chain is
/// long enough to bound the kernel on an H200: there two chains in flight a thread instead of four slowed the
/// expressions that call two special functions, and not those that call one or none. On the H100, which those
/// kernels do not bound, two copies cost nothing at all (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). Such a kernel is bound by the instructions it
/// issues, and eight elements a thread with no loop (Triton's shape) issue fewer an element than four in a
/// grid-stride loop with 64-bit indices: 142.1 µs against 152.0 at 2^26 on an H200 in the lab, and in the generator
/// 133-134 µs against 141 (docs/results/nvidia-h200/special-functions/README.md). The extra copies compile on a thread of their own while
/// the first calls run a kernel of one copy ([`first_call_source`]).
pub fn element_copies(program: &Program) -> usize {
    if program.cost_per_element().special >= 2 { 8 } else { 2 }
}

/// Whether `program`'s elementwise kernel on `dtype` arrays has no loop: each thread computes the eight elements at
/// eight times its index in the grid (two `float4`s of each input), and the grid covers the array ([`map_blocks`]).
/// So it is for `f32` arrays where the element is inlined eight times ([`element_copies`]); 16-bit arrays are read
/// eight elements at a time in every kernel, which keeps their grid-stride loop.
fn eight_a_thread_without_a_loop(program: &Program, dtype: Dtype) -> bool {
    program.reduction.is_none() && !dtype.is_half() && element_copies(program) == 8
}

/// What both shapes of an elementwise kernel share: the helpers and the element function, the kernel's parameters, and
/// where each output is written (its own array, or the input it overwrites).
struct Elementwise {
    s: String,
    kernel_parameters: Vec<String>,
    targets: Vec<String>,
    /// Whether the element is computed by `gw_element_sized` with its `far` flag, `gw_element_far` (the math
    /// library's) recomputing a thread's elements where it is set ([`sixteen_bit_statements`]).
    sized: bool,
}

fn elementwise_parts(program: &Program, stored: Stored) -> Elementwise {
    let mut s = String::from(HELPERS);
    s.push_str(&stored.helpers());
    let element = stored.element();
    let mut parameters = element_parameters(program);
    parameters.extend((0..program.outputs.len()).map(|j| format!("float& o{j}")));
    let _ = writeln!(s, "static __device__ __forceinline__ void gw_element({}) {{", parameters.join(", "));
    let roots: Vec<usize> = program.outputs.iter().map(|o| o.node).collect();
    s.push_str(&statements(program, &roots));
    let assign_outputs = |s: &mut String| {
        for (j, output) in program.outputs.iter().enumerate() {
            let _ = writeln!(s, "    o{j} = v{};", output.node);
        }
        s.push_str("}\n");
    };
    assign_outputs(&mut s);
    let sized = sixteen_bit_statements(program, stored, &roots);
    if let Some(sized) = &sized {
        s.push_str(SIXTEEN_BIT_HELPERS);
        let _ = writeln!(
            s,
            "static __device__ __forceinline__ void gw_element_sized({}, bool& far) {{",
            parameters.join(", ")
        );
        s.push_str(sized);
        assign_outputs(&mut s);
        // The math library's element, called (not inlined) where an argument is beyond the sized forms' reach. Its
        // arguments and results pass by value: a reference to a caller's variable across a call that is not inlined
        // keeps that variable in local memory on the common path too (`exp(-x*x) * sin(3*x)` on bf16 arrays at 2^26
        // on an H200, 117.5 µs against 73.7 in the lab: docs/results/nvidia-h200/half/functions-lab.txt).
        let values: Vec<&String> = parameters.iter().filter(|p| !p.contains('&')).collect();
        let names: Vec<&str> = values.iter().map(|p| p.rsplit(' ').next().unwrap()).collect();
        let outputs: Vec<String> = (0..program.outputs.len()).map(|j| format!("r.o{j}")).collect();
        let fields: Vec<String> = (0..program.outputs.len()).map(|j| format!("float o{j};")).collect();
        let _ = writeln!(
            s,
            "struct gw_far_outputs {{ {} }};\n\
             static __device__ __noinline__ gw_far_outputs gw_element_far({}) {{\n    \
             gw_far_outputs r;\n    gw_element({});\n    return r;\n}}",
            fields.join(" "),
            values.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", "),
            names.iter().copied().chain(outputs.iter().map(String::as_str)).collect::<Vec<_>>().join(", ")
        );
    }
    let in_place = program.outputs.iter().any(|o| program.overwrites(o).is_some());
    let restrict = if in_place { "" } else { " __restrict__" };
    let written: Vec<bool> = program.overwritten_inputs();
    let mut kernel_parameters: Vec<String> =
        written
            .iter()
            .enumerate()
            .map(|(k, w)| {
                if *w { format!("{element}*{restrict} p_in{k}") } else { format!("const {element}*{restrict} p_in{k}") }
            })
            .collect();
    let targets: Vec<String> = program
        .outputs
        .iter()
        .enumerate()
        .map(|(j, o)| match program.overwrites(o) {
            Some(k) => format!("p_in{k}"),
            None => {
                kernel_parameters.push(format!("{element}*{restrict} p_out{j}"));
                format!("p_out{j}")
            }
        })
        .collect();
    kernel_parameters.extend((0..program.scalars.len()).map(|k| format!("float s{k}")));
    kernel_parameters.push("long long n".to_owned());
    Elementwise { s, kernel_parameters, targets, sized: sized.is_some() }
}

/// Whether an elementwise program's first calls in a process run a kernel that NVRTC compiles faster
/// ([`first_call_source`]) while [`elementwise_source`]'s kernel compiles on a thread of its own: where the element
/// calls a special function, whose code NVRTC compiles once per inlined copy.
pub fn compiles_a_first_call_kernel(program: &Program) -> bool {
    program.reduction.is_none() && program.cost_per_element().special >= 1
}

/// The CUDA C of an elementwise program's first-call kernel, with the same name and parameters as
/// [`elementwise_source`]'s: one element a thread in a grid-stride loop, the element function inlined once, so that
/// NVRTC compiles it in the least time (measured: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so). Its
/// loads are not vectorised, which costs it about a fifth of the memory bandwidth; it only runs until the faster kernel
/// is ready.
pub fn first_call_source(program: &Program, dtype: Dtype) -> String {
    let stored = Stored(dtype);
    let Elementwise { mut s, kernel_parameters, targets, sized } = elementwise_parts(program, stored);
    let _ = writeln!(s, "extern \"C\" __global__ void expr_map({}) {{", kernel_parameters.join(", "));
    s.push_str("    const long long stride = (long long)gridDim.x * blockDim.x;\n");
    s.push_str("    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {\n");
    one_element(&mut s, program, stored, &targets, sized, "        ");
    s.push_str("    }\n}\n");
    s
}

/// The statements that compute element `i` by one inlined copy of the element function (the storage-sized one, with
/// the math library's where an argument is past its reach, where `sized`) and write each output, each line indented
/// by `indent`.
fn one_element(s: &mut String, program: &Program, stored: Stored, targets: &[String], sized: bool, indent: &str) {
    for j in 0..program.outputs.len() {
        let _ = writeln!(s, "{indent}float y{j};");
    }
    let args: Vec<String> = (0..program.inputs.len())
        .map(|k| stored.load(&format!("p_in{k}"), "i"))
        .chain((0..program.scalars.len()).map(|k| format!("s{k}")))
        .chain((0..program.outputs.len()).map(|j| format!("y{j}")))
        .collect();
    if sized {
        let _ = writeln!(s, "{indent}bool far = false;\n{indent}gw_element_sized({}, far);", args.join(", "));
        let values = &args[..program.inputs.len() + program.scalars.len()];
        let outputs: Vec<String> = (0..program.outputs.len()).map(|j| format!("y{j}")).collect();
        let _ = writeln!(s, "{indent}if (far) {}", far_call(values, &outputs));
    } else {
        let _ = writeln!(s, "{indent}gw_element({});", args.join(", "));
    }
    for (j, target) in targets.iter().enumerate() {
        let _ = writeln!(s, "{indent}{target}[i] = {};", stored.narrow(&format!("y{j}")));
    }
}

/// The CUDA C of an elementwise program: kernel `expr_map(inputs..., outputs..., scalars..., n)`; an input an output
/// overwrites is written in place.
///
/// The element function is inlined [`element_copies`] times, in one grid-stride loop over `float4`s that also takes
/// the last, partial `float4` element by element: a separate loop for the tail would be one more copy for NVRTC to
/// compile (measured: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so); where it is inlined eight times,
/// with no loop (`eight_a_thread_source`). Arrays of 16-bit elements are read and written eight elements at a time,
/// in 16 bytes (`half_elementwise_source`).
pub fn elementwise_source(program: &Program, dtype: Dtype) -> String {
    let stored = Stored(dtype);
    if dtype.is_half() {
        return half_elementwise_source(program, stored);
    }
    if eight_a_thread_without_a_loop(program, dtype) {
        return eight_a_thread_source(program, stored);
    }
    let Elementwise { mut s, kernel_parameters, targets, .. } = elementwise_parts(program, stored);
    let _ = writeln!(s, "extern \"C\" __global__ void expr_map({}) {{", kernel_parameters.join(", "));
    s.push_str("    const long long stride = (long long)gridDim.x * blockDim.x;\n");
    s.push_str("    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n");
    s.push_str("    for (long long q = first; q < (n + 3) / 4; q += stride) {\n");
    s.push_str("        const long long i = 4 * q;\n        const bool whole = i + 4 <= n;\n");
    for k in 0..program.inputs.len() {
        let _ = writeln!(s, "        float4 x{k};");
    }
    s.push_str("        if (whole) {\n");
    for k in 0..program.inputs.len() {
        let _ = writeln!(s, "            x{k} = {};", stored.load4(&format!("p_in{k}"), "q"));
    }
    s.push_str("        } else {\n");
    for k in 0..program.inputs.len() {
        let p = format!("p_in{k}");
        let _ = writeln!(
            s,
            "            x{k} = make_float4({}, i + 1 < n ? {} : 0.0f, i + 2 < n ? {} : 0.0f, 0.0f);",
            stored.load(&p, "i"),
            stored.load(&p, "i + 1"),
            stored.load(&p, "i + 2")
        );
    }
    s.push_str("        }\n");
    for j in 0..program.outputs.len() {
        let _ = writeln!(s, "        float4 y{j} = make_float4(0.0f, 0.0f, 0.0f, 0.0f);");
    }
    // A call of the element function on each input's value `input(k)`, the scalars, into each output's `output(j)`.
    let call = |input: &dyn Fn(usize) -> String, output: &dyn Fn(usize) -> String| {
        let args: Vec<String> = (0..program.inputs.len())
            .map(input)
            .chain((0..program.scalars.len()).map(|k| format!("s{k}")))
            .chain((0..program.outputs.len()).map(output))
            .collect();
        format!("gw_element({});", args.join(", "))
    };
    // Two elements a trip, two trips, not unrolled: two copies of the element function, whose chains overlap.
    s.push_str("#pragma unroll 1\n        for (int half = 0; half < 2; ++half) {\n");
    for j in 0..program.outputs.len() {
        let _ = writeln!(s, "            float even{j}, odd{j};");
    }
    for (slot, (low, high)) in [("even", ("x", "z")), ("odd", ("y", "w"))] {
        let element = call(&|k| format!("half == 0 ? x{k}.{low} : x{k}.{high}"), &|j| format!("{slot}{j}"));
        let _ = writeln!(s, "            {element}");
    }
    for j in 0..program.outputs.len() {
        let _ = writeln!(
            s,
            "            if (half == 0) {{ y{j}.x = even{j}; y{j}.y = odd{j}; }} else {{ y{j}.z = even{j}; y{j}.w = odd{j}; }}"
        );
    }
    s.push_str("        }\n        if (whole) {\n");
    for (j, target) in targets.iter().enumerate() {
        let _ = writeln!(s, "            {}", stored.store4(target, "q", &format!("y{j}")));
    }
    s.push_str("        } else {\n");
    for (j, target) in targets.iter().enumerate() {
        let _ = writeln!(
            s,
            "            {target}[i] = {};\n            if (i + 1 < n) {target}[i + 1] = {};\n            if (i + 2 < n) {target}[i + 2] = {};",
            stored.narrow(&format!("y{j}.x")),
            stored.narrow(&format!("y{j}.y")),
            stored.narrow(&format!("y{j}.z"))
        );
    }
    s.push_str("        }\n    }\n}\n");
    s
}

/// `{name}_0, ..., {name}_7`: the eight elements of a thread's group, one variable each.
fn eight_names(name: &str) -> String {
    (0..8).map(|e| format!("{name}_{e}")).collect::<Vec<_>>().join(", ")
}

/// Where element `e` (0 to 7) of a thread's group lies: eight in a row from `i` ([`in_a_row`]), or four from `ia` and
/// four from `ib` ([`in_two_halves`]), as a CUDA expression.
type GroupIndex = fn(usize) -> String;

/// A group of eight elements in a row, from `i`.
fn in_a_row(e: usize) -> String {
    format!("i + {e}")
}

/// A group of two `float4`s, one in each half of the array: elements `ia` to `ia + 3` and `ib` to `ib + 3`.
fn in_two_halves(e: usize) -> String {
    if e < 4 { format!("ia + {e}") } else { format!("ib + {}", e - 4) }
}

/// The statements that read the last, partial group of eight elements (placed by `index`) element by element, zeros
/// past `n`, into `x{k}_0` to `x{k}_7`, each line indented by `indent`.
fn partial_group_loads(s: &mut String, program: &Program, stored: Stored, indent: &str, index: GroupIndex) {
    for k in 0..program.inputs.len() {
        for e in 0..8 {
            let at = index(e);
            let load = stored.load(&format!("p_in{k}"), &at);
            let _ = writeln!(s, "{indent}x{k}_{e} = {at} < n ? {load} : 0.0f;");
        }
    }
}

/// The statements that write the last, partial group's `y{j}_0` to `y{j}_6` (placed by `index`) element by element
/// below `n` (a partial group has seven elements at most), each line indented by `indent`.
fn partial_group_stores(s: &mut String, targets: &[String], stored: Stored, indent: &str, index: GroupIndex) {
    for (j, target) in targets.iter().enumerate() {
        for e in 0..7 {
            let value = stored.narrow(&format!("y{j}_{e}"));
            let at = index(e);
            let _ = writeln!(s, "{indent}if ({at} < n) {target}[{at}] = {value};");
        }
    }
}

/// [`elementwise_source`] where the element is inlined eight times, on `f32` arrays: no loop; of the array's
/// `float4`s (the last one partial), thread `q` of the grid reads the `q`-th of each half of each input before any is
/// used, computes their eight elements through eight copies of the element function and writes the same two
/// `float4`s of each output; the thread whose second `float4` is partial, or past the end, reads and writes its
/// elements one by one, and threads past the first half return. Index arithmetic is done once a thread: a kernel
/// bound by the instructions it issues, as one that calls two special functions is on an H200, spends none on a
/// loop (docs/results/nvidia-h200/special-functions/README.md). One `float4` in each half, rather than two side by
/// side, took `exp(-x*x) * sin(3*x)` at 2^26 from 133.3-134.6 µs to 129.7-131.0 in the lab on an H200, beside a copy's
/// 128.6-130.6 (docs/results/nvidia-h200/special-functions/kernel-shapes-lab-batches.txt): each of a warp's loads
/// then reads 512 bytes in a row, where with two side by side each load spans 1024 bytes and uses half of them. With
/// 64-bit indices the generated kernel lost that lead (133.4 µs, 130.5 with 32-bit ones:
/// docs/results/nvidia-h200/special-functions/kernel-shapes-lab-generated-halves.txt), so it takes 32-bit indices
/// wherever they reach and 64-bit ones past that, in a branch every thread of a launch takes alike.
fn eight_a_thread_source(program: &Program, stored: Stored) -> String {
    let Elementwise { mut s, kernel_parameters, targets, .. } = elementwise_parts(program, stored);
    let _ = writeln!(s, "extern \"C\" __global__ void expr_map({}) {{", kernel_parameters.join(", "));
    s.push_str("    const long long halves = ((n + 3) / 4 + 1) / 2;\n");
    // 32-bit indices wherever they reach (half the array's float4s below 2^31, 2^34 elements): 64-bit ones cost an
    // instruction-bound kernel its lead (130.5 µs against 133.4 in the lab).
    s.push_str("    if (halves <= 0x7fffffffLL) {\n");
    eight_a_thread_body(&mut s, program, stored, &targets, "unsigned");
    s.push_str("    } else {\n");
    eight_a_thread_body(&mut s, program, stored, &targets, "long long");
    s.push_str("    }\n}\n");
    s
}

/// The body of [`eight_a_thread_source`]'s kernel with indices of the C type `index` (`unsigned` or `long long`),
/// indented for its branch. A `float4` is whole where its index is below `n / 4`; the partial thread's element
/// indices (`ia`, `ib`) are 64-bit.
fn eight_a_thread_body(s: &mut String, program: &Program, stored: Stored, targets: &[String], index: &str) {
    let _ = writeln!(s, "        const {index} q = ({index})blockIdx.x * blockDim.x + threadIdx.x;");
    let _ = writeln!(s, "        const {index} half = ({index})halves;\n        if (q >= half) return;");
    let _ = writeln!(s, "        const bool whole = q + half < ({index})(n / 4);");
    let partial_indices = "            const long long ia = 4 * (long long)q;\n            \
                           const long long ib = 4 * ((long long)q + half);\n";
    for k in 0..program.inputs.len() {
        let _ = writeln!(s, "        float {};", eight_names(&format!("x{k}")));
    }
    s.push_str("        if (whole) {\n");
    for k in 0..program.inputs.len() {
        let pointer = format!("p_in{k}");
        for (half, first) in [("a", "q"), ("b", "q + half")] {
            let _ = writeln!(s, "            const float4 x{k}{half} = {};", stored.load4(&pointer, first));
        }
        let lanes: Vec<String> = ["a", "b"]
            .iter()
            .flat_map(|half| ["x", "y", "z", "w"].iter().map(move |lane| format!("x{k}{half}.{lane}")))
            .enumerate()
            .map(|(e, value)| format!("x{k}_{e} = {value};"))
            .collect();
        let _ = writeln!(s, "            {}", lanes.join(" "));
    }
    s.push_str("        } else {\n");
    s.push_str(partial_indices);
    partial_group_loads(s, program, stored, "            ", in_two_halves);
    s.push_str("        }\n");
    for j in 0..program.outputs.len() {
        let _ = writeln!(s, "        float {};", eight_names(&format!("y{j}")));
    }
    for e in 0..8 {
        let args: Vec<String> = (0..program.inputs.len())
            .map(|k| format!("x{k}_{e}"))
            .chain((0..program.scalars.len()).map(|k| format!("s{k}")))
            .chain((0..program.outputs.len()).map(|j| format!("y{j}_{e}")))
            .collect();
        let _ = writeln!(s, "        gw_element({});", args.join(", "));
    }
    s.push_str("        if (whole) {\n");
    for (j, target) in targets.iter().enumerate() {
        for (half, first, lanes) in [("a", "q", 0..4), ("b", "q + half", 4..8)] {
            let values: Vec<String> = lanes.map(|e| format!("y{j}_{e}")).collect();
            let _ = writeln!(s, "            const float4 y{j}{half} = make_float4({});", values.join(", "));
            let _ = writeln!(s, "            {}", stored.store4(target, first, &format!("y{j}{half}")));
        }
    }
    s.push_str("        } else {\n");
    s.push_str(partial_indices);
    partial_group_stores(s, targets, stored, "            ", in_two_halves);
    s.push_str("        }\n");
}

/// [`elementwise_source`] on 16-bit arrays: eight elements a thread, one `uint4` of each input read before any is
/// used and one of each output written, the element function inlined [`element_copies`] times in a loop over the
/// eight (not unrolled, each trip's elements chosen by selects, so that they stay in registers); the last, partial
/// group element by element (with the storage-sized functions, before the loop, by the grid's first thread).
fn half_elementwise_source(program: &Program, stored: Stored) -> String {
    let Elementwise { mut s, kernel_parameters, targets, sized } = elementwise_parts(program, stored);
    // Eight copies, no loop, where no special function makes NVRTC's time grow with them: the loop's selects cost a
    // cheap element as much as its arithmetic.
    let copies = if program.cost_per_element().special == 0 { 8 } else { element_copies(program) };
    let trips = 8 / copies;
    let _ = writeln!(s, "extern \"C\" __global__ void expr_map({}) {{", kernel_parameters.join(", "));
    s.push_str("    const long long stride = (long long)gridDim.x * blockDim.x;\n");
    s.push_str("    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n");
    // With the storage-sized functions the loop takes whole groups only, and the last, partial one goes element by
    // element before it, in the grid's first thread. Code for that group in the loop or after it costs such a kernel
    // registers, and so occupancy; before the loop it costs none: `exp(-x*x) * sin(3*x)` on bf16 arrays takes 36
    // registers with the group's branch in the loop, 40 with the group after the loop (however little that code
    // does), 32 with it before the loop or with no code for it. At 2^26 on an H200 in the lab, 78.5 µs after the loop,
    // 74.5 before it and 74.1 with no code for it, beside a copy's 67.0
    // (docs/results/nvidia-h200/half/kernel-shapes-lab-4.txt).
    if sized {
        s.push_str("    if (first == 0) {\n#pragma unroll 1\n");
        s.push_str("        for (long long i = n / 8 * 8; i < n; ++i) {\n");
        one_element(&mut s, program, stored, &targets, true, "            ");
        s.push_str("        }\n    }\n");
        s.push_str("    for (long long q = first; q < n / 8; q += stride) {\n");
    } else {
        s.push_str("    for (long long q = first; q < (n + 7) / 8; q += stride) {\n");
        s.push_str("        const long long i = 8 * q;\n        const bool whole = i + 8 <= n;\n");
    }
    for k in 0..program.inputs.len() {
        let _ = writeln!(s, "        float {};", eight_names(&format!("x{k}")));
    }
    // Each input's group of eight, one `uint4`, each line indented by `indent`.
    let whole_group_loads = |s: &mut String, indent: &str| {
        for k in 0..program.inputs.len() {
            for line in stored.load8(&format!("p_in{k}"), "q", &format!("x{k}")).lines() {
                let _ = writeln!(s, "{indent}{line}");
            }
        }
    };
    if sized {
        whole_group_loads(&mut s, "        ");
    } else {
        s.push_str("        if (whole) {\n");
        whole_group_loads(&mut s, "            ");
        s.push_str("        } else {\n");
        partial_group_loads(&mut s, program, stored, "            ", in_a_row);
        s.push_str("        }\n");
    }
    for j in 0..program.outputs.len() {
        let _ = writeln!(s, "        float {};", eight_names(&format!("y{j}")));
    }
    // Element `copy` of trip `t`: the selects that pick it from the eight without indexing an array.
    let pick = |name: String, copy: usize| -> String {
        let mut chosen = format!("{name}_{}", (trips - 1) * copies + copy);
        for t in (0..trips - 1).rev() {
            chosen = format!("(t == {t} ? {name}_{} : {chosen})", t * copies + copy);
        }
        chosen
    };
    if sized {
        s.push_str("        bool far = false;\n");
    }
    s.push_str("#pragma unroll 1\n");
    let _ = writeln!(s, "        for (int t = 0; t < {trips}; ++t) {{");
    debug_assert!(copies * trips == 8);
    for j in 0..program.outputs.len() {
        let copies: Vec<String> = (0..copies).map(|c| format!("o{j}_{c}")).collect();
        let _ = writeln!(s, "            float {};", copies.join(", "));
    }
    for copy in 0..copies {
        let args: Vec<String> = (0..program.inputs.len())
            .map(|k| pick(format!("x{k}"), copy))
            .chain((0..program.scalars.len()).map(|k| format!("s{k}")))
            .chain((0..program.outputs.len()).map(|j| format!("o{j}_{copy}")))
            .collect();
        if sized {
            let _ = writeln!(s, "            gw_element_sized({}, far);", args.join(", "));
        } else {
            let _ = writeln!(s, "            gw_element({});", args.join(", "));
        }
    }
    for t in 0..trips {
        let assign: Vec<String> = (0..program.outputs.len())
            .flat_map(|j| (0..copies).map(move |c| format!("y{j}_{} = o{j}_{c};", t * copies + c)))
            .collect();
        let _ = writeln!(s, "            if (t == {t}) {{ {} }}", assign.join(" "));
    }
    s.push_str("        }\n");
    if sized {
        // A thread with an argument past the sized forms' reach recomputes its eight by the math library.
        s.push_str("        if (far) {\n");
        for e in 0..8 {
            let values: Vec<String> = (0..program.inputs.len())
                .map(|k| format!("x{k}_{e}"))
                .chain((0..program.scalars.len()).map(|k| format!("s{k}")))
                .collect();
            let outputs: Vec<String> = (0..program.outputs.len()).map(|j| format!("y{j}_{e}")).collect();
            let _ = writeln!(s, "            {}", far_call(&values, &outputs));
        }
        s.push_str("        }\n");
        for (j, target) in targets.iter().enumerate() {
            let _ = writeln!(s, "        {}", stored.store8(target, "q", &format!("y{j}")));
        }
        s.push_str("    }\n}\n");
        return s;
    }
    s.push_str("        if (whole) {\n");
    for (j, target) in targets.iter().enumerate() {
        let _ = writeln!(s, "            {}", stored.store8(target, "q", &format!("y{j}")));
    }
    s.push_str("        } else {\n");
    partial_group_stores(&mut s, &targets, stored, "            ", in_a_row);
    s.push_str("        }\n    }\n}\n");
    s
}

fn join(kind: Reduce, a: &str, b: &str) -> String {
    match kind {
        Reduce::Sum => format!("{a} + {b}"),
        Reduce::Prod => format!("{a} * {b}"),
        Reduce::Min => format!("((isnan({a}) || isnan({b})) ? __uint_as_float(0x7fc00000u) : fminf({a}, {b}))"),
        Reduce::Max => format!("((isnan({a}) || isnan({b})) ? __uint_as_float(0x7fc00000u) : fmaxf({a}, {b}))"),
    }
}

/// The `vec4`-sized loads (a `float4`, or eight 16-bit elements in a `uint4`) of all inputs together a reduction's
/// thread issues per trip of its main loop before it uses any: the memory system reaches its bandwidth only with many
/// bytes in flight, and the loop's running value would otherwise wait on each load in turn.
const REDUCE_LOADS_IN_FLIGHT: usize = 4;

/// A reduction's blocks per multiprocessor. With [`REDUCE_LOADS_IN_FLIGHT`], four blocks of 256 threads an SM
/// streamed `s = sum(x*x)` at 2^26 on an H200 in 64.8 µs, against 65.1-65.5 µs with three, six or 1024 blocks, and
/// `torch.compile`'s 65.2 µs in the same run (docs/results/nvidia-h200/special-functions/reduction-lab.txt).
const REDUCE_BLOCKS_PER_SM: u64 = 4;

/// The statements combining every thread's `acc` of a block into `shared_values[0]`: each warp combines its 32 values
/// with shuffles, in registers; its first lane publishes the warp's value, and the first warp combines those. Two
/// barriers where a tree in shared memory takes eight.
fn block_combine(kind: Reduce) -> String {
    let identity = number(kind.identity());
    let shuffle = format!(
        "for (int offset = 16; offset > 0; offset /= 2) {{ const float other = __shfl_down_sync(0xffffffffu, acc, offset); acc = {}; }}",
        join(kind, "acc", "other")
    );
    format!(
        "    {shuffle}\n    if ((threadIdx.x & 31u) == 0) shared_values[threadIdx.x / 32] = acc;\n    __syncthreads();\n    \
         if (threadIdx.x < 32) {{\n        acc = threadIdx.x < {warps} ? shared_values[threadIdx.x] : {identity};\n        \
         {shuffle}\n        if (threadIdx.x == 0) shared_values[0] = acc;\n    }}\n    __syncthreads();\n",
        warps = BLOCK / 32
    )
}

/// The CUDA C of a reduction: one kernel, `expr_reduce(inputs..., partials, scalars..., n)`. Each thread takes
/// grid-stride groups of 16 bytes of each input (four `f32` or eight 16-bit elements), [`REDUCE_LOADS_IN_FLIGHT`] loads
/// a trip issued before any is used, and combines a group's terms in pairs, then pairs of pairs, before they join its
/// running value; each block combines its threads' values with warp shuffles ([`block_combine`]) into one partial;
/// the last block to finish (counted by an atomic counter after the partials, which it sets back to zero) combines the
/// partials in a fixed order, applies the post-map, and writes the result at `partials[gridDim.x]`. One launch
/// instead of two, which saves a second kernel's launch (measured:
/// docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so).
/// The loads in flight and the shuffles took `s = sum(x*x)` at 2^26 on an H200 from 66.0 µs to 64.8 µs, past
/// `torch.compile`'s 65.2 (docs/results/nvidia-h200/special-functions/reduction-lab.txt).
pub fn reduction_source(program: &Program, dtype: Dtype) -> String {
    let stored = Stored(dtype);
    let reduction = program.reduction.as_ref().expect("a reduction program");
    let kind = reduction.kind;
    let identity = number(kind.identity());
    let mut s = String::from(HELPERS);
    s.push_str(&stored.helpers());
    let _ =
        writeln!(s, "static __device__ __forceinline__ float gw_term({}) {{", element_parameters(program).join(", "));
    s.push_str(&statements(program, &[reduction.body]));
    let _ = writeln!(s, "    return v{};\n}}", reduction.body);
    let scalar_args: Vec<String> = (0..program.scalars.len()).map(|k| format!("s{k}")).collect();
    let combine = block_combine(kind);
    let mut parameters: Vec<String> =
        (0..program.inputs.len()).map(|k| format!("const {}* __restrict__ p_in{k}", stored.element())).collect();
    parameters.push("float* __restrict__ partials".to_owned());
    parameters.extend((0..program.scalars.len()).map(|k| format!("float s{k}")));
    parameters.push("long long n".to_owned());
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__({BLOCK}) expr_reduce({}) {{",
        parameters.join(", ")
    );
    let _ = writeln!(s, "    __shared__ float shared_values[{}];\n    __shared__ bool last_block;", BLOCK / 32);
    let _ = writeln!(s, "    float acc = {identity};");
    s.push_str("    const long long stride = (long long)gridDim.x * blockDim.x;\n");
    s.push_str("    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n");
    // A group of 16 bytes a load: a float4, or eight 16-bit elements in a uint4.
    let group = stored.group();
    // The value of one trip's groups, `trips` of them at q, q + stride, ...: every load first, then the terms.
    let trip = |trips: usize| -> String {
        let mut body = String::new();
        let mut values = Vec::new();
        for j in 0..trips {
            let at = if j == 0 { "q".to_owned() } else { format!("q + {j} * stride") };
            for k in 0..program.inputs.len() {
                if stored.0.is_half() {
                    let name = format!("x{k}_{j}");
                    let _ = writeln!(
                        body,
                        "        float {};",
                        (0..8).map(|e| format!("{name}_{e}")).collect::<Vec<_>>().join(", ")
                    );
                    for line in stored.load8_read_only(&format!("p_in{k}"), &at, &name).lines() {
                        let _ = writeln!(body, "        {line}");
                    }
                } else {
                    // Through the read-only data cache: the lab's loads in flight gained only so.
                    let _ = writeln!(
                        body,
                        "        const float4 x{k}_{j} = __ldg(reinterpret_cast<const float4*>(p_in{k}) + ({at}));"
                    );
                }
            }
        }
        for j in 0..trips {
            let lanes: Vec<String> = if stored.0.is_half() {
                (0..8).map(|e| format!("_{e}")).collect()
            } else {
                ["x", "y", "z", "w"].iter().map(|lane| format!(".{lane}")).collect()
            };
            for (l, lane) in lanes.iter().enumerate() {
                let args: Vec<String> = (0..program.inputs.len())
                    .map(|k| format!("x{k}_{j}{lane}"))
                    .chain(scalar_args.iter().cloned())
                    .collect();
                let _ = writeln!(body, "        const float t{j}_{l} = gw_term({});", args.join(", "));
                values.push(format!("t{j}_{l}"));
            }
        }
        // The terms combined in pairs, then pairs of pairs, before they join the thread's running value.
        let mut level = values;
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|p| if p.len() == 2 { format!("({})", join(kind, &p[0], &p[1])) } else { p[0].clone() })
                .collect();
        }
        let _ = writeln!(body, "        acc = {};", join(kind, "acc", &level[0]));
        body
    };
    let loads = (REDUCE_LOADS_IN_FLIGHT / program.inputs.len().max(1)).max(1);
    s.push_str("    long long q = first;\n");
    if loads > 1 {
        let _ = writeln!(s, "    for (; q + {} * stride < n / {group}; q += {loads} * stride) {{", loads - 1);
        s.push_str(&trip(loads));
        s.push_str("    }\n");
    }
    let _ = writeln!(s, "    for (; q < n / {group}; q += stride) {{");
    s.push_str(&trip(1));
    s.push_str("    }\n");
    let _ = writeln!(s, "    for (long long i = n / {group} * {group} + first; i < n; i += stride) {{");
    let args: Vec<String> = (0..program.inputs.len())
        .map(|k| stored.load(&format!("p_in{k}"), "i"))
        .chain(scalar_args.iter().cloned())
        .collect();
    let _ = writeln!(s, "        acc = {};\n    }}", join(kind, "acc", &format!("gw_term({})", args.join(", "))));
    s.push_str(&combine);
    let _ = writeln!(
        s,
        "    unsigned int* counter = reinterpret_cast<unsigned int*>(partials + {counter});\n    \
         if (threadIdx.x == 0) {{\n        partials[blockIdx.x] = shared_values[0];\n        __threadfence();\n        \
         last_block = atomicAdd(counter, 1u) == gridDim.x - 1;\n    }}\n    __syncthreads();\n    if (!last_block) return;\n    \
         __threadfence();",
        counter = REDUCE_BLOCKS + 1
    );
    let _ = writeln!(s, "    acc = {identity};");
    let _ = writeln!(
        s,
        "    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) acc = {};",
        join(kind, "acc", "__ldcg(&partials[i])")
    );
    s.push_str(&combine);
    s.push_str("    if (threadIdx.x == 0) {\n        const float reduced = shared_values[0];\n");
    for line in statements(program, &[reduction.post]).lines() {
        let _ = writeln!(s, "    {line}");
    }
    let _ = writeln!(s, "        partials[gridDim.x] = v{};\n        *counter = 0u;\n    }}\n}}", reduction.post);
    s
}

/// One chunk of an input, as the kernel takes it: read only, or written by an output that overwrites it.
enum InputView<'a> {
    Read(CudaView<'a, f32>),
    Written(CudaViewMut<'a, f32>),
}

/// An expression's compiled kernel: the elementwise kernel, or the reduction; and where that is the first-call kernel
/// ([`first_call_source`]), the faster kernel compiling on a thread of its own, which every launch takes once it is
/// ready.
#[derive(Debug, Clone)]
struct ExprKernels {
    main: CustomKernel,
    faster: Option<Arc<FasterKernel>>,
}

impl ExprKernels {
    /// The kernel to launch now: the faster one where it is ready, else the first.
    fn current(&self) -> &CustomKernel {
        self.faster.as_deref().and_then(FasterKernel::ready).unwrap_or(&self.main)
    }
}

/// A kernel compiling on a thread of its own: empty until NVRTC is done, then the kernel, or `None` where compiling or
/// loading it failed (the first-call kernel then stays; it computes the same values).
#[derive(Debug, Default)]
pub(crate) struct FasterKernel(OnceLock<Option<CustomKernel>>);

impl FasterKernel {
    fn ready(&self) -> Option<&CustomKernel> {
        self.0.get().and_then(Option::as_ref)
    }

    /// Blocks until the thread compiling it is done, whatever its outcome.
    fn wait(&self) {
        self.0.wait();
    }
}

/// Fills its kernel with `None` when dropped unfilled: a compiling thread that panics, or that could not be started,
/// leaves no one waiting for ever.
struct FillOnDrop(Arc<FasterKernel>);

impl Drop for FillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.0.set(None);
    }
}

/// The faster kernels still compiling in this process, which the process waits for before it exits: a thread left
/// inside NVRTC while the process tears down NVRTC's own globals could crash it.
static COMPILING: Mutex<Vec<Arc<FasterKernel>>> = Mutex::new(Vec::new());

/// Waits for every faster kernel still compiling ([`COMPILING`]); registered with `atexit` once, when the first one
/// starts, so that it runs before the exit handlers NVRTC registered when it was loaded (which was earlier).
extern "C" fn wait_for_compiling_kernels() {
    let compiling: Vec<Arc<FasterKernel>> = std::mem::take(&mut *crate::lock(&COMPILING));
    for kernel in compiling {
        kernel.wait();
    }
}

/// An expression compiled for one CUDA backend ([`CudaBackend::prepare_expression`]): its program, how its arrays
/// are stored, and its kernel.
#[derive(Debug, Clone)]
pub struct PreparedExpression {
    program: Arc<Program>,
    dtype: Dtype,
    kernels: ExprKernels,
}

impl PreparedExpression {
    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// How the arrays it runs on are stored: `f32`, or one 16-bit type computed in `f32`.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
}

/// This thread's two events for ordering a kernel after and before another stream's work, per context: made once
/// (creating an event costs a driver call), recorded again at every run. Re-recording an event does not disturb a
/// wait already enqueued on it.
fn ordering_events(
    context: &Arc<cudarc::driver::CudaContext>,
) -> Result<(Arc<cudarc::driver::CudaEvent>, Arc<cudarc::driver::CudaEvent>)> {
    use std::cell::RefCell;
    type Events = Vec<(usize, Arc<cudarc::driver::CudaEvent>, Arc<cudarc::driver::CudaEvent>)>;
    thread_local! {
        static EVENTS: RefCell<Events> = const { RefCell::new(Vec::new()) };
    }
    let key = Arc::as_ptr(context) as usize;
    EVENTS.with(|events| {
        let mut events = events.borrow_mut();
        if let Some((_, before, after)) = events.iter().find(|(k, _, _)| *k == key) {
            return Ok((Arc::clone(before), Arc::clone(after)));
        }
        let before = Arc::new(context.new_event(None).map_err(driver_error("creating an event"))?);
        let after = Arc::new(context.new_event(None).map_err(driver_error("creating an event"))?);
        events.push((key, Arc::clone(&before), Arc::clone(&after)));
        Ok((before, after))
    })
}

/// An expression's data on the device, and its kernels, looked up once at upload so that a launch costs no more
/// than the launch.
pub struct ExprOnDevice {
    program: Arc<Program>,
    /// How the arrays are stored.
    dtype: Dtype,
    kernels: ExprKernels,
    /// Which inputs an output overwrites (passed to the kernel as writable), worked out once at upload.
    overwritten: Vec<bool>,
    n: usize,
    /// A reduction's blocks ([`CudaBackend::reduce_blocks`]): the result follows their partials.
    reduce_blocks: u64,
    scalars: Vec<f32>,
    inputs: Vec<DeviceArray>,
    /// The outputs that do not overwrite an input (as the inputs are stored); for a reduction, the partials and the
    /// result (`f32`).
    outputs: Vec<DeviceArray>,
}

/// An array of an expression on the device, as its elements are stored.
enum DeviceArray {
    F32(CudaSlice<f32>),
    /// 16-bit elements (the type is the expression's), as their bits.
    Half(CudaSlice<u16>),
}

impl DeviceArray {
    /// Pushes the array as a kernel argument: its device address, read only.
    fn arg<'a>(&'a self, launch: &mut cudarc::driver::LaunchArgs<'a>) {
        match self {
            DeviceArray::F32(a) => launch.arg(a),
            DeviceArray::Half(a) => launch.arg(a),
        };
    }

    /// Pushes the array as a kernel argument the kernel writes.
    fn arg_mut<'a>(&'a mut self, launch: &mut cudarc::driver::LaunchArgs<'a>) {
        match self {
            DeviceArray::F32(a) => launch.arg(a),
            DeviceArray::Half(a) => launch.arg(a),
        };
    }
}

impl ExprOnDevice {
    /// A reduction's result where a download reads it (after the blocks' partials), `None` for an elementwise
    /// expression.
    pub(crate) fn reduction_value(&mut self) -> Option<(&mut CudaSlice<f32>, usize)> {
        self.program.reduction.as_ref()?;
        let at = self.reduce_blocks as usize;
        match self.outputs.first_mut() {
            Some(DeviceArray::F32(partials)) => Some((partials, at)),
            _ => None,
        }
    }
}

impl CudaBackend {
    /// The options of every generated kernel: `-minimal` leaves out the runtime API's headers (textures, device-side
    /// launches, the runtime's types), which a generated kernel never uses and NVRTC otherwise parses on every
    /// compilation.
    fn expression_options(&self) -> &'static [&'static str] {
        if self.nvrtc_minimal { &["-minimal"] } else { &[] }
    }

    /// The program's kernels, generated and compiled on first use (then from the memory or disk cache). Where the
    /// program's faster kernel would need compiling and a first-call kernel compiles sooner
    /// ([`compiles_a_first_call_kernel`]), the first-call kernel is compiled here and the faster one is started on a
    /// thread of its own ([`CudaBackend::faster_kernel`]); once it is ready every launch takes it.
    fn expression_kernels(&self, program: &Program, dtype: Dtype) -> Result<ExprKernels> {
        let options = self.expression_options();
        if program.reduction.is_some() {
            let main = self.custom_kernel(&reduction_source(program, dtype), "expr_reduce", options)?;
            return Ok(ExprKernels { main, faster: None });
        }
        let source = elementwise_source(program, dtype);
        if !compiles_a_first_call_kernel(program) {
            return Ok(ExprKernels { main: self.custom_kernel(&source, "expr_map", options)?, faster: None });
        }
        // Compiled already: by an earlier process (on disk), or by this one's compiling thread, which keeps its kernel
        // among the backend's modules.
        if let Some(main) = find_custom_kernel(&self.module_compiler(), &source, "expr_map", options) {
            return Ok(ExprKernels { main, faster: None });
        }
        // The first-call kernel first, then the faster one: NVRTC's first compilation in a process is its slowest,
        // and the first result waits for this one alone.
        let main = self.custom_kernel(&first_call_source(program, dtype), "expr_map", options)?;
        Ok(ExprKernels { main, faster: Some(self.faster_kernel(source, options)) })
    }

    /// The faster kernel of `source` (an elementwise program's [`elementwise_source`]), compiling on a thread of its
    /// own: started by the first caller, shared by the rest.
    fn faster_kernel(&self, source: String, options: &'static [&'static str]) -> Arc<FasterKernel> {
        let mut faster_kernels = lock(&self.faster_kernels);
        if let Some(faster) = faster_kernels.get(&source) {
            return Arc::clone(faster);
        }
        let faster = Arc::new(FasterKernel::default());
        faster_kernels.insert(source.clone(), Arc::clone(&faster));
        drop(faster_kernels);
        static WAIT_AT_EXIT: std::sync::Once = std::sync::Once::new();
        WAIT_AT_EXIT.call_once(|| {
            // SAFETY: registers a function of no arguments that never unwinds (it only waits on locks it takes).
            unsafe { libc::atexit(wait_for_compiling_kernels) };
        });
        lock(&COMPILING).push(Arc::clone(&faster));
        let fill = FillOnDrop(Arc::clone(&faster));
        let compiler = self.module_compiler();
        // A thread that cannot start drops `fill`, which settles the kernel as failed.
        let _ = std::thread::Builder::new().name("gpuworthy-nvrtc".into()).spawn(move || {
            let kernel = crate::custom::custom_kernel_through(&compiler, &source, "expr_map", options).ok();
            let _ = fill.0.0.set(kernel);
            lock(&COMPILING).retain(|k| !Arc::ptr_eq(k, &fill.0));
        });
        faster
    }

    /// Makes ready the kernel that runs `program` from now on: waits for its faster kernel where one is compiling
    /// ([`CudaBackend::expression_kernels`]), or compiles it now, with no first-call kernel, where nothing has started
    /// it (a caller that times the kernel at once saves that compilation).
    fn settle_expression(&self, program: &Program, dtype: Dtype) -> Result<()> {
        if !compiles_a_first_call_kernel(program) {
            return self.expression_kernels(program, dtype).map(drop);
        }
        let source = elementwise_source(program, dtype);
        let compiling = lock(&self.faster_kernels).get(&source).cloned();
        match compiling {
            Some(faster) => {
                faster.wait();
                // Where it failed, the first-call kernel stays the kernel (it computes the same values).
                if faster.ready().is_none() { self.expression_kernels(program, dtype).map(drop) } else { Ok(()) }
            }
            None => self.custom_kernel(&source, "expr_map", self.expression_options()).map(drop),
        }
    }

    /// The pipelined run of an elementwise expression ([`HostMemory::Pipelined`]): every array cut into the same
    /// chunks, each chunk's inputs staged and uploaded, its kernel run and its outputs downloaded while the next ones
    /// are staged (the engine of [`crate::pipeline`]), written into `output`'s arrays where it has one per output.
    fn run_expression_pipelined(&self, input: &ExprInput, output: &mut Outputs) -> Result<()> {
        let program = &input.params.program;
        let n = input.params.n;
        let mut arrays = match std::mem::replace(output, Outputs::Elementwise(Vec::new())) {
            Outputs::Elementwise(arrays) if arrays.len() == program.outputs.len() => arrays,
            _ => vec![Vec::new(); program.outputs.len()],
        };
        for array in &mut arrays {
            crate::memory::host_output(array, n);
        }
        let inputs = f32_inputs(input, 0..n)?;
        let result = self.pipeline_expression(input, inputs, arrays.iter_mut().map(Vec::as_mut_slice).collect());
        *output = Outputs::Elementwise(arrays);
        result
    }

    /// The pipelined engine over the expression of `input` with its arrays given as slices: `inputs` (one per input,
    /// each of the same length) read where they lie, `outputs` (one per output, of that length) written in place.
    /// What a whole run and a group member's part share.
    fn pipeline_expression(&self, input: &ExprInput, inputs: Vec<&[f32]>, outputs: Vec<&mut [f32]>) -> Result<()> {
        let program = &input.params.program;
        let kernels = self.expression_kernels(program, Dtype::F32)?;
        let n = inputs.first().map_or(0, |x| x.len());
        if inputs.iter().any(|x| x.len() != n)
            || outputs.iter().any(|y| y.len() != n)
            || outputs.len() != program.outputs.len()
        {
            return Err(Error::invalid(
                "a pipelined expression's arrays differ in length from one another or its outputs",
            ));
        }
        if n == 0 {
            return Ok(());
        }
        let overwritten = program.overwritten_inputs();
        let (ranges, chunks) = expression_chunks(n, program.inputs.len(), program.outputs.len());
        let mut devices = (0..program.inputs.len()).map(|_| self.uninit::<f32>(n)).collect::<Result<Vec<_>>>()?;
        let own_count = program.outputs.iter().filter(|o| program.overwrites(o).is_none()).count();
        let mut own = (0..own_count).map(|_| self.uninit::<f32>(n)).collect::<Result<Vec<_>>>()?;
        let mut own_buffers = own.iter_mut();
        let output_from = program
            .outputs
            .iter()
            .map(|o| match program.overwrites(o) {
                Some(k) => Ok(OutputFrom::Input(k)),
                None => own_buffers
                    .next()
                    .map(OutputFrom::Buffer)
                    .ok_or_else(|| Error::invalid("an expression output has no buffer")),
            })
            .collect::<Result<Vec<_>>>()?;
        let job = Pipeline { inputs, chunks, output_from, launch_on_backend_stream: false, outputs, output_offset: 0 };
        let scalars = &input.params.scalars;
        let what = "launching an expression's kernel on a chunk";
        self.pipelined(job, &mut devices, &mut |stream, c, devices, output_from| {
            let r = ranges[c].clone();
            let len = r.len() as i64;
            let blocks = map_blocks(r.len(), Dtype::F32, program);
            let mut inputs: Vec<InputView<'_>> =
                devices
                    .iter_mut()
                    .zip(&overwritten)
                    .map(|(d, w)| {
                        if *w {
                            InputView::Written(d.slice_mut(r.clone()))
                        } else {
                            InputView::Read(d.slice(r.clone()))
                        }
                    })
                    .collect();
            let mut outputs: Vec<CudaViewMut<'_, f32>> = output_from
                .iter_mut()
                .filter_map(|o| match o {
                    OutputFrom::Buffer(buffer) => Some(buffer.slice_mut(r.clone())),
                    OutputFrom::Input(_) => None,
                })
                .collect();
            let mut launch = stream.launch_builder(kernels.current().function());
            for view in &mut inputs {
                match view {
                    InputView::Read(read) => launch.arg(&*read),
                    InputView::Written(written) => launch.arg(written),
                };
            }
            for view in &mut outputs {
                launch.arg(view);
            }
            for s in scalars {
                launch.arg(s);
            }
            launch.arg(&len);
            // SAFETY: expr_map takes (a float pointer per input, one per output that overwrites none, float per
            // scalar, long long n) in that order, as pushed here; every view holds this chunk's `len` elements and
            // starts at a multiple of 64 elements of a 256-byte aligned allocation, so float4 access below
            // len / 4 * 4 (len / 8 * 8 in a kernel with no loop) stays aligned and inside, and the tail is accessed
            // one element at a time.
            unsafe { launch.launch(launch_config((blocks, 1), (BLOCK, 1), 0)?) }.map(drop).map_err(driver_error(what))
        })
    }

    /// Blocks of a reduction's first pass for `n` elements.
    /// `program`'s kernel for arrays stored as `dtype`, compiled (or found in the caches) once, for
    /// [`CudaBackend::run_expression_on_foreign_memory`]: a caller that runs one expression many times keeps this
    /// instead of generating and hashing its source at every call.
    pub fn prepare_expression(&self, program: Arc<Program>, dtype: Dtype) -> Result<PreparedExpression> {
        let kernels = self.expression_kernels(&program, dtype)?;
        Ok(PreparedExpression { program, dtype, kernels })
    }

    /// A reduction's blocks for `n` elements: [`REDUCE_BLOCKS_PER_SM`] for each of the GPU's multiprocessors, at most
    /// [`REDUCE_BLOCKS`] (the partials buffer's room), and no more than a thread per four elements needs.
    fn reduce_blocks(&self, n: usize) -> u64 {
        let most = (REDUCE_BLOCKS_PER_SM * u64::from(self.multiprocessors)).clamp(1, REDUCE_BLOCKS);
        ((n as u64).div_ceil(4).div_ceil(u64::from(BLOCK))).clamp(1, most)
    }

    /// Runs a prepared expression ([`CudaBackend::prepare_expression`]) on arrays of `n` elements, stored as the
    /// prepared expression's type, in this device's memory that another library owns (CuPy arrays,
    /// PyTorch tensors: their `__cuda_array_interface__` or DLPack pointers), with no copy. `stream` is the raw CUDA
    /// stream their owner orders its work on (0 for the legacy default stream): an elementwise kernel is launched on
    /// it, as the owner's own kernels are; a reduction runs on this backend's stream after what was enqueued there
    /// (an event between them), and its value is read back. Nothing else waits on the host. `inputs` holds one pointer per input of the program, `outputs` one per output that
    /// overwrites no input (an output that overwrites its input is written there). An elementwise program returns
    /// `None`; a reduction returns its value, read back once the kernel has finished.
    ///
    /// # Safety
    ///
    /// Every pointer must address at least `n` elements of the prepared type (`f32`, or 16-bit values) of this
    /// device's memory, valid until the work enqueued on `stream` after this call has finished; outputs must not overlap each other or an input they do not overwrite; `stream`
    /// must be 0 or a live stream of this backend's context.
    pub unsafe fn run_expression_on_foreign_memory(
        &self,
        prepared: &PreparedExpression,
        inputs: &[u64],
        outputs: &[u64],
        scalars: &[f32],
        n: usize,
        stream: u64,
    ) -> Result<Option<f32>> {
        let program = &*prepared.program;
        let own_outputs = program.outputs.iter().filter(|o| program.overwrites(o).is_none()).count();
        let expected_outputs = if program.reduction.is_some() { 0 } else { own_outputs };
        if inputs.len() != program.inputs.len()
            || outputs.len() != expected_outputs
            || scalars.len() != program.scalars.len()
        {
            return Err(Error::invalid(format!(
                "the expression takes {} input array(s), {} output array(s) and {} scalar(s); given {}, {} and {}",
                program.inputs.len(),
                expected_outputs,
                program.scalars.len(),
                inputs.len(),
                outputs.len(),
                scalars.len()
            )));
        }
        // The generated kernel reads and writes 16 bytes at a time (four f32s, eight 16-bit values) below the last
        // whole group.
        if let Some(bad) = inputs.iter().chain(outputs).find(|p| **p == 0 || **p % 16 != 0) {
            return Err(Error::invalid(format!(
                "a device array starts at {bad:#x}: the kernel needs arrays aligned to 16 bytes (a view that starts \
                 inside an allocation may not be; copy it)"
            )));
        }
        let n_arg =
            i64::try_from(n).map_err(|_| Error::invalid(format!("{n} elements is more than a kernel indexes")))?;
        if n == 0 && program.reduction.is_none() {
            return Ok(None);
        }
        let kernels = &prepared.kernels;
        let context = self.context();
        context.bind_to_thread().map_err(driver_error("binding the device's context"))?;
        let foreign = stream as cudarc::driver::sys::CUstream;
        if program.reduction.is_none() {
            // An elementwise kernel goes straight onto the owner's stream, as the owner's own kernels do: ordered with
            // its work, with no event to record or wait for. (It is not this backend's work, so it stays out of the
            // backend's queue and timing windows.)
            let blocks = u32::try_from(map_blocks(n, prepared.dtype, program))
                .map_err(|_| Error::invalid(format!("{n} elements need more blocks than a grid holds")))?;
            let mut pointers: Vec<u64> = inputs.iter().chain(outputs).copied().collect();
            let mut values: Vec<f32> = scalars.to_vec();
            let mut count = n_arg;
            let mut parameters: Vec<*mut std::ffi::c_void> = Vec::with_capacity(pointers.len() + values.len() + 1);
            parameters.extend(pointers.iter_mut().map(|p| std::ptr::from_mut(p).cast::<std::ffi::c_void>()));
            parameters.extend(values.iter_mut().map(|v| std::ptr::from_mut(v).cast::<std::ffi::c_void>()));
            parameters.push(std::ptr::from_mut(&mut count).cast());
            // SAFETY: the parameters point at live locals in the kernel's order (a pointer per input, one per output
            // of its own, a float per scalar, n as long long; the driver copies them before returning); every
            // pointer addresses n elements of the prepared type aligned to 16 bytes (the caller's contract, the
            // alignment checked above);
            // the function belongs to a module the prepared expression keeps loaded in this context, bound above;
            // `foreign` is 0 or a live stream of this context.
            unsafe {
                cudarc::driver::result::launch_kernel(
                    kernels.current().function().cu_function(),
                    (blocks, 1, 1),
                    (BLOCK, 1, 1),
                    0,
                    foreign,
                    &mut parameters,
                )
            }
            .map_err(driver_error("launching an expression's kernel on another library's arrays"))?;
            return Ok(None);
        }
        let (before, after) = ordering_events(context)?;
        // SAFETY: `before` is a live event of this context and `foreign` is 0 or a live stream of it (the caller's
        // contract).
        unsafe { cudarc::driver::result::event::record(before.cu_event(), foreign) }
            .map_err(driver_error("recording the arrays' stream"))?;
        let what = "launching an expression's kernel on another library's arrays";
        let reduction = program.reduction.is_some();
        let blocks = if reduction { self.reduce_blocks(n) } else { map_blocks(n, prepared.dtype, program) };
        let mut partials = if reduction { Some(self.buffer_zeroed(REDUCE_BLOCKS as usize + 2)?) } else { None };
        self.with_stream(|own| {
            own.wait(&before).map_err(driver_error("waiting for the arrays' stream"))?;
            let mut launch = own.launch_builder(kernels.current().function());
            for pointer in inputs {
                launch.arg(pointer);
            }
            match &mut partials {
                Some(partials) => {
                    launch.arg(partials);
                }
                None => {
                    for pointer in outputs {
                        launch.arg(pointer);
                    }
                }
            }
            for value in scalars {
                launch.arg(value);
            }
            launch.arg(&n_arg);
            // SAFETY: the arguments are pushed in the generated kernel's order (a pointer per input, then the outputs
            // or the partials buffer, a float per scalar, n as long long); every pointer addresses n elements of
            // the prepared type aligned to 16 bytes (the caller's contract, the alignment checked above), read or
            // written 16 bytes at a time below the last whole group and one by one above; the partials buffer holds REDUCE_BLOCKS + 2 floats, as `launch` says.
            unsafe { launch.launch(launch_config((blocks, 1), (BLOCK, 1), 0)?) }
                .map(drop)
                .map_err(driver_error(what))?;
            after.record(own).map_err(driver_error("recording the kernel"))?;
            // SAFETY: `foreign` is 0 or a live stream of this context, `after` a live event of it.
            unsafe {
                cudarc::driver::result::stream::wait_event(
                    foreign,
                    after.cu_event(),
                    cudarc::driver::sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                )
            }
            .map_err(driver_error("making the arrays' stream wait for the kernel"))
        })?;
        match partials {
            Some(partials) => Ok(Some(self.read_buffer(&partials, blocks as usize + 1)?[blocks as usize])),
            None => Ok(None),
        }
    }
}

/// The `f32` arrays of `input`, each cut to `units`: what the pipelined engine reads.
fn f32_inputs(input: &ExprInput, units: Range<usize>) -> Result<Vec<&[f32]>> {
    input
        .arrays
        .iter()
        .map(|a| {
            let values = a.as_f32().ok_or_else(|| Error::invalid("a pipelined run takes f32 arrays"))?;
            gpuworthy_core::shard::units_of(values, units.clone())
        })
        .collect()
}

impl Implements<Expression> for CudaBackend {
    type Resident = ExprOnDevice;

    fn variants(&self) -> Vec<&'static str> {
        vec!["generated"]
    }

    fn best_variant(&self, _: &ExprParams) -> &'static str {
        "generated"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        if variant == "generated" { Ok(()) } else { Err(Implements::<Expression>::unknown_variant(self, variant)) }
    }

    /// Generates and compiles the program's kernels (NVRTC, or the disk cache): the compile phase.
    fn prepare_for(&self, variant: &str, params: &ExprParams) -> Result<()> {
        Implements::<Expression>::prepare(self, variant)?;
        self.expression_kernels(&params.program, params.dtype).map(drop)
    }

    /// Waits for the faster kernel where the compile phase left one compiling ([`compiles_a_first_call_kernel`]), or
    /// compiles it directly where nothing did.
    fn settle(&self, variant: &str, params: &ExprParams) -> Result<()> {
        Implements::<Expression>::prepare(self, variant)?;
        self.settle_expression(&params.program, params.dtype)
    }

    fn upload(&self, input: &ExprInput) -> Result<ExprOnDevice> {
        Expression::validate(input)?;
        let program = Arc::clone(&input.params.program);
        // Compile first: an expression NVRTC refuses is an error before any data moves.
        let dtype = input.params.dtype;
        let kernels = self.expression_kernels(&program, dtype)?;
        let n = input.params.n;
        let inputs = input
            .arrays
            .iter()
            .map(|a| match a.view() {
                ArrayView::F32(values) => self.buffer_from(values).map(DeviceArray::F32),
                ArrayView::Half(_, bits) => self.to_device(bits).map(DeviceArray::Half),
            })
            .collect::<Result<Vec<_>>>()?;
        let outputs = if program.reduction.is_some() {
            vec![DeviceArray::F32(self.buffer_zeroed(REDUCE_BLOCKS as usize + 2)?)]
        } else {
            program
                .outputs
                .iter()
                .filter(|o| program.overwrites(o).is_none())
                .map(|_| {
                    if dtype.is_half() {
                        self.zeros::<u16>(n).map(DeviceArray::Half)
                    } else {
                        self.buffer_zeroed(n).map(DeviceArray::F32)
                    }
                })
                .collect::<Result<Vec<_>>>()?
        };
        Ok(ExprOnDevice {
            overwritten: program.overwritten_inputs(),
            dtype,
            program,
            kernels,
            n,
            reduce_blocks: self.reduce_blocks(n),
            scalars: input.params.scalars.clone(),
            inputs,
            outputs,
        })
    }

    fn launch(&self, variant: &str, data: &mut ExprOnDevice) -> Result<()> {
        if variant != "generated" {
            return Err(Implements::<Expression>::unknown_variant(self, variant));
        }
        let kernel = data.kernels.current().clone();
        let n = data.n as i64;
        let what = "launching an expression's kernel";
        if data.program.reduction.is_some() {
            let blocks = data.reduce_blocks;
            return self.with_stream(|stream| {
                let mut launch = stream.launch_builder(kernel.function());
                for input in &data.inputs {
                    input.arg(&mut launch);
                }
                data.outputs[0].arg_mut(&mut launch);
                for s in &data.scalars {
                    launch.arg(s);
                }
                launch.arg(&n);
                // SAFETY: expr_reduce takes (a const pointer to the stored type per input, float* partials, float per
                // scalar, long long n): the inputs hold n elements of the type the kernel was generated for (one at
                // least), read four at a time below n / 4 * 4 and one by one above; the
                // partials buffer holds REDUCE_BLOCKS + 2 floats: block b < blocks ≤ REDUCE_BLOCKS writes element b,
                // the last block writes element `blocks`, and element REDUCE_BLOCKS + 1 is the counter (zero when
                // allocated, set back to zero by every launch's last block).
                unsafe { launch.launch(launch_config((blocks, 1), (BLOCK, 1), 0)?) }
                    .map(drop)
                    .map_err(driver_error(what))
            });
        }
        if data.n == 0 {
            return Ok(());
        }
        let blocks = map_blocks(data.n, data.dtype, &data.program);
        let overwritten = &data.overwritten;
        self.with_stream(|stream| {
            let mut launch = stream.launch_builder(kernel.function());
            // The arguments in the kernel's order: every input by index (mutable where an output overwrites it),
            // then the outputs, the scalars and n.
            for (k, input) in data.inputs.iter_mut().enumerate() {
                if overwritten[k] {
                    input.arg_mut(&mut launch);
                } else {
                    input.arg(&mut launch);
                }
            }
            for output in &mut data.outputs {
                output.arg_mut(&mut launch);
            }
            for s in &data.scalars {
                launch.arg(s);
            }
            launch.arg(&n);
            // SAFETY: expr_map takes (a pointer to the stored type per input, one per output that overwrites none,
            // float per scalar, long long n), in that order as pushed here: every buffer holds n elements of the type
            // the kernel was generated for (allocated with at least n, 256-byte aligned, so the 16-byte access below
            // n rounded down to a whole group of four or eight elements stays aligned and inside), and the elements
            // of the last, partial group are accessed one by one below n.
            unsafe { launch.launch(launch_config((blocks, 1), (BLOCK, 1), 0)?) }.map(drop).map_err(driver_error(what))
        })
    }

    fn reads_parts_in_place(&self, _variant: &str, params: &ExprParams) -> bool {
        let elementwise_f32 = params.program.reduction.is_none() && !params.dtype.is_half();
        self.host_memory() == HostMemory::Pipelined && elementwise_f32
    }

    /// A pipelined elementwise expression on `f32` arrays reads its part of the caller's arrays where they lie and
    /// writes into the group's output in place; other parts (16-bit arrays, a backend that is not pipelined) are cut
    /// and copied in, as by default.
    fn run_part(
        &self,
        variant: &str,
        input: &ExprInput,
        units: Range<usize>,
        place: &mut PartOutput<'_>,
    ) -> Result<()> {
        if !Implements::<Expression>::reads_parts_in_place(self, variant, &input.params) {
            return gpuworthy_core::backend::run_part_by_cut::<Expression, _>(self, variant, input, units, place);
        }
        Implements::<Expression>::prepare(self, variant)?;
        Expression::validate(input)?;
        let inputs = f32_inputs(input, units)?;
        self.pipeline_expression(input, inputs, std::mem::take(place.f32_slices()?))
    }

    fn run(&self, variant: &str, input: &ExprInput) -> Result<Outputs> {
        let mut output = Outputs::Elementwise(Vec::new());
        Implements::<Expression>::run_into(self, variant, input, &mut output)?;
        Ok(output)
    }

    /// Through the pipelined engine for an elementwise expression when the backend moves data that way; a reduction's
    /// result is one value, so it runs phase by phase.
    fn run_into(&self, variant: &str, input: &ExprInput, output: &mut Outputs) -> Result<()> {
        // The pipelined engine stages f32 arrays; 16-bit ones run phase by phase.
        let phased = input.params.program.reduction.is_some() || input.params.dtype.is_half();
        if self.host_memory() != HostMemory::Pipelined || phased {
            *output = crate::workloads::phased::<Expression>(self, variant, input)?;
            return Ok(());
        }
        Implements::<Expression>::prepare(self, variant)?;
        Expression::validate(input)?;
        self.run_expression_pipelined(input, output)
    }

    fn download(&self, data: &mut ExprOnDevice) -> Result<Outputs> {
        let program = &data.program;
        if program.reduction.is_some() {
            let count = data.reduce_blocks as usize;
            let DeviceArray::F32(partials) = &data.outputs[0] else {
                return Err(Error::invalid("a reduction's partials are f32"));
            };
            // The result alone, four bytes straight into a value here, as the built-in sum's download reads its
            // total, rather than the blocks' partials (4 KiB) into a fresh vector with it.
            let mut value = [0.0f32];
            let what = "copying an expression's reduction to the host";
            let _queue = self.hold_queue()?;
            self.stream.memcpy_dtoh(&partials.slice(count..count + 1), &mut value).map_err(driver_error(what))?;
            self.stream.synchronize().map_err(driver_error(what))?;
            return Ok(Outputs::Reduction(value[0]));
        }
        let mut wide = Vec::new();
        let mut half = Vec::new();
        let mut own = data.outputs.iter();
        for output in &program.outputs {
            let buffer = match program.overwrites(output) {
                Some(k) => &data.inputs[k],
                None => own.next().ok_or_else(|| Error::invalid("an expression output has no buffer"))?,
            };
            match buffer {
                DeviceArray::F32(buffer) => wide.push(self.read_buffer(buffer, data.n)?),
                DeviceArray::Half(buffer) => half.push(self.to_host(buffer, data.n)?),
            }
        }
        Ok(if data.dtype.is_half() {
            Outputs::Half { dtype: data.dtype, arrays: half }
        } else {
            Outputs::Elementwise(wide)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::Precision;
    use gpuworthy_core::expr::{CONFORMANCE_LENGTHS, Expr};

    const CASES: [(&str, &[&str], &[f32]); 10] = [
        ("y = erf(x) + expm1(x) + log1p(abs(x)) + sinh(x * 3) - cosh(x * 3)", &[], &[]),
        ("y = a * x + b", &["a", "b"], &[2.0, 1.0]),
        ("y = exp(-x * x) * sin(3 * x)", &[], &[]),
        ("let t = x - m; y = where(t > 0, t * t, -t) / (s * s); z = fma(x, y, 1)", &["m", "s"], &[0.1, 0.7]),
        ("y = pow(x, 3) + pow(abs(x), 0.5) + sign(x) + round(x * 4) + min(x, nan) + 1 / (x - x)", &[], &[]),
        ("y = a * x + y", &["a"], &[3.0]),
        ("s = sum(x * y)", &[], &[]),
        ("r = sqrt(sum(x * x)) / 2", &[], &[]),
        ("p = prod(1 + x / 100)", &[], &[]),
        ("m = max(x - y)", &[], &[]),
    ];

    #[test]
    fn a_reduction_is_one_kernel_whose_last_block_finishes() {
        let program = Expr::parse("r = sqrt(sum(x * y))").unwrap().bind(&[]).unwrap();
        let source = reduction_source(&program, Dtype::F32);
        assert!(source.contains("void __launch_bounds__(256) expr_reduce("), "{source}");
        assert!(source.contains("atomicAdd(counter, 1u)") && source.contains("*counter = 0u;"), "{source}");
        assert!(source.contains("const float v3 = reduced;") && source.contains("sqrtf(v3)"), "{source}");
        assert_eq!(source.matches("__global__").count(), 1, "{source}");
        // Each of the two block combines (the blocks' partials, then the last block's) shuffles twice: within each
        // warp, then across the warps' values.
        assert_eq!(source.matches("__shfl_down_sync").count(), 4, "{source}");
    }

    /// The element function is inlined twice (NVRTC's time grows with each copy), inside one loop that also takes
    /// the partial last `float4` (no second loop for a tail), or eight times with no loop where the element calls two
    /// special functions or more, a `float4` from each half of the array.
    #[test]
    fn an_elementwise_kernel_inlines_its_element_function_as_often_as_it_pays() {
        let heavy = Expr::parse("y = exp(-x*x) * sin(3*x)").unwrap().bind(&[]).unwrap();
        let source = elementwise_source(&heavy, Dtype::F32);
        // A definition, and eight calls in each of the two index widths' branches.
        assert_eq!((element_copies(&heavy), source.matches("gw_element(").count()), (8, 17), "{source}");
        assert_eq!(source.matches("for (").count(), 0, "no loop: {source}");
        // One float4 in each half of the array; the thread whose second one is partial or past the end takes its
        // elements one by one.
        assert!(source.contains("if (q >= half) return;"), "{source}");
        assert!(source.contains("const unsigned q =") && source.contains("const long long q ="), "{source}");
        assert!(source.contains("reinterpret_cast<const float4*>(p_in0)[q + half]"), "{source}");
        assert!(source.contains("x0_3 = ia + 3 < n ? p_in0[ia + 3] : 0.0f;"), "{source}");
        assert!(source.contains("x0_7 = ib + 3 < n ? p_in0[ib + 3] : 0.0f;"), "{source}");
        assert!(source.contains("if (ib + 2 < n) p_out0[ib + 2] = y0_6;"), "{source}");
        assert!(!source.contains("p_out0[ib + 3]"), "a whole group is written by float4s: {source}");
        let light = Expr::parse("y = tanh(x) * 0.75").unwrap().bind(&[]).unwrap();
        assert_eq!(element_copies(&light), 2);
        let program = Expr::parse("u = x*c - y*s; v = x*s + y*c").unwrap().bind(&["c", "s"]).unwrap();
        let source = elementwise_source(&program, Dtype::F32);
        assert_eq!(source.matches("gw_element(").count(), 3, "a definition and two calls: {source}");
        assert_eq!(source.matches("for (").count(), 2, "the grid-stride loop and the loop over pairs: {source}");
        assert!(source.contains("#pragma unroll 1"), "{source}");
        for k in 0..2 {
            assert!(source.contains(&format!("x{k} = make_float4(p_in{k}[i], i + 1 < n ?")), "{source}");
        }
        for j in 0..2 {
            assert!(source.contains(&format!("if (i + 2 < n) p_out{j}[i + 2] = y{j}.z;")), "{source}");
        }
    }

    /// A kernel with no loop gets a thread per eight elements, however many blocks that takes; a grid-stride loop
    /// gets a thread per 16 bytes up to [`MAP_BLOCKS`]; a 16-bit array keeps its loop even where the element is
    /// heavy. Every length from 0 to past a whole block is covered by the threads the grid holds.
    #[test]
    fn an_elementwise_grid_covers_every_element_of_its_kernel() {
        let heavy = Expr::parse("y = exp(-x*x) * sin(3*x)").unwrap().bind(&[]).unwrap();
        let light = Expr::parse("y = a*x + b").unwrap().bind(&["a", "b"]).unwrap();
        assert!(eight_a_thread_without_a_loop(&heavy, Dtype::F32));
        assert!(!eight_a_thread_without_a_loop(&heavy, Dtype::Bf16));
        assert!(!eight_a_thread_without_a_loop(&light, Dtype::F32));
        let sum = Expr::parse("s = sum(exp(x) * sin(x))").unwrap().bind(&[]).unwrap();
        assert!(!eight_a_thread_without_a_loop(&sum, Dtype::F32), "a reduction has kernels of its own");
        assert_eq!(map_blocks(1 << 26, Dtype::F32, &heavy), (1 << 26) / 8 / 256);
        assert_eq!(map_blocks(1 << 30, Dtype::F32, &heavy), (1 << 30) / 8 / 256, "past MAP_BLOCKS");
        assert_eq!(map_blocks(1 << 30, Dtype::F32, &light), MAP_BLOCKS);
        assert_eq!(map_blocks(0, Dtype::F32, &heavy), 1);
        for n in (0..=4200).step_by(7).chain([2047, 2048, 2049]) {
            let threads = map_blocks(n, Dtype::F32, &heavy) * u64::from(BLOCK);
            assert!(threads * 8 >= n as u64, "{n} elements, {threads} threads");
            assert!(threads * 8 < n as u64 + 8 * u64::from(BLOCK) + 8, "{n}: no block without an element");
        }
    }

    /// The first-call kernel of an expression that calls a special function inlines its element function once, one
    /// element a thread, under the same name and parameters as the faster kernel; expressions with no special
    /// function, and reductions, compile their one kernel directly.
    #[test]
    fn a_first_call_kernel_computes_one_element_a_thread_with_one_copy() {
        let signature = |source: &str| source.lines().find(|l| l.starts_with("extern \"C\"")).unwrap().to_owned();
        for (text, scalars) in [("y = exp(-x*x) * sin(3*x)", &[][..]), ("y = sin(a*x) + y", &["a"][..])] {
            let program = Expr::parse(text).unwrap().bind(scalars).unwrap();
            assert!(compiles_a_first_call_kernel(&program), "{text}");
            let source = first_call_source(&program, Dtype::F32);
            assert_eq!(source.matches("gw_element(").count(), 2, "a definition and one call: {source}");
            assert_eq!(source.matches("for (").count(), 1, "{source}");
            assert!(!source.contains("float4"), "{source}");
            assert_eq!(signature(&source), signature(&elementwise_source(&program, Dtype::F32)));
        }
        let in_place = Expr::parse("y = sin(a*x) + y").unwrap().bind(&["a"]).unwrap();
        let k = in_place.inputs.iter().position(|name| name == "y").unwrap();
        assert!(first_call_source(&in_place, Dtype::F32).contains(&format!("p_in{k}[i] = y0;")));
        for text in ["y = a*x + b", "s = sum(sin(x))"] {
            let program =
                Expr::parse(text).unwrap().bind(&["a", "b"][..if text.contains('a') { 2 } else { 0 }]).unwrap();
            assert!(!compiles_a_first_call_kernel(&program), "{text}");
        }
    }

    /// Where CUDA runs, with no disk cache: an expression that calls a special function is answered first by the
    /// first-call kernel while the faster one compiles on a thread of its own; both match the reference at every
    /// conformance length and past a million elements, and once it is settled the faster kernel is the kernel. One
    /// settled before any call compiles the faster kernel alone.
    #[test]
    fn the_first_call_kernel_and_the_faster_one_both_match_the_reference() {
        let Some(cuda) = gpuworthy_core::BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) else {
            return;
        };
        let cuda = cuda.with_kernel_cache(crate::DiskCache::off());
        let mut tried = 0;
        for (source, scalars, values) in CASES {
            let program = Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap());
            if !compiles_a_first_call_kernel(&program) {
                continue;
            }
            tried += 1;
            let kernels = cuda.expression_kernels(&program, Dtype::F32).unwrap();
            let faster = kernels.faster.clone().expect("the faster kernel compiling");
            let first = ExprKernels { main: kernels.main.clone(), faster: None };
            cuda.settle_expression(&program, Dtype::F32).unwrap();
            let settled =
                ExprKernels { main: faster.ready().expect("the faster kernel compiled").clone(), faster: None };
            assert!(kernels.current().function().cu_function() == settled.main.function().cu_function());
            assert!(cuda.expression_kernels(&program, Dtype::F32).unwrap().faster.is_none(), "{source}: settled");
            for n in CONFORMANCE_LENGTHS.into_iter().chain([(1 << 20) + 3]) {
                let params = ExprParams::new(Arc::clone(&program), n, values.to_vec());
                let input = Expression::generate(&params, 7).unwrap();
                let expected = Expression::reference(&input).unwrap();
                for (shape, kernels) in [("first-call", &first), ("faster", &settled)] {
                    let mut data = Implements::<Expression>::upload(&cuda, &input).unwrap();
                    data.kernels = kernels.clone();
                    Implements::<Expression>::launch(&cuda, "generated", &mut data).unwrap();
                    let output = Implements::<Expression>::download(&cuda, &mut data).unwrap();
                    Expression::check(&input, &expected, &output, Precision::Fp32)
                        .unwrap_or_else(|e| panic!("{source} at {n}, the {shape} kernel: {e}"));
                }
            }
        }
        assert!(tried >= 2, "the cases hold expressions with special functions");
        // Settled before any call, as a caller that times the kernel at once does: the faster kernel alone compiles.
        let direct = CudaBackend::new(0).unwrap().with_kernel_cache(crate::DiskCache::off());
        let program = Expr::parse("y = exp(-x*x) * sin(3*x) + 0.75").unwrap().bind(&[]).unwrap();
        direct.settle_expression(&program, Dtype::F32).unwrap();
        assert_eq!(lock(&direct.modules).len(), 1, "one module: the faster kernel's");
        assert!(direct.expression_kernels(&program, Dtype::F32).unwrap().faster.is_none());
    }

    /// Every function of the table is spelt by CUDA C's dialect: its math library's name or a helper of
    /// [`HELPERS`] (`where` and `clamp` as expressions), each defined where it is a helper.
    #[test]
    fn every_function_has_a_cuda_spelling() {
        for (func, name, arity) in Func::ALL {
            let args: Vec<String> = (0..arity).map(|k| format!("v{k}")).collect();
            let call = CudaC::LIBRARY.call(func, &args);
            assert!(args.iter().all(|a| call.contains(a.as_str())), "{name}: {call}");
            let callee = call.split('(').next().unwrap();
            assert!(!callee.is_empty() || func == Func::Where, "{name} has no name in CUDA C: {call}");
            if callee.starts_with("gw_") {
                assert!(HELPERS.contains(&format!("float {callee}(")), "{name}: {callee} is not defined");
            }
        }
        let program = Expr::parse("y = erf(x) + expm1(x) + log1p(x) + sinh(x) + cosh(x)").unwrap().bind(&[]).unwrap();
        let source = elementwise_source(&program, Dtype::F32);
        for name in ["erff(", "expm1f(", "log1pf(", "sinhf(", "coshf("] {
            assert!(source.contains(name), "{name}: {source}");
        }
    }

    #[test]
    fn the_generated_source_holds_no_text_of_the_expression() {
        let program = Expr::parse("secret_name = 0.1 * secret_input").unwrap().bind(&[]).unwrap();
        let source = elementwise_source(&program, Dtype::F32);
        assert!(!source.contains("secret") && !source.contains("0.1"), "{source}");
        assert!(source.contains(&format!("{:#010x}", 0.1f32.to_bits())), "{source}");
    }

    /// Where CUDA runs: the pipelined path (elementwise through the chunked engine, reductions phase by phase) at
    /// lengths of one chunk and of several, with a tail past the last float4, into fresh and reused outputs.
    #[test]
    fn pipelined_runs_match_the_reference_across_chunks() {
        let Some(cuda) = gpuworthy_core::BackendKind::Cuda
            .opened_or_skipped(CudaBackend::with_host_memory(0, HostMemory::Pipelined))
        else {
            return;
        };
        for (source, scalars, values) in CASES {
            let program = Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap());
            let mut reused = Outputs::Elementwise(Vec::new());
            // (1 << 22) + 3 elements make four chunks, the last ending in a partial float4.
            for n in [0, 1, 1000, (1 << 22) + 3] {
                let params = ExprParams::new(Arc::clone(&program), n, values.to_vec());
                let input = Expression::generate(&params, 9).unwrap();
                let expected = Expression::reference(&input).unwrap();
                let output = Implements::<Expression>::run(&cuda, "generated", &input)
                    .unwrap_or_else(|e| panic!("{source} at {n}: {e}"));
                Expression::check(&input, &expected, &output, Precision::Fp32)
                    .unwrap_or_else(|e| panic!("{source} at {n}: {e}"));
                Implements::<Expression>::run_into(&cuda, "generated", &input, &mut reused)
                    .unwrap_or_else(|e| panic!("{source} at {n}, reused: {e}"));
                Expression::check(&input, &expected, &reused, Precision::Fp32)
                    .unwrap_or_else(|e| panic!("{source} at {n}, reused: {e}"));
            }
        }
    }

    /// Where CUDA runs: every case at every conformance length and at a length past the float4 body.
    #[test]
    fn generated_kernels_match_the_reference() {
        let Some(cuda) = gpuworthy_core::BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) else {
            return;
        };
        for (source, scalars, values) in CASES {
            let program = Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap());
            let lengths = CONFORMANCE_LENGTHS.into_iter().chain([1 << 20, (1 << 22) + 3]);
            for (n, dtype) in lengths.flat_map(|n| Dtype::ALL.map(|d| (n, d))) {
                let params = ExprParams::new(Arc::clone(&program), n, values.to_vec()).in_dtype(dtype);
                let input = Expression::generate(&params, 5).unwrap();
                let expected = Expression::reference(&input).unwrap();
                let output = Implements::<Expression>::run(&cuda, "generated", &input)
                    .unwrap_or_else(|e| panic!("{source} at {n} in {dtype}: {e}"));
                Expression::check(&input, &expected, &output, Precision::Fp32)
                    .unwrap_or_else(|e| panic!("{source} at {n} in {dtype}: {e}"));
            }
        }
    }

    /// On 16-bit arrays `exp`, `sin` and `cos` take their storage-sized forms, and a thread whose arguments are past
    /// their reach recomputes its elements by the math library; on `f32` arrays, in a reduction and in an element
    /// that calls none of the three, the math library computes every function.
    #[test]
    fn sixteen_bit_kernels_size_exp_sin_and_cos_to_their_storage() {
        let program = |text: &str| Expr::parse(text).unwrap().bind(&[]).unwrap();
        let e2 = program("y = exp(-x * x) * sin(3 * x) + cos(x)");
        for dtype in [Dtype::Bf16, Dtype::F16] {
            for source in [elementwise_source(&e2, dtype), first_call_source(&e2, dtype)] {
                for call in ["gw_exp16(", "gw_sin16(", "gw_cos16(", "if (far)", "gw_element_far("] {
                    assert!(source.contains(call), "{call}: {source}");
                }
                let sized = source.split("gw_element_sized(").nth(1).unwrap().split("gw_element_far(").next().unwrap();
                assert!(!sized.contains(" expf(") && !sized.contains(" sinf(") && !sized.contains(" cosf("), "{sized}");
            }
            let library = elementwise_source(&program("y = log(x) * tanh(x) + 2 * x"), dtype);
            assert!(!library.contains("gw_sin16") && !library.contains("far"), "{library}");
            let sum = reduction_source(&program("s = sum(sin(x))"), dtype);
            assert!(sum.contains("sinf(") && !sum.contains("gw_sin16"), "{sum}");
        }
        for source in [elementwise_source(&e2, Dtype::F32), first_call_source(&e2, Dtype::F32)] {
            assert!(source.contains("expf(") && source.contains("sinf(") && !source.contains("gw_sin16"), "{source}");
        }
    }

    /// A 16-bit kernel with the storage-sized functions takes its last, partial group before its loop, where that
    /// group's code costs the loop no registers (after the loop it took `exp(-x*x) * sin(3*x)` on bf16 from 32 to
    /// 40), and its loop takes whole groups only.
    #[test]
    fn sixteen_bit_sized_kernels_take_the_partial_group_before_the_loop() {
        let e2 = Expr::parse("y = exp(-x * x) * sin(3 * x)").unwrap().bind(&[]).unwrap();
        for dtype in [Dtype::Bf16, Dtype::F16] {
            let source = elementwise_source(&e2, dtype);
            let partial = source.find("for (long long i = n / 8 * 8; i < n; ++i)").expect("the partial group's loop");
            let groups = source.find("for (long long q = first; q < n / 8; q += stride)").expect("the groups' loop");
            assert!(partial < groups, "{source}");
            assert_eq!(source.matches("gw_element_sized(").count(), 1 + 8 + 1, "{source}");
        }
    }

    /// On 16-bit arrays a thread moves 16 bytes a load as on f32 ones: a `uint4` of eight elements of each input
    /// and each output, the element function inlined eight times where it calls no special function or two or more,
    /// else as often as on f32 arrays in a loop over the eight; a
    /// reduction reads a `uint4` a trip and combines its eight terms in a tree.
    #[test]
    fn sixteen_bit_kernels_move_sixteen_bytes_a_load() {
        for dtype in [Dtype::F16, Dtype::Bf16] {
            for (text, copies) in [("y = a * x + z", 8), ("y = a * exp(x) * sin(z)", 8), ("y = a * sin(z) + x", 2)] {
                let program = Expr::parse(text).unwrap().bind(&["a"]).unwrap();
                let source = elementwise_source(&program, dtype);
                assert_eq!(source.matches("reinterpret_cast<const uint4*>").count(), 2, "{source}");
                assert_eq!(source.matches("reinterpret_cast<uint4*>").count(), 1, "{source}");
                // The element as defined and each inlined copy: the storage-sized one where the element calls `exp`,
                // `sin` or `cos`, with one more copy for the last, partial group before the loop.
                let (element, tail) = if text.contains("sin") { ("gw_element_sized(", 1) } else { ("gw_element(", 0) };
                assert_eq!(source.matches(element).count(), 1 + copies + tail, "{text}: {source}");
                assert!(!source.contains("float4"), "{source}");
            }
            let sum = Expr::parse("s = sum(x * x)").unwrap().bind(&[]).unwrap();
            let source = reduction_source(&sum, dtype);
            // The main loop's loads in flight and the loop after it, one `uint4` (eight terms) each.
            let loads = REDUCE_LOADS_IN_FLIGHT + 1;
            assert!(
                source.contains("q < n / 8") && source.contains("__ldg(reinterpret_cast<const uint4*>(p_in0) + (q))")
            );
            assert_eq!(source.matches("reinterpret_cast<const uint4*>(p_in0)").count(), loads, "{source}");
            assert_eq!(source.matches("gw_term(x0_").count(), 8 * loads, "{source}");
        }
    }
}
