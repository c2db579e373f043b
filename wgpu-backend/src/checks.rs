//! Which of wgpu's run-time shader checks the backend compiles into its shaders.
//!
//! wgpu makes any shader safe to run, whatever its indices and loops do, by rewriting it: every array index is
//! clamped to the array, every integer division is guarded against a zero divisor, and every loop gets a counter
//! that ends it after 2^64 iterations. The first two cost little. The loop counter is what costs: it hides a loop's
//! constant trip count from the driver's compiler, which then cannot unroll it. On an H200 it made loop-heavy kernels
//! (`stencil naive`, `matmul tiled` and `naive`) several times slower, while dropping the index clamps and
//! division guards as well saved nothing measurable on most kernels (measured:
//! docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
//!
//! Every loop in `shaders/` ends by construction, so the backend drops loop bounding and keeps the rest
//! ([`ShaderChecks::DEFAULT`]). `GPUWORTHY_WGPU_CHECKS` chooses otherwise, to measure what each check costs:
//! `all` (wgpu's default), `none`, or a comma-separated list of `bounds`, `loops` and `division`.
//! `GPUWORTHY_WGPU_UNCHECKED=1` (or `true`, `yes`, `on`) is the same as `none`. Unset or empty means the default.

use std::fmt;
use std::str::FromStr;

use gpuworthy_core::{Result, env};

/// The run-time checks compiled into the shaders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShaderChecks {
    /// Clamp every array index to its array.
    pub bounds: bool,
    /// Bound every loop with an iteration counter.
    pub loops: bool,
    /// Guard integer division and remainder against zero divisors and overflow.
    pub division: bool,
}

impl ShaderChecks {
    /// The backend's default: index clamps and division guards, no loop bounding.
    pub const DEFAULT: ShaderChecks = ShaderChecks { bounds: true, loops: false, division: true };
    /// Every check: wgpu's own default for untrusted shaders.
    pub const ALL: ShaderChecks = ShaderChecks { bounds: true, loops: true, division: true };
    /// No check: the shaders' own index tests are all that guards their memory accesses.
    pub const NONE: ShaderChecks = ShaderChecks { bounds: false, loops: false, division: false };

    /// The checks chosen by `GPUWORTHY_WGPU_CHECKS` (or `GPUWORTHY_WGPU_UNCHECKED=1`), else [`Self::DEFAULT`].
    ///
    /// Returns [`gpuworthy_core::Error::InvalidInput`] naming the accepted words when the variable holds anything else.
    pub fn from_env() -> Result<Self> {
        const CHECKS: &str = "GPUWORTHY_WGPU_CHECKS";
        if let Some(text) = env::read(CHECKS)? {
            return text.parse().map_err(|_| {
                env::invalid_value(CHECKS, &text, "all, none, or a comma-separated list of bounds, loops, division")
            });
        }
        match env::read_flag("GPUWORTHY_WGPU_UNCHECKED")? {
            Some(true) => Ok(Self::NONE),
            _ => Ok(Self::DEFAULT),
        }
    }

    /// wgpu's form of these checks.
    pub fn runtime_checks(self) -> wgpu::ShaderRuntimeChecks {
        let mut checks = wgpu::ShaderRuntimeChecks::checked();
        checks.bounds_checks = self.bounds;
        checks.force_loop_bounding = self.loops;
        checks.int_div_checks = self.division;
        checks
    }
}

impl Default for ShaderChecks {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl FromStr for ShaderChecks {
    type Err = String;

    /// `all`, `none`, or a comma-separated list of `bounds`, `loops` and `division`.
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let text = text.trim().to_ascii_lowercase();
        match text.as_str() {
            "all" => return Ok(Self::ALL),
            "none" => return Ok(Self::NONE),
            _ => {}
        }
        let mut checks = Self::NONE;
        for word in text.split(',').map(str::trim) {
            match word {
                "bounds" => checks.bounds = true,
                "loops" => checks.loops = true,
                "division" => checks.division = true,
                other => {
                    return Err(format!(
                        "unknown check `{other}`: expected all, none, or a list of bounds, loops, division"
                    ));
                }
            }
        }
        Ok(checks)
    }
}

impl fmt::Display for ShaderChecks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept: Vec<&str> = [(self.bounds, "bounds"), (self.loops, "loops"), (self.division, "division")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        if kept.is_empty() { f.write_str("none") } else { f.write_str(&kept.join(", ")) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_and_prints_back() {
        assert_eq!("all".parse(), Ok(ShaderChecks::ALL));
        assert_eq!("none".parse(), Ok(ShaderChecks::NONE));
        assert_eq!("bounds, division".parse(), Ok(ShaderChecks::DEFAULT));
        assert_eq!("loops".parse(), Ok(ShaderChecks { bounds: false, loops: true, division: false }));
        for checks in [ShaderChecks::ALL, ShaderChecks::NONE, ShaderChecks::DEFAULT] {
            assert_eq!(checks.to_string().parse(), Ok(checks));
        }
        assert_eq!(ShaderChecks::DEFAULT.to_string(), "bounds, division");
    }

    #[test]
    fn unknown_words_are_refused_with_the_accepted_ones() {
        let e = "bounds,speed".parse::<ShaderChecks>().unwrap_err();
        assert!(e.contains("`speed`") && e.contains("bounds, loops, division"), "{e}");
        // Empty is not `none`: an unset or empty variable means the default, which is decided before parsing.
        assert!("".parse::<ShaderChecks>().is_err());
        assert_eq!("ALL".parse(), Ok(ShaderChecks::ALL));
    }
}
