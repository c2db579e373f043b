//! Expressions: a computation of the user's own, written once as text and run on every backend.
//!
//! ```
//! use gpuworthy_core::expr::Expr;
//!
//! let expr = Expr::parse("let t = x - m; y = t * t / (s * s)")?;
//! let program = expr.bind(&["m", "s"])?;        // m and s are scalars; x is an input array
//! assert_eq!(program.inputs, ["x"]);
//! assert_eq!(program.outputs[0].name, "y");
//!
//! let err = Expr::parse("y = 2 * sinc(x)").unwrap_err();
//! assert!(err.to_string().contains("unknown function `sinc`"));
//! println!("{}", err.render("y = 2 * sinc(x)"));   // the line, and a caret under `sinc`
//! # Ok::<(), gpuworthy_core::expr::ExprError>(())
//! ```
//!
//! The language (EXPRESSIONS.md in the repository's design notes): statements separated by `;` or new lines, `let`
//! temporaries, outputs assigned once, `f32` numbers and booleans (a boolean is not a number), the operators
//! `+ - * /`, comparisons, `&& || !`, the functions of [`Func::ALL`], the constants `pi`, `inf`, `nan`, and reductions
//! (`sum`, `prod`, `min`, `max` of one value) as an output's value or inside a function of it (`sqrt(sum(x * x))`).
//!
//! The text is read twice: [`Expr::parse`] checks everything that does not depend on which names are scalars, and
//! [`Expr::bind`] then decides, from the names given values, which of the names read are scalars and which are input
//! arrays, giving the [`Program`] that backends compile and the reference evaluates. Both refuse bad input with an
//! [`ExprError`] that points at the text; neither panics on any input (a property test feeds them arbitrary strings).

pub mod codegen;
mod functions;
mod interpret;
mod ir;
#[cfg(test)]
mod properties;
mod random;
mod reference;
mod syntax;
mod workload;

use std::fmt;

pub use functions::{Accuracy, Cost, FUNCTIONS, Func, FuncSpec, FunctionBound, erf, pow_f32, sign_f32, ulp};
pub use ir::{Arith, Compare, Graph, Logic, MAX_POW_BY_MULTIPLICATION, Node, NodeId, Output, Reduce, Reduction, Type};
pub use random::random_expression;
pub use reference::{Bounded, FunctionBounds, Outputs, Reference, SUM_SEQUENTIAL_TERMS, check, check_stored};
pub use syntax::Span;
pub use workload::{
    ArrayView, CONFORMANCE_LENGTHS, ELEMENTWISE_BASE, ExprCost, ExprInput, ExprParams, Expression, HostArray,
    REDUCTION_BASE, as_slices, base_params, expression_ladder, instance_name,
};

/// The limits every expression is held to, so that no input makes the parser, a compiler or a driver work without
/// bound.
///
/// ```
/// use gpuworthy_core::expr::{Expr, limits};
///
/// let names: Vec<String> = (0..limits::MAX_ARRAYS).map(|i| format!("x{i}")).collect();
/// let wide = Expr::parse(&format!("y = {}", names.join(" + ")))?; // 16 inputs and an output: 17 arrays
/// assert!(wide.bind(&[]).unwrap_err().message.contains("the limit is 16"));
/// let long = format!("y = x{}", " ".repeat(limits::MAX_SOURCE_BYTES));
/// assert!(Expr::parse(&long).unwrap_err().message.contains("bytes"));
/// # Ok::<(), gpuworthy_core::expr::ExprError>(())
/// ```
pub mod limits {
    /// The longest source text, in bytes.
    pub const MAX_SOURCE_BYTES: usize = 64 << 10;
    /// The most statements.
    pub const MAX_STATEMENTS: usize = 256;
    /// The deepest nesting of parentheses, operators and calls.
    pub const MAX_DEPTH: usize = 64;
    /// The most nodes of the typed graph (operations, names and numbers, temporaries counted once).
    pub const MAX_NODES: usize = 4096;
    /// The most arrays one expression reads and writes together.
    pub const MAX_ARRAYS: usize = 16;
    /// The most scalars.
    pub const MAX_SCALARS: usize = 32;
}

/// Why an expression was refused, and where in its text.
///
/// ```
/// use gpuworthy_core::expr::Expr;
///
/// let source = "y = 2 * sinc(x)";
/// let err = Expr::parse(source).unwrap_err();
/// assert!(err.message.contains("unknown function `sinc`"));
/// assert_eq!(&source[err.span.start..err.span.end], "sinc");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    /// What is wrong and what would be right.
    pub message: String,
    /// The bytes of the text it is about.
    pub span: Span,
}

impl ExprError {
    pub(crate) fn at(span: Span, message: impl Into<String>) -> ExprError {
        ExprError { message: message.into(), span }
    }

    /// The message with the line of `source` it is about and a caret under the part: what a command line prints.
    ///
    /// ```text
    /// error: unknown function `sinc`: the functions are abs, min, ...
    ///   |
    /// 1 | y = 2 * sinc(x)
    ///   |         ^^^^
    /// ```
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let source = "let t = x\ny = 2 * sinc(t)";
    /// let rendered = Expr::parse(source).unwrap_err().render(source);
    /// assert!(rendered.contains("2 | y = 2 * sinc(t)\n  |         ^^^^"), "{rendered}");
    /// ```
    pub fn render(&self, source: &str) -> String {
        let start = floor_char_boundary(source, self.span.start.min(source.len()));
        let end = floor_char_boundary(source, self.span.end.clamp(start, source.len()));
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..].find('\n').map_or(source.len(), |i| start + i);
        let line_number = source[..start].matches('\n').count() + 1;
        let line = &source[line_start..line_end];
        let column = source[line_start..start].chars().count();
        let width = source[start..end.min(line_end).max(start)].chars().count().max(1);
        let gutter = " ".repeat(line_number.to_string().len());
        format!(
            "error: {}\n{gutter} |\n{line_number} | {line}\n{gutter} | {}{}",
            self.message,
            " ".repeat(column),
            "^".repeat(width)
        )
    }

    /// This error as the crate's [`crate::Error::InvalidInput`], its text rendered with the caret.
    ///
    /// ```
    /// use gpuworthy_core::{Error, expr::Expr};
    ///
    /// fn parsed(source: &str) -> gpuworthy_core::Result<Expr> {
    ///     Expr::parse(source).map_err(|e| e.into_error(source))
    /// }
    /// let err = parsed("y = 2 * sinc(x)").unwrap_err();
    /// assert!(matches!(err, Error::InvalidInput(_)) && err.to_string().contains("^^^^"), "{err}");
    /// ```
    pub fn into_error(self, source: &str) -> crate::Error {
        crate::Error::InvalidInput(self.render(source))
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.span.start)
    }
}

impl std::error::Error for ExprError {}

/// An expression, parsed and type-checked: what is left to decide is which of the names it reads are scalars.
///
/// ```
/// use gpuworthy_core::expr::Expr;
///
/// let expr = Expr::parse("y = a * x + b")?;
/// assert_eq!(expr.operands(), ["a", "x", "b"]); // arrays or scalars: `bind` decides
/// let program = expr.bind(&["a", "b"])?;
/// assert_eq!(program.inputs, ["x"]);
/// # Ok::<(), gpuworthy_core::expr::ExprError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    source: String,
    graph: Graph,
}

impl Expr {
    /// Parses and checks `source`.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let expr = Expr::parse("let t = x - m; y = t * t / (s * s)")?;
    /// assert_eq!(expr.graph().outputs[0].name, "y");
    /// assert!(Expr::parse("y = x +").is_err());
    /// assert!(Expr::parse("y = (x > 0) + 1").is_err()); // a boolean is not a number
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn parse(source: &str) -> Result<Expr, ExprError> {
        let statements = syntax::parse(source)?;
        let graph = ir::lower(&statements)?;
        Ok(Expr { source: source.to_owned(), graph })
    }

    /// The text it was parsed from.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// assert_eq!(Expr::parse("y = 2 * x")?.source(), "y = 2 * x");
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The names it reads but does not assign (or updates in place), in the order first read: each is an input array
    /// or, once given a value, a scalar.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// assert_eq!(Expr::parse("y = a * x + y")?.operands(), ["a", "x", "y"]); // `y` is updated in place
    /// assert_eq!(Expr::parse("let t = 2 * x; y = t * t")?.operands(), ["x"]); // a temporary is not read
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn operands(&self) -> Vec<&str> {
        self.graph.operands.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// The typed graph.
    ///
    /// ```
    /// use gpuworthy_core::expr::{Expr, Func, Node};
    ///
    /// let expr = Expr::parse("y = sqrt(x)")?;
    /// let graph = expr.graph();
    /// assert!(matches!(graph.nodes[graph.outputs[0].node], Node::Call(Func::Sqrt, _)));
    /// assert!(graph.reduction.is_none());
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The program that reads `scalars` as scalars and every other name it reads as an input array. A scalar the
    /// expression does not read, a scalar it assigns, and limits passed are errors.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let expr = Expr::parse("y = a * x + b")?;
    /// let program = expr.bind(&["a", "b"])?;
    /// assert_eq!((program.inputs.len(), program.scalars.len()), (1, 2));
    /// assert_eq!(expr.bind(&[])?.inputs, ["a", "x", "b"]); // no values: every name is an array
    /// assert!(expr.bind(&["z"]).is_err()); // the expression does not read `z`
    /// assert!(expr.bind(&["a", "b", "x"]).is_err()); // no array left: the length is unknown
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn bind(&self, scalars: &[&str]) -> Result<Program, ExprError> {
        let whole = Span { start: 0, end: self.source.len() };
        for (i, scalar) in scalars.iter().enumerate() {
            if scalars[..i].contains(scalar) {
                return Err(ExprError::at(whole, format!("`{scalar}` is given a value twice")));
            }
            let assigned = self
                .graph
                .outputs
                .iter()
                .map(|o| (&o.name, o.span))
                .chain(self.graph.reduction.iter().map(|r| (&r.name, r.span)));
            if let Some((_, span)) = assigned.clone().find(|(name, _)| name == scalar) {
                return Err(ExprError::at(
                    span,
                    format!("`{scalar}` is given a value, but the expression assigns it: an output is an array"),
                ));
            }
            if !self.graph.operands.iter().any(|(name, _)| name == scalar) {
                return Err(ExprError::at(
                    whole,
                    format!(
                        "`{scalar}` is given a value, but the expression does not read it (it reads {})",
                        if self.graph.operands.is_empty() { "no names".to_owned() } else { self.operands().join(", ") }
                    ),
                ));
            }
        }
        if scalars.len() > limits::MAX_SCALARS {
            return Err(ExprError::at(whole, format!("too many scalars: the limit is {}", limits::MAX_SCALARS)));
        }
        let mut inputs: Vec<String> = Vec::new();
        let mut class = Vec::with_capacity(self.graph.operands.len());
        for (name, _) in &self.graph.operands {
            match scalars.iter().position(|s| s == name) {
                Some(k) => class.push(Node::Scalar(k)),
                None => {
                    class.push(Node::Input(inputs.len()));
                    inputs.push(name.clone());
                }
            }
        }
        if inputs.is_empty() {
            return Err(ExprError::at(
                whole,
                "the expression reads no input array, so the length of its result is unknown: an expression reads at \
                 least one array",
            ));
        }
        let mut graph = self.graph.clone();
        for node in &mut graph.nodes {
            if let Node::Operand(k) = *node {
                *node = class[k].clone();
            }
        }
        let output_names: Vec<&String> =
            graph.outputs.iter().map(|o| &o.name).chain(graph.reduction.iter().map(|r| &r.name)).collect();
        let arrays = inputs.len() + output_names.iter().filter(|n| !inputs.contains(n)).count();
        if arrays > limits::MAX_ARRAYS {
            return Err(ExprError::at(
                whole,
                format!("the expression uses {arrays} arrays: the limit is {}", limits::MAX_ARRAYS),
            ));
        }
        if let Some(reduction) = &graph.reduction
            && let Some(input) = reads_input(&graph.nodes, reduction.post)
        {
            return Err(ExprError::at(
                reduction.span,
                format!(
                    "`{}` reads the array `{}` outside its `{}(...)`: outside a reduction only scalars and numbers \
                     are allowed",
                    reduction.name,
                    inputs[input],
                    reduction.kind.name()
                ),
            ));
        }
        Ok(Program {
            nodes: graph.nodes.clone(),
            inputs,
            scalars: scalars.iter().map(|s| (*s).to_owned()).collect(),
            outputs: graph.outputs.clone(),
            reduction: graph.reduction.clone(),
            types: graph.types,
        })
    }
}

/// The input array a node reads, directly or through its operands, if any.
fn reads_input(nodes: &[Node], root: NodeId) -> Option<usize> {
    let mut stack = vec![root];
    let mut seen = vec![false; nodes.len()];
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id], true) {
            continue;
        }
        match &nodes[id] {
            Node::Input(k) => return Some(*k),
            node => stack.extend(node.operands()),
        }
    }
    None
}

/// An expression with its names classified: what the backends compile and the reference evaluates.
///
/// ```
/// use gpuworthy_core::expr::{Expr, Outputs};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let program = Expr::parse("y = a * x + b")?.bind(&["a", "b"])?;
/// assert_eq!((program.inputs.len(), program.scalars.len()), (1, 2));
/// let y = program.interpret(&[&[1.0, 2.0]], &[2.0, 1.0])?; // in f32, element by element
/// assert_eq!(y, Outputs::Elementwise(vec![vec![3.0, 5.0]]));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The graph's nodes, with every name an [`Node::Input`] or a [`Node::Scalar`].
    pub nodes: Vec<Node>,
    /// The input arrays, in the order first read.
    pub inputs: Vec<String>,
    /// The scalars, in the order given.
    pub scalars: Vec<String>,
    /// The elementwise outputs (empty for a reduction).
    pub outputs: Vec<Output>,
    /// The reduction output, if this is a reduction.
    pub reduction: Option<Reduction>,
    /// The type of each node.
    pub types: Vec<Type>,
}

impl Program {
    /// For each node, whether one of `roots` depends on it (the roots included): the nodes a kernel computing those
    /// roots must evaluate.
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let program = Expr::parse("u = x + 1; v = x * 2")?.bind(&[])?;
    /// let (u, v) = (program.outputs[0].node, program.outputs[1].node);
    /// let needed = program.reached(&[u]);
    /// assert!(needed[u] && !needed[v]); // a kernel of `u` alone need not compute `v`
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn reached(&self, roots: &[NodeId]) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = roots.to_vec();
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id], true) {
                continue;
            }
            stack.extend(self.nodes[id].operands());
        }
        seen
    }

    /// For each input array, whether an output overwrites it (in place: `y = a * x + y`).
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let program = Expr::parse("y = a * x + y")?.bind(&["a"])?;
    /// assert_eq!(program.inputs, ["x", "y"]);
    /// assert_eq!(program.overwritten_inputs(), [false, true]);
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn overwritten_inputs(&self) -> Vec<bool> {
        (0..self.inputs.len()).map(|k| self.outputs.iter().any(|o| self.overwrites(o) == Some(k))).collect()
    }

    /// The input array an output overwrites (`y = a * x + y` writes `y` in place), by its index in
    /// [`Program::inputs`].
    ///
    /// ```
    /// use gpuworthy_core::expr::Expr;
    ///
    /// let program = Expr::parse("y = a * x + y")?.bind(&["a"])?;
    /// assert_eq!(program.overwrites(&program.outputs[0]), Some(1)); // `y` is `program.inputs[1]`
    /// let fresh = Expr::parse("z = a * x + y")?.bind(&["a"])?;
    /// assert_eq!(fresh.overwrites(&fresh.outputs[0]), None);
    /// # Ok::<(), gpuworthy_core::expr::ExprError>(())
    /// ```
    pub fn overwrites(&self, output: &Output) -> Option<usize> {
        self.inputs.iter().position(|name| *name == output.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(source: &str, scalars: &[&str]) -> Program {
        Expr::parse(source).unwrap_or_else(|e| panic!("{}", e.render(source))).bind(scalars).unwrap()
    }

    fn refused(source: &str, scalars: &[&str]) -> ExprError {
        match Expr::parse(source) {
            Err(e) => e,
            Ok(expr) => expr.bind(scalars).expect_err(source),
        }
    }

    #[test]
    fn every_form_of_the_language_parses() {
        let p = bound("y = a * x + b", &["a", "b"]);
        assert_eq!((p.inputs.clone(), p.scalars.clone()), (vec!["x".to_owned()], vec!["a".to_owned(), "b".to_owned()]));
        let p = bound("y = exp(-x * x) * sin(3 * x)", &[]);
        assert_eq!(p.inputs, ["x"]);
        bound("let t = x - m; y = t * t / (s * s)", &["m", "s"]);
        bound("y = where(x > 0, x, 0.01 * x)", &[]);
        let p = bound("u = x * c - y * s; v = x * s + y * c", &["c", "s"]);
        assert_eq!(p.outputs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["u", "v"]);
        let p = bound("s = sum(x * y)", &[]);
        assert_eq!(p.reduction.as_ref().map(|r| r.kind), Some(Reduce::Sum));
        let p = bound("r = sqrt(sum(x * x))", &[]);
        assert!(matches!(p.nodes[p.reduction.as_ref().unwrap().post], Node::Call(Func::Sqrt, _)));
        let p = bound("y = a * x + y", &["a"]);
        assert_eq!(p.overwrites(&p.outputs[0]), Some(1));
        assert_eq!(bound("m = max(x)", &[]).reduction.unwrap().kind, Reduce::Max);
        bound("y = min(x, 2) + max(x, y) + clamp(x, 0, 1) + fma(x, y, 1) + atan2(y, x) + pow(x, 2)", &[]);
        bound("y = where(!(x > 0 && x < 1) || x == 2, 1, 0)", &[]);
    }

    #[test]
    fn each_rule_is_a_clear_error_pointing_at_its_text() {
        let cases: [(&str, &[&str], &str, &str); 17] = [
            ("y = sinc(x)", &[], "sinc", "unknown function `sinc`: the functions are abs"),
            ("y = x > 0", &[], "x > 0", "boolean"),
            ("y = (x > 0) + 1", &[], "x > 0", "boolean, and a boolean is not a number"),
            ("y = where(x, 1, 2)", &[], "x", "must be a boolean"),
            ("y = 2.5f64 * x", &[], "2.5f64", "f64"),
            ("f64 = x", &[], "f64", "f64"),
            ("z = y * 2; y = x", &[], "y", "read by statement 1 before"),
            ("y = x; y = 2 * x", &[], "y", "assigned twice"),
            ("let t = 2; let t = 3; y = t", &[], "t", "already a temporary"),
            ("y = sin", &[], "sin", "call it"),
            ("y = pow(x)", &[], "pow(x)", "takes 2 arguments, not 1"),
            ("let t = sum(x); y = t", &[], "sum(x)", "only be an output"),
            ("y = sum(sum(x))", &[], "sum(x)", "inside another reduction"),
            ("y = x * sum(x)", &[], "y", "outside its `sum(...)`"),
            ("y = a * x", &["b"], "y = a * x", "does not read it"),
            ("y = a * x", &["y"], "y", "assigns it"),
            ("y = 2 * a", &["a"], "y = 2 * a", "reads no input array"),
        ];
        for (source, scalars, at, says) in cases {
            let err = refused(source, scalars);
            let pointed = &source[err.span.start..err.span.end.min(source.len())];
            assert!(err.message.contains(says), "{source}: {}", err.message);
            assert_eq!(pointed, at, "{source}: {}", err.render(source));
        }
    }

    #[test]
    fn a_reduction_is_the_only_output_and_limits_are_named() {
        assert!(refused("s = sum(x); y = x", &[]).message.contains("only output"));
        let wide: Vec<String> = (0..20).map(|i| format!("x{i}")).collect();
        let err = refused(&format!("y = {}", wide.join(" + ")), &[]);
        assert!(err.message.contains("arrays: the limit is 16"), "{}", err.message);
        let big = format!("y = {}", vec!["x"; limits::MAX_NODES].join(" + "));
        assert!(refused(&big, &[]).message.contains("nodes"));
    }

    #[test]
    fn the_caret_sits_under_the_part_on_its_line() {
        let source = "let t = x\ny = 2 * sinc(t)";
        let err = Expr::parse(source).unwrap_err();
        let rendered = err.render(source);
        assert!(rendered.contains("2 | y = 2 * sinc(t)\n  |         ^^^^"), "{rendered}");
        let inside_a_character = ExprError::at(Span { start: 6, end: 7 }, "x").render("y = ü + é");
        assert!(inside_a_character.contains('^'), "{inside_a_character}");
    }
}
