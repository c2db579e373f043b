//! `softmax`, one block per row: `unfused` is three kernels (row maximum; exponentials and their sum; normalisation),
//! `fused` one kernel with an online maximum and sum, reading the row twice and writing it once.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuworthy_core::workloads::{Softmax, SoftmaxInput};
use gpuworthy_core::{BackendKind, Error, Implements, Result, Variant, VariantTable, Workload};

use super::{config, int};
use crate::{CudaBackend, driver_error};

/// Resident data of `softmax`.
#[derive(Debug)]
pub struct SoftmaxResident {
    rows: usize,
    cols: usize,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
    row_max: CudaSlice<f32>,
    row_sum: CudaSlice<f32>,
}

const BLOCK: u32 = 256;

/// How a softmax variant passes over the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Passes {
    /// Three kernels: the row maxima, the exponentials and their sums, the normalisation.
    Three,
    /// One kernel with an online maximum and sum.
    Fused,
}

/// The variants of `softmax`, each kernel named in the order one launch runs them.
pub(crate) static SOFTMAX: VariantTable<Passes> = VariantTable {
    workload: "softmax",
    variants: &[
        Variant::new(
            "unfused",
            &["softmax_unfused_max", "softmax_unfused_exp", "softmax_unfused_normalize"],
            Passes::Three,
        ),
        Variant::new("fused", &["softmax_fused"], Passes::Fused),
    ],
};

impl Implements<Softmax> for CudaBackend {
    type Resident = SoftmaxResident;

    fn variants(&self) -> Vec<&'static str> {
        SOFTMAX.names()
    }

    /// `fused`: one pass over each row instead of three.
    fn best_variant(&self, _params: &<Softmax as gpuworthy_core::Workload>::Params) -> &'static str {
        "fused"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(SOFTMAX.lookup::<Softmax, _>(self, variant)?)
    }

    fn upload(&self, input: &SoftmaxInput) -> Result<SoftmaxResident> {
        Softmax::validate(input)?;
        int("softmax rows", input.rows)?;
        int("softmax columns", input.cols)?;
        Ok(SoftmaxResident {
            rows: input.rows,
            cols: input.cols,
            x: self.to_device(&input.data)?,
            y: self.zeros(input.data.len())?,
            row_max: self.zeros(input.rows)?,
            row_sum: self.zeros(input.rows)?,
        })
    }

    fn launch(&self, variant: &str, r: &mut SoftmaxResident) -> Result<()> {
        let _queue = self.hold_queue();
        let variant = SOFTMAX.lookup::<Softmax, _>(self, variant)?;
        self.prepare_kernels(variant)?;
        if r.rows == 0 || r.cols == 0 {
            return Ok(());
        }
        let (rows, cols) = (int("softmax rows", r.rows)?, int("softmax columns", r.cols)?);
        let cfg = config((r.rows as u64, 1), (BLOCK, 1), 0)?;
        let failed = |k: &str| driver_error(format!("launching {k}"));
        match (variant.launch, variant.kernels) {
            (Passes::Fused, &[fused]) => {
                let f = self.function(fused)?;
                let mut launch = self.stream.launch_builder(&f);
                launch.arg(&r.x).arg(&mut r.y).arg(&rows).arg(&cols);
                // SAFETY: softmax_fused(const float* x, float* y, int rows, int cols); x and y hold rows·cols floats
                // and the grid has one block per row.
                unsafe { launch.launch(cfg) }.map_err(failed(fused))?;
            }
            (Passes::Three, &[max, exp, normalize]) => {
                let f = self.function(max)?;
                let mut launch = self.stream.launch_builder(&f);
                launch.arg(&r.x).arg(&mut r.row_max).arg(&rows).arg(&cols);
                // SAFETY: softmax_unfused_max(const float* x, float* row_max, int rows, int cols); row_max holds
                // rows floats.
                unsafe { launch.launch(cfg) }.map_err(failed(max))?;
                let f = self.function(exp)?;
                let mut launch = self.stream.launch_builder(&f);
                launch.arg(&r.x).arg(&r.row_max).arg(&mut r.y).arg(&mut r.row_sum).arg(&rows).arg(&cols);
                // SAFETY: softmax_unfused_exp(const float* x, const float* row_max, float* y, float* row_sum,
                // int rows, int cols); the buffers hold rows·cols, rows, rows·cols and rows floats.
                unsafe { launch.launch(cfg) }.map_err(failed(exp))?;
                let f = self.function(normalize)?;
                let mut launch = self.stream.launch_builder(&f);
                launch.arg(&mut r.y).arg(&r.row_sum).arg(&rows).arg(&cols);
                // SAFETY: softmax_unfused_normalize(float* y, const float* row_sum, int rows, int cols), as above.
                unsafe { launch.launch(cfg) }.map_err(failed(normalize))?;
            }
            (passes, kernels) => {
                return Err(Error::Device {
                    backend: BackendKind::Cuda,
                    message: format!(
                        "softmax variant `{}` lists {} kernels for {passes:?} passes",
                        variant.name,
                        kernels.len()
                    ),
                });
            }
        }
        Ok(())
    }

    fn download(&self, r: &mut SoftmaxResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.rows * r.cols)
    }
}
