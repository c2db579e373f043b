//! `square` on wgpu: one thread per element (`naive`), or per four elements with `vec4` loads and stores (`vec4`); the
//! buffers and dispatch are shared with the other elementwise workload ([`super::elementwise`]).

use gpuworthy_core::workloads::Square;
use gpuworthy_core::{Implements, KernelSource, Result, Variant, VariantTable};

use super::elementwise::ElementwiseResident;
use crate::WgpuBackend;
use super::shader;

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("square.wgsl", ["square_naive", "square_vec4"])];

/// The variants of `square`.
pub(crate) static VARIANTS: VariantTable<()> = VariantTable {
    workload: "square",
    variants: &[Variant::new("naive", &["square_naive"], ()), Variant::new("vec4", &["square_vec4"], ())],
};

impl Implements<Square> for WgpuBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `vec4`: `vec4<f32>` accesses, the fastest from 2^18.
    fn best_variant(&self, _params: &<Square as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Square, _>(self, variant)?)
    }

    fn upload(&self, input: &Vec<f32>) -> Result<Self::Resident> {
        self.upload_elementwise(0.0, input, None)
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        self.launch_elementwise(VARIANTS.lookup::<Square, _>(self, variant)?.kernels[0], r)
    }

    fn download(&self, r: &mut Self::Resident) -> Result<Vec<f32>> {
        self.download_elementwise(r)
    }
}
