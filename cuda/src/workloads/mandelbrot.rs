//! `mandelbrot`: one thread per pixel in 16×16 blocks. The kernel uses round-to-nearest intrinsics for every
//! operation, so no multiply-add is fused and the counts match the CPU reference exactly.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use gpuworthy_core::workloads::{Mandelbrot, MandelbrotParams};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{config, int, phased, run_into_fresh};
use crate::pipeline::{Chunk, OutputFrom, Pipeline, split, units_per_chunk};
use crate::{CudaBackend, HostMemory, driver_error};
use super::kernel_file;
use gpuworthy_core::KernelSource;

/// The mandelbrot block: 16 x 16 pixels (`mandelbrot.cu`).
pub(crate) const MANDELBROT_BLOCK: (u32, u32) = (16, 16);

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("mandelbrot.cu", ["mandelbrot_naive"]);

/// The launch constants this workload's source takes from the host ([`crate::launch`]).
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[("MANDELBROT_BLOCK_X", MANDELBROT_BLOCK.0), ("MANDELBROT_BLOCK_Y", MANDELBROT_BLOCK.1)];

/// Resident data of `mandelbrot`: the parameters and the counts buffer.
#[derive(Debug)]
pub struct MandelbrotResident {
    params: MandelbrotParams,
    counts: CudaSlice<u32>,
}

/// The variants of `mandelbrot`.
pub(crate) static VARIANTS: VariantTable<()> =
    VariantTable { workload: "mandelbrot", variants: &[Variant::new("naive", &["mandelbrot_naive"], ())] };

impl Implements<Mandelbrot> for CudaBackend {
    type Resident = MandelbrotResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// The only variant.
    fn best_variant(&self, _params: &<Mandelbrot as gpuworthy_core::Workload>::Params) -> &'static str {
        "naive"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Mandelbrot, _>(self, variant)?)
    }

    fn upload(&self, p: &MandelbrotParams) -> Result<MandelbrotResident> {
        Mandelbrot::validate(p)?;
        int("image width", p.width)?;
        int("image height", p.height)?;
        Ok(MandelbrotResident { params: *p, counts: self.zeros(p.width * p.height)? })
    }

    fn launch(&self, variant: &str, r: &mut MandelbrotResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Mandelbrot, _>(self, variant)?;
        self.launch_mandelbrot(&self.stream, variant, &r.params, &mut r.counts, 0..r.params.height)
    }

    fn run(&self, variant: &str, p: &MandelbrotParams) -> Result<Vec<u32>> {
        run_into_fresh::<Mandelbrot>(self, variant, p)
    }

    /// Pipelined by rows (see [`HostMemory::Pipelined`]): nothing to upload; each chunk of rows is downloaded while
    /// the next ones are computed.
    fn run_into(&self, variant: &str, p: &MandelbrotParams, output: &mut Vec<u32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Mandelbrot>(self, variant, p)?;
            return Ok(());
        }
        Mandelbrot::validate(p)?;
        int("image width", p.width)?;
        int("image height", p.height)?;
        let variant = VARIANTS.lookup::<Mandelbrot, _>(self, variant)?;
        self.prepare_kernels(variant)?;
        crate::memory::host_output(output, p.width * p.height);
        if output.is_empty() {
            return Ok(());
        }
        let row_ranges: Vec<_> = split(p.height, units_per_chunk(4 * p.width, p.height, 1)).collect();
        let elements = |r: &Range<usize>| r.start * p.width..r.end * p.width;
        let mut counts = self.uninit::<u32>(p.width * p.height)?;
        let chunks = row_ranges
            .iter()
            .map(|r| Chunk { uploads: Vec::new(), reads_neighbours: false, download: elements(r) })
            .collect();
        let job = Pipeline {
            inputs: Vec::new(),
            chunks,
            output_from: vec![OutputFrom::Buffer(&mut counts)],
            launch_on_backend_stream: false,
            outputs: vec![output.as_mut_slice()],
            output_offset: 0,
        };
        self.pipelined(job, &mut [], &mut |stream, c, _, output_from| {
            let [OutputFrom::Buffer(counts)] = output_from else { unreachable!("mandelbrot streams its counts") };
            self.launch_mandelbrot(stream, variant, p, counts, row_ranges[c].clone())
        })?;
        Ok(())
    }

    fn download(&self, r: &mut MandelbrotResident) -> Result<Vec<u32>> {
        self.to_host(&r.counts, r.params.width * r.params.height)
    }
}

impl CudaBackend {
    /// Launches `variant` on `stream` for the rows `rows` of the image `p`, into `counts` (the whole image).
    fn launch_mandelbrot(
        &self,
        stream: &Arc<CudaStream>,
        variant: &Variant<()>,
        p: &MandelbrotParams,
        counts: &mut CudaSlice<u32>,
        rows: Range<usize>,
    ) -> Result<()> {
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        if p.width == 0 || rows.is_empty() {
            return Ok(());
        }
        let (bx, by) = MANDELBROT_BLOCK;
        let cfg = config(((p.width as u64).div_ceil(bx.into()), (rows.len() as u64).div_ceil(by.into())), (bx, by), 0)?;
        let width = int("image width", p.width)?;
        let (begin, end) = (int("row", rows.start)?, int("row", rows.end)?);
        let first_row = int("first image row", p.first_row())?;
        int("image rows", p.image_height())?;
        let (dx, dy) = p.steps();
        let mut launch = stream.launch_builder(&function);
        launch.arg(counts).arg(&width).arg(&begin).arg(&end).arg(&p.max_iter);
        launch.arg(&p.region.x_min).arg(&p.region.y_min).arg(&dx).arg(&dy).arg(&first_row);
        // SAFETY: mandelbrot_naive(unsigned* counts, int width, int row_begin, int row_end, unsigned max_iter,
        // float x_min, float y_min, float dx, float dy, int first_row); first_row + row_end fits an int (the image's
        // rows do); counts holds width·height values, row_end <= height, and the
        // grid covers the rows [row_begin, row_end).
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }
}
