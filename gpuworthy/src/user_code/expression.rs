//! A user's expression as the tool takes it: the text, the scalars' values (`--set a=2,b=1`) and the inputs' ranges
//! (`--range x=0:1`), turned into the parameters of the [`Expression`] workload, and its entry in the run-time list
//! of workloads ([`expression_entry`]), so that the sweep, calibration and evaluation take an expression as they take
//! a built-in workload.
//!
//! The command line, the library and the Python package read these pieces the same way, so they live here, once:
//! every mistake is an [`Error::InvalidInput`] whose text points at what is wrong (a language error with its caret, a
//! value that is not a number, a name the expression does not have).

use std::sync::Arc;
use std::time::{Duration, Instant};

use gpuworthy_core::expr::{
    ELEMENTWISE_BASE, Expr, ExprInput, ExprParams, Expression, Func, HostArray, Outputs, REDUCTION_BASE, base_params,
    expression_ladder, instance_name,
};
use gpuworthy_core::{Dtype, Error, Result};

use crate::Device;
use crate::choose::catalog::WorkloadOf;
use crate::measure::names::WorkloadName;
use crate::measure::size::parse_count;
use crate::model::calibration::{Calibration, CalibrationDevices, WorkloadCalibration, calibrate_workload_with};
use crate::model::sweep::Progress;
use crate::model::{ComputeRates, RateSample};

/// An expression with its scalars' values and its inputs' ranges, not yet at a length.
///
/// ```
/// use gpuworthy::core::Dtype;
/// use gpuworthy::user_code::expression::ExpressionRequest;
///
/// let request = ExpressionRequest {
///     source: "y = a * log(x)".to_owned(),
///     scalars: vec![("a".to_owned(), 2.0)],
///     ranges: vec![("x".to_owned(), 1.0, 2.0)],
///     dtype: Dtype::F32,
/// };
/// let params = request.params(1 << 20)?;
/// assert_eq!((params.n, params.program.inputs.len()), (1 << 20, 1));
/// assert_eq!((params.scalars.as_slice(), params.ranges.as_slice()), (&[2.0][..], &[(1.0, 2.0)][..]));
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ExpressionRequest {
    /// The expression's text.
    pub source: String,
    /// Each scalar's name and value.
    pub scalars: Vec<(String, f32)>,
    /// Each input's name and the range its values are drawn from (`[-1, 1)` for an input not named).
    pub ranges: Vec<(String, f32, f32)>,
    /// How the arrays are stored (`--dtype`): `f32`, or 16-bit elements computed in `f32`.
    pub dtype: Dtype,
}

/// Splits command-line items such as `a=2,b=1` (several items, each a comma-separated list) into `(name, value)`
/// pairs; `flag` names the option in errors.
fn assignments<'a>(flag: &str, items: &'a [String]) -> Result<Vec<(&'a str, &'a str)>> {
    let mut pairs = Vec::new();
    for item in items {
        for part in item.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| Error::invalid(format!("{flag} `{part}`: write NAME=VALUE, e.g. {flag} x=1")))?;
            let name = name.trim();
            if name.is_empty() {
                return Err(Error::invalid(format!("{flag} `{part}`: the name before `=` is missing")));
            }
            if pairs.iter().any(|(seen, _)| *seen == name) {
                return Err(Error::invalid(format!("{flag}: `{name}` is given twice")));
            }
            pairs.push((name, value.trim()));
        }
    }
    Ok(pairs)
}

/// An `f32` from `text` (`nan`, `inf` and `-inf` included: a scalar computes as IEEE arithmetic gives it, as Python's
/// `float("nan")` does), or an error naming the flag and the item.
fn number(flag: &str, name: &str, text: &str) -> Result<f32> {
    text.parse::<f32>().map_err(|_| Error::invalid(format!("{flag} {name}={text}: `{text}` is not a number")))
}

/// A finite `f32` from `text` (a range's end: inputs are drawn between the ends), or an error naming the flag and the
/// item.
fn finite_number(flag: &str, name: &str, text: &str) -> Result<f32> {
    match text.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(Error::invalid(format!("{flag} {name}={text}: `{text}` is not a finite number"))),
    }
}

impl ExpressionRequest {
    /// The request from the command line's pieces: the text, `--set` items (`a=2`, or `a=2,b=1`) and `--range`
    /// items (`x=0:1`). Checked against the expression: a name it does not read, a range for a scalar or for an
    /// output, a range whose low end is not below its high end, each an error.
    ///
    /// ```
    /// use gpuworthy::user_code::expression::ExpressionRequest;
    ///
    /// let request = ExpressionRequest::from_command_line("y = a*log(x) + b", &["a=2,b=1".into()], &["x=0.5:4".into()])?;
    /// let params = request.params(1000)?;
    /// assert_eq!((params.scalars.as_slice(), params.ranges.as_slice()), (&[2.0, 1.0][..], &[(0.5, 4.0)][..]));
    /// assert!(ExpressionRequest::from_command_line("y = x", &["z=1".into()], &[]).is_err());
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn from_command_line(source: &str, sets: &[String], ranges: &[String]) -> Result<ExpressionRequest> {
        let scalars = assignments("--set", sets)?
            .into_iter()
            .map(|(name, value)| Ok((name.to_owned(), number("--set", name, value)?)))
            .collect::<Result<Vec<_>>>()?;
        let ranges = assignments("--range", ranges)?
            .into_iter()
            .map(|(name, value)| {
                let (low, high) = value.split_once(':').ok_or_else(|| {
                    Error::invalid(format!("--range {name}={value}: write LOW:HIGH, e.g. --range {name}=0:1"))
                })?;
                let (low, high) = (finite_number("--range", name, low)?, finite_number("--range", name, high)?);
                if low >= high {
                    return Err(Error::invalid(format!(
                        "--range {name}={value}: the low end must be below the high end"
                    )));
                }
                Ok((name.to_owned(), low, high))
            })
            .collect::<Result<Vec<_>>>()?;
        let request = ExpressionRequest { source: source.to_owned(), scalars, ranges, dtype: Dtype::F32 };
        request.params(0)?;
        Ok(request)
    }

    /// The same request on arrays stored as `dtype` (`--dtype`).
    ///
    /// ```
    /// use gpuworthy::core::Dtype;
    /// use gpuworthy::user_code::expression::ExpressionRequest;
    ///
    /// let request = ExpressionRequest::from_command_line("y = a*x + b", &["a=2,b=1".into()], &[])?;
    /// assert_eq!(request.in_dtype(Dtype::Bf16).params(1024)?.dtype, Dtype::Bf16);
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn in_dtype(self, dtype: Dtype) -> ExpressionRequest {
        ExpressionRequest { dtype, ..self }
    }

    /// The parameters of the expression at length `n`: parsed, bound (the named scalars are scalars, the other
    /// names input arrays), with the ranges applied.
    ///
    /// ```
    /// use gpuworthy::user_code::expression::ExpressionRequest;
    ///
    /// let request = ExpressionRequest::from_command_line("y = a*x + z", &["a=3".into()], &["z=0:1".into()])?;
    /// let params = request.params(4096)?;
    /// assert_eq!((params.n, params.program.inputs.len(), params.scalars.as_slice()), (4096, 2, &[3.0][..]));
    /// assert_eq!(params.ranges, [(-1.0, 1.0), (0.0, 1.0)]); // x keeps the default range
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn params(&self, n: usize) -> Result<ExprParams> {
        let source = &self.source;
        let expr = Expr::parse(source).map_err(|e| e.into_error(source))?;
        let names: Vec<&str> = self.scalars.iter().map(|(name, _)| name.as_str()).collect();
        let program = expr.bind(&names).map_err(|e| e.into_error(source))?;
        // Bound in the program's order, which need not be the command line's.
        let scalars = program
            .scalars
            .iter()
            .map(|s| self.scalars.iter().find(|(name, _)| name == s).map(|(_, v)| *v))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| Error::invalid("a scalar of the expression has no value"))?;
        let mut params = ExprParams::new(Arc::new(program), n, scalars).in_dtype(self.dtype);
        for (name, low, high) in &self.ranges {
            let k = params.program.inputs.iter().position(|input| input == name).ok_or_else(|| {
                let what = if params.program.scalars.contains(name) {
                    "is a scalar (given by --set), not an input array".to_owned()
                } else {
                    format!("is not an input of the expression (it reads {})", params.program.inputs.join(", "))
                };
                Error::invalid(format!("--range {name}: `{name}` {what}"))
            })?;
            params.ranges[k] = (*low, *high);
        }
        Ok(params)
    }
}

impl ExpressionRequest {
    /// The elements [`ExpressionRequest::domain_warning`] tries.
    ///
    /// ```
    /// use gpuworthy::user_code::expression::ExpressionRequest;
    ///
    /// let request = ExpressionRequest::from_command_line("y = log(x)", &[], &["x=0.5:2".into()])?;
    /// let sample = request.params(ExpressionRequest::DOMAIN_SAMPLE)?; // what the warning evaluates
    /// assert_eq!((sample.n, sample.ranges[0]), (4096, (0.5, 2.0)));
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub const DOMAIN_SAMPLE: usize = 4096;

    /// A warning when a function of the expression gives NaN at every element of a sample drawn from the inputs'
    /// ranges although its arguments are numbers (`log` of inputs in [-1, 1) is NaN at half of them, not at all;
    /// `log` of `x - 2` is NaN at every one): the measurement would time NaNs. It names the function and the ranges.
    ///
    /// ```
    /// use gpuworthy::user_code::expression::ExpressionRequest;
    ///
    /// let request = ExpressionRequest::from_command_line("y = sqrt(x - 2)", &[], &[])?;
    /// let warning = request.domain_warning()?.expect("x - 2 is negative for every x in [-1, 1)");
    /// assert!(warning.contains("`sqrt`") && warning.contains("x in [-1, 1)"), "{warning}");
    /// let shifted = ExpressionRequest::from_command_line("y = sqrt(x - 2)", &[], &["x=2:3".into()])?;
    /// assert_eq!(shifted.domain_warning()?, None);
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn domain_warning(&self) -> Result<Option<String>> {
        use gpuworthy_core::Workload;
        let params = self.params(Self::DOMAIN_SAMPLE)?;
        let input = Expression::generate(&params, 1)?;
        let values = input.values();
        let slices = gpuworthy_core::expr::as_slices(&values);
        let Some(func) = params.program.nan_everywhere(&slices, &params.scalars)? else { return Ok(None) };
        let ranges: Vec<String> = params
            .program
            .inputs
            .iter()
            .zip(&params.ranges)
            .map(|(name, (low, high))| format!("{name} in [{low}, {high})"))
            .collect();
        Ok(Some(format!(
            "`{}` gives NaN at every element tried ({}): its argument is outside its domain there; give the inputs a \
             range it accepts with --range NAME=LOW:HIGH",
            func.name(),
            ranges.join(", ")
        )))
    }
}

/// One output of an expression: an array, or a reduction's value.
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::core::expr::Expr;
/// use gpuworthy::user_code::expression::ExprValue;
///
/// let expr = Expr::parse("m = max(abs(x))").map_err(|e| e.into_error("m = max(abs(x))"))?;
/// let x = [1.0, -3.0, 2.0];
/// let out = Device::cpu()?.run_expr(&expr, &[("x", &x)], &[])?;
/// assert_eq!(out.get("m"), Some(&ExprValue::Value(3.0)));
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ExprValue {
    /// An elementwise output, one value per element.
    Array(Vec<f32>),
    /// An elementwise output of 16-bit elements of the type, as their bits.
    HalfArray(Dtype, Vec<u16>),
    /// A reduction's value.
    Value(f32),
}

impl ExprValue {
    /// An array's values as `f32` (16-bit elements widened exactly); `None` for a reduction's value.
    ///
    /// ```
    /// use gpuworthy::core::Dtype;
    /// use gpuworthy::user_code::expression::ExprValue;
    ///
    /// let half = ExprValue::HalfArray(Dtype::Bf16, vec![0x3f80, 0x4000]); // 1 and 2 in bf16
    /// assert_eq!(half.widened(), Some(vec![1.0, 2.0]));
    /// ```
    pub fn widened(&self) -> Option<Vec<f32>> {
        match self {
            ExprValue::Array(values) => Some(values.clone()),
            ExprValue::HalfArray(dtype, bits) => Some(bits.iter().map(|&b| dtype.decode(b)).collect()),
            ExprValue::Value(_) => None,
        }
    }
}

/// An expression's outputs by name, in the order the expression assigns them.
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::core::expr::Expr;
///
/// let source = "u = x + 1; v = x * 2";
/// let expr = Expr::parse(source).map_err(|e| e.into_error(source))?;
/// let out = Device::cpu()?.run_expr(&expr, &[("x", &[1.0, 2.0])], &[])?;
/// let names: Vec<&str> = out.outputs.iter().map(|(name, _)| name.as_str()).collect();
/// assert_eq!(names, ["u", "v"]);
/// assert_eq!(out.array("v"), Some(&[2.0, 4.0][..]));
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExprOutputs {
    /// Each output's name and value.
    pub outputs: Vec<(String, ExprValue)>,
}

impl ExprOutputs {
    /// The output called `name`.
    ///
    /// ```
    /// use gpuworthy::user_code::expression::{ExprOutputs, ExprValue};
    ///
    /// let out = ExprOutputs { outputs: vec![("y".to_owned(), ExprValue::Array(vec![0.0, 2.0]))] };
    /// assert_eq!(out.get("y"), Some(&ExprValue::Array(vec![0.0, 2.0])));
    /// assert_eq!(out.get("z"), None);
    /// ```
    pub fn get(&self, name: &str) -> Option<&ExprValue> {
        self.outputs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The elementwise output called `name`, if there is one.
    ///
    /// ```
    /// use gpuworthy::user_code::expression::{ExprOutputs, ExprValue};
    ///
    /// let out = ExprOutputs { outputs: vec![("y".to_owned(), ExprValue::Array(vec![0.0, 2.0]))] };
    /// assert_eq!(out.array("y"), Some(&[0.0, 2.0][..]));
    /// assert_eq!(out.value("y"), None); // an array, not a reduction's value
    /// ```
    pub fn array(&self, name: &str) -> Option<&[f32]> {
        match self.get(name)? {
            ExprValue::Array(values) => Some(values),
            ExprValue::HalfArray(..) | ExprValue::Value(_) => None,
        }
    }

    /// The reduction's value called `name`, if there is one.
    ///
    /// ```
    /// use gpuworthy::user_code::expression::{ExprOutputs, ExprValue};
    ///
    /// let out = ExprOutputs { outputs: vec![("s".to_owned(), ExprValue::Value(25.0))] };
    /// assert_eq!(out.value("s"), Some(25.0));
    /// assert_eq!(out.array("s"), None); // a value, not an array
    /// ```
    pub fn value(&self, name: &str) -> Option<f32> {
        match self.get(name)? {
            ExprValue::Value(v) => Some(*v),
            ExprValue::Array(_) | ExprValue::HalfArray(..) => None,
        }
    }
}

/// The input of the [`Expression`] workload for `expr` with these named arrays and scalars: every array the
/// expression reads given once, every other name a scalar, all arrays of one length; an error names what is missing,
/// unknown or of another length. The arrays are copied into the input, which owns them; [`with_input`] lends them
/// instead, for one call.
///
/// An input that owns its arrays is what resident use takes: uploaded once, launched as often as wanted on the
/// device, downloaded when the result is wanted.
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::core::expr::{Expr, Expression};
/// use gpuworthy::user_code::expression::{expression_input, named_outputs};
///
/// let expr = Expr::parse("y = 2*x").map_err(|e| e.into_error("y = 2*x"))?;
/// let input = expression_input(&expr, &[("x", &[0.0, 1.0, 2.0])], &[])?;
/// let device = Device::cpu()?;
/// let variant = device.best_variant::<Expression>(&input.params);
/// let mut resident = device.upload::<Expression>(&input)?; // the data stays on the device
/// for _ in 0..3 {
///     device.launch(variant, &mut resident)?;
/// }
/// let out = named_outputs(&input, device.download(&mut resident)?);
/// assert_eq!(out.array("y"), Some(&[0.0, 2.0, 4.0][..]));
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn expression_input(expr: &Expr, inputs: &[(&str, &[f32])], scalars: &[(&str, f32)]) -> Result<ExprInput> {
    build_input(expr, inputs, scalars, Dtype::F32, |array| Ok(HostArray::from(array.to_vec())))
}

/// Calls `f` with the input of the [`Expression`] workload for `expr` with these named arrays and scalars (checked as
/// [`expression_input`] checks them), its arrays read in place from `inputs`, with no copy: how [`Device::run_expr`],
/// [`crate::choose::auto::Auto::run_expr`] and the Python package hand a caller's arrays to a backend. The input lives only
/// for the call; a clone of it taken inside `f` owns a copy of the arrays.
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::core::expr::{Expr, Expression};
///
/// let expr = Expr::parse("y = 2*x").map_err(|e| e.into_error("y = 2*x"))?;
/// let x = vec![1.0, 2.0];
/// let y = gpuworthy::user_code::expression::with_input(&expr, &[("x", &x)], &[], |input| {
///     assert!(input.arrays[0].is_borrowed() && input.arrays[0].as_bytes().as_ptr() == x.as_ptr().cast());
///     Device::cpu()?.run::<Expression>("blocks", input)
/// })?;
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn with_input<T>(
    expr: &Expr,
    inputs: &[(&str, &[f32])],
    scalars: &[(&str, f32)],
    f: impl FnOnce(&ExprInput) -> Result<T>,
) -> Result<T> {
    // SAFETY: every array borrowed here reads a slice of `inputs`, which outlives this function; the input holding
    // them is dropped before it returns, `f` sees it only by reference (it cannot move the arrays out), and a clone
    // made inside `f` owns copies. Nothing is written through the arrays.
    let input = build_input(expr, inputs, scalars, Dtype::F32, |array| Ok(unsafe { HostArray::borrowing(array) }))?;
    f(&input)
}

/// [`with_input`] for arrays of 16-bit elements of `dtype` ([`Dtype::F16`] or [`Dtype::Bf16`]), given as their bits
/// (a NumPy `float16` array viewed as `uint16`, a torch `bfloat16` tensor viewed as `int16`): the expression runs on
/// that storage, as `--dtype` runs it, and its array outputs come back as [`ExprValue::HalfArray`] of the same type.
/// Every array the expression reads is of that one type; `dtype` [`Dtype::F32`] is refused (that is [`with_input`]).
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::core::Dtype;
/// use gpuworthy::core::expr::{Expr, Expression};
/// use gpuworthy::user_code::expression::{ExprValue, named_outputs, with_stored_input};
///
/// let expr = Expr::parse("y = 2*x + 1").map_err(|e| e.into_error("y = 2*x + 1"))?;
/// let bf16 = |values: &[f32]| values.iter().map(|&v| Dtype::Bf16.encode(v)).collect::<Vec<u16>>();
/// let x = bf16(&[1.0, 2.5]); // bf16 bits
/// let out = with_stored_input(&expr, Dtype::Bf16, &[("x", &x)], &[], |input| {
///     let outputs = Device::cpu()?.run::<Expression>("blocks", input)?;
///     Ok(named_outputs(input, outputs))
/// })?;
/// assert_eq!(out.get("y"), Some(&ExprValue::HalfArray(Dtype::Bf16, bf16(&[3.0, 6.0]))));
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn with_stored_input<T>(
    expr: &Expr,
    dtype: Dtype,
    inputs: &[(&str, &[u16])],
    scalars: &[(&str, f32)],
    f: impl FnOnce(&ExprInput) -> Result<T>,
) -> Result<T> {
    // SAFETY: as in `with_input`: every array borrowed here reads a slice of `inputs`, which outlives this function,
    // and the input holding them is dropped before it returns; `f` sees it only by reference. Nothing is written
    // through the arrays.
    let input = build_input(expr, inputs, scalars, dtype, |bits| unsafe { HostArray::borrowing_bits(dtype, bits) })?;
    f(&input)
}

/// [`expression_input`]'s checks, with each array made by `array` and stored as `dtype`.
fn build_input<E>(
    expr: &Expr,
    inputs: &[(&str, &[E])],
    scalars: &[(&str, f32)],
    dtype: Dtype,
    array: impl Fn(&[E]) -> Result<HostArray>,
) -> Result<ExprInput> {
    let names: Vec<&str> = scalars.iter().map(|(name, _)| *name).collect();
    let program = expr.bind(&names).map_err(|e| Error::invalid(e.to_string()))?;
    let mut arrays = Vec::with_capacity(program.inputs.len());
    for name in &program.inputs {
        let given: Vec<&[E]> = inputs.iter().filter(|(n, _)| n == name).map(|(_, a)| *a).collect();
        match given.as_slice() {
            [given] => arrays.push(array(given)?),
            [] => {
                return Err(Error::invalid(format!(
                    "the expression reads the array `{name}`, which was not given (a scalar needs a value instead)"
                )));
            }
            _ => return Err(Error::invalid(format!("the array `{name}` is given twice"))),
        }
    }
    if let Some((name, _)) = inputs.iter().find(|(n, _)| !program.inputs.iter().any(|i| i == n)) {
        return Err(Error::invalid(format!(
            "`{name}` is given as an array, but the expression reads no array of that name (it reads {})",
            program.inputs.join(", ")
        )));
    }
    let values = program
        .scalars
        .iter()
        .map(|s| scalars.iter().find(|(n, _)| n == s).map(|(_, v)| *v))
        .collect::<Option<Vec<f32>>>()
        .ok_or_else(|| Error::invalid("a scalar of the expression has no value"))?;
    let lengths: Vec<usize> = arrays.iter().map(HostArray::len).collect();
    let n = program.length_of(&lengths, &values)?;
    Ok(ExprInput { params: ExprParams::new(Arc::new(program), n, values).in_dtype(dtype), arrays })
}

/// `outputs` of `input`'s program, by name.
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::core::expr::{Expr, Expression};
/// use gpuworthy::user_code::expression::{expression_input, named_outputs};
///
/// let expr = Expr::parse("s = sum(x*x)").map_err(|e| e.into_error("s = sum(x*x)"))?;
/// let input = expression_input(&expr, &[("x", &[3.0, 4.0])], &[])?;
/// let device = Device::cpu()?;
/// let outputs = device.run::<Expression>(device.best_variant::<Expression>(&input.params), &input)?;
/// assert_eq!(named_outputs(&input, outputs).value("s"), Some(25.0));
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn named_outputs(input: &ExprInput, outputs: Outputs) -> ExprOutputs {
    let program = &input.params.program;
    let outputs = match outputs {
        Outputs::Elementwise(arrays) => {
            program.outputs.iter().map(|o| o.name.clone()).zip(arrays.into_iter().map(ExprValue::Array)).collect()
        }
        Outputs::Half { dtype, arrays } => program
            .outputs
            .iter()
            .map(|o| o.name.clone())
            .zip(arrays.into_iter().map(|bits| ExprValue::HalfArray(dtype, bits)))
            .collect(),
        Outputs::Reduction(value) => {
            program.reduction.iter().map(|r| (r.name.clone(), ExprValue::Value(value))).collect()
        }
    };
    ExprOutputs { outputs }
}

impl Device {
    /// Runs `expr` on this device with these named arrays and scalars (its best variant, data from the host and
    /// back) and returns its outputs by name.
    ///
    /// ```
    /// use gpuworthy::Device;
    /// use gpuworthy::core::expr::Expr;
    ///
    /// let expr = Expr::parse("y = a*x + b").map_err(|e| e.into_error("y = a*x + b"))?;
    /// let x = [1.0, 2.0, 3.0];
    /// let out = Device::cpu()?.run_expr(&expr, &[("x", &x)], &[("a", 2.0), ("b", 1.0)])?;
    /// assert_eq!(out.array("y"), Some(&[3.0, 5.0, 7.0][..]));
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn run_expr(&self, expr: &Expr, inputs: &[(&str, &[f32])], scalars: &[(&str, f32)]) -> Result<ExprOutputs> {
        with_input(expr, inputs, scalars, |input| {
            self.check_size::<Expression>(&input.params)?;
            let outputs = self.run::<Expression>(self.best_variant::<Expression>(&input.params), input)?;
            Ok(named_outputs(input, outputs))
        })
    }
}

/// Runs `expr` where the process's `auto` ([`crate::choose::auto::global`]) predicts it fastest with the data on the host, and
/// returns its outputs by name and the choice (the device, the variant and the reason in words).
///
/// ```no_run
/// use gpuworthy::core::expr::Expr;
///
/// let expr = Expr::parse("s = sum(x*x)").map_err(|e| e.into_error("s = sum(x*x)"))?;
/// let x = [3.0, 4.0];
/// let (out, choice) = gpuworthy::user_code::expression::run_expr_auto(&expr, &[("x", &x)], &[])?;
/// assert_eq!(out.value("s"), Some(25.0));
/// println!("ran on {} because {}", choice.device.label(), choice.reason);
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn run_expr_auto(
    expr: &Expr,
    inputs: &[(&str, &[f32])],
    scalars: &[(&str, f32)],
) -> Result<(ExprOutputs, crate::choose::auto::Choice)> {
    crate::choose::auto::global()?.run_expr(expr, inputs, scalars)
}

impl crate::choose::auto::Auto {
    /// Runs `expr` where this `auto` predicts it fastest with the data on the host (from the expression's own
    /// calibration, or from its cost when it was never measured), and returns its outputs by name and the choice.
    ///
    /// ```
    /// use gpuworthy::{Device, choose::auto::Auto, core::expr::Expr, model::Model};
    ///
    /// let auto = Auto::with_model(vec![Device::cpu()?], Model::default());
    /// let expr = Expr::parse("y = 2*x").map_err(|e| e.into_error("y = 2*x"))?;
    /// let (out, choice) = auto.run_expr(&expr, &[("x", &[1.0, 2.0])], &[])?;
    /// assert_eq!(out.array("y"), Some(&[2.0, 4.0][..]));
    /// assert!(choice.reason.contains("CPU"), "{}", choice.reason);
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn run_expr(
        &self,
        expr: &Expr,
        inputs: &[(&str, &[f32])],
        scalars: &[(&str, f32)],
    ) -> Result<(ExprOutputs, crate::choose::auto::Choice)> {
        with_input(expr, inputs, scalars, |input| {
            let choice = self.decide::<Expression>(&input.params, crate::model::Placement::Host, Some(input))?;
            let outputs = choice.device.run::<Expression>(choice.variant, input)?;
            Ok((named_outputs(input, outputs), choice))
        })
    }
}

/// The sweep's, calibration's and evaluation's entry for `request`'s expression ([`WorkloadEntry`]): measured at
/// ladders of lengths ([`expression_ladder`]), or at lengths given as text (`--sizes 1024,2^20`).
///
/// ```
/// use gpuworthy::choose::catalog::WorkloadEntry;
/// use gpuworthy::user_code::expression::{ExpressionRequest, expression_entry};
/// use gpuworthy::measure::size::SizeRequest;
///
/// let entry = expression_entry(&ExpressionRequest::from_command_line("s = sum(x*x)", &[], &[])?)?;
/// assert_eq!(entry.name(), "expr");
/// assert_eq!(entry.sizes(&SizeRequest::quick())?, ["1024", "16384", "262144", "4194304"]);
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn expression_entry(request: &ExpressionRequest) -> Result<WorkloadOf<Expression>> {
    let template = request.params(0)?;
    let (full, quick) = (expression_ladder(&template, false), expression_ladder(&template, true));
    Ok(WorkloadOf::with_ladders(full, quick, move |text| Ok(template.with_len(parse_count(text)?))))
}

/// Measures `template`'s expression over its calibration ladder on every device (and the pinned and pipelined
/// twins), its rows named by the expression's instance ([`instance_name`]) so that the model holds it apart from
/// every other expression.
///
/// ```no_run
/// use gpuworthy::Device;
/// use gpuworthy::model::calibration::CalibrationDevices;
/// use gpuworthy::user_code::expression::{ExpressionRequest, calibrate_expression};
///
/// let devices = CalibrationDevices::of(&Device::all_available().devices);
/// let request = ExpressionRequest::from_command_line("y = exp(-x*x)", &[], &[])?;
/// let part = calibrate_expression(&devices, &request.params(0)?, &()); // `()`: no progress report
/// println!("{}: {} rows over {:?}", part.workload, part.rows.len(), part.sizes);
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn calibrate_expression(
    devices: &CalibrationDevices,
    template: &ExprParams,
    progress: &dyn Progress,
) -> WorkloadCalibration {
    let (full, quick) = (expression_ladder(template, false), expression_ladder(template, true));
    let options = crate::model::sweep::SweepOptions {
        validate_up_to_flops: VALIDATE_UP_TO_FLOPS,
        ..crate::model::calibration::calibration_options()
    };
    let mut part = calibrate_workload_with::<Expression>(devices, &full, quick, &options, progress);
    let name = WorkloadName::from(instance_name(&template.program));
    for row in part.rows.iter_mut().chain(part.pinned_rows.iter_mut()) {
        row.workload = name.clone();
    }
    part.workload = name;
    part
}

/// The flops up to which calibration and evaluation check an expression's result: its check evaluates the program
/// again in `f64` with a bound per value, on one core, which at 2^22 elements takes longer than the measurement (the
/// conformance tests check every backend thoroughly).
const VALIDATE_UP_TO_FLOPS: u64 = 1 << 20;

/// Calls of one function per element in a rate probe: enough that the calls, not the memory traffic, take the time.
const PROBE_CALLS: usize = 16;

/// A probe's kernel should take at least this long, so that its time is not the launch's.
const PROBE_TIME: Duration = Duration::from_millis(2);

/// The fewest elements a probe takes.
const PROBE_MIN_LEN: usize = 1 << 20;

/// The most elements a probe takes.
const PROBE_MAX_LEN: usize = 1 << 24;

/// The rate probe of `call` (`None`: the same arithmetic without calls): `y = f(x*c0) + f(x*c1) + ...` over
/// [`PROBE_CALLS`] factors in `(0.5, 1]`, for `x` in [`PROBE_RANGE`], where most expressions' arguments lie (the cost
/// of some functions depends on the argument: `tanh` takes another path past 0.55). Functions defined for positive
/// arguments only take `abs(x)`, `asin` and `acos` half the factors, so that no call takes a NaN's fast path; a
/// function of two arguments takes `x` as its second.
fn probe_source(call: Option<(&str, usize)>) -> String {
    let terms: Vec<String> = (0..PROBE_CALLS)
        .map(|k| {
            let factor = 1.0 - k as f32 / (2 * PROBE_CALLS) as f32;
            let name = call.map_or("", |(name, _)| name);
            if name == "where" {
                return format!("where(x * {factor:?} > 0.0, x * {factor:?}, 0.5)");
            }
            let argument = match name {
                "sqrt" | "log" | "log2" | "log1p" | "pow" => format!("abs(x) * {factor:?}"),
                "asin" | "acos" => format!("x * {:?}", factor / 2.0),
                _ => format!("x * {factor:?}"),
            };
            match call {
                None => argument,
                Some((name, 1)) => format!("{name}({argument})"),
                Some((name, _)) => format!("{name}({argument}, x)"),
            }
        })
        .collect();
    format!("y = {}", terms.join(" + "))
}

/// The range of the probes' input.
const PROBE_RANGE: (f32, f32) = (-2.0, 2.0);

/// The input of every probe at `n` elements, made once per length: uniform in [`PROBE_RANGE`].
fn probe_input(n: usize) -> Vec<f32> {
    gpuworthy_core::rng::uniform_f32(1, 0, n, PROBE_RANGE.0, PROBE_RANGE.1)
}

/// The parameters of the probe `source` at `n` elements.
fn probe_params(source: &str, n: usize) -> Result<ExprParams> {
    let program = Expr::parse(source).and_then(|e| e.bind(&[])).map_err(|e| e.into_error(source))?;
    let mut params = ExprParams::new(Arc::new(program), n, Vec::new());
    params.ranges = vec![PROBE_RANGE];
    Ok(params)
}

/// Compiles every probe of `special` (and the plain and arithmetic ones) on `device` at once, a thread each: a
/// GPU's compiler takes a tenth of a second or more per program, and one after another they were most of the
/// calibration of rates. Failures are left for the probe itself to meet and skip.
fn compile_probes(device: &Device, special: &[(&str, usize)]) {
    let mut sources = vec![probe_source(None), horner_probe()];
    sources.extend(special.iter().map(|&call| probe_source(Some(call))));
    let programs: Vec<ExprParams> = sources.iter().filter_map(|s| probe_params(s, PROBE_SHORT_LEN).ok()).collect();
    compile_at_once(device, &programs);
}

/// Compiles each of `programs` for `device` (the kernel that will be timed, [`Device::settle`]), a thread each: NVRTC and
/// a Vulkan driver compile one program in a tenth of a second or more, and do several at once. Errors are left for
/// the program's first run to meet.
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::user_code::expression::{ExpressionRequest, compile_at_once};
///
/// let programs = ["y = exp(-x*x)", "y = tanh(2*x)", "s = sum(x*x)"]
///     .iter()
///     .map(|source| ExpressionRequest::from_command_line(source, &[], &[])?.params(1 << 10))
///     .collect::<Result<Vec<_>, _>>()?;
/// compile_at_once(&Device::cpu()?, &programs); // on a GPU, its compiler takes them side by side
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn compile_at_once(device: &Device, programs: &[ExprParams]) {
    std::thread::scope(|scope| {
        for params in programs {
            scope.spawn(move || {
                let variant = device.best_variant::<Expression>(params);
                let _ = device.settle::<Expression>(variant, params);
            });
        }
    });
}

/// Compiles the [`EVALUATION_EXPRESSIONS`] on each GPU of `devices` at once ([`compile_at_once`]), before the
/// evaluation measures them one after another (their compile phase is not what it measures).
///
/// ```no_run
/// use gpuworthy::Device;
/// use gpuworthy::user_code::expression::compile_evaluation_expressions;
///
/// let devices = Device::all_available().devices;
/// compile_evaluation_expressions(&devices); // the CPU has nothing to compile: the GPUs' kernels are ready
/// ```
pub fn compile_evaluation_expressions(devices: &[Device]) {
    let programs: Vec<ExprParams> = EVALUATION_EXPRESSIONS
        .iter()
        .filter_map(|(source, scalars)| {
            let sets: Vec<String> = scalars.iter().map(|(name, value)| format!("{name}={value}")).collect();
            ExpressionRequest::from_command_line(source, &sets, &[]).and_then(|r| r.params(PROBE_SHORT_LEN)).ok()
        })
        .collect();
    for device in devices.iter().filter(|d| d.is_gpu()) {
        compile_at_once(device, &programs);
    }
}

/// The arithmetic probe: a 32-term polynomial (64 operations per element), against the plain probe's 31.
fn horner_probe() -> String {
    (0..32).fold("y = x".to_owned(), |acc, k| format!("{acc} * x + {:?}", 1.0 / (k + 2) as f32))
}

/// The kernel time of `source` on `device` over `x` (resident data, the median of five device-timed runs).
fn probe_kernel(device: &Device, source: &str, x: &[f32]) -> Result<f64> {
    let params = probe_params(source, x.len())?;
    device.check_size::<Expression>(&params)?;
    let variant = device.best_variant::<Expression>(&params);
    device.settle::<Expression>(variant, &params)?;
    let input = ExprInput { params, arrays: vec![HostArray::from(x.to_vec())] };
    let mut resident = device.upload::<Expression>(&input)?;
    device.launch::<Expression>(variant, &mut resident)?;
    let mut times = Vec::with_capacity(5);
    for _ in 0..5 {
        let t = device.backend().time_on_device(&mut || device.launch::<Expression>(variant, &mut resident))?;
        times.push(t.as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[2])
}

/// The rates of `device` at `n` elements: each special function's call and an arithmetic operation, from probes of
/// [`PROBE_CALLS`] calls per element against the same arithmetic without them. A probe that fails is an error naming
/// it and the device, never a rate of zero (which would price the function as free).
fn rate_sample(device: &Device, n: usize, special: &[(&str, usize)], progress: &dyn Progress) -> Result<RateSample> {
    let per_element = |t: f64, count: usize| t / (count as f64 * n as f64);
    let x = probe_input(n);
    let probe = |what: &str, source: &str| {
        let time = probe_kernel(device, source, &x)
            .map_err(|e| Error::invalid(format!("{}: the {what} probe at {n} elements failed: {e}", device.label())));
        progress.advance(1);
        time
    };
    let plain = probe("plain", &probe_source(None))?;
    let per_flop_s = per_element((probe("arithmetic", &horner_probe())? - plain).max(0.0), 64 - 2 * PROBE_CALLS + 1);
    let mut per_call_s = Vec::new();
    for &(name, arity) in special {
        let t = probe(name, &probe_source(Some((name, arity))))?;
        per_call_s.push((name.to_owned(), per_element((t - plain).max(0.0), PROBE_CALLS)));
    }
    Ok(RateSample { len: n as u64, per_flop_s, per_call_s })
}

/// The calls priced apart from arithmetic ([`Program::calls_per_element`](gpuworthy_core::expr::Program::calls_per_element)),
/// with their arguments: the special functions and `where`.
fn priced_calls() -> Vec<(&'static str, usize)> {
    Func::ALL
        .iter()
        .filter(|(f, _, _)| f.is_special() || *f == Func::Where)
        .map(|&(_, name, arity)| (name, arity))
        .collect()
}

/// The shortest length rates are measured at: one block of a CPU's evaluator, on one thread, where each pass over
/// the block costs most per element.
const PROBE_SHORT_LEN: usize = 1 << 10;

/// Measures each device's [`ComputeRates`]: on a CPU at four lengths, [`PROBE_SHORT_LEN`], 2^14 (one task of a CPU's
/// evaluator), 2^18 (enough tasks for 16 threads), and the long length; on a GPU at the long length alone. The long
/// length is at least [`PROBE_MIN_LEN`], long enough that the slowest probe takes [`PROBE_TIME`] (so that the launch
/// does not decide). A probe that fails is an error naming it and its device.
///
/// ```no_run
/// use gpuworthy::Device;
/// use gpuworthy::user_code::expression::measure_rates;
///
/// for rates in measure_rates(&Device::all_available().devices, &())? {
///     println!("{}: {:?} s per exp at 2^20 elements", rates.label, rates.per_call_s("exp", 1 << 20));
/// }
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn measure_rates(devices: &[Device], progress: &dyn Progress) -> Result<Vec<ComputeRates>> {
    let special = priced_calls();
    let lengths: usize = devices.iter().map(|d| if d.is_gpu() { 1 } else { 4 }).sum();
    progress.plan((lengths * (special.len() + 2)) as u64);
    let mut all = Vec::new();
    // Every GPU's probes compiled at once, each GPU's on threads of its own, so that two compilers (NVRTC, a Vulkan
    // driver) work side by side rather than one after the other.
    progress.now_measuring("compiling the special-function probes".to_owned());
    std::thread::scope(|scope| {
        for device in devices.iter().filter(|d| d.is_gpu()) {
            let special = &special;
            scope.spawn(move || compile_probes(device, special));
        }
    });
    for device in devices {
        let label = device.label();
        progress.now_measuring(format!("{label}: special-function rates"));
        // The long length: at least PROBE_MIN_LEN, so that every core or streaming multiprocessor takes part, and
        // long enough that the slowest common probe (`pow`) takes PROBE_TIME, found by quadrupling.
        let slow = probe_source(Some(("pow", 2)));
        let mut n = PROBE_MIN_LEN;
        while n < PROBE_MAX_LEN
            && probe_kernel(device, &slow, &probe_input(n)).is_ok_and(|t| t < PROBE_TIME.as_secs_f64())
        {
            n *= 4;
        }
        // A GPU's short runs are its launch: the extra work of an expression shows at the long length only, and a
        // rate measured there predicts the short ones (the kernel is the longer of launch and work). A CPU's
        // evaluator costs differently per element with one thread, one task and all threads busy: four lengths.
        let lengths: &[usize] = if device.is_gpu() {
            &[n.min(PROBE_MAX_LEN)]
        } else {
            &[PROBE_SHORT_LEN, 1 << 14, 1 << 18, n.min(PROBE_MAX_LEN)]
        };
        let samples: Vec<RateSample> =
            lengths.iter().map(|&len| rate_sample(device, len, &special, progress)).collect::<Result<_>>()?;
        all.push(ComputeRates { label, samples });
    }
    Ok(all)
}

/// Calibrates expressions on `devices`: the base expressions of each kind ([`ELEMENTWISE_BASE`],
/// [`REDUCTION_BASE`]) over their ladders, whose curves predict every expression calibration never saw, and each
/// device's special-function rates ([`measure_rates`]), which price what such an expression does beyond its base.
///
/// ```no_run
/// use gpuworthy::{Device, choose::auto::Auto, core::expr::Expr};
/// use gpuworthy::user_code::expression::calibrate_expressions;
///
/// let devices = Device::all_available().devices;
/// let auto = Auto::with_model(devices.clone(), calibrate_expressions(&devices, &())?.model);
/// let expr = Expr::parse("y = exp(-x*x)").map_err(|e| e.into_error("y = exp(-x*x)"))?;
/// let x = vec![0.5; 1 << 20];
/// let (_, choice) = auto.run_expr(&expr, &[("x", &x)], &[])?; // predicted, never measured itself
/// println!("{}: {}", choice.device.label(), choice.reason);
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn calibrate_expressions(devices: &[Device], progress: &dyn Progress) -> Result<Calibration> {
    let started = Instant::now();
    let twins = CalibrationDevices::of(devices);
    let parts = [ELEMENTWISE_BASE, REDUCTION_BASE]
        .into_iter()
        .map(|base| calibrate_expression(&twins, &base_params(base, 0), progress))
        .collect();
    let mut calibration = Calibration::from_parts(devices, parts, started);
    calibration.model.rates = measure_rates(devices, progress)?;
    calibration.took_s = started.elapsed().as_secs_f64();
    Ok(calibration)
}

/// Expressions calibration never measures, with their scalars: `calibrate --evaluate` measures them and compares
/// auto's choice, predicted from the base expressions and the rates, with the fastest device.
///
/// ```
/// use gpuworthy::core::expr::Expr;
/// use gpuworthy::user_code::expression::EVALUATION_EXPRESSIONS;
///
/// for (source, scalars) in EVALUATION_EXPRESSIONS {
///     let names: Vec<&str> = scalars.iter().map(|(name, _)| *name).collect();
///     assert!(Expr::parse(source).and_then(|expr| expr.bind(&names)).is_ok(), "{source}");
/// }
/// ```
pub const EVALUATION_EXPRESSIONS: [(&str, &[(&str, f32)]); 10] = [
    ("y = exp(-x*x) * sin(3*x)", &[]),
    ("y = tanh(2*x) * 0.5 + 0.5", &[]),
    ("u = x*c - y*s; v = x*s + y*c", &[("c", 0.6), ("s", 0.8)]),
    ("y = sqrt(x*x + z*z)", &[]),
    ("y = where(x > 0, x, 0.01*x)", &[]),
    ("y = log(1 + abs(x)) * atan(x)", &[]),
    ("y = ((((((((0.1*x + 0.2)*x + 0.3)*x + 0.4)*x + 0.5)*x + 0.6)*x + 0.7)*x + 0.8)*x + 0.9)", &[]),
    ("y = pow(abs(x), 1.5) + cos(x)", &[]),
    ("r = sqrt(sum(x*x + z*z))", &[]),
    ("m = max(abs(x - z))", &[]),
];

/// The lengths the evaluation measures each expression at.
const EVALUATION_LENGTHS: [usize; 5] = [1 << 10, 1 << 13, 1 << 16, 1 << 19, 1 << 22];

/// Measures `source` (with these scalars) at [`EVALUATION_LENGTHS`] on `auto`'s devices and compares auto's choice
/// with the fastest measured, for data on the host and resident: one of [`EVALUATION_EXPRESSIONS`], or any other.
///
/// ```no_run
/// use gpuworthy::{Device, choose::auto::Auto};
/// use gpuworthy::user_code::expression::{calibrate_expressions, evaluate_expression};
///
/// let devices = Device::all_available().devices;
/// let calibration = calibrate_expressions(&devices, &())?;
/// let auto = Auto::with_model(devices, calibration.model.clone());
/// for p in evaluate_expression(&calibration, &auto, "y = a * tanh(x)", &[("a", 2.0)], &())?.points {
///     println!("{} ({}): auto chose {}, {:?} times the fastest", p.size, p.placement, p.auto_device, p.regret);
/// }
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn evaluate_expression(
    calibration: &Calibration,
    auto: &crate::choose::auto::Auto,
    source: &str,
    scalars: &[(&str, f32)],
    progress: &dyn Progress,
) -> Result<crate::choose::evaluation::Evaluation> {
    let sets: Vec<String> = scalars.iter().map(|(name, value)| format!("{name}={value}")).collect();
    let request = ExpressionRequest::from_command_line(source, &sets, &[])?;
    let ladder: Vec<ExprParams> = EVALUATION_LENGTHS.iter().map(|&n| request.params(n)).collect::<Result<_>>()?;
    let options = crate::model::sweep::SweepOptions {
        validate_up_to_flops: VALIDATE_UP_TO_FLOPS,
        ..crate::choose::evaluation::evaluation_options()
    };
    Ok(crate::choose::evaluation::evaluate_workload_with::<Expression>(calibration, auto, &ladder, &options, progress))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::catalog::WorkloadEntry;
    use crate::measure::size::{Ladder, SizeRequest};
    use gpuworthy_core::Workload;

    fn request(source: &str, sets: &[&str], ranges: &[&str]) -> Result<ExpressionRequest> {
        let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        ExpressionRequest::from_command_line(source, &owned(sets), &owned(ranges))
    }

    /// A planted failure: a probe that cannot run is an error naming it, not a function priced as free.
    #[test]
    fn a_failed_probe_is_an_error_naming_it_not_a_rate_of_zero() {
        let cpu = Device::cpu().unwrap();
        let err = rate_sample(&cpu, PROBE_SHORT_LEN, &[("no_such_function", 1)], &()).unwrap_err().to_string();
        assert!(err.contains("no_such_function probe") && err.contains("cpu"), "{err}");
        let sample = rate_sample(&cpu, PROBE_SHORT_LEN, &[("exp", 1)], &()).unwrap();
        assert_eq!(sample.per_call_s.len(), 1);
    }

    #[test]
    fn probes_parse_stay_in_every_functions_domain_and_names_are_kept_once() {
        for (name, arity) in priced_calls() {
            let source = probe_source(Some((name, arity)));
            let program = Expr::parse(&source).unwrap().bind(&[]).unwrap();
            assert_eq!(program.calls_per_element(), [(name, PROBE_CALLS as u64)], "{source}");
            let mut params = ExprParams::new(Arc::new(program), 64, Vec::new());
            params.ranges = vec![PROBE_RANGE];
            let input = Expression::generate(&params, 1).unwrap();
            let Outputs::Elementwise(y) = Expression::reference(&input).unwrap() else { panic!() };
            assert!(y[0].iter().all(|v| !v.is_nan()), "{source}: {:?}", &y[0][..4]);
        }
        let plain = Expr::parse(&probe_source(None)).unwrap().bind(&[]).unwrap();
        assert_eq!(plain.cost_per_element().flops, 2 * PROBE_CALLS as u64 - 1);
        for (source, scalars) in EVALUATION_EXPRESSIONS {
            let names: Vec<&str> = scalars.iter().map(|(n, _)| *n).collect();
            let program = Expr::parse(source).unwrap().bind(&names).unwrap();
            assert!(Expression::resemblance(&ExprParams::new(Arc::new(program), 8, vec![0.5; names.len()])).is_some());
        }
    }

    #[test]
    fn an_expression_never_calibrated_is_predicted_from_its_base_and_the_rates() {
        let cpu = Device::cpu().unwrap();
        let calibration = calibrate_expressions(std::slice::from_ref(&cpu), &()).unwrap();
        let rates = calibration.model.rates[0].clone();
        assert_eq!(rates.label, cpu.label());
        let exp = rates.per_call_s("exp", 1 << 20).unwrap();
        // Zero where the host's cores hide the calls behind the memory traffic (16 AVX-512 cores do), never negative.
        assert!((0.0..1e-6).contains(&exp), "seconds per exp: {exp}");
        let auto = crate::choose::auto::Auto::with_model(vec![cpu], calibration.model);
        let unseen = request("y = exp(-x*x) * sin(3*x)", &[], &[]).unwrap().params(1 << 16).unwrap();
        let choice = auto.choose::<Expression>(&unseen, crate::model::Placement::Host).unwrap();
        assert!(choice.reason.contains("never measured"), "{}", choice.reason);
        let cheap = request("y = a*x + b", &["a=3", "b=4"], &[]).unwrap().params(1 << 16).unwrap();
        let base = auto.choose::<Expression>(&cheap, crate::model::Placement::Host).unwrap();
        assert!(!base.reason.contains("never measured"), "the base is calibrated itself: {}", base.reason);
        // The unseen expression is its base plus its extra calls at their measured rates: never cheaper than the
        // base, and dearer exactly when the host did not hide those calls behind the memory traffic (a timing
        // this test does not control).
        let (extra_s, unpriced) = rates.extra_s(&Expression::resemblance(&unseen).unwrap());
        assert!(unpriced.is_empty(), "every function of the expression has a rate: {unpriced:?}");
        let (unseen_s, base_s) = (choice.predictions[0].kernel_s, base.predictions[0].kernel_s);
        assert!(unseen_s >= base_s, "special functions never make it cheaper: {unseen_s} < {base_s}");
        if extra_s > 0.0 {
            assert!(unseen_s > base_s, "calls that cost {extra_s} s add to the base's {base_s} s, not {unseen_s}");
        }
    }

    #[test]
    fn scalars_bind_in_the_programs_order_whatever_the_command_lines() {
        let params = request("y = a*x + b", &["b=1", "a=2"], &[]).unwrap().params(8).unwrap();
        let order: Vec<(&str, f32)> =
            params.program.scalars.iter().map(String::as_str).zip(params.scalars.iter().copied()).collect();
        assert!(order.contains(&("a", 2.0)) && order.contains(&("b", 1.0)), "{order:?}");
        assert_eq!(params.n, 8);
    }

    /// The command line's bad-input table, at the library: each mistake is an error that names it.
    #[test]
    fn every_mistake_is_an_error_that_names_it() {
        for (source, sets, ranges, expected) in [
            ("y = sinc(x)", &[][..], &[][..], "unknown function `sinc`"),
            ("y = x +", &[][..], &[][..], "^"),
            ("y = x", &["z=1"][..], &[][..], "`z`"),
            ("y = a*x", &["a"][..], &[][..], "NAME=VALUE"),
            ("y = a*x", &["a=two"][..], &[][..], "not a number"),
            ("y = log(x)", &[][..], &["x=0:inf"][..], "not a finite number"),
            ("y = a*x", &["a=1,a=2"][..], &[][..], "given twice"),
            ("y = a*x", &["=1"][..], &[][..], "name before `=`"),
            ("y = log(x)", &[][..], &["x=1"][..], "LOW:HIGH"),
            ("y = log(x)", &[][..], &["x=2:1"][..], "low end must be below"),
            ("y = log(x)", &[][..], &["z=0:1"][..], "not an input of the expression (it reads x)"),
            ("y = a*x", &["a=1"][..], &["a=0:1"][..], "is a scalar"),
        ] {
            let err = request(source, sets, ranges).unwrap_err().to_string();
            assert!(err.contains(expected), "{source} {sets:?} {ranges:?}: {err}");
        }
    }

    #[test]
    fn a_range_that_puts_a_function_outside_its_domain_everywhere_is_warned_about() {
        let warning = request("y = sqrt(x - 2)", &[], &[]).unwrap().domain_warning().unwrap().unwrap();
        assert!(warning.contains("`sqrt`") && warning.contains("x in [-1, 1)"), "{warning}");
        assert_eq!(request("y = sqrt(x - 2)", &[], &["x=2:3"]).unwrap().domain_warning().unwrap(), None);
        assert_eq!(request("y = log(x)", &[], &[]).unwrap().domain_warning().unwrap(), None, "NaN at half only");
    }

    #[test]
    fn ranges_apply_to_their_inputs_and_the_others_keep_the_default() {
        let params = request("y = log(x) + z", &[], &["x=0.5:2"]).unwrap().params(4).unwrap();
        let x = params.program.inputs.iter().position(|i| i == "x").unwrap();
        let z = params.program.inputs.iter().position(|i| i == "z").unwrap();
        assert_eq!((params.ranges[x], params.ranges[z]), ((0.5, 2.0), (-1.0, 1.0)));
    }

    #[test]
    fn named_arrays_and_scalars_in_any_order_give_named_outputs() {
        let expr = Expr::parse("u = x*c - y*s; v = x*s + y*c").unwrap();
        let (x, y) = ([1.0f32, 0.0], [0.0f32, 1.0]);
        let cpu = Device::cpu().unwrap();
        let out = cpu.run_expr(&expr, &[("y", &y), ("x", &x)], &[("s", 1.0), ("c", 0.0)]).unwrap();
        assert_eq!(out.array("u"), Some(&[0.0, -1.0][..]));
        assert_eq!(out.array("v"), Some(&[1.0, 0.0][..]));
        assert_eq!(out.value("u"), None);
        let sum = cpu.run_expr(&Expr::parse("r = sqrt(sum(x*x))").unwrap(), &[("x", &[3.0, 4.0])], &[]).unwrap();
        assert_eq!(sum.value("r"), Some(5.0));
    }

    #[test]
    fn missing_unknown_repeated_and_uneven_inputs_are_errors_that_name_them() {
        let expr = Expr::parse("y = a*x + z").unwrap();
        let cpu = Device::cpu().unwrap();
        let (two, three) = ([1.0f32, 2.0], [1.0f32, 2.0, 3.0]);
        for (inputs, scalars, expected) in [
            (&[("x", &two[..])][..], &[("a", 1.0)][..], "`z`, which was not given"),
            (&[("x", &two[..]), ("z", &two[..]), ("w", &two[..])][..], &[("a", 1.0)][..], "`w` is given as an array"),
            (&[("x", &two[..]), ("x", &two[..]), ("z", &two[..])][..], &[("a", 1.0)][..], "given twice"),
            (&[("x", &two[..]), ("z", &three[..])][..], &[("a", 1.0)][..], "length"),
            (&[("x", &two[..]), ("z", &two[..])][..], &[("b", 1.0)][..], "`b`"),
        ] {
            let err = cpu.run_expr(&expr, inputs, scalars).unwrap_err().to_string();
            assert!(err.contains(expected), "{expected}: {err}");
        }
    }

    #[test]
    fn an_expression_entry_reads_its_ladders_and_listed_lengths() {
        let entry = expression_entry(&request("s = sum(x*x)", &[], &[]).unwrap()).unwrap();
        let listed =
            SizeRequest { ladder: Ladder::Listed(vec!["1024".into(), "2^20".into()]), options: Default::default() };
        assert_eq!(entry.sizes(&listed).unwrap(), ["1024", "1048576"]);
        assert!(entry.sizes(&SizeRequest { ladder: Ladder::Quick, options: Default::default() }).unwrap().len() > 2);
        let bad = SizeRequest { ladder: Ladder::Listed(vec!["lots".into()]), options: Default::default() };
        assert!(entry.sizes(&bad).is_err());
        assert_eq!(entry.name(), "expr");
    }
}
