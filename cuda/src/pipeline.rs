//! The pipelined end-to-end path ([`HostMemory::Pipelined`](crate::HostMemory::Pipelined)): a whole run (upload,
//! kernel, download) for data that starts and ends in ordinary host vectors, cut into chunks that flow through
//! [`PIPELINE_LANES`] lanes, each a stream with its own page-locked staging buffers. While the cores copy chunk c
//! into a lane's staging buffer, the copy engines move chunk c - 1 to the device and chunk c - 2's result back, and
//! the multiprocessors run the kernel between them: host staging, both copy directions and the kernels overlap, so
//! a run approaches the time of its slowest stage instead of the sum of all of them.
//!
//! Every workload has a pipelined run: the elementwise ones, sum and histogram by ranges of elements, softmax,
//! stencil and mandelbrot by rows, and matmul by row blocks of A (B is uploaded whole first).
//!
//! The engine knows nothing of workloads. A workload describes its run as a list of [`Chunk`]s (which element
//! ranges of each input to upload, which range of the output the chunk's kernel completes) and a launch for one
//! chunk; the device holds the whole input and output (as the phased path does), so kernels read and write them at
//! their ordinary offsets and a chunk whose kernel reads a neighbour's elements (the stencil's halo rows) only has to
//! wait for that neighbour's upload, through an event. Reductions (sum, histogram) accumulate on the device and
//! download their small result after the last chunk.
//!
//! Lanes are kept by the backend and reused by later runs; their staging buffers grow to the largest chunk asked
//! for and never shrink. One pipelined run holds them (and the backend's queue, so that no timing window of another
//! thread sees its work) from start to end.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, PinnedHostSlice};
use gpuworthy_core::{Error, Result};
use rayon::prelude::*;

use crate::{CudaBackend, driver_error, lock};

/// Streams (each with its own staging buffers) a pipelined run cycles through: three lets a lane be staged by the
/// cores while a second uploads and a third computes and downloads.
pub const PIPELINE_LANES: usize = 3;

/// How many chunks a run is cut into where their size allows: a quarter of the data a chunk (within
/// [`PIPELINE_CHUNK_MIN_BYTES`] and [`PIPELINE_CHUNK_MAX_BYTES`]), so that a middling run still has chunks to overlap.
pub const PIPELINE_CHUNKS: usize = 4;

/// The fewest bytes of an input (or of the output) a chunk moves, unless the whole is smaller.
pub const PIPELINE_CHUNK_MIN_BYTES: usize = 4 << 20;

/// The most bytes of an input (or of the output) a chunk moves, unless one row of a row-shaped workload is larger.
///
/// Each chunk costs the host one fork and join of its thread pool for its staging copies, whatever the chunk's size;
/// larger chunks leave longer first uploads and last downloads that nothing overlaps. Measured end to end on the
/// H200 machine with the chunk fixed at 4, 8 and 16 MiB, a quarter of the data within 4 and 16 MiB was the best of
/// the three at each size (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const PIPELINE_CHUNK_MAX_BYTES: usize = 16 << 20;

/// The most inputs one chunk uploads: an expression's arrays.
const MAX_INPUTS: usize = gpuworthy_core::expr::limits::MAX_ARRAYS;

/// Host elements copied per rayon task when staging.
const COPY_GRAIN_BYTES: usize = 256 << 10;

/// One lane: a stream, page-locked staging for each input and each output, and the events that say when the stream
/// is done with them.
struct Lane {
    stream: Arc<CudaStream>,
    inputs: Vec<PinnedHostSlice<u8>>,
    outputs: Vec<PinnedHostSlice<u8>>,
    /// Recorded after the lane's uploads of its current chunk: a later chunk whose kernel reads those elements waits
    /// for it.
    uploaded: CudaEvent,
    /// Recorded after the lane's download of its current chunk: the host waits for it before reading the output
    /// staging and before reusing the lane.
    finished: CudaEvent,
    /// Recorded on the backend's stream for this lane's stream to wait on: where a run hands work over to the lane.
    handoff: CudaEvent,
}

impl Lane {
    /// Makes the lane's stream wait for everything enqueued on `backend` so far.
    fn follow(&self, backend: &CudaStream, what: &str) -> Result<()> {
        self.handoff.record(backend).map_err(driver_error(what))?;
        self.stream.wait(&self.handoff).map_err(driver_error(what))
    }
}

/// The lanes of a backend, created on the first pipelined run.
#[derive(Default)]
pub(crate) struct Lanes {
    lanes: Mutex<Vec<Lane>>,
}

/// One chunk of a pipelined run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// The element range of each input this chunk uploads (to the same range of the device copy); empty ranges
    /// upload nothing.
    pub uploads: Vec<Range<usize>>,
    /// The kernel of this chunk reads elements uploaded with the previous two chunks (a halo), so it waits for those
    /// uploads, which ran on other lanes.
    pub reads_neighbours: bool,
    /// The element range of the output this chunk's kernel completes, downloaded after it.
    pub download: Range<usize>,
}

/// Where a streamed output is on the device.
pub(crate) enum OutputFrom<'a, O> {
    /// The device copy of input `k` (saxpy updates `y` in place).
    Input(usize),
    /// A separate output buffer.
    Buffer(&'a mut CudaSlice<O>),
}

/// A pipelined run of one workload, described for the engine.
pub(crate) struct Pipeline<'a, O> {
    /// The host inputs, each uploaded into the device buffer of the same index in `devices`.
    pub inputs: Vec<&'a [f32]>,
    /// The chunks, in order.
    pub chunks: Vec<Chunk>,
    /// Where each chunk's `download` range of each output is read from: none for a run whose result stays on the
    /// device until the end (a reduction downloads it after the run), several for an expression with several.
    pub output_from: Vec<OutputFrom<'a, O>>,
    /// Launch every chunk on the backend's stream instead of its lane's (for a library handle bound to that stream:
    /// cuBLAS), ordered after the chunk's upload and before its download by the lane's events.
    pub launch_on_backend_stream: bool,
    /// Where each output is written on the host, in the order of `output_from`: a chunk's `download` range less
    /// `output_offset`.
    pub outputs: Vec<&'a mut [O]>,
    /// The device element at which the host outputs begin: 0 where the host holds the whole output, more where it
    /// holds the rows after a halo the device computes from but does not own (a group member's band of the stencil).
    pub output_offset: usize,
}

/// Where a chunk's `download` range of the device's output lands in the host outputs that begin at device element
/// `offset` ([`Pipeline::output_offset`], checked before the chunks run).
fn on_host(download: &Range<usize>, offset: usize) -> Range<usize> {
    download.start - offset..download.end - offset
}

/// The launch of one chunk's kernels: on the lane's stream, for the chunk of this index, over the whole device inputs
/// and output.
pub(crate) type ChunkLaunch<'f, O> =
    dyn FnMut(&Arc<CudaStream>, usize, &mut [CudaSlice<f32>], &mut [OutputFrom<'_, O>]) -> Result<()> + Send + 'f;

/// Consecutive ranges of `total` units (elements or rows), `per_chunk` each and fewer in the last; none when
/// `total` is 0.
pub(crate) fn split(total: usize, per_chunk: usize) -> impl Iterator<Item = Range<usize>> {
    let per_chunk = per_chunk.max(1);
    (0..total.div_ceil(per_chunk)).map(move |i| i * per_chunk..((i + 1) * per_chunk).min(total))
}

/// The chunks of a run over `len` elements that uploads the same range of each of its `inputs` inputs and, where
/// `download`, downloads that range of the output: the element ranges and the chunks.
///
/// Each chunk holds a multiple of [`ALIGNED_ELEMENTS`], so that every chunk's view starts where a `float4` may be
/// read: a quarter of a length such as 5 000 004 elements is not a multiple of four.
pub(crate) fn element_chunks(len: usize, inputs: usize, download: bool) -> (Vec<Range<usize>>, Vec<Chunk>) {
    let per_chunk = (units_per_chunk(4, len, 1) / ALIGNED_ELEMENTS * ALIGNED_ELEMENTS).max(ALIGNED_ELEMENTS);
    let ranges: Vec<_> = split(len, per_chunk).collect();
    let chunks = ranges
        .iter()
        .map(|r| Chunk {
            uploads: vec![r.clone(); inputs],
            reads_neighbours: false,
            download: if download { r.clone() } else { 0..0 },
        })
        .collect();
    (ranges, chunks)
}

/// Elements a 1D chunk holds a multiple of: 256 bytes of `f32`, the alignment of the driver's allocations, so that a
/// chunk's view is as aligned as its buffer.
pub(crate) const ALIGNED_ELEMENTS: usize = 64;

/// The chunks of a pipelined expression over `len` elements with `inputs` inputs and `outputs` streamed outputs: the
/// same ranges of every array, each chunk a multiple of 64 elements (so that every array's view starts 256-byte
/// aligned, as `float4` access needs) and at most as long as keeps the staging of all its arrays within that of three
/// arrays of [`PIPELINE_CHUNK_MAX_BYTES`] (saxpy's two inputs and its output).
pub(crate) fn expression_chunks(len: usize, inputs: usize, outputs: usize) -> (Vec<Range<usize>>, Vec<Chunk>) {
    let arrays = (inputs + outputs).max(1);
    let most = 3 * PIPELINE_CHUNK_MAX_BYTES / 4 / arrays;
    let per_chunk = (units_per_chunk(4, len, 1).min(most) / ALIGNED_ELEMENTS * ALIGNED_ELEMENTS).max(ALIGNED_ELEMENTS);
    let ranges: Vec<_> = split(len, per_chunk).collect();
    let chunks = ranges
        .iter()
        .map(|r| Chunk { uploads: vec![r.clone(); inputs], reads_neighbours: false, download: r.clone() })
        .collect();
    (ranges, chunks)
}

/// The bytes a chunk of a run that moves `total_bytes` (of its largest input or output) takes: a
/// [`PIPELINE_CHUNKS`]th of them, within [`PIPELINE_CHUNK_MIN_BYTES`] and [`PIPELINE_CHUNK_MAX_BYTES`].
pub fn pipeline_chunk_bytes(total_bytes: usize) -> usize {
    (total_bytes / PIPELINE_CHUNKS).clamp(PIPELINE_CHUNK_MIN_BYTES, PIPELINE_CHUNK_MAX_BYTES)
}

/// How many of `total` units of `unit_bytes` bytes each (elements, rows) make one chunk
/// ([`pipeline_chunk_bytes`]), at least `minimum`.
pub(crate) fn units_per_chunk(unit_bytes: usize, total: usize, minimum: usize) -> usize {
    let unit_bytes = unit_bytes.max(1);
    (pipeline_chunk_bytes(unit_bytes.saturating_mul(total)) / unit_bytes).max(minimum).max(1)
}

/// Copies `from` into `to` (same length) on every core.
fn copy_on_every_core(to: &mut [u8], from: &[u8]) {
    to.par_chunks_mut(COPY_GRAIN_BYTES).zip(from.par_chunks(COPY_GRAIN_BYTES)).for_each(|(t, f)| t.copy_from_slice(f));
}

impl CudaBackend {
    /// Runs `job` through the lanes: for each chunk, stage and upload its inputs, wait for its neighbours' uploads
    /// where it reads them, `launch(stream, chunk index, devices)`, and download its output range; the host copies a
    /// chunk's output out of the staging buffer when the lane comes round again, and the last ones at the end.
    /// `devices` hold the whole inputs; work the caller enqueued on the backend's stream before (allocations, zeroing)
    /// is waited for, and everything is finished when this returns.
    ///
    /// The loop runs on a thread of the host's thread pool (the caller's own, if it is one), so that each chunk's
    /// parallel staging copy starts on the thread that asks for it and the others steal from it. Asked for from a
    /// thread outside the pool, every copy was injected into the pool and the asking thread put to sleep until the
    /// copy ended, once per chunk, which was slower on the H200 machine (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    pub(crate) fn pipelined<O: Pod + cudarc::driver::DeviceRepr + Send>(
        &self,
        job: Pipeline<'_, O>,
        devices: &mut [CudaSlice<f32>],
        launch: &mut ChunkLaunch<'_, O>,
    ) -> Result<()> {
        let _queue = self.hold_queue()?;
        rayon::scope(|_| self.pipelined_on_pool(job, devices, launch))
    }

    /// The loop of [`CudaBackend::pipelined`], on a thread of the pool, with the backend's queue held.
    fn pipelined_on_pool<O: Pod + cudarc::driver::DeviceRepr + Send>(
        &self,
        mut job: Pipeline<'_, O>,
        devices: &mut [CudaSlice<f32>],
        launch: &mut ChunkLaunch<'_, O>,
    ) -> Result<()> {
        let what = "running a pipelined transfer";
        assert!(job.inputs.len() <= MAX_INPUTS && job.inputs.len() == devices.len(), "one device buffer per input");
        assert_eq!(job.outputs.len(), job.output_from.len(), "one host slice per streamed output");
        if job.chunks.is_empty() {
            return Ok(());
        }
        let outside = job.chunks.iter().find(|c| {
            !c.download.is_empty()
                && (c.download.start < job.output_offset
                    || job.outputs.iter().any(|o| c.download.end - job.output_offset > o.len()))
        });
        if let Some(chunk) = outside {
            return Err(Error::invalid(format!(
                "a pipelined chunk downloads elements {:?} of a host output that holds {:?} from {}",
                chunk.download,
                job.outputs.iter().map(|o| o.len()).collect::<Vec<_>>(),
                job.output_offset
            )));
        }
        if job.inputs.iter().all(|x| self.is_page_locked(x)) && job.outputs.iter().all(|y| self.is_page_locked(y)) {
            return self.pipelined_direct(job, devices, launch);
        }
        // The staging each lane needs: the largest upload of any input, and the largest download.
        let input_bytes = job.chunks.iter().flat_map(|c| c.uploads.iter().map(|r| r.len() * 4)).max().unwrap_or(0);
        let output_bytes = job.chunks.iter().map(|c| c.download.len() * size_of::<O>()).max().unwrap_or(0);
        let mut lanes = self.lanes_for(job.inputs.len(), input_bytes, job.outputs.len(), output_bytes)?;
        // The lanes' streams start after what the caller enqueued on the backend's stream.
        for lane in lanes.iter() {
            lane.follow(&self.stream, what)?;
        }
        let count = job.chunks.len();
        let offset = job.output_offset;
        let mut host_outputs: Vec<&mut [u8]> =
            job.outputs.iter_mut().map(|o| bytemuck::cast_slice_mut::<O, u8>(o)).collect();
        for c in 0..count {
            let l = c % PIPELINE_LANES;
            let chunk = &job.chunks[c];
            // The lane's previous chunk must be finished before its staging is read out or written again; then one
            // parallel host step copies that chunk's output out of staging and this chunk's inputs in: one fork of
            // the host's thread pool per chunk, not one per copy (with one per copy, the engine's copies ran
            // slower per byte than the same copies in an OpenMP program on the same host; measured:
            // docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
            let previous = c.checked_sub(PIPELINE_LANES).map(|p| on_host(&job.chunks[p].download, offset));
            if previous.is_some() {
                lanes[l].finished.synchronize().map_err(driver_error(what))?;
            }
            let Lane { inputs: staging_in, outputs: staging_out, .. } = &mut lanes[l];
            let mut copies: Vec<(&mut [u8], &[u8])> = Vec::with_capacity(MAX_INPUTS + host_outputs.len());
            if let Some(download) = previous.filter(|d| !d.is_empty()) {
                for (staging, host) in staging_out.iter().zip(host_outputs.iter_mut()) {
                    copies.push(staged_output(staging, &download, size_of::<O>(), host, what)?);
                }
            }
            let mut uploads = Vec::with_capacity(MAX_INPUTS);
            for ((k, range), staging) in chunk.uploads.iter().enumerate().zip(staging_in.iter_mut()) {
                if range.is_empty() {
                    continue;
                }
                let staging = &mut staging.as_mut_slice().map_err(driver_error(what))?[..range.len() * 4];
                let source: &[u8] = bytemuck::cast_slice(&job.inputs[k][range.clone()]);
                uploads.push((k, range.clone()));
                copies.push((staging, source));
            }
            copies.into_par_iter().for_each(|(to, from)| copy_on_every_core(to, from));
            let lane = &mut lanes[l];
            for (k, range) in uploads {
                let staging = lane.inputs[k].as_slice().map_err(driver_error(what))?;
                let staged: &[f32] = bytemuck::cast_slice(&staging[..range.len() * 4]);
                let mut target = devices[k].slice_mut(range);
                // Asynchronous: the copy engine reads the staging after this returns; the lane's `finished` event,
                // waited for before the staging is written again, comes after it on the same stream.
                lane.stream.memcpy_htod(staged, &mut target).map_err(driver_error(what))?;
            }
            lane.uploaded.record(&lane.stream).map_err(driver_error(what))?;
            self.launch_chunk(&lanes, c, chunk.reads_neighbours, job.launch_on_backend_stream, what, &mut |stream| {
                launch(stream, c, devices, &mut job.output_from)
            })?;
            let lane = &mut lanes[l];
            for (staging, from) in lane.outputs.iter_mut().zip(&job.output_from).filter(|_| !chunk.download.is_empty())
            {
                let staging = staging.as_mut_slice().map_err(driver_error(what))?;
                let staged: &mut [O] = bytemuck::cast_slice_mut(&mut staging[..chunk.download.len() * size_of::<O>()]);
                let range = chunk.download.clone();
                match from {
                    OutputFrom::Input(k) => {
                        let source = devices[*k].slice(range);
                        let staged: &mut [f32] = bytemuck::cast_slice_mut(staged);
                        lane.stream.memcpy_dtoh(&source, staged).map_err(driver_error(what))?;
                    }
                    OutputFrom::Buffer(buffer) => {
                        let source = buffer.slice(range);
                        lane.stream.memcpy_dtoh(&source, staged).map_err(driver_error(what))?;
                    }
                }
            }
            lane.finished.record(&lane.stream).map_err(driver_error(what))?;
        }
        for c in count.saturating_sub(PIPELINE_LANES)..count {
            let download = on_host(&job.chunks[c].download, offset);
            drain(&mut lanes[c % PIPELINE_LANES], &download, size_of::<O>(), &mut host_outputs, what)?;
        }
        Ok(())
    }

    /// [`CudaBackend::pipelined`] for host arrays that are all page-locked ([`CudaBackend::page_lock_host`], or
    /// allocated so): every chunk's uploads go straight from the caller's inputs and its downloads straight into
    /// the caller's outputs, asynchronously on the lanes' streams, so the cores copy nothing and the host waits only
    /// at the end. Staging copies on the cores read and write every byte twice more, and with two GPUs copying at
    /// once they, not the links, set the pace: a second H200 bought 0.79x for square 2^26 from pageable memory
    /// (measured: docs/results/nvidia-h200-x2/groups/groups-runs-4.txt).
    fn pipelined_direct<O: Pod + cudarc::driver::DeviceRepr + Send>(
        &self,
        mut job: Pipeline<'_, O>,
        devices: &mut [CudaSlice<f32>],
        launch: &mut ChunkLaunch<'_, O>,
    ) -> Result<()> {
        let what = "running a pipelined transfer from page-locked memory";
        let lanes = self.lanes_for(job.inputs.len(), 0, job.outputs.len(), 0)?;
        for lane in lanes.iter() {
            lane.follow(&self.stream, what)?;
        }
        // Every lane is synchronised before this returns, whether the chunks were all enqueued or one failed: a copy
        // still in flight must not outlive the caller's borrow of its host memory. So this wait, alone of the
        // backend's, is not bounded by the wait limit: returning early would leave the copies writing into memory
        // the caller may free.
        let enqueued = self.enqueue_direct(&mut job, devices, launch, &lanes, what);
        let synchronised: Result<()> =
            lanes.iter().try_for_each(|lane| lane.stream.synchronize().map_err(driver_error(what)));
        enqueued.and(synchronised)
    }

    /// The chunks of [`CudaBackend::pipelined_direct`], enqueued on the lanes.
    fn enqueue_direct<O: Pod + cudarc::driver::DeviceRepr + Send>(
        &self,
        job: &mut Pipeline<'_, O>,
        devices: &mut [CudaSlice<f32>],
        launch: &mut ChunkLaunch<'_, O>,
        lanes: &[Lane],
        what: &str,
    ) -> Result<()> {
        for (c, chunk) in job.chunks.iter().enumerate() {
            let lane = &lanes[c % PIPELINE_LANES];
            let stream = lane.stream.cu_stream();
            for (k, range) in chunk.uploads.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
                let source = &job.inputs[k][range.clone()];
                let mut target = devices[k].slice_mut(range.clone());
                let (device, _written) = target.device_ptr_mut(&lane.stream);
                // SAFETY: `device` is the start of a device range as long as `source`, on this lane's stream; `source`
                // is page-locked (checked above) and borrowed by `job` until this function returns, after every lane
                // has been synchronised, so the asynchronous copy reads it while it is valid.
                unsafe { cudarc::driver::result::memcpy_htod_async(device, source, stream) }
                    .map_err(driver_error(what))?;
            }
            lane.uploaded.record(&lane.stream).map_err(driver_error(what))?;
            self.launch_chunk(lanes, c, chunk.reads_neighbours, job.launch_on_backend_stream, what, &mut |stream| {
                launch(stream, c, devices, &mut job.output_from)
            })?;
            let range = chunk.download.clone();
            let in_host = on_host(&range, job.output_offset);
            for (from, host) in job.output_from.iter().zip(job.outputs.iter_mut()).filter(|_| !range.is_empty()) {
                let target = &mut host[in_host.clone()];
                match from {
                    OutputFrom::Input(k) => {
                        let source = devices[*k].slice(range.clone());
                        let (device, _read) = source.device_ptr(&lane.stream);
                        let target: &mut [f32] = bytemuck::cast_slice_mut(target);
                        // SAFETY: as for the uploads: `target` is page-locked, as long as the device range, and
                        // borrowed until every lane has been synchronised below.
                        unsafe { cudarc::driver::result::memcpy_dtoh_async(target, device, stream) }
                            .map_err(driver_error(what))?;
                    }
                    OutputFrom::Buffer(buffer) => {
                        let source = buffer.slice(range.clone());
                        let (device, _read) = source.device_ptr(&lane.stream);
                        // SAFETY: as above.
                        unsafe { cudarc::driver::result::memcpy_dtoh_async(target, device, stream) }
                            .map_err(driver_error(what))?;
                    }
                }
            }
            lane.finished.record(&lane.stream).map_err(driver_error(what))?;
        }
        Ok(())
    }

    /// Chunk `c`'s launch, after its lane recorded its uploads: on the lane's stream, or on the backend's (ordered
    /// after the lane's uploads and before its downloads) where the job asks, waiting first for the two chunks
    /// before it where the chunk reads its neighbours' elements.
    fn launch_chunk(
        &self,
        lanes: &[Lane],
        c: usize,
        reads_neighbours: bool,
        on_backend_stream: bool,
        what: &str,
        launch: &mut dyn FnMut(&Arc<CudaStream>) -> Result<()>,
    ) -> Result<()> {
        let lane = &lanes[c % PIPELINE_LANES];
        let launch_stream = if on_backend_stream { &self.stream } else { &lane.stream };
        if on_backend_stream {
            launch_stream.wait(&lane.uploaded).map_err(driver_error(what))?;
        }
        if reads_neighbours {
            for back in 1..=2.min(c) {
                // Recorded for chunk c - back and not recorded again until chunk c - back + PIPELINE_LANES > c.
                launch_stream.wait(&lanes[(c - back) % PIPELINE_LANES].uploaded).map_err(driver_error(what))?;
            }
        }
        launch(launch_stream)?;
        if on_backend_stream {
            lane.follow(&self.stream, what)?;
        }
        Ok(())
    }

    /// The lanes, with staging for `inputs` inputs of `input_bytes` and `outputs` outputs of `output_bytes` (grown if
    /// smaller), created on first use.
    fn lanes_for(
        &self,
        inputs: usize,
        input_bytes: usize,
        outputs: usize,
        output_bytes: usize,
    ) -> Result<std::sync::MutexGuard<'_, Vec<Lane>>> {
        let what = "preparing the pipeline's lanes";
        let pinned = |bytes: usize| {
            // SAFETY: staging is written (by the host or by a copy from the device) before it is read.
            unsafe { self.context.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
                .map_err(driver_error(format!("allocating {bytes} bytes of pinned host memory")))
        };
        let mut lanes = lock(&self.lanes.lanes);
        while lanes.len() < PIPELINE_LANES {
            lanes.push(Lane {
                stream: self.context.new_stream().map_err(driver_error(what))?,
                inputs: Vec::new(),
                outputs: Vec::new(),
                uploaded: self.context.new_event(None).map_err(driver_error(what))?,
                finished: self.context.new_event(None).map_err(driver_error(what))?,
                handoff: self.context.new_event(None).map_err(driver_error(what))?,
            });
        }
        for lane in lanes.iter_mut() {
            while lane.inputs.len() < inputs {
                lane.inputs.push(pinned(1)?);
            }
            for staging in lane.inputs.iter_mut().take(inputs) {
                if staging.len() < input_bytes {
                    *staging = pinned(input_bytes)?;
                }
            }
            while lane.outputs.len() < outputs {
                lane.outputs.push(pinned(1)?);
            }
            for staging in lane.outputs.iter_mut().take(outputs) {
                if staging.len() < output_bytes {
                    *staging = pinned(output_bytes)?;
                }
            }
        }
        Ok(lanes)
    }
}

/// Waits for `lane`'s last chunk and copies its `download` range (of elements of `element_bytes`) of each output from
/// the lane's output staging into `outputs`, on every core.
fn drain(
    lane: &mut Lane,
    download: &Range<usize>,
    element_bytes: usize,
    outputs: &mut [&mut [u8]],
    what: &str,
) -> Result<()> {
    lane.finished.synchronize().map_err(driver_error(what))?;
    if download.is_empty() {
        return Ok(());
    }
    let copies = lane
        .outputs
        .iter()
        .zip(outputs.iter_mut())
        .map(|(staging, output)| staged_output(staging, download, element_bytes, output, what))
        .collect::<Result<Vec<_>>>()?;
    copies.into_par_iter().for_each(|(to, from)| copy_on_every_core(to, from));
    Ok(())
}

/// The copy out of output staging for a chunk's `download` range (of elements of `element_bytes`): the range's bytes
/// of `output`, and the staged bytes that go there.
fn staged_output<'a>(
    staging: &'a PinnedHostSlice<u8>,
    download: &Range<usize>,
    element_bytes: usize,
    output: &'a mut [u8],
    what: &str,
) -> Result<(&'a mut [u8], &'a [u8])> {
    let staged = &staging.as_slice().map_err(driver_error(what))?[..download.len() * element_bytes];
    Ok((&mut output[download.start * element_bytes..download.end * element_bytes], staged))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Page-locked arrays take the direct path (no staging) and give what staging gives, across chunks, for square
    /// and saxpy; once unlocked, the same arrays are staged again.
    #[test]
    fn page_locked_arrays_are_copied_directly_and_match_the_staged_result() {
        use gpuworthy_core::workloads::{Len, Saxpy, SaxpyParams, Square};
        use gpuworthy_core::{Implements, Workload};
        let Some(cuda) = gpuworthy_core::BackendKind::Cuda
            .opened_or_skipped(CudaBackend::with_host_memory(0, crate::HostMemory::Pipelined))
        else {
            return;
        };
        // (1 << 22) + 3 elements: several chunks, the last ending in a partial float4.
        let n = (1 << 22) + 3;
        let x = Square::generate(&Len(n), 3).unwrap();
        let staged = Implements::<Square>::run(&cuda, "vec4", &x).unwrap();
        let mut y = gpuworthy_core::shard::zeroed::<f32>(n);
        assert!(!cuda.is_page_locked(&x) && !cuda.is_page_locked(&y));
        {
            // SAFETY: `x` and `y` outlive the locks, dropped at the end of this block.
            let locks = unsafe {
                [cuda.page_lock_host(bytemuck::cast_slice(&x)), cuda.page_lock_host(bytemuck::cast_slice(&y))]
            };
            let _locks: Vec<_> = locks.into_iter().map(|l| l.unwrap().expect("not locked before")).collect();
            assert!(cuda.is_page_locked(&x) && cuda.is_page_locked(&y));
            Implements::<Square>::run_into(&cuda, "vec4", &x, &mut y).unwrap();
            assert_eq!(y, staged);
            let input = Saxpy::generate(&SaxpyParams { n, a: 1.5 }, 4).unwrap();
            let expected = Implements::<Saxpy>::run(&cuda, "vec4", &input).unwrap();
            // SAFETY: `input` outlives the locks, dropped at the end of this block.
            let _more = unsafe {
                [
                    cuda.page_lock_host(bytemuck::cast_slice(&input.x)),
                    cuda.page_lock_host(bytemuck::cast_slice(&input.y)),
                ]
            };
            Implements::<Saxpy>::run_into(&cuda, "vec4", &input, &mut y).unwrap();
            assert_eq!(y, expected);
        }
        assert!(!cuda.is_page_locked(&x), "the lock is released when dropped");
    }

    #[test]
    fn element_chunks_start_aligned_for_float4_whatever_the_length() {
        for len in [1, 63, 64, 1000, 4_194_307, 5_000_004, 16_777_217, 67_108_864] {
            for (ranges, _) in [element_chunks(len, 1, true), expression_chunks(len, 3, 2)] {
                assert_eq!(ranges.first().map(|r| r.start), Some(0), "{len}");
                assert_eq!(ranges.last().map(|r| r.end), Some(len), "{len}");
                assert!(ranges.iter().all(|r| r.start % ALIGNED_ELEMENTS == 0), "{len}: {ranges:?}");
            }
        }
    }

    #[test]
    fn split_covers_every_unit_once_in_order() {
        for (total, per) in [(0, 4), (1, 4), (4, 4), (5, 4), (17, 4), (10, 1), (3, 0)] {
            let ranges: Vec<_> = split(total, per).collect();
            let flat: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(flat, (0..total).collect::<Vec<_>>(), "{total} by {per}");
            assert!(ranges.iter().all(|r| !r.is_empty() && r.len() <= per.max(1)), "{ranges:?}");
        }
    }

    /// Every pipelined workload against the reference at shapes that are not a multiple of a chunk (and at one chunk
    /// or less, and empty), with every variant: elements, rows of several chunks, single rows larger than a chunk.
    #[test]
    fn pipelined_runs_match_the_reference_at_sizes_that_are_not_a_multiple_of_the_chunk() {
        use gpuworthy_core::workloads::*;
        use gpuworthy_core::{Implements, Workload};
        let Some(cuda) = gpuworthy_core::BackendKind::Cuda
            .opened_or_skipped(CudaBackend::with_host_memory(0, crate::HostMemory::Pipelined))
        else {
            return;
        };
        fn each<W: Workload>(cuda: &CudaBackend, params: &[W::Params])
        where
            CudaBackend: Implements<W>,
        {
            for p in params {
                let input = W::generate(p, 11).unwrap();
                let expected = W::reference(&input).unwrap();
                for variant in Implements::<W>::variants(cuda) {
                    let got = Implements::<W>::run(cuda, variant, &input).unwrap();
                    let precision = Implements::<W>::precision(cuda, variant);
                    if let Err(e) = W::check(&input, &expected, &got, precision) {
                        panic!("{} {p} {variant} pipelined: {e}", W::NAME);
                    }
                }
            }
        }
        // The largest chunk's elements; a run of `chunk + 1` elements is cut into chunks of a quarter of it and one
        // element; one of `5 * chunk + 13` into five of the largest and a tail.
        let chunk = PIPELINE_CHUNK_MAX_BYTES / 4;
        let lens = [0, 1, 1000, chunk, chunk + 1, 5 * chunk + 13];
        each::<Square>(&cuda, &lens.map(Len));
        each::<Sum>(&cuda, &lens.map(Len));
        each::<Saxpy>(&cuda, &lens.map(|n| SaxpyParams { n, a: 2.5 }));
        each::<Histogram>(&cuda, &lens.map(HistogramParams::new));
        let rows_of = |rows, cols| Shape2 { rows, cols };
        // 4099 columns: 511 rows a chunk; 3 x 2^22 + 1 columns: one row bigger than a chunk.
        each::<Softmax>(&cuda, &[rows_of(0, 5), rows_of(1, 7), rows_of(1537, 4099), rows_of(3, 3 * (1 << 22) + 1)]);
        let image = |rows, cols| Shape2 { rows, cols };
        each::<Stencil>(&cuda, &[image(1, 1), image(2, 3), image(1543, 2051), image(7, 3 * (1 << 21) + 5)]);
        each::<Mandelbrot>(&cuda, &[MandelbrotParams::new(1, 1), MandelbrotParams::new(2051, 1543)]);
        // Row blocks of A: one partial block; three blocks of 2176 rows and a partial one; 128-row blocks (long rows).
        let shapes = [(0, 5, 3), (3, 0, 4), (1, 1, 1), (7000, 1000, 67), (300, 70_000, 3)];
        each::<Matmul>(&cuda, &shapes.map(|(m, k, n)| MatmulParams::new(m, k, n)));
    }

    #[test]
    fn a_chunk_is_a_quarter_of_the_run_within_its_bounds_and_holds_at_least_the_minimum_of_units() {
        let (min, max) = (PIPELINE_CHUNK_MIN_BYTES, PIPELINE_CHUNK_MAX_BYTES);
        assert_eq!(units_per_chunk(4, 1 << 26, 1), max / 4, "256 MiB: the largest chunks");
        assert_eq!(units_per_chunk(4, 1 << 24, 1), (1 << 24) / 4, "64 MiB: a quarter each");
        assert_eq!(units_per_chunk(4, 1 << 20, 1), min / 4, "4 MiB: one chunk of the smallest size");
        assert_eq!(units_per_chunk(4, 10, 1), min / 4, "a run smaller than a chunk is one chunk");
        assert_eq!(units_per_chunk(max * 3, 10, 2), 2, "rows larger than a chunk: the minimum");
        assert_eq!(units_per_chunk(0, 5, 1), min, "no bytes a unit: counted as one");
        assert_eq!(units_per_chunk(4, usize::MAX, 1), max / 4, "no overflow");
    }
}
