//! `square`: `y = x * x`, element-wise. The first kernel, and memory-bound: 8 bytes move per flop.

use super::{BEYOND_128_MIB, Len, element_sharding, conformance_1d, ladder_1d, off_ladder_params, quick_ladder_1d};
use crate::Result;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload, describe_1d};
use crate::shard::concatenate;
use crate::workload::Sharding;

/// `y[i] = x[i]²`. Input: `x` uniform in `[-1, 1)`. Output: `y`, as long as `x`.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Len, Square}};
/// let x = Square::generate(&Len(4), 1).unwrap();
/// let y = Square::reference(&x).unwrap();
/// assert_eq!(y[0], x[0] * x[0]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Square;

/// Multiplication is correctly rounded everywhere, so only the flushing of subnormal results may differ.
const TOLERANCE: Tolerance = Tolerance { absolute: f32::MIN_POSITIVE as f64, relative: 1e-6 };

impl Workload for Square {
    const NAME: &'static str = "square";
    const LESSON: &'static str = "the first kernel: launches are asynchronous, and the work is memory-bound";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = Vec<f32>;

    fn sharding() -> Option<Sharding<Self>> {
        Some(Sharding {
            in_place: Some(crate::array_in_place!(
                F32,
                len: |x: &Vec<f32>| x.len(),
                per_unit: |_| 1,
                inputs: |x| vec![bytemuck::cast_slice(x)],
            )),
            ..element_sharding(|_, parts| concatenate(parts))
        })
    }

    fn params(input: &Vec<f32>) -> Len {
        Len(input.len())
    }

    fn validate(_input: &Vec<f32>) -> Result<()> {
        Ok(())
    }

    fn generate(params: &Len, seed: u64) -> Result<Vec<f32>> {
        crate::memory::check_host_memory::<Self>(params)?;
        Ok(rng::uniform_f32(seed, 0, params.0, -1.0, 1.0))
    }

    fn reference(input: &Vec<f32>) -> Result<Vec<f32>> {
        Ok(input.iter().map(|&x| x * x).collect())
    }

    fn check(_input: &Vec<f32>, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> Result<(), Mismatch> {
        TOLERANCE.check_slices(expected, actual, describe_1d)
    }

    fn host_bytes(params: &Len) -> Option<u64> {
        (params.0 as u64).checked_mul(8)
    }

    fn cost(params: &Len) -> Cost {
        let n = params.0 as u64;
        Cost { bytes: 8 * n, flops: n, elements: n }
    }

    /// On the CPU, the output's lines are read before they are written, but by `simd` past
    /// [`CPU_STREAM_ABOVE`](crate::traffic::CPU_STREAM_ABOVE) elements.
    fn traffic(params: &Len, backend: crate::BackendKind, variant: &str) -> u64 {
        let streamed = variant == "simd" && params.0 > crate::traffic::CPU_STREAM_ABOVE;
        let line_reads = if backend == crate::BackendKind::Cpu {
            crate::traffic::cpu_line_reads(params.0 as u64, streamed)
        } else {
            0
        };
        Self::cost(params).bytes + line_reads
    }

    fn streaming_probe(bytes: u64) -> Option<Len> {
        Some(off_ladder_params::<Self>(bytes, Len))
    }

    fn ladder() -> Vec<Len> {
        ladder_1d().into_iter().map(Len).collect()
    }

    fn quick_ladder() -> Vec<Len> {
        quick_ladder_1d().into_iter().map(Len).collect()
    }

    fn conformance_params() -> Vec<Len> {
        conformance_1d().into_iter().map(Len).collect()
    }

    fn large_params() -> Vec<Len> {
        vec![Len(BEYOND_128_MIB)]
    }

    fn special_inputs() -> Vec<(&'static str, Vec<f32>)> {
        let mut specials = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-30, 1e20, f32::MAX];
        // Repeat past a SIMD width so the special values also pass through the vector body, not only the tail.
        specials.extend(specials.clone().iter().rev());
        specials.extend(rng::uniform_f32(3, 0, 37, -1.0, 1.0));
        vec![("NaN, ±inf, ±0, overflow and underflow", specials)]
    }
}


#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Square {
    fn random() -> proptest::strategy::BoxedStrategy<Vec<f32>> {
        use crate::random::prelude::*;
        length().prop_flat_map(|n| values(n, -1e3, 1e3)).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendKind::{Cpu, Cuda, Wgpu};
    use crate::traffic::CPU_STREAM_ABOVE;

    /// The CPU's ordinary stores read each output line first (12 bytes an element); `simd` streams past
    /// [`CPU_STREAM_ABOVE`] (8, the cost's); the GPUs move the cost's bytes.
    #[test]
    fn the_cpu_reads_the_lines_it_writes_until_it_streams() {
        let (at, past) = (Len(CPU_STREAM_ABOVE), Len(CPU_STREAM_ABOVE + 1));
        assert_eq!(Square::traffic(&at, Cpu, "simd"), 12 * at.0 as u64);
        assert_eq!(Square::traffic(&past, Cpu, "simd"), 8 * past.0 as u64);
        assert_eq!(Square::traffic(&past, Cpu, "scalar"), 12 * past.0 as u64);
        for backend in [Cuda, Wgpu] {
            assert_eq!(Square::traffic(&at, backend, "vec4"), Square::cost(&at).bytes);
        }
    }
}
