//! Sizes written the way people say them: `2^20`, `1M`, `65537`, `4096x4096`, `MxKxN`.
//!
//! Each workload's parameters implement [`ParseSize`], so the command-line tool and the benches accept the same
//! spellings. Suffixes are binary (`1K` = 1024, `1M` = 2^20, `1G` = 2^30), because the ladders are powers of two.

use gpuworthy_core::workloads::{
    Distribution, HistogramParams, Len, MandelbrotParams, MatmulParams, Region, SaxpyParams, Shape2,
};
use gpuworthy_core::{Error, Result};

/// Parses one count: `1000`, `2^20`, `64K`, `16M`, `1G`.
///
/// ```
/// use gpuworthy::measure::size::parse_count;
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
    /// Sets the workload's own parameters from `options` (histogram's bins and distribution, mandelbrot's region and
    /// iteration limit); an option the workload does not have is an error naming it.
    fn apply(&mut self, options: &WorkloadOptions) -> Result<()> {
        match options.named().first() {
            Some(name) => Err(Error::invalid(format!("{name} does not apply to this workload"))),
            None => Ok(()),
        }
    }
}

/// Which sizes of a workload to measure, as a command line or a program asks for them.
#[derive(Debug, Clone, PartialEq)]
pub enum Ladder {
    /// The workload's full ladder ([`gpuworthy_core::Workload::ladder`]).
    Full,
    /// Its short ladder ([`gpuworthy_core::Workload::quick_ladder`]).
    Quick,
    /// These sizes, written as text ([`ParseSize`]).
    Listed(Vec<String>),
}

/// The sizes to measure and the workload's own parameters to set on each ([`ParseSize::apply`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeRequest {
    /// Which sizes.
    pub ladder: Ladder,
    /// The workload's own parameters (`--bins`, `--region` ...), set on every size.
    pub options: WorkloadOptions,
}

impl SizeRequest {
    /// The workload's full ladder, as the workload defines it.
    pub fn full() -> SizeRequest {
        SizeRequest { ladder: Ladder::Full, options: WorkloadOptions::default() }
    }

    /// The workload's short ladder, as the workload defines it.
    pub fn quick() -> SizeRequest {
        SizeRequest { ladder: Ladder::Quick, options: WorkloadOptions::default() }
    }
}

/// Workload parameters beyond the size, as the command line gives them (`--bins`, `--distribution`, `--region`,
/// `--max-iter`); each applies to one workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadOptions {
    /// Histogram bins, 1 to [`HistogramParams::MAX_BINS`].
    pub bins: Option<usize>,
    /// Histogram values' spread: `uniform`, or `skewed` (90% in one bin: the atomics' contention).
    pub distribution: Option<Distribution>,
    /// Mandelbrot's region of the complex plane.
    pub region: Option<Region>,
    /// Mandelbrot's iteration limit, 1 to [`MAX_ITERATIONS`].
    pub max_iter: Option<u32>,
}

/// The largest mandelbrot iteration limit accepted from the command line: one pixel's loop at this limit takes
/// about a millisecond on one core, so an image of a million such pixels stays within minutes.
pub const MAX_ITERATIONS: u32 = 1 << 20;

impl WorkloadOptions {
    /// The options that are set, as the command line spells them.
    pub fn named(&self) -> Vec<&'static str> {
        let mut named = Vec::new();
        if self.bins.is_some() {
            named.push("--bins");
        }
        if self.distribution.is_some() {
            named.push("--distribution");
        }
        if self.region.is_some() {
            named.push("--region");
        }
        if self.max_iter.is_some() {
            named.push("--max-iter");
        }
        named
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        self.named().is_empty()
    }

    /// Only `allowed` may be set: the others are an error naming the option and `workload`.
    fn only(&self, allowed: &[&str], workload: &str) -> Result<()> {
        match self.named().into_iter().find(|name| !allowed.contains(name)) {
            Some(name) => Err(Error::invalid(format!("{name} does not apply to {workload}"))),
            None => Ok(()),
        }
    }
}

/// Parses a histogram distribution: `uniform` or `skewed`.
pub fn parse_distribution(s: &str) -> Result<Distribution> {
    match s.trim().to_ascii_lowercase().as_str() {
        "uniform" => Ok(Distribution::Uniform),
        "skewed" => Ok(Distribution::Skewed),
        other => Err(Error::invalid(format!("unknown distribution `{other}`: expected uniform or skewed"))),
    }
}

/// Named mandelbrot regions: the whole set, one wholly inside it (every pixel runs to the limit: uniform work), and
/// one on its boundary (neighbouring pixels escape after very different counts: divergent work).
pub const REGIONS: &[(&str, Region)] = &[
    ("whole", Region::DEFAULT),
    ("inside", Region { x_min: -0.45, x_max: -0.05, y_min: -0.2, y_max: 0.2 }),
    ("boundary", Region { x_min: -0.76, x_max: -0.74, y_min: 0.09, y_max: 0.11 }),
];

/// Parses a mandelbrot region: a name of [`REGIONS`], or `XMIN,XMAX,YMIN,YMAX` (finite, each minimum below its
/// maximum).
pub fn parse_region(s: &str) -> Result<Region> {
    let s = s.trim();
    if let Some((_, region)) = REGIONS.iter().find(|(name, _)| name.eq_ignore_ascii_case(s)) {
        return Ok(*region);
    }
    let names: Vec<&str> = REGIONS.iter().map(|(name, _)| *name).collect();
    let bad =
        || Error::invalid(format!("malformed region `{s}`: expected {} or XMIN,XMAX,YMIN,YMAX", names.join(", ")));
    let values: Vec<f32> = s.split(',').map(|v| v.trim().parse::<f32>().map_err(|_| bad())).collect::<Result<_>>()?;
    let [x_min, x_max, y_min, y_max] = values[..] else { return Err(bad()) };
    if !values.iter().all(|v| v.is_finite()) || x_min >= x_max || y_min >= y_max {
        return Err(Error::invalid(format!(
            "region `{s}`: every bound must be finite and each minimum below its maximum"
        )));
    }
    Ok(Region { x_min, x_max, y_min, y_max })
}

/// Parses a mandelbrot iteration limit, 1 to [`MAX_ITERATIONS`].
pub fn parse_max_iter(s: &str) -> Result<u32> {
    let n = parse_count(s)?;
    if n == 0 || n > MAX_ITERATIONS as usize {
        return Err(Error::invalid(format!("--max-iter {s}: expected 1 to {MAX_ITERATIONS}")));
    }
    Ok(n as u32)
}

/// Parses a histogram bin count, 1 to [`HistogramParams::MAX_BINS`].
pub fn parse_bins(s: &str) -> Result<usize> {
    let n = parse_count(s)?;
    if n == 0 || n > HistogramParams::MAX_BINS {
        return Err(Error::invalid(format!("--bins {s}: expected 1 to {}", HistogramParams::MAX_BINS)));
    }
    Ok(n)
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
    fn apply(&mut self, options: &WorkloadOptions) -> Result<()> {
        options.only(&["--bins", "--distribution"], "histogram")?;
        self.bins = options.bins.unwrap_or(self.bins);
        self.distribution = options.distribution.unwrap_or(self.distribution);
        Ok(())
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
    fn apply(&mut self, options: &WorkloadOptions) -> Result<()> {
        options.only(&["--region", "--max-iter"], "mandelbrot")?;
        self.region = options.region.unwrap_or(self.region);
        self.max_iter = options.max_iter.unwrap_or(self.max_iter);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_options_apply_to_their_workload_only() {
        let options =
            WorkloadOptions { bins: Some(16), distribution: Some(Distribution::Skewed), ..Default::default() };
        let mut histogram = HistogramParams::parse_size("1M").unwrap();
        histogram.apply(&options).unwrap();
        assert_eq!((histogram.bins, histogram.distribution), (16, Distribution::Skewed));
        let mut mandelbrot = MandelbrotParams::parse_size("64").unwrap();
        assert!(mandelbrot.apply(&options).unwrap_err().to_string().contains("--bins does not apply to mandelbrot"));
        let region = WorkloadOptions { region: Some(parse_region("boundary").unwrap()), ..Default::default() };
        mandelbrot.apply(&region).unwrap();
        assert_eq!(mandelbrot.region, REGIONS[2].1);
        let mut square = Len::parse_size("1K").unwrap();
        assert!(square.apply(&region).unwrap_err().to_string().contains("--region"));
        square.apply(&WorkloadOptions::default()).unwrap();
    }

    #[test]
    fn workload_options_are_checked_when_parsed() {
        assert!(parse_bins("0").is_err() && parse_bins("65537").is_err() && parse_bins("64K").is_ok());
        assert!(parse_max_iter("0").is_err() && parse_max_iter("2^21").is_err() && parse_max_iter("1000").is_ok());
        assert!(parse_distribution("Skewed").is_ok() && parse_distribution("normal").is_err());
        assert_eq!(parse_region("-1,1,-0.5,0.5").unwrap(), Region { x_min: -1.0, x_max: 1.0, y_min: -0.5, y_max: 0.5 });
        for bad in ["1,0,0,1", "0,1,0", "nan,1,0,1", "0,inf,0,1", "edge"] {
            assert!(parse_region(bad).is_err(), "{bad}");
        }
    }

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
