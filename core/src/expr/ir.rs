//! The typed form of an expression: a graph of numbered nodes (children before parents), its outputs, and the
//! names it reads, each a number or a boolean as the language says. Code generators and the reference read this form
//! only, never the text, so no expression can inject source into a kernel: names become indices, numbers become `f32`
//! values.

use super::ExprError;
use super::functions::Func;
use super::limits::MAX_NODES;
use super::syntax::{Ast, Span, Statement};

/// The index of a node in [`Graph::nodes`].
pub type NodeId = usize;

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arith {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
}

impl Arith {
    /// The operator as C, CUDA C and WGSL write it.
    pub fn symbol(self) -> &'static str {
        match self {
            Arith::Add => "+",
            Arith::Sub => "-",
            Arith::Mul => "*",
            Arith::Div => "/",
        }
    }
}

/// A comparison, whose value is a boolean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compare {
    /// `a < b`.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
}

impl Compare {
    /// The operator as the language, C, CUDA C and WGSL write it.
    pub fn symbol(self) -> &'static str {
        match self {
            Compare::Lt => "<",
            Compare::Le => "<=",
            Compare::Gt => ">",
            Compare::Ge => ">=",
            Compare::Eq => "==",
            Compare::Ne => "!=",
        }
    }
}

/// A logical operator on booleans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Logic {
    /// `a && b`.
    And,
    /// `a || b`.
    Or,
}

/// How a reduction combines its terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// `sum(...)`: 0 when empty.
    Sum,
    /// `prod(...)`: 1 when empty.
    Prod,
    /// `min(...)`: +inf when empty.
    Min,
    /// `max(...)`: -inf when empty.
    Max,
}

impl Reduce {
    /// The reduction's name in the language.
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Sum => "sum",
            Reduce::Prod => "prod",
            Reduce::Min => "min",
            Reduce::Max => "max",
        }
    }

    /// The value of a reduction over no terms.
    pub fn identity(self) -> f32 {
        match self {
            Reduce::Sum => 0.0,
            Reduce::Prod => 1.0,
            Reduce::Min => f32::INFINITY,
            Reduce::Max => f32::NEG_INFINITY,
        }
    }

    /// Two partial values combined in `f32`: terms, or totals of runs of terms. A NaN makes a min or max NaN, unlike
    /// the binary `min` and `max`.
    ///
    /// ```
    /// use gpuworthy_core::expr::Reduce;
    ///
    /// assert_eq!(Reduce::Sum.combine(1.5, 2.0), 3.5);
    /// assert!(Reduce::Max.combine(1.0, f32::NAN).is_nan());
    /// ```
    pub fn combine(self, total: f32, term: f32) -> f32 {
        match self {
            Reduce::Sum => total + term,
            Reduce::Prod => total * term,
            Reduce::Min if term.is_nan() || total.is_nan() => f32::NAN,
            Reduce::Max if term.is_nan() || total.is_nan() => f32::NAN,
            Reduce::Min => total.min(term),
            Reduce::Max => total.max(term),
        }
    }
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A number.
    Const(f32),
    /// A name the expression reads but does not assign, before binding says whether it is an array or a scalar: the
    /// index into [`Graph::operands`].
    Operand(usize),
    /// Element `i` of input array `k` (after binding).
    Input(usize),
    /// Scalar `k` (after binding).
    Scalar(usize),
    /// The value of the reduction, in the post-map of a reduction output.
    Reduced,
    /// `-a`.
    Neg(NodeId),
    /// `!a`, of a boolean.
    Not(NodeId),
    /// `a op b`.
    Arith(Arith, NodeId, NodeId),
    /// `a op b`, a boolean.
    Compare(Compare, NodeId, NodeId),
    /// `a op b` of booleans.
    Logic(Logic, NodeId, NodeId),
    /// `f(args)`.
    Call(Func, Vec<NodeId>),
}

impl Node {
    /// The nodes this one reads, in order (none for a leaf).
    pub fn operands(&self) -> Vec<NodeId> {
        match self {
            Node::Neg(a) | Node::Not(a) => vec![*a],
            Node::Arith(_, a, b) | Node::Compare(_, a, b) | Node::Logic(_, a, b) => vec![*a, *b],
            Node::Call(_, args) => args.clone(),
            Node::Const(_) | Node::Operand(_) | Node::Input(_) | Node::Scalar(_) | Node::Reduced => Vec::new(),
        }
    }
}

/// The type of a node: the language has numbers (`f32`) and booleans, and a boolean is not a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// An `f32`.
    Number,
    /// The value of a comparison or a logical operator.
    Boolean,
}

/// An elementwise output: array `name` gets `node` at every element.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The output's name.
    pub name: String,
    /// Its value.
    pub node: NodeId,
    /// Where the output was assigned.
    pub span: Span,
}

/// A reduction output: `name = post(reduce(body))`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reduction {
    /// The output's name.
    pub name: String,
    /// How the terms combine.
    pub kind: Reduce,
    /// The term at each element (a number).
    pub body: NodeId,
    /// The output, a function of [`Node::Reduced`], scalars and numbers (just `Reduced` when there is no post-map).
    pub post: NodeId,
    /// Where the output was assigned.
    pub span: Span,
}

/// An expression's graph: every node once, in an order where each node's operands come before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The type of each node.
    pub types: Vec<Type>,
    /// The names read but not assigned (or read in the statement that assigns them, which updates them in place),
    /// in the order first read, with where.
    pub operands: Vec<(String, Span)>,
    /// The elementwise outputs, in the order assigned.
    pub outputs: Vec<Output>,
    /// The reduction output, when there is one (then it is the only output).
    pub reduction: Option<Reduction>,
}

/// The largest constant integer exponent of `pow` that parsing lowers to multiplication (`pow(x, 3)` is `x * x * x`,
/// `pow(x, -2)` is `1 / (x * x)`, `pow(x, 0)` is 1): up to `x^4` the products' roundings (1.5 units of `2^-24`
/// relative at most) stay within `pow`'s own bound.
pub const MAX_POW_BY_MULTIPLICATION: f32 = 4.0;

/// The constants of the language.
const CONSTANTS: [(&str, f32); 3] = [("pi", std::f32::consts::PI), ("inf", f32::INFINITY), ("nan", f32::NAN)];

/// The names a user may not assign or read as an array.
fn reserved(name: &str) -> Option<&'static str> {
    if name == "let" {
        Some("`let` starts a temporary")
    } else if name == "f64" || name == "double" {
        Some("f64 is not supported: every number is f32 (WGSL has no f64)")
    } else if CONSTANTS.iter().any(|(c, _)| *c == name) {
        Some("it is a constant")
    } else if Func::ALL.iter().any(|(_, f, _)| *f == name) || ["sum", "prod"].contains(&name) {
        Some("it is a function")
    } else {
        None
    }
}

/// What a name stands for while the statements are lowered.
#[derive(Debug, Clone, Copy)]
enum Binding {
    Let(NodeId),
    Output(NodeId),
    /// A name read but not (yet) assigned: operand `k`, first read in statement `statement`.
    Operand {
        index: usize,
        statement: usize,
    },
}

/// Where a sub-expression is being lowered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Inside a `let`, or an elementwise context: no reduction allowed.
    Elementwise,
    /// The right-hand side of an output, outside any reduction: one reduction allowed.
    OutputTop,
    /// Inside a reduction's body.
    InReduction,
}

struct Lowering {
    graph: Graph,
    names: Vec<(String, Binding)>,
    statement: usize,
    /// The reduction found in the current statement: kind, body.
    found: Option<(Reduce, NodeId, Span)>,
}

/// Lowers parsed statements to a typed graph, checking every rule of the language that does not depend on which
/// names are scalars.
pub(crate) fn lower(statements: &[Statement]) -> Result<Graph, ExprError> {
    let mut lowering = Lowering {
        graph: Graph {
            nodes: Vec::new(),
            types: Vec::new(),
            operands: Vec::new(),
            outputs: Vec::new(),
            reduction: None,
        },
        names: Vec::new(),
        statement: 0,
        found: None,
    };
    for (index, statement) in statements.iter().enumerate() {
        lowering.statement = index;
        lowering.statement(statement)?;
    }
    let graph = lowering.graph;
    if graph.reduction.is_some() && !graph.outputs.is_empty() {
        let span = graph.outputs[0].span;
        return Err(ExprError::at(
            span,
            "a reduction must be the only output: compute elementwise outputs in another expression",
        ));
    }
    if graph.outputs.is_empty() && graph.reduction.is_none() {
        let span = statements.last().map_or(Span::default(), |s| s.name_span);
        return Err(ExprError::at(span, "the expression has no output: only `let` temporaries are assigned"));
    }
    Ok(graph)
}

impl Lowering {
    fn lookup(&self, name: &str) -> Option<Binding> {
        self.names.iter().rev().find(|(n, _)| n == name).map(|(_, b)| *b)
    }

    fn push(&mut self, node: Node, ty: Type, span: Span) -> Result<NodeId, ExprError> {
        if self.graph.nodes.len() >= MAX_NODES {
            return Err(ExprError::at(span, format!("the expression is too large: the limit is {MAX_NODES} nodes")));
        }
        self.graph.nodes.push(node);
        self.graph.types.push(ty);
        Ok(self.graph.nodes.len() - 1)
    }

    fn statement(&mut self, statement: &Statement) -> Result<(), ExprError> {
        let name = statement.name.as_str();
        let span = statement.name_span;
        if let Some(why) = reserved(name) {
            return Err(ExprError::at(span, format!("`{name}` cannot be assigned: {why}")));
        }
        match self.lookup(name) {
            Some(Binding::Let(_)) => {
                return Err(ExprError::at(span, format!("`{name}` is already a temporary: choose another name")));
            }
            Some(Binding::Output(_)) => {
                return Err(ExprError::at(span, format!("`{name}` is assigned twice: an output is assigned once")));
            }
            Some(Binding::Operand { .. }) if statement.is_let => {
                return Err(ExprError::at(
                    span,
                    format!("`{name}` is read before this `let` defines it: define a temporary before using it"),
                ));
            }
            Some(Binding::Operand { statement: read, .. }) if read < self.statement => {
                return Err(ExprError::at(
                    span,
                    format!(
                        "`{name}` is read by statement {} before this statement assigns it: to update an input in \
                         place, read and assign it in one statement (`{name} = a * x + {name}`)",
                        read + 1
                    ),
                ));
            }
            _ => {}
        }
        self.found = None;
        let place = if statement.is_let { Place::Elementwise } else { Place::OutputTop };
        let value = self.value(&statement.value, place)?;
        if self.graph.types[value] == Type::Boolean {
            return Err(ExprError::at(
                statement.value.1,
                format!("`{name}` would be a boolean, and a boolean is not a number: write `where(condition, 1, 0)`"),
            ));
        }
        if statement.is_let {
            self.names.push((name.to_owned(), Binding::Let(value)));
            return Ok(());
        }
        self.names.push((name.to_owned(), Binding::Output(value)));
        match self.found.take() {
            Some((kind, body, _)) => {
                if self.graph.reduction.is_some() {
                    return Err(ExprError::at(span, "an expression has at most one reduction output"));
                }
                self.graph.reduction = Some(Reduction { name: name.to_owned(), kind, body, post: value, span });
            }
            None => self.graph.outputs.push(Output { name: name.to_owned(), node: value, span }),
        }
        Ok(())
    }

    fn number(&self, (_, span): &(Ast, Span), id: NodeId, what: &str) -> Result<NodeId, ExprError> {
        if self.graph.types[id] == Type::Boolean {
            return Err(ExprError::at(
                *span,
                format!("{what} is a boolean, and a boolean is not a number: write `where(condition, 1, 0)`"),
            ));
        }
        Ok(id)
    }

    fn boolean(&self, span: Span, id: NodeId, what: &str) -> Result<NodeId, ExprError> {
        if self.graph.types[id] == Type::Number {
            return Err(ExprError::at(span, format!("{what} must be a boolean (a comparison such as `x > 0`)")));
        }
        Ok(id)
    }

    fn value(&mut self, value: &(Ast, Span), place: Place) -> Result<NodeId, ExprError> {
        let (ast, span) = value;
        let span = *span;
        match ast {
            Ast::Number(v) => {
                let f = *v as f32;
                if v.is_finite() && f.is_infinite() {
                    return Err(ExprError::at(
                        span,
                        format!("{v} does not fit in an f32 (the largest is about 3.4e38)"),
                    ));
                }
                self.push(Node::Const(f), Type::Number, span)
            }
            Ast::Name(name) => self.name(name, span),
            Ast::Unary(op, operand) => {
                let inner = self.value(operand, place)?;
                if *op == "!" {
                    let inner = self.boolean(operand.1, inner, "the operand of `!`")?;
                    self.push(Node::Not(inner), Type::Boolean, span)
                } else {
                    let inner = self.number(operand, inner, "the operand of `-`")?;
                    self.push(Node::Neg(inner), Type::Number, span)
                }
            }
            Ast::Binary(op, left, right) => {
                let a = self.value(left, place)?;
                let b = self.value(right, place)?;
                let arith = match *op {
                    "+" => Some(Arith::Add),
                    "-" => Some(Arith::Sub),
                    "*" => Some(Arith::Mul),
                    "/" => Some(Arith::Div),
                    _ => None,
                };
                if let Some(arith) = arith {
                    let a = self.number(left, a, &format!("the left side of `{op}`"))?;
                    let b = self.number(right, b, &format!("the right side of `{op}`"))?;
                    return self.push(Node::Arith(arith, a, b), Type::Number, span);
                }
                let logic = match *op {
                    "&&" => Some(Logic::And),
                    "||" => Some(Logic::Or),
                    _ => None,
                };
                if let Some(logic) = logic {
                    let a = self.boolean(left.1, a, &format!("the left side of `{op}`"))?;
                    let b = self.boolean(right.1, b, &format!("the right side of `{op}`"))?;
                    return self.push(Node::Logic(logic, a, b), Type::Boolean, span);
                }
                let compare = match *op {
                    "<" => Compare::Lt,
                    "<=" => Compare::Le,
                    ">" => Compare::Gt,
                    ">=" => Compare::Ge,
                    "==" => Compare::Eq,
                    _ => Compare::Ne,
                };
                let a = self.number(left, a, &format!("the left side of `{op}`"))?;
                let b = self.number(right, b, &format!("the right side of `{op}`"))?;
                self.push(Node::Compare(compare, a, b), Type::Boolean, span)
            }
            Ast::Call(name, name_span, args) => self.call(name, *name_span, args, span, place),
        }
    }

    fn name(&mut self, name: &str, span: Span) -> Result<NodeId, ExprError> {
        if let Some((_, value)) = CONSTANTS.iter().find(|(c, _)| *c == name) {
            return self.push(Node::Const(*value), Type::Number, span);
        }
        if let Some(why) = reserved(name) {
            let hint = if why.contains("function") { format!(": call it, as `{name}(x)`") } else { String::new() };
            return Err(ExprError::at(span, format!("`{name}` is not a value: {why}{hint}")));
        }
        match self.lookup(name) {
            Some(Binding::Let(id) | Binding::Output(id)) => Ok(id),
            Some(Binding::Operand { index, .. }) => self.push(Node::Operand(index), Type::Number, span),
            None => {
                let index = self.graph.operands.len();
                self.graph.operands.push((name.to_owned(), span));
                self.names.push((name.to_owned(), Binding::Operand { index, statement: self.statement }));
                self.push(Node::Operand(index), Type::Number, span)
            }
        }
    }

    fn call(
        &mut self,
        name: &str,
        name_span: Span,
        args: &[(Ast, Span)],
        span: Span,
        place: Place,
    ) -> Result<NodeId, ExprError> {
        let reduce = match (name, args.len()) {
            ("sum", _) => Some(Reduce::Sum),
            ("prod", _) => Some(Reduce::Prod),
            ("min", 1) => Some(Reduce::Min),
            ("max", 1) => Some(Reduce::Max),
            _ => None,
        };
        if let Some(kind) = reduce {
            if args.len() != 1 {
                return Err(ExprError::at(span, format!("`{name}` reduces one value: `{name}(x * y)`")));
            }
            match place {
                Place::Elementwise => {
                    return Err(ExprError::at(
                        span,
                        format!(
                            "`{name}(...)` reduces an array to one value: it can only be an output's value (or \
                                 inside a function of it), not part of a `let` or an elementwise value"
                        ),
                    ));
                }
                Place::InReduction => {
                    return Err(ExprError::at(span, format!("`{name}(...)` cannot be inside another reduction")));
                }
                Place::OutputTop if self.found.is_some() => {
                    return Err(ExprError::at(span, "an output has at most one reduction"));
                }
                Place::OutputTop => {}
            }
            let body = self.value(&args[0], Place::InReduction)?;
            let body = self.number(&args[0], body, &format!("the value `{name}` reduces"))?;
            self.found = Some((kind, body, span));
            return self.push(Node::Reduced, Type::Number, span);
        }
        let Some(&(func, _, arity)) = Func::ALL.iter().find(|(_, f, _)| *f == name) else {
            let known: Vec<&str> = Func::ALL.iter().map(|(_, f, _)| *f).chain(["sum", "prod"]).collect();
            return Err(ExprError::at(
                name_span,
                format!("unknown function `{name}`: the functions are {}", known.join(", ")),
            ));
        };
        if args.len() != arity {
            let plural = if arity == 1 { "" } else { "s" };
            return Err(ExprError::at(span, format!("`{name}` takes {arity} argument{plural}, not {}", args.len())));
        }
        let mut ids = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            // A reduction may sit inside a function at an output's top (`sqrt(sum(x * x))`): the place carries.
            let id = self.value(arg, place)?;
            let id = if func == Func::Where && i == 0 {
                self.boolean(arg.1, id, "the first argument of `where`")?
            } else {
                self.number(arg, id, &format!("argument {} of `{name}`", i + 1))?
            };
            ids.push(id);
        }
        if func == Func::Pow
            && let Node::Const(exponent) = self.graph.nodes[ids[1]]
            && exponent.fract() == 0.0
            && exponent.abs() <= MAX_POW_BY_MULTIPLICATION
        {
            return self.power_by_multiplication(ids[0], exponent as i32, span);
        }
        self.push(Node::Call(func, ids), Type::Number, span)
    }

    /// `pow(x, n)` for a constant integer `n` with `|n| <=` [`MAX_POW_BY_MULTIPLICATION`], as the language computes
    /// it: 1 for `n = 0` (whatever `x`, NaN included), `x` multiplied by itself (`x * x * x`, `(x * x) * (x * x)`), and
    /// for `n < 0` the reciprocal of that. Every backend computes the same correctly rounded products, with the sign
    /// of `x` to an odd power, so `pow(x, 3)` is as exact as `x * x * x` wherever it runs; a driver's
    /// `exp2(n * log2(|x|))` is not (Vulkan lets `log2` be 2^-21 off near 1).
    fn power_by_multiplication(&mut self, x: NodeId, n: i32, span: Span) -> Result<NodeId, ExprError> {
        let mul = |lowering: &mut Self, a: NodeId, b: NodeId| {
            lowering.push(Node::Arith(Arith::Mul, a, b), Type::Number, span)
        };
        let power = match n.unsigned_abs() {
            0 => return self.push(Node::Const(1.0), Type::Number, span),
            1 => x,
            2 => mul(self, x, x)?,
            3 => {
                let square = mul(self, x, x)?;
                mul(self, square, x)?
            }
            _ => {
                let square = mul(self, x, x)?;
                mul(self, square, square)?
            }
        };
        if n > 0 {
            return Ok(power);
        }
        let one = self.push(Node::Const(1.0), Type::Number, span)?;
        self.push(Node::Arith(Arith::Div, one, power), Type::Number, span)
    }
}
