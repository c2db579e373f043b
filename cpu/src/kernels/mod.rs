//! The kernels, one module per workload, each with its `Implements` for [`crate::CpuBackend`].
//!
//! Parallel kernels split their data with rayon first and enter SIMD code inside each task: code running on another
//! thread does not inherit the target features of the function that spawned it, so the SIMD dispatch must happen
//! per task (it is one cached load and a branch).

mod elementwise;
mod histogram;
mod mandelbrot;
mod matmul;
mod softmax;
mod stencil;
mod sum;

/// Elements per rayon task for 1D work: large enough that scheduling costs nothing, small enough to balance.
pub(crate) const CHUNK_1D: usize = 1 << 16;

/// The CPU's resident data: the backend's own copy of the input and the output of the last launch.
#[derive(Debug, Clone)]
pub struct HostResident<I, O> {
    pub(crate) input: I,
    pub(crate) output: O,
}

/// Implements the upload and download phases of `Implements<$workload>` for the CPU, where resident data is a copy
/// of the input plus an output buffer made by `$new_output`.
macro_rules! host_phases {
    ($workload:ty, |$input:ident| $new_output:expr) => {
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
