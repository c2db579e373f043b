//! The workloads on wgpu, one module each, and the buffer, binding and dispatch helpers they share.
//!
//! Every input is split into chunks no larger than the device's storage-binding limit, each chunk in its own
//! buffers, so that a kernel never sees more than it can bind; most inputs are one chunk. Bind groups depend on the
//! pipeline (automatic layouts are not shared between pipelines), so each resident input caches its bind groups per
//! entry point, made on the first launch of a variant rather than in every launch.

mod elementwise;
// One module per workload, named after it (`mod square; mod saxpy; …`), from the one list of workloads. Each declares
// its `VARIANTS` table and the `SHADERS` it runs (`shaders/<workload>.wgsl`); the lists below are made from them.
gpuworthy_core::for_each_workload!(gpuworthy_core::workload_modules);

/// A [`KernelSource`] for the WGSL file `$file` of the `shaders/` folder and the entry points it defines; each workload's
/// module declares its own as `SHADERS`.
macro_rules! shader {
    ($file:literal, [$($entry:literal),* $(,)?]) => {
        gpuworthy_core::KernelSource { file: $file, source: gpuworthy_shaders::source($file), kernels: &[$($entry),*] }
    };
}
pub(crate) use shader;

use std::collections::HashMap;
use std::ops::Range;

use gpuworthy_core::{Error, Result, Variant};
use wgpu::util::DeviceExt;

use rayon::prelude::*;

use crate::{WgpuBackend, lock};
#[cfg(test)]
use gpuworthy_core::{Implements, Workload};

/// The most mappable memory kept for reuse by downloads.
const MAX_POOLED_STAGING: u64 = 1 << 30;

/// Threads per workgroup of the 1D kernels.
pub(crate) const WORKGROUP: u64 = 256;

/// Splits `0..n` into consecutive ranges of at most `max_len` elements, each a multiple of `align` except the last.
pub(crate) fn split(n: usize, max_len: usize, align: usize) -> Vec<Range<usize>> {
    let step = (max_len / align * align).max(align);
    (0..n).step_by(step).map(|start| start..(start + step).min(n)).collect()
}

/// The grid for `groups` workgroups of a 1D kernel: at most `limit` per dimension, the rest folded into y. The
/// kernels rebuild the linear index as `x + y·num_workgroups.x` and ignore workgroups past the end.
///
/// The rows are balanced (x = ⌈groups / y⌉ rather than `limit`), so fewer than y workgroups are idle. Filling
/// the first row to the limit would leave most of the last row idle: 65536 groups would launch 65535 × 2, and the
/// 65534 empty workgroups cost a memory-bound kernel a visible share of its time (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub(crate) fn grid_1d(groups: u64, limit: u32) -> Result<(u32, u32)> {
    let limit = u64::from(limit.max(1));
    let y = groups.div_ceil(limit);
    if y > limit {
        return Err(Error::TooLarge {
            what: format!("a dispatch of {groups} workgroups"),
            limit: format!("{limit} x {limit} workgroups"),
        });
    }
    // No groups: a 1 × 0 grid, which dispatches nothing.
    let x = if y == 0 { 1 } else { groups.div_ceil(y) };
    Ok((x as u32, y as u32))
}

/// Bind groups of one resident input, per entry point and chunk.
#[derive(Debug, Default)]
pub(crate) struct BindGroups(HashMap<&'static str, Vec<wgpu::BindGroup>>);

impl BindGroups {
    /// The bind groups of `entry` (one per chunk), made by `make` on first use.
    pub(crate) fn get_or_make(
        &mut self,
        entry: &'static str,
        make: impl FnOnce() -> Result<Vec<wgpu::BindGroup>>,
    ) -> Result<&[wgpu::BindGroup]> {
        if !self.0.contains_key(entry) {
            let groups = make()?;
            self.0.insert(entry, groups);
        }
        Ok(&self.0[entry])
    }
}

/// Rounds a byte count up to a multiple of 16 (whole `vec4`s), and to at least 16: bindings cannot be empty.
pub(crate) fn padded(bytes: u64) -> u64 {
    bytes.next_multiple_of(16).max(16)
}

/// The piece of an upload one thread copies into the queue's mapped staging buffer.
const UPLOAD_CHUNK_BYTES: usize = 1 << 20;

impl WgpuBackend {
    /// A storage buffer holding `data`, padded with zeros to whole `vec4`s. The data goes through a mapped staging
    /// buffer of the queue (`write_buffer_with`), written on every core in chunks of [`UPLOAD_CHUNK_BYTES`]: one
    /// thread's copy into freshly mapped memory ran at a fraction of what the H200 machine's PCIe link takes
    /// (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    pub(crate) fn storage_with(&self, label: &str, data: &[u8]) -> Result<wgpu::Buffer> {
        let buffer = self.storage_zeroed(label, data.len() as u64)?;
        // A queue write is whole words: an array of an odd number of 16-bit elements is written with zeros after it.
        let words = (data.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        let Some(size) = wgpu::BufferSize::new(words) else { return Ok(buffer) };
        let _queue = self.hold_queue()?;
        self.scoped(&format!("uploading {label}"), || {
            let Some(mut view) = self.queue().write_buffer_with(&buffer, 0, size) else { return };
            let mut whole = view.slice(..);
            // An address, not a pointer, so that the threads may share it; `WriteOnly<[u8]>` is not `Send`.
            let base = whole.as_raw_ptr().cast::<u8>().as_ptr() as usize;
            data.par_chunks(UPLOAD_CHUNK_BYTES).enumerate().for_each(|(i, source)| {
                // SAFETY: the view maps `words` ≥ `data.len()` writable bytes from `base` and lives until after this loop;
                // the chunks are disjoint, each thread writes only its own, and nothing reads the mapping.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        source.as_ptr(),
                        (base + i * UPLOAD_CHUNK_BYTES) as *mut u8,
                        source.len(),
                    );
                }
            });
            // SAFETY: the view maps `words` bytes from `base`; the bytes past the data, fewer than a word, are ours.
            unsafe { std::ptr::write_bytes((base + data.len()) as *mut u8, 0, words as usize - data.len()) };
        })?;
        Ok(buffer)
    }

    /// A zero-filled storage buffer of at least `bytes` bytes, padded to whole `vec4`s.
    pub(crate) fn storage_zeroed(&self, label: &str, bytes: u64) -> Result<wgpu::Buffer> {
        self.scoped(&format!("allocating {label} ({bytes} bytes)"), || {
            self.device_handle().create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: padded(bytes),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        })
    }

    /// A uniform buffer holding `params`.
    pub(crate) fn uniform<T: bytemuck::Pod>(&self, label: &str, params: &T) -> Result<wgpu::Buffer> {
        self.scoped(&format!("allocating {label}"), || {
            self.device_handle().create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::bytes_of(params),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        })
    }

    /// Submits the writes queued by uploads, so that an upload is complete once the device is synchronised.
    pub(crate) fn flush_uploads(&self) {
        self.queue().submit([]);
    }

    /// A bind group for `entry`'s pipeline with `buffers` bound (whole) at the given binding numbers.
    pub(crate) fn bind(&self, entry: &'static str, buffers: &[(u32, &wgpu::Buffer)]) -> Result<wgpu::BindGroup> {
        self.bind_ranges(entry, &buffers.iter().map(|&(b, buf)| (b, buf, 0, None)).collect::<Vec<_>>())
    }

    /// A bind group for `entry`'s pipeline with byte ranges `(binding, buffer, offset, size)` bound.
    pub(crate) fn bind_ranges(
        &self,
        entry: &'static str,
        ranges: &[(u32, &wgpu::Buffer, u64, Option<u64>)],
    ) -> Result<wgpu::BindGroup> {
        self.bind_ranges_to(&*self.pipeline(entry)?, entry, ranges)
    }

    /// A bind group for group 0 of `pipeline` (labelled `label`) with byte ranges `(binding, buffer, offset, size)`
    /// bound: the built-in pipelines' and those made from a caller's WGSL alike.
    pub(crate) fn bind_ranges_to(
        &self,
        pipeline: &wgpu::ComputePipeline,
        label: &str,
        ranges: &[(u32, &wgpu::Buffer, u64, Option<u64>)],
    ) -> Result<wgpu::BindGroup> {
        let layout = pipeline.get_bind_group_layout(0);
        let entries: Vec<_> = ranges
            .iter()
            .map(|&(binding, buffer, offset, size)| wgpu::BindGroupEntry {
                binding,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: size.and_then(wgpu::BufferSize::new),
                }),
            })
            .collect();
        self.scoped(&format!("binding the buffers of `{label}`"), || {
            self.device_handle().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(label),
                layout: &layout,
                entries: &entries,
            })
        })
    }

    /// Copies the first `bytes` of each buffer to the host, in order, concatenated as values of `T`: one copy from
    /// the mapped staging memory into the returned vector. Staging buffers are kept and reused while sizes repeat
    /// (making mappable memory is slow), and the vector's pages are touched on every core before the copy (a fresh
    /// vector's pages are mapped on first touch, which otherwise dominates a large download).
    pub(crate) fn read_buffers<T: bytemuck::Pod + Send + Sync>(
        &self,
        parts: &[(&wgpu::Buffer, u64)],
    ) -> Result<Vec<T>> {
        let sizes: Vec<u64> =
            parts.iter().map(|&(_, bytes)| bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT).max(4)).collect();
        let staging: Vec<wgpu::Buffer> = {
            let mut pool = lock(&self.staging);
            sizes.iter().map(|&size| pool.get_mut(&size).and_then(Vec::pop)).collect::<Vec<_>>()
        }
        .into_iter()
        .zip(&sizes)
        .map(|(reused, &size)| {
            reused.map_or_else(
                || {
                    self.scoped("allocating a download staging buffer", || {
                        self.device_handle().create_buffer(&wgpu::BufferDescriptor {
                            label: Some("download staging"),
                            size,
                            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                            mapped_at_creation: false,
                        })
                    })
                },
                Ok,
            )
        })
        .collect::<Result<_>>()?;
        let _queue = self.hold_queue()?;
        self.settle_before_submit()?;
        self.scoped("reading results back", || {
            let mut encoder = self.device_handle().create_command_encoder(&Default::default());
            for ((buffer, _), (target, &size)) in parts.iter().zip(staging.iter().zip(&sizes)) {
                encoder.copy_buffer_to_buffer(buffer, 0, target, 0, size);
            }
            self.queue().submit([encoder.finish()]);
        })?;
        let total = parts.iter().map(|p| p.1 as usize).sum::<usize>() / size_of::<T>();
        let mut out: Vec<T> = vec![T::zeroed(); total];
        out.par_chunks_mut(1 << 16).for_each(|chunk| chunk.fill(T::zeroed()));
        let mut filled = 0;
        for (buffer, &(_, bytes)) in staging.iter().zip(parts) {
            let count = bytes as usize / size_of::<T>();
            let target = &mut out[filled..filled + count];
            self.read_mapped(buffer, |mapped| {
                let bytes = &mapped[..bytes as usize];
                match bytemuck::try_cast_slice::<u8, T>(bytes) {
                    Ok(values) => target
                        .par_chunks_mut(1 << 16)
                        .zip(values.par_chunks(1 << 16))
                        .for_each(|(t, v)| t.copy_from_slice(v)),
                    Err(_) => target.copy_from_slice(&bytemuck::pod_collect_to_vec::<u8, T>(bytes)),
                }
            })?;
            filled += count;
        }
        let mut pool = lock(&self.staging);
        for (buffer, &size) in staging.into_iter().zip(&sizes) {
            pool.entry(size).or_default().push(buffer);
        }
        // Keep at most MAX_POOLED_STAGING bytes of mappable memory: past that, only this download's sizes stay.
        let pooled: u64 = pool.iter().map(|(size, buffers)| size * buffers.len() as u64).sum();
        if pooled > MAX_POOLED_STAGING {
            pool.retain(|size, _| sizes.contains(size));
        }
        Ok(out)
    }

    /// Submits one timed compute pass that runs `entry` once per `(bind group, grid)` in order, after clearing
    /// `clear` (a buffer the kernel accumulates into) when given.
    pub(crate) fn dispatch_each(
        &self,
        entry: &'static str,
        groups: &[wgpu::BindGroup],
        grids: impl IntoIterator<Item = (u32, u32)>,
        clear: Option<&wgpu::Buffer>,
    ) -> Result<()> {
        let pipeline = self.pipeline(entry)?;
        self.submit_pass(
            entry,
            |encoder| {
                if let Some(buffer) = clear {
                    encoder.clear_buffer(buffer, 0, None);
                }
            },
            |pass| {
                pass.set_pipeline(&pipeline);
                for (group, (x, y)) in groups.iter().zip(grids) {
                    pass.set_bind_group(0, group, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
            },
        )
    }

    /// Refuses a buffer larger than one binding may cover, naming the limit.
    pub(crate) fn fits_one_binding(&self, what: &str, bytes: u64) -> Result<()> {
        if bytes > self.max_binding_bytes() {
            return Err(Error::TooLarge {
                what: format!("{what} ({} MiB)", bytes >> 20),
                limit: format!(
                    "max_storage_buffer_binding_size = {} MiB on this adapter",
                    self.max_binding_bytes() >> 20
                ),
            });
        }
        Ok(())
    }

    /// The largest number of workgroups per dispatch dimension.
    pub(crate) fn max_workgroups(&self) -> u32 {
        self.limits.max_compute_workgroups_per_dimension
    }
}

impl WgpuBackend {
    /// Creates the pipeline of every kernel of `variant`.
    pub(crate) fn prepare_pipelines<L>(&self, variant: &Variant<L>) -> Result<()> {
        variant.kernels.iter().try_for_each(|entry| self.pipeline(entry).map(drop))
    }
}

macro_rules! backend_tables {
    ([] $($name:ident: $workload:ty),* $(,)?) => {
        /// Every variant table of the backend, as `(workload, [(variant, entry point)])`: what the tests check against
        /// the WGSL sources.
        pub fn variant_kernels() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
            vec![$(($name::VARIANTS.workload, $name::VARIANTS.kernels())),*]
        }

        /// The shaders of every workload, workload by workload.
        pub(crate) const WORKLOAD_SHADERS: &[&[gpuworthy_core::KernelSource]] = &[$($name::SHADERS),*];
    };
}

gpuworthy_core::for_each_workload!(backend_tables);

/// The error for an unknown variant of `W`.
pub(crate) fn unknown<W: gpuworthy_core::Workload>(backend: &WgpuBackend, variant: &str) -> Error
where
    WgpuBackend: gpuworthy_core::Implements<W>,
{
    <WgpuBackend as gpuworthy_core::Implements<W>>::unknown_variant(backend, variant)
}

/// The loop trips llvmpipe counts for one run of a loop whose body runs `body` times: one more, for the exit test
/// (counting bodies alone let `softmax unfused` run past the limit on the longest row it allowed). Every workload's
/// count is built from this, as if no loop were unrolled.
pub(crate) fn loop_run(body: u64) -> u64 {
    body + 1
}

/// For the loop-trip tests of the workloads: whether a backend whose driver limits loop trips (llvmpipe) is here.
#[cfg(test)]
pub(crate) fn backend_with_a_loop_trip_limit() -> Option<(WgpuBackend, u64)> {
    let backend = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new())?;
    let Some(limit) = backend.loop_trip_limit else {
        println!("{}: no loop-trip limit known: nothing to try", gpuworthy_core::Backend::device(&backend).name);
        return None;
    };
    Some((backend, limit))
}

/// Runs `variant` on `at` (the largest input its loop-trip count allows), which must match the reference, and on
/// `past` (one step larger), which must be refused: a count that is too low shows up as a wrong result, one too high
/// as a refusal of `at`.
#[cfg(test)]
pub(crate) fn right_at_the_limit_and_refused_past_it<W: Workload>(
    backend: &WgpuBackend,
    variant: &str,
    at: &W::Input,
    past: &W::Input,
) where
    WgpuBackend: Implements<W>,
{
    let reference = W::reference(at).unwrap();
    let output = Implements::<W>::run(backend, variant, at);
    // Checked at the variant's own precision: a 16-bit rung at fp16's bound.
    let precision = Implements::<W>::precision(backend, variant);
    let check = output.map(|output| W::check(at, &reference, &output, precision));
    assert!(matches!(check, Ok(Ok(()))), "{} {variant} at the limit: {check:?}", W::NAME);
    let refused = Implements::<W>::run(backend, variant, past);
    assert!(matches!(refused, Err(Error::TooLarge { .. })), "{} {variant} past the limit: {refused:?}", W::NAME);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_everything_in_aligned_pieces() {
        assert_eq!(split(10, 4, 4), vec![0..4, 4..8, 8..10]);
        assert_eq!(split(10, 6, 4), vec![0..4, 4..8, 8..10]);
        assert_eq!(split(3, 100, 4), vec![0..3]);
        assert!(split(0, 100, 4).is_empty());
    }

    #[test]
    fn large_grids_fold_into_two_dimensions() {
        assert_eq!(grid_1d(0, 65535).unwrap(), (1, 0));
        assert_eq!(grid_1d(10, 65535).unwrap(), (10, 1));
        assert_eq!(grid_1d(70000, 65535).unwrap(), (35000, 2));
        // Balanced rows: fewer than y idle workgroups, never a nearly empty last row.
        assert_eq!(grid_1d(65536, 65535).unwrap(), (32768, 2));
        for groups in [65535u64, 65536, 131071, 1 << 24, (1 << 24) + 7] {
            let (x, y) = grid_1d(groups, 65535).unwrap();
            let launched = x as u64 * y as u64;
            assert!(launched >= groups && launched - groups < y as u64, "{groups}: {x} x {y}");
        }
        assert!(grid_1d(1 << 40, 65535).is_err());
    }
}
