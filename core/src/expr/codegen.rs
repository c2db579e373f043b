//! The lowering of a program to C-like source, written once: every node becomes one named value (`v7`), declared in
//! the graph's order from its operands' names, never from the expression's text (names become indices, numbers their
//! exact bits). A [`Dialect`] supplies only what differs between the languages that read it: the spelling of
//! numbers, operands, operators and each function of the table, the types, the declaration, and the helpers its
//! source starts with. CUDA C and WGSL are dialects in their backends' crates, as cubecl keeps one IR and a compiler
//! per runtime.
//!
//! ```
//! use gpuworthy_core::expr::codegen::{Dialect, statements};
//! use gpuworthy_core::expr::{Expr, Func, Type};
//!
//! /// C with the standard library's functions.
//! struct C;
//! impl Dialect for C {
//!     fn type_name(&self, ty: Type) -> &'static str {
//!         if ty == Type::Boolean { "bool" } else { "float" }
//!     }
//!     fn number(&self, value: f32) -> String {
//!         format!("{value:?}f")
//!     }
//!     fn input(&self, k: usize) -> String {
//!         format!("x{k}")
//!     }
//!     fn scalar(&self, k: usize) -> String {
//!         format!("s{k}")
//!     }
//!     fn call(&self, func: Func, args: &[String]) -> String {
//!         format!("{}f({})", func.name(), args.join(", "))
//!     }
//!     fn declaration(&self, ty: &str, name: &str, value: &str) -> String {
//!         format!("const {ty} {name} = {value};")
//!     }
//! }
//!
//! let program = Expr::parse("y = exp(-x) * a")?.bind(&["a"])?;
//! let body = statements(&C, &program, &program.reached(&[program.outputs[0].node]));
//! assert!(body.contains("const float v2 = expf(v1);"), "{body}");
//! # Ok::<(), gpuworthy_core::expr::ExprError>(())
//! ```

use std::fmt::Write;

use super::{Arith, Compare, Func, Logic, Node, Program, Type};

/// The spelling of one C-like language: what the shared lowering ([`expression`], [`statements`]) asks of it. The
/// defaults are C's (`-a`, `!a`, `a + b`, `a < b`, `a && b`).
pub trait Dialect {
    /// The name of a number's type (`float`, `f32`) or a boolean's.
    fn type_name(&self, ty: Type) -> &'static str;

    /// A number, from its exact bits (no decimal printout, no text of the user's).
    fn number(&self, value: f32) -> String;

    /// The value of input `k` at the element.
    fn input(&self, k: usize) -> String;

    /// Scalar `k`.
    fn scalar(&self, k: usize) -> String;

    /// The reduction's value, in its post-map.
    fn reduced(&self) -> String {
        "reduced".to_owned()
    }

    /// An operand not bound to an input or a scalar, which a bound program never holds: a NaN.
    fn unbound(&self) -> String {
        self.number(f32::NAN)
    }

    /// The name of node `id`'s value.
    fn value(&self, id: usize) -> String {
        format!("v{id}")
    }

    /// `-a`.
    fn neg(&self, a: &str) -> String {
        format!("-{a}")
    }

    /// `!a`, of a boolean.
    fn not(&self, a: &str) -> String {
        format!("!{a}")
    }

    /// `a op b`.
    fn arith(&self, op: Arith, a: &str, b: &str) -> String {
        format!("{a} {} {b}", op.symbol())
    }

    /// `a op b`, a boolean.
    fn compare(&self, op: Compare, a: &str, b: &str) -> String {
        format!("{a} {} {b}", op.symbol())
    }

    /// `a op b` of booleans.
    fn logic(&self, op: Logic, a: &str, b: &str) -> String {
        format!("{a} {} {b}", if op == Logic::And { "&&" } else { "||" })
    }

    /// `func(args)`, from the dialect's table of functions (`where` included).
    fn call(&self, func: Func, args: &[String]) -> String;

    /// The declaration of a value: `ty name = value` as the language writes it, without indentation.
    fn declaration(&self, ty: &str, name: &str, value: &str) -> String;
}

/// The source of node `id`'s value in `dialect`, its operands named by [`Dialect::value`].
pub fn expression<D: Dialect + ?Sized>(dialect: &D, program: &Program, id: usize) -> String {
    let v = |k: &usize| dialect.value(*k);
    match &program.nodes[id] {
        Node::Const(c) => dialect.number(*c),
        Node::Input(k) => dialect.input(*k),
        Node::Scalar(k) => dialect.scalar(*k),
        Node::Reduced => dialect.reduced(),
        Node::Operand(_) => dialect.unbound(),
        Node::Neg(a) => dialect.neg(&v(a)),
        Node::Not(a) => dialect.not(&v(a)),
        Node::Arith(op, a, b) => dialect.arith(*op, &v(a), &v(b)),
        Node::Compare(op, a, b) => dialect.compare(*op, &v(a), &v(b)),
        Node::Logic(op, a, b) => dialect.logic(*op, &v(a), &v(b)),
        Node::Call(func, args) => {
            let args: Vec<String> = args.iter().map(v).collect();
            dialect.call(*func, &args)
        }
    }
}

/// The declarations of the nodes marked in `which`, in the graph's order, one a line, indented by four spaces.
pub fn statements<D: Dialect + ?Sized>(dialect: &D, program: &Program, which: &[bool]) -> String {
    let mut out = String::new();
    for (id, _) in which.iter().enumerate().filter(|(_, used)| **used) {
        let ty = dialect.type_name(program.types[id]);
        let _ = writeln!(out, "    {}", dialect.declaration(ty, &dialect.value(id), &expression(dialect, program, id)));
    }
    out
}
