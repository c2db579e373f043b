//! An expression as a [`Workload`]: the program travels in the parameters, so that every piece of the house (the
//! phases, the harness, sweeps, calibration, `auto`) takes a user's expression as it takes `square`.
//!
//! One workload type serves every expression: its parameters hold the bound [`Program`], the length `n`, each
//! input's range and each scalar's value, and its ladder is a ladder of `n`. The check recomputes the bounded
//! reference from the input rather than comparing with a plain `f32` result, so that every value is held to its own
//! bound.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Workload};

use super::reference::{Bounded, Outputs, Reference, check};
use super::{Func, Node, Program};

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
                Node::Call(Func::Fma, _) => cost.flops += 2,
                Node::Call(func, _) if func.is_special() => cost.special += 1,
                Node::Call(..) => cost.flops += 1,
                _ => {}
            }
        }
        if self.reduction.is_some() {
            cost.flops += 1; // combining the term into the reduction
        }
        cost
    }

    /// The arrays one run reads and writes: each input once, each output once (a reduction writes one value).
    pub fn arrays(&self) -> (usize, usize) {
        let written = self.outputs.iter().filter(|o| self.overwrites(o).is_none()).count();
        (self.inputs.len(), written)
    }
}

/// The parameters of an expression workload: the program, the length, the inputs' ranges and the scalars' values.
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
}

impl ExprParams {
    /// `program` at length `n`, its inputs drawn from `[-1, 1)`, with these scalar values.
    pub fn new(program: Arc<Program>, n: usize, scalars: Vec<f32>) -> ExprParams {
        let ranges = vec![(-1.0, 1.0); program.inputs.len()];
        ExprParams { program, n, ranges, scalars }
    }

    /// The same expression at length `n`.
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

/// An expression's input: its parameters and one array per input.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprInput {
    /// The parameters it was made with.
    pub params: ExprParams,
    /// One array per [`Program::inputs`], each of `params.n` elements.
    pub arrays: Vec<Vec<f32>>,
}

impl ExprInput {
    /// The arrays as slices, for [`Program::reference`] and the backends.
    pub fn slices(&self) -> Vec<&[f32]> {
        self.arrays.iter().map(Vec::as_slice).collect()
    }
}

/// The workload of a user's expression ([`crate::expr`]).
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

    fn params(input: &ExprInput) -> ExprParams {
        input.params.clone()
    }

    fn validate(input: &ExprInput) -> Result<()> {
        let p = &input.params;
        if p.scalars.len() != p.program.scalars.len() || p.ranges.len() != p.program.inputs.len() {
            return Err(Error::invalid("the expression's parameters do not match its program"));
        }
        p.program.length(&input.slices(), &p.scalars).and_then(|n| {
            if n == p.n { Ok(()) } else { Err(Error::invalid(format!("the arrays hold {n} elements, not {}", p.n))) }
        })
    }

    fn generate(params: &ExprParams, seed: u64) -> Result<ExprInput> {
        crate::memory::check_host_memory::<Self>(params)?;
        if params.ranges.len() != params.program.inputs.len() {
            return Err(Error::invalid("one range per input array is needed"));
        }
        let arrays = params
            .ranges
            .iter()
            .enumerate()
            .map(|(k, &(low, high))| rng::uniform_f32(seed, k as u64, params.n, low, high))
            .collect();
        Ok(ExprInput { params: params.clone(), arrays })
    }

    fn reference(input: &ExprInput) -> Result<Outputs> {
        Self::validate(input)?;
        let bounded = input.params.program.reference(&input.slices(), &input.params.scalars)?;
        let value = |b: &Bounded| b.value as f32;
        Ok(match bounded {
            Reference::Elementwise(outputs) => {
                Outputs::Elementwise(outputs.iter().map(|o| o.iter().map(value).collect()).collect())
            }
            Reference::Reduction(b) => Outputs::Reduction(value(&b)),
        })
    }

    fn check(input: &ExprInput, _: &Outputs, actual: &Outputs, _: Precision) -> std::result::Result<(), Mismatch> {
        let program = &input.params.program;
        let reference = program
            .reference(&input.slices(), &input.params.scalars)
            .map_err(|e| Mismatch::new(format!("the reference could not be computed: {e}")))?;
        check(program, &reference, actual)
    }

    fn host_bytes(params: &ExprParams) -> Option<u64> {
        let (read, written) = params.program.arrays();
        (params.n as u64).checked_mul(4 * (read + written) as u64)
    }

    fn cost(params: &ExprParams) -> Cost {
        let n = params.n as u64;
        let (read, written) = params.program.arrays();
        let written_bytes = if params.program.reduction.is_some() { 4 } else { 4 * written as u64 * n };
        let per = params.program.cost_per_element();
        Cost { bytes: 4 * read as u64 * n + written_bytes, flops: per.flops * n, elements: n }
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
    fn an_expression_is_generated_checked_and_refused_like_a_workload() {
        let p = params("y = a * x + b", &["a", "b"], vec![2.0, 1.0], 1000);
        let input = Expression::generate(&p, 3).unwrap();
        let expected = Expression::reference(&input).unwrap();
        assert!(Expression::check(&input, &expected, &expected, Precision::Full).is_ok());
        let Outputs::Elementwise(mut wrong) = expected.clone() else { panic!() };
        wrong[0][17] += 0.01;
        let err = Expression::check(&input, &expected, &Outputs::Elementwise(wrong), Precision::Full).unwrap_err();
        assert!(err.message.contains("y[17]"), "{err}");
        let mut short = input.clone();
        short.arrays[0].pop();
        assert!(Expression::validate(&short).is_err());
        assert_eq!(expression_ladder(&p, true).iter().map(|p| p.n).collect::<Vec<_>>(), [1024, 16384, 262144, 4194304]);
    }
}
