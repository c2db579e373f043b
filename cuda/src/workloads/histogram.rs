//! `histogram`: `global` makes one atomic increment in global memory per value; `private` counts into a per-block
//! histogram in shared memory (up to 12288 bins at a time, in ranges beyond) and merges it once per block. The
//! counts are zeroed before every launch.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use gpuworthy_core::workloads::{Histogram, HistogramInput};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{config, int, phased};
use crate::pipeline::{Pipeline, element_chunks};
use crate::{CudaBackend, HostMemory, driver_error};
use super::kernel_file;
use gpuworthy_core::KernelSource;

/// Threads per block of the histogram kernels (`histogram.cu`).
pub(crate) const HISTOGRAM_BLOCK: u32 = 256;
/// The most bins the shared-memory histogram keeps per block (`histogram.cu`): 48 KiB of counters.
pub(crate) const HISTOGRAM_SHARED_BINS: u32 = 12288;

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("histogram.cu", ["histogram_global", "histogram_private"]);

/// The launch constants this workload's source takes from the host ([`crate::launch`]).
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[("HISTOGRAM_BLOCK", HISTOGRAM_BLOCK), ("HISTOGRAM_SHARED_BINS", HISTOGRAM_SHARED_BINS)];

/// Resident data of `histogram`.
#[derive(Debug)]
pub struct HistogramResident {
    n: usize,
    bins: usize,
    x: CudaSlice<f32>,
    counts: CudaSlice<u32>,
}

const BLOCK: u32 = HISTOGRAM_BLOCK;
/// Bins the private kernel holds in shared memory at once (48 KiB).
const SHARED_BINS: usize = HISTOGRAM_SHARED_BINS as usize;

/// Where a histogram kernel counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counters {
    /// Straight into global memory: many blocks.
    Global,
    /// Into a per-block copy in shared memory: a few blocks per multiprocessor, each merging once.
    SharedPerBlock,
}

/// The variants of `histogram`.
pub(crate) static VARIANTS: VariantTable<Counters> = VariantTable {
    workload: "histogram",
    variants: &[
        Variant::new("global", &["histogram_global"], Counters::Global),
        Variant::new("private", &["histogram_private"], Counters::SharedPerBlock),
    ],
};

impl Implements<Histogram> for CudaBackend {
    type Resident = HistogramResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `private`: per-block histograms in shared memory, the fastest from 2^14.
    fn best_variant(&self, _params: &<Histogram as gpuworthy_core::Workload>::Params) -> &'static str {
        "private"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Histogram, _>(self, variant)?)
    }

    fn upload(&self, input: &HistogramInput) -> Result<HistogramResident> {
        Histogram::validate(input)?;
        Ok(HistogramResident {
            n: input.x.len(),
            bins: input.bins,
            x: self.to_device(&input.x)?,
            counts: self.zeros(input.bins)?,
        })
    }

    fn launch(&self, variant: &str, r: &mut HistogramResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Histogram, _>(self, variant)?;
        self.stream.memset_zeros(&mut r.counts).map_err(driver_error("zeroing the counts"))?;
        self.launch_histogram(&self.stream, variant, &r.x.slice(..), &mut r.counts.slice_mut(..), r.n, r.bins)
    }

    fn download(&self, r: &mut HistogramResident) -> Result<Vec<u32>> {
        self.to_host(&r.counts, r.bins)
    }

    /// Pipelined (see [`HostMemory::Pipelined`]): every chunk's kernel adds into the same counts on the device (with
    /// atomics, so kernels of different streams may overlap), downloaded after the last chunk.
    fn run(&self, variant: &str, input: &HistogramInput) -> Result<Vec<u32>> {
        if self.host_memory() != HostMemory::Pipelined {
            return phased::<Histogram>(self, variant, input);
        }
        Histogram::validate(input)?;
        let variant = VARIANTS.lookup::<Histogram, _>(self, variant)?;
        self.prepare_kernels(variant)?;
        let mut counts = self.zeros::<u32>(input.bins)?;
        let (ranges, chunks) = element_chunks(input.x.len(), 1, false);
        let mut devices = vec![self.uninit::<f32>(input.x.len())?];
        let job = Pipeline::<u32> {
            inputs: vec![&input.x],
            chunks,
            output_from: Vec::new(),
            launch_on_backend_stream: false,
            outputs: Vec::new(),
            output_offset: 0,
        };
        self.pipelined(job, &mut devices, &mut |stream, c, devices, _| {
            let r = ranges[c].clone();
            let x = devices[0].slice(r.clone());
            self.launch_histogram(stream, variant, &x, &mut counts.slice_mut(..), r.len(), input.bins)
        })?;
        self.to_host(&counts, input.bins)
    }
}

impl CudaBackend {
    /// Launches `variant` over the first `n` values of `x` on `stream`, adding into `counts` (`bins` counters).
    fn launch_histogram(
        &self,
        stream: &Arc<CudaStream>,
        variant: &Variant<Counters>,
        x: &CudaView<'_, f32>,
        counts: &mut CudaViewMut<'_, u32>,
        n: usize,
        bins: usize,
    ) -> Result<()> {
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        if n == 0 {
            return Ok(());
        }
        let (n, bins_arg) = (n as u64, int("bins", bins)?);
        let sms = self.multiprocessors as u64;
        let (blocks, shared) = match variant.launch {
            Counters::SharedPerBlock => (n.div_ceil(BLOCK as u64).min(4 * sms), 4 * bins.min(SHARED_BINS) as u32),
            Counters::Global => (n.div_ceil(BLOCK as u64).min(32 * sms), 0),
        };
        let cfg = config((blocks, 1), (BLOCK, 1), shared)?;
        let mut launch = stream.launch_builder(&function);
        launch.arg(x).arg(counts).arg(&n).arg(&bins_arg);
        // SAFETY: the kernels take (const float* x, unsigned* counts, unsigned long long n, int bins); x holds at
        // least n floats, counts `bins` counters the caller zeroed, which the kernels only add to atomically; the
        // private kernel gets min(bins, 12288)·4 bytes of dynamic shared memory, as it expects; both stride over x,
        // so any grid size is correct.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }
}
