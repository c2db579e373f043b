//! The arithmetic a variant computes in, and what each precision costs in accuracy.
//!
//! A GPU answers the same matmul 8 to 16 times faster when its user accepts TF32, bf16 or fp16 inputs to its tensor
//! cores, so precision is a lever as strong as size. Every precision is named here once, with the unit roundoff its
//! inputs are rounded to and the accumulator it sums in: the checks derive their error bounds from these numbers
//! (`workloads::matmul` writes the argument down), and [`Precision::round`] rounds a value the way such hardware does,
//! so that tests can compute a result in a given precision on any machine and see the check accept or refuse it.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The arithmetic a variant computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// IEEE `f32` throughout (FMA contraction allowed).
    #[default]
    Fp32,
    /// `f32` data whose products a tensor core forms from TF32 (10 explicit mantissa bits), summed in `f32`.
    Tf32,
    /// bfloat16 inputs (8 exponent, 7 mantissa bits: `f32`'s range at a 256th of its precision), `f32` accumulation.
    Bf16,
    /// IEEE half inputs (5 exponent, 10 mantissa bits: TF32's precision, a range of ±65504), `f32` accumulation.
    Fp16,
}

impl Precision {
    /// Every precision, widest first.
    pub const ALL: [Precision; 4] = [Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::Fp16];

    /// The name users pick it by and reports print: `fp32`, `tf32`, `bf16`, `fp16`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
        }
    }

    /// How reports name it: the same as [`Precision::name`].
    pub fn label(self) -> &'static str {
        self.name()
    }

    /// The precision a report names `label` ([`Precision::label`]'s inverse), also reading the labels of reports
    /// written before there were four (`full` for fp32, `reduced (tf32)` for TF32).
    pub fn from_label(label: &str) -> Option<Precision> {
        match label {
            "full" => Some(Precision::Fp32),
            "reduced (tf32)" => Some(Precision::Tf32),
            _ => Precision::ALL.into_iter().find(|p| p.label() == label),
        }
    }

    /// Whether it computes in less than `f32` precision: such variants are checked at a looser bound, labelled in
    /// reports, and never chosen for a caller who did not allow them.
    pub fn is_reduced(self) -> bool {
        self != Precision::Fp32
    }

    /// The unit roundoff of the format the inputs are rounded to before they are multiplied: a value `x` rounded
    /// to it is `x(1 + δ)` with `|δ| ≤ u`. 0 for `f32` (the inputs are used as they are); 2^-11 for fp16 and 2^-8
    /// for bf16 (10 and 7 stored mantissa bits, converted to nearest); 2^-10 for TF32, whose 10 bits a tensor core
    /// may take from raw `f32` operands by truncation (cuBLAS's TF32 kernels are reported to: a directed rounding's
    /// unit roundoff is twice round-to-nearest's).
    pub fn input_unit_roundoff(self) -> f64 {
        match self {
            Precision::Fp32 => 0.0,
            Precision::Fp16 => (2.0f64).powi(-11),
            Precision::Tf32 => (2.0f64).powi(-10),
            Precision::Bf16 => (2.0f64).powi(-8),
        }
    }

    /// The unit roundoff of the accumulator: `f32`'s 2^-24 in every precision here.
    pub fn accumulator_unit_roundoff(self) -> f64 {
        (2.0f64).powi(-24)
    }

    /// The root-mean-square error, relative to the products' norms, that a product with `k`-long sums in this
    /// precision is allowed ([`crate::workloads::check_matmul`]'s whole-result bound, rho): the inputs' rounding
    /// `2u + u²` and the accumulation's (`4√k·v` for `f32` sums rounded to nearest, `k·v` for a tensor core's)
    /// combined, plus the reference's own `v`. What `--tolerance` is compared with: a precision is allowed where this
    /// bound is within the tolerance, and every result a calibration fitted passed its check at this bound.
    pub fn relative_error_bound(self, k: usize) -> f64 {
        let (u, v) = (self.input_unit_roundoff(), self.accumulator_unit_roundoff());
        let sums = if self == Precision::Fp32 { 4.0 * (k as f64).sqrt() * v } else { k as f64 * v };
        (2.0 * u + u * u).hypot(sums) + v
    }

    /// The precisions whose [`Precision::relative_error_bound`] at `k` is within `tolerance`, widest first (`f32`
    /// always: a user's tolerance never takes away the full precision).
    pub fn within_tolerance(tolerance: f64, k: usize) -> Vec<Precision> {
        Precision::ALL.into_iter().filter(|p| *p == Precision::Fp32 || p.relative_error_bound(k) <= tolerance).collect()
    }

    /// The bytes one stored input element takes: 4 for `f32` and TF32 (whose data stays `f32` in memory), 2 for
    /// bf16 and fp16.
    pub fn input_bytes(self) -> u64 {
        match self {
            Precision::Fp32 | Precision::Tf32 => 4,
            Precision::Bf16 | Precision::Fp16 => 2,
        }
    }

    /// What it means, in a phrase for reports and `--help`.
    pub fn describe(self) -> &'static str {
        match self {
            Precision::Fp32 => "f32 arithmetic",
            Precision::Tf32 => "TF32 products (10-bit mantissa), f32 sums",
            Precision::Bf16 => "bf16 inputs (7-bit mantissa), f32 sums",
            Precision::Fp16 => "fp16 inputs (10-bit mantissa, |x| ≤ 65504), f32 sums",
        }
    }

    /// `x` rounded to this precision's input format, to nearest with ties to even, and returned as the `f32` of the
    /// same value (fp16 overflows to ±inf past 65504 and keeps subnormals; NaN stays NaN). What the hardware
    /// multiplies, so that a test can compute a result in this precision on any machine.
    pub fn round(self, x: f32) -> f32 {
        match self {
            Precision::Fp32 => x,
            Precision::Tf32 => round_mantissa(x, 10),
            Precision::Bf16 => round_mantissa(x, 7),
            Precision::Fp16 => half::f16::from_f32(x).to_f32(),
        }
    }

    /// Parses a comma-separated list of precisions (`fp32,tf32,bf16`); empty items are ignored.
    pub fn parse_list(list: &str) -> Result<Vec<Precision>> {
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::parse).collect()
    }
}

/// `x` rounded to `bits` stored mantissa bits (of `f32`'s 23), to nearest with ties to even; NaN and infinities
/// unchanged, a value that rounds past `f32::MAX` becomes infinite (as the hardware's conversions do).
fn round_mantissa(x: f32, bits: u32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let dropped = 23 - bits;
    let raw = x.to_bits();
    let half_ulp = (1u32 << (dropped - 1)) - 1 + ((raw >> dropped) & 1);
    f32::from_bits(raw.wrapping_add(half_ulp) & !((1u32 << dropped) - 1))
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Precision {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let wanted = s.trim().to_ascii_lowercase();
        let alias = match wanted.as_str() {
            "f32" | "float32" => "fp32",
            "f16" | "half" | "float16" => "fp16",
            "bfloat16" => "bf16",
            other => other,
        };
        Precision::ALL
            .into_iter()
            .find(|p| p.name() == alias)
            .ok_or_else(|| Error::invalid(format!("unknown precision `{s}`: expected one of fp32, tf32, bf16, fp16")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_round_trip_and_old_labels_still_read() {
        for p in Precision::ALL {
            assert_eq!(p.name().parse::<Precision>().unwrap(), p);
            assert_eq!(Precision::from_label(p.label()), Some(p));
        }
        assert_eq!(Precision::from_label("full"), Some(Precision::Fp32));
        assert_eq!(Precision::from_label("reduced (tf32)"), Some(Precision::Tf32));
        assert_eq!(Precision::from_label("half"), None);
        assert_eq!("BF16".parse::<Precision>().unwrap(), Precision::Bf16);
        assert_eq!("f16".parse::<Precision>().unwrap(), Precision::Fp16);
        let err = "fp8".parse::<Precision>().unwrap_err().to_string();
        assert!(err.contains("fp8") && err.contains("bf16"), "{err}");
        assert_eq!(
            Precision::parse_list("fp32, tf32,,bf16").unwrap(),
            [Precision::Fp32, Precision::Tf32, Precision::Bf16]
        );
    }

    #[test]
    fn rounding_keeps_the_stored_bits_and_rounds_to_nearest_even() {
        // 1 + 2^-8 is a tie between bf16's 1 and 1 + 2^-7: ties go to the even mantissa, 1.
        assert_eq!(Precision::Bf16.round(1.0 + 2f32.powi(-8)), 1.0);
        // 1 + 3·2^-8 is a tie between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
        assert_eq!(Precision::Bf16.round(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
        assert_eq!(Precision::Bf16.round(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 1.0 + 2f32.powi(-7));
        assert_eq!(Precision::Tf32.round(1.0 + 2f32.powi(-12)), 1.0);
        assert_eq!(Precision::Tf32.round(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
        assert_eq!(Precision::Fp16.round(70000.0), f32::INFINITY);
        assert_eq!(Precision::Bf16.round(f32::MAX), f32::INFINITY);
        assert!(Precision::Tf32.round(f32::NAN).is_nan());
        assert_eq!(Precision::Fp32.round(0.1), 0.1);
        // The relative error never exceeds the unit roundoff.
        for i in 1..2000 {
            let x = (i as f32) * 0.7371 - 713.0;
            for p in Precision::ALL {
                let r = p.round(x) as f64;
                assert!((r - x as f64).abs() <= p.input_unit_roundoff() * (x as f64).abs(), "{p} {x} -> {r}");
            }
        }
    }

    #[test]
    fn a_tolerance_allows_the_precisions_whose_bound_it_covers() {
        // At K = 8192: bf16's bound is about 2^-7, TF32's 2^-9, fp16's 2^-10 (each with the tensor core's k·v).
        let bound = |p: Precision| p.relative_error_bound(8192);
        assert!(bound(Precision::Bf16) > 7.8e-3 && bound(Precision::Bf16) < 8.0e-3, "{}", bound(Precision::Bf16));
        assert!(bound(Precision::Fp32) < 1e-4 && bound(Precision::Fp16) < bound(Precision::Tf32));
        assert_eq!(Precision::within_tolerance(1e-2, 8192), Precision::ALL.to_vec());
        assert_eq!(Precision::within_tolerance(3e-3, 8192), [Precision::Fp32, Precision::Tf32, Precision::Fp16]);
        assert_eq!(Precision::within_tolerance(1e-3, 8192), [Precision::Fp32]);
        assert_eq!(Precision::within_tolerance(0.0, 8192), [Precision::Fp32], "f32 is never taken away");
    }
}
