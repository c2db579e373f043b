//! The storage type of an array: `f32`, or one of the 16-bit formats that halve the bytes a memory-bound kernel moves.
//!
//! Arithmetic stays in `f32` whatever the storage: a kernel widens each element it reads (exactly: every `f16` and
//! `bf16` value is an `f32` value) and rounds each element it writes, to nearest with ties to even, as `__float2half_rn`,
//! `__float2bfloat16_rn`, the CPU's conversions and the generated WGSL all do. The type is separate from
//! [`Precision`](crate::Precision), which names the arithmetic of a matmul's multiplications: data in `bf16` says
//! nothing about how it is multiplied.
//!
//! The encoding and decoding here are the reference every backend's conversions are tested against, and what the
//! CPU uses: `f16` through the `half` crate (the F16C instructions where the CPU has them), `bf16` as `f32`'s upper 16
//! bits, rounded in integer arithmetic so that it vectorises.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// How an array's elements are stored.
///
/// ```
/// use gpuworthy_core::Dtype;
///
/// let bf16: Dtype = "bfloat16".parse()?;
/// assert_eq!((bf16, bf16.bytes()), (Dtype::Bf16, 2));
/// assert_eq!(Dtype::Bf16.round(1.0 + 1.0 / 256.0), 1.0); // a tie, to even
/// assert_eq!(Dtype::F16.round(70000.0), f32::INFINITY); // past f16's largest finite value, 65504
/// assert_eq!(Dtype::F16.decode(Dtype::F16.encode(0.1)), Dtype::F16.round(0.1));
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Dtype {
    /// IEEE binary32: 4 bytes, 24 significant bits.
    #[default]
    F32,
    /// IEEE binary16: 2 bytes, 11 significant bits, largest finite value 65504.
    F16,
    /// bfloat16: 2 bytes, `f32`'s exponent range with 8 significant bits.
    Bf16,
}

impl Dtype {
    /// Every storage type, widest first.
    pub const ALL: [Dtype; 3] = [Dtype::F32, Dtype::F16, Dtype::Bf16];

    /// The name the command line and reports use: `f32`, `f16`, `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
        }
    }

    /// Whether elements are 16 bits wide.
    pub fn is_half(self) -> bool {
        self != Dtype::F32
    }

    /// The relative error of rounding a value in the type's normal range to it: 2^-24, 2^-11, 2^-8.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Dtype::F32 => f64::from(f32::EPSILON) / 2.0,
            Dtype::F16 => 2f64.powi(-11),
            Dtype::Bf16 => 2f64.powi(-8),
        }
    }

    /// `x` rounded to this type, to nearest with ties to even, as an `f32` (f16 overflows to ±inf past 65504 and
    /// keeps its subnormals; NaN stays NaN).
    pub fn round(self, x: f32) -> f32 {
        match self {
            Dtype::F32 => x,
            half => half.decode(half.encode(x)),
        }
    }

    /// The 16 bits of `x` rounded to this type (for `f32`, its upper half: not a use anyone needs, but defined).
    #[inline(always)]
    pub fn encode(self, x: f32) -> u16 {
        match self {
            Dtype::F16 => half::f16::from_f32(x).to_bits(),
            Dtype::Bf16 | Dtype::F32 => bf16_bits(x),
        }
    }

    /// The value of 16 stored bits, exactly, as an `f32`.
    #[inline(always)]
    pub fn decode(self, bits: u16) -> f32 {
        match self {
            Dtype::F16 => half::f16::from_bits(bits).to_f32(),
            Dtype::Bf16 | Dtype::F32 => f32::from_bits(u32::from(bits) << 16),
        }
    }

    /// `values` rounded into `out` (of the same length), element by element as [`Dtype::encode`].
    pub fn encode_slice(self, values: &[f32], out: &mut [u16]) {
        debug_assert_eq!(values.len(), out.len());
        match self {
            Dtype::F16 => {
                use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
                out.reinterpret_cast_mut::<half::f16>().convert_from_f32_slice(values);
            }
            Dtype::Bf16 | Dtype::F32 => out.iter_mut().zip(values).for_each(|(o, &v)| *o = bf16_bits(v)),
        }
    }

    /// `bits` widened into `out` (of the same length), exactly.
    pub fn decode_slice(self, bits: &[u16], out: &mut [f32]) {
        debug_assert_eq!(bits.len(), out.len());
        match self {
            Dtype::F16 => {
                use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
                bits.reinterpret_cast::<half::f16>().convert_to_f32_slice(out);
            }
            Dtype::Bf16 | Dtype::F32 => {
                out.iter_mut().zip(bits).for_each(|(o, &b)| *o = f32::from_bits(u32::from(b) << 16));
            }
        }
    }

    /// Parses a comma-separated list of types (`f32,bf16`); empty items are ignored.
    pub fn parse_list(list: &str) -> Result<Vec<Dtype>> {
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::parse).collect()
    }
}

/// `x` rounded to bfloat16's bits, to nearest with ties to even; a NaN stays a (quiet) NaN, a value that rounds past
/// bf16's largest becomes infinite. Branch-free but for the NaN select, so that a loop of it vectorises.
#[inline(always)]
fn bf16_bits(x: f32) -> u16 {
    let raw = x.to_bits();
    let rounded = raw.wrapping_add(0x7fff + ((raw >> 16) & 1)) >> 16;
    let nan = (raw >> 16) | 0x0040;
    (if x.is_nan() { nan } else { rounded }) as u16
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dtype {
    type Err = Error;

    /// `f32` (`float32`, `fp32`, `float`), `f16` (`float16`, `fp16`, `half`), `bf16` (`bfloat16`), any case.
    fn from_str(s: &str) -> Result<Dtype> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" | "float" => Ok(Dtype::F32),
            "f16" | "fp16" | "float16" | "half" => Ok(Dtype::F16),
            "bf16" | "bfloat16" => Ok(Dtype::Bf16),
            other => Err(Error::invalid(format!("unknown data type `{other}`: the types are f32, f16 and bf16"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each 16-bit type's rounding is `half`'s (the crate's own conversions are IEEE round-to-nearest-even), on
    /// every bf16 and f16 boundary region: ties, overflow, subnormals, signed zeros, infinities and NaN.
    #[test]
    fn rounding_is_to_nearest_even_with_the_types_range() {
        let mut values = vec![0.0f32, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, 1e-8, -6e-8, 3e-5, f32::MAX];
        values.extend([f32::MIN_POSITIVE, 1e-40, f32::INFINITY, f32::NEG_INFINITY, 1.0 + 1.0 / 256.0]);
        values.extend((0..20_000u32).map(|i| f32::from_bits(0x3f80_0000 + i * 13)));
        values.extend((0..20_000u32).map(|i| f32::from_bits(0x3300_0000 + i * 20_011)));
        for &x in &values {
            assert_eq!(Dtype::Bf16.encode(x), half::bf16::from_f32(x).to_bits(), "bf16 of {x:e}");
            assert_eq!(Dtype::F16.encode(x), half::f16::from_f32(x).to_bits(), "f16 of {x:e}");
            for dtype in Dtype::ALL {
                assert_eq!(dtype.round(dtype.round(x)).to_bits(), dtype.round(x).to_bits(), "{dtype} is idempotent");
            }
        }
        assert!(Dtype::Bf16.round(f32::NAN).is_nan() && Dtype::F16.round(f32::NAN).is_nan());
        assert_eq!(Dtype::Bf16.round(f32::MAX), f32::INFINITY);
        assert_eq!((Dtype::F16.round(65519.99), Dtype::F16.round(65520.0)), (65504.0, f32::INFINITY));
    }

    #[test]
    fn slices_convert_as_elements_do() {
        let values: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.377).collect();
        for dtype in [Dtype::F16, Dtype::Bf16] {
            let mut bits = vec![0u16; values.len()];
            dtype.encode_slice(&values, &mut bits);
            let mut back = vec![0f32; values.len()];
            dtype.decode_slice(&bits, &mut back);
            for ((&v, &b), &w) in values.iter().zip(&bits).zip(&back) {
                assert_eq!((b, w), (dtype.encode(v), dtype.round(v)), "{dtype} {v}");
            }
        }
    }

    #[test]
    fn names_parse_and_unknown_ones_are_refused() {
        assert_eq!(Dtype::parse_list("f32, half,BFLOAT16").unwrap(), [Dtype::F32, Dtype::F16, Dtype::Bf16]);
        let err = "fp8".parse::<Dtype>().unwrap_err().to_string();
        assert!(err.contains("fp8") && err.contains("bf16"), "{err}");
        assert_eq!(Dtype::ALL.map(|d| d.to_string().parse::<Dtype>().unwrap()), Dtype::ALL);
    }
}
