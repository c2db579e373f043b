//! `square` on CUDA: `naive` launches one thread per element; `vec4` moves `float4`s in a grid-stride loop sized to
//! the device (see [`super::elementwise`], which both elementwise workloads share).

use gpuworthy_core::workloads::Square;
use std::ops::Range;

use gpuworthy_core::{Implements, KernelSource, PartOutput, Result, Variant, VariantTable};

use super::elementwise::{ElementwiseResident, Grid};
use super::{phased, run_into_fresh};
use super::kernel_file;
use crate::{CudaBackend, HostMemory};

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("square.cu", ["square_naive", "square_vec4"]);

/// The launch constants this workload's source takes from the host: none.
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[];

/// The variants of `square`.
pub(crate) static VARIANTS: VariantTable<Grid> = VariantTable {
    workload: "square",
    variants: &[
        Variant::new("naive", &["square_naive"], Grid::PerElement),
        Variant::new("vec4", &["square_vec4"], Grid::StridedVec4),
    ],
};

impl Implements<Square> for CudaBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `vec4`: `float4` accesses at the copy peak from 2^16 up.
    fn best_variant(&self, _params: &<Square as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Square, _>(self, variant)?)
    }

    fn upload(&self, x: &Vec<f32>) -> Result<ElementwiseResident> {
        Ok(ElementwiseResident { n: x.len(), a: 0.0, x: self.to_device(x)?, y: self.zeros(x.len())? })
    }

    fn launch(&self, variant: &str, r: &mut ElementwiseResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Square, _>(self, variant)?;
        self.launch_resident(variant, false, r)
    }

    fn run(&self, variant: &str, x: &Vec<f32>) -> Result<Vec<f32>> {
        run_into_fresh::<Square>(self, variant, x)
    }

    fn run_into(&self, variant: &str, x: &Vec<f32>, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Square>(self, variant, x)?;
            return Ok(());
        }
        crate::memory::host_output(output, x.len());
        self.run_elementwise_pipelined(VARIANTS.lookup::<Square, _>(self, variant)?, None, x, None, output)
    }

    /// Reads `x[units]` where it lies and writes into the group's output in place.
    fn reads_parts_in_place(&self, _variant: &str, _params: &gpuworthy_core::workloads::Len) -> bool {
        true
    }

    fn run_part(&self, variant: &str, x: &Vec<f32>, units: Range<usize>, place: &mut PartOutput<'_>) -> Result<()> {
        let x = gpuworthy_core::shard::units_of(x, units)?;
        self.run_elementwise_part(VARIANTS.lookup::<Square, _>(self, variant)?, None, x, None, place)
    }

    fn download(&self, r: &mut ElementwiseResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.n)
    }

    /// Straight from the device into the member's place in the group's output.
    fn download_part(
        &self,
        r: &mut ElementwiseResident,
        _input: &Vec<f32>,
        _units: Range<usize>,
        place: &mut PartOutput<'_>,
    ) -> Result<()> {
        self.copy_to_host(&r.y, place.single_f32(r.n)?)
    }
}
