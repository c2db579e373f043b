//! An expression as a [`Workload`]: the program travels in the parameters, so that every piece of the house (the
//! phases, the harness, sweeps, calibration, `auto`) takes a user's expression as it takes `square`.
//!
//! One workload type serves every expression: its parameters hold the bound [`Program`], the length `n`, each
//! input's range and each scalar's value, and its ladder is a ladder of `n`. The check recomputes the bounded
//! reference from the input rather than comparing with a plain `f32` result, so that every value is held to its own
//! bound.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Resemblance, Sharding, Workload};

use super::functions::Cost as FuncCost;
use super::reference::{Bounded, Outputs, Reference, check_stored};
use super::{Func, Logic, Node, NodeId, Program};

/// What an expression costs per element, counted from its graph: arithmetic apart from special functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExprCost {
    /// Arithmetic operations, comparisons and the cheap functions (`abs`, `min`, `where` ...; `fma` counts 2).
    pub flops: u64,
    /// Special functions (`exp`, `sin`, `pow` ...), each a call.
    pub special: u64,
}

impl Program {
    /// The operations one element costs: every node an output or the reduction uses, once.
    ///
    /// ```
    /// use gpuworthy_core::expr::{Expr, ExprCost};
    ///
    /// let program = Expr::parse("y = exp(-x * x) * sin(3 * x)")?.bind(&[])?;
    /// assert_eq!(program.cost_per_element(), ExprCost { flops: 4, special: 2 });
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn cost_per_element(&self) -> ExprCost {
        let mut roots: Vec<usize> = self.outputs.iter().map(|o| o.node).collect();
        if let Some(r) = &self.reduction {
            roots.extend([r.body, r.post]);
        }
        let used = self.reached(&roots);
        // The reduction's post-map runs once, not per element.
        let post = self.reduction.as_ref().map_or_else(|| vec![false; self.nodes.len()], |r| self.reached(&[r.post]));
        let mut cost = ExprCost::default();
        for (id, node) in self.nodes.iter().enumerate() {
            if !used[id] || post[id] {
                continue;
            }
            match node {
                Node::Neg(_) | Node::Not(_) | Node::Arith(..) | Node::Compare(..) | Node::Logic(..) => cost.flops += 1,
                Node::Call(func, _) => match func.spec().cost {
                    FuncCost::Flops(flops) => cost.flops += flops,
                    FuncCost::Special => cost.special += 1,
                },
                _ => {}
            }
        }
        if self.reduction.is_some() {
            cost.flops += 1; // combining the term into the reduction
        }
        cost
    }

    /// The arrays one run reads and writes: each input once, each output once (a reduction writes one value).
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// assert_eq!(Expr::parse("u = x + z; v = x - z")?.bind(&[])?.arrays(), (2, 2));
    /// assert_eq!(Expr::parse("y = a * x + y")?.bind(&["a"])?.arrays(), (2, 0)); // `y` is written in place
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn arrays(&self) -> (usize, usize) {
        let written = self.outputs.iter().filter(|o| self.overwrites(o).is_none()).count();
        (self.inputs.len(), written)
    }
}

impl Program {
    /// The program as text, every operation in parentheses, names as the expression wrote them: two programs that
    /// compute the same way read the same, whatever their spacing, temporaries or comments. Scalars are listed after
    /// a `|`, since `a * x` with `a` a scalar is another computation than with `a` an array.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let spaced = Expr::parse("let t = a * x;\ny = t + b  ")?.bind(&["a", "b"])?;
    /// assert_eq!(spaced.canonical(), "y = ((a * x) + b) | a, b");
    /// assert_eq!(Expr::parse("y = a*x + b")?.bind(&[])?.canonical(), "y = ((a * x) + b)");
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn canonical(&self) -> String {
        fn text(p: &Program, id: NodeId) -> String {
            match &p.nodes[id] {
                Node::Const(v) => format!("{v:?}"),
                Node::Operand(k) => format!("operand{k}"),
                Node::Input(k) => p.inputs[*k].clone(),
                Node::Scalar(k) => p.scalars[*k].clone(),
                Node::Reduced => match &p.reduction {
                    Some(r) => format!("{}({})", r.kind.name(), text(p, r.body)),
                    None => "reduced".to_owned(),
                },
                Node::Neg(a) => format!("(-{})", text(p, *a)),
                Node::Not(a) => format!("(!{})", text(p, *a)),
                Node::Arith(op, a, b) => format!("({} {} {})", text(p, *a), op.symbol(), text(p, *b)),
                Node::Compare(op, a, b) => format!("({} {} {})", text(p, *a), op.symbol(), text(p, *b)),
                Node::Logic(op, a, b) => {
                    let symbol = if *op == Logic::And { "&&" } else { "||" };
                    format!("({} {symbol} {})", text(p, *a), text(p, *b))
                }
                Node::Call(func, args) => {
                    let args: Vec<String> = args.iter().map(|&a| text(p, a)).collect();
                    format!("{}({})", func.name(), args.join(", "))
                }
            }
        }
        let mut statements: Vec<String> =
            self.outputs.iter().map(|o| format!("{} = {}", o.name, text(self, o.node))).collect();
        if let Some(r) = &self.reduction {
            statements.push(format!("{} = {}", r.name, text(self, r.post)));
        }
        let mut canonical = statements.join("; ");
        if !self.scalars.is_empty() {
            canonical.push_str(&format!(" | {}", self.scalars.join(", ")));
        }
        canonical
    }

    /// The calls one element makes that are priced apart from arithmetic, by function: the special functions, and
    /// `where` (a select and the comparison that feeds it, which cost a CPU's evaluator several arithmetic operations).
    /// The reduction's post-map, run once, is left out.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let program = Expr::parse("y = where(x > 0, exp(x), exp(-x))")?.bind(&[])?;
    /// assert_eq!(program.calls_per_element(), [("exp", 2), ("where", 1)]);
    /// assert!(Expr::parse("r = sqrt(sum(x * x))")?.bind(&[])?.calls_per_element().is_empty());
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn calls_per_element(&self) -> Vec<(&'static str, u64)> {
        let mut roots: Vec<usize> = self.outputs.iter().map(|o| o.node).collect();
        if let Some(r) = &self.reduction {
            roots.push(r.body);
        }
        let used = self.reached(&roots);
        let mut calls: Vec<(&'static str, u64)> = Vec::new();
        for (id, node) in self.nodes.iter().enumerate() {
            if let (true, Node::Call(func, _)) = (used[id], node)
                && (func.is_special() || *func == Func::Where)
            {
                match calls.iter_mut().find(|(name, _)| *name == func.name()) {
                    Some((_, count)) => *count += 1,
                    None => calls.push((func.name(), 1)),
                }
            }
        }
        calls
    }
}

/// What evaluating one node of a program for one element costs the reference ([`Program::reference`]), in plain
/// `f32` flops: an interpreted `f64` operation with its error bound (its time on one core:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const REFERENCE_FLOPS_PER_NODE: u64 = 100;

/// The elementwise expression calibration measures, whose curves predict every elementwise expression it never saw
/// (at the same bytes moved, plus their extra arithmetic and special functions).
pub const ELEMENTWISE_BASE: (&str, &[&str], &[f32]) = ("y = a*x + b", &["a", "b"], &[2.0, 1.0]);

/// The reduction calibration measures, whose curves predict every reduction it never saw.
pub const REDUCTION_BASE: (&str, &[&str], &[f32]) = ("s = sum(x*x)", &[], &[]);

/// The parameters of a base expression ([`ELEMENTWISE_BASE`], [`REDUCTION_BASE`]) at length `n`.
///
/// ```
/// use gpuworthy_core::expr::{ELEMENTWISE_BASE, base_params};
///
/// let params = base_params(ELEMENTWISE_BASE, 1024);
/// assert_eq!((params.n, params.program.inputs.len()), (1024, 1));
/// assert_eq!(params.scalars, [2.0, 1.0]); // y = a*x + b with a = 2, b = 1
/// ```
pub fn base_params(base: (&str, &[&str], &[f32]), n: usize) -> ExprParams {
    let (source, scalars, values) = base;
    let program = super::Expr::parse(source).and_then(|e| e.bind(scalars)).expect("the base expressions parse");
    ExprParams::new(Arc::new(program), n, values.to_vec())
}

/// The name of the calibrated instance of `program` ([`Workload::instance`]).
///
/// ```
/// use gpuworthy_core::expr::{ELEMENTWISE_BASE, base_params, instance_name};
///
/// let params = base_params(ELEMENTWISE_BASE, 1024);
/// assert_eq!(instance_name(&params.program), "expr: y = ((a * x) + b) | a, b");
/// ```
pub fn instance_name(program: &Program) -> String {
    format!("expr: {}", program.canonical())
}

/// The parameters of an expression workload: the program, the length, the inputs' ranges and the scalars' values.
///
/// ```
/// use std::sync::Arc;
/// use gpuworthy_core::Workload;
/// use gpuworthy_core::expr::{Expr, ExprParams, Expression};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let program = Expr::parse("y = log(x)")?.bind(&[])?;
/// let mut params = ExprParams::new(Arc::new(program), 1000, vec![]);
/// params.ranges[0] = (1.0, 2.0); // x drawn from [1, 2), where log is defined
/// let input = Expression::generate(&params, 1)?;
/// assert!(input.arrays[0].values().iter().all(|x| (1.0..2.0).contains(x)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ExprParams {
    /// The program.
    pub program: Arc<Program>,
    /// Elements of every array.
    pub n: usize,
    /// The range each input is drawn from, uniformly (`[-1, 1)` unless given), in the order of
    /// [`Program::inputs`].
    pub ranges: Vec<(f32, f32)>,
    /// Each scalar's value, in the order of [`Program::scalars`].
    pub scalars: Vec<f32>,
    /// How every input and output array is stored ([`Dtype`]): `f32`, or 16-bit elements widened to `f32` as they
    /// are read and rounded as they are written. Scalars, numbers and arithmetic are `f32` whatever it is; a
    /// reduction's value is an `f32`.
    pub dtype: Dtype,
}

impl ExprParams {
    /// `program` at length `n`, its inputs drawn from `[-1, 1)`, with these scalar values.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use gpuworthy_core::expr::{Expr, ExprParams};
    ///
    /// let program = Expr::parse("y = a * x + z")?.bind(&["a"])?;
    /// let params = ExprParams::new(Arc::new(program), 1 << 20, vec![2.0]);
    /// assert_eq!(params.ranges, [(-1.0, 1.0), (-1.0, 1.0)]); // one per input: x and z
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn new(program: Arc<Program>, n: usize, scalars: Vec<f32>) -> ExprParams {
        let ranges = vec![(-1.0, 1.0); program.inputs.len()];
        ExprParams { program, n, ranges, scalars, dtype: Dtype::F32 }
    }

    /// The same expression on arrays stored as `dtype`.
    ///
    /// ```
    /// use gpuworthy_core::{Dtype, Workload};
    /// use gpuworthy_core::expr::{ELEMENTWISE_BASE, Expression, base_params};
    ///
    /// let wide = base_params(ELEMENTWISE_BASE, 1000);
    /// let narrow = wide.in_dtype(Dtype::Bf16);
    /// assert_eq!(Expression::cost(&narrow).bytes * 2, Expression::cost(&wide).bytes); // half the bytes
    /// assert_eq!(Expression::generate(&narrow, 1)?.arrays[0].dtype(), Dtype::Bf16);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn in_dtype(&self, dtype: Dtype) -> ExprParams {
        ExprParams { dtype, ..self.clone() }
    }

    /// The same expression at length `n`.
    ///
    /// ```
    /// use gpuworthy_core::expr::{REDUCTION_BASE, base_params};
    ///
    /// let small = base_params(REDUCTION_BASE, 1024);
    /// let large = small.with_len(1 << 24);
    /// assert_eq!((large.n, &large.program), (1 << 24, &small.program));
    /// ```
    pub fn with_len(&self, n: usize) -> ExprParams {
        ExprParams { n, ..self.clone() }
    }
}

impl fmt::Display for ExprParams {
    /// The length, as the ladders of every 1D workload display it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.n)
    }
}

/// An array of an expression's input: `f32` or 16-bit elements ([`Dtype`]), owned, or borrowed from the caller's
/// memory for the length of one call, so that a caller who already holds the data (a NumPy array, a torch tensor, a
/// slice of a Rust program) is not made to copy it.
///
/// A borrowed array is made only by the unsafe [`HostArray::borrowing`] and [`HostArray::borrowing_bits`], whose
/// caller promises that the memory outlives it; a clone is always an owned copy, so nothing borrowed outlives the
/// scope that lent it.
///
/// ```
/// use gpuworthy_core::Dtype;
/// use gpuworthy_core::expr::{ArrayView, HostArray};
///
/// let owned = HostArray::from(vec![1.0, 2.0]);
/// assert!(!owned.is_borrowed());
/// assert_eq!(owned.as_f32(), Some(&[1.0, 2.0][..]));
/// let half = HostArray::rounded(Dtype::Bf16, &[1.0, 0.1]);
/// assert_eq!((half.dtype(), half.len(), half.as_bytes().len()), (Dtype::Bf16, 2, 4));
/// assert_eq!(half.values()[1], Dtype::Bf16.round(0.1)); // widened to f32, exactly
/// assert!(matches!(half.view(), ArrayView::Half(Dtype::Bf16, bits) if bits.len() == 2));
/// ```
pub struct HostArray(Storage);

enum Storage {
    Owned(Vec<f32>),
    Borrowed { data: *const f32, len: usize },
    OwnedBits(Dtype, Vec<u16>),
    BorrowedBits { dtype: Dtype, data: *const u16, len: usize },
}

// SAFETY: a borrowed array only reads memory that its maker promised stays valid and unwritten while it lives
// ([`HostArray::borrowing`]); reading it from several threads is then as safe as reading a shared `&[f32]`.
unsafe impl Send for HostArray {}
// SAFETY: as for `Send`: nothing is ever written through a `HostArray`.
unsafe impl Sync for HostArray {}

/// An array's elements as they are stored: what a backend uploads or reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrayView<'a> {
    /// `f32` elements.
    F32(&'a [f32]),
    /// 16-bit elements of the type, as their bits.
    Half(Dtype, &'a [u16]),
}

impl<'a> ArrayView<'a> {
    /// The storage type.
    pub fn dtype(&self) -> Dtype {
        match self {
            ArrayView::F32(_) => Dtype::F32,
            ArrayView::Half(dtype, _) => *dtype,
        }
    }

    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            ArrayView::F32(values) => values.len(),
            ArrayView::Half(_, bits) => bits.len(),
        }
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored bytes, in the machine's order: what an upload copies.
    pub fn as_bytes(&self) -> &'a [u8] {
        match self {
            ArrayView::F32(values) => bytemuck::cast_slice(values),
            ArrayView::Half(_, bits) => bytemuck::cast_slice(bits),
        }
    }

    /// The elements `range`, stored as they are.
    pub fn slice(&self, range: Range<usize>) -> ArrayView<'a> {
        match self {
            ArrayView::F32(values) => ArrayView::F32(&values[range]),
            ArrayView::Half(dtype, bits) => ArrayView::Half(*dtype, &bits[range]),
        }
    }

    /// The values as `f32`: the slice itself, or the 16-bit elements widened (exactly) into a new vector.
    pub fn values(&self) -> Cow<'a, [f32]> {
        match self {
            ArrayView::F32(values) => Cow::Borrowed(values),
            ArrayView::Half(dtype, bits) => {
                let mut out = vec![0.0; bits.len()];
                dtype.decode_slice(bits, &mut out);
                Cow::Owned(out)
            }
        }
    }
}

impl HostArray {
    /// An array that reads `values` in place, with no copy.
    ///
    /// # Safety
    ///
    /// `values` must stay valid, and no one may write to it, until the returned array is dropped (its clones are
    /// owned copies and may live on).
    ///
    /// ```
    /// use gpuworthy_core::expr::HostArray;
    ///
    /// let values = vec![1.0f32, 2.0, 3.0];
    /// // SAFETY: `values` outlives `array` and is not written while it lives.
    /// let array = unsafe { HostArray::borrowing(&values) };
    /// assert!(array.is_borrowed() && array.as_bytes().as_ptr() == values.as_ptr().cast());
    /// assert!(!array.clone().is_borrowed()); // a clone owns a copy
    /// ```
    pub unsafe fn borrowing(values: &[f32]) -> HostArray {
        HostArray(Storage::Borrowed { data: values.as_ptr(), len: values.len() })
    }

    /// An array of 16-bit elements of `dtype` that reads `bits` in place, with no copy. [`Dtype::F32`] is refused:
    /// an `f32` array is made by [`HostArray::borrowing`].
    ///
    /// # Safety
    ///
    /// As [`HostArray::borrowing`]: `bits` must stay valid and unwritten until the returned array is dropped.
    pub unsafe fn borrowing_bits(dtype: Dtype, bits: &[u16]) -> Result<HostArray> {
        if !dtype.is_half() {
            return Err(Error::invalid("16-bit elements were given as f32 data: name their type (f16 or bf16)"));
        }
        Ok(HostArray(Storage::BorrowedBits { dtype, data: bits.as_ptr(), len: bits.len() }))
    }

    /// An owned array of 16-bit elements of `dtype`, from their bits.
    pub fn from_bits(dtype: Dtype, bits: Vec<u16>) -> Result<HostArray> {
        if !dtype.is_half() {
            return Err(Error::invalid("16-bit elements were given as f32 data: name their type (f16 or bf16)"));
        }
        Ok(HostArray(Storage::OwnedBits(dtype, bits)))
    }

    /// `values` stored as `dtype`: rounded to nearest (ties to even) for a 16-bit type, copied for `f32`.
    pub fn rounded(dtype: Dtype, values: &[f32]) -> HostArray {
        if dtype.is_half() {
            let mut bits = vec![0u16; values.len()];
            dtype.encode_slice(values, &mut bits);
            HostArray(Storage::OwnedBits(dtype, bits))
        } else {
            HostArray::from(values.to_vec())
        }
    }

    /// Whether it reads memory it does not own.
    ///
    /// ```
    /// use gpuworthy_core::expr::HostArray;
    ///
    /// let values = [0.5f32; 4];
    /// // SAFETY: `values` outlives `borrowed` and is not written while it lives.
    /// let borrowed = unsafe { HostArray::borrowing(&values) };
    /// assert!(borrowed.is_borrowed() && !HostArray::from(values.to_vec()).is_borrowed());
    /// ```
    pub fn is_borrowed(&self) -> bool {
        matches!(self.0, Storage::Borrowed { .. } | Storage::BorrowedBits { .. })
    }

    /// The elements as stored.
    pub fn view(&self) -> ArrayView<'_> {
        match &self.0 {
            Storage::Owned(values) => ArrayView::F32(values),
            // SAFETY: the pointer and length came from a live slice whose memory its lender keeps valid and unwritten
            // while this array lives (the contract of `borrowing`).
            Storage::Borrowed { data, len } => ArrayView::F32(unsafe { std::slice::from_raw_parts(*data, *len) }),
            Storage::OwnedBits(dtype, bits) => ArrayView::Half(*dtype, bits),
            Storage::BorrowedBits { dtype, data, len } => {
                // SAFETY: as above, the contract of `borrowing_bits`.
                let bits = unsafe { std::slice::from_raw_parts(*data, *len) };
                ArrayView::Half(*dtype, bits)
            }
        }
    }

    /// The storage type.
    pub fn dtype(&self) -> Dtype {
        self.view().dtype()
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.view().len()
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, where they are `f32`.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match self.view() {
            ArrayView::F32(values) => Some(values),
            ArrayView::Half(..) => None,
        }
    }

    /// The stored bytes: what an upload copies.
    pub fn as_bytes(&self) -> &[u8] {
        self.view().as_bytes()
    }

    /// The values as `f32` ([`ArrayView::values`]): borrowed for an `f32` array, widened for a 16-bit one.
    pub fn values(&self) -> Cow<'_, [f32]> {
        self.view().values()
    }

    /// An owned copy of the elements `range`, stored as they are.
    pub fn part(&self, range: Range<usize>) -> HostArray {
        HostArray::from_view(self.view().slice(range))
    }

    fn from_view(view: ArrayView<'_>) -> HostArray {
        match view {
            ArrayView::F32(values) => HostArray(Storage::Owned(crate::shard::copy_of(values))),
            ArrayView::Half(dtype, bits) => HostArray(Storage::OwnedBits(dtype, crate::shard::copy_of(bits))),
        }
    }
}

impl From<Vec<f32>> for HostArray {
    fn from(values: Vec<f32>) -> HostArray {
        HostArray(Storage::Owned(values))
    }
}

impl Clone for HostArray {
    /// An owned copy, borrowed or not.
    fn clone(&self) -> HostArray {
        HostArray::from_view(self.view())
    }
}

impl PartialEq for HostArray {
    fn eq(&self, other: &HostArray) -> bool {
        self.view() == other.view()
    }
}

impl fmt::Debug for HostArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.view(), f)
    }
}

/// An expression's input: its parameters and one array per input.
///
/// ```
/// use gpuworthy_core::Workload;
/// use gpuworthy_core::expr::{ExprInput, Expression, HostArray, Outputs, REDUCTION_BASE, base_params};
///
/// let params = base_params(REDUCTION_BASE, 3); // s = sum(x*x)
/// let input = ExprInput { params, arrays: vec![HostArray::from(vec![1.0, 2.0, 2.0])] };
/// assert_eq!(Expression::reference(&input)?, Outputs::Reduction(9.0));
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ExprInput {
    /// The parameters it was made with.
    pub params: ExprParams,
    /// One array per [`Program::inputs`], each of `params.n` elements.
    pub arrays: Vec<HostArray>,
}

impl ExprInput {
    /// The arrays' values as `f32` ([`HostArray::values`]): borrowed where they are `f32`, widened where they are 16
    /// bits; for [`Program::reference`], the interpreter and the backends that compute from `f32` slices
    /// ([`as_slices`]).
    ///
    /// ```
    /// use gpuworthy_core::expr::{ExprInput, HostArray, REDUCTION_BASE, as_slices, base_params};
    ///
    /// let input = ExprInput { params: base_params(REDUCTION_BASE, 2), arrays: vec![HostArray::from(vec![3.0, 4.0])] };
    /// assert_eq!(as_slices(&input.values()), [&[3.0, 4.0][..]]);
    /// ```
    pub fn values(&self) -> Vec<Cow<'_, [f32]>> {
        self.arrays.iter().map(HostArray::values).collect()
    }
}

/// Slices of the arrays [`ExprInput::values`] gave.
pub fn as_slices<'a>(values: &'a [Cow<'_, [f32]>]) -> Vec<&'a [f32]> {
    values.iter().map(|v| &v[..]).collect()
}

/// The workload of a user's expression ([`crate::expr`]).
///
/// Its input is made, evaluated and checked like any workload's; the devices of the `gpuworthy` crate run its
/// phases (`run`, `upload`, `launch`, `download`) on every backend.
///
/// ```
/// use std::sync::Arc;
/// use gpuworthy_core::{Precision, Workload};
/// use gpuworthy_core::expr::{Expr, ExprParams, Expression, Outputs};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let program = Expr::parse("y = 2 * x")?.bind(&[])?;
/// let input = Expression::generate(&ExprParams::new(Arc::new(program), 1000, vec![]), 1)?;
/// let expected = Expression::reference(&input)?;
/// let Outputs::Elementwise(y) = &expected else { unreachable!("y = 2 * x is elementwise") };
/// assert_eq!(y[0][7], 2.0 * input.arrays[0].values()[7]);
/// assert!(Expression::check(&input, &expected, &expected, Precision::Fp32).is_ok());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Expression;

/// The lengths the ladders of an expression take: as the 1D workloads'.
fn lengths(from: u32, to: u32, step: usize) -> Vec<usize> {
    (from..=to).step_by(step).map(|p| 1usize << p).collect()
}

impl Workload for Expression {
    const NAME: &'static str = "expr";
    const LESSON: &'static str =
        "your own computation: one definition, every backend, checked against an f64 reference";
    type Params = ExprParams;
    type Input = ExprInput;
    type Output = Outputs;

    /// Contiguous elements: an elementwise program's outputs are concatenated; a reduction's members run its
    /// [`Program::partial`] (no post-map), and the join combines their values in member order and applies the
    /// post-map once ([`Program::finish_reduction`]).
    fn sharding() -> Option<Sharding<Self>> {
        fn part(params: &ExprParams, range: Range<usize>) -> ExprParams {
            let program = match params.program.reduction {
                Some(_) => Arc::new(params.program.partial()),
                None => Arc::clone(&params.program),
            };
            ExprParams { program, n: range.len(), ..params.clone() }
        }
        Some(Sharding {
            unit: "elements",
            units: |p| p.n,
            part,
            cut: |input, range| ExprInput {
                params: part(&input.params, range.clone()),
                arrays: input.arrays.iter().map(|a| a.part(range.clone())).collect(),
            },
            join: |input, mut parts| {
                let program = &input.params.program;
                match &program.reduction {
                    Some(reduction) => {
                        let mut total = reduction.kind.identity();
                        for (_, part) in parts {
                            // A member that returned arrays for a reduction is a join the check must fail.
                            let Outputs::Reduction(value) = part else { return part };
                            total = reduction.kind.combine(total, value);
                        }
                        Outputs::Reduction(program.finish_reduction(total, &input.params.scalars))
                    }
                    // Each output's parts concatenated on every core ([`crate::shard::concatenate_slices`]); a part of
                    // the wrong kind is returned as it is, for the check to fail. A part with fewer arrays than the
                    // program's outputs joins short, and the check says so.
                    None if input.params.dtype.is_half() => {
                        if let Some(k) = parts.iter().position(|(_, p)| !matches!(p, Outputs::Half { .. })) {
                            return parts.swap_remove(k).1;
                        }
                        let mut per_output: Vec<Vec<&[u16]>> = vec![Vec::new(); program.outputs.len()];
                        for (_, part) in &parts {
                            if let Outputs::Half { arrays, .. } = part {
                                per_output.iter_mut().zip(arrays).for_each(|(pieces, array)| pieces.push(array));
                            }
                        }
                        let arrays = per_output.iter().map(|p| crate::shard::concatenate_slices(p)).collect();
                        Outputs::Half { dtype: input.params.dtype, arrays }
                    }
                    None => {
                        if let Some(k) = parts.iter().position(|(_, p)| !matches!(p, Outputs::Elementwise(_))) {
                            return parts.swap_remove(k).1;
                        }
                        let mut per_output: Vec<Vec<&[f32]>> = vec![Vec::new(); program.outputs.len()];
                        for (_, part) in &parts {
                            if let Outputs::Elementwise(arrays) = part {
                                per_output.iter_mut().zip(arrays).for_each(|(pieces, array)| pieces.push(array));
                            }
                        }
                        Outputs::Elementwise(per_output.iter().map(|p| crate::shard::concatenate_slices(p)).collect())
                    }
                }
            },
            unit_costs: None,
            // An elementwise program's outputs are its parts' outputs end to end; a reduction's is their combine.
            in_place: Some(crate::workload::InPlace {
                output: |input, previous| {
                    let (program, n) = (&input.params.program, input.params.n);
                    if program.reduction.is_some() {
                        return None;
                    }
                    let count = program.outputs.len();
                    /// `count` arrays of `n` values, each the kept one where it has `n`.
                    fn kept<T: Copy + Default + Send + Sync>(
                        arrays: Vec<Vec<T>>,
                        count: usize,
                        n: usize,
                    ) -> Vec<Vec<T>> {
                        let mut arrays = arrays.into_iter().map(Some).collect::<Vec<_>>();
                        arrays.resize_with(count, || None);
                        arrays.into_iter().take(count).map(|a| crate::shard::reused_or_zeroed(a, n)).collect()
                    }
                    Some(match (input.params.dtype, previous) {
                        (dtype, Some(Outputs::Half { dtype: was, arrays })) if dtype == was => {
                            Outputs::Half { dtype, arrays: kept(arrays, count, n) }
                        }
                        (dtype, _) if dtype.is_half() => Outputs::Half { dtype, arrays: kept(Vec::new(), count, n) },
                        (_, Some(Outputs::Elementwise(arrays))) => Outputs::Elementwise(kept(arrays, count, n)),
                        _ => Outputs::Elementwise(kept(Vec::new(), count, n)),
                    })
                },
                split: |_, output, ranges| {
                    fn per_part<'a, T>(arrays: &'a mut [Vec<T>], ranges: &[Range<usize>]) -> Vec<Vec<&'a mut [T]>> {
                        let mut parts: Vec<Vec<&'a mut [T]>> = ranges.iter().map(|_| Vec::new()).collect();
                        for array in arrays {
                            for (part, slice) in parts.iter_mut().zip(crate::shard::split_units(array, ranges, 1)) {
                                part.push(slice);
                            }
                        }
                        parts
                    }
                    match output {
                        Outputs::Elementwise(arrays) => {
                            per_part(arrays, ranges).into_iter().map(crate::workload::PartOutput::F32).collect()
                        }
                        Outputs::Half { arrays, .. } => {
                            per_part(arrays, ranges).into_iter().map(crate::workload::PartOutput::Bits).collect()
                        }
                        Outputs::Reduction(_) => Vec::new(),
                    }
                },
                fill: |_, _, part, slices| match part {
                    Outputs::Elementwise(arrays) => slices.fill(&arrays.iter().map(Vec::as_slice).collect::<Vec<_>>()),
                    Outputs::Half { arrays, .. } => slices.fill(&arrays.iter().map(Vec::as_slice).collect::<Vec<_>>()),
                    Outputs::Reduction(_) => Err(Error::invalid("a member returned a reduction's value for arrays")),
                },
                input_bytes: |input| {
                    input
                        .arrays
                        .iter()
                        .map(|array| match array.view() {
                            ArrayView::F32(values) => bytemuck::cast_slice(values),
                            ArrayView::Half(_, bits) => bytemuck::cast_slice(bits),
                        })
                        .collect()
                },
            }),
        })
    }

    fn params(input: &ExprInput) -> ExprParams {
        input.params.clone()
    }

    fn validate(input: &ExprInput) -> Result<()> {
        let p = &input.params;
        if p.scalars.len() != p.program.scalars.len() || p.ranges.len() != p.program.inputs.len() {
            return Err(Error::invalid("the expression's parameters do not match its program"));
        }
        if let Some((name, array)) = p.program.inputs.iter().zip(&input.arrays).find(|(_, a)| a.dtype() != p.dtype) {
            return Err(Error::invalid(format!(
                "`{name}` holds {} elements, but the expression's arrays are {}: every array of one expression has \
                 one type",
                array.dtype(),
                p.dtype
            )));
        }
        let lengths: Vec<usize> = input.arrays.iter().map(HostArray::len).collect();
        p.program.length_of(&lengths, &p.scalars).and_then(|n| {
            if n == p.n { Ok(()) } else { Err(Error::invalid(format!("the arrays hold {n} elements, not {}", p.n))) }
        })
    }

    /// Uniform `f32` draws from each input's range, rounded to the arrays' type.
    fn generate(params: &ExprParams, seed: u64) -> Result<ExprInput> {
        crate::memory::check_host_memory::<Self>(params)?;
        if params.ranges.len() != params.program.inputs.len() {
            return Err(Error::invalid("one range per input array is needed"));
        }
        let arrays = params
            .ranges
            .iter()
            .enumerate()
            .map(|(k, &(low, high))| {
                let values = rng::uniform_f32(seed, k as u64, params.n, low, high);
                if params.dtype.is_half() { HostArray::rounded(params.dtype, &values) } else { HostArray::from(values) }
            })
            .collect();
        Ok(ExprInput { params: params.clone(), arrays })
    }

    /// The bounded reference's values, stored as the arrays' type.
    fn reference(input: &ExprInput) -> Result<Outputs> {
        Self::validate(input)?;
        let values = input.values();
        let bounded = input.params.program.reference(&as_slices(&values), &input.params.scalars)?;
        let value = |b: &Bounded| b.value as f32;
        let dtype = input.params.dtype;
        Ok(match bounded {
            Reference::Elementwise(outputs) if dtype.is_half() => Outputs::Half {
                dtype,
                arrays: outputs.iter().map(|o| o.iter().map(|b| dtype.encode(value(b))).collect()).collect(),
            },
            Reference::Elementwise(outputs) => {
                Outputs::Elementwise(outputs.iter().map(|o| o.iter().map(value).collect()).collect())
            }
            Reference::Reduction(b) => Outputs::Reduction(value(&b)),
        })
    }

    /// Each value within its bound ([`Bounded::accepts`]); a 16-bit element within the rounding of its bound to the
    /// type ([`Bounded::accepts_stored`]).
    fn check(input: &ExprInput, _: &Outputs, actual: &Outputs, _: Precision) -> std::result::Result<(), Mismatch> {
        let program = &input.params.program;
        let values = input.values();
        let reference = program
            .reference(&as_slices(&values), &input.params.scalars)
            .map_err(|e| Mismatch::new(format!("the reference could not be computed: {e}")))?;
        check_stored(program, &reference, actual, input.params.dtype)
    }

    /// The reference evaluates every node of the program in `f64` with an error bound, through an interpreter:
    /// about [`REFERENCE_FLOPS_PER_NODE`] plain flops' worth per node and element.
    fn check_work(params: &ExprParams) -> u64 {
        (params.n as u64).saturating_mul(params.program.nodes.len() as u64).saturating_mul(REFERENCE_FLOPS_PER_NODE)
    }

    /// The arrays, and for 16-bit arrays their values widened for the reference as well.
    fn host_bytes(params: &ExprParams) -> Option<u64> {
        let (read, written) = params.program.arrays();
        let widened = if params.dtype.is_half() { 4 * read as u64 } else { 0 };
        (params.n as u64).checked_mul(params.dtype.bytes() as u64 * (read + written) as u64 + widened)
    }

    /// Each array's elements at the arrays' width; a reduction's value is 4 bytes.
    fn cost(params: &ExprParams) -> Cost {
        let n = params.n as u64;
        let width = params.dtype.bytes() as u64;
        let (read, written) = params.program.arrays();
        let written_bytes = if params.program.reduction.is_some() { 4 } else { width * written as u64 * n };
        let per = params.program.cost_per_element();
        Cost { bytes: width * read as u64 * n + written_bytes, flops: per.flops * n, elements: n }
    }

    /// On the CPU, each output's lines are read before they are written, but by `blocks` past
    /// [`CPU_STREAM_ABOVE`](crate::traffic::CPU_STREAM_ABOVE) elements (the outputs are arrays of their own there,
    /// even those that overwrite an input elsewhere).
    fn traffic(params: &ExprParams, backend: crate::BackendKind, variant: &str) -> u64 {
        let outputs = if params.program.reduction.is_some() { 0 } else { params.program.outputs.len() as u64 };
        // 16-bit outputs are written with ordinary stores, half an `f32`'s bytes each.
        let streamed = variant == "blocks" && params.n > crate::traffic::CPU_STREAM_ABOVE && !params.dtype.is_half();
        let line_reads = if backend == crate::BackendKind::Cpu {
            crate::traffic::cpu_line_reads(outputs * params.n as u64, streamed) * params.dtype.bytes() as u64 / 4
        } else {
            0
        };
        Self::cost(params).bytes + line_reads
    }

    /// `expr: ` and the program's canonical text ([`Program::canonical`]); on 16-bit arrays, `expr (bf16): ...`.
    fn instance(params: &ExprParams) -> Option<String> {
        let name = instance_name(&params.program);
        Some(match params.dtype {
            Dtype::F32 => name,
            dtype => name.replacen("expr:", &format!("expr ({dtype}):"), 1),
        })
    }

    /// The base expression of its kind ([`ELEMENTWISE_BASE`] or [`REDUCTION_BASE`]) at the same bytes moved, plus the
    /// arithmetic beyond the base's and every special-function call.
    fn resemblance(params: &ExprParams) -> Option<Resemblance> {
        let reduction = params.program.reduction.is_some();
        let base = if reduction { REDUCTION_BASE } else { ELEMENTWISE_BASE };
        let own = Self::cost(params);
        let base_bytes_per_element: u64 = if reduction { 4 } else { 8 };
        let base_len = (own.bytes.saturating_sub(if reduction { 4 } else { 0 }) / base_bytes_per_element) as usize;
        let like = base_params(base, base_len);
        let cost = Self::cost(&like);
        let n = params.n as u64;
        let calls = params.program.calls_per_element();
        // A `where` is priced as a call, which covers its select and its comparison: not as two operations more.
        let selects = calls.iter().find(|(name, _)| *name == "where").map_or(0, |(_, count)| 2 * count * n);
        let extra_flops = if n == 0 { 0 } else { own.flops.saturating_sub(cost.flops + selects).div_ceil(n) };
        Some(Resemblance { like: instance_name(&like.program), cost, elements: n, extra_flops, calls })
    }

    /// Not used: an expression's ladder depends on its program ([`expression_ladder`]).
    fn ladder() -> Vec<ExprParams> {
        Vec::new()
    }

    fn quick_ladder() -> Vec<ExprParams> {
        Vec::new()
    }

    fn conformance_params() -> Vec<ExprParams> {
        Vec::new()
    }

    fn special_inputs() -> Vec<(&'static str, ExprInput)> {
        Vec::new()
    }
}

/// The sizes an expression is swept at: `2^10` to `2^26` elements by factors of 4, or the short ladder.
///
/// ```
/// use gpuworthy_core::expr::{REDUCTION_BASE, base_params, expression_ladder};
///
/// let quick = expression_ladder(&base_params(REDUCTION_BASE, 0), true);
/// assert_eq!(quick.iter().map(|p| p.n).collect::<Vec<_>>(), [1 << 10, 1 << 14, 1 << 18, 1 << 22]);
/// ```
pub fn expression_ladder(params: &ExprParams, quick: bool) -> Vec<ExprParams> {
    let lengths = if quick { lengths(10, 22, 4) } else { lengths(10, 26, 2) };
    lengths.into_iter().map(|n| params.with_len(n)).collect()
}

/// The lengths every backend must compute an expression at: empty, one, a few around a vector of 4, and one past a
/// block.
pub const CONFORMANCE_LENGTHS: [usize; 7] = [0, 1, 3, 4, 5, 1000, 4099];

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of an expression, each run through the interpreter as a member would run it, joined into what the
    /// whole program's check accepts: elementwise programs with several outputs, and every reduction with and
    /// without a post-map; a member returning the whole program's value instead of its partial fails.
    #[test]
    fn expressions_split_into_parts_that_join_into_the_reference() {
        let sharding = Expression::sharding().unwrap();
        for (source, scalars) in [
            ("y = a * x + z", &[("a", 2.5f32)][..]),
            ("u = x * z; v = sin(x) - z", &[]),
            ("s = sum(x * x)", &[]),
            ("r = sqrt(sum(x * x)) + a", &[("a", 1.0)]),
            ("p = prod(1 + x / 64)", &[]),
            ("m = min(x - z)", &[]),
            ("m = 2 * max(x)", &[]),
        ] {
            let names: Vec<&str> = scalars.iter().map(|(n, _)| *n).collect();
            let program = Arc::new(super::super::Expr::parse(source).unwrap().bind(&names).unwrap());
            let values = scalars.iter().map(|(_, v)| *v).collect();
            let input = Expression::generate(&ExprParams::new(program, 1000, values), 3).unwrap();
            let run =
                |input: &ExprInput| input.params.program.interpret(&as_slices(&input.values()), &input.params.scalars);
            for shares in [&[1.0][..], &[1.0, 1.0], &[0.5, 0.0, 0.3, 0.2]] {
                let parts = sharding.split(&input.params, shares).unwrap();
                let outputs: Vec<_> =
                    parts.iter().map(|r| (r.clone(), run(&(sharding.cut)(&input, r.clone())).unwrap())).collect();
                let joined = (sharding.join)(&input, outputs);
                let checked = Expression::check(&input, &joined, &joined, Precision::Fp32);
                assert!(checked.is_ok(), "{source} {shares:?}: {joined:?} {checked:?}");
            }
            if source.starts_with("r =") || source.starts_with("m = 2") {
                // The whole program's value from each member is a post-map applied twice.
                let halves = sharding.split(&input.params, &[1.0, 1.0]).unwrap();
                let wrong: Vec<_> = halves
                    .iter()
                    .map(|r| {
                        let mut cut = (sharding.cut)(&input, r.clone());
                        cut.params.program = Arc::clone(&input.params.program);
                        (r.clone(), run(&cut).unwrap())
                    })
                    .collect();
                let joined = (sharding.join)(&input, wrong);
                assert!(Expression::check(&input, &joined, &joined, Precision::Fp32).is_err(), "{source}: {joined:?}");
            }
        }
    }

    /// On the CPU, each output array's lines are read before they are written up to the streaming length of
    /// `blocks`; a reduction writes no array; the GPUs move the cost's bytes.
    #[test]
    fn cpu_outputs_move_their_lines_until_they_stream() {
        use crate::BackendKind::{Cpu, Cuda};
        use crate::traffic::CPU_STREAM_ABOVE;
        let program = |text: &str| Arc::new(super::super::Expr::parse(text).unwrap().bind(&[]).unwrap());
        let two = program("u = x + z; v = x - z");
        let (at, past) = (
            ExprParams::new(two.clone(), CPU_STREAM_ABOVE, vec![]),
            ExprParams::new(two, CPU_STREAM_ABOVE + 1, vec![]),
        );
        let n = CPU_STREAM_ABOVE as u64;
        assert_eq!(Expression::traffic(&at, Cpu, "blocks"), Expression::cost(&at).bytes + 2 * 4 * n);
        assert_eq!(Expression::traffic(&past, Cpu, "blocks"), Expression::cost(&past).bytes);
        assert_eq!(Expression::traffic(&past, Cpu, "scalar"), Expression::cost(&past).bytes + 2 * 4 * (n + 1));
        assert_eq!(Expression::traffic(&at, Cuda, "generated"), Expression::cost(&at).bytes);
        let sum = ExprParams::new(program("s = sum(x*x)"), 1024, vec![]);
        assert_eq!(Expression::traffic(&sum, Cpu, "blocks"), Expression::cost(&sum).bytes);
    }
    use crate::expr::Expr;

    fn params(source: &str, scalars: &[&str], values: Vec<f32>, n: usize) -> ExprParams {
        ExprParams::new(Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap()), n, values)
    }

    #[test]
    fn cost_counts_arithmetic_and_special_functions_apart() {
        let p = params("y = exp(-x * x) * sin(3 * x)", &[], vec![], 1000);
        assert_eq!(p.program.cost_per_element(), ExprCost { flops: 4, special: 2 });
        let cost = Expression::cost(&p);
        assert_eq!((cost.bytes, cost.flops), (8000, 4000));
        let saxpy = params("y = a * x + y", &["a"], vec![2.0], 10);
        assert_eq!(Expression::cost(&saxpy).bytes, 80, "an output written in place moves its bytes once");
        let norm = params("r = 2 * sqrt(sum(x * x))", &[], vec![], 10);
        assert_eq!(Expression::cost(&norm).bytes, 44);
        assert_eq!(norm.program.cost_per_element(), ExprCost { flops: 2, special: 0 }, "the post-map runs once");
    }

    #[test]
    fn an_instance_is_named_by_its_computation_and_resembles_the_base_of_its_kind() {
        let spaced = params("let t = a * x;\ny = t + b  ", &["a", "b"], vec![2.0, 1.0], 10);
        let base = base_params(ELEMENTWISE_BASE, 10);
        assert_eq!(Expression::instance(&spaced), Expression::instance(&base));
        assert_eq!(Expression::instance(&base).unwrap(), "expr: y = ((a * x) + b) | a, b");
        let arrays = params("y = a*x + b", &[], vec![], 10);
        assert_ne!(Expression::instance(&arrays), Expression::instance(&base), "arrays are not scalars");
        let rotation = params("u = x*c - y*s; v = x*s + y*c + exp(x) + exp(y)", &["c", "s"], vec![0.6, 0.8], 1000);
        let r = Expression::resemblance(&rotation).unwrap();
        assert_eq!(r.like, Expression::instance(&base).unwrap());
        assert_eq!((r.cost.bytes, r.cost.elements, r.elements), (16000, 2000, 1000), "the base at the same bytes");
        assert_eq!(r.calls, [("exp", 2)]);
        assert_eq!(r.extra_flops, 4, "8 flops per element against the base's 2 at twice the elements");
        let norm = params("r = sqrt(sum(x * x))", &[], vec![], 10);
        let r = Expression::resemblance(&norm).unwrap();
        assert_eq!((r.cost.bytes, r.calls.len()), (44, 0), "the post-map's sqrt runs once");
        assert_eq!(r.like, "expr: s = sum((x * x))");
    }

    #[test]
    fn an_expression_is_generated_checked_and_refused_like_a_workload() {
        let p = params("y = a * x + b", &["a", "b"], vec![2.0, 1.0], 1000);
        let input = Expression::generate(&p, 3).unwrap();
        let expected = Expression::reference(&input).unwrap();
        assert!(Expression::check(&input, &expected, &expected, Precision::Fp32).is_ok());
        let Outputs::Elementwise(mut wrong) = expected.clone() else { panic!() };
        wrong[0][17] += 0.01;
        let err = Expression::check(&input, &expected, &Outputs::Elementwise(wrong), Precision::Fp32).unwrap_err();
        assert!(err.message.contains("y[17]"), "{err}");
        let mut short = input.clone();
        short.arrays[0] = input.arrays[0].part(1..1000);
        assert!(Expression::validate(&short).is_err());
        assert_eq!(expression_ladder(&p, true).iter().map(|p| p.n).collect::<Vec<_>>(), [1024, 16384, 262144, 4194304]);
    }

    /// On 16-bit arrays: inputs are generated in the type, the reference is stored in it, the check takes exactly
    /// the roundings of a correct `f32` result (so a result one unit of the type off, a result left in `f32`, or
    /// one rounded to the other 16-bit type fails), and parts join in the type.
    #[test]
    fn half_width_arrays_are_generated_checked_and_joined_in_their_type() {
        for dtype in [Dtype::F16, Dtype::Bf16] {
            let p = params("y = a * x + b; z = exp(x) * 3", &["a", "b"], vec![2.0, 1.0], 1000).in_dtype(dtype);
            let input = Expression::generate(&p, 5).unwrap();
            assert!(input.arrays.iter().all(|a| a.dtype() == dtype && a.len() == 1000));
            let x = input.arrays[0].values();
            assert!(x.iter().all(|&v| dtype.round(v) == v), "{dtype}: inputs are values of the type");
            let expected = Expression::reference(&input).unwrap();
            let Outputs::Half { arrays, .. } = &expected else { panic!("{expected:?}") };
            assert_eq!(arrays[0][10], dtype.encode(2.0 * x[10] + 1.0), "{dtype}");
            assert!(Expression::check(&input, &expected, &expected, Precision::Fp32).is_ok());
            let mut off = arrays.clone();
            off[1][3] += 1; // the next value of the type
            let err = Expression::check(&input, &expected, &Outputs::Half { dtype, arrays: off }, Precision::Fp32)
                .unwrap_err();
            assert!(err.message.contains("z[3]") && err.message.contains(dtype.name()), "{err}");
            let wide = Outputs::Elementwise(
                arrays.iter().map(|a| a.iter().map(|&b| dtype.decode(b)).collect()).collect::<Vec<_>>(),
            );
            let err = Expression::check(&input, &expected, &wide, Precision::Fp32).unwrap_err();
            assert!(err.message.contains("are f32"), "{err}");
            let other = if dtype == Dtype::F16 { Dtype::Bf16 } else { Dtype::F16 };
            let recast = Outputs::Half { dtype: other, arrays: arrays.clone() };
            assert!(Expression::check(&input, &expected, &recast, Precision::Fp32).is_err());
            let sharding = Expression::sharding().unwrap();
            let parts = sharding.split(&input.params, &[0.3, 0.7]).unwrap();
            let outputs: Vec<_> = parts
                .iter()
                .map(|r| (r.clone(), Expression::reference(&(sharding.cut)(&input, r.clone())).unwrap()))
                .collect();
            assert_eq!((sharding.join)(&input, outputs), expected, "{dtype}: parts join in the type");
            assert_eq!(Expression::instance(&p).unwrap().split(':').next(), Some(format!("expr ({dtype})").as_str()));
        }
    }

    /// Arrays of another type than the expression's are refused, by name.
    #[test]
    fn arrays_of_another_type_are_refused() {
        let p = params("y = x + z", &[], vec![], 4).in_dtype(Dtype::Bf16);
        let mut input = Expression::generate(&p, 1).unwrap();
        input.arrays[1] = HostArray::from(vec![1.0; 4]);
        let err = Expression::validate(&input).unwrap_err().to_string();
        assert!(err.contains("`z` holds f32") && err.contains("bf16"), "{err}");
        assert!(HostArray::from_bits(Dtype::F32, vec![0; 4]).is_err());
    }

    /// On 16-bit arrays, values near the type's limits: f16's overflow to infinity past 65504 is accepted exactly
    /// where a correct `f32` result rounds there, and a NaN stays a NaN.
    #[test]
    fn half_width_results_overflow_where_their_type_does() {
        let p = params("y = x * 1000", &[], vec![], 3).in_dtype(Dtype::F16);
        let input = ExprInput { params: p, arrays: vec![HostArray::rounded(Dtype::F16, &[65.5, 70.0, f32::NAN])] };
        let expected = Expression::reference(&input).unwrap();
        let Outputs::Half { arrays, .. } = &expected else { panic!() };
        let values: Vec<f32> = arrays[0].iter().map(|&b| Dtype::F16.decode(b)).collect();
        assert_eq!(values[..2], [65504.0, f32::INFINITY], "65500 rounds to 65504, 70000 past it");
        assert!(values[2].is_nan());
        assert!(Expression::check(&input, &expected, &expected, Precision::Fp32).is_ok());
        for (i, wrong) in [(0, f32::INFINITY), (1, 65504.0)] {
            let mut arrays = arrays.clone();
            arrays[0][i] = Dtype::F16.encode(wrong);
            let outputs = Outputs::Half { dtype: Dtype::F16, arrays };
            assert!(Expression::check(&input, &expected, &outputs, Precision::Fp32).is_err(), "y[{i}] = {wrong}");
        }
    }

    /// A borrowed array reads the lender's memory; its clone owns a copy that outlives the lender.
    #[test]
    fn a_borrowed_array_reads_in_place_and_its_clone_owns_a_copy() {
        let lender = vec![1.0f32, 2.0, 3.0];
        // SAFETY: `lender` outlives `borrowed` and is not written while it lives.
        let borrowed = unsafe { HostArray::borrowing(&lender) };
        assert!(borrowed.is_borrowed() && borrowed.as_bytes().as_ptr() == lender.as_ptr().cast());
        let copy = borrowed.clone();
        drop(borrowed);
        drop(lender);
        assert!(!copy.is_borrowed());
        assert_eq!(copy.as_f32(), Some(&[1.0, 2.0, 3.0][..]));
    }
}
