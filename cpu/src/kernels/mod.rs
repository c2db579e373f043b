//! The kernels, one module per workload, each with its `Implements` for [`crate::CpuBackend`].
//!
//! Parallel kernels split their data with rayon first and enter SIMD code inside each task: code running on another
//! thread does not inherit the target features of the function that spawned it, so the SIMD dispatch must happen
//! per task (it is one cached load and a branch).

mod elementwise;
// One module per workload, named after it (`mod square; mod saxpy; …`), from the one list of workloads.
gpuworthy_core::for_each_workload!(gpuworthy_core::workload_modules);

use crate::simd::simd_kernel;

/// Elements per rayon task for 1D work: large enough that scheduling costs nothing, small enough to balance.
pub(crate) const CHUNK_1D: usize = 1 << 16;

/// Outputs longer than this (16 MiB of `f32`) are written with streaming stores: they would not stay in cache
/// anyway, and a streaming store skips reading each line before overwriting it (an ordinary store first reads the
/// line it writes, so a pass that reads one array and writes another moves 12 bytes per element instead of 8). The
/// elementwise kernels' `simd`, expressions' `blocks` and `stencil`'s `simd` follow it; `softmax` writes with
/// ordinary stores. The core's constant, so that the cost model counts the bytes these kernels move
/// ([`gpuworthy_core::traffic`]).
pub(crate) const STREAM_ABOVE: usize = gpuworthy_core::traffic::CPU_STREAM_ABOVE;

simd_kernel! {
    /// Copies `from` (values just computed, in cache) to `to` with streaming stores. The stores are ordered by one
    /// [`stream_fence`] at the end of the task, not here: a fence after every block of 4 KiB waits for the
    /// write-combining buffers to drain each time, and made a copy slower than one fence per task (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    pub(crate) fn stream_copy<S>(s, from: &[f32], to: &mut [f32]) {
        let head = s.aligned_prefix(to).min(to.len());
        to[..head].copy_from_slice(&from[..head]);
        let (from, to) = (&from[head..], &mut to[head..]);
        let mut sources = from.chunks_exact(S::LANES);
        let mut targets = to.chunks_exact_mut(S::LANES);
        for (x, y) in (&mut sources).zip(&mut targets) {
            s.store_stream(y, s.load(x));
        }
        let rest = targets.into_remainder();
        rest.copy_from_slice(sources.remainder());
    }
}

simd_kernel! {
    /// Orders this thread's streaming stores before whatever it does next (the end of its task, which other threads
    /// then see): streaming stores are weakly ordered, and only a fence makes them visible like ordinary ones.
    pub(crate) fn stream_fence<S>(s) {
        s.fence();
    }
}

/// `x[units]` and the one `f32` slice of a group member's place in the output, which must be as long: a place of
/// another shape, or units past `x`'s end, are an error that says so.
pub(crate) fn part_slices<'x, 'p>(
    x: &'x [f32],
    units: std::ops::Range<usize>,
    place: &'p mut gpuworthy_core::PartOutput<'_>,
) -> gpuworthy_core::Result<(&'x [f32], &'p mut [f32])> {
    let x = gpuworthy_core::shard::units_of(x, units)?;
    let len = x.len();
    Ok((x, place.single_f32(len)?))
}

/// The CPU's resident data: the backend's own copy of the input and the output of the last launch.
#[derive(Debug, Clone)]
pub struct HostResident<I, O> {
    pub(crate) input: I,
    pub(crate) output: O,
}

/// Implements the phases of `Implements<$workload>` for the CPU around `self.$compute(variant, input, output)`:
/// resident data is a copy of the input plus an output made by `$new_output`, and a launch computes from the one
/// into the other; a run computes straight from the caller's input into a fresh output, with no copy of the input
/// (the data is on the host already: an upload would only copy it, which for 1 GiB costs a hundred times the sum).
macro_rules! host_phases {
    ($workload:ty, $compute:ident, |$input:ident| $new_output:expr) => {
        fn launch(&self, variant: &str, r: &mut Self::Resident) -> gpuworthy_core::Result<()> {
            self.$compute(variant, &r.input, &mut r.output)
        }

        /// Straight from the caller's input into a fresh output: on the CPU an upload would only copy the input.
        fn run(
            &self,
            variant: &str,
            $input: &<$workload as gpuworthy_core::Workload>::Input,
        ) -> gpuworthy_core::Result<<$workload as gpuworthy_core::Workload>::Output> {
            <$workload as gpuworthy_core::Workload>::validate($input)?;
            let mut output = $new_output;
            self.$compute(variant, $input, &mut output)?;
            Ok(output)
        }

        type Resident = $crate::kernels::HostResident<
            <$workload as gpuworthy_core::Workload>::Input,
            <$workload as gpuworthy_core::Workload>::Output,
        >;

        fn prepare(&self, variant: &str) -> gpuworthy_core::Result<()> {
            if <Self as gpuworthy_core::Implements<$workload>>::variants(self).contains(&variant) {
                Ok(())
            } else {
                Err(<Self as gpuworthy_core::Implements<$workload>>::unknown_variant(self, variant))
            }
        }

        fn upload(
            &self,
            $input: &<$workload as gpuworthy_core::Workload>::Input,
        ) -> gpuworthy_core::Result<Self::Resident> {
            <$workload as gpuworthy_core::Workload>::validate($input)?;
            Ok($crate::kernels::HostResident { output: $new_output, input: $input.clone() })
        }

        fn download(
            &self,
            resident: &mut Self::Resident,
        ) -> gpuworthy_core::Result<<$workload as gpuworthy_core::Workload>::Output> {
            Ok(resident.output.clone())
        }
    };
}
pub(crate) use host_phases;
