//! The text of an expression: tokens, and a recursive-descent parser into a syntax tree with the byte span of every
//! part, so that every later error can point at the text.
//!
//! Written by hand rather than generated: the grammar is a dozen rules, and the parser must refuse every input with a
//! clear message and never panic or overflow its stack (nesting is bounded by [`super::limits::MAX_DEPTH`]).

use super::ExprError;
use super::limits::{MAX_DEPTH, MAX_SOURCE_BYTES, MAX_STATEMENTS};

/// A byte range of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    Number(f64),
    Name(String),
    Symbol(&'static str),
    /// The end of a statement: `;` or a line break.
    End,
    Eof,
}

const SYMBOLS: [&str; 18] =
    ["<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "(", ")", ",", "=", "<", ">", "!", ";"];

/// Splits `source` into tokens with their spans.
pub(crate) fn tokens(source: &str) -> Result<Vec<(Token, Span)>, ExprError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(ExprError::at(
            Span { start: MAX_SOURCE_BYTES, end: source.len() },
            format!("the expression is {} bytes long; the limit is {MAX_SOURCE_BYTES} bytes", source.len()),
        ));
    }
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'\n' {
            out.push((Token::End, Span { start, end: i + 1 }));
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let mut end = i;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            let span = Span { start, end };
            let text = &source[start..i];
            if end > i {
                let suffix = &source[i..end];
                let why = if suffix.eq_ignore_ascii_case("f64") {
                    "f64 numbers are not supported: every number is f32 (WGSL has no f64)".to_owned()
                } else {
                    format!("`{}` is not a number: a number is written like 2, 0.5 or 1e-3", &source[start..end])
                };
                return Err(ExprError::at(span, why));
            }
            let value: f64 = text
                .parse()
                .map_err(|_| ExprError::at(span, format!("`{text}` is not a number: write it like 2, 0.5 or 1e-3")))?;
            out.push((Token::Number(value), span));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((Token::Name(source[start..i].to_owned()), Span { start, end: i }));
        } else if let Some(symbol) = SYMBOLS.iter().find(|s| source[i..].starts_with(**s)) {
            i += symbol.len();
            let token = if *symbol == ";" { Token::End } else { Token::Symbol(symbol) };
            out.push((token, Span { start, end: i }));
        } else {
            let ch = source[i..].chars().next().unwrap_or('?');
            return Err(ExprError::at(
                Span { start, end: start + ch.len_utf8() },
                format!("unexpected character `{ch}`: expressions use names, numbers, + - * /, comparisons, && || !"),
            ));
        }
    }
    out.push((Token::Eof, Span { start: source.len(), end: source.len() }));
    Ok(out)
}

/// A node of the syntax tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ast {
    Number(f64),
    Name(String),
    Unary(&'static str, Box<(Ast, Span)>),
    Binary(&'static str, Box<(Ast, Span)>, Box<(Ast, Span)>),
    Call(String, Span, Vec<(Ast, Span)>),
}

/// One statement: `let name = value`, or `name = value`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statement {
    pub(crate) is_let: bool,
    pub(crate) name: String,
    pub(crate) name_span: Span,
    pub(crate) value: (Ast, Span),
}

/// Parses the statements of `source`.
pub(crate) fn parse(source: &str) -> Result<Vec<Statement>, ExprError> {
    let tokens = tokens(source)?;
    let mut parser = Parser { tokens, at: 0, depth: 0 };
    let mut statements = Vec::new();
    loop {
        while parser.peek() == &Token::End {
            parser.at += 1;
        }
        if parser.peek() == &Token::Eof {
            break;
        }
        if statements.len() == MAX_STATEMENTS {
            return Err(ExprError::at(parser.span(), format!("too many statements: the limit is {MAX_STATEMENTS}")));
        }
        statements.push(parser.statement()?);
        match parser.peek() {
            Token::End | Token::Eof => {}
            _ => return Err(ExprError::at(parser.span(), "expected `;` or a new line after the statement")),
        }
    }
    if statements.is_empty() {
        return Err(ExprError::at(
            Span { start: 0, end: source.len() },
            "the expression assigns nothing: write an output, e.g. `y = 2 * x`",
        ));
    }
    Ok(statements)
}

struct Parser {
    tokens: Vec<(Token, Span)>,
    at: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.at.min(self.tokens.len() - 1)].0
    }

    fn span(&self) -> Span {
        self.tokens[self.at.min(self.tokens.len() - 1)].1
    }

    fn next(&mut self) -> (Token, Span) {
        let token = self.tokens[self.at.min(self.tokens.len() - 1)].clone();
        self.at = (self.at + 1).min(self.tokens.len() - 1);
        token
    }

    fn eat(&mut self, symbol: &str) -> bool {
        if matches!(self.peek(), Token::Symbol(s) if *s == symbol) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, symbol: &str, what: &str) -> Result<Span, ExprError> {
        let span = self.span();
        if self.eat(symbol) { Ok(span) } else { Err(ExprError::at(span, format!("expected `{symbol}` {what}"))) }
    }

    fn statement(&mut self) -> Result<Statement, ExprError> {
        let is_let = matches!(self.peek(), Token::Name(n) if n == "let");
        if is_let {
            self.at += 1;
        }
        let (token, name_span) = self.next();
        let Token::Name(name) = token else {
            let what = if is_let { "a name after `let`" } else { "a statement: `name = value` or `let name = value`" };
            return Err(ExprError::at(name_span, format!("expected {what}")));
        };
        if !is_let && !matches!(self.peek(), Token::Symbol("=")) {
            return Err(ExprError::at(
                self.span(),
                format!("expected `=` after `{name}`: a statement assigns a value (`{name} = ...`)"),
            ));
        }
        self.expect("=", &format!("after `{name}`"))?;
        let value = self.expression()?;
        Ok(Statement { is_let, name, name_span, value })
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ExprError::at(
                self.span(),
                format!("the expression nests too deeply: the limit is {MAX_DEPTH}"),
            ));
        }
        Ok(())
    }

    fn expression(&mut self) -> Result<(Ast, Span), ExprError> {
        self.enter()?;
        let result = self.binary(0);
        self.depth -= 1;
        result
    }

    /// Binary operators by precedence, lowest first; all associate to the left.
    fn binary(&mut self, level: usize) -> Result<(Ast, Span), ExprError> {
        const LEVELS: [&[&str]; 5] = [&["||"], &["&&"], &["==", "!=", "<", "<=", ">", ">="], &["+", "-"], &["*", "/"]];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Token::Symbol(symbol) = *self.peek() {
            if !LEVELS[level].contains(&symbol) {
                break;
            }
            self.at += 1;
            let right = self.binary(level + 1)?;
            if level == 2 && matches!(&left.0, Ast::Binary(op, ..) if LEVELS[2].contains(op)) {
                return Err(ExprError::at(left.1.to(right.1), "comparisons do not chain: write `a < b && b < c`"));
            }
            let span = left.1.to(right.1);
            left = (Ast::Binary(symbol, Box::new(left), Box::new(right)), span);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<(Ast, Span), ExprError> {
        let start = self.span();
        for symbol in ["-", "!", "+"] {
            if self.eat(symbol) {
                self.enter()?;
                let operand = self.unary();
                self.depth -= 1;
                let operand = operand?;
                let span = start.to(operand.1);
                return Ok(if symbol == "+" { operand } else { (Ast::Unary(symbol, Box::new(operand)), span) });
            }
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<(Ast, Span), ExprError> {
        let (token, span) = self.next();
        match token {
            Token::Number(value) => Ok((Ast::Number(value), span)),
            Token::Name(name) if matches!(self.peek(), Token::Symbol("(")) => {
                self.at += 1;
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.expression()?);
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",", &format!("or `)` between the arguments of `{name}`"))?;
                    }
                }
                let end = self.tokens[self.at.saturating_sub(1)].1;
                Ok((Ast::Call(name, span, args), span.to(end)))
            }
            Token::Name(name) => Ok((Ast::Name(name), span)),
            Token::Symbol("(") => {
                let inner = self.expression()?;
                self.expect(")", "to close the parenthesis")?;
                Ok(inner)
            }
            Token::End | Token::Eof => Err(ExprError::at(span, "expected a value: a number, a name or `(`")),
            Token::Symbol(symbol) => {
                Err(ExprError::at(span, format!("expected a value (a number, a name or `(`), found `{symbol}`")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_on_semicolons_and_lines_and_comments_are_skipped() {
        let statements = parse("let t = x - m; y = t * t  # squared\n\nz = -y").unwrap();
        let names: Vec<(&str, bool)> = statements.iter().map(|s| (s.name.as_str(), s.is_let)).collect();
        assert_eq!(names, [("t", true), ("y", false), ("z", false)]);
    }

    #[test]
    fn precedence_is_arithmetic_then_comparison_then_logic() {
        let statements = parse("y = a + b * c < d || e").unwrap();
        let Ast::Binary("||", left, _) = &statements[0].value.0 else { panic!("{:?}", statements[0].value) };
        let Ast::Binary("<", sum, _) = &left.0 else { panic!("{left:?}") };
        assert!(matches!(&sum.0, Ast::Binary("+", _, product) if matches!(product.0, Ast::Binary("*", ..))));
    }

    #[test]
    fn errors_point_at_the_text() {
        for (source, at, says) in [
            ("y = 2 * ", 8, "expected a value"),
            ("y = (x + 1", 10, "close the parenthesis"),
            ("y = x $ 2", 6, "unexpected character `$`"),
            ("y = 2.0f64 * x", 4, "f64"),
            ("y = 1 < x < 2", 4, "do not chain"),
            ("y x", 2, "expected `=`"),
            ("y = f(x,", 8, "expected a value"),
        ] {
            let err = parse(source).unwrap_err();
            assert_eq!(err.span.start, at, "{source}: {err:?}");
            assert!(err.message.contains(says), "{source}: {}", err.message);
        }
    }

    #[test]
    fn nesting_and_length_are_limited_without_overflowing_the_stack() {
        let deep = format!("y = {}x{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(parse(&deep).unwrap_err().message.contains("limit"));
        let negations = format!("y = {}x", "-".repeat(20_000));
        assert!(parse(&negations).unwrap_err().message.contains("limit"));
        let many = "y = x;".repeat(MAX_STATEMENTS + 1);
        assert!(parse(&many).unwrap_err().message.contains("statements"));
    }
}
