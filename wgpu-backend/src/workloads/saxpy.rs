//! `saxpy` on wgpu: one thread per element (`naive`), or per four elements with `vec4` loads and stores (`vec4`); the
//! buffers and dispatch are shared with the other elementwise workload ([`super::elementwise`]).

use gpuworthy_core::workloads::{Saxpy, SaxpyInput};
use gpuworthy_core::{Implements, KernelSource, Result, Variant, VariantTable, Workload};

use super::elementwise::ElementwiseResident;
use crate::WgpuBackend;
use super::shader;

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("saxpy.wgsl", ["saxpy_naive", "saxpy_vec4"])];

/// The variants of `saxpy`.
pub(crate) static VARIANTS: VariantTable<()> = VariantTable {
    workload: "saxpy",
    variants: &[Variant::new("naive", &["saxpy_naive"], ()), Variant::new("vec4", &["saxpy_vec4"], ())],
};

impl Implements<Saxpy> for WgpuBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `vec4`: `vec4<f32>` accesses, the fastest from 2^18.
    fn best_variant(&self, _params: &<Saxpy as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Saxpy, _>(self, variant)?)
    }

    fn upload(&self, input: &SaxpyInput) -> Result<Self::Resident> {
        Saxpy::validate(input)?;
        self.upload_elementwise(input.a, &input.x, Some(&input.y))
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        self.launch_elementwise(VARIANTS.lookup::<Saxpy, _>(self, variant)?.kernels[0], r)
    }

    fn download(&self, r: &mut Self::Resident) -> Result<Vec<f32>> {
        self.download_elementwise(r)
    }
}
