//! `stencil`: the 3×3 box blur. `naive` reads nine neighbours from global memory per pixel (the cache catches most
//! of them); `tiled` stages a 34×34 tile with its halo in shared memory and computes a 32×32 output tile from it.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use gpuworthy_core::workloads::{Stencil, StencilInput};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{config, int, phased, run_into_fresh};
use crate::pipeline::{Chunk, OutputFrom, Pipeline, split, units_per_chunk};
use crate::{CudaBackend, HostMemory, driver_error};
use super::kernel_file;
use gpuworthy_core::KernelSource;

/// The stencil block: 32 columns x 8 rows of threads (`stencil.cu`).
pub(crate) const STENCIL_BLOCK: (u32, u32) = (32, 8);
/// The output tile of the tiled stencil: 32 x 32 pixels per block, staged with its halo in shared memory
/// (`stencil.cu`).
pub(crate) const STENCIL_TILE: u32 = 32;

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("stencil.cu", ["stencil_naive", "stencil_tiled"]);

/// The launch constants this workload's source takes from the host ([`crate::launch`]).
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[("STENCIL_BLOCK_X", STENCIL_BLOCK.0), ("STENCIL_BLOCK_Y", STENCIL_BLOCK.1), ("STENCIL_TILE", STENCIL_TILE)];

/// Resident data of `stencil`.
#[derive(Debug)]
pub struct StencilResident {
    height: usize,
    width: usize,
    src: CudaSlice<f32>,
    dst: CudaSlice<f32>,
}

/// The variants of `stencil`, with the rows of output one block covers (blocks are 32 × 8 threads).
pub(crate) static VARIANTS: VariantTable<u64> = VariantTable {
    workload: "stencil",
    variants: &[
        Variant::new("naive", &["stencil_naive"], STENCIL_BLOCK.1 as u64),
        Variant::new("tiled", &["stencil_tiled"], STENCIL_TILE as u64),
    ],
};

impl Implements<Stencil> for CudaBackend {
    type Resident = StencilResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `tiled`: the halo staged in shared memory, faster at 8192² on an H200 (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    fn best_variant(&self, _params: &<Stencil as gpuworthy_core::Workload>::Params) -> &'static str {
        "tiled"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Stencil, _>(self, variant)?)
    }

    fn upload(&self, input: &StencilInput) -> Result<StencilResident> {
        Stencil::validate(input)?;
        int("image height", input.height)?;
        int("image width", input.width)?;
        Ok(StencilResident {
            height: input.height,
            width: input.width,
            src: self.to_device(&input.data)?,
            dst: self.zeros(input.data.len())?,
        })
    }

    fn launch(&self, variant: &str, r: &mut StencilResident) -> Result<()> {
        let _queue = self.hold_queue();
        let variant = VARIANTS.lookup::<Stencil, _>(self, variant)?;
        let shape = (r.height, r.width);
        self.launch_stencil(&self.stream, variant, &r.src, &mut r.dst, shape, 0..r.height)
    }

    fn run(&self, variant: &str, input: &StencilInput) -> Result<Vec<f32>> {
        run_into_fresh::<Stencil>(self, variant, input)
    }

    /// Pipelined by rows with halos (see [`HostMemory::Pipelined`]): chunk c uploads its rows and computes the rows
    /// whose neighbours are all on the device by then, from the last row of chunk c - 1 to the last but one of its
    /// own (the last chunk finishes the image), waiting for the uploads of the two chunks before it, which ran on
    /// other streams.
    fn run_into(&self, variant: &str, input: &StencilInput, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Stencil>(self, variant, input)?;
            return Ok(());
        }
        Stencil::validate(input)?;
        let variant = VARIANTS.lookup::<Stencil, _>(self, variant)?;
        self.prepare_kernels(variant)?;
        let (height, width) = (input.height, input.width);
        int("image height", height)?;
        int("image width", width)?;
        crate::memory::host_output(output, height * width);
        if height * width == 0 {
            return Ok(());
        }
        // At least two rows a chunk, so that the rows a kernel reads above its first are in the chunk before.
        let uploaded: Vec<_> = split(height, units_per_chunk(4 * width, height, 2)).collect();
        let last = uploaded.len() - 1;
        let computed: Vec<Range<usize>> = uploaded
            .iter()
            .enumerate()
            .map(|(c, r)| {
                let begin = if c == 0 { 0 } else { r.start - 1 };
                let end = if c == last { height } else { r.end - 1 };
                begin..end
            })
            .collect();
        let elements = |r: &Range<usize>| r.start * width..r.end * width;
        let mut devices = vec![self.uninit::<f32>(height * width)?];
        let mut dst = self.uninit::<f32>(height * width)?;
        let chunks = uploaded
            .iter()
            .zip(&computed)
            .map(|(up, out)| Chunk { uploads: vec![elements(up)], reads_neighbours: true, download: elements(out) })
            .collect();
        let job = Pipeline {
            inputs: vec![&input.data],
            chunks,
            output_from: vec![OutputFrom::Buffer(&mut dst)],
            launch_on_backend_stream: false,
            outputs: vec![output.as_mut_slice()],
        };
        self.pipelined(job, &mut devices, &mut |stream, c, devices, output_from| {
            let [OutputFrom::Buffer(dst)] = output_from else { unreachable!("stencil streams its own output buffer") };
            self.launch_stencil(stream, variant, &devices[0], dst, (height, width), computed[c].clone())
        })?;
        Ok(())
    }

    fn download(&self, r: &mut StencilResident) -> Result<Vec<f32>> {
        self.to_host(&r.dst, r.height * r.width)
    }
}

impl CudaBackend {
    /// Launches `variant` on `stream` for the output rows `rows` of a `shape` = (height, width) image held whole in
    /// `src` and `dst`.
    fn launch_stencil(
        &self,
        stream: &Arc<CudaStream>,
        variant: &Variant<u64>,
        src: &CudaSlice<f32>,
        dst: &mut CudaSlice<f32>,
        shape: (usize, usize),
        rows: Range<usize>,
    ) -> Result<()> {
        let (kernel, rows_per_block) = (variant.kernels[0], variant.launch);
        let function = self.function(kernel)?;
        let (height, width) = shape;
        if rows.is_empty() || width == 0 {
            return Ok(());
        }
        let block = STENCIL_BLOCK;
        let cfg =
            config(((width as u64).div_ceil(block.0.into()), (rows.len() as u64).div_ceil(rows_per_block)), block, 0)?;
        let (h, w) = (int("image height", height)?, int("image width", width)?);
        let (begin, end) = (int("row", rows.start)?, int("row", rows.end)?);
        let mut launch = stream.launch_builder(&function);
        launch.arg(src).arg(dst).arg(&h).arg(&w).arg(&begin).arg(&end);
        // SAFETY: the kernels take (const float* src, float* dst, int height, int width, int row_begin, int row_end);
        // both hold height·width floats, row_begin < row_end <= height, and the grid covers those rows in the tiles
        // the kernel was written for. The rows the kernels read (row_begin - 1 to row_end, clamped) were uploaded
        // before this launch on this stream or on one it waited for.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }
}
