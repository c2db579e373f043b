//! Random well-typed expressions, for conformance tests and fuzzing: every operator, comparison, logical operator and
//! function of the language, nested to a chosen depth, over the inputs `x` and `y` and the scalar `a`.
//!
//! ```
//! let source = gpuworthy_core::expr::random_expression(7, 4);
//! let expr = gpuworthy_core::expr::Expr::parse(&source).unwrap();
//! assert_eq!(expr.graph().outputs[0].name, "out");
//! ```

use crate::rng;

use super::Func;
use super::functions::FUNCTIONS as TABLE;

/// A random number expression, printed as source text.
#[derive(Debug, Clone)]
pub(crate) enum Num {
    X,
    Y,
    A,
    Const(f32),
    Neg(Box<Num>),
    Binary(&'static str, Box<Num>, Box<Num>),
    Call(&'static str, Vec<Num>),
    Where(Box<Bool>, Box<Num>, Box<Num>),
}

/// A random boolean expression.
#[derive(Debug, Clone)]
pub(crate) enum Bool {
    Compare(&'static str, Num, Num),
    Logic(&'static str, Box<Bool>, Box<Bool>),
    Not(Box<Bool>),
}

pub(crate) const ARITH: [&str; 4] = ["+", "-", "*", "/"];
pub(crate) const COMPARE: [&str; 6] = ["<", "<=", ">", ">=", "==", "!="];
/// The functions a random expression calls, with their arities: every row of the function table but `where`, which
/// takes a boolean and is generated apart.
pub(crate) const FUNCTIONS: [(&str, usize); TABLE.len() - 1] = {
    let mut out = [("", 0); TABLE.len() - 1];
    let (mut i, mut k) = (0, 0);
    while i < TABLE.len() {
        if !matches!(TABLE[i].func, Func::Where) {
            out[k] = (TABLE[i].name, TABLE[i].arity);
            k += 1;
        }
        i += 1;
    }
    out
};

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::X => f.write_str("x"),
            Num::Y => f.write_str("y"),
            Num::A => f.write_str("a"),
            Num::Const(c) => write!(f, "{c:?}"),
            Num::Neg(a) => write!(f, "(-{a})"),
            Num::Binary(op, a, b) => write!(f, "({a} {op} {b})"),
            Num::Call(name, args) => {
                let args: Vec<String> = args.iter().map(ToString::to_string).collect();
                write!(f, "{name}({})", args.join(", "))
            }
            Num::Where(c, a, b) => write!(f, "where({c}, {a}, {b})"),
        }
    }
}

impl std::fmt::Display for Bool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bool::Compare(op, a, b) => write!(f, "({a} {op} {b})"),
            Bool::Logic(op, a, b) => write!(f, "({a} {op} {b})"),
            Bool::Not(a) => write!(f, "!{a}"),
        }
    }
}

/// A deterministic stream of random words.
pub(crate) struct Random {
    pub(crate) seed: u64,
    pub(crate) index: u64,
}

impl Random {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.index += 1;
        (rng::word(self.seed, 7, self.index) % n as u64) as usize
    }

    pub(crate) fn num(&mut self, depth: usize) -> Num {
        if depth == 0 || self.below(4) == 0 {
            return match self.below(5) {
                0 => Num::X,
                1 => Num::Y,
                2 => Num::A,
                _ => Num::Const([0.5, 2.0, 3.0, -1.5, 0.25, 10.0][self.below(6)]),
            };
        }
        match self.below(8) {
            0 => Num::Neg(Box::new(self.num(depth - 1))),
            1..=3 => Num::Binary(ARITH[self.below(4)], Box::new(self.num(depth - 1)), Box::new(self.num(depth - 1))),
            4..=6 => {
                let (name, arity) = FUNCTIONS[self.below(FUNCTIONS.len())];
                Num::Call(name, (0..arity).map(|_| self.num(depth - 1)).collect())
            }
            _ => Num::Where(
                Box::new(self.boolean(depth - 1)),
                Box::new(self.num(depth - 1)),
                Box::new(self.num(depth - 1)),
            ),
        }
    }

    fn boolean(&mut self, depth: usize) -> Bool {
        match if depth == 0 { 0 } else { self.below(4) } {
            0 | 1 => Bool::Compare(
                COMPARE[self.below(6)],
                self.num(depth.saturating_sub(1)),
                self.num(depth.saturating_sub(1)),
            ),
            2 => Bool::Logic(
                ["&&", "||"][self.below(2)],
                Box::new(self.boolean(depth - 1)),
                Box::new(self.boolean(depth - 1)),
            ),
            _ => Bool::Not(Box::new(self.boolean(depth - 1))),
        }
    }
}

/// The source of a random well-typed elementwise expression `out = ...` of depth at most `depth`, reproducibly from
/// `seed`, reading at least one of the arrays `x` and `y` (and perhaps the scalar `a`).
pub fn random_expression(seed: u64, depth: usize) -> String {
    let mut random = Random { seed, index: 0 };
    loop {
        let num = random.num(depth);
        let text = num.to_string();
        let reads_array = super::Expr::parse(&format!("out = {text}"))
            .map(|e| e.operands().iter().any(|o| *o == "x" || *o == "y"))
            .unwrap_or(false);
        if reads_array {
            return format!("out = {text}");
        }
    }
}
