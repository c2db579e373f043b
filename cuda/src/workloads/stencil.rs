//! `stencil`: the 3×3 box blur. `naive` reads nine neighbours from global memory per pixel (the cache catches most
//! of them); `tiled` stages a 34×34 tile with its halo in shared memory and computes a 32×32 output tile from it.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use gpuworthy_core::workloads::{Stencil, StencilInput};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{config, int, phased, run_band, run_into_fresh};
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
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Stencil, _>(self, variant)?;
        let shape = (r.height, r.width);
        self.launch_stencil(&self.stream, variant, &r.src, &mut r.dst, shape, 0..r.height)
    }

    fn run(&self, variant: &str, input: &StencilInput) -> Result<Vec<f32>> {
        run_into_fresh::<Stencil>(self, variant, input)
    }

    /// Pipelined by rows with halos (see [`CudaBackend::stencil_pipelined`]).
    fn run_into(&self, variant: &str, input: &StencilInput, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Stencil>(self, variant, input)?;
            return Ok(());
        }
        Stencil::validate(input)?;
        crate::memory::host_output(output, input.height * input.width);
        self.stencil_pipelined(variant, input, 0..input.height, output)
    }

    fn reads_parts_in_place(&self, _variant: &str, _params: &<Stencil as gpuworthy_core::Workload>::Params) -> bool {
        self.host_memory() == HostMemory::Pipelined
    }

    /// Pipelined, a group member's band of rows reads its rows and their halo rows straight from the caller's image
    /// and writes its rows into its place in the group's output (page-locked arrays and all); phase by phase, the
    /// band is cut with its halo and copied in, as by default.
    fn run_part(
        &self,
        variant: &str,
        input: &StencilInput,
        rows: Range<usize>,
        place: &mut gpuworthy_core::PartOutput<'_>,
    ) -> Result<()> {
        let in_place = Implements::<Stencil>::reads_parts_in_place(self, variant, &Stencil::params(input));
        let shape = (in_place, input.height, input.width);
        let band = |output: &mut [f32]| self.stencil_pipelined(variant, input, rows.clone(), output);
        run_band::<Stencil>(self, (variant, input), rows.clone(), place, shape, band)
    }

    fn download(&self, r: &mut StencilResident) -> Result<Vec<f32>> {
        self.to_host(&r.dst, r.height * r.width)
    }

    /// The band's own rows, after its halo row above (where it has one), straight from the device into the member's
    /// rows of the group's output.
    fn download_part(
        &self,
        r: &mut StencilResident,
        _input: &StencilInput,
        rows: Range<usize>,
        place: &mut gpuworthy_core::PartOutput<'_>,
    ) -> Result<()> {
        let leading = rows.start - rows.start.saturating_sub(1);
        if leading + rows.len() > r.height {
            return Err(gpuworthy_core::Error::invalid(format!(
                "rows {rows:?} of a band of {} rows uploaded",
                r.height
            )));
        }
        self.copy_range_to_host(&r.dst, leading * r.width, place.single_f32(rows.len() * r.width)?)
    }
}

/// How a pipelined band of the stencil moves: the image's rows it uploads (`first..last`, the band and its halo rows),
/// the rows it owns (in the band's rows), and per chunk the band's rows uploaded and the rows computed.
#[derive(Debug)]
struct BandPlan {
    first: usize,
    last: usize,
    owned: Range<usize>,
    uploaded: Vec<Range<usize>>,
    computed: Vec<Range<usize>>,
}

/// The plan of output rows `rows` (not empty, inside `height`) of an image `width` wide: chunk c computes the owned
/// rows whose neighbours are uploaded by then, from the last row of chunk c - 1 to the last but one of its own (the
/// last chunk finishes the band); a chunk holds two rows at least, so that the row a kernel reads above its first is
/// in the chunk before.
fn band_plan(height: usize, width: usize, rows: Range<usize>) -> BandPlan {
    let (first, last) = (rows.start.saturating_sub(1), (rows.end + 1).min(height));
    let band_height = last - first;
    let owned = rows.start - first..rows.end - first;
    let uploaded: Vec<_> = split(band_height, units_per_chunk(4 * width, band_height, 2)).collect();
    let final_chunk = uploaded.len() - 1;
    let computed = uploaded
        .iter()
        .enumerate()
        .map(|(c, r)| {
            let begin = if c == 0 { 0 } else { r.start - 1 }.max(owned.start);
            let end = if c == final_chunk { band_height } else { r.end - 1 }.min(owned.end);
            begin..end.max(begin)
        })
        .collect();
    BandPlan { first, last, owned, uploaded, computed }
}

impl CudaBackend {
    /// The output rows `rows` of the stencil over `input`, pipelined into `output` (`rows.len()` rows): the band and
    /// its halo rows (one above, one below, where the image has them) are uploaded chunk by chunk into a band-sized
    /// image on the device, and chunk c computes the band's rows whose neighbours are all on the device by then,
    /// from the last row of chunk c - 1 to the last but one of its own (the last chunk finishes the band), waiting for
    /// the uploads of the two chunks before it, which ran on other streams. The kernels clamp at the band's edges,
    /// which only the rows it does not own lie on, except where the band's edge is the image's.
    fn stencil_pipelined(
        &self,
        variant: &str,
        input: &StencilInput,
        rows: Range<usize>,
        output: &mut [f32],
    ) -> Result<()> {
        let variant = VARIANTS.lookup::<Stencil, _>(self, variant)?;
        self.prepare_kernels(variant)?;
        let (height, width) = (input.height, input.width);
        int("image height", height)?;
        int("image width", width)?;
        if rows.is_empty() || width == 0 {
            return Ok(());
        }
        let BandPlan { first, last, owned, uploaded, computed } = band_plan(height, width, rows);
        let band_height = last - first;
        let elements = |r: &Range<usize>| r.start * width..r.end * width;
        let mut devices = vec![self.uninit::<f32>(band_height * width)?];
        let mut dst = self.uninit::<f32>(band_height * width)?;
        let chunks = uploaded
            .iter()
            .zip(&computed)
            .map(|(up, out)| Chunk { uploads: vec![elements(up)], reads_neighbours: true, download: elements(out) })
            .collect();
        let job = Pipeline {
            inputs: vec![&input.data[first * width..last * width]],
            chunks,
            output_from: vec![OutputFrom::Buffer(&mut dst)],
            launch_on_backend_stream: false,
            outputs: vec![output],
            output_offset: owned.start * width,
        };
        self.pipelined(job, &mut devices, &mut |stream, c, devices, output_from| {
            let [OutputFrom::Buffer(dst)] = output_from else { unreachable!("stencil streams its own output buffer") };
            self.launch_stencil(stream, variant, &devices[0], dst, (band_height, width), computed[c].clone())
        })?;
        Ok(())
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every band, of one chunk or of many, whole image or a group member's: each owned row is computed exactly once,
    /// in order, by a chunk by which both its neighbours (or the image's edge) are uploaded, and the halo rows are
    /// uploaded but never computed.
    #[test]
    fn a_band_computes_each_of_its_rows_once_after_its_neighbours_arrive() {
        for (height, width) in [(1, 1), (2, 3), (7, 5), (64, 1 << 20), (101, 1 << 21)] {
            let cuts = [0..height, 0..height / 2, height / 2..height, height / 3..height / 3 + 1, 1..height];
            for rows in cuts.into_iter().filter(|r| !r.is_empty() && r.end <= height) {
                let plan = band_plan(height, width, rows.clone());
                assert_eq!(plan.first, rows.start.saturating_sub(1));
                assert_eq!(plan.last, (rows.end + 1).min(height));
                let band_height = plan.last - plan.first;
                assert_eq!(plan.uploaded.iter().map(Range::len).sum::<usize>(), band_height);
                let mut next = plan.owned.start;
                for (up, done) in plan.uploaded.iter().zip(&plan.computed) {
                    for row in done.clone() {
                        assert_eq!(row, next, "{height}x{width} rows {rows:?}: row {row} out of order");
                        next += 1;
                        let below = row + 1;
                        let image_edge = plan.first + below == height;
                        assert!(below < up.end || image_edge, "{height}x{width} rows {rows:?}: row {row} early");
                    }
                }
                assert_eq!(next, plan.owned.end, "{height}x{width} rows {rows:?}: rows left uncomputed");
                assert_eq!(plan.owned.len(), rows.len());
            }
        }
    }
}
