//! `saxpy` on CUDA: `naive` launches one thread per element; `vec4` moves `float4`s in a grid-stride loop sized to
//! the device (see [`super::elementwise`], which both elementwise workloads share).

use gpuworthy_core::workloads::{Saxpy, SaxpyInput};
use std::ops::Range;

use gpuworthy_core::shard::units_of;
use gpuworthy_core::{Implements, KernelSource, PartOutput, Result, Variant, VariantTable, Workload};

use super::elementwise::{ElementwiseResident, Grid};
use super::{phased, run_into_fresh};
use super::kernel_file;
use crate::{CudaBackend, HostMemory};

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("saxpy.cu", ["saxpy_naive", "saxpy_vec4"]);

/// The launch constants this workload's source takes from the host: none.
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[];

/// The variants of `saxpy`.
pub(crate) static VARIANTS: VariantTable<Grid> = VariantTable {
    workload: "saxpy",
    variants: &[
        Variant::new("naive", &["saxpy_naive"], Grid::PerElement),
        Variant::new("vec4", &["saxpy_vec4"], Grid::StridedVec4),
    ],
};

impl Implements<Saxpy> for CudaBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `vec4`: `float4` accesses at the copy peak from 2^16 up.
    fn best_variant(&self, _params: &<Saxpy as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Saxpy, _>(self, variant)?)
    }

    fn upload(&self, input: &SaxpyInput) -> Result<ElementwiseResident> {
        Saxpy::validate(input)?;
        Ok(ElementwiseResident {
            n: input.x.len(),
            a: input.a,
            x: self.to_device(&input.x)?,
            y: self.to_device(&input.y)?,
        })
    }

    fn launch(&self, variant: &str, r: &mut ElementwiseResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Saxpy, _>(self, variant)?;
        self.launch_resident(variant, true, r)
    }

    fn run(&self, variant: &str, input: &SaxpyInput) -> Result<Vec<f32>> {
        run_into_fresh::<Saxpy>(self, variant, input)
    }

    fn run_into(&self, variant: &str, input: &SaxpyInput, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Saxpy>(self, variant, input)?;
            return Ok(());
        }
        Saxpy::validate(input)?;
        let variant = VARIANTS.lookup::<Saxpy, _>(self, variant)?;
        crate::memory::host_output(output, input.x.len());
        self.run_elementwise_pipelined(variant, Some(input.a), &input.x, Some(&input.y), output)
    }

    /// Reads `x[units]` and `y[units]` where they lie and writes into the group's output in place.
    fn reads_parts_in_place(&self, _variant: &str, _params: &gpuworthy_core::workloads::SaxpyParams) -> bool {
        true
    }

    fn run_part(&self, variant: &str, input: &SaxpyInput, units: Range<usize>, place: &mut PartOutput<'_>) -> Result<()> {
        Saxpy::validate(input)?;
        let (x, y) = (units_of(&input.x, units.clone())?, units_of(&input.y, units)?);
        let variant = VARIANTS.lookup::<Saxpy, _>(self, variant)?;
        self.run_elementwise_part(variant, Some(input.a), x, Some(y), place)
    }

    fn download(&self, r: &mut ElementwiseResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.n)
    }

    /// Straight from the device into the member's place in the group's output.
    fn download_part(
        &self,
        r: &mut ElementwiseResident,
        _input: &SaxpyInput,
        _units: Range<usize>,
        place: &mut PartOutput<'_>,
    ) -> Result<()> {
        self.copy_to_host(&r.y, place.single_f32(r.n)?)
    }
}
