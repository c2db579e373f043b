//! Expressions on the CPU: numexpr's idea, a block evaluator, with no compiler needed at run time.
//!
//! The arrays are cut into blocks of [`BLOCK`] elements that stay in the L1 and L2 caches; rayon spreads the blocks
//! over the cores, and in each block every node of the program's graph is one tight loop over the block (`+`, `*`,
//! `min`, comparisons, `where` ...), which the compiler vectorises for the backend's SIMD level: the block evaluation
//! is a [`simd_kernel!`](crate::simd_kernel), compiled once per instruction set. Special functions are the standard
//! library's, one element at a time. A reduction fuses its map into the blocks: each block's terms are combined in
//! `f32` with eight accumulators, and the blocks' partial results in a tree.
//!
//! `scalar` is the core's plain interpreter ([`gpuworthy_core::expr::Program::interpret`]), one element at a time on
//! one thread: the baseline.

use gpuworthy_core::expr::{Arith, Compare, ExprInput, Expression, Func, Logic, Node, Outputs, Program, Reduce};
use gpuworthy_core::expr::{pow_f32, sign_f32};
use gpuworthy_core::{Error, Implements, Result};
use rayon::prelude::*;

use crate::CpuBackend;
use crate::simd::{Supported, simd_kernel};

/// Elements per block: small enough that every temporary of a typical expression stays in cache.
pub const BLOCK: usize = 1024;

/// The program's values for one block: one row of [`BLOCK`] per node.
struct Scratch {
    rows: Vec<f32>,
}

impl Scratch {
    fn new(nodes: usize) -> Scratch {
        Scratch { rows: vec![0.0; nodes * BLOCK] }
    }
}

/// Which nodes to evaluate per block (those not in a reduction's post-map), and which once, after the reduction.
fn per_element_nodes(program: &Program) -> Vec<bool> {
    let mut after = vec![false; program.nodes.len()];
    for (id, node) in program.nodes.iter().enumerate() {
        after[id] = match node {
            Node::Reduced => true,
            Node::Neg(a) | Node::Not(a) => after[*a],
            Node::Arith(_, a, b) | Node::Compare(_, a, b) | Node::Logic(_, a, b) => after[*a] || after[*b],
            Node::Call(_, args) => args.iter().any(|a| after[*a]),
            _ => false,
        };
    }
    after.iter().map(|a| !a).collect()
}

fn truth(v: f32) -> bool {
    v != 0.0
}

fn boolean(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

simd_kernel! {
    /// Evaluates the nodes of `program` marked in `evaluate` over one block of `len` elements starting at `start`,
    /// each node's values in its row of `rows`; `reduced` is the reduction's value, for a post-map.
    fn evaluate_block<S>(
        s,
        program: &Program,
        evaluate: &[bool],
        inputs: &[&[f32]],
        scalars: &[f32],
        start: usize,
        len: usize,
        reduced: f32,
        rows: &mut [f32],
    ) {
        let _ = s;
        for (id, node) in program.nodes.iter().enumerate() {
            if !evaluate[id] {
                continue;
            }
            let (done, rest) = rows.split_at_mut(id * BLOCK);
            let out = &mut rest[..len];
            let row = |k: usize| &done[k * BLOCK..k * BLOCK + len];
            match node {
                Node::Const(c) => out.fill(*c),
                Node::Scalar(k) => out.fill(scalars[*k]),
                Node::Reduced => out.fill(reduced),
                Node::Operand(_) => out.fill(f32::NAN),
                Node::Input(k) => out.copy_from_slice(&inputs[*k][start..start + len]),
                Node::Neg(a) => out.iter_mut().zip(row(*a)).for_each(|(o, x)| *o = -x),
                Node::Not(a) => out.iter_mut().zip(row(*a)).for_each(|(o, x)| *o = boolean(!truth(*x))),
                Node::Arith(op, a, b) => {
                    let (x, y) = (row(*a), row(*b));
                    match op {
                        Arith::Add => out.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = x + y),
                        Arith::Sub => out.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = x - y),
                        Arith::Mul => out.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = x * y),
                        Arith::Div => out.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = x / y),
                    }
                }
                Node::Compare(op, a, b) => {
                    let (x, y) = (row(*a), row(*b));
                    let test: fn(f32, f32) -> bool = match op {
                        Compare::Lt => |x, y| x < y,
                        Compare::Le => |x, y| x <= y,
                        Compare::Gt => |x, y| x > y,
                        Compare::Ge => |x, y| x >= y,
                        Compare::Eq => |x, y| x == y,
                        Compare::Ne => |x, y| x != y,
                    };
                    out.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = boolean(test(*x, *y)));
                }
                Node::Logic(op, a, b) => {
                    let (x, y) = (row(*a), row(*b));
                    match op {
                        Logic::And => out.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = boolean(truth(*x) && truth(*y))),
                        Logic::Or => out.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = boolean(truth(*x) || truth(*y))),
                    }
                }
                Node::Call(func, args) => {
                    let a = row(args[0]);
                    let b = || row(args[1]);
                    let c = || row(args[2]);
                    let unary = |out: &mut [f32], f: fn(f32) -> f32| out.iter_mut().zip(a).for_each(|(o, x)| *o = f(*x));
                    match func {
                        Func::Abs => unary(out, f32::abs),
                        Func::Sqrt => unary(out, f32::sqrt),
                        Func::Exp => unary(out, f32::exp),
                        Func::Exp2 => unary(out, f32::exp2),
                        Func::Log => unary(out, f32::ln),
                        Func::Log2 => unary(out, f32::log2),
                        Func::Sin => unary(out, f32::sin),
                        Func::Cos => unary(out, f32::cos),
                        Func::Tan => unary(out, f32::tan),
                        Func::Tanh => unary(out, f32::tanh),
                        Func::Asin => unary(out, f32::asin),
                        Func::Acos => unary(out, f32::acos),
                        Func::Atan => unary(out, f32::atan),
                        Func::Floor => unary(out, f32::floor),
                        Func::Ceil => unary(out, f32::ceil),
                        Func::Round => unary(out, f32::round_ties_even),
                        Func::Trunc => unary(out, f32::trunc),
                        Func::Sign => unary(out, sign_f32),
                        Func::Min => out.iter_mut().zip(a.iter().zip(b())).for_each(|(o, (x, y))| *o = x.min(*y)),
                        Func::Max => out.iter_mut().zip(a.iter().zip(b())).for_each(|(o, (x, y))| *o = x.max(*y)),
                        Func::Pow => out.iter_mut().zip(a.iter().zip(b())).for_each(|(o, (x, y))| *o = pow_f32(*x, *y)),
                        Func::Atan2 => out.iter_mut().zip(a.iter().zip(b())).for_each(|(o, (x, y))| *o = x.atan2(*y)),
                        Func::Clamp => {
                            let (lo, hi) = (b(), c());
                            for (i, o) in out.iter_mut().enumerate() {
                                *o = a[i].max(lo[i]).min(hi[i]);
                            }
                        }
                        Func::Fma => {
                            let (y, z) = (b(), c());
                            for (i, o) in out.iter_mut().enumerate() {
                                *o = a[i].mul_add(y[i], z[i]);
                            }
                        }
                        Func::Where => {
                            let (y, z) = (b(), c());
                            for (i, o) in out.iter_mut().enumerate() {
                                *o = if truth(a[i]) { y[i] } else { z[i] };
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Combines a block's terms: eight accumulators in `f32` for a sum or a product; a NaN term makes a min or max NaN.
fn combine(kind: Reduce, terms: &[f32]) -> f32 {
    let join = |a: f32, b: f32| match kind {
        Reduce::Sum => a + b,
        Reduce::Prod => a * b,
        Reduce::Min | Reduce::Max if a.is_nan() || b.is_nan() => f32::NAN,
        Reduce::Min => a.min(b),
        Reduce::Max => a.max(b),
    };
    let mut acc = [kind.identity(); 8];
    let mut chunks = terms.chunks_exact(8);
    for chunk in &mut chunks {
        for (a, t) in acc.iter_mut().zip(chunk) {
            *a = join(*a, *t);
        }
    }
    let tail = chunks.remainder().iter().fold(kind.identity(), |a, t| join(a, *t));
    join(join(join(acc[0], acc[1]), join(acc[2], acc[3])), join(join(join(acc[4], acc[5]), join(acc[6], acc[7])), tail))
}

/// Runs `program` on `inputs` block by block over the backend's thread pool.
fn run_blocks(level: Supported, program: &Program, inputs: &[&[f32]], scalars: &[f32]) -> Result<Outputs> {
    let n = program.length(inputs, scalars)?;
    let evaluate = per_element_nodes(program);
    let blocks = n.div_ceil(BLOCK);
    match &program.reduction {
        None => {
            let mut outputs: Vec<Vec<f32>> = program.outputs.iter().map(|_| vec![0.0; n]).collect();
            // Each block writes its part of every output; the parts are disjoint, so the blocks run in parallel.
            let mut parts: Vec<Vec<&mut [f32]>> = (0..blocks).map(|_| Vec::new()).collect();
            for output in &mut outputs {
                for (part, chunk) in parts.iter_mut().zip(output.chunks_mut(BLOCK)) {
                    part.push(chunk);
                }
            }
            parts.into_par_iter().enumerate().for_each_init(
                || Scratch::new(program.nodes.len()),
                |scratch, (block, mut part)| {
                    let start = block * BLOCK;
                    let len = BLOCK.min(n - start);
                    evaluate_block(level, program, &evaluate, inputs, scalars, start, len, 0.0, &mut scratch.rows);
                    for (chunk, output) in part.iter_mut().zip(&program.outputs) {
                        chunk.copy_from_slice(&scratch.rows[output.node * BLOCK..output.node * BLOCK + len]);
                    }
                },
            );
            Ok(Outputs::Elementwise(outputs))
        }
        Some(reduction) => {
            let kind = reduction.kind;
            let partials: Vec<f32> = (0..blocks)
                .into_par_iter()
                .map_init(
                    || Scratch::new(program.nodes.len()),
                    |scratch, block| {
                        let start = block * BLOCK;
                        let len = BLOCK.min(n - start);
                        evaluate_block(level, program, &evaluate, inputs, scalars, start, len, 0.0, &mut scratch.rows);
                        combine(kind, &scratch.rows[reduction.body * BLOCK..reduction.body * BLOCK + len])
                    },
                )
                .collect();
            let total = combine(kind, &partials);
            // The post-map, once, on a block of one element holding the reduction's value.
            let post = program.reached(&[reduction.post]);
            let mut scratch = Scratch::new(program.nodes.len());
            evaluate_block(level, program, &post, &[], scalars, 0, 1, total, &mut scratch.rows);
            Ok(Outputs::Reduction(scratch.rows[reduction.post * BLOCK]))
        }
    }
}

impl Implements<Expression> for CpuBackend {
    type Resident = (ExprInput, Option<Outputs>);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "blocks"]
    }

    /// `blocks` but for inputs of a block or less, where spreading over threads costs more than it saves.
    fn best_variant(&self, params: &gpuworthy_core::expr::ExprParams) -> &'static str {
        if params.n <= BLOCK { "scalar" } else { "blocks" }
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        if Implements::<Expression>::variants(self).contains(&variant) {
            Ok(())
        } else {
            Err(Implements::<Expression>::unknown_variant(self, variant))
        }
    }

    fn upload(&self, input: &ExprInput) -> Result<Self::Resident> {
        <Expression as gpuworthy_core::Workload>::validate(input)?;
        Ok((input.clone(), None))
    }

    fn launch(&self, variant: &str, (input, output): &mut Self::Resident) -> Result<()> {
        let program = &input.params.program;
        let inputs = input.slices();
        *output = Some(match variant {
            "scalar" => program.interpret(&inputs, &input.params.scalars)?,
            "blocks" => self.install(|| run_blocks(self.simd(), program, &inputs, &input.params.scalars))?,
            other => return Err(Implements::<Expression>::unknown_variant(self, other)),
        });
        Ok(())
    }

    fn download(&self, (_, output): &mut Self::Resident) -> Result<Outputs> {
        output.clone().ok_or_else(|| Error::invalid("nothing was launched on this expression's data"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::Workload;
    use gpuworthy_core::expr::{CONFORMANCE_LENGTHS, Expr, ExprParams};
    use std::sync::Arc;

    #[test]
    fn every_variant_matches_the_reference_at_every_conformance_length() {
        let cpu = CpuBackend::new().unwrap();
        for (source, scalars, values) in [
            ("y = a * x + b", &["a", "b"][..], vec![2.0, 1.0]),
            ("y = exp(-x * x) * sin(3 * x)", &[][..], vec![]),
            ("let t = x - m; y = where(t > 0, t * t, -t) / (s * s); z = fma(x, y, 1)", &["m", "s"][..], vec![0.1, 0.7]),
            ("s = sum(x * y)", &[][..], vec![]),
            ("r = sqrt(sum(x * x)) / 2", &[][..], vec![]),
            ("p = prod(1 + x / 100)", &[][..], vec![]),
            ("m = max(x - y)", &[][..], vec![]),
            ("y = a * x + y", &["a"][..], vec![3.0]),
        ] {
            let program = Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap());
            for n in CONFORMANCE_LENGTHS.into_iter().chain([BLOCK * 3 + 17]) {
                let params = ExprParams::new(Arc::clone(&program), n, values.clone());
                let input = Expression::generate(&params, 5).unwrap();
                let expected = Expression::reference(&input).unwrap();
                for variant in Implements::<Expression>::variants(&cpu) {
                    let output = Implements::<Expression>::run(&cpu, variant, &input).unwrap();
                    Expression::check(&input, &expected, &output, gpuworthy_core::Precision::Full)
                        .unwrap_or_else(|e| panic!("{source} at {n} with {variant}: {e}"));
                }
            }
        }
    }
}
