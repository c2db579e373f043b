//! `scan` on CUDA: `naive` is Hillis–Steele (⌈log2 n⌉ launches, each adding the value 2^k places back, O(n log n)
//! work); `reduce_then_scan` sums tiles, scans the tiles' sums one level up (recursing until one tile holds them) and
//! scans each tile from its carry; `lookback` is the single pass with decoupled look-back, which reads and writes each
//! element once. The kernels are in `cuda/kernels/scan.cu`; every scratch buffer a variant needs is made at upload, so
//! a launch allocates nothing.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuworthy_core::workloads::Scan;
use gpuworthy_core::{Implements, KernelSource, Result, Variant, VariantTable};

use super::config;
use super::kernel_file;
use crate::{CudaBackend, driver_error};

/// Threads per block of every scan kernel.
pub(crate) const SCAN_BLOCK: u32 = 256;
/// Elements each thread scans in order inside a tile (so a tile holds `SCAN_BLOCK * SCAN_ITEMS` elements).
pub(crate) const SCAN_ITEMS: u32 = 8;
/// Elements per tile.
const TILE: usize = (SCAN_BLOCK * SCAN_ITEMS) as usize;

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource =
    kernel_file!("scan.cu", ["scan_naive", "scan_tile_sums", "scan_tile", "scan_lookback"]);

/// The launch constants this workload's source takes from the host ([`crate::launch`]).
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[("SCAN_BLOCK", SCAN_BLOCK), ("SCAN_ITEMS", SCAN_ITEMS)];

/// The variants of `scan`: the kernels each launch runs.
pub(crate) static VARIANTS: VariantTable<()> = VariantTable {
    workload: "scan",
    variants: &[
        Variant::new("naive", &["scan_naive"], ()),
        Variant::new("reduce_then_scan", &["scan_tile_sums", "scan_tile"], ()),
        Variant::new("lookback", &["scan_lookback"], ()),
    ],
};

/// One level of the reduce-then-scan: the sums of the tiles of the level below, and their inclusive scan.
#[derive(Debug)]
struct Level {
    sums: CudaSlice<f32>,
    scanned: CudaSlice<f32>,
}

/// Resident data of `scan`: input, output, and every variant's scratch.
#[derive(Debug)]
pub struct ScanResident {
    n: usize,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
    /// The other buffer of Hillis–Steele's ping-pong.
    spare: CudaSlice<f32>,
    /// The reduce-then-scan's levels, the tiles' sums first.
    levels: Vec<Level>,
    /// The look-back's tile counter, and each tile's flag.
    next_tile: CudaSlice<u32>,
    flags: CudaSlice<u32>,
    /// The look-back's published tile sums and inclusive prefixes.
    aggregates: CudaSlice<f64>,
    prefixes: CudaSlice<f64>,
}

/// The number of tiles of `n` elements.
fn tiles(n: usize) -> usize {
    n.div_ceil(TILE)
}

/// Launches `$kernel` over `$blocks` blocks of [`SCAN_BLOCK`] threads with the arguments listed, in order.
macro_rules! launch_scan {
    ($backend:expr, $kernel:literal, $blocks:expr, [$($arg:expr),* $(,)?]) => {{
        let function = $backend.function($kernel)?;
        let cfg = config(($blocks as u64, 1), (SCAN_BLOCK, 1), 0)?;
        let mut launch = $backend.stream.launch_builder(&function);
        $(launch.arg($arg);)*
        // SAFETY: each call lists the arguments its kernel declares in `scan.cu`, in order and with its C types
        // (`unsigned long long` counts, `unsigned int` flags, `double` prefixes), with buffers at least as long as
        // the kernel indexes: the launch's element count, its tiles, or its level's tiles.
        unsafe { launch.launch(cfg) }.map_err(driver_error(concat!("launching ", $kernel)))?;
    }};
}

impl CudaBackend {
    /// Hillis–Steele: ⌈log2 n⌉ steps, the first reading `x`, the last writing `y`, the others ping-ponging between
    /// `y` and `spare` so that the count of steps lands the last one in `y`.
    fn scan_naive(&self, r: &mut ScanResident) -> Result<()> {
        let n = r.n as u64;
        if r.n == 1 {
            return self.stream.memcpy_dtod(&r.x, &mut r.y).map_err(driver_error("copying one element"));
        }
        let steps = u64::BITS - (n - 1).leading_zeros();
        let blocks = r.n.div_ceil(SCAN_BLOCK as usize);
        for step in 0..steps {
            let offset = 1u64 << step;
            // Writes alternate so that the last step (steps - 1) writes y.
            let into_y = (steps - 1 - step).is_multiple_of(2);
            match (step, into_y) {
                (0, true) => launch_scan!(self, "scan_naive", blocks, [&r.x, &mut r.y, &n, &offset]),
                (0, false) => launch_scan!(self, "scan_naive", blocks, [&r.x, &mut r.spare, &n, &offset]),
                (_, true) => launch_scan!(self, "scan_naive", blocks, [&r.spare, &mut r.y, &n, &offset]),
                (_, false) => launch_scan!(self, "scan_naive", blocks, [&r.y, &mut r.spare, &n, &offset]),
            }
        }
        Ok(())
    }

    /// Reduce-then-scan over `x` (`n` elements) into `y`, with `levels` the scratch of the levels above.
    fn scan_levels(&self, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>, n: usize, levels: &mut [Level]) -> Result<()> {
        let count = tiles(n);
        let n64 = n as u64;
        match levels.split_first_mut() {
            Some((level, above)) if count > 1 => {
                launch_scan!(self, "scan_tile_sums", count, [x, &mut level.sums, &n64]);
                self.scan_levels(&level.sums, &mut level.scanned, count, above)?;
                launch_scan!(self, "scan_tile", count, [x, y, &n64, &level.scanned]);
            }
            // One tile: no carry is read; x stands in for the pointer.
            _ => launch_scan!(self, "scan_tile", count, [x, y, &n64, x]),
        }
        Ok(())
    }

    /// The single pass: zero the tile counter and flags, then one launch.
    fn scan_lookback(&self, r: &mut ScanResident) -> Result<()> {
        let what = "zeroing the look-back's flags";
        self.stream.memset_zeros(&mut r.next_tile).map_err(driver_error(what))?;
        self.stream.memset_zeros(&mut r.flags).map_err(driver_error(what))?;
        let n = r.n as u64;
        let (x, y, next_tile, flags) = (&r.x, &mut r.y, &mut r.next_tile, &mut r.flags);
        launch_scan!(self, "scan_lookback", tiles(r.n), [x, y, &n, next_tile, flags, &mut r.aggregates, &mut r.prefixes]);
        Ok(())
    }
}

impl Implements<Scan> for CudaBackend {
    type Resident = ScanResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `reduce_then_scan`: the fastest measured at every size from 2^20 (its look-back rival waits on the chain
    /// of published prefixes; `docs/results/nvidia-h200/scan/`).
    fn best_variant(&self, _params: &<Scan as gpuworthy_core::Workload>::Params) -> &'static str {
        "reduce_then_scan"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Scan, _>(self, variant)?)
    }

    fn upload(&self, x: &Vec<f32>) -> Result<ScanResident> {
        let n = x.len();
        let mut levels = Vec::new();
        let mut count = tiles(n);
        while count > 1 {
            levels.push(Level { sums: self.zeros(count)?, scanned: self.zeros(count)? });
            count = tiles(count);
        }
        let tile_count = tiles(n).max(1);
        Ok(ScanResident {
            n,
            x: self.to_device(x)?,
            y: self.zeros(n)?,
            spare: self.zeros(n)?,
            levels,
            next_tile: self.zeros(1)?,
            flags: self.zeros(tile_count)?,
            aggregates: self.zeros(tile_count)?,
            prefixes: self.zeros(tile_count)?,
        })
    }

    fn launch(&self, variant: &str, r: &mut ScanResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Scan, _>(self, variant)?;
        if r.n == 0 {
            return Ok(());
        }
        match variant.name {
            "naive" => self.scan_naive(r),
            "reduce_then_scan" => self.scan_levels(&r.x, &mut r.y, r.n, &mut r.levels),
            _ => self.scan_lookback(r),
        }
    }

    fn download(&self, r: &mut ScanResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.n)
    }
}
