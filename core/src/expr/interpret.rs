//! A plain `f32` interpreter of a program, one element at a time: the semantics of EXPRESSIONS.md written as directly
//! as Rust allows, for the tests of the check (a mutant's result must fail it) and as the baseline every generated
//! kernel is compared with. Backends compile programs; this walks the graph.

use crate::error::Result;

use super::reference::{Outputs, SUM_SEQUENTIAL_TERMS};
use super::{Arith, Compare, Func, Logic, Node, Program};

/// [`SUM_SEQUENTIAL_TERMS`] as a count.
const SEQUENTIAL_TERMS: usize = SUM_SEQUENTIAL_TERMS as usize;

/// A node's `f32` value: a number, or a boolean as 0 or 1.
fn truth(v: f32) -> bool {
    v != 0.0
}

fn boolean(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

fn call(func: Func, a: &[f32]) -> f32 {
    (func.spec().scalar)(a)
}

impl Program {
    /// The program a device group's member runs for its part of a reduction: the same terms and reduction, without
    /// the post-map, so that the members' partial values can be combined ([`Reduce::combine`](super::Reduce)) before
    /// [`Program::finish_reduction`] applies the post-map once. An elementwise program is its own partial.
    ///
    /// ```
    /// use gpuworthy_core::expr::{Expr, Outputs};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let norm = Expr::parse("r = sqrt(sum(x * x))")?.bind(&[])?;
    /// let partial = norm.partial();
    /// assert_eq!(partial.interpret(&[&[3.0, 4.0]], &[])?, Outputs::Reduction(25.0));
    /// assert_eq!(norm.finish_reduction(25.0, &[]), 5.0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn partial(&self) -> Program {
        let mut partial = self.clone();
        if let Some(reduction) = &mut partial.reduction {
            reduction.post = match partial.nodes.iter().position(|n| matches!(n, Node::Reduced)) {
                Some(reduced) => reduced,
                None => {
                    partial.nodes.push(Node::Reduced);
                    partial.types.push(super::Type::Number);
                    partial.nodes.len() - 1
                }
            };
        }
        partial
    }

    /// A reduction's output from its reduced value: the post-map (`sqrt` in `sqrt(sum(x * x))`), which reads only
    /// the reduced value, scalars and numbers. `reduced` itself for an elementwise program.
    pub fn finish_reduction(&self, reduced: f32, scalars: &[f32]) -> f32 {
        let Some(reduction) = &self.reduction else { return reduced };
        let mut values = vec![0f32; self.nodes.len()];
        self.evaluate_nodes(&mut values, &[], scalars, 0, reduced);
        values[reduction.post]
    }

    /// Every node's value at element `i` into `values` (one per node), in `f32`; `reduced` is a reduction's value
    /// for its post-map.
    fn evaluate_nodes(&self, values: &mut [f32], inputs: &[&[f32]], scalars: &[f32], i: usize, reduced: f32) {
        for (id, node) in self.nodes.iter().enumerate() {
            let v = |k: usize| values[k];
            values[id] = match node {
                Node::Const(c) => *c,
                Node::Input(k) => inputs.get(*k).and_then(|x| x.get(i)).copied().unwrap_or(f32::NAN),
                Node::Scalar(k) => scalars[*k],
                Node::Operand(_) => f32::NAN,
                Node::Reduced => reduced,
                Node::Neg(a) => -v(*a),
                Node::Not(a) => boolean(!truth(v(*a))),
                Node::Arith(op, a, b) => match op {
                    Arith::Add => v(*a) + v(*b),
                    Arith::Sub => v(*a) - v(*b),
                    Arith::Mul => v(*a) * v(*b),
                    Arith::Div => v(*a) / v(*b),
                },
                Node::Compare(op, a, b) => boolean(match op {
                    Compare::Lt => v(*a) < v(*b),
                    Compare::Le => v(*a) <= v(*b),
                    Compare::Gt => v(*a) > v(*b),
                    Compare::Ge => v(*a) >= v(*b),
                    Compare::Eq => v(*a) == v(*b),
                    Compare::Ne => v(*a) != v(*b),
                }),
                Node::Logic(op, a, b) => boolean(match op {
                    Logic::And => truth(v(*a)) && truth(v(*b)),
                    Logic::Or => truth(v(*a)) || truth(v(*b)),
                }),
                Node::Call(func, args) => {
                    let args: Vec<f32> = args.iter().map(|k| v(*k)).collect();
                    call(*func, &args)
                }
            };
        }
    }

    /// The first function that gives NaN at every one of these elements although none of its arguments is NaN
    /// (`log` of inputs drawn from [-1, 0), `sqrt` of negatives, `acos` beyond 1): the function an input's range
    /// puts outside its domain everywhere, which makes the measurement one of NaNs. `None` when there is no such
    /// function, or no element.
    ///
    /// ```
    /// use gpuworthy_core::expr::{Expr, Func};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let program = Expr::parse("y = log(x - 2) + sqrt(x)")?.bind(&[])?;
    /// assert_eq!(program.nan_everywhere(&[&[0.5, 1.0]], &[])?, Some(Func::Log));
    /// assert_eq!(program.nan_everywhere(&[&[3.0, 4.0]], &[])?, None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn nan_everywhere(&self, inputs: &[&[f32]], scalars: &[f32]) -> Result<Option<Func>> {
        let n = self.length(inputs, scalars)?;
        if n == 0 {
            return Ok(None);
        }
        let calls: Vec<(usize, Func, &[usize])> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(id, node)| match node {
                Node::Call(func, args) => Some((id, *func, args.as_slice())),
                _ => None,
            })
            .collect();
        let mut always = vec![true; calls.len()];
        let mut values = vec![0f32; self.nodes.len()];
        for i in 0..n {
            self.evaluate_nodes(&mut values, inputs, scalars, i, 0.0);
            for (flag, (id, _, args)) in always.iter_mut().zip(&calls) {
                *flag &= values[*id].is_nan() && args.iter().all(|a| !values[*a].is_nan());
            }
        }
        Ok(calls.iter().zip(&always).find(|(_, always)| **always).map(|((_, func, _), _)| *func))
    }

    /// Runs the program in `f32`, element by element (a reduction in runs of [`SUM_SEQUENTIAL_TERMS`] terms in element
    /// order, the runs' totals combined in a tree).
    ///
    /// ```
    /// use gpuworthy_core::expr::{Expr, Outputs};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let relu = Expr::parse("y = where(x > 0, x, 0.5 * x)")?.bind(&[])?;
    /// assert_eq!(relu.interpret(&[&[2.0, -2.0]], &[])?, Outputs::Elementwise(vec![vec![2.0, -1.0]]));
    /// let norm = Expr::parse("r = sqrt(sum(x * x))")?.bind(&[])?;
    /// assert_eq!(norm.interpret(&[&[3.0, 4.0]], &[])?, Outputs::Reduction(5.0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn interpret(&self, inputs: &[&[f32]], scalars: &[f32]) -> Result<Outputs> {
        let n = self.length(inputs, scalars)?;
        let mut values = vec![0f32; self.nodes.len()];
        let run =
            |values: &mut Vec<f32>, i: usize, reduced: f32| self.evaluate_nodes(values, inputs, scalars, i, reduced);
        match &self.reduction {
            None => {
                let mut outputs = vec![Vec::with_capacity(n); self.outputs.len()];
                for i in 0..n {
                    run(&mut values, i, 0.0);
                    for (out, output) in outputs.iter_mut().zip(&self.outputs) {
                        out.push(values[output.node]);
                    }
                }
                Ok(Outputs::Elementwise(outputs))
            }
            Some(reduction) => {
                let kind = reduction.kind;
                let join = |total: f32, term: f32| kind.combine(total, term);
                // Runs of SUM_SEQUENTIAL_TERMS terms in element order, their totals combined in a tree: the order of
                // every backend, and the one the reference's bound allows. One long run drifts: 2^22 terms near 1/3
                // summed one after another came out 0.3% low, seven times the bound.
                let mut totals = Vec::with_capacity(n.div_ceil(SEQUENTIAL_TERMS));
                for run_start in (0..n).step_by(SEQUENTIAL_TERMS) {
                    let mut total = kind.identity();
                    for i in run_start..(run_start + SEQUENTIAL_TERMS).min(n) {
                        run(&mut values, i, 0.0);
                        total = join(total, values[reduction.body]);
                    }
                    totals.push(total);
                }
                while totals.len() > 1 {
                    totals =
                        totals.chunks(2).map(|pair| if let [a, b] = pair { join(*a, *b) } else { pair[0] }).collect();
                }
                let total = totals.first().copied().unwrap_or_else(|| kind.identity());
                run(&mut values, 0, total);
                Ok(Outputs::Reduction(values[reduction.post]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::expr::{Expr, Func};

    #[test]
    fn a_function_outside_its_domain_everywhere_is_named() {
        let program = Expr::parse("y = log(x) + sqrt(z)").unwrap().bind(&[]).unwrap();
        let (negative, positive) = ([-1.0f32, -0.5, -0.25], [1.0f32, 2.0, 3.0]);
        let order = |x: &[f32], z: &[f32]| -> Vec<Vec<f32>> {
            program.inputs.iter().map(|name| if name == "x" { x.to_vec() } else { z.to_vec() }).collect()
        };
        let check = |x: &[f32], z: &[f32]| {
            let arrays = order(x, z);
            let slices: Vec<&[f32]> = arrays.iter().map(Vec::as_slice).collect();
            program.nan_everywhere(&slices, &[]).unwrap()
        };
        assert_eq!(check(&negative, &positive), Some(Func::Log));
        assert_eq!(check(&positive, &negative), Some(Func::Sqrt));
        assert_eq!(check(&positive, &positive), None);
        // NaN at some elements only is the user's business, not a range's mistake.
        assert_eq!(check(&[-1.0, 2.0, 3.0], &positive), None);
    }

    #[test]
    fn a_long_sum_stays_within_the_references_bound() {
        // 2^22 terms near 1/3: added one after another in f32, the total drifts past the bound the reference allows
        // any backend (runs of at most SUM_SEQUENTIAL_TERMS terms, combined in a tree).
        let n: usize = 1 << 22;
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 2000) as f32 / 1000.0 - 1.0).collect();
        for source in ["s = sum(x * x)", "s = sqrt(sum(x * x))", "p = prod(1 + x / 1e6)"] {
            let program = Expr::parse(source).unwrap().bind(&[]).unwrap();
            let expected = program.reference(&[&x], &[]).unwrap();
            let got = program.interpret(&[&x], &[]).unwrap();
            crate::expr::check(&program, &expected, &got).unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }
}
