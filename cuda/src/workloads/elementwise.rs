//! `square` and `saxpy`: `naive` launches one thread per element; `vec4` moves `float4`s in a grid-stride loop sized
//! to the device (a few blocks per multiprocessor), so each thread issues a quarter of the memory instructions.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use gpuworthy_core::{Error, PartOutput, Result, Variant};

use super::config;
use crate::pipeline::{OutputFrom, Pipeline, element_chunks};
use crate::{CudaBackend, HostMemory, driver_error};

/// Resident data of `square` and `saxpy`.
#[derive(Debug)]
pub struct ElementwiseResident {
    pub(super) n: usize,
    pub(super) a: f32,
    pub(super) x: CudaSlice<f32>,
    pub(super) y: CudaSlice<f32>,
}

/// How an elementwise kernel covers the vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grid {
    /// One thread per element.
    PerElement,
    /// `float4`s in a grid-stride loop over a few blocks per multiprocessor.
    StridedVec4,
}

impl CudaBackend {
    /// Launches `variant` over the first `n` elements of `x` and `y` on `stream`; `a` is saxpy's scalar, passed first.
    pub(super) fn launch_elementwise(
        &self,
        stream: &Arc<CudaStream>,
        variant: &Variant<Grid>,
        a: Option<f32>,
        x: &CudaView<'_, f32>,
        y: &mut CudaViewMut<'_, f32>,
        n: usize,
    ) -> Result<()> {
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        if n == 0 {
            return Ok(());
        }
        let n = n as u64;
        let block = self.elementwise_block_size();
        // The grid-stride variant keeps the same number of threads in flight per multiprocessor whatever the block.
        let blocks_per_sm = (32 * 256 / block as u64).max(1);
        let blocks = match variant.launch {
            Grid::StridedVec4 => n.div_ceil(4 * block as u64).min(blocks_per_sm * self.multiprocessors as u64),
            Grid::PerElement => n.div_ceil(block as u64),
        };
        let cfg = config((blocks, 1), (block, 1), 0)?;
        let mut launch = stream.launch_builder(&function);
        if let Some(a) = &a {
            launch.arg(a);
        }
        launch.arg(x).arg(y).arg(&n);
        // SAFETY: the kernels take (float a,)? const float* x, float* y, unsigned long long n; x and y hold at least
        // n floats and start 16-byte aligned (256-byte aligned allocations, views at multiples of a pipeline chunk),
        // so the vec4 kernels' float4 accesses are aligned.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    /// The launch of `variant` over the whole resident vectors, on the backend's stream.
    pub(super) fn launch_resident(
        &self,
        variant: &Variant<Grid>,
        with_a: bool,
        r: &mut ElementwiseResident,
    ) -> Result<()> {
        let a = with_a.then_some(r.a);
        self.launch_elementwise(&self.stream, variant, a, &r.x.slice(..), &mut r.y.slice_mut(..), r.n)
    }

    /// A group member's part of `square` or `saxpy` ([`Implements::run_part`]): `x` and `y`, the part's slices of
    /// the caller's arrays, read where they lie, and the result written into `place`, the part's slice of the
    /// group's output. Pipelined where the backend moves data so; else uploaded, launched and downloaded phase by
    /// phase, still with no copy of the input or of the output on the host.
    pub(super) fn run_elementwise_part(
        &self,
        variant: &Variant<Grid>,
        a: Option<f32>,
        x: &[f32],
        y: Option<&[f32]>,
        place: &mut PartOutput<'_>,
    ) -> Result<()> {
        let out = place.single_f32(x.len())?;
        if self.host_memory() == HostMemory::Pipelined {
            return self.run_elementwise_pipelined(variant, a, x, y, out);
        }
        self.prepare_kernels(variant)?;
        if x.is_empty() {
            return Ok(());
        }
        let y = match y {
            Some(y) => self.to_device(y)?,
            None => self.zeros(x.len())?,
        };
        let mut r = ElementwiseResident { n: x.len(), a: a.unwrap_or(0.0), x: self.to_device(x)?, y };
        {
            let _queue = self.hold_queue()?;
            self.launch_resident(variant, a.is_some(), &mut r)?;
        }
        self.copy_to_host(&r.y, out)
    }

    /// A pipelined run (see [`HostMemory::Pipelined`]) into `output`: `x` (and saxpy's `y`) uploaded chunk by chunk,
    /// each chunk's result downloaded while the next ones are staged, copied and computed. `a` is saxpy's scalar.
    pub(super) fn run_elementwise_pipelined(
        &self,
        variant: &Variant<Grid>,
        a: Option<f32>,
        x: &[f32],
        y: Option<&[f32]>,
        output: &mut [f32],
    ) -> Result<()> {
        self.prepare_kernels(variant)?;
        let n = x.len();
        if output.len() != n || y.is_some_and(|y| y.len() != n) {
            return Err(Error::invalid(format!(
                "an elementwise run of {n} elements into an output of {} (and a y of {:?})",
                output.len(),
                y.map(<[f32]>::len)
            )));
        }
        if n == 0 {
            return Ok(());
        }
        let (ranges, chunks) = element_chunks(n, if y.is_some() { 2 } else { 1 }, true);
        let mut devices = vec![self.uninit::<f32>(n)?];
        let mut separate = None;
        let (inputs, output_from) = match y {
            Some(y) => {
                devices.push(self.uninit::<f32>(n)?);
                (vec![x, y], OutputFrom::Input(1))
            }
            None => (vec![x], OutputFrom::Buffer(separate.insert(self.uninit::<f32>(n)?))),
        };
        let job = Pipeline {
            inputs,
            chunks,
            output_from: vec![output_from],
            launch_on_backend_stream: false,
            outputs: vec![output],
            output_offset: 0,
        };
        self.pipelined(job, &mut devices, &mut |stream, c, devices, output_from| {
            let r = ranges[c].clone();
            match &mut output_from[0] {
                OutputFrom::Buffer(y) => self.launch_elementwise(
                    stream,
                    variant,
                    a,
                    &devices[0].slice(r.clone()),
                    &mut y.slice_mut(r.clone()),
                    r.len(),
                ),
                _ => {
                    let (x, y) = devices.split_at_mut(1);
                    self.launch_elementwise(
                        stream,
                        variant,
                        a,
                        &x[0].slice(r.clone()),
                        &mut y[0].slice_mut(r.clone()),
                        r.len(),
                    )
                }
            }
        })
    }
}
