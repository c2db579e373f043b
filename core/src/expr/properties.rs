//! Properties of the whole expression pipeline: no input makes the parser panic, random well-typed expressions run
//! in `f32` within the reference's bound, and the check rejects them once one operator, constant, operand or function
//! is changed in a way that changes the result.

use proptest::prelude::*;

use super::random::{ARITH, Bool, COMPARE, FUNCTIONS, Num, Random};
use super::{Expr, Outputs, Reference, check};
use crate::rng;

/// How many places of `num` a mutation can pick.
fn places(num: &Num) -> usize {
    1 + match num {
        Num::X | Num::Y | Num::A | Num::Const(_) => 0,
        Num::Neg(a) => places(a),
        Num::Binary(_, a, b) => places(a) + places(b),
        Num::Call(_, args) => args.iter().map(places).sum(),
        Num::Where(c, a, b) => places_bool(c) + places(a) + places(b),
    }
}

fn places_bool(b: &Bool) -> usize {
    1 + match b {
        Bool::Compare(_, a, c) => places(a) + places(c),
        Bool::Logic(_, a, c) => places_bool(a) + places_bool(c),
        Bool::Not(a) => places_bool(a),
    }
}

/// `num` with the place `at` (in pre-order) changed: another operator, constant, operand or function of its kind.
fn mutate(num: &Num, at: &mut usize) -> Num {
    if *at == 0 {
        *at = usize::MAX;
        return match num {
            Num::X => Num::Y,
            Num::Y => Num::X,
            Num::A => Num::X,
            Num::Const(c) => Num::Const(c * 1.5 + 0.75),
            Num::Neg(a) => (**a).clone(),
            Num::Binary(op, a, b) => {
                let next = ARITH[(ARITH.iter().position(|o| o == op).unwrap_or(0) + 1) % 4];
                Num::Binary(next, a.clone(), b.clone())
            }
            Num::Call(name, args) => {
                let arity = args.len();
                let same: Vec<&str> = FUNCTIONS.iter().filter(|(_, a)| *a == arity).map(|(n, _)| *n).collect();
                let next = same[(same.iter().position(|n| n == name).unwrap_or(0) + 1) % same.len()];
                Num::Call(next, args.clone())
            }
            Num::Where(c, a, b) => Num::Where(c.clone(), b.clone(), a.clone()),
        };
    }
    *at = at.wrapping_sub(1);
    match num {
        Num::X | Num::Y | Num::A | Num::Const(_) => num.clone(),
        Num::Neg(a) => Num::Neg(Box::new(mutate(a, at))),
        Num::Binary(op, a, b) => Num::Binary(op, Box::new(mutate(a, at)), Box::new(mutate(b, at))),
        Num::Call(name, args) => Num::Call(name, args.iter().map(|a| mutate(a, at)).collect()),
        Num::Where(c, a, b) => {
            Num::Where(Box::new(mutate_bool(c, at)), Box::new(mutate(a, at)), Box::new(mutate(b, at)))
        }
    }
}

fn mutate_bool(b: &Bool, at: &mut usize) -> Bool {
    if *at == 0 {
        *at = usize::MAX;
        return match b {
            Bool::Compare(op, a, c) => {
                let next = COMPARE[(COMPARE.iter().position(|o| o == op).unwrap_or(0) + 1) % 6];
                Bool::Compare(next, a.clone(), c.clone())
            }
            Bool::Logic(op, a, c) => Bool::Logic(if *op == "&&" { "||" } else { "&&" }, a.clone(), c.clone()),
            Bool::Not(a) => (**a).clone(),
        };
    }
    *at = at.wrapping_sub(1);
    match b {
        Bool::Compare(op, a, c) => Bool::Compare(op, mutate(a, at), mutate(c, at)),
        Bool::Logic(op, a, c) => Bool::Logic(op, Box::new(mutate_bool(a, at)), Box::new(mutate_bool(c, at))),
        Bool::Not(a) => Bool::Not(Box::new(mutate_bool(a, at))),
    }
}

/// The reference and the `f32` result of `out = num` on `x`, `y` and `a`; `None` when it reads no array.
fn run(num: &Num, x: &[f32], y: &[f32], a: f32) -> Option<(super::Program, Reference, Outputs)> {
    let source = format!("out = {num}");
    let expr = Expr::parse(&source).unwrap_or_else(|e| panic!("{}", e.render(&source)));
    let operands = expr.operands();
    let scalars: Vec<&str> = operands.iter().copied().filter(|n| *n == "a").collect();
    if operands.len() == scalars.len() {
        return None;
    }
    let program = expr.bind(&scalars).unwrap();
    let inputs: Vec<&[f32]> = program.inputs.iter().map(|name| if name == "x" { x } else { y }).collect();
    let values: Vec<f32> = scalars.iter().map(|_| a).collect();
    let reference = program.reference(&inputs, &values).unwrap();
    let outputs = program.interpret(&inputs, &values).unwrap();
    Some((program, reference, outputs))
}

#[test]
fn random_expressions_run_within_their_bound_and_changed_ones_fail_the_check() {
    let n = 64;
    let x: Vec<f32> = rng::uniform_f32(1, 0, n, -2.0, 2.0);
    let y: Vec<f32> = rng::uniform_f32(1, 1, n, -2.0, 2.0);
    let (mut tried, mut changed, mut rejected) = (0, 0, 0);
    for seed in 0.. {
        if tried == 400 {
            break;
        }
        let mut random = Random { seed, index: 0 };
        let num = random.num(6);
        let Some((program, reference, outputs)) = run(&num, &x, &y, 0.75) else { continue };
        tried += 1;
        check(&program, &reference, &outputs).unwrap_or_else(|e| panic!("out = {num}: {e}"));
        let mut at = random.below(places(&num));
        let mutant = mutate(&num, &mut at);
        let Some((_, mutant_reference, mutant_outputs)) = run(&mutant, &x, &y, 0.75) else { continue };
        let (Reference::Elementwise(want), Reference::Elementwise(got)) = (&reference, &mutant_reference) else {
            unreachable!("elementwise")
        };
        // A change that moves some element by more than both bounds together must be caught; one that does not
        // (min(x, x) to max(x, x), a branch not taken) cannot be.
        let distinguishable = want[0].iter().zip(&got[0]).any(|(w, g)| {
            let apart = |a: f64, b: f64| (a - b).abs() > w.error + g.error;
            w.error.is_finite()
                && g.error.is_finite()
                && (w.value.is_nan() != g.value.is_nan()
                    || (!w.value.is_nan() && (w.value.is_infinite() || g.value.is_infinite()) && w.value != g.value)
                    || (w.value.is_finite() && g.value.is_finite() && apart(w.value, g.value)))
        });
        if distinguishable {
            changed += 1;
            if check(&program, &reference, &mutant_outputs).is_err() {
                rejected += 1;
            } else {
                panic!("out = {num}\nchanged to out = {mutant}\npassed the original's check");
            }
        }
    }
    // Of 400, 258 changes move some element beyond both bounds; the rest change nothing a check could see (a
    // branch not taken, a result that is NaN either way).
    assert!(changed >= 200, "only {changed} of 400 changes moved a result beyond its bound");
    assert_eq!(rejected, changed);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Any text at all: an expression or an error that renders, never a panic.
    #[test]
    fn no_text_makes_the_parser_panic(text in any::<String>()) {
        match Expr::parse(&text) {
            Ok(expr) => {
                let _ = expr.bind(&[]);
                let operands: Vec<String> = expr.operands().iter().map(|s| (*s).to_owned()).collect();
                let scalars: Vec<&str> = operands.iter().map(String::as_str).collect();
                let _ = expr.bind(&scalars);
            }
            Err(e) => {
                let _ = e.render(&text);
            }
        }
    }

    /// Text made of the language's own tokens, which reaches deeper into the parser than arbitrary characters.
    #[test]
    fn no_sequence_of_tokens_makes_the_parser_panic(
        tokens in proptest::collection::vec(
            prop::sample::select(vec![
                "x", "y", "a", "let", "t", "=", "+", "-", "*", "/", "(", ")", ",", ";", "\n", "<", "<=", "==", "!=",
                "&&", "||", "!", "sum", "min", "max", "prod", "where", "sqrt", "pow", "fma", "1", "2.5", "1e40",
                "pi", "inf", "nan", "f64", "#", "1.0f64", ".5", "é",
            ]),
            0..40,
        ),
        scalars in proptest::collection::vec(prop::sample::select(vec!["x", "y", "a", "t", "s"]), 0..3),
    ) {
        let text = tokens.join(" ");
        match Expr::parse(&text) {
            Ok(expr) => {
                if let Ok(program) = expr.bind(&scalars) {
                    let x = [1.0f32, -0.0, f32::NAN];
                    let inputs: Vec<&[f32]> = program.inputs.iter().map(|_| &x[..]).collect();
                    let values: Vec<f32> = program.scalars.iter().map(|_| 2.0).collect();
                    let reference = program.reference(&inputs, &values).unwrap();
                    let outputs = program.interpret(&inputs, &values).unwrap();
                    let _ = check(&program, &reference, &outputs);
                }
            }
            Err(e) => {
                let _ = e.render(&text);
            }
        }
    }
}
