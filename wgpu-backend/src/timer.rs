//! Kernel timing with timestamp queries: one query set and readback buffer per backend, written at the start and end
//! of every compute pass encoded while a timing window is open, and read when the window closes. The window holds the
//! backend's queue lock throughout, so another thread's passes never land in it.
//!
//! Each launch is timed by its own pass's timestamps, the dispatch alone, as CUDA's events time a kernel. The other
//! form, a window's launches run back to back in one command buffer between two timestamps, was measured: through
//! NVIDIA's Vulkan driver on an H200 it took about 3 µs more a launch: the barriers wgpu records between dispatches
//! that write the same buffer, which a pass's timestamps leave out (measured:
//! docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). That cost belongs to a sequence of dependent
//! dispatches, not to the kernel, and the results say how large it is.

use std::time::Duration;

use gpuworthy_core::Result;

use crate::{WgpuBackend, device_error, lock};

/// The timestamp queries of one timing window.
#[derive(Debug)]
pub(crate) struct Timer {
    pub(crate) queries: wgpu::QuerySet,
    pub(crate) resolve: wgpu::Buffer,
    pub(crate) readback: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    pub(crate) period: f64,
    /// Passes encoded in the current window (timed up to [`MAX_TIMED_PASSES`]); `None` when no window is open.
    pub(crate) passes: std::sync::Mutex<Option<u32>>,
}

/// How many compute passes one timing window can hold.
pub(crate) const MAX_TIMED_PASSES: u32 = 256;

// One pass per launch: a window must hold the launches callers may time together.
const _: () = assert!(MAX_TIMED_PASSES as usize >= gpuworthy_core::MAX_LAUNCHES_PER_TIMING);

impl WgpuBackend {
    /// The timestamp writes for the next compute pass, when a timing window is open.
    pub(crate) fn timestamp_writes(&self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let timer = self.timer.as_ref()?;
        let mut passes = lock(&timer.passes);
        let used = passes.as_mut()?;
        // Counted even when the query set is full, so that the window reports the passes it could not time.
        *used += 1;
        if *used > MAX_TIMED_PASSES {
            return None;
        }
        let index = 2 * (*used - 1);
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &timer.queries,
            beginning_of_pass_write_index: Some(index),
            end_of_pass_write_index: Some(index + 1),
        })
    }

    pub(crate) fn time_with_queries(&self, timer: &Timer, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        // Held until the timestamps are read: the query set and the readback buffer serve one window at a time.
        let _window = self.hold_queue()?;
        *lock(&timer.passes) = Some(0);
        let result = work();
        let passes = lock(&timer.passes).take().unwrap_or(0);
        result?;
        if passes == 0 {
            // Nothing was launched (an empty input): no device time.
            return Ok(Duration::ZERO);
        }
        if passes > MAX_TIMED_PASSES {
            return Err(device_error(format!(
                "the timed work encoded {passes} compute passes; one timing window holds {MAX_TIMED_PASSES}"
            )));
        }
        let bytes = 16 * passes as u64;
        self.settle_before_submit()?;
        self.scoped("reading timestamps", || {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            encoder.resolve_query_set(&timer.queries, 0..2 * passes, &timer.resolve, 0);
            encoder.copy_buffer_to_buffer(&timer.resolve, 0, &timer.readback, 0, bytes);
            self.queue.submit([encoder.finish()]);
        })?;
        let ticks: Vec<u64> =
            self.read_mapped(&timer.readback, |raw| bytemuck::pod_collect_to_vec(&raw[..bytes as usize]))?;
        let total: u64 = ticks.chunks_exact(2).map(|pair| pair[1].saturating_sub(pair[0])).sum();
        Ok(Duration::from_nanos((total as f64 * timer.period).round() as u64))
    }
}
