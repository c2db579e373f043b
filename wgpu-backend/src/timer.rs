//! Kernel timing with timestamp queries, shaped like CUDA events around a batch of launches.
//!
//! A timing window opens with [`WgpuBackend::time_with_queries`]. While it is open, launches are not submitted one by
//! one: each is encoded into the window's open *segment*, one command buffer that starts with an empty compute pass
//! writing a timestamp and, when something needs the work on the device (the window's end, an upload, a read, a
//! wait), ends with an empty pass writing another and is submitted. The window's time is the sum of its segments'.
//!
//! Why so: timing every launch's own pass, as this backend first did, put the cost of two timestamps and of each
//! dispatch's start from an idle queue into every launch, about 4 µs a launch more through NVIDIA's Vulkan driver than
//! CUDA's events around a batch (docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). A segment runs its
//! launches back to back, as a CUDA stream does, and puts its clears and barriers between them in the time, as a
//! CUDA batch puts its memsets. The window holds the backend's queue lock throughout, so another thread's work never
//! lands in it.

use std::time::Duration;

use gpuworthy_core::Result;

use crate::{WgpuBackend, device_error, lock};

/// The timestamp queries of every timing window, and the one open now.
#[derive(Debug)]
pub(crate) struct Timer {
    pub(crate) queries: wgpu::QuerySet,
    pub(crate) resolve: wgpu::Buffer,
    pub(crate) readback: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    pub(crate) period: f64,
    /// The open window; `None` when none is open.
    pub(crate) window: std::sync::Mutex<Option<Window>>,
}

/// An open timing window.
#[derive(Debug, Default)]
pub(crate) struct Window {
    /// The open segment's command buffer, holding the launches encoded since the window's last submission.
    segment: Option<wgpu::CommandEncoder>,
    /// Segments begun in this window (timed up to [`MAX_TIMED_SEGMENTS`]).
    segments: u32,
}

/// How many segments one timing window can time: two timestamps each.
pub(crate) const MAX_TIMED_SEGMENTS: u32 = 256;

// At worst every launch of a window is its own segment (something between launches needed the work submitted).
const _: () = assert!(MAX_TIMED_SEGMENTS as usize >= gpuworthy_core::MAX_LAUNCHES_PER_TIMING);

impl WgpuBackend {
    /// Encodes a launch into the open timing window's segment (beginning one when none is open), or hands `encode`
    /// back when no window is open. The caller holds the queue.
    pub(crate) fn encode_in_window<F: FnOnce(&mut wgpu::CommandEncoder)>(
        &self,
        what: &str,
        encode: F,
    ) -> Result<Option<F>> {
        let Some(timer) = &self.timer else { return Ok(Some(encode)) };
        let mut window = lock(&timer.window);
        let Some(open) = window.as_mut() else { return Ok(Some(encode)) };
        self.scoped(what, || {
            let segment = open.segment.get_or_insert_with(|| {
                let mut encoder = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("timed launches") });
                // Counted even when the query set is full, so that the window reports the segments it could not time.
                open.segments += 1;
                if open.segments <= MAX_TIMED_SEGMENTS {
                    drop(encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("segment start"),
                        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                            query_set: &timer.queries,
                            beginning_of_pass_write_index: Some(2 * (open.segments - 1)),
                            end_of_pass_write_index: None,
                        }),
                    }));
                }
                encoder
            });
            encode(segment);
        })?;
        Ok(None)
    }

    /// Ends the open timing window's segment, if any, and submits it: called before anything that needs the work
    /// encoded so far on the device (a submission of other work, a queued write, a wait).
    pub(crate) fn submit_segment(&self) -> Result<()> {
        let Some(timer) = &self.timer else { return Ok(()) };
        let (mut segment, index) = {
            let mut window = lock(&timer.window);
            let Some(open) = window.as_mut() else { return Ok(()) };
            let Some(segment) = open.segment.take() else { return Ok(()) };
            (segment, open.segments)
        };
        self.settle_before_submit()?;
        self.scoped("the timed launches", || {
            if index <= MAX_TIMED_SEGMENTS {
                drop(segment.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("segment end"),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &timer.queries,
                        beginning_of_pass_write_index: None,
                        end_of_pass_write_index: Some(2 * index - 1),
                    }),
                }));
            }
            self.queue.submit([segment.finish()]);
        })
    }

    pub(crate) fn time_with_queries(&self, timer: &Timer, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        // Held until the timestamps are read: the query set and the readback buffer serve one window at a time.
        let _window = self.hold_queue()?;
        *lock(&timer.window) = Some(Window::default());
        let result = work();
        // The launches encoded are submitted even when one failed, as they would have been outside a window.
        let submitted = self.submit_segment();
        let segments = lock(&timer.window).take().map_or(0, |open| open.segments);
        result?;
        submitted?;
        if segments == 0 {
            // Nothing was launched (an empty input): no device time.
            return Ok(Duration::ZERO);
        }
        if segments > MAX_TIMED_SEGMENTS {
            return Err(device_error(format!(
                "the timed work was submitted in {segments} parts; one timing window times {MAX_TIMED_SEGMENTS}"
            )));
        }
        let bytes = 16 * segments as u64;
        self.settle_before_submit()?;
        self.scoped("reading timestamps", || {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            encoder.resolve_query_set(&timer.queries, 0..2 * segments, &timer.resolve, 0);
            encoder.copy_buffer_to_buffer(&timer.resolve, 0, &timer.readback, 0, bytes);
            self.queue.submit([encoder.finish()]);
        })?;
        let ticks: Vec<u64> =
            self.read_mapped(&timer.readback, |raw| bytemuck::pod_collect_to_vec(&raw[..bytes as usize]))?;
        let total: u64 = ticks.chunks_exact(2).map(|pair| pair[1].saturating_sub(pair[0])).sum();
        Ok(Duration::from_nanos((total as f64 * timer.period).round() as u64))
    }
}
