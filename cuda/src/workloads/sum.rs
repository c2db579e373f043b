//! `sum`: `atomic` adds every element to one global `double` with an atomic (correct, and slow: every add
//! serialises on one address); `tree` reduces each block in shared memory and adds one atomic per block; `warp`
//! reduces with warp shuffles and `float4` loads. The result is zeroed before every launch.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuworthy_core::workloads::Sum;
use gpuworthy_core::{Implements, Result, Variant, VariantTable};

use super::config;
use crate::{CudaBackend, driver_error};

/// Resident data of `sum`.
#[derive(Debug)]
pub struct SumResident {
    n: usize,
    x: CudaSlice<f32>,
    total: CudaSlice<f64>,
}

const BLOCK: u32 = 256;

/// How many blocks a sum kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocks {
    /// One thread per element.
    PerElement,
    /// A few blocks per multiprocessor, striding over the input.
    PerMultiprocessor,
}

/// The variants of `sum`.
pub(crate) static SUM: VariantTable<Blocks> = VariantTable {
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
        SUM.names()
    }

    /// `warp`: shuffles within warps, one atomic per block; the fastest at every size from 2^12.
    fn best_variant(&self, _params: &<Sum as gpuworthy_core::Workload>::Params) -> &'static str {
        "warp"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(SUM.lookup::<Sum, _>(self, variant)?)
    }

    fn upload(&self, x: &Vec<f32>) -> Result<SumResident> {
        Ok(SumResident { n: x.len(), x: self.to_device(x)?, total: self.zeros(1)? })
    }

    fn launch(&self, variant: &str, r: &mut SumResident) -> Result<()> {
        let _queue = self.hold_queue();
        let variant = SUM.lookup::<Sum, _>(self, variant)?;
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        self.stream.memset_zeros(&mut r.total).map_err(driver_error("zeroing the sum"))?;
        if r.n == 0 {
            return Ok(());
        }
        let n = r.n as u64;
        let all = n.div_ceil(BLOCK as u64);
        let blocks = match variant.launch {
            Blocks::PerElement => all,
            Blocks::PerMultiprocessor => all.min(8 * self.multiprocessors as u64),
        };
        let cfg = config((blocks, 1), (BLOCK, 1), 0)?;
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(&r.x).arg(&mut r.total).arg(&n);
        // SAFETY: the kernels take (const float* x, double* out, unsigned long long n); x holds n floats and out one
        // double, zeroed above on the same stream.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    fn download(&self, r: &mut SumResident) -> Result<f64> {
        let _queue = self.hold_queue();
        let mut total = [0.0f64];
        self.stream.memcpy_dtoh(&r.total, &mut total).map_err(driver_error("copying the sum to the host"))?;
        self.stream.synchronize().map_err(driver_error("copying the sum to the host"))?;
        Ok(total[0])
    }
}
