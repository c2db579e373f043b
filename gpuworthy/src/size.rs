//! Sizes written the way people say them: `2^20`, `1M`, `65537`, `4096x4096`, `MxKxN`.
//!
//! Each workload's parameters implement [`ParseSize`], so the command-line tool and the benches accept the same
//! spellings. Suffixes are binary (`1K` = 1024, `1M` = 2^20, `1G` = 2^30), because the ladders are powers of two.

use gpuworthy_core::workloads::{HistogramParams, Len, MandelbrotParams, MatmulParams, SaxpyParams, Shape2};
use gpuworthy_core::{Error, Result};

/// Parses one count: `1000`, `2^20`, `64K`, `16M`, `1G`.
///
/// ```
/// use gpuworthy::size::parse_count;
/// assert_eq!(parse_count("2^20").unwrap(), 1 << 20);
/// assert_eq!(parse_count("16M").unwrap(), 16 << 20);
/// assert!(parse_count("sixteen").is_err());
/// ```
pub fn parse_count(s: &str) -> Result<usize> {
    let s = s.trim();
    let bad = || Error::invalid(format!("malformed size `{s}`: expected a number such as 1000, 2^20, 64K or 16M"));
    if let Some((base, exp)) = s.split_once('^') {
        let base: usize = base.trim().parse().map_err(|_| bad())?;
        let exp: u32 = exp.trim().parse().map_err(|_| bad())?;
        return base.checked_pow(exp).ok_or_else(|| Error::invalid(format!("size `{s}` overflows")));
    }
    let (digits, scale) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1usize << 10),
        Some('m' | 'M') => (&s[..s.len() - 1], 1 << 20),
        Some('g' | 'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let value: usize = digits.trim().replace('_', "").parse().map_err(|_| bad())?;
    value.checked_mul(scale).ok_or_else(|| Error::invalid(format!("size `{s}` overflows")))
}

/// Splits `AxB[xC]` into counts.
fn parse_dims(s: &str) -> Result<Vec<usize>> {
    s.split(['x', 'X', '×']).map(parse_count).collect()
}

/// Parameters that can be written as a size on the command line.
pub trait ParseSize: Sized {
    /// What a size looks like for this workload, for error messages and help.
    const FORMS: &'static str;
    /// Parses a size.
    fn parse_size(s: &str) -> Result<Self>;
}

fn wrong_form<T>(s: &str, forms: &str) -> Result<T> {
    Err(Error::invalid(format!("malformed size `{s}`: expected {forms}")))
}

impl ParseSize for Len {
    const FORMS: &'static str = "a length such as 2^24 or 16M";
    fn parse_size(s: &str) -> Result<Self> {
        match parse_dims(s)?.as_slice() {
            [n] => Ok(Len(*n)),
            _ => wrong_form(s, Self::FORMS),
        }
    }
}

impl ParseSize for SaxpyParams {
    const FORMS: &'static str = Len::FORMS;
    fn parse_size(s: &str) -> Result<Self> {
        Len::parse_size(s).map(|n| SaxpyParams::new(n.0))
    }
}

impl ParseSize for HistogramParams {
    const FORMS: &'static str = Len::FORMS;
    fn parse_size(s: &str) -> Result<Self> {
        Len::parse_size(s).map(|n| HistogramParams::new(n.0))
    }
}

impl ParseSize for Shape2 {
    const FORMS: &'static str = "ROWSxCOLS such as 2048x2048, or one side such as 2048";
    fn parse_size(s: &str) -> Result<Self> {
        match parse_dims(s)?.as_slice() {
            [side] => Ok(Shape2::square(*side)),
            [rows, cols] => Ok(Shape2::new(*rows, *cols)),
            _ => wrong_form(s, Self::FORMS),
        }
    }
}

impl ParseSize for MatmulParams {
    const FORMS: &'static str = "MxKxN such as 1024x1024x1024, or one side such as 1024";
    fn parse_size(s: &str) -> Result<Self> {
        match parse_dims(s)?.as_slice() {
            [side] => Ok(MatmulParams::square(*side)),
            [m, k, n] => Ok(MatmulParams::new(*m, *k, *n)),
            _ => wrong_form(s, Self::FORMS),
        }
    }
}

impl ParseSize for MandelbrotParams {
    const FORMS: &'static str = "WIDTHxHEIGHT such as 1024x1024, or one side such as 1024";
    fn parse_size(s: &str) -> Result<Self> {
        match parse_dims(s)?.as_slice() {
            [side] => Ok(MandelbrotParams::new(*side, *side)),
            [width, height] => Ok(MandelbrotParams::new(*width, *height)),
            _ => wrong_form(s, Self::FORMS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses() {
        assert_eq!(parse_count("65537").unwrap(), 65537);
        assert_eq!(parse_count("64K").unwrap(), 65536);
        assert_eq!(parse_count("1_000").unwrap(), 1000);
        assert_eq!(Shape2::parse_size("17x33").unwrap(), Shape2::new(17, 33));
        assert_eq!(Shape2::parse_size("2^11").unwrap(), Shape2::square(2048));
        assert_eq!(MatmulParams::parse_size("1x7x3").unwrap(), MatmulParams::new(1, 7, 3));
        assert_eq!(MandelbrotParams::parse_size("640x480").unwrap().height, 480);
    }

    #[test]
    fn malformed_sizes_are_invalid_input() {
        for bad in ["", "x", "2^", "1.5M", "-3", "2^99", "1x2x3x4"] {
            assert!(Shape2::parse_size(bad).is_err(), "{bad}");
        }
        assert!(Len::parse_size("3x3").is_err());
        assert!(MatmulParams::parse_size("3x3").is_err());
    }
}
