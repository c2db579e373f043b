//! The reference of an expression, and the check of a backend's result against it.
//!
//! Every operation is evaluated with `f32` semantics (the exact `f64` result of the operation on `f32` values, rounded
//! to `f32`, as a correctly rounded `f32` operation gives), and beside each value the reference carries a bound on how
//! far a backend's `f32` result may be from it: the rounding of each operation (one ulp: the reference's and the
//! backend's roundings of slightly different exact results), each function's documented error
//! ([`FunctionBounds`]), the freedom to contract `a * b + c` into one rounding, to flush subnormal operands and results,
//! and to sum
//! in any order, propagated through the operations that follow. A backend's result passes when it lies within that
//! bound ([`Bounded::accepts`]); a NaN must be a NaN and an infinity the same infinity wherever the bound is finite.
//!
//! Propagation evaluates each operation at the corners of its operands' intervals (`a ± ea`, `b ± eb`) in `f64`: the
//! exact spread for the monotone operations and the products, and a careful estimate for the rest. Where an interval
//! straddles a discontinuity (a comparison that could flip, a divisor that could be zero, a domain edge) the bound
//! becomes infinite: that value, and what depends on it, is not checked. The check is itself tested: random
//! expressions with one operator, constant or operand changed must fail it.

use crate::Mismatch;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shard::PartBytes;

use super::functions::{FunctionBound, max_num, min_num, ulp};
use super::{Arith, Compare, Func, Logic, Node, Program, Reduce};

/// A value of the reference and how far a backend's `f32` result may be from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounded {
    /// The value, with `f32` semantics (an `f32` value held in an `f64`).
    pub value: f64,
    /// The largest distance from `value` a correct backend may give; infinite where the value is not determined.
    pub error: f64,
}

/// The units of least precision a backend's division may be off by: Vulkan's bound (2.5), which WGSL inherits; CUDA
/// and the CPU round correctly (0.5).
pub const DIVISION_ULPS: f64 = 2.5;

/// The most `f32` terms of a sum any backend adds one after another (a CPU lane's run through a block, a GPU
/// thread's grid-stride loop), beyond the tree that combines such runs: the order-dependent part of a sum's error.
pub const SUM_SEQUENTIAL_TERMS: f64 = 4096.0;

/// The bound of each special function that the check allows ([`FunctionBound`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FunctionBounds;

impl FunctionBounds {
    /// The bound of `func` (exact functions have none): the loosest of the backends' columns of the function table,
    /// since one reference serves every backend.
    pub fn of(func: Func) -> FunctionBound {
        func.spec().accuracy.loosest()
    }
}

/// A node's value at one element.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Number(Bounded),
    /// A boolean, and whether every backend computes the same one.
    Boolean {
        value: bool,
        certain: bool,
    },
}

/// The reference result of a program.
///
/// ```
/// use gpuworthy_core::expr::{Expr, Reference};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let program = Expr::parse("s = sum(x)")?.bind(&[])?;
/// let Reference::Reduction(s) = program.reference(&[&[1.0, 2.0, 3.0]], &[])? else { unreachable!() };
/// assert_eq!(s.value, 6.0);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// One vector per output, in the order of [`Program::outputs`].
    Elementwise(Vec<Vec<Bounded>>),
    /// The reduction's value.
    Reduction(Bounded),
}

/// A backend's result of a program.
///
/// ```
/// use gpuworthy_core::expr::{Expr, Outputs};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let program = Expr::parse("u = x + 1; v = x - 1")?.bind(&[])?;
/// let both = program.interpret(&[&[1.0, 2.0]], &[])?; // one vector per output, in the order assigned
/// assert_eq!(both, Outputs::Elementwise(vec![vec![2.0, 3.0], vec![0.0, 1.0]]));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Outputs {
    /// One vector per output, in the order of [`Program::outputs`].
    Elementwise(Vec<Vec<f32>>),
    /// One vector per output of 16-bit elements of `dtype` (their bits), for arrays stored in a 16-bit type
    /// ([`ExprParams::dtype`](super::ExprParams::dtype)).
    Half {
        /// The elements' type.
        dtype: Dtype,
        /// One vector of bits per output, in the order of [`Program::outputs`].
        arrays: Vec<Vec<u16>>,
    },
    /// The reduction's value.
    Reduction(f32),
}

impl PartBytes for Outputs {
    /// A reduction: `R` and its value; arrays: `A`, their count, and each one's length and values.
    fn to_part_bytes(&self) -> Vec<u8> {
        match self {
            Outputs::Reduction(v) => [&b"R"[..], &v.to_le_bytes()].concat(),
            Outputs::Elementwise(arrays) => {
                let mut out = b"A".to_vec();
                out.extend((arrays.len() as u64).to_le_bytes());
                for array in arrays {
                    out.extend((array.len() as u64).to_le_bytes());
                    out.extend(array.to_part_bytes());
                }
                out
            }
            Outputs::Half { dtype, arrays } => {
                let mut out = vec![b'H', *dtype as u8];
                out.extend((arrays.len() as u64).to_le_bytes());
                for array in arrays {
                    out.extend((array.len() as u64).to_le_bytes());
                    out.extend(array.iter().flat_map(|b| b.to_le_bytes()));
                }
                out
            }
        }
    }

    fn from_part_bytes(bytes: &[u8]) -> Result<Self> {
        let short = || Error::invalid("an expression's part was cut short");
        let take_u64 = |at: usize| -> Result<u64> {
            let b: [u8; 8] = bytes.get(at..at + 8).ok_or_else(short)?.try_into().map_err(|_| short())?;
            Ok(u64::from_le_bytes(b))
        };
        match bytes.first() {
            Some(b'R') => {
                let b: [u8; 4] = bytes.get(1..5).ok_or_else(short)?.try_into().map_err(|_| short())?;
                Ok(Outputs::Reduction(f32::from_le_bytes(b)))
            }
            Some(b'A') => {
                let count = take_u64(1)?;
                let mut at = 9;
                let mut arrays = Vec::new();
                for _ in 0..count {
                    let len = usize::try_from(take_u64(at)?).map_err(|_| short())?;
                    let end = len.checked_mul(4).and_then(|b| b.checked_add(at + 8)).ok_or_else(short)?;
                    arrays.push(Vec::<f32>::from_part_bytes(bytes.get(at + 8..end).ok_or_else(short)?)?);
                    at = end;
                }
                Ok(Outputs::Elementwise(arrays))
            }
            Some(b'H') => {
                let dtype = match bytes.get(1) {
                    Some(&t) if t == Dtype::F16 as u8 => Dtype::F16,
                    Some(&t) if t == Dtype::Bf16 as u8 => Dtype::Bf16,
                    _ => return Err(Error::invalid("an expression's 16-bit part names no 16-bit type")),
                };
                let count = take_u64(2)?;
                let mut at = 10;
                let mut arrays = Vec::new();
                for _ in 0..count {
                    let len = usize::try_from(take_u64(at)?).map_err(|_| short())?;
                    let end = len.checked_mul(2).and_then(|b| b.checked_add(at + 8)).ok_or_else(short)?;
                    let data = bytes.get(at + 8..end).ok_or_else(short)?;
                    arrays.push(data.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect());
                    at = end;
                }
                Ok(Outputs::Half { dtype, arrays })
            }
            _ => Err(Error::invalid("an expression's part starts with none of R, A and H")),
        }
    }
}

/// The smallest normal `f32`: a backend may flush a subnormal result to zero.
const FLUSHED: f64 = f32::MIN_POSITIVE as f64;

fn round_f32(v: f64) -> f64 {
    f64::from(v as f32)
}

/// How far `corner` is from `center`, infinite where one is not finite and they differ.
fn deviation(center: f64, corner: f64) -> f64 {
    if corner == center || (corner.is_nan() && center.is_nan()) {
        0.0
    } else if !corner.is_finite() || !center.is_finite() {
        f64::INFINITY
    } else {
        (corner - center).abs()
    }
}

/// The corners of an operand's interval: its value alone when it is exact.
fn corners(x: Bounded) -> Vec<f64> {
    if x.error == 0.0 { vec![x.value] } else { vec![x.value - x.error, x.value + x.error] }
}

/// An error too small to move any value, given to a zero whose sign the language leaves open (IEEE's `min(-0, +0)`,
/// a `where` whose condition is not certain): a zero is compared with its sign only where its error is exactly 0.
const SIGN_OPEN: f64 = 5e-324;

impl Bounded {
    /// An exact value.
    pub fn exact(value: f64) -> Bounded {
        Bounded { value, error: 0.0 }
    }

    /// Whether `actual` is a result a correct backend may give.
    pub fn accepts(&self, actual: f32) -> bool {
        let actual = f64::from(actual);
        if !self.error.is_finite() || self.error.is_nan() {
            return true;
        }
        if self.value.is_nan() || actual.is_nan() {
            return self.value.is_nan() && actual.is_nan();
        }
        if self.value.is_infinite() {
            return actual == self.value;
        }
        if actual.is_infinite() {
            // Overflow: the value is within its bound of the largest f32.
            return actual.signum() == self.value.signum() && self.value.abs() + self.error >= f64::from(f32::MAX);
        }
        if self.promises_signed_zero() && actual == 0.0 {
            return actual.is_sign_negative() == self.value.is_sign_negative();
        }
        (actual - self.value).abs() <= self.error
    }

    /// Whether `actual`, an element stored as `dtype` and widened to `f32`, is a result a correct backend may give:
    /// the rounding to `dtype` of an `f32` result [`Bounded::accepts`] takes. Rounding is monotone, so those are the
    /// values between the roundings of the bound's ends (each taken outward to `f32` first): no wider, whatever the
    /// type, and overflow past f16's 65504 is accepted exactly where a correct `f32` result rounds to infinity.
    ///
    /// ```
    /// use gpuworthy_core::Dtype;
    /// use gpuworthy_core::expr::Bounded;
    ///
    /// let third = Bounded { value: 1.0 / 3.0, error: 1e-7 };
    /// assert!(third.accepts_stored(Dtype::Bf16.round(1.0 / 3.0), Dtype::Bf16));
    /// assert!(!third.accepts_stored(Dtype::Bf16.round(0.3359375), Dtype::Bf16)); // the next bf16 up
    /// assert!(!third.accepts_stored(1.0 / 3.0, Dtype::Bf16)); // not a bf16 at all
    /// ```
    pub fn accepts_stored(&self, actual: f32, dtype: Dtype) -> bool {
        if !dtype.is_half() || !self.error.is_finite() || self.value.is_nan() || actual.is_nan() {
            return self.accepts(actual);
        }
        if self.value.is_infinite() || (self.promises_signed_zero() && actual == 0.0) {
            return self.accepts(actual);
        }
        let below = |x: f64| {
            let f = x as f32;
            if f64::from(f) > x { f.next_down() } else { f }
        };
        let above = |x: f64| {
            let f = x as f32;
            if f64::from(f) < x { f.next_up() } else { f }
        };
        let low = dtype.round(below(self.value - self.error));
        let high = dtype.round(above(self.value + self.error));
        low <= actual && actual <= high
    }

    /// Whether this is a zero whose sign the language promises: an exact zero computed exactly, by IEEE's rules for
    /// negation, addition, multiplication, the exact functions and `where` (`-x` of 0 is -0, `x - x` is +0, `0 * -1`
    /// is -0, `floor(-0.5)` is -0).
    pub fn promises_signed_zero(&self) -> bool {
        self.value == 0.0 && self.error == 0.0
    }
}

/// The result of `f` on `args` with `f32` semantics, its bound propagated from the arguments' and increased by the
/// rounding of the result and by `extra` (a function's own error).
fn apply(args: &[Bounded], f: &dyn Fn(&[f64]) -> f64, extra: &dyn Fn(f64, &[f64]) -> f64) -> Bounded {
    let centers: Vec<f64> = args.iter().map(|a| a.value).collect();
    let exact = f(&centers);
    let value = round_f32(exact);
    if args.iter().any(|a| !a.error.is_finite()) {
        return Bounded { value, error: f64::INFINITY };
    }
    if exact == 0.0 && args.iter().all(|a| a.error == 0.0) && extra(value, &centers) == 0.0 {
        // An exact zero of exact operands, by an operation with no error of its own: every backend computes it
        // exactly, its sign included.
        return Bounded { value, error: 0.0 };
    }
    let mut spread: f64 = 0.0;
    if args.iter().any(|a| a.error > 0.0) {
        // Every combination of the interval ends (at most 2^3).
        let choices: Vec<Vec<f64>> = args.iter().map(|a| corners(*a)).collect();
        let mut picks = vec![0usize; args.len()];
        loop {
            let point: Vec<f64> = picks.iter().zip(&choices).map(|(&i, c)| c[i]).collect();
            spread = spread.max(deviation(exact, f(&point)));
            let mut k = 0;
            while k < picks.len() {
                picks[k] += 1;
                if picks[k] < choices[k].len() {
                    break;
                }
                picks[k] = 0;
                k += 1;
            }
            if k == picks.len() {
                break;
            }
        }
    }
    let own = extra(value, &centers);
    // The reference is the exact result rounded, and a backend rounds its own, slightly different, exact result
    // (operands within their bounds, a contracted product, a function's error): the two roundings together are one
    // ulp apart at most, at the magnitude the result may reach.
    let rounding = if value.is_finite() { ulp(value.abs() + spread + own) + FLUSHED } else { 0.0 };
    Bounded { value, error: spread + rounding + own }
}

/// Whether the interval of `x` reaches `point`.
fn reaches(x: Bounded, point: f64) -> bool {
    (x.value - point).abs() <= x.error
}

fn compare(op: Compare, a: Bounded, b: Bounded) -> Value {
    let holds = |a: f64, b: f64| match op {
        Compare::Lt => a < b,
        Compare::Le => a <= b,
        Compare::Gt => a > b,
        Compare::Ge => a >= b,
        Compare::Eq => a == b,
        Compare::Ne => a != b,
    };
    let value = holds(a.value, b.value);
    let certain = if a.value.is_nan() || b.value.is_nan() {
        a.error.is_finite() && b.error.is_finite()
    } else if !a.error.is_finite() || !b.error.is_finite() {
        false
    } else {
        // Certain when no point of the two intervals compares the other way: their gap exceeds both errors.
        (a.error == 0.0 && b.error == 0.0) || (a.value - b.value).abs() > a.error + b.error
    };
    Value::Boolean { value, certain }
}

fn arith(op: Arith, a: Bounded, b: Bounded) -> Bounded {
    if op == Arith::Div && b.error > 0.0 && reaches(b, 0.0) {
        return Bounded { value: round_f32(a.value / b.value), error: f64::INFINITY };
    }
    // A product may be contracted into a following addition (one rounding instead of two): the bound of the
    // product's own rounding, added here, covers either. Division need not be correctly rounded: Vulkan allows
    // 2.5 ulp, which WGSL inherits.
    let division = move |value: f64, _: &[f64]| {
        if op == Arith::Div && value.is_finite() { (DIVISION_ULPS - 0.5) * ulp(value) } else { 0.0 }
    };
    apply(
        &[a, b],
        &|x| match op {
            Arith::Add => x[0] + x[1],
            Arith::Sub => x[0] - x[1],
            Arith::Mul => x[0] * x[1],
            Arith::Div => x[0] / x[1],
        },
        &division,
    )
}

fn call(func: Func, args: &[Value]) -> Value {
    if func == Func::Where {
        let (Value::Boolean { value, certain }, Value::Number(a), Value::Number(b)) = (args[0], args[1], args[2])
        else {
            return Value::Number(Bounded { value: f64::NAN, error: f64::INFINITY });
        };
        let (chosen, other) = if value { (a, b) } else { (b, a) };
        if certain {
            return Value::Number(chosen);
        }
        let mut error = chosen.error.max(deviation(chosen.value, other.value) + other.error);
        if error == 0.0 && chosen.value.is_sign_negative() != other.value.is_sign_negative() {
            // Either zero may be chosen.
            error = SIGN_OPEN;
        }
        return Value::Number(Bounded { value: chosen.value, error });
    }
    let numbers: Vec<Bounded> = args
        .iter()
        .map(|a| match a {
            Value::Number(b) => *b,
            Value::Boolean { .. } => Bounded { value: f64::NAN, error: f64::INFINITY },
        })
        .collect();
    let bound = FunctionBounds::of(func);
    let own = move |value: f64, args: &[f64]| func.error_allowed(&bound, value, args);
    // Where a small change of an argument crosses a discontinuity or a domain edge, the result is not determined.
    let undetermined = match func {
        Func::Tan => {
            // A pole (where cos is 0) inside the argument's interval.
            let (x, e) = (numbers[0].value, numbers[0].error);
            e > 0.0 && (e >= std::f64::consts::FRAC_PI_2 || (x - e).cos().signum() != (x + e).cos().signum())
        }
        Func::Atan2 => numbers[1].error > 0.0 && reaches(numbers[1], 0.0) && reaches(numbers[0], 0.0),
        // pow is 1 at an exponent of 0 and a base of 1 whatever the other operand, NaN included: an interval that
        // reaches either point reaches that jump, which its ends need not show.
        Func::Pow => {
            (numbers[0].error > 0.0 && (reaches(numbers[0], 0.0) || reaches(numbers[0], 1.0)))
                || (numbers[1].error > 0.0 && reaches(numbers[1], 0.0))
        }
        _ => false,
    };
    let f: &dyn Fn(&[f64]) -> f64 = &func.spec().reference;
    let mut result = apply(&numbers, f, &own);
    if matches!(func, Func::Min | Func::Max | Func::Clamp) && result.promises_signed_zero() {
        // IEEE leaves the sign of min(-0, +0) open.
        result.error = SIGN_OPEN;
    }
    if func == Func::Sin || func == Func::Cos {
        // Both are 1-Lipschitz: an argument's error moves them by at most as much, and never by more than 2.
        let spread = numbers[0].error.min(2.0);
        result.error = result.error.min(spread + own(result.value, &[numbers[0].value]) + ulp(result.value));
        // An error as wide as the whole range says nothing: a driver whose range reduction gives up there may
        // answer anything, NaN included (Vulkan bounds sin and cos on [-pi, pi] only).
        if result.error >= 2.0 {
            result.error = f64::INFINITY;
        }
    }
    if undetermined || result.error.is_nan() {
        result.error = f64::INFINITY;
    }
    Value::Number(result)
}

/// Elements per block of the reference's parallel evaluation.
const REFERENCE_BLOCK: usize = 1 << 12;

impl Program {
    /// Evaluates the program on `inputs` (one slice per [`Program::inputs`], all of one length) and `scalars` (one
    /// per [`Program::scalars`]), each value with its bound.
    ///
    /// ```
    /// use gpuworthy_core::expr::{Expr, Reference};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let program = Expr::parse("y = x * x + 1")?.bind(&[])?;
    /// let Reference::Elementwise(y) = program.reference(&[&[1.5, 2.0]], &[])? else { unreachable!() };
    /// assert_eq!((y[0][0].value, y[0][1].value), (3.25, 5.0));
    /// assert!(y[0][0].accepts(3.25) && !y[0][0].accepts(3.3)); // a backend's f32 result, within the bound
    /// # Ok(())
    /// # }
    /// ```
    pub fn reference(&self, inputs: &[&[f32]], scalars: &[f32]) -> Result<Reference> {
        use rayon::prelude::*;
        let n = self.length(inputs, scalars)?;
        let depends_on_reduced = self.depends_on_reduced();
        let fresh = || vec![Value::Number(Bounded::exact(0.0)); self.nodes.len()];
        let evaluate = |values: &mut Vec<Value>, i: usize, per_element: bool, reduced: Bounded| {
            for (id, node) in self.nodes.iter().enumerate() {
                if depends_on_reduced[id] == per_element {
                    continue;
                }
                values[id] = self.node(node, values, inputs, scalars, i, reduced);
            }
        };
        // The elements in blocks across the thread pool, each block with its own values; gathered in order, so that
        // the result (and a reduction's order of terms) is the same on any number of threads.
        let blocks: Vec<std::ops::Range<usize>> =
            (0..n).step_by(REFERENCE_BLOCK).map(|start| start..(start + REFERENCE_BLOCK).min(n)).collect();
        let per_element = |take: &(dyn Fn(&[Value]) -> Vec<Bounded> + Sync)| -> Vec<Vec<Bounded>> {
            let blocks: Vec<Vec<Vec<Bounded>>> = blocks
                .par_iter()
                .map(|block| {
                    let mut values = fresh();
                    block
                        .clone()
                        .map(|i| {
                            evaluate(&mut values, i, true, Bounded::exact(0.0));
                            take(&values)
                        })
                        .collect()
                })
                .collect();
            blocks.into_iter().flatten().collect()
        };
        match &self.reduction {
            None => {
                let rows = per_element(&|values| self.outputs.iter().map(|o| number(values[o.node])).collect());
                let mut outputs = vec![Vec::with_capacity(n); self.outputs.len()];
                for row in rows {
                    for (out, value) in outputs.iter_mut().zip(row) {
                        out.push(value);
                    }
                }
                Ok(Reference::Elementwise(outputs))
            }
            Some(reduction) => {
                let terms: Vec<Bounded> =
                    per_element(&|values| vec![number(values[reduction.body])]).into_iter().flatten().collect();
                let reduced = reduce(reduction.kind, &terms);
                // The post-map reads the nodes that do not depend on the reduction (its constants among them) as the
                // element pass left them: evaluated at the last element, as one pass over the elements would.
                let mut values = fresh();
                if let Some(last) = n.checked_sub(1) {
                    evaluate(&mut values, last, true, Bounded::exact(0.0));
                }
                evaluate(&mut values, 0, false, reduced);
                Ok(Reference::Reduction(number(values[reduction.post])))
            }
        }
    }

    /// The common length of `inputs`, after checking that they and `scalars` match the program.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let program = Expr::parse("y = a * x + z")?.bind(&["a"])?;
    /// assert_eq!(program.length(&[&[1.0, 2.0], &[3.0, 4.0]], &[2.0])?, 2);
    /// assert!(program.length(&[&[1.0, 2.0], &[3.0]], &[2.0]).is_err()); // the arrays differ in length
    /// assert!(program.length(&[&[1.0, 2.0], &[3.0, 4.0]], &[]).is_err()); // `a` has no value
    /// # Ok(())
    /// # }
    /// ```
    pub fn length(&self, inputs: &[&[f32]], scalars: &[f32]) -> Result<usize> {
        let lengths: Vec<usize> = inputs.iter().map(|x| x.len()).collect();
        self.length_of(&lengths, scalars)
    }

    /// [`Program::length`] from the input arrays' lengths alone, whatever their storage.
    pub fn length_of(&self, inputs: &[usize], scalars: &[f32]) -> Result<usize> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::invalid(format!(
                "the expression reads {} input array(s) ({}), but {} were given",
                self.inputs.len(),
                self.inputs.join(", "),
                inputs.len()
            )));
        }
        if scalars.len() != self.scalars.len() {
            return Err(Error::invalid(format!(
                "the expression has {} scalar(s) ({}), but {} values were given",
                self.scalars.len(),
                self.scalars.join(", "),
                scalars.len()
            )));
        }
        let n = inputs.first().copied().unwrap_or(0);
        if let Some((name, x)) = self.inputs.iter().zip(inputs).find(|(_, x)| **x != n) {
            return Err(Error::invalid(format!(
                "the input arrays differ in length: `{}` has {n} elements, `{name}` has {x}",
                self.inputs[0],
            )));
        }
        Ok(n)
    }

    /// For each node, whether it depends on [`Node::Reduced`] (the post-map of a reduction, evaluated once after
    /// the reduction rather than per element).
    pub fn depends_on_reduced(&self) -> Vec<bool> {
        let mut depends = vec![false; self.nodes.len()];
        for (id, node) in self.nodes.iter().enumerate() {
            depends[id] = matches!(node, Node::Reduced) || node.operands().iter().any(|a| depends[*a]);
        }
        depends
    }

    fn node(
        &self,
        node: &Node,
        values: &[Value],
        inputs: &[&[f32]],
        scalars: &[f32],
        i: usize,
        reduced: Bounded,
    ) -> Value {
        let num = |id: usize| number(values[id]);
        match node {
            Node::Const(c) => Value::Number(operand(*c)),
            Node::Input(k) => Value::Number(operand(inputs[*k][i])),
            Node::Scalar(k) => Value::Number(operand(scalars[*k])),
            Node::Operand(_) => Value::Number(Bounded { value: f64::NAN, error: f64::INFINITY }),
            Node::Reduced => Value::Number(reduced),
            Node::Neg(a) => {
                let a = num(*a);
                Value::Number(Bounded { value: -a.value, error: a.error })
            }
            Node::Not(a) => match values[*a] {
                Value::Boolean { value, certain } => Value::Boolean { value: !value, certain },
                Value::Number(_) => Value::Boolean { value: false, certain: false },
            },
            Node::Arith(op, a, b) => Value::Number(arith(*op, num(*a), num(*b))),
            Node::Compare(op, a, b) => compare(*op, num(*a), num(*b)),
            Node::Logic(op, a, b) => {
                let (Value::Boolean { value: x, certain: cx }, Value::Boolean { value: y, certain: cy }) =
                    (values[*a], values[*b])
                else {
                    return Value::Boolean { value: false, certain: false };
                };
                match op {
                    // Certain when both are, or when one is certainly false (and decides alone).
                    Logic::And => Value::Boolean { value: x && y, certain: (cx || (cy && !y)) && (cy || !x) },
                    // Certain when both are, or when one is certainly true.
                    Logic::Or => Value::Boolean { value: x || y, certain: (cx || (cy && y)) && (cy || x) },
                }
            }
            Node::Call(func, args) => {
                let args: Vec<Value> = args.iter().map(|a| values[*a]).collect();
                call(*func, &args)
            }
        }
    }
}

/// An operand as the backends may read it: exactly, but a subnormal may be read as zero (GPUs flush denormals, and
/// Vulkan drivers do so without asking).
fn operand(v: f32) -> Bounded {
    let error = if v.is_subnormal() { f64::from(v.abs()) } else { 0.0 };
    Bounded { value: f64::from(v), error }
}

fn number(value: Value) -> Bounded {
    match value {
        Value::Number(b) => b,
        Value::Boolean { .. } => Bounded { value: f64::NAN, error: f64::INFINITY },
    }
}

/// The reduction of `terms`, with the bound that any order of combining them in `f32` meets.
fn reduce(kind: Reduce, terms: &[Bounded]) -> Bounded {
    if terms.is_empty() {
        return Bounded::exact(f64::from(kind.identity()));
    }
    if let Some(nan) = terms.iter().find(|t| t.value.is_nan()) {
        return Bounded { value: f64::NAN, error: if nan.error.is_finite() { 0.0 } else { f64::INFINITY } };
    }
    let uncertain = terms.iter().any(|t| !t.error.is_finite());
    let n = terms.len() as f64;
    let u = 2f64.powi(-24);
    let mut bounded = match kind {
        Reduce::Sum if let Some(decided) = infinite_terms_decide_sum(terms) => decided,
        Reduce::Sum => {
            let exact: f64 = terms.iter().map(|t| t.value).sum();
            let magnitude: f64 = terms.iter().map(|t| t.value.abs()).sum();
            let propagated: f64 = terms.iter().map(|t| t.error).sum();
            let order = (SUM_SEQUENTIAL_TERMS.min(n) + n.log2().ceil()) * u * magnitude;
            let value = round_f32(exact);
            let overflow = magnitude >= f64::from(f32::MAX);
            Bounded { value, error: if overflow { f64::INFINITY } else { propagated + order + ulp(value) + FLUSHED } }
        }
        Reduce::Prod if let Some(decided) = infinite_terms_decide_product(terms) => decided,
        Reduce::Prod => {
            let exact: f64 = terms.iter().map(|t| t.value).product();
            let value = round_f32(exact);
            let relative: f64 =
                terms.iter().map(|t| if t.error == 0.0 { 0.0 } else { t.error / t.value.abs() }).sum::<f64>()
                    + 2.0 * n * u;
            Bounded { value, error: exact.abs() * relative + ulp(value) + FLUSHED }
        }
        Reduce::Min | Reduce::Max => {
            let pick = if kind == Reduce::Min { min_num } else { max_num };
            let value = terms.iter().map(|t| t.value).fold(f64::from(kind.identity()), pick);
            // IEEE leaves the sign of min(-0, +0) open.
            let error = terms.iter().map(|t| t.error).fold(if value == 0.0 { SIGN_OPEN } else { 0.0 }, f64::max);
            Bounded { value, error }
        }
    };
    if uncertain || bounded.error.is_nan() {
        bounded.error = f64::INFINITY;
    }
    bounded
}

/// Whether a reduction's infinite terms are certain: there is one, and every one is exact (an input's infinity, not
/// a value that a backend's rounding could leave just below the largest `f32`).
fn certain_infinities(terms: &[Bounded]) -> bool {
    let mut infinite = terms.iter().filter(|t| t.value.is_infinite()).peekable();
    infinite.peek().is_some() && infinite.all(|t| t.error == 0.0)
}

/// A sum with certain infinite terms ([`certain_infinities`]), where the order of its terms cannot change it: the
/// infinity, or NaN where both signs meet, when the finite terms cannot overflow on the way (their magnitudes add up
/// below the largest `f32`). `None` otherwise: an overflow of the opposite sign met first would make the sum NaN in
/// one order and infinite in another.
fn infinite_terms_decide_sum(terms: &[Bounded]) -> Option<Bounded> {
    let finite: f64 = terms.iter().filter(|t| t.value.is_finite()).map(|t| t.value.abs() + t.error).sum();
    if !certain_infinities(terms) || finite >= f64::from(f32::MAX) {
        return None;
    }
    let positive = terms.iter().any(|t| t.value == f64::INFINITY);
    let negative = terms.iter().any(|t| t.value == f64::NEG_INFINITY);
    Some(Bounded::exact(match (positive, negative) {
        (true, true) => f64::NAN,
        (true, false) => f64::INFINITY,
        _ => f64::NEG_INFINITY,
    }))
}

/// A product with certain infinite terms ([`certain_infinities`]), where the order of its terms cannot change it: NaN
/// where a term is exactly zero (zero times an infinity); otherwise an infinity whose sign is that of the terms'
/// product, when every finite term's sign is certain and the smallest product some order could reach on the way (all
/// the terms below 1 in magnitude, at the least magnitude their bounds allow) stays a normal `f32`. `None` otherwise:
/// one order could underflow to zero before it meets the infinity (NaN) and another not (an infinity).
fn infinite_terms_decide_product(terms: &[Bounded]) -> Option<Bounded> {
    if !certain_infinities(terms) {
        return None;
    }
    if terms.iter().any(|t| t.value == 0.0 && t.error == 0.0) {
        return Some(Bounded::exact(f64::NAN));
    }
    let finite = || terms.iter().filter(|t| t.value.is_finite());
    let certain = finite().all(|t| t.value.abs() > t.error && t.error.is_finite());
    let smallest: f64 = finite().map(|t| t.value.abs() - t.error).filter(|m| *m < 1.0).product();
    if !certain || smallest < FLUSHED {
        return None;
    }
    let negative = terms.iter().filter(|t| t.value < 0.0).count() % 2 == 1;
    Some(Bounded::exact(if negative { f64::NEG_INFINITY } else { f64::INFINITY }))
}

/// Checks a backend's result against the reference, naming the first output and element out of bound.
///
/// ```
/// use gpuworthy_core::expr::{Expr, Outputs, check};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let program = Expr::parse("y = exp(x)")?.bind(&[])?;
/// let reference = program.reference(&[&[0.5, 1.0]], &[])?;
/// let close = Outputs::Elementwise(vec![vec![0.5f32.exp(), 1.0f32.exp()]]);
/// assert!(check(&program, &reference, &close).is_ok());
/// let wrong = Outputs::Elementwise(vec![vec![0.5f32.exp(), 2.7]]);
/// assert!(check(&program, &reference, &wrong).unwrap_err().message.contains("y[1]"));
/// # Ok(())
/// # }
/// ```
pub fn check(program: &Program, expected: &Reference, actual: &Outputs) -> std::result::Result<(), Mismatch> {
    check_stored(program, expected, actual, Dtype::F32)
}

/// [`check`] of a result whose arrays are stored as `dtype`: an elementwise result must be [`Outputs::Half`] of that
/// type for a 16-bit one, [`Outputs::Elementwise`] for `f32`, and each element is held to
/// [`Bounded::accepts_stored`].
pub fn check_stored(
    program: &Program,
    expected: &Reference,
    actual: &Outputs,
    dtype: Dtype,
) -> std::result::Result<(), Mismatch> {
    match (expected, actual) {
        (Reference::Elementwise(expected), Outputs::Elementwise(actual)) if !dtype.is_half() => {
            check_arrays(program, expected, actual, |g| *g, dtype)
        }
        (Reference::Elementwise(expected), Outputs::Half { dtype: stored, arrays }) if *stored == dtype => {
            check_arrays(program, expected, arrays, |g| dtype.decode(*g), dtype)
        }
        (Reference::Elementwise(_), Outputs::Elementwise(_) | Outputs::Half { .. }) => {
            let got = match actual {
                Outputs::Half { dtype, .. } => dtype.name(),
                _ => "f32",
            };
            Err(Mismatch::new(format!("the result's arrays are {got}, the expression's are {dtype}")))
        }
        (Reference::Reduction(want), Outputs::Reduction(got)) => {
            if want.accepts(*got) {
                Ok(())
            } else {
                let name = program.reduction.as_ref().map_or("the reduction", |r| r.name.as_str());
                Err(Mismatch::new(format!("{name}: expected {:e} ± {:e}, got {got:e}", want.value, want.error)))
            }
        }
        _ => Err(Mismatch::new("the result is not of the program's kind (elementwise or reduction)")),
    }
}

/// Each output array of `actual` against its bounded reference, elements widened by `widen`.
fn check_arrays<T>(
    program: &Program,
    expected: &[Vec<Bounded>],
    actual: &[Vec<T>],
    widen: impl Fn(&T) -> f32,
    dtype: Dtype,
) -> std::result::Result<(), Mismatch> {
    if expected.len() != actual.len() {
        return Err(Mismatch::new(format!("{} outputs, expected {}", actual.len(), expected.len())));
    }
    for ((output, want), got) in program.outputs.iter().zip(expected).zip(actual) {
        crate::workload::check_lengths(want.len(), got.len())?;
        if let Some(i) = want.iter().zip(got).position(|(w, g)| !w.accepts_stored(widen(g), dtype)) {
            let stored = if dtype.is_half() { format!(" (stored as {dtype})") } else { String::new() };
            return Err(Mismatch::new(format!(
                "{}[{i}]: expected {:e} ± {:e}{stored}, got {:e}",
                output.name,
                want[i].value,
                want[i].error,
                widen(&got[i])
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_round_trip_through_part_bytes_and_a_short_part_is_refused() {
        for outputs in [Outputs::Reduction(3.0), Outputs::Elementwise(vec![vec![1.0, 2.0], vec![]])] {
            let bytes = outputs.to_part_bytes();
            assert_eq!(Outputs::from_part_bytes(&bytes).unwrap(), outputs);
            assert!(Outputs::from_part_bytes(&bytes[..bytes.len() - 1]).is_err(), "{outputs:?} cut short");
        }
        assert!(Outputs::from_part_bytes(b"X").is_err());
    }
    use crate::expr::Expr;

    fn program(source: &str, scalars: &[&str]) -> Program {
        Expr::parse(source).unwrap().bind(scalars).unwrap()
    }

    fn elementwise(source: &str, scalars: &[&str], inputs: &[&[f32]], values: &[f32]) -> Vec<Vec<Bounded>> {
        match program(source, scalars).reference(inputs, values).unwrap() {
            Reference::Elementwise(out) => out,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn arithmetic_has_f32_semantics_and_a_bound_of_its_roundings() {
        let y = elementwise("y = a * x + b", &["a", "b"], &[&[1.5, 1e30, 3e38]], &[2.0, 1.0]);
        assert_eq!(y[0][0].value, 4.0);
        assert!(y[0][0].error > 0.0 && y[0][0].error < 1e-5, "{:?}", y[0][0]);
        assert_eq!(y[0][1].value, f64::from(2e30f32 + 1.0));
        assert_eq!(y[0][2].value, f64::INFINITY, "f32 overflows where f64 would not");
        assert!(y[0][2].accepts(f32::INFINITY));
        assert!(y[0][0].accepts(4.0) && !y[0][0].accepts(4.001));
    }

    #[test]
    fn the_semantic_edge_cases_are_the_specifications() {
        let nan = f32::NAN;
        let inputs: &[f32] = &[nan, -8.0, 2.5, -2.5, 0.0, -0.0];
        let y =
            elementwise("y = min(x, 1); z = pow(x, 3); w = pow(x, 0.5); r = round(x); d = 1 / x", &[], &[inputs], &[]);
        assert_eq!(y[0][0].value, 1.0, "min of NaN is the other operand");
        assert_eq!(y[1][1].value, -512.0, "a negative base to an integer power keeps its sign");
        assert!(y[2][1].value.is_nan(), "a negative base to a fractional power is NaN");
        assert_eq!((y[3][2].value, y[3][3].value), (2.0, -2.0), "round half to even");
        assert_eq!((y[4][4].value, y[4][5].value), (f64::INFINITY, f64::NEG_INFINITY), "1/±0 is ±inf");
        assert!(y[4][4].accepts(f32::INFINITY) && !y[4][4].accepts(f32::MAX));
        assert!(!y[0][0].accepts(nan), "{:?}", y[0][0]);
        assert!(y[2][1].accepts(nan) && !y[2][1].accepts(0.0), "{:?}", y[2][1]);
        let empty = program("s = sum(x)", &[]).reference(&[&[]], &[]).unwrap();
        assert_eq!(empty, Reference::Reduction(Bounded::exact(0.0)));
        for (source, identity) in
            [("s = prod(x)", 1.0), ("s = min(x)", f64::INFINITY), ("s = max(x)", f64::NEG_INFINITY)]
        {
            assert_eq!(
                program(source, &[]).reference(&[&[]], &[]).unwrap(),
                Reference::Reduction(Bounded::exact(identity))
            );
        }
        let with_nan = program("s = sum(x)", &[]).reference(&[&[1.0, nan]], &[]).unwrap();
        assert!(matches!(with_nan, Reference::Reduction(b) if b.value.is_nan()));
    }

    #[test]
    fn a_zero_the_language_promises_is_checked_with_its_sign_and_an_open_one_is_not() {
        let x: &[f32] = &[0.0, -0.0, -0.5, 3.0];
        let y = elementwise(
            "n = -x; d = x - x; m = x * -0; f = floor(x); w = where(x < 1, -0, 0); lo = min(x, 0); a = abs(x)",
            &[],
            &[x],
            &[],
        );
        let [n, d, m, f, w, lo, a] = [0, 1, 2, 3, 4, 5, 6].map(|k| &y[k]);
        // A planted +0 where -0 is promised fails, and the other way round.
        assert!(n[0].accepts(-0.0) && !n[0].accepts(0.0), "-(+0) is -0: {:?}", n[0]);
        assert!(n[1].accepts(0.0) && !n[1].accepts(-0.0), "-(-0) is +0: {:?}", n[1]);
        assert!(d[1].accepts(0.0) && !d[1].accepts(-0.0), "-0 - -0 is +0");
        assert!(m[3].accepts(-0.0) && !m[3].accepts(0.0), "3 * -0 is -0");
        assert!(f[1].accepts(-0.0) && !f[1].accepts(0.0), "floor(-0) is -0");
        assert!(w[0].accepts(-0.0) && !w[0].accepts(0.0), "a certain where chooses its zero");
        assert!(a[1].accepts(0.0) && !a[1].accepts(-0.0), "abs(-0) is +0");
        // min(-0, +0) may be either.
        assert!(lo[1].accepts(0.0) && lo[1].accepts(-0.0), "{:?}", lo[1]);
        let out = Outputs::Elementwise(vec![vec![0.0f32, 0.0, 0.5, -3.0]]);
        let negation = program("y = -x", &[]);
        let expected = negation.reference(&[x], &[]).unwrap();
        let error = check(&negation, &expected, &out).unwrap_err();
        assert!(error.to_string().contains("y[0]"), "{error}");
    }

    #[test]
    fn a_sum_is_bounded_for_any_order_and_a_comparison_that_could_flip_is_not_checked() {
        let x: Vec<f32> = (0..10_000).map(|i| ((i * 7919) % 1000) as f32 / 999.0 - 0.5).collect();
        let Reference::Reduction(s) = program("s = sum(x * x)", &[]).reference(&[&x], &[]).unwrap() else { panic!() };
        let forward: f32 = x.iter().map(|v| v * v).sum();
        let backward: f32 = x.iter().rev().map(|v| v * v).sum();
        assert!(s.accepts(forward) && s.accepts(backward), "{s:?} {forward} {backward}");
        assert!(!s.accepts(forward * 1.01));
        // x * 3 is rounded, so `x * 3 > 0.3` at x = 0.1 could go either way: both branches are accepted.
        let y = elementwise("y = where(x * 3 > 0.3, 1, 2)", &[], &[&[0.1]], &[]);
        assert!(y[0][0].accepts(1.0) && y[0][0].accepts(2.0));
        let y = elementwise("y = where(x > 0.3, 1, 2)", &[], &[&[0.1]], &[]);
        assert!(y[0][0].accepts(2.0) && !y[0][0].accepts(1.0));
    }

    #[test]
    fn an_infinite_term_decides_a_sum_or_a_product_and_nothing_else_is_accepted() {
        let sum = |x: &[f32]| {
            let Reference::Reduction(s) = program("s = sum(x)", &[]).reference(&[x], &[]).unwrap() else { panic!() };
            s
        };
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        let positive = sum(&[1.0, inf, -2.0]);
        assert!(positive.accepts(inf) && !positive.accepts(-1.0) && !positive.accepts(-inf) && !positive.accepts(nan));
        let negative = sum(&[-inf, 3.0]);
        assert!(negative.accepts(-inf) && !negative.accepts(inf) && !negative.accepts(3.0));
        let both = sum(&[inf, 1.0, -inf]);
        assert!(both.accepts(nan) && !both.accepts(inf) && !both.accepts(-inf) && !both.accepts(1.0));
        // Finite terms that can overflow on the way: NaN in one order, an infinity in another, so either is taken.
        let overflowing = sum(&[inf, -f32::MAX, -f32::MAX]);
        assert!(overflowing.accepts(nan) && overflowing.accepts(inf));
        let prod = |x: &[f32]| {
            let Reference::Reduction(p) = program("p = prod(x)", &[]).reference(&[x], &[]).unwrap() else { panic!() };
            p
        };
        let signed = prod(&[2.0, inf, -3.0]);
        assert!(signed.accepts(-inf) && !signed.accepts(inf) && !signed.accepts(nan) && !signed.accepts(-6.0));
        let zero = prod(&[inf, 0.0, 5.0]);
        assert!(zero.accepts(nan) && !zero.accepts(inf) && !zero.accepts(0.0));
        // Terms that can underflow to zero before meeting the infinity: NaN in one order, an infinity in another.
        let underflowing = prod(&[inf, 1e-30, 1e-30]);
        assert!(underflowing.accepts(nan) && underflowing.accepts(inf));
    }

    #[test]
    fn functions_meet_their_bounds_in_f32() {
        let x: Vec<f32> = (1..2000).map(|i| i as f32 / 200.0 - 5.0).collect();
        for (source, f) in [
            ("y = exp(x)", f32::exp as fn(f32) -> f32),
            ("y = sin(x)", f32::sin),
            ("y = tanh(x)", f32::tanh),
            ("y = atan(x)", f32::atan),
            ("y = sqrt(abs(x))", |v: f32| v.abs().sqrt()),
        ] {
            let y = elementwise(source, &[], &[&x], &[]);
            let got: Vec<f32> = x.iter().map(|&v| f(v)).collect();
            check(&program(source, &[]), &Reference::Elementwise(y), &Outputs::Elementwise(vec![got]))
                .unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }

    #[test]
    fn inputs_that_do_not_match_the_program_are_refused() {
        let p = program("y = a * x + z", &["a"]);
        assert!(p.reference(&[&[1.0]], &[2.0]).unwrap_err().to_string().contains("2 input array"));
        assert!(p.reference(&[&[1.0], &[1.0]], &[]).unwrap_err().to_string().contains("1 scalar"));
        let err = p.reference(&[&[1.0, 2.0], &[1.0]], &[2.0]).unwrap_err().to_string();
        assert!(err.contains("differ in length"), "{err}");
    }
}
