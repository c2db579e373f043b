//! `sum`: `atomic` adds every element to one global `double` with an atomic (correct, and slow: every add
//! serialises on one address); `tree` reduces each block in shared memory and adds one atomic per block; `warp`
//! reduces with warp shuffles and `float4` loads. The result is zeroed before every launch.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use gpuworthy_core::workloads::Sum;
use gpuworthy_core::{Implements, Result, Variant, VariantTable};

use super::{config, phased};
use crate::pipeline::{Pipeline, element_chunks};
use crate::{CudaBackend, HostMemory, driver_error};
use super::kernel_file;
use gpuworthy_core::KernelSource;

/// Threads per block of the sum kernels (`sum.cu`).
pub(crate) const SUM_BLOCK: u32 = 256;

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("sum.cu", ["sum_atomic", "sum_tree", "sum_warp"]);

/// The launch constants this workload's source takes from the host ([`crate::launch`]).
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[("SUM_BLOCK", SUM_BLOCK)];

/// Resident data of `sum`.
#[derive(Debug)]
pub struct SumResident {
    n: usize,
    x: CudaSlice<f32>,
    total: CudaSlice<f64>,
}

impl SumResident {
    /// The total a launch adds into and a download reads.
    pub(crate) fn total_mut(&mut self) -> &mut CudaSlice<f64> {
        &mut self.total
    }
}

const BLOCK: u32 = SUM_BLOCK;

/// How many blocks a sum kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocks {
    /// One thread per element.
    PerElement,
    /// A few blocks per multiprocessor, striding over the input.
    PerMultiprocessor,
}

/// The variants of `sum`.
pub(crate) static VARIANTS: VariantTable<Blocks> = VariantTable {
    workload: "sum",
    variants: &[
        Variant::new("atomic", &["sum_atomic"], Blocks::PerElement),
        Variant::new("tree", &["sum_tree"], Blocks::PerMultiprocessor),
        Variant::new("warp", &["sum_warp"], Blocks::PerMultiprocessor),
    ],
};

impl Implements<Sum> for CudaBackend {
    type Resident = SumResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `warp`: shuffles within warps, one atomic per block; the fastest at every size from 2^12.
    fn best_variant(&self, _params: &<Sum as gpuworthy_core::Workload>::Params) -> &'static str {
        "warp"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Sum, _>(self, variant)?)
    }

    fn upload(&self, x: &Vec<f32>) -> Result<SumResident> {
        Ok(SumResident { n: x.len(), x: self.to_device(x)?, total: self.zeros(1)? })
    }

    fn launch(&self, variant: &str, r: &mut SumResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Sum, _>(self, variant)?;
        self.stream.memset_zeros(&mut r.total).map_err(driver_error("zeroing the sum"))?;
        self.launch_sum(&self.stream, variant, &r.x.slice(..), &mut r.total.slice_mut(..), r.n)
    }

    fn download(&self, r: &mut SumResident) -> Result<f64> {
        let _queue = self.hold_queue()?;
        let mut total = [0.0f64];
        self.stream.memcpy_dtoh(&r.total, &mut total).map_err(driver_error("copying the sum to the host"))?;
        self.stream.synchronize().map_err(driver_error("copying the sum to the host"))?;
        Ok(total[0])
    }

    /// Pipelined (see [`HostMemory::Pipelined`]): each chunk's kernel adds into its own total on the device, and the
    /// totals are added on the host in chunk order after the last one.
    fn run(&self, variant: &str, x: &Vec<f32>) -> Result<f64> {
        if self.host_memory() != HostMemory::Pipelined {
            return phased::<Sum>(self, variant, x);
        }
        let variant = VARIANTS.lookup::<Sum, _>(self, variant)?;
        self.prepare_kernels(variant)?;
        let (ranges, chunks) = element_chunks(x.len(), 1, false);
        if ranges.is_empty() {
            return Ok(0.0);
        }
        let mut devices = vec![self.uninit::<f32>(x.len())?];
        let mut totals = self.zeros::<f64>(ranges.len())?;
        let job = Pipeline::<f32> {
            inputs: vec![x],
            chunks,
            output_from: Vec::new(),
            launch_on_backend_stream: false,
            outputs: Vec::new(),
            output_offset: 0,
        };
        self.pipelined(job, &mut devices, &mut |stream, c, devices, _| {
            let r = ranges[c].clone();
            self.launch_sum(stream, variant, &devices[0].slice(r.clone()), &mut totals.slice_mut(c..c + 1), r.len())
        })?;
        let _queue = self.hold_queue()?;
        let what = "copying the chunks' sums to the host";
        let totals = self.stream.clone_dtoh(&totals.slice(..ranges.len())).map_err(driver_error(what))?;
        Ok(totals.iter().sum())
    }
}

impl CudaBackend {
    /// Launches `variant` over the first `n` elements of `x` on `stream`, adding them into `total[0]`.
    fn launch_sum(
        &self,
        stream: &Arc<CudaStream>,
        variant: &Variant<Blocks>,
        x: &CudaView<'_, f32>,
        total: &mut CudaViewMut<'_, f64>,
        n: usize,
    ) -> Result<()> {
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        if n == 0 {
            return Ok(());
        }
        let n = n as u64;
        let all = n.div_ceil(BLOCK as u64);
        let blocks = match variant.launch {
            Blocks::PerElement => all,
            Blocks::PerMultiprocessor => all.min(8 * self.multiprocessors as u64),
        };
        let cfg = config((blocks, 1), (BLOCK, 1), 0)?;
        let mut launch = stream.launch_builder(&function);
        launch.arg(x).arg(total).arg(&n);
        // SAFETY: the kernels take (const float* x, double* out, unsigned long long n); x holds at least n floats
        // starting 16-byte aligned (the float4 loads of `warp`), out at least one double, which the caller zeroed.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }
}
