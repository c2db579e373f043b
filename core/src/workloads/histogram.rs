//! `histogram`: counts of values in `bins` equal bins over `[0, 1)`. Atomics, contention, and privatisation.

use std::fmt;

use super::{BEYOND_128_MIB, conformance_1d, ladder_1d, off_ladder_params, quick_ladder_1d};
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Workload, check_lengths};
use crate::{Error, Result};
use crate::workload::Sharding;

/// `counts[min(floor(x·B), B−1)] += 1` for every `x`, in `f32`. Values below 0 (and −inf) count in bin 0, values
/// ≥ 1 (and +inf) in bin `B−1`; NaN is not counted.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Histogram, HistogramInput}};
/// let input = HistogramInput::new(2, vec![0.1, 0.7, 0.9, -3.0, f32::NAN]).unwrap();
/// assert_eq!(Histogram::reference(&input).unwrap(), vec![2, 2]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Histogram;

/// How the input values are spread over the bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Uniform in `[0, 1)`: atomics spread over every bin.
    Uniform,
    /// 90% of the values in one bin, the rest uniform: maximum atomic contention.
    Skewed,
}

/// The length, the number of bins and the distribution of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HistogramParams {
    /// Number of input values.
    pub n: usize,
    /// Number of bins, 1 to 65536.
    pub bins: usize,
    /// How the values are spread.
    pub distribution: Distribution,
}

impl HistogramParams {
    /// The default bin count.
    pub const DEFAULT_BINS: usize = 256;
    /// The largest bin count a backend must support.
    pub const MAX_BINS: usize = 65536;

    /// `n` uniform values in 256 bins.
    pub fn new(n: usize) -> Self {
        HistogramParams { n, bins: Self::DEFAULT_BINS, distribution: Distribution::Uniform }
    }
}

impl fmt::Display for HistogramParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.n)?;
        if self.bins != Self::DEFAULT_BINS {
            write!(f, " ({} bins)", self.bins)?;
        }
        if self.distribution == Distribution::Skewed {
            write!(f, " skewed")?;
        }
        Ok(())
    }
}

/// The values to count and the number of bins.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramInput {
    /// Number of bins, 1 to 65536.
    pub bins: usize,
    /// The values, meant to lie in `[0, 1)`.
    pub x: Vec<f32>,
}

impl HistogramInput {
    /// An input from its bin count and values, validated.
    pub fn new(bins: usize, x: Vec<f32>) -> Result<Self> {
        let input = HistogramInput { bins, x };
        Histogram::validate(&input)?;
        Ok(input)
    }
}

/// The bin of one value: the definition every backend follows. `None` for NaN.
#[inline]
pub fn bin_of(x: f32, bins: usize) -> Option<usize> {
    if x.is_nan() {
        return None;
    }
    // `as usize` saturates: negative values and −inf go to 0, +inf to usize::MAX.
    Some(((x * bins as f32) as usize).min(bins - 1))
}

impl Workload for Histogram {
    const NAME: &'static str = "histogram";
    const LESSON: &'static str = "atomics, contention and privatisation";
    type Params = HistogramParams;
    type Input = HistogramInput;
    type Output = Vec<u32>;

    /// A histogram per member of its part of the values; the bins are added.
    fn sharding() -> Option<Sharding<Self>> {
        Some(Sharding {
            unit: "values",
            units: |p| p.n,
            part: |p, r| HistogramParams { n: r.len(), ..*p },
            cut: |input, r| HistogramInput { bins: input.bins, x: crate::shard::copy_of(&input.x[r]) },
            join: |input, parts| {
                let mut bins = vec![0u32; input.bins];
                for (_, part) in parts {
                    for (total, count) in bins.iter_mut().zip(part) {
                        *total += count;
                    }
                }
                bins
            },
            unit_costs: None,
            in_place: None,
        })
    }

    fn params(input: &HistogramInput) -> HistogramParams {
        HistogramParams { n: input.x.len(), bins: input.bins, distribution: Distribution::Uniform }
    }

    fn validate(input: &HistogramInput) -> Result<()> {
        if !(1..=HistogramParams::MAX_BINS).contains(&input.bins) {
            return Err(Error::invalid(format!(
                "histogram needs 1 to {} bins, got {}",
                HistogramParams::MAX_BINS,
                input.bins
            )));
        }
        if input.x.len() > u32::MAX as usize {
            return Err(Error::invalid(format!(
                "histogram counts are u32: at most {} values, got {}",
                u32::MAX,
                input.x.len()
            )));
        }
        Ok(())
    }

    fn generate(p: &HistogramParams, seed: u64) -> Result<HistogramInput> {
        crate::memory::check_host_memory::<Self>(p)?;
        let mut x = rng::uniform_f32(seed, 0, p.n, 0.0, 1.0);
        if p.distribution == Distribution::Skewed {
            let hot = (p.bins / 3) as f32;
            let hot_value = (hot + 0.5) / p.bins as f32;
            let choose = rng::uniform_f32(seed, 1, p.n, 0.0, 1.0);
            x.iter_mut().zip(choose).filter(|(_, c)| *c < 0.9).for_each(|(x, _)| *x = hot_value);
        }
        let input = HistogramInput { bins: p.bins, x };
        Self::validate(&input)?;
        Ok(input)
    }

    fn reference(input: &HistogramInput) -> Result<Vec<u32>> {
        Self::validate(input)?;
        let mut counts = vec![0u32; input.bins];
        for bin in input.x.iter().filter_map(|&x| bin_of(x, input.bins)) {
            counts[bin] += 1;
        }
        Ok(counts)
    }

    fn check(input: &HistogramInput, expected: &Vec<u32>, actual: &Vec<u32>, _: Precision) -> Result<(), Mismatch> {
        check_lengths(expected.len(), actual.len())?;
        let counted: u64 = actual.iter().map(|&c| c as u64).sum();
        let expected_total = input.x.iter().filter(|x| !x.is_nan()).count() as u64;
        if counted != expected_total {
            return Err(Mismatch::new(format!(
                "counts sum to {counted}, expected {expected_total} (n minus the NaNs)"
            )));
        }
        match expected.iter().zip(actual).position(|(e, a)| e != a) {
            None => Ok(()),
            Some(b) => Err(Mismatch::new(format!("bin {b}: expected {}, got {}", expected[b], actual[b]))),
        }
    }

    fn host_bytes(params: &HistogramParams) -> Option<u64> {
        (params.n as u64).checked_mul(4)?.checked_add((params.bins as u64).checked_mul(4)?)
    }

    fn cost(p: &HistogramParams) -> Cost {
        let n = p.n as u64;
        Cost { bytes: 4 * n, flops: n, elements: n }
    }

    fn streaming_probe(bytes: u64) -> Option<HistogramParams> {
        Some(off_ladder_params::<Self>(bytes, HistogramParams::new))
    }

    fn ladder() -> Vec<HistogramParams> {
        ladder_1d().into_iter().map(HistogramParams::new).collect()
    }

    fn quick_ladder() -> Vec<HistogramParams> {
        quick_ladder_1d().into_iter().map(HistogramParams::new).collect()
    }

    fn conformance_params() -> Vec<HistogramParams> {
        let mut params: Vec<_> = conformance_1d().into_iter().map(HistogramParams::new).collect();
        for n in [1025, 65537, (1 << 22) + 3] {
            params.push(HistogramParams { distribution: Distribution::Skewed, ..HistogramParams::new(n) });
        }
        for bins in [1, 7, 4096, HistogramParams::MAX_BINS] {
            params.push(HistogramParams { bins, ..HistogramParams::new(65537) });
        }
        params
    }

    fn large_params() -> Vec<HistogramParams> {
        vec![HistogramParams::new(BEYOND_128_MIB)]
    }

    fn special_inputs() -> Vec<(&'static str, HistogramInput)> {
        let mut x = vec![-0.5, -0.0, 0.0, 1.0, 1.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.999_999_9, 0.5];
        x.extend(x.clone());
        x.extend(rng::uniform_f32(2, 0, 50, -1.0, 2.0));
        vec![
            ("values outside [0, 1), ±inf and NaN, 256 bins", HistogramInput { bins: 256, x: x.clone() }),
            ("the same in 1 bin", HistogramInput { bins: 1, x: x.clone() }),
            ("the same in 65536 bins", HistogramInput { bins: 65536, x }),
        ]
    }

    fn invalid_inputs() -> Vec<(&'static str, HistogramInput, &'static str)> {
        vec![("0 bins", HistogramInput { bins: 0, x: vec![0.5; 8] }, "0")]
    }
}

#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Histogram {
    fn random() -> proptest::strategy::BoxedStrategy<HistogramInput> {
        use crate::random::prelude::*;
        (length(), prop_oneof![Just(1usize), 2usize..300, Just(65536usize)])
            .prop_flat_map(|(n, bins)| values(n, -0.25, 1.25).prop_map(move |x| HistogramInput { bins, x }))
            .boxed()
    }
}
