//! `matmul`: `naive` (one thread per entry of C), `tiled` (32×32 shared-memory tiles), `register` (128×128 block
//! tiles, an 8×8 micro-tile of C per thread in registers, `float4` loads), `warptile` (128×256 block tiles of 64×64
//! warp tiles, an 8×16 micro-tile per thread), `prefetch` (`register` with each step's shared-memory reads issued a
//! step ahead, across the tile's barrier too), `splitk` (`prefetch` with K split over the grid where C has too few
//! tiles to fill the GPU, the slices summed by a second kernel), and the vendor references through cuBLAS:
//! `cublas` (FP32 SGEMM) and `tf32` (tensor cores in TF32: reduced precision, checked at its looser tolerance and
//! labelled so in reports). The cuBLAS variants are offered only where `libcublas` is found.
//!
//! The precision ladder (compute capability 8.0 and newer): `mma-tf32`, `mma-bf16` and `mma-fp16` are our own
//! tensor-core kernels (`mma.sync` with `ldmatrix` and a `cp.async` pipeline, `matmul_tensor_cores.cu`), each beside cuBLAS in
//! the same precision: `tf32`, `cublas-bf16` and `cublas-fp16` (`cublasGemmEx`, 16-bit A and B, `f32` C and sums).
//! On Hopper (compute capability 9.0 exactly, the `sm_90a` target), two more rungs in each 16-bit precision:
//! `wgmma-bf16` / `wgmma-fp16` (`wgmma` reading both operands from shared memory, tiles copied by `cp.async`,
//! `matmul_wgmma.cu`) and `tma-bf16` / `tma-fp16` (tiles copied by the tensor memory accelerator, one warpgroup
//! producing and two multiplying, 128 × 256 tiles of C, a persistent grid: `matmul_tma.cu`), and in TF32 `tma-tf32`
//! (the same kernel reading B transposed, which every launch does first: `wgmma` reads TF32 operands only along K).
//! The 16-bit variants round the resident f32 inputs to bf16 or fp16 on the device at their first launch and keep
//! them: later launches time the product of data resident in 16 bits, as a user holding bf16 tensors runs it.
//!
//! cuBLAS is column-major; a row-major `C = A·B` is the column-major `Cᵀ = Bᵀ·Aᵀ`, so it is called with A and B
//! swapped and no transposition.

use std::ops::Range;
use std::sync::Arc;

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys as blas_sys};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, PushKernelArg};
use gpuworthy_core::workloads::{Matmul, MatmulInput};
use gpuworthy_core::{BackendKind, Error, Implements, Precision, Result, Variant, VariantTable, Workload};

use super::{config, int, phased, run_band, run_into_fresh};
use crate::pipeline::{Chunk, OutputFrom, Pipeline, split, units_per_chunk};
use crate::tensor_map::{self, Element, TensorMap};
use crate::{CudaBackend, HostMemory, driver_error, lock};
use super::kernel_file;
use gpuworthy_core::KernelSource;

/// The naive matmul block: 16 x 16 threads, one element of C each (`matmul.cu`).
pub(crate) const MATMUL_NAIVE_BLOCK: u32 = 16;
/// The tiled matmul block and its shared-memory tile: 32 x 32 threads and elements (`matmul.cu`).
pub(crate) const MATMUL_TILE: u32 = 32;
/// Threads per block of the register-blocked matmul kernels (`register`, `warptile`, `prefetch`, `splitk`).
pub(crate) const MATMUL_BLOCKED_THREADS: u32 = 256;
/// The block of C a register-blocked kernel computes: rows, columns (`register`, `prefetch`, `splitk`).
pub(crate) const MATMUL_BLOCKED_TILE: (u32, u32) = (128, 128);
/// The columns of C a `warptile` block computes (its rows are [`MATMUL_BLOCKED_TILE`]'s).
pub(crate) const MATMUL_WARPTILE_COLUMNS: u32 = 256;

/// Threads per block of the tensor-core kernels: 8 warps, 4 x 2 warp tiles of 64 x 64.
pub(crate) const TENSOR_CORE_THREADS: u32 = 256;
/// The block of C a tensor-core kernel computes: rows, columns. 256 x 128 ran bf16 at 8192³ on an H200 at 472.6-477.7
/// TFLOP/s against 395.5-442.2 for 128 x 256, in three runs of the kernel whose fragments are loaded across its
/// barrier (measured: docs/results/nvidia-h200/precision/README.md).
pub(crate) const TENSOR_CORE_TILE: (u32, u32) = (256, 128);
/// The block of C one warp of a tensor-core kernel computes: rows, columns.
pub(crate) const TENSOR_CORE_WARP_TILE: (u32, u32) = (64, 64);
/// Blocks of a tensor-core kernel an SM must hold at once (`__launch_bounds__`): the registers a thread may take
/// follow from it.
pub(crate) const TENSOR_CORE_MIN_BLOCKS: u32 = 1;
/// The depth of one tile of K in the 16-bit kernels (four `mma` steps of 16).
pub(crate) const TENSOR_CORE_DEPTH_16BIT: u32 = 64;
/// Tiles of K the 16-bit kernels keep in flight in shared memory: four ran no faster on an H200 and need more shared
/// memory than an A100 has (measured: docs/results/nvidia-h200/precision/README.md).
pub(crate) const TENSOR_CORE_STAGES_16BIT: u32 = 3;
/// The depth of one tile of K in the TF32 kernel (four `mma` steps of 8).
pub(crate) const TENSOR_CORE_DEPTH_TF32: u32 = 32;
/// Tiles of K the TF32 kernel keeps in flight in shared memory.
pub(crate) const TENSOR_CORE_STAGES_TF32: u32 = 3;

/// Warpgroups (128 threads each) of a block of the Hopper rungs (`matmul_wgmma.cu`): each computes 64 rows of the
/// block's tile of C, so a block computes 192 rows. Three beat two (128 rows) by 13% in bf16 at 8192³ on an H200, and
/// four (256 rows, 128 registers a thread) lost to three (measured: docs/results/nvidia-h200/precision/README.md).
pub(crate) const WGMMA_WARPGROUPS: u32 = 3;
/// The columns of C a Hopper block computes: 128 (`wgmma.m64n128k16`); 256 needed all 255 registers a thread and
/// ran 27% slower.
pub(crate) const WGMMA_COLUMNS: u32 = 128;
/// Tiles of K (64 deep) a Hopper block keeps in shared memory: one being copied, one multiplied, one whose products
/// may still run, and one more in flight.
pub(crate) const WGMMA_STAGES: u32 = 4;
/// The shared memory of a Hopper block: its stages of A's and B's tiles of 16-bit values, and 1024 bytes to align
/// the first stage for the 128-byte swizzle (160 KiB).
const WGMMA_SHARED_BYTES: u32 = WGMMA_STAGES * (64 * WGMMA_WARPGROUPS + WGMMA_COLUMNS) * 64 * 2 + 1024;

/// Consumer warpgroups of a block of the TMA rungs (`matmul_tma.cu`): each multiplies 64 rows of the block's tile
/// of C by its 256 columns (`wgmma.m64n256k16`, 128 accumulators a thread), beside one warpgroup that copies.
pub(crate) const TMA_CONSUMERS: u32 = 2;
/// Tiles of K the TMA rungs keep in flight: four ran bf16 at 8192³ 4% and 20% faster than three in two runs on an
/// H200, fp16 13% (measured: docs/results/nvidia-h200/precision/README.md).
pub(crate) const TMA_STAGES: u32 = 4;
/// The rows and columns of C a block of the TMA rungs computes at a time.
const TMA_TILE: (u32, u32) = (64 * TMA_CONSUMERS, 256);
/// The shared memory of a TMA block: its stages of A's and B's tiles, two barriers a stage, and 1024 bytes to align
/// the first stage for the 128-byte swizzle (193 KiB).
const TMA_SHARED_BYTES: u32 = TMA_STAGES * (TMA_TILE.0 + TMA_TILE.1) * 64 * 2 + TMA_STAGES * 16 + 1024;
/// The depth of a tile of K in the TMA rungs, and the width of the boxes their tensor maps copy: the 128-byte
/// swizzle's span, 64 16-bit values or 32 f32 values.
const fn tma_depth(element: Element) -> u32 {
    match element {
        Element::Bits16 => 64,
        Element::F32 => 32,
    }
}

/// The dynamic shared memory a tensor-core kernel on elements of `element_bytes` takes: `stages` tiles of K
/// `depth` deep, each A's rows and B's, padded by 16 bytes (`matmul_tensor_cores.cu`: `tc_matmul`'s STAGE).
pub(crate) const fn tensor_core_shared_bytes(element_bytes: u32, depth: u32, stages: u32) -> u32 {
    let padding = 16 / element_bytes;
    let (rows, columns) = TENSOR_CORE_TILE;
    stages * element_bytes * (rows * (depth + padding) + depth * (columns + 8))
}

/// The shared memory of the 16-bit kernels: 159 KiB.
const SHARED_BYTES_16BIT: u32 = tensor_core_shared_bytes(2, TENSOR_CORE_DEPTH_16BIT, TENSOR_CORE_STAGES_16BIT);
/// The shared memory of the TF32 kernel: 159 KiB.
const SHARED_BYTES_TF32: u32 = tensor_core_shared_bytes(4, TENSOR_CORE_DEPTH_TF32, TENSOR_CORE_STAGES_TF32);

/// How our tensor-core kernels are launched: the block of C each block computes (rows, columns), its threads, and
/// its dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TensorCoreShape {
    tile: (u32, u32),
    threads: u32,
    shared_bytes: u32,
}

impl TensorCoreShape {
    /// The shape of a tensor-core variant's multiplying kernel.
    fn of(variant: &Variant<MatmulLaunch>) -> TensorCoreShape {
        match (variant.launch, variant.precision) {
            (MatmulLaunch::HopperTma, _) => TensorCoreShape {
                tile: TMA_TILE,
                threads: 128 * (TMA_CONSUMERS + 1),
                shared_bytes: TMA_SHARED_BYTES,
            },
            (MatmulLaunch::Hopper, _) => TensorCoreShape {
                tile: (64 * WGMMA_WARPGROUPS, WGMMA_COLUMNS),
                threads: 128 * WGMMA_WARPGROUPS,
                shared_bytes: WGMMA_SHARED_BYTES,
            },
            (_, precision) => TensorCoreShape {
                tile: TENSOR_CORE_TILE,
                threads: TENSOR_CORE_THREADS,
                shared_bytes: if precision == Precision::Tf32 { SHARED_BYTES_TF32 } else { SHARED_BYTES_16BIT },
            },
        }
    }
}

/// The shared memory the larger of the tensor-core kernels needs: a device that cannot give a block this much
/// (Hopper offers 227 KiB; the A100 163, compute capability 8.6 and 8.9 99) is not offered them.
const TENSOR_CORE_SHARED_BYTES: u32 =
    if SHARED_BYTES_TF32 > SHARED_BYTES_16BIT { SHARED_BYTES_TF32 } else { SHARED_BYTES_16BIT };

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("matmul.cu", ["matmul_naive", "matmul_tiled", "matmul_register", "matmul_warptile", "matmul_prefetch", "matmul_prefetch_split", "matmul_sum_slices"]);

/// The tensor-core rungs' source, a file of its own: in `matmul.cu` its templates made every matmul variant's first
/// call wait for NVRTC to compile them (4.6 s on an H200; measured: docs/results/nvidia-h200/precision/README.md).
pub(crate) const TENSOR_CORE_SOURCE: KernelSource = kernel_file!("matmul_tensor_cores.cu", ["matmul_mma_bf16", "matmul_mma_f16", "matmul_mma_tf32", "matmul_round_to_bf16", "matmul_round_to_f16", "matmul_copy_rows_f32", "matmul_transpose_f32"]);

/// The Hopper rungs' source: `wgmma` exists only in the architecture-specific target `sm_90a`, which this file alone
/// is compiled for ([`ARCHITECTURE_SPECIFIC_FILES`]).
pub(crate) const WGMMA_SOURCE: KernelSource = kernel_file!("matmul_wgmma.cu", ["matmul_wgmma_bf16", "matmul_wgmma_f16"]);

/// The TMA rungs' source, for `sm_90a` as the Hopper rungs' is (`setmaxnreg` and `wgmma`).
pub(crate) const TMA_SOURCE: KernelSource = kernel_file!("matmul_tma.cu", ["matmul_tma_bf16", "matmul_tma_f16", "matmul_tma_tf32"]);

/// The files compiled for the device's architecture-specific target (`sm_90a` rather than `sm_90`): their kernels
/// load only on that exact architecture.
pub(crate) const ARCHITECTURE_SPECIFIC_FILES: &[&str] = &[WGMMA_SOURCE.file, TMA_SOURCE.file];

/// The launch constants this workload's source takes from the host ([`crate::launch`]).
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[("MATMUL_NAIVE_BLOCK", MATMUL_NAIVE_BLOCK), ("MATMUL_TILE", MATMUL_TILE), ("RB_THREADS", MATMUL_BLOCKED_THREADS), ("RB_BM", MATMUL_BLOCKED_TILE.0), ("RB_BN", MATMUL_BLOCKED_TILE.1), ("MATMUL_WARPTILE_BN", MATMUL_WARPTILE_COLUMNS), ("TC_THREADS", TENSOR_CORE_THREADS), ("TC_BM", TENSOR_CORE_TILE.0), ("TC_BN", TENSOR_CORE_TILE.1), ("TC_WARP_M", TENSOR_CORE_WARP_TILE.0), ("TC_WARP_N", TENSOR_CORE_WARP_TILE.1), ("TC_MIN_BLOCKS", TENSOR_CORE_MIN_BLOCKS), ("TC16_STAGES", TENSOR_CORE_STAGES_16BIT), ("TC32_STAGES", TENSOR_CORE_STAGES_TF32), ("TC16_BK", TENSOR_CORE_DEPTH_16BIT), ("TC32_BK", TENSOR_CORE_DEPTH_TF32), ("WG_WARPGROUPS", WGMMA_WARPGROUPS), ("WG_BN", WGMMA_COLUMNS), ("WG_STAGES", WGMMA_STAGES), ("TMA_STAGES", TMA_STAGES), ("TMA_CONSUMERS", TMA_CONSUMERS)];

/// cuBLAS handles on the backend's stream: one in FP32, one allowed TF32 tensor cores.
pub(crate) struct Blas {
    fp32: CudaBlas,
    tf32: CudaBlas,
}

/// Resident data of `matmul`.
#[derive(Debug)]
pub struct MatmulResident {
    m: usize,
    k: usize,
    n: usize,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    c: CudaSlice<f32>,
    /// A and B rounded to a 16-bit precision by the first launch of a variant in it, kept for the next.
    halves: Option<Halves>,
    /// Where the TMA rung's TF32 kernel finds its operands laid out (B transposed; A's rows padded where K is not
    /// a multiple of 4), allocated by its first launch and refilled by every launch.
    tf32_layout: Option<Tf32Layout>,
}

/// The TMA rung's TF32 operands: B transposed (N × K) and, where K is not a multiple of 4, A (M × K), each with rows
/// `pitch` floats apart (16 bytes, the tensor maps' rule), and the tensor maps of A and of Bᵀ, encoded once: the
/// buffers they describe stay where they are.
#[derive(Debug)]
struct Tf32Layout {
    pitch: usize,
    bt: CudaSlice<f32>,
    padded_a: Option<CudaSlice<f32>>,
    maps: (TensorMap, TensorMap),
}

/// A and B in a 16-bit format (bf16 or fp16 bits).
#[derive(Debug)]
struct Halves {
    precision: Precision,
    /// The elements from one row's start to the next in `a` and `b`: K and N, or for the TMA rungs each rounded up
    /// to 8 (16 bytes, the tensor maps' rule), the padding never read.
    pitches: (usize, usize),
    a: CudaSlice<u16>,
    b: CudaSlice<u16>,
    /// The tensor maps of `a` and `b` for the TMA rungs, encoded by the first launch of one on these copies.
    tma_maps: Option<(TensorMap, TensorMap)>,
}

/// Whether cuBLAS can be loaded (cudarc panics on a missing library, so this is asked first). Asked once per
/// process: the probe opens the library, which takes tens of milliseconds, and `variants` is called on every launch.
fn cublas_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: only tries to open the shared library by name.
    *PRESENT.get_or_init(|| unsafe { blas_sys::is_culib_present() })
}

impl CudaBackend {
    fn blas(&self) -> Result<&Blas> {
        let made = self.blas.get_or_init(|| {
            if !cublas_present() {
                return Err("libcublas was not found".to_owned());
            }
            let fp32 = CudaBlas::new(self.stream.clone()).map_err(|e| e.to_string())?;
            let tf32 = CudaBlas::new(self.stream.clone()).map_err(|e| e.to_string())?;
            // SAFETY: `tf32.handle()` is a live cuBLAS handle owned by `tf32`.
            let status = unsafe {
                blas_sys::cublasSetMathMode(*tf32.handle(), blas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH)
            };
            if status != blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                return Err(format!("cublasSetMathMode(TF32) failed: {status:?}"));
            }
            Ok(Blas { fp32, tf32 })
        });
        made.as_ref().map_err(|reason| Error::Unavailable { backend: BackendKind::Cuda, reason: reason.clone() })
    }

    fn gemm(&self, handle: &CudaBlas, r: &mut MatmulResident) -> Result<()> {
        let shape = (r.m, r.k, r.n);
        self.gemm_views(handle, &r.a.slice(..), &r.b.slice(..), &mut r.c.slice_mut(..), shape)
    }

    /// cuBLAS SGEMM of `a` (m × k) by `b` (k × n) into `c` (m × n), row-major, on the handle's stream (the backend's).
    fn gemm_views(
        &self,
        handle: &CudaBlas,
        a: &CudaView<'_, f32>,
        b: &CudaView<'_, f32>,
        c: &mut CudaViewMut<'_, f32>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        let (m, k, n) = (int("M", m)?, int("K", k)?, int("N", n)?);
        let cfg = GemmConfig {
            transa: blas_sys::cublasOperation_t::CUBLAS_OP_N,
            transb: blas_sys::cublasOperation_t::CUBLAS_OP_N,
            m: n,
            n: m,
            k,
            alpha: 1.0f32,
            lda: n.max(1),
            ldb: k.max(1),
            beta: 0.0f32,
            ldc: n.max(1),
        };
        // SAFETY: column-major Cᵀ (n × m, ld n) = Bᵀ (n × k, ld n) · Aᵀ (k × m, ld k): B holds k·n floats, A m·k,
        // C m·n, all on this handle's stream.
        unsafe { handle.gemm(cfg, b, a, c) }
            .map_err(|e| Error::Device { backend: BackendKind::Cuda, message: format!("cuBLAS SGEMM: {e}") })
    }
}

/// How a matmul variant runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatmulLaunch {
    /// A kernel of ours: threads per block, and the block of C one thread block computes.
    Kernel {
        /// Threads per block.
        block: (u32, u32),
        /// The rows and columns of the block of C one thread block computes.
        tile: (u64, u64),
    },
    /// A kernel of ours over slices of K (`kernels[0]`, grid z = slice) where C's tiles alone leave block slots idle,
    /// the partial products summed into C by `kernels[1]`; where they do not, `kernels[2]` over the whole of K.
    SplitK {
        /// Threads per block.
        block: (u32, u32),
        /// The rows and columns of the block of C one thread block computes.
        tile: (u64, u64),
    },
    /// cuBLAS SGEMM in FP32.
    CublasFp32,
    /// cuBLAS SGEMM on TF32 tensor cores.
    CublasTf32,
    /// A tensor-core kernel of ours (`kernels`' last; a 16-bit variant's first rounds the inputs).
    TensorCores,
    /// `cublasGemmEx` on 16-bit A and B (rounded by `kernels[0]`), `f32` C and sums.
    CublasGemmEx,
    /// A Hopper kernel of ours (`wgmma`, compute capability 9.0 exactly): `kernels[0]` rounds the inputs to 16 bits,
    /// `kernels[1]` multiplies them.
    Hopper,
    /// A Hopper kernel of ours fed by the tensor memory accelerator (`wgmma`, `setmaxnreg` and tensor maps):
    /// `kernels`' last multiplies, those before lay the inputs out (in 16 bits: rounded into rows padded to 16 bytes;
    /// in TF32: B transposed, and A's rows padded where K is not a multiple of 4).
    HopperTma,
}

// The launch shapes of the hand-written kernels, from the constants the CUDA sources take as defines.
const NAIVE_BLOCK: (u32, u32) = (MATMUL_NAIVE_BLOCK, MATMUL_NAIVE_BLOCK);
const NAIVE_TILE: (u64, u64) = (MATMUL_NAIVE_BLOCK as u64, MATMUL_NAIVE_BLOCK as u64);
const TILED_BLOCK: (u32, u32) = (MATMUL_TILE, MATMUL_TILE);
const TILED_TILE: (u64, u64) = (MATMUL_TILE as u64, MATMUL_TILE as u64);
const BLOCKED: (u32, u32) = (MATMUL_BLOCKED_THREADS, 1);
const BLOCKED_TILE: (u64, u64) = (MATMUL_BLOCKED_TILE.0 as u64, MATMUL_BLOCKED_TILE.1 as u64);
const WARPTILE_TILE: (u64, u64) = (MATMUL_BLOCKED_TILE.0 as u64, MATMUL_WARPTILE_COLUMNS as u64);

/// The variants of `matmul`: the hand-written kernels, then cuBLAS (where it is installed; TF32 from compute
/// capability 8.0).
pub(crate) static VARIANTS: VariantTable<MatmulLaunch> = VariantTable {
    workload: "matmul",
    variants: &[
        Variant::new("naive", &["matmul_naive"], MatmulLaunch::Kernel { block: NAIVE_BLOCK, tile: NAIVE_TILE }),
        Variant::new("tiled", &["matmul_tiled"], MatmulLaunch::Kernel { block: TILED_BLOCK, tile: TILED_TILE }),
        Variant::new("register", &["matmul_register"], MatmulLaunch::Kernel { block: BLOCKED, tile: BLOCKED_TILE }),
        Variant::new("warptile", &["matmul_warptile"], MatmulLaunch::Kernel { block: BLOCKED, tile: WARPTILE_TILE }),
        Variant::new("prefetch", &["matmul_prefetch"], MatmulLaunch::Kernel { block: BLOCKED, tile: BLOCKED_TILE }),
        Variant::new(
            "splitk",
            &["matmul_prefetch_split", "matmul_sum_slices", "matmul_prefetch"],
            MatmulLaunch::SplitK { block: BLOCKED, tile: BLOCKED_TILE },
        ),
        Variant::new("cublas", &[], MatmulLaunch::CublasFp32),
        Variant::new("mma-tf32", &["matmul_mma_tf32"], MatmulLaunch::TensorCores).in_precision(Precision::Tf32),
        Variant::new("tf32", &[], MatmulLaunch::CublasTf32).in_precision(Precision::Tf32),
        Variant::new("mma-bf16", &["matmul_round_to_bf16", "matmul_mma_bf16"], MatmulLaunch::TensorCores)
            .in_precision(Precision::Bf16),
        Variant::new("cublas-bf16", &["matmul_round_to_bf16"], MatmulLaunch::CublasGemmEx).in_precision(Precision::Bf16),
        Variant::new("mma-fp16", &["matmul_round_to_f16", "matmul_mma_f16"], MatmulLaunch::TensorCores)
            .in_precision(Precision::Fp16),
        Variant::new("cublas-fp16", &["matmul_round_to_f16"], MatmulLaunch::CublasGemmEx).in_precision(Precision::Fp16),
        Variant::new("wgmma-bf16", &["matmul_round_to_bf16", "matmul_wgmma_bf16"], MatmulLaunch::Hopper)
            .in_precision(Precision::Bf16),
        Variant::new("wgmma-fp16", &["matmul_round_to_f16", "matmul_wgmma_f16"], MatmulLaunch::Hopper)
            .in_precision(Precision::Fp16),
        Variant::new("tma-tf32", &["matmul_transpose_f32", "matmul_copy_rows_f32", "matmul_tma_tf32"], MatmulLaunch::HopperTma)
            .in_precision(Precision::Tf32),
        Variant::new("tma-bf16", &["matmul_round_to_bf16", "matmul_tma_bf16"], MatmulLaunch::HopperTma)
            .in_precision(Precision::Bf16),
        Variant::new("tma-fp16", &["matmul_round_to_f16", "matmul_tma_f16"], MatmulLaunch::HopperTma)
            .in_precision(Precision::Fp16),
    ],
};

impl CudaBackend {
    /// Whether this device can run a matmul variant: cuBLAS must be installed for its variants, tensor cores in
    /// TF32, bf16 and fp16 need compute capability 8.0, and our tensor-core kernels a block's opt-in shared memory
    /// of [`TENSOR_CORE_SHARED_BYTES`].
    fn can_run(&self, launch: MatmulLaunch) -> bool {
        let tensor_cores = self.capability.0 >= 8;
        match launch {
            MatmulLaunch::Kernel { .. } | MatmulLaunch::SplitK { .. } => true,
            MatmulLaunch::CublasFp32 => cublas_present(),
            MatmulLaunch::CublasTf32 | MatmulLaunch::CublasGemmEx => cublas_present() && tensor_cores,
            MatmulLaunch::TensorCores => tensor_cores && self.shared_optin >= TENSOR_CORE_SHARED_BYTES,
            // `sm_90a` code loads on compute capability 9.0 only; NVRTC knows the target from CUDA 12.0.
            MatmulLaunch::Hopper => {
                self.capability == (9, 0)
                    && crate::nvrtc_version() >= (12, 0)
                    && self.shared_optin >= WGMMA_SHARED_BYTES
            }
            MatmulLaunch::HopperTma => {
                self.capability == (9, 0)
                    && crate::nvrtc_version() >= (12, 0)
                    && crate::tensor_map::driver_has_tensor_maps()
                    && self.shared_optin >= TMA_SHARED_BYTES
            }
        }
    }

    /// Rounds the resident's A and B to `precision` (bf16 or fp16) with `kernel` into [`MatmulResident::halves`],
    /// their rows padded to 16 bytes where `padded` (the TMA rungs), unless an earlier launch did.
    fn halves(&self, r: &mut MatmulResident, precision: Precision, kernel: &'static str, padded: bool) -> Result<()> {
        let pitches = if padded { (r.k.next_multiple_of(8), r.n.next_multiple_of(8)) } else { (r.k, r.n) };
        if r.halves.as_ref().is_none_or(|h| h.precision != precision || h.pitches != pitches) {
            let mut a = self.zeros::<u16>(r.m * pitches.0)?;
            let mut b = self.zeros::<u16>(r.k * pitches.1)?;
            self.lay_out_rows(kernel, &r.a.slice(..), &mut a, (r.m, r.k, pitches.0))?;
            self.lay_out_rows(kernel, &r.b.slice(..), &mut b, (r.k, r.n, pitches.1))?;
            r.halves = Some(Halves { precision, pitches, a, b, tma_maps: None });
        }
        Ok(())
    }

    /// Rounds (or copies) the row-major `rows` × `columns` floats of `x` into `y`, whose rows start `pitch` elements
    /// apart, with `kernel` (`matmul_round_to_bf16`, `_f16`, or `matmul_copy_rows_f32`).
    fn lay_out_rows<T: cudarc::driver::DeviceRepr>(
        &self,
        kernel: &'static str,
        x: &CudaView<'_, f32>,
        y: &mut CudaSlice<T>,
        (rows, columns, pitch): (usize, usize, usize),
    ) -> Result<()> {
        if rows == 0 || columns == 0 {
            return Ok(());
        }
        let function = self.function(kernel)?;
        let budget = 8 * u64::from(self.multiprocessors);
        let across = (columns as u64).div_ceil(256).min(budget);
        let down = (rows as u64).min((budget / across).max(1)).min(65535);
        let (rows_arg, columns_arg, pitch_arg) = (rows as u64, columns as u64, pitch as u64);
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(x).arg(y).arg(&rows_arg).arg(&columns_arg).arg(&pitch_arg);
        // SAFETY: the kernel takes (const float* x, T* y, rows, columns, pitch) with T the 16-bit or f32 output, and
        // grid-strides over rows (y) and columns (x); x holds rows · columns floats and y rows · pitch Ts, pitch ≥
        // columns.
        unsafe { launch.launch(config((across, down), (256, 1), 0)?) }
            .map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    /// The TMA rung's `kernel` on the backend's stream: `c` (m × n) = A (m × k) · B (k × n), read through the tensor
    /// maps of A and of B (N-major for 16-bit inputs, transposed for TF32). The grid is persistent: one block an SM
    /// at most, each taking tiles of C in turn.
    fn launch_tma_kernel(
        &self,
        kernel: &'static str,
        (map_a, map_b): (&TensorMap, &TensorMap),
        c: &mut CudaViewMut<'_, f32>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        let function = self.function(kernel)?;
        let tiles = (m as u64).div_ceil(u64::from(TMA_TILE.0)) * (n as u64).div_ceil(u64::from(TMA_TILE.1));
        int("tiles of C", tiles as usize)?;
        let grid = tiles.min(u64::from(self.multiprocessors));
        let cfg = config((grid, 1), (128 * (TMA_CONSUMERS + 1), 1), TMA_SHARED_BYTES)?;
        let (m, k, n) = (int("M", m)?, int("K", k)?, int("N", n)?);
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(map_a).arg(map_b).arg(c).arg(&m).arg(&k).arg(&n);
        // SAFETY: the kernel takes (TmaTensorMap A, TmaTensorMap B, float* C, int M, int K, int N); the maps describe
        // A's M × K and B's K × N (or N × K) values as allocated, c holds M · N floats, the blocks stride over every
        // tile of C, and the dynamic shared memory is the kernel's, which `prepare` allowed it.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    /// The TMA rung in a 16-bit precision: the resident's inputs rounded once into rows padded to 16 bytes (kept
    /// for later launches, as the other 16-bit rungs keep theirs), B read as it lies.
    fn tma_16_bits(&self, variant: &Variant<MatmulLaunch>, r: &mut MatmulResident) -> Result<()> {
        let [round, kernel] = variant.kernels else { unreachable!("a 16-bit rung rounds, then multiplies") };
        let (m, k, n) = (r.m, r.k, r.n);
        if k == 0 {
            // No products: C is zeros. (A tensor map of no columns does not exist.)
            return self.stream.memset_zeros(&mut r.c).map_err(driver_error("zeroing C"));
        }
        self.halves(r, variant.precision, round, true)?;
        let MatmulResident { halves: Some(halves), c, .. } = r else { unreachable!("converted above") };
        // The kernel reads A and B through the maps: their uses are recorded on the stream as a launch argument's are.
        let (a_address, _a_in_use) = halves.a.device_ptr(&self.stream);
        let (b_address, _b_in_use) = halves.b.device_ptr(&self.stream);
        if halves.tma_maps.is_none() {
            let depth = tma_depth(Element::Bits16);
            let map_a = tensor_map::matrix(a_address, Element::Bits16, (m, k, halves.pitches.0), (depth, TMA_TILE.0))?;
            let map_b = tensor_map::matrix(b_address, Element::Bits16, (k, n, halves.pitches.1), (64, depth))?;
            halves.tma_maps = Some((map_a, map_b));
        }
        let Some((map_a, map_b)) = &halves.tma_maps else { unreachable!("encoded above") };
        self.launch_tma_kernel(kernel, (map_a, map_b), &mut c.slice_mut(..), (m, k, n))
    }

    /// The TMA rung in TF32, whose `wgmma` reads B only K-major: every launch transposes B (and, where K is not a
    /// multiple of 4, copies A into rows of 16 bytes) into the resident's layout, timed with the product.
    fn tma_tf32(&self, variant: &Variant<MatmulLaunch>, r: &mut MatmulResident) -> Result<()> {
        let [transpose, copy_rows, kernel] = variant.kernels else {
            unreachable!("the TF32 rung transposes B, pads A's rows where needed, then multiplies")
        };
        let (m, k, n) = (r.m, r.k, r.n);
        if k == 0 {
            return self.stream.memset_zeros(&mut r.c).map_err(driver_error("zeroing C"));
        }
        let pitch = k.next_multiple_of(4);
        if r.tf32_layout.is_none() {
            let padded_a = if pitch != k { Some(self.zeros::<f32>(m * pitch)?) } else { None };
            let bt = self.zeros::<f32>(n * pitch)?;
            let maps = {
                let depth = tma_depth(Element::F32);
                let (a_address, _a_in_use) = match padded_a.as_ref() {
                    Some(padded) => padded.device_ptr(&self.stream),
                    None => r.a.device_ptr(&self.stream),
                };
                let (bt_address, _bt_in_use) = bt.device_ptr(&self.stream);
                let map_a = tensor_map::matrix(a_address, Element::F32, (m, k, pitch), (depth, TMA_TILE.0))?;
                (map_a, tensor_map::matrix(bt_address, Element::F32, (n, k, pitch), (depth, TMA_TILE.1))?)
            };
            r.tf32_layout = Some(Tf32Layout { pitch, bt, padded_a, maps });
        }
        let MatmulResident { tf32_layout: Some(layout), a, b, c, .. } = r else { unreachable!("allocated above") };
        self.transpose(transpose, &b.slice(..), &mut layout.bt, (k, n, layout.pitch))?;
        if let Some(padded) = layout.padded_a.as_mut() {
            self.lay_out_rows(copy_rows, &a.slice(..), padded, (m, k, layout.pitch))?;
        }
        // The kernel reads A and Bᵀ through the maps: their uses are recorded on the stream as a launch argument's are.
        let _a_in_use = match layout.padded_a.as_ref() {
            Some(padded) => padded.device_ptr(&self.stream).1,
            None => a.device_ptr(&self.stream).1,
        };
        let _bt_in_use = layout.bt.device_ptr(&self.stream).1;
        let (map_a, map_bt) = &layout.maps;
        self.launch_tma_kernel(kernel, (map_a, map_bt), &mut c.slice_mut(..), (m, k, n))
    }

    /// Transposes the row-major `rows` × `columns` floats of `x` into `y` (`columns` rows, `pitch` floats apart) with
    /// `matmul_transpose_f32`.
    fn transpose(
        &self,
        kernel: &'static str,
        x: &CudaView<'_, f32>,
        y: &mut CudaSlice<f32>,
        (rows, columns, pitch): (usize, usize, usize),
    ) -> Result<()> {
        if rows == 0 || columns == 0 {
            return Ok(());
        }
        let function = self.function(kernel)?;
        let across = (columns as u64).div_ceil(32).min(4096);
        let down = (rows as u64).div_ceil(32).min(65535);
        let (rows_arg, columns_arg, pitch_arg) = (rows as u64, columns as u64, pitch as u64);
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(x).arg(y).arg(&rows_arg).arg(&columns_arg).arg(&pitch_arg);
        // SAFETY: the kernel takes (const float* x, float* y, rows, columns, pitch) in blocks of 32 × 8 threads and
        // strides over 32 × 32 tiles of x in both directions; x holds rows · columns floats, y columns · pitch,
        // pitch ≥ rows.
        unsafe { launch.launch(config((across, down), (32, 8), 0)?) }
            .map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    /// Launches our tensor-core `kernel` on `stream`: `c` (m × n) = `a` (m × k) · `b` (k × n), with `a` and `b`
    /// of f32 (TF32) or 16-bit values, in blocks of `shape`.
    #[allow(clippy::too_many_arguments)]
    fn launch_tensor_core_kernel<T: cudarc::driver::DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        kernel: &'static str,
        shape: TensorCoreShape,
        a: &CudaView<'_, T>,
        b: &CudaView<'_, T>,
        c: &mut CudaViewMut<'_, f32>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        let function = self.function(kernel)?;
        let (rows, columns) = (u64::from(shape.tile.0), u64::from(shape.tile.1));
        let grid = ((n as u64).div_ceil(columns), (m as u64).div_ceil(rows));
        let cfg = config(grid, (shape.threads, 1), shape.shared_bytes)?;
        let (m, k, n) = (int("M", m)?, int("K", k)?, int("N", n)?);
        let mut launch = stream.launch_builder(&function);
        launch.arg(a).arg(b).arg(c).arg(&m).arg(&k).arg(&n);
        // SAFETY: the kernels take (const T* A, const T* B, float* C, int M, int K, int N) with T float (TF32) or
        // 16-bit; a holds M·K values, b K·N, c M·N floats; the grid covers C in the shape's block tiles and threads,
        // and the dynamic shared memory is the kernel's stages, which `prepare` allowed it.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    /// `cublasGemmEx` of 16-bit `a` (m × k) by `b` (k × n) into f32 `c` (m × n), row-major, summing in f32, on the
    /// backend's stream.
    fn gemm_16_bits(&self, precision: Precision, r: &mut MatmulResident, kernel: &'static str) -> Result<()> {
        let blas = self.blas()?;
        let (m, k, n) = (int("M", r.m)?, int("K", r.k)?, int("N", r.n)?);
        let data_type = match precision {
            Precision::Bf16 => blas_sys::cudaDataType_t::CUDA_R_16BF,
            _ => blas_sys::cudaDataType_t::CUDA_R_16F,
        };
        self.halves(r, precision, kernel, false)?;
        let MatmulResident { halves: Some(halves), c, .. } = r else { unreachable!("converted above") };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let stream = &self.stream;
        let (a_ptr, _a_sync) = halves.a.device_ptr(stream);
        let (b_ptr, _b_sync) = halves.b.device_ptr(stream);
        let (c_ptr, _c_sync) = c.device_ptr_mut(stream);
        // SAFETY: column-major Cᵀ (n × m, ld n) = Bᵀ (n × k, ld n) · Aᵀ (k × m, ld k), as in `gemm_views`: B holds
        // k·n 16-bit values, A m·k, C m·n floats, all on the handle's stream (the backend's); alpha and beta are
        // f32, as CUBLAS_COMPUTE_32F wants.
        let status = unsafe {
            blas_sys::cublasGemmEx(
                *blas.fp32.handle(),
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                (&alpha as *const f32).cast(),
                b_ptr as *const std::ffi::c_void,
                data_type,
                n.max(1),
                a_ptr as *const std::ffi::c_void,
                data_type,
                k.max(1),
                (&beta as *const f32).cast(),
                c_ptr as *mut std::ffi::c_void,
                blas_sys::cudaDataType_t::CUDA_R_32F,
                n.max(1),
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP,
            )
        };
        if status != blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(Error::Device { backend: BackendKind::Cuda, message: format!("cublasGemmEx ({precision}): {status:?}") });
        }
        Ok(())
    }

    /// The matmul variant `name`, if this device can run it.
    fn matmul_variant(&self, name: &str) -> Result<&'static Variant<MatmulLaunch>> {
        match VARIANTS.find(name) {
            Some(variant) if self.can_run(variant.launch) => Ok(variant),
            _ => Err(Implements::<Matmul>::unknown_variant(self, name)),
        }
    }
}

impl Implements<Matmul> for CudaBackend {
    type Resident = MatmulResident;

    /// The hand-written kernels, then `cublas` and `tf32` where cuBLAS is installed (TF32 needs compute
    /// capability 8.0 or newer).
    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.variants.iter().filter(|v| self.can_run(v.launch)).map(|v| v.name).collect()
    }

    /// The fastest full-precision kernel of the project (`cublas` is the vendor's reference and `tf32` computes in
    /// reduced precision, so neither is chosen for the caller): `splitk` at every size, which is `prefetch` where C
    /// has tiles enough to fill the GPU and splits K where it has not (measured on an H200:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    fn best_variant(&self, _params: &<Matmul as gpuworthy_core::Workload>::Params) -> &'static str {
        "splitk"
    }

    fn precision(&self, variant: &str) -> Precision {
        VARIANTS.precision(variant)
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        let variant = self.matmul_variant(variant)?;
        match variant.launch {
            MatmulLaunch::Kernel { .. } | MatmulLaunch::SplitK { .. } => self.prepare_kernels(variant),
            MatmulLaunch::CublasFp32 | MatmulLaunch::CublasTf32 => self.blas().map(drop),
            MatmulLaunch::CublasGemmEx => {
                self.prepare_kernels(variant)?;
                self.blas().map(drop)
            }
            MatmulLaunch::TensorCores | MatmulLaunch::Hopper | MatmulLaunch::HopperTma => {
                self.prepare_kernels(variant)?;
                let kernel = variant.kernels.last().expect("a tensor-core variant names its kernel");
                let shared = TensorCoreShape::of(variant).shared_bytes;
                let mut allowed = lock(&self.large_shared);
                if !allowed.contains(kernel) {
                    self.function(kernel)?
                        .set_attribute(
                            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            shared as i32,
                        )
                        .map_err(driver_error(format!("allowing {kernel} {shared} bytes of shared memory")))?;
                    allowed.insert(kernel);
                }
                Ok(())
            }
        }
    }

    fn upload(&self, input: &MatmulInput) -> Result<MatmulResident> {
        Matmul::validate(input)?;
        let MatmulInput { m, k, n, .. } = *input;
        for (what, d) in [("M", m), ("K", k), ("N", n)] {
            int(what, d)?;
        }
        Ok(MatmulResident {
            m,
            k,
            n,
            a: self.to_device(&input.a)?,
            b: self.to_device(&input.b)?,
            c: self.zeros(m * n)?,
            halves: None,
            tf32_layout: None,
        })
    }

    fn launch(&self, variant: &str, r: &mut MatmulResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = self.matmul_variant(variant)?;
        Implements::<Matmul>::prepare(self, variant.name)?;
        if r.m == 0 || r.n == 0 {
            return Ok(());
        }
        let shape = (r.m, r.k, r.n);
        let (a, b, mut c) = (r.a.slice(..), r.b.slice(..), r.c.slice_mut(..));
        match variant.launch {
            MatmulLaunch::Kernel { block, tile } => {
                self.launch_matmul_kernel(&self.stream, variant.kernels[0], (block, tile), &a, &b, &mut c, shape)
            }
            MatmulLaunch::SplitK { block, tile } => {
                self.launch_split_matmul(&self.stream, variant.kernels, (block, tile), &a, &b, &mut c, shape)
            }
            MatmulLaunch::CublasFp32 => self.gemm(&self.blas()?.fp32, r),
            MatmulLaunch::CublasTf32 => self.gemm(&self.blas()?.tf32, r),
            MatmulLaunch::TensorCores if variant.precision == Precision::Tf32 => {
                let blocks = TensorCoreShape::of(variant);
                self.launch_tensor_core_kernel(&self.stream, variant.kernels[0], blocks, &a, &b, &mut c, shape)
            }
            MatmulLaunch::TensorCores | MatmulLaunch::Hopper => {
                let [round, kernel] = variant.kernels else { unreachable!("a 16-bit rung rounds, then multiplies") };
                self.halves(r, variant.precision, round, false)?;
                let MatmulResident { halves: Some(halves), c, .. } = r else { unreachable!("converted above") };
                let (a, b) = (halves.a.slice(..), halves.b.slice(..));
                let blocks = TensorCoreShape::of(variant);
                self.launch_tensor_core_kernel(&self.stream, kernel, blocks, &a, &b, &mut c.slice_mut(..), shape)
            }
            MatmulLaunch::HopperTma if variant.precision == Precision::Tf32 => self.tma_tf32(variant, r),
            MatmulLaunch::HopperTma => self.tma_16_bits(variant, r),
            MatmulLaunch::CublasGemmEx => self.gemm_16_bits(variant.precision, r, variant.kernels[0]),
        }
    }

    fn run(&self, variant: &str, input: &MatmulInput) -> Result<Vec<f32>> {
        run_into_fresh::<Matmul>(self, variant, input)
    }

    /// Pipelined by row blocks of A (see [`HostMemory::Pipelined`]): B is uploaded whole first, then each chunk of
    /// A's rows (a multiple of 128, the block tiles' height) is uploaded while the rows of C before it are computed
    /// and downloaded. The cuBLAS variants run on the backend's stream, which the engine orders after each chunk's
    /// upload and before its download.
    /// The 16-bit variants run phased: their inputs are rounded on the device whole, before the product.
    fn run_into(&self, variant: &str, input: &MatmulInput, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined || runs_whole(variant) {
            *output = phased::<Matmul>(self, variant, input)?;
            return Ok(());
        }
        Matmul::validate(input)?;
        crate::memory::host_output(output, input.m * input.n);
        self.matmul_pipelined(variant, input, 0..input.m, output)
    }

    /// Pipelined (and not a rung that lays its inputs out whole), a group member's rows of A are read straight from
    /// the caller's A and its rows of C written into its place in the group's output, B uploaded whole; otherwise
    /// cut and copied in, as by default.
    fn reads_parts_in_place(&self, variant: &str, _params: &<Matmul as gpuworthy_core::Workload>::Params) -> bool {
        self.host_memory() == HostMemory::Pipelined && !runs_whole(variant)
    }

    fn run_part(
        &self,
        variant: &str,
        input: &MatmulInput,
        rows: Range<usize>,
        place: &mut gpuworthy_core::PartOutput<'_>,
    ) -> Result<()> {
        let in_place = Implements::<Matmul>::reads_parts_in_place(self, variant, &Matmul::params(input));
        let band = |output: &mut [f32]| self.matmul_pipelined(variant, input, rows.clone(), output);
        run_band::<Matmul>(self, (variant, input), rows.clone(), place, (in_place, input.m, input.n), band)
    }

    fn download(&self, r: &mut MatmulResident) -> Result<Vec<f32>> {
        self.to_host(&r.c, r.m * r.n)
    }

    /// Straight from the device into the member's rows of the group's C.
    fn download_part(
        &self,
        r: &mut MatmulResident,
        _input: &MatmulInput,
        _rows: Range<usize>,
        place: &mut gpuworthy_core::PartOutput<'_>,
    ) -> Result<()> {
        self.copy_to_host(&r.c, place.single_f32(r.m * r.n)?)
    }
}

impl CudaBackend {
    /// Rows `rows` of C = A·B into `output` (`rows.len()` rows of C), pipelined by row blocks of those rows of A: B
    /// is uploaded whole first, then each chunk of A's rows (a multiple of 128, the block tiles' height) is uploaded
    /// while the rows of C before it are computed and downloaded. The cuBLAS variants run on the backend's stream,
    /// which the engine orders after each chunk's upload and before its download.
    fn matmul_pipelined(
        &self,
        variant: &str,
        input: &MatmulInput,
        rows: Range<usize>,
        output: &mut [f32],
    ) -> Result<()> {
        let MatmulInput { k, n, .. } = *input;
        let m = rows.len();
        for (what, d) in [("M", input.m), ("K", k), ("N", n)] {
            int(what, d)?;
        }
        let variant = self.matmul_variant(variant)?;
        Implements::<Matmul>::prepare(self, variant.name)?;
        if m * n == 0 || k == 0 {
            output.fill(0.0); // no products: C is zeros (a reused output held another result)
            return Ok(());
        }
        let b = self.to_device(&input.b)?;
        let rows_per_chunk = units_per_chunk(4 * k, m, 1).next_multiple_of(128);
        let row_ranges: Vec<Range<usize>> = split(m, rows_per_chunk).collect();
        let mut devices = vec![self.uninit::<f32>(m * k)?];
        let mut c = self.uninit::<f32>(m * n)?;
        let chunks = row_ranges
            .iter()
            .map(|r| {
                let rows_of_a = r.start * k..r.end * k;
                Chunk { uploads: vec![rows_of_a], reads_neighbours: false, download: r.start * n..r.end * n }
            })
            .collect();
        let blas = match variant.launch {
            MatmulLaunch::Kernel { .. }
            | MatmulLaunch::SplitK { .. }
            | MatmulLaunch::TensorCores
            | MatmulLaunch::Hopper
            | MatmulLaunch::HopperTma => None,
            _ => Some(self.blas()?),
        };
        let job = Pipeline {
            inputs: vec![&input.a[rows.start * k..rows.end * k]],
            chunks,
            output_from: vec![OutputFrom::Buffer(&mut c)],
            launch_on_backend_stream: blas.is_some(), // cuBLAS's handles are bound to the backend's stream
            outputs: vec![output],
            output_offset: 0,
        };
        self.pipelined(job, &mut devices, &mut |stream, ci, devices, output_from| {
            let [OutputFrom::Buffer(c)] = output_from else { unreachable!("matmul streams its own output buffer") };
            let r = row_ranges[ci].clone();
            let a = devices[0].slice(r.start * k..r.end * k);
            let mut c = c.slice_mut(r.start * n..r.end * n);
            let shape = (r.len(), k, n);
            match (variant.launch, blas) {
                (MatmulLaunch::Kernel { block, tile }, _) => self.launch_matmul_kernel(
                    stream,
                    variant.kernels[0],
                    (block, tile),
                    &a,
                    &b.slice(..),
                    &mut c,
                    shape,
                ),
                (MatmulLaunch::SplitK { block, tile }, _) => {
                    self.launch_split_matmul(stream, variant.kernels, (block, tile), &a, &b.slice(..), &mut c, shape)
                }
                (MatmulLaunch::TensorCores, _) => {
                    let blocks = TensorCoreShape::of(variant);
                    self.launch_tensor_core_kernel(stream, variant.kernels[0], blocks, &a, &b.slice(..), &mut c, shape)
                }
                (MatmulLaunch::Hopper | MatmulLaunch::HopperTma, _) => {
                    unreachable!("the 16-bit and TMA rungs run whole (`runs_whole`)")
                }
                (launch, Some(blas)) => {
                    // `stream` is the backend's here (launch_on_backend_stream): the one the handles run on.
                    let handle = if launch == MatmulLaunch::CublasTf32 { &blas.tf32 } else { &blas.fp32 };
                    self.gemm_views(handle, &a, &b.slice(..), &mut c, shape)
                }
                (_, None) => unreachable!("cuBLAS was opened above for its variants"),
            }
        })?;
        Ok(())
    }
}

/// Whether a variant runs phased even on pipelined host memory: the 16-bit rungs round their inputs whole on the
/// device, and the TMA rungs lay theirs out whole (rows padded to 16 bytes, B transposed for TF32) before the product.
fn runs_whole(variant: &str) -> bool {
    matches!(VARIANTS.precision(variant), Precision::Bf16 | Precision::Fp16)
        || VARIANTS.find(variant).is_some_and(|v| v.launch == MatmulLaunch::HopperTma)
}

/// The shallowest slice of K split-K cuts (sixteen of the kernel's K-tiles of 8): shallower, the slices' loads and
/// the sum cost more than the idle multiprocessors they fill.
const MIN_SLICE_DEPTH: usize = 128;

/// How many slices of K to split a product of `tiles` block tiles and depth `k` into, on a device that holds
/// `block_slots` blocks at once: as many as fill the slots once (more would start a second, mostly idle wave), each
/// at least [`MIN_SLICE_DEPTH`] deep; 1 (no split) where the tiles fill the slots alone. Since tiles × slices never
/// exceeds the slots, the partial products never hold more than `block_slots` tiles of floats (17 MiB on an H200).
fn split_k_slices(tiles: u64, block_slots: u64, k: usize) -> usize {
    let filling = (block_slots / tiles.max(1)).max(1);
    let deepest = (k / MIN_SLICE_DEPTH).max(1) as u64;
    filling.min(deepest) as usize
}

impl CudaBackend {
    /// Launches split-K matmul (`kernels`: the sliced product, the sum of slices and the unsliced product, with
    /// their block and tile) on `stream`: `c` (m × n) = `a` (m × k) · `b` (k × n), K cut into [`split_k_slices`]
    /// slices whose partial products go to a buffer allocated on `stream` and are then summed into `c`. With one
    /// slice the unsliced kernel runs instead: the sliced one, with one slice, computes the same but ran slower
    /// (its slice offsets cost registers and address arithmetic; measured on an H200:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    #[allow(clippy::too_many_arguments)]
    fn launch_split_matmul(
        &self,
        stream: &Arc<CudaStream>,
        kernels: &[&'static str],
        (block, tile): ((u32, u32), (u64, u64)),
        a: &CudaView<'_, f32>,
        b: &CudaView<'_, f32>,
        c: &mut CudaViewMut<'_, f32>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        let [product, sum, whole] = kernels else { unreachable!("split-K has its product, sum and whole kernels") };
        let grid = ((n as u64).div_ceil(tile.1), (m as u64).div_ceil(tile.0));
        // Two blocks per multiprocessor: the kernel's __launch_bounds__(256, 2).
        let wanted = split_k_slices(grid.0 * grid.1, 2 * u64::from(self.multiprocessors), k);
        let depth = if wanted == 1 { k } else { k.div_ceil(wanted).next_multiple_of(8) };
        let slices = if wanted == 1 { 1 } else { k.div_ceil(depth) };
        if slices == 1 {
            return self.launch_matmul_kernel(stream, whole, (block, tile), a, b, c, (m, k, n));
        }
        let mut cfg = config(grid, block, 0)?;
        cfg.grid_dim.2 = slices as u32;
        let (mi, ki, ni, depth_arg) = (int("M", m)?, int("K", k)?, int("N", n)?, int("K", depth)?);
        let count = m * n;
        // SAFETY: every slice's kernel writes all M·N floats of its partial product (the grid covers C, and every
        // in-bounds entry of a tile is stored) before the sum, later on the same stream, reads them.
        let parts = unsafe { stream.alloc::<f32>(slices * count) }
            .map_err(driver_error(format!("allocating {} bytes of split-K partial products", slices * count * 4)))?;
        let (count_arg, slices_arg, stride) = (count as u64, slices as i32, count as u64);
        let function = self.function(product)?;
        let mut launch = stream.launch_builder(&function);
        launch.arg(a).arg(b).arg(&parts).arg(&mi).arg(&ki).arg(&ni).arg(&depth_arg).arg(&stride);
        // SAFETY: the kernel takes (const float* A, const float* B, float* parts, int M, int K, int N, int slice_depth,
        // unsigned long long slice_stride); a holds M·K floats, b K·N, and parts `slices` partial products of M·N
        // floats `stride` apart; slice z reads columns z·depth.. of A and rows z·depth.. of B, all below K; the grid
        // covers C in 128 × 128 tiles, `slices` deep.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {product}")))?;
        let sum_fn = self.function(sum)?;
        let blocks = (count as u64).div_ceil(4 * 256).min(8 * u64::from(self.multiprocessors));
        let mut launch = stream.launch_builder(&sum_fn);
        launch.arg(&parts).arg(c).arg(&count_arg).arg(&slices_arg).arg(&stride);
        // SAFETY: the kernel takes (const float* parts, float* C, unsigned long long count, int slices,
        // unsigned long long slice_stride); parts holds `slices` blocks of `count` floats `stride` apart and c holds
        // `count` floats; it grid-strides over `count`.
        unsafe { launch.launch(config((blocks, 1), (256, 1), 0)?) }
            .map_err(driver_error(format!("launching {sum}")))?;
        Ok(())
    }

    /// Launches our matmul `kernel` (with its block and tile) on `stream`: `c` (m × n) = `a` (m × k) · `b` (k × n).
    #[allow(clippy::too_many_arguments)]
    fn launch_matmul_kernel(
        &self,
        stream: &Arc<CudaStream>,
        kernel: &'static str,
        (block, tile): ((u32, u32), (u64, u64)),
        a: &CudaView<'_, f32>,
        b: &CudaView<'_, f32>,
        c: &mut CudaViewMut<'_, f32>,
        (m, k, n): (usize, usize, usize),
    ) -> Result<()> {
        let function = self.function(kernel)?;
        let cfg = config(((n as u64).div_ceil(tile.1), (m as u64).div_ceil(tile.0)), block, 0)?;
        let (m, k, n) = (int("M", m)?, int("K", k)?, int("N", n)?);
        let mut launch = stream.launch_builder(&function);
        launch.arg(a).arg(b).arg(c).arg(&m).arg(&k).arg(&n);
        // SAFETY: the kernels take (const float* A, const float* B, float* C, int M, int K, int N); a holds M·K
        // floats, b K·N, c M·N (views start at multiples of 128 rows, so 16-byte aligned wherever the whole buffers
        // are), and the grid covers C in the block tiles the kernel was written for.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tensor-core rungs whose names start with `prefix` (expected: `rungs`) on shapes the conformance tests'
    /// small ones do not reach: more tiles of C than the GPU has SMs (so that persistent blocks take several and the
    /// stages' barriers go round many phases), ragged edges in every dimension, K and N that are not multiples of 8
    /// (rows padded for the tensor maps), blocks wholly inside beside blocks with edges (the `mma.sync` kernel's two
    /// loops), K of one tile and of fewer tiles than stages, and matrices whose tiles are all inside. Each result is
    /// checked at its precision's bound against the f64 reference; a machine without such a GPU skips with the reason.
    fn rungs_are_right_on_many_tiles_and_ragged_edges(prefix: &str, rungs: &[&str], which_gpus: &str) {
        use gpuworthy_core::Backend;
        use gpuworthy_core::workloads::MatmulParams;
        let Some(cuda) = BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) else { return };
        let offered: Vec<&str> = Implements::<Matmul>::variants(&cuda).into_iter().filter(|v| v.starts_with(prefix)).collect();
        if offered.is_empty() {
            eprintln!("skipped: {} has no {prefix} rungs ({which_gpus})", cuda.device().name);
            return;
        }
        assert_eq!(offered, rungs);
        let shapes = [(2563, 203, 2309), (1024, 512, 4096), (300, 1, 513), (1000, 640, 1000), (512, 64, 512), (256, 128, 128)];
        for (m, k, n) in shapes {
            let input = Matmul::generate(&MatmulParams::new(m, k, n), 11).unwrap();
            let expected = Matmul::reference(&input).unwrap();
            for rung in rungs {
                let actual = Implements::<Matmul>::run(&cuda, rung, &input).unwrap();
                let precision = Implements::<Matmul>::precision(&cuda, rung);
                if let Err(mismatch) = Matmul::check(&input, &expected, &actual, precision) {
                    panic!("{rung} at {m} x {k} x {n}: {mismatch}");
                }
            }
        }
    }

    #[test]
    fn the_tma_rungs_are_right_on_many_tiles_and_ragged_edges() {
        rungs_are_right_on_many_tiles_and_ragged_edges("tma-", &["tma-tf32", "tma-bf16", "tma-fp16"], "compute capability 9.0 only");
    }

    #[test]
    fn the_mma_sync_rungs_are_right_on_many_tiles_and_ragged_edges() {
        rungs_are_right_on_many_tiles_and_ragged_edges(
            "mma-",
            &["mma-tf32", "mma-bf16", "mma-fp16"],
            "compute capability 8.0 and newer, with 159 KiB of shared memory a block",
        );
    }

    #[test]
    fn split_k_fills_the_block_slots_once_with_slices_deep_enough() {
        // An H200: 132 multiprocessors, two blocks each.
        let slots = 264;
        assert_eq!(split_k_slices(64, slots, 1024), 4, "1024³: 64 tiles, four slices of 256");
        assert_eq!(split_k_slices(256, slots, 2048), 1, "2048³: 256 tiles fill the slots alone");
        assert_eq!(split_k_slices(1024, slots, 4096), 1);
        assert_eq!(split_k_slices(1, slots, 64), 1, "too shallow to split");
        assert_eq!(split_k_slices(1, slots, 0), 1, "no depth");
        for tiles in [1u64, 2, 7, 64, 100, 132, 263, 264, 1000] {
            for k in [1, 127, 128, 129, 1000, 1 << 16, 1 << 20] {
                let slices = split_k_slices(tiles, slots, k);
                assert!(slices >= 1, "{tiles} tiles, K = {k}");
                if slices > 1 {
                    assert!(tiles * slices as u64 <= slots, "{tiles} tiles x {slices} slices start a second wave");
                    assert!(k / slices >= MIN_SLICE_DEPTH, "K = {k} in {slices} slices is too shallow");
                }
            }
        }
    }
}
