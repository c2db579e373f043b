//! Expressions on the CPU: numexpr's idea, a block evaluator, with no compiler needed at run time.
//!
//! The arrays are cut into blocks of [`BLOCK`] elements that stay in the L1 and L2 caches; rayon spreads the blocks
//! over the cores in tasks sized by what the program's elements cost (`task_blocks`), and in each block every node of
//! the program's graph is one tight loop over the block (`+`, `*`, `min`, comparisons, `where` ...), which the compiler
//! vectorises for the backend's SIMD level: the block evaluation is a [`simd_kernel!`](crate::simd_kernel), compiled
//! once per instruction set. `exp`, `exp2`, `log`, `sin`, `cos`, `tanh`, `atan`, `expm1`, `sinh`, `cosh` and `erf`
//! are the branch-free forms of [`crate::vector_math`], which vectorise with the rest; the other special functions are
//! the function table's `f32` forms ([`gpuworthy_core::expr::FuncSpec::scalar`]: the standard library's), one element
//! at a time. A reduction fuses its map into the blocks: each block's terms are combined in `f32` with eight
//! accumulators, and the blocks' partial results in a tree. While a block is computed, the inputs of the block
//! [`PREFETCH_AHEAD`] ahead are asked for, so that memory stays busy during the passes that run in cache.
//!
//! Arrays of 16-bit elements ([`gpuworthy_core::Dtype`]) are widened to `f32` a block at a time, into a row of the
//! task's own, and each output block is rounded as it is written: every pass still reads `f32` in cache.
//!
//! Resident data keeps its output arrays from one launch to the next, so that a launch writes into memory that is
//! already mapped instead of allocating (and faulting in) hundreds of MiB each time; a whole run evaluates straight
//! from the caller's arrays, with no copy of them.
//!
//! `scalar` is the core's plain interpreter ([`gpuworthy_core::expr::Program::interpret`]), one element at a time on
//! one thread: the baseline.

use std::ops::Range;

use gpuworthy_core::Dtype;
use gpuworthy_core::expr::limits::MAX_ARRAYS;
use gpuworthy_core::expr::sign_f32;
use gpuworthy_core::expr::{
    Arith, ArrayView, Compare, ExprInput, Expression, Func, HostArray, Logic, Node, Outputs, Program, Reduce, as_slices,
};
use gpuworthy_core::{Error, Implements, PartOutput, Result};
use rayon::prelude::*;

use crate::kernels::{stream_copy, stream_fence};
use crate::simd::{Supported, simd_kernel};
use crate::{CpuBackend, vector_math};

/// Elements per block: small enough that every temporary of a typical expression stays in cache.
pub const BLOCK: usize = 1024;

/// Blocks per parallel task for a cheap program: enough that handing out tasks costs nothing next to them, few
/// enough that every core gets many. A program whose elements cost more gets shorter tasks (`task_blocks`).
pub const TASK_BLOCKS: usize = 16;

/// The least work worth a task of its own, in blocks times passes of a plain operation ([`pass_weight`]): one block
/// of a program that calls a function of the standard library. A cheap program stays whole below it, since a few
/// blocks split over threads take longer than on one; a costly one spreads a block a task. A larger least work left
/// such a program in a few long tasks, slower than the calibration, whose probes had spread over every core,
/// predicted (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
const WORK_PER_TASK: usize = 100;

/// What one node costs per element, in passes of a plain operation (`+`, `*`, a comparison): the vectorised functions
/// about three (`tanh`, `log` and `atan`, with a division or a longer polynomial, four), those of the standard
/// library, one element at a time, about a hundred (measured on the 2-core machine:
/// docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
fn pass_weight(node: &Node) -> usize {
    match node {
        Node::Call(Func::Exp | Func::Exp2 | Func::Sin | Func::Cos | Func::Sqrt, _) => 3,
        Node::Call(Func::Tanh | Func::Log | Func::Atan | Func::Expm1 | Func::Erf, _) => 4,
        // Three exponentials each, one chosen.
        Node::Call(Func::Sinh | Func::Cosh, _) => 9,
        Node::Call(func, _) if func.is_special() => 100,
        Node::Call(..) | Node::Neg(_) | Node::Not(_) | Node::Arith(..) | Node::Compare(..) | Node::Logic(..) => 1,
        Node::Const(_) | Node::Scalar(_) | Node::Reduced | Node::Operand(_) | Node::Input(_) => 0,
    }
}

/// Blocks per parallel task for `program` over `blocks` blocks: as many equal tasks as hold [`WORK_PER_TASK`] each
/// (at most four a thread, since each costs its scheduling and its share of the bookkeeping), and no task longer
/// than [`TASK_BLOCKS`]. A cheap program keeps tasks of [`TASK_BLOCKS`]; one of costly elements spreads over the
/// cores from a few blocks on, where tasks of [`TASK_BLOCKS`] would leave it on one thread (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
fn task_blocks(program: &Program, evaluate: &[bool], blocks: usize) -> usize {
    let per_block: usize = program.nodes.iter().zip(evaluate).filter(|(_, e)| **e).map(|(n, _)| pass_weight(n)).sum();
    let tasks = (blocks.saturating_mul(per_block) / WORK_PER_TASK).clamp(1, 4 * rayon::current_num_threads());
    blocks.div_ceil(tasks).clamp(1, TASK_BLOCKS)
}

/// Where one node's values for a block are.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    /// In the node's own row of the scratch.
    Row,
    /// In input `k`'s array, at the block's elements: read in place, never copied.
    Input(usize),
    /// One value for every element (a constant, a scalar, or an operation of such): computed once, never spread.
    Uniform(f32),
}

/// The program's values for one block: one row of [`BLOCK`] per node, and where each node's values are.
struct Scratch {
    rows: Vec<f32>,
    values: Vec<Value>,
}

impl Scratch {
    fn new(nodes: usize) -> Scratch {
        Scratch { rows: vec![0.0; nodes * BLOCK], values: vec![Value::Row; nodes] }
    }

    /// Node `id`'s `len` values in its row, copied or spread there if they were elsewhere: for an output or a
    /// reduction's body.
    fn row(&mut self, id: usize, inputs: &[&[f32]], start: usize, len: usize) -> &[f32] {
        let row = &mut self.rows[id * BLOCK..id * BLOCK + len];
        match self.values[id] {
            Value::Row => {}
            Value::Input(k) => row.copy_from_slice(&inputs[k][start..start + len]),
            Value::Uniform(u) => row.fill(u),
        }
        row
    }
}

/// An operand of an operation over a block: a run of values, or one value for all.
#[derive(Clone, Copy)]
enum Operand<'a> {
    Values(&'a [f32]),
    Uniform(f32),
}

/// A cheap operation of one array and at most one uniform value, computed inside the loop of the only node that reads
/// its result rather than in a pass of its own (see [`Fusions`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Prologue {
    /// `-v`.
    Neg,
    /// `v * u` (or `u * v`: the same value).
    Mul(f32),
    /// `v + u` (or `u + v`).
    Add(f32),
    /// `v - u`.
    Sub(f32),
    /// `u - v`.
    SubFrom(f32),
}

impl Prologue {
    /// The same operation with the uniform value `u` (a negation has none).
    fn with_uniform(self, u: f32) -> Prologue {
        match self {
            Prologue::Neg => Prologue::Neg,
            Prologue::Mul(_) => Prologue::Mul(u),
            Prologue::Add(_) => Prologue::Add(u),
            Prologue::Sub(_) => Prologue::Sub(u),
            Prologue::SubFrom(_) => Prologue::SubFrom(u),
        }
    }

    /// The operation on one value.
    #[inline(always)]
    fn apply(self, v: f32) -> f32 {
        match self {
            Prologue::Neg => -v,
            Prologue::Mul(u) => v * u,
            Prologue::Add(u) => v + u,
            Prologue::Sub(u) => v - u,
            Prologue::SubFrom(u) => u - v,
        }
    }
}

/// An operand of a node that can take its operand's operation into its own loop: a plain operand, or the array that
/// operation reads and the operation.
#[derive(Clone, Copy)]
enum Source<'a> {
    Plain(Operand<'a>),
    Fused(&'a [f32], Prologue),
}

/// `f(prologue(v))` for each `v` of `source` into `out`: one loop per kind of prologue, so that each vectorises with
/// `f`, which each loop calls itself (see [`map1`]): through `map1(out, source, |v| f(-v))`, `exp` ran 20 times
/// slower.
#[inline(always)]
fn map_prologue(out: &mut [f32], source: &[f32], prologue: Prologue, f: impl Fn(f32) -> f32) {
    macro_rules! each {
        (|$v:ident| $argument:expr) => {
            for (o, $v) in out.iter_mut().zip(source) {
                *o = f($argument);
            }
        };
    }
    match prologue {
        Prologue::Neg => each!(|v| -*v),
        Prologue::Mul(u) => each!(|v| *v * u),
        Prologue::Add(u) => each!(|v| *v + u),
        Prologue::Sub(u) => each!(|v| *v - u),
        Prologue::SubFrom(u) => each!(|v| u - *v),
    }
}

/// `f(prologue(v), w)` for `v` of `source` and `w` of `other` into `out` (with `swap`, `f(w, prologue(v))`): one loop
/// per kind of prologue and side, so that each vectorises with `f`.
#[inline(always)]
fn map2_prologue(
    out: &mut [f32],
    source: &[f32],
    prologue: Prologue,
    other: &[f32],
    swap: bool,
    f: impl Fn(f32, f32) -> f32,
) {
    macro_rules! sides {
        (|$v:ident| $op:expr) => {
            if swap { map2(out, source, other, |$v, w| f(w, $op)) } else { map2(out, source, other, |$v, w| f($op, w)) }
        };
    }
    match prologue {
        Prologue::Neg => sides!(|v| -v),
        Prologue::Mul(u) => sides!(|v| v * u),
        Prologue::Add(u) => sides!(|v| v + u),
        Prologue::Sub(u) => sides!(|v| v - u),
        Prologue::SubFrom(u) => sides!(|v| u - v),
    }
}

/// [`unary`] of a source that may carry its operand's operation.
#[inline(always)]
fn unary_source(out: &mut [f32], a: Source<'_>, f: impl Fn(f32) -> f32) -> Value {
    match a {
        Source::Plain(a) => unary(out, a, f),
        Source::Fused(values, prologue) => {
            map_prologue(out, values, prologue, f);
            Value::Row
        }
    }
}

/// [`binary`] of sources that may carry their operands' operations. [`Fusions`] fuses one operand of a binary node at
/// most: those forms have loops of their own; two (never planned) are still computed, the operations applied element
/// by element.
#[inline(always)]
fn binary_source(out: &mut [f32], a: Source<'_>, b: Source<'_>, f: impl Fn(f32, f32) -> f32) -> Value {
    use Operand::{Uniform, Values};
    match (a, b) {
        (Source::Plain(x), Source::Plain(y)) => binary(out, x, y, f),
        (Source::Fused(v, p), Source::Plain(Uniform(y))) => {
            map_prologue(out, v, p, |x| f(x, y));
            Value::Row
        }
        (Source::Plain(Uniform(x)), Source::Fused(v, p)) => {
            map_prologue(out, v, p, |y| f(x, y));
            Value::Row
        }
        (Source::Fused(v, p), Source::Plain(Values(y))) => {
            map2_prologue(out, v, p, y, false, f);
            Value::Row
        }
        (Source::Plain(Values(x)), Source::Fused(v, p)) => {
            map2_prologue(out, v, p, x, true, f);
            Value::Row
        }
        (Source::Fused(v, p), Source::Fused(w, q)) => {
            map2(out, v, w, |x, y| f(p.apply(x), q.apply(y)));
            Value::Row
        }
    }
}

/// `f` of one operand into `out`, or one uniform value when the operand is uniform.
#[inline(always)]
fn unary(out: &mut [f32], a: Operand<'_>, f: impl Fn(f32) -> f32) -> Value {
    match a {
        Operand::Uniform(x) => Value::Uniform(f(x)),
        Operand::Values(x) => {
            map1(out, x, f);
            Value::Row
        }
    }
}

/// `f` of two operands into `out` (one loop per combination, so that each vectorises), or one uniform value.
#[inline(always)]
fn binary(out: &mut [f32], a: Operand<'_>, b: Operand<'_>, f: impl Fn(f32, f32) -> f32) -> Value {
    match (a, b) {
        (Operand::Uniform(x), Operand::Uniform(y)) => return Value::Uniform(f(x, y)),
        (Operand::Values(x), Operand::Values(y)) => map2(out, x, y, f),
        (Operand::Values(x), Operand::Uniform(y)) => map1(out, x, |x| f(x, y)),
        (Operand::Uniform(x), Operand::Values(y)) => map1(out, y, |y| f(x, y)),
    }
    Value::Row
}

/// `sin` or `cos` of one source: the vectorised form, then the standard library's for arguments beyond its reach
/// ([`vector_math::trig_map`], which notes those in the same loop).
#[inline(always)]
fn trigonometric(out: &mut [f32], a: Source<'_>, vectorised: impl Fn(f32) -> f32, exact: fn(f32) -> f32) -> Value {
    match a {
        Source::Plain(Operand::Uniform(x)) => return Value::Uniform(exact(x)),
        Source::Plain(Operand::Values(x)) => vector_math::trig_map(out, x, |x| x, vectorised, exact),
        Source::Fused(v, Prologue::Neg) => vector_math::trig_map(out, v, |v| -v, vectorised, exact),
        Source::Fused(v, Prologue::Mul(u)) => vector_math::trig_map(out, v, |v| v * u, vectorised, exact),
        Source::Fused(v, Prologue::Add(u)) => vector_math::trig_map(out, v, |v| v + u, vectorised, exact),
        Source::Fused(v, Prologue::Sub(u)) => vector_math::trig_map(out, v, |v| v - u, vectorised, exact),
        Source::Fused(v, Prologue::SubFrom(u)) => vector_math::trig_map(out, v, |v| u - v, vectorised, exact),
    }
    Value::Row
}

/// `f` of three operands into `out` (one loop per combination of rows and uniform values, so that each vectorises),
/// or one uniform value. One loop reading the operands through a `match` per element did not vectorise: `where(x > 0,
/// x, 0.01*x)` took 1.03 ms at 2^20 on one thread of the 2-core machine, five times a pass of `x + 1`.
#[inline(always)]
fn ternary(out: &mut [f32], a: Operand<'_>, b: Operand<'_>, c: Operand<'_>, f: impl Fn(f32, f32, f32) -> f32) -> Value {
    use Operand::{Uniform, Values};
    match (a, b, c) {
        (Uniform(x), Uniform(y), Uniform(z)) => return Value::Uniform(f(x, y, z)),
        (Values(x), Values(y), Values(z)) => map3(out, x, y, z, f),
        (Values(x), Values(y), Uniform(z)) => map2(out, x, y, |x, y| f(x, y, z)),
        (Values(x), Uniform(y), Values(z)) => map2(out, x, z, |x, z| f(x, y, z)),
        (Uniform(x), Values(y), Values(z)) => map2(out, y, z, |y, z| f(x, y, z)),
        (Values(x), Uniform(y), Uniform(z)) => map1(out, x, |x| f(x, y, z)),
        (Uniform(x), Values(y), Uniform(z)) => map1(out, y, |y| f(x, y, z)),
        (Uniform(x), Uniform(y), Values(z)) => map1(out, z, |z| f(x, y, z)),
    }
    Value::Row
}

/// Which nodes to evaluate per block (those not in a reduction's post-map), and which once, after the reduction.
fn per_element_nodes(program: &Program) -> Vec<bool> {
    program.depends_on_reduced().iter().map(|after| !after).collect()
}

/// How a cheap node is computed inside its reader's loop.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fusion {
    /// The array operand the operation reads (a row or an input, never uniform).
    source: usize,
    /// The uniform operand, for all but a negation.
    uniform: Option<usize>,
    /// Which operation: `Neg`, `Mul`, `Add`, `Sub` (`source - uniform`) or `SubFrom` (`uniform - source`); its
    /// uniform value is set per block ([`Prologue::with_uniform`]).
    kind: Prologue,
}

/// Which nodes the evaluator computes inside the loop of the node that reads them instead of in a pass of their own.
/// Each pass over a block loads and stores every value it touches (on the 2-core machine a pass of a plain operation
/// cost about a third of a vectorised special function): `exp(-x*x) * sin(3*x)` was eight passes (`-x`, `*x`, `exp`,
/// `3*x`, `sin`, the check of `sin`'s arguments, `*`, the copy out) where one fused loop does the work. Five of them
/// took only a little less time on the 16-core Xeon hosts, where the special functions' arithmetic is most of it
/// (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). Taken in: a negation, or `+`, `-`, `*` of
/// an array and a uniform value (a constant, a scalar, an operation of those), read by one node only, which is a
/// negation, a vectorised function of one argument, or `+`, `-`, `*`, `/` (one operand taken in at most); and only one
/// level deep (a node that takes one in is not itself taken in), so every loop is one of a few written forms, compiled
/// ahead of time: no code is generated at run time. `exp(-x*x) * sin(3*x)` (`-x` binds first) becomes `(-x)*x`, `exp`,
/// `sin(3*x)` and `*`; `a*x + b` one pass.
#[derive(Debug, Clone, PartialEq)]
struct Fusions {
    /// Per node, how it is computed in its reader's loop, if it is.
    fused: Vec<Option<Fusion>>,
}

impl Fusions {
    /// None: every node a pass of its own.
    fn none(nodes: usize) -> Fusions {
        Fusions { fused: vec![None; nodes] }
    }

    /// The fusions of `program`'s nodes marked in `evaluate`.
    fn plan(program: &Program, evaluate: &[bool]) -> Fusions {
        let nodes = &program.nodes;
        // Uniform: one value for every element (no input array below it), as the evaluator computes it.
        let mut uniform = vec![false; nodes.len()];
        for (id, node) in nodes.iter().enumerate() {
            uniform[id] = match node {
                Node::Input(_) => false,
                Node::Const(_) | Node::Scalar(_) | Node::Reduced | Node::Operand(_) => true,
                other => other.operands().iter().all(|k| uniform[*k]),
            };
        }
        let mut uses = vec![0usize; nodes.len()];
        for node in nodes {
            node.operands().iter().for_each(|k| uses[*k] += 1);
        }
        // Outputs and the reduction's rows are read from their rows: never computed inside another loop.
        program.outputs.iter().for_each(|o| uses[o.node] += 2);
        if let Some(r) = &program.reduction {
            uses[r.body] += 2;
            uses[r.post] += 2;
        }
        let mut plan = Fusions::none(nodes.len());
        // Nodes come after their operands, so a reader is planned after whatever it reads has been.
        for (id, node) in nodes.iter().enumerate() {
            if !evaluate[id] || uniform[id] {
                continue;
            }
            let takes_in: Vec<usize> = match node {
                Node::Neg(a) => vec![*a],
                Node::Call(func, args) if args.len() == 1 && takes_operation_in(*func) => vec![args[0]],
                Node::Arith(_, a, b) if uniform[*a] => vec![*b],
                Node::Arith(_, a, b) if uniform[*b] => vec![*a],
                Node::Arith(_, a, b) => vec![*a, *b],
                _ => Vec::new(),
            };
            for k in takes_in {
                let taken_in_already = node.operands().iter().any(|o| plan.fused[*o].is_some());
                if !evaluate[k] || uses[k] != 1 || taken_in_already {
                    continue;
                }
                let reads_fused = nodes[k].operands().iter().any(|o| plan.fused[*o].is_some());
                if reads_fused {
                    continue;
                }
                plan.fused[k] = match nodes[k] {
                    Node::Neg(a) if !uniform[a] => Some(Fusion { source: a, uniform: None, kind: Prologue::Neg }),
                    Node::Arith(op, a, b) if uniform[a] != uniform[b] => {
                        let (source, u) = if uniform[a] { (b, a) } else { (a, b) };
                        let kind = match (op, uniform[a]) {
                            (Arith::Mul, _) => Some(Prologue::Mul(0.0)),
                            (Arith::Add, _) => Some(Prologue::Add(0.0)),
                            (Arith::Sub, false) => Some(Prologue::Sub(0.0)),
                            (Arith::Sub, true) => Some(Prologue::SubFrom(0.0)),
                            (Arith::Div, _) => None,
                        };
                        kind.map(|kind| Fusion { source, uniform: Some(u), kind })
                    }
                    _ => None,
                };
            }
        }
        plan
    }

    /// Whether node `id` is computed inside its reader's loop (no pass of its own).
    fn inside(&self, id: usize) -> bool {
        self.fused[id].is_some()
    }
}

/// The functions of one argument whose loop takes a cheap operation of its argument in: the vectorised ones and the
/// single instructions (those of the standard library cost a call an element, next to which a pass is nothing).
fn takes_operation_in(func: Func) -> bool {
    use Func::*;
    matches!(func, Abs | Sqrt | Exp | Exp2 | Log | Sin | Cos | Tanh | Atan | Expm1 | Sinh | Cosh | Erf)
}

fn truth(v: f32) -> bool {
    v != 0.0
}

fn boolean(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

/// `out[i] = f(a[i])`, inlined so that the loop vectorises with `f`. The `map` functions are plain `for` loops that call
/// `f` themselves, with no closure of their own around it: such a closure holding a vectorised function (which is
/// always inlined) can grow past what the compiler inlines into a function as large as [`evaluate_block`], and then
/// runs one element at a time, compiled without the backend's instruction set (`exp(x)` took 20 times as long).
#[inline(always)]
fn map1(out: &mut [f32], a: &[f32], f: impl Fn(f32) -> f32) {
    for (o, x) in out.iter_mut().zip(a) {
        *o = f(*x);
    }
}

/// `out[i] = f(a[i], b[i])`, inlined so that the loop vectorises with `f`.
#[inline(always)]
fn map2(out: &mut [f32], a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
    for (o, (x, y)) in out.iter_mut().zip(a.iter().zip(b)) {
        *o = f(*x, *y);
    }
}

/// `out[i] = f(a[i], b[i], c[i])`, inlined so that the loop vectorises with `f`.
#[inline(always)]
fn map3(out: &mut [f32], a: &[f32], b: &[f32], c: &[f32], f: impl Fn(f32, f32, f32) -> f32) {
    for (o, ((x, y), z)) in out.iter_mut().zip(a.iter().zip(b).zip(c)) {
        *o = f(*x, *y, *z);
    }
}

simd_kernel! {
    /// Evaluates the nodes of `program` marked in `evaluate` over one block of `len` elements starting at `start`:
    /// each computed node's values in its row of `scratch`, inputs read where they are, uniform values computed
    /// once, the nodes `fusions` takes in computed in their reader's loop; `reduced` is the reduction's value, for a
    /// post-map.
    fn evaluate_block<S>(
        s,
        program: &Program,
        evaluate: &[bool],
        fusions: &Fusions,
        inputs: &[&[f32]],
        scalars: &[f32],
        start: usize,
        len: usize,
        reduced: f32,
        scratch: &mut Scratch,
    ) {
        let _ = s;
        let Scratch { rows, values } = scratch;
        for (id, node) in program.nodes.iter().enumerate() {
            if !evaluate[id] || fusions.inside(id) {
                continue;
            }
            let (done, rest) = rows.split_at_mut(id * BLOCK);
            let out = &mut rest[..len];
            let operand = |k: usize| match values[k] {
                Value::Row => Operand::Values(&done[k * BLOCK..k * BLOCK + len]),
                Value::Input(i) => Operand::Values(&inputs[i][start..start + len]),
                Value::Uniform(u) => Operand::Uniform(u),
            };
            // Operand `k`, or the array it reads and its operation where it is computed in this node's loop.
            let source = |k: usize| match fusions.fused[k] {
                None => Source::Plain(operand(k)),
                Some(Fusion { source, uniform, kind }) => {
                    // The uniform operand was computed once for the block, as every uniform node is.
                    let u = uniform.map_or(0.0, |u| match values[u] {
                        Value::Uniform(u) => u,
                        Value::Row | Value::Input(_) => f32::NAN,
                    });
                    debug_assert!(uniform.is_none_or(|u| matches!(values[u], Value::Uniform(_))));
                    let prologue = kind.with_uniform(u);
                    match operand(source) {
                        Operand::Values(v) => Source::Fused(v, prologue),
                        // Never planned (the source is an array), but computed right if it were.
                        Operand::Uniform(v) => Source::Plain(Operand::Uniform(prologue.apply(v))),
                    }
                }
            };
            let value = match node {
                Node::Const(c) => Value::Uniform(*c),
                Node::Scalar(k) => Value::Uniform(scalars[*k]),
                Node::Reduced => Value::Uniform(reduced),
                Node::Operand(_) => Value::Uniform(f32::NAN),
                Node::Input(k) => Value::Input(*k),
                Node::Neg(a) => unary_source(out, source(*a), |x| -x),
                Node::Not(a) => unary(out, operand(*a), |x| boolean(!truth(x))),
                Node::Arith(op, a, b) => {
                    let (x, y) = (source(*a), source(*b));
                    match op {
                        Arith::Add => binary_source(out, x, y, |x, y| x + y),
                        Arith::Sub => binary_source(out, x, y, |x, y| x - y),
                        Arith::Mul => binary_source(out, x, y, |x, y| x * y),
                        Arith::Div => binary_source(out, x, y, |x, y| x / y),
                    }
                }
                Node::Compare(op, a, b) => {
                    let (x, y) = (operand(*a), operand(*b));
                    match op {
                        Compare::Lt => binary(out, x, y, |x, y| boolean(x < y)),
                        Compare::Le => binary(out, x, y, |x, y| boolean(x <= y)),
                        Compare::Gt => binary(out, x, y, |x, y| boolean(x > y)),
                        Compare::Ge => binary(out, x, y, |x, y| boolean(x >= y)),
                        Compare::Eq => binary(out, x, y, |x, y| boolean(x == y)),
                        Compare::Ne => binary(out, x, y, |x, y| boolean(x != y)),
                    }
                }
                Node::Logic(op, a, b) => {
                    let (x, y) = (operand(*a), operand(*b));
                    match op {
                        Logic::And => binary(out, x, y, |x, y| boolean(truth(x) && truth(y))),
                        Logic::Or => binary(out, x, y, |x, y| boolean(truth(x) || truth(y))),
                    }
                }
                Node::Call(func, args) => {
                    let fusing = source(args[0]);
                    let a = operand(args[0]);
                    let b = || operand(args[1]);
                    let c = || operand(args[2]);
                    match func {
                        Func::Abs => unary_source(out, fusing, f32::abs),
                        Func::Sqrt => unary_source(out, fusing, f32::sqrt),
                        Func::Exp => unary_source(out, fusing, vector_math::exp::<S>),
                        Func::Exp2 => unary_source(out, fusing, vector_math::exp2::<S>),
                        Func::Log => unary_source(out, fusing, vector_math::log::<S>),
                        Func::Sin => trigonometric(out, fusing, vector_math::sin::<S>, f32::sin),
                        Func::Cos => trigonometric(out, fusing, vector_math::cos::<S>, f32::cos),
                        Func::Tanh => unary_source(out, fusing, vector_math::tanh::<S>),
                        Func::Atan => unary_source(out, fusing, vector_math::atan::<S>),
                        Func::Expm1 => unary_source(out, fusing, vector_math::expm1::<S>),
                        Func::Sinh => unary_source(out, fusing, vector_math::sinh::<S>),
                        Func::Cosh => unary_source(out, fusing, vector_math::cosh::<S>),
                        Func::Erf => unary_source(out, fusing, vector_math::erf::<S>),
                        Func::Floor => unary(out, a, f32::floor),
                        Func::Ceil => unary(out, a, f32::ceil),
                        Func::Round => unary(out, a, f32::round_ties_even),
                        Func::Trunc => unary(out, a, f32::trunc),
                        Func::Sign => unary(out, a, sign_f32),
                        Func::Min => binary(out, a, b(), f32::min),
                        Func::Max => binary(out, a, b(), f32::max),
                        Func::Clamp => ternary(out, a, b(), c(), |x, lo, hi| x.max(lo).min(hi)),
                        Func::Fma => ternary(out, a, b(), c(), f32::mul_add),
                        Func::Where => ternary(out, a, b(), c(), |t, y, z| if truth(t) { y } else { z }),
                        // Every other function as the function table computes it one element at a time (the
                        // standard library's, or in `f64` where `f32` has no such function).
                        _ => {
                            let f = func.spec().scalar;
                            match func.arity() {
                                1 => unary(out, a, move |x| f(&[x])),
                                2 => binary(out, a, b(), move |x, y| f(&[x, y])),
                                _ => ternary(out, a, b(), c(), move |x, y, z| f(&[x, y, z])),
                            }
                        }
                    }
                }
            };
            values[id] = value;
        }
    }
}

/// How many blocks ahead of the one being computed the evaluator asks for its inputs ([`prefetch_block`]).
pub const PREFETCH_AHEAD: usize = 2;

/// Asks the memory system for the block of every input that starts at `start` (if any, below `n`), while the
/// current block is computed. The evaluator makes several passes over a block in cache, and during those the core
/// would otherwise request nothing from memory; the hardware's own prefetchers do not cross the 4 KiB page that a
/// block of [`BLOCK`] elements fills, so each block would begin with a stall. Asking for a block ahead about doubles
/// the rate of a cheap streaming program; two blocks ahead ([`PREFETCH_AHEAD`]) is the best of one, two and four
/// (measured on the 2-core machine: docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
#[inline(always)]
fn prefetch_block(inputs: &[ArrayView<'_>], start: usize, n: usize) {
    if start >= n {
        return;
    }
    let end = (start + BLOCK).min(n);
    for input in inputs {
        for line in input.slice(start..end).as_bytes().chunks(64) {
            prefetch(line.as_ptr());
        }
    }
}

/// A hint to bring the cache line holding `at` into the cache; nothing where the architecture has no such hint.
#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults, whatever the address, and changes no value the program reads.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Outputs longer than this are written with streaming stores ([`stream_copy`]): they would not stay in cache anyway.
pub const STREAM_ABOVE: usize = crate::kernels::STREAM_ABOVE;

simd_kernel! {
    /// Combines a block's terms in `f32`, over [`COMBINE_LANES`] accumulators and then a tree; a NaN term makes a min
    /// or max NaN. Compiled for the backend's SIMD level with the rest, which is faster than eight accumulators at the
    /// baseline instruction set (measured: docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
    fn combine<S>(s, kind: Reduce, terms: &[f32]) -> f32 {
        let _ = s;
        match kind {
            Reduce::Sum => fold_lanes(terms, 0.0, |a, b| a + b),
            Reduce::Prod => fold_lanes(terms, 1.0, |a, b| a * b),
            Reduce::Min => fold_lanes(terms, f32::INFINITY, |a, b| if a.is_nan() || b.is_nan() { f32::NAN } else { a.min(b) }),
            Reduce::Max => {
                fold_lanes(terms, f32::NEG_INFINITY, |a, b| if a.is_nan() || b.is_nan() { f32::NAN } else { a.max(b) })
            }
        }
    }
}

/// The accumulators of [`combine`]: enough independent chains to keep the SIMD units busy at every level (two
/// AVX-512 registers, four AVX2 ones).
pub const COMBINE_LANES: usize = 32;

/// `terms` folded with `join` into [`COMBINE_LANES`] accumulators from `identity`, which are then joined pairwise.
#[inline(always)]
fn fold_lanes(terms: &[f32], identity: f32, join: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [identity; COMBINE_LANES];
    let mut chunks = terms.chunks_exact(COMBINE_LANES);
    for chunk in &mut chunks {
        for (a, t) in acc.iter_mut().zip(chunk) {
            *a = join(*a, *t);
        }
    }
    let tail = chunks.remainder().iter().fold(identity, |a, t| join(a, *t));
    let mut width = COMBINE_LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] = join(acc[i], acc[i + width]);
        }
    }
    join(acc[0], tail)
}

/// An output element's storage on the CPU: `f32`, written with streaming stores past [`STREAM_ABOVE`], or the bits of
/// a 16-bit type, rounded from a block's `f32` values as they are written.
trait Stored: Copy + Default + Send + Sync {
    /// Writes the block's `values` into `out`.
    fn store(level: Supported, dtype: Dtype, values: &[f32], out: &mut [Self], stream: bool);
}

impl Stored for f32 {
    fn store(level: Supported, _: Dtype, values: &[f32], out: &mut [f32], stream: bool) {
        if stream { stream_copy(level, values, out) } else { out.copy_from_slice(values) }
    }
}

impl Stored for u16 {
    fn store(_: Supported, dtype: Dtype, values: &[f32], out: &mut [u16], _: bool) {
        dtype.encode_slice(values, out);
    }
}

/// The block of every input that starts at `start`, `len` long, as `f32` slices: `f32` arrays in place, 16-bit ones
/// widened into `widened` (a row of [`BLOCK`] per input). The slices are kept in an array on the stack (an
/// expression reads at most [`MAX_ARRAYS`] arrays), so that a block allocates nothing.
fn block_inputs<'a>(
    inputs: &[ArrayView<'a>],
    start: usize,
    len: usize,
    widened: &'a mut [f32],
) -> ([&'a [f32]; MAX_ARRAYS], usize) {
    let mut here: [&[f32]; MAX_ARRAYS] = [&[]; MAX_ARRAYS];
    let mut rows = widened.chunks_mut(BLOCK);
    for (slot, input) in here.iter_mut().zip(inputs) {
        *slot = match input {
            ArrayView::F32(values) => &values[start..start + len],
            ArrayView::Half(dtype, bits) => {
                let row = &mut rows.next().expect("a row per input")[..len];
                dtype.decode_slice(&bits[start..start + len], row);
                &*row
            }
        };
    }
    (here, inputs.len().min(MAX_ARRAYS))
}

/// Runs `program` on `inputs` block by block over the backend's thread pool; an elementwise program writes into the
/// arrays of `reuse` where it holds one per output (resized to the input's length), else into new ones, stored as
/// `dtype`. 16-bit inputs are widened a block at a time into a row of the task's own, so that every pass reads
/// `f32` in cache. With `fuse`, the nodes [`Fusions::plan`] takes in are computed in their readers' loops; without,
/// each is a pass (for tests).
fn run_blocks(
    level: Supported,
    program: &Program,
    inputs: &[ArrayView<'_>],
    scalars: &[f32],
    dtype: Dtype,
    reuse: Option<Outputs>,
    fuse: bool,
) -> Result<Outputs> {
    let lengths: Vec<usize> = inputs.iter().map(ArrayView::len).collect();
    let n = program.length_of(&lengths, scalars)?;
    if let Some(input) = inputs.iter().find(|i| i.dtype() != dtype) {
        return Err(Error::invalid(format!(
            "an input array is {}, the expression's arrays are {dtype}",
            input.dtype()
        )));
    }
    let evaluate = per_element_nodes(program);
    let fusions = if fuse { Fusions::plan(program, &evaluate) } else { Fusions::none(program.nodes.len()) };
    let blocks = n.div_ceil(BLOCK);
    match &program.reduction {
        None if dtype.is_half() => {
            let arrays = match reuse {
                Some(Outputs::Half { dtype: d, arrays }) if d == dtype && arrays.len() == program.outputs.len() => {
                    arrays
                }
                _ => program.outputs.iter().map(|_| Vec::new()).collect(),
            };
            let arrays = map_blocks(level, program, &evaluate, &fusions, inputs, scalars, dtype, n, arrays);
            Ok(Outputs::Half { dtype, arrays })
        }
        None => {
            let arrays = match reuse {
                Some(Outputs::Elementwise(arrays)) if arrays.len() == program.outputs.len() => arrays,
                _ => program.outputs.iter().map(|_| Vec::new()).collect(),
            };
            Ok(Outputs::Elementwise(map_blocks(level, program, &evaluate, &fusions, inputs, scalars, dtype, n, arrays)))
        }
        Some(reduction) => {
            let kind = reduction.kind;
            let partials: Vec<f32> = (0..blocks)
                .into_par_iter()
                .with_min_len(task_blocks(program, &evaluate, blocks))
                .map_init(
                    || (Scratch::new(program.nodes.len()), vec![0f32; inputs.len() * BLOCK]),
                    |(scratch, widened), block| {
                        let start = block * BLOCK;
                        let len = BLOCK.min(n - start);
                        prefetch_block(inputs, start + PREFETCH_AHEAD * BLOCK, n);
                        let (slots, count) = block_inputs(inputs, start, len, widened);
                        let here = &slots[..count];
                        evaluate_block(level, program, &evaluate, &fusions, here, scalars, 0, len, 0.0, scratch);
                        combine(level, kind, scratch.row(reduction.body, here, 0, len))
                    },
                )
                .collect();
            let total = combine(level, kind, &partials);
            // The post-map, once, on a block of one element holding the reduction's value.
            let post = program.reached(&[reduction.post]);
            let mut scratch = Scratch::new(program.nodes.len());
            let none = Fusions::none(program.nodes.len());
            evaluate_block(level, program, &post, &none, &[], scalars, 0, 1, total, &mut scratch);
            Ok(Outputs::Reduction(scratch.row(reduction.post, &[], 0, 1)[0]))
        }
    }
}

/// The elementwise part of [`run_blocks`]: every output's elements written into `outputs` (resized to `n`), stored
/// as `T`.
#[allow(clippy::too_many_arguments)]
fn map_blocks<T: Stored>(
    level: Supported,
    program: &Program,
    evaluate: &[bool],
    fusions: &Fusions,
    inputs: &[ArrayView<'_>],
    scalars: &[f32],
    dtype: Dtype,
    n: usize,
    mut outputs: Vec<Vec<T>>,
) -> Vec<Vec<T>> {
    // Every element is written below: the old contents never matter.
    outputs.iter_mut().for_each(|o| o.resize(n, T::default()));
    // Each task writes its part of every output, [`task_blocks`] blocks long; the parts are disjoint, so the
    // tasks run in parallel.
    let task = BLOCK * task_blocks(program, evaluate, n.div_ceil(BLOCK));
    let stream = n > STREAM_ABOVE;
    let mut parts: Vec<Vec<&mut [T]>> = (0..n.div_ceil(task)).map(|_| Vec::new()).collect();
    for output in &mut outputs {
        for (part, chunk) in parts.iter_mut().zip(output.chunks_mut(task)) {
            part.push(chunk);
        }
    }
    parts.into_par_iter().enumerate().for_each_init(
        || (Scratch::new(program.nodes.len()), vec![0f32; inputs.len() * BLOCK]),
        |(scratch, widened), (index, mut part)| {
            let first = index * task;
            for start in (first..(first + task).min(n)).step_by(BLOCK) {
                let len = BLOCK.min(n - start);
                if start == first {
                    prefetch_block(inputs, start + BLOCK, n);
                }
                prefetch_block(inputs, start + PREFETCH_AHEAD * BLOCK, n);
                let (slots, count) = block_inputs(inputs, start, len, widened);
                let here = &slots[..count];
                evaluate_block(level, program, evaluate, fusions, here, scalars, 0, len, 0.0, scratch);
                for (chunk, output) in part.iter_mut().zip(&program.outputs) {
                    let at = start - first;
                    let values = scratch.row(output.node, here, 0, len);
                    T::store(level, dtype, values, &mut chunk[at..at + len], stream);
                }
            }
            if stream {
                stream_fence(level);
            }
        },
    );
    outputs
}

/// The interpreter's `f32` arrays stored as `dtype`.
fn store_interpreted(outputs: Outputs, dtype: Dtype) -> Outputs {
    match outputs {
        Outputs::Elementwise(arrays) if dtype.is_half() => Outputs::Half {
            dtype,
            arrays: arrays.iter().map(|a| a.iter().map(|&v| dtype.encode(v)).collect()).collect(),
        },
        other => other,
    }
}

impl CpuBackend {
    /// `variant` of `input`'s program on its arrays, writing into `reuse`'s arrays where it can.
    fn evaluate(&self, variant: &str, input: &ExprInput, reuse: Option<Outputs>) -> Result<Outputs> {
        let program = &input.params.program;
        let (scalars, dtype) = (&input.params.scalars, input.params.dtype);
        match variant {
            "scalar" => {
                let values = input.values();
                let outputs = program.interpret(&as_slices(&values), scalars)?;
                Ok(store_interpreted(outputs, dtype))
            }
            "blocks" => {
                let inputs: Vec<ArrayView<'_>> = input.arrays.iter().map(HostArray::view).collect();
                self.install(|| run_blocks(self.simd(), program, &inputs, scalars, dtype, reuse, true))
            }
            other => Err(Implements::<Expression>::unknown_variant(self, other)),
        }
    }
}

impl Implements<Expression> for CpuBackend {
    type Resident = (ExprInput, Option<Outputs>);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "blocks"]
    }

    /// `blocks` at every size: even at 1024 elements, one block, it is many times faster than the interpreter
    /// (measured: docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
    fn best_variant(&self, _params: &gpuworthy_core::expr::ExprParams) -> &'static str {
        "blocks"
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
        *output = Some(self.evaluate(variant, input, output.take())?);
        Ok(())
    }

    /// Evaluates straight from the caller's arrays (16-bit ones widened a block at a time): on the CPU, an upload
    /// would only copy them.
    fn run(&self, variant: &str, input: &ExprInput) -> Result<Outputs> {
        <Expression as gpuworthy_core::Workload>::validate(input)?;
        self.evaluate(variant, input, None)
    }

    fn run_into(&self, variant: &str, input: &ExprInput, output: &mut Outputs) -> Result<()> {
        <Expression as gpuworthy_core::Workload>::validate(input)?;
        let reuse = std::mem::replace(output, Outputs::Elementwise(Vec::new()));
        *output = self.evaluate(variant, input, Some(reuse))?;
        Ok(())
    }

    fn download(&self, (_, output): &mut Self::Resident) -> Result<Outputs> {
        output.clone().ok_or_else(|| Error::invalid("nothing was launched on this expression's data"))
    }

    /// Evaluates the part straight from the caller's arrays (borrowed, not cut) and copies the result into its place.
    fn run_part(
        &self,
        variant: &str,
        input: &ExprInput,
        units: Range<usize>,
        place: &mut PartOutput<'_>,
    ) -> Result<()> {
        <Expression as gpuworthy_core::Workload>::validate(input)?;
        if units.end > input.params.n || units.start > units.end {
            return Err(Error::invalid(format!("units {units:?} of {} elements", input.params.n)));
        }
        let sharding = <Expression as gpuworthy_core::Workload>::sharding()
            .ok_or_else(|| Error::invalid("expressions split over groups"))?;
        let arrays = input
            .arrays
            .iter()
            .map(|array| match array.view().slice(units.clone()) {
                // SAFETY: `part` below lives only inside this call, while `input` (which owns or borrows these
                // elements) is borrowed by it; nothing writes to them meanwhile.
                ArrayView::F32(values) => Ok(unsafe { HostArray::borrowing(values) }),
                // SAFETY: as above.
                ArrayView::Half(dtype, bits) => unsafe { HostArray::borrowing_bits(dtype, bits) },
            })
            .collect::<Result<Vec<_>>>()?;
        let part = ExprInput { params: (sharding.part)(&input.params, units), arrays };
        match self.evaluate(variant, &part, None)? {
            Outputs::Elementwise(arrays) => place.fill(&arrays.iter().map(Vec::as_slice).collect::<Vec<_>>()),
            Outputs::Half { arrays, .. } => place.fill(&arrays.iter().map(Vec::as_slice).collect::<Vec<_>>()),
            Outputs::Reduction(_) => Err(Error::invalid("a reduction has no place in an output of arrays")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::Workload;
    use gpuworthy_core::expr::{CONFORMANCE_LENGTHS, Expr, ExprParams};
    use std::sync::Arc;

    /// Past [`STREAM_ABOVE`] the outputs are written with streaming stores, from an unaligned start.
    #[test]
    fn long_outputs_written_with_streaming_stores_match_the_reference() {
        let cpu = CpuBackend::new().unwrap();
        let program = Arc::new(Expr::parse("u = a * x + y; v = x - y").unwrap().bind(&["a"]).unwrap());
        let params = ExprParams::new(program, STREAM_ABOVE + 13, vec![2.5]);
        let input = Expression::generate(&params, 3).unwrap();
        let expected = Expression::reference(&input).unwrap();
        let output = Implements::<Expression>::run(&cpu, "blocks", &input).unwrap();
        Expression::check(&input, &expected, &output, gpuworthy_core::Precision::Fp32).unwrap();
    }

    /// A cheap program runs a few thousand elements as one task and long arrays in tasks of [`TASK_BLOCKS`]; one of
    /// costly elements is cut into equal shorter tasks, and its results are the same.
    #[test]
    fn costly_programs_are_cut_into_shorter_tasks_that_compute_the_same() {
        let cpu = CpuBackend::new().unwrap();
        let tasks = |source: &str, n: usize| {
            let program = Expr::parse(source).unwrap().bind(&[]).unwrap();
            let blocks = n.div_ceil(BLOCK);
            cpu.install(|| task_blocks(&program, &per_element_nodes(&program), blocks))
        };
        assert_eq!(tasks("y = 2 * x + 1", 8192), 8);
        assert_eq!(tasks("y = 2 * x + 1", 1 << 24), TASK_BLOCKS);
        assert_eq!(tasks("y = exp(-x * x) * sin(3 * x)", 8192), 8);
        let costly = "y = asin(x / 2) * 0.5 + 0.5";
        assert!(tasks(costly, 8192) < 8 || cpu.install(rayon::current_num_threads) == 1);
        assert!((1..=TASK_BLOCKS).contains(&tasks(costly, 1 << 24)));
        assert_eq!(tasks(costly, 1), 1);
        let program = Arc::new(Expr::parse(costly).unwrap().bind(&[]).unwrap());
        for n in [BLOCK * 8, BLOCK * 8 + 5, BLOCK * 64 + 1] {
            let input = Expression::generate(&ExprParams::new(Arc::clone(&program), n, vec![]), 7).unwrap();
            let blocks = Implements::<Expression>::run(&cpu, "blocks", &input).unwrap();
            let scalar = Implements::<Expression>::run(&cpu, "scalar", &input).unwrap();
            assert_eq!(blocks, scalar, "at {n}");
        }
    }

    /// Which nodes are computed inside their reader's loop: a negation or an operation with a uniform side, read
    /// once, by a node that takes it in, one level deep; never an output, a node read twice or a division.
    #[test]
    fn cheap_single_use_operations_are_planned_inside_their_readers_loop() {
        let inside = |source: &str, scalars: &[&str]| {
            let program = Expr::parse(source).unwrap().bind(scalars).unwrap();
            let plan = Fusions::plan(&program, &per_element_nodes(&program));
            let mut fused: Vec<String> = program
                .nodes
                .iter()
                .zip(&plan.fused)
                .filter_map(|(node, f)| f.map(|f| format!("{node:?} as {:?}", f.kind)))
                .map(|described| {
                    described.split(['(', ' ']).next().unwrap().to_owned()
                        + " "
                        + described.split(" as ").nth(1).unwrap()
                })
                .collect();
            fused.sort();
            fused
        };
        // `-x*x` is `(-x)*x`: the negation goes into the product's loop, 3*x into sin's; the last product is the output.
        assert_eq!(inside("y = exp(-x*x) * sin(3*x)", &[]), ["Arith Mul(0.0)", "Neg Neg"]);
        assert_eq!(inside("y = a*x + b", &["a", "b"]), ["Arith Mul(0.0)"]);
        assert_eq!(inside("y = cos(1 - x) / 2", &[]), ["Arith SubFrom(0.0)"]);
        assert_eq!(inside("y = sqrt(x - 1)", &[]), ["Arith Sub(0.0)"]);
        // One level: 2*x goes into the negation, which is then a pass of its own.
        assert_eq!(inside("y = exp(-(2*x))", &[]).len(), 1);
        // Into a product of two arrays, one operand at most.
        assert_eq!(inside("y = (x + 1) * z", &[]).len(), 1);
        assert_eq!(inside("y = (x + 1) * (z + 1)", &[]).len(), 1);
        // Read twice, an output, a division, a reader that takes nothing in (a comparison, `min`).
        assert!(inside("let t = -x; y = exp(t) + t", &[]).is_empty());
        assert!(inside("u = -x; v = exp(u)", &[]).is_empty());
        assert!(inside("y = exp(x / 2)", &[]).is_empty());
        assert!(inside("y = where((x + 1) > z, 1, 0)", &[]).is_empty());
        assert!(inside("y = min(x + 1, z)", &[]).is_empty());
        // A reduction's body is read from its row; its map can still take an operation in.
        assert_eq!(inside("s = sum(exp(-x))", &[]), ["Neg Neg"]);
        assert!(inside("s = sum(-x)", &[]).is_empty());
    }

    /// Every operation taken in, under every reader that takes one, with NaN, infinities, signed zeros, subnormals
    /// and arguments past the vectorised `sin`'s reach: the same values as with every node a pass of its own
    /// (compared bit for bit, NaN as NaN), at lengths with and without a vector tail, on every SIMD level of this CPU.
    #[test]
    fn operations_taken_into_a_readers_loop_compute_what_their_own_passes_did() {
        let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-40, -1e-40, 3.0e4, -1.0e9, 0.5];
        let prologues = ["-x", "k*x", "x*k", "x + k", "k + x", "x - k", "k - x"];
        let readers = ["-(P)", "abs(P)", "sqrt(P)", "exp(P)", "exp2(P)", "log(P)", "sin(P)", "cos(P)", "tanh(P)"];
        let readers = readers.iter().chain(&["atan(P)", "(P) + m", "m - (P)", "(P) * m", "m / (P)", "(P) / m"]);
        let readers = readers.chain(&["(P) * z", "z - (P)", "(P) / z", "z + (P)"]);
        let mut sources = Vec::new();
        for reader in readers {
            for prologue in prologues {
                sources.push(format!("y = {}", reader.replace('P', prologue)));
            }
        }
        for level in crate::simd::Level::supported() {
            let cpu = CpuBackend::with_options(crate::CpuOptions { simd: level.checked() });
            for source in &sources {
                let scalars: Vec<&str> = ["k", "m"].into_iter().filter(|name| source.contains(name)).collect();
                let program = Arc::new(Expr::parse(source).unwrap().bind(&scalars).unwrap());
                assert!(Fusions::plan(&program, &per_element_nodes(&program)).fused.iter().any(Option::is_some));
                for n in [BLOCK + 37, 64] {
                    let values = [-1.5, 0.25][..scalars.len()].to_vec();
                    let params = ExprParams::new(Arc::clone(&program), n, values);
                    let mut input = Expression::generate(&params, 11).unwrap();
                    for array in &mut input.arrays {
                        let mut values = array.values().into_owned();
                        values[..special.len()].copy_from_slice(&special);
                        values[n - special.len()..].copy_from_slice(&special);
                        *array = values.into();
                    }
                    let run = |fuse| {
                        let views: Vec<ArrayView<'_>> = input.arrays.iter().map(HostArray::view).collect();
                        let (scalars, dtype) = (&input.params.scalars, input.params.dtype);
                        cpu.install(|| run_blocks(cpu.simd(), &program, &views, scalars, dtype, None, fuse))
                    };
                    let (Ok(Outputs::Elementwise(blocks)), Ok(Outputs::Elementwise(scalar))) = (run(true), run(false))
                    else {
                        panic!("{source}: not elementwise");
                    };
                    let same = |(b, s): (&f32, &f32)| b.to_bits() == s.to_bits() || (b.is_nan() && s.is_nan());
                    let bad = blocks[0].iter().zip(&scalar[0]).position(|p| !same(p));
                    assert!(bad.is_none(), "{source} at {n} on {level:?}: element {bad:?}");
                }
            }
        }
    }

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
            for (n, dtype) in
                CONFORMANCE_LENGTHS.into_iter().chain([BLOCK * 3 + 17]).flat_map(|n| Dtype::ALL.map(|d| (n, d)))
            {
                let params = ExprParams::new(Arc::clone(&program), n, values.clone()).in_dtype(dtype);
                let input = Expression::generate(&params, 5).unwrap();
                let expected = Expression::reference(&input).unwrap();
                for variant in Implements::<Expression>::variants(&cpu) {
                    let output = Implements::<Expression>::run(&cpu, variant, &input).unwrap();
                    Expression::check(&input, &expected, &output, gpuworthy_core::Precision::Fp32)
                        .unwrap_or_else(|e| panic!("{source} at {n} in {dtype} with {variant}: {e}"));
                }
            }
        }
    }
}
