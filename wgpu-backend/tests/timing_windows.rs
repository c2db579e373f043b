//! A timing window ([`Backend::time_on_device`]) times each launch's compute pass by its own timestamps
//! (`wgpu-backend/src/timer.rs`): a read, an upload or a wait inside the window sees every launch before it, the
//! window's time covers every launch whether or not the device waits between them, and a window of more passes than
//! its query set can time is refused, naming the limit.

use std::time::Duration;

use gpuworthy_core::workloads::{Len, Square};
use gpuworthy_core::{Backend, Implements, KernelClock, Workload};
use gpuworthy_wgpu::WgpuBackend;

mod common;
use common::backend;

/// The backend when its kernels are timed by timestamp queries (the windows under test); `None`, said aloud, when not.
fn timed_backend() -> Option<WgpuBackend> {
    let wgpu = backend()?;
    if wgpu.kernel_clock() != KernelClock::TimestampQueries {
        eprintln!(
            "skipping: {} has no timestamp queries, so its kernels are timed by the wall clock",
            wgpu.device().name
        );
        return None;
    }
    Some(wgpu)
}

#[test]
fn reads_and_uploads_inside_a_window_see_the_launches_before_them() {
    let Some(wgpu) = timed_backend() else { return };
    let first = Square::generate(&Len((1 << 16) + 3), 11).unwrap();
    let second = Square::generate(&Len(4099), 12).unwrap();
    let mut outputs = Vec::new();
    let time = wgpu
        .time_on_device(&mut || {
            let mut resident = Implements::<Square>::upload(&wgpu, &first)?;
            for _ in 0..3 {
                Implements::<Square>::launch(&wgpu, "vec4", &mut resident)?;
            }
            outputs.push(Implements::<Square>::download(&wgpu, &mut resident)?);
            let mut resident = Implements::<Square>::upload(&wgpu, &second)?;
            Implements::<Square>::launch(&wgpu, "naive", &mut resident)?;
            wgpu.synchronize()?;
            outputs.push(Implements::<Square>::download(&wgpu, &mut resident)?);
            Ok(())
        })
        .unwrap();
    let first_wrong = |got: &[f32], expected: &[f32]| got.iter().zip(expected).position(|(g, e)| g != e);
    let expected = Square::reference(&first).unwrap();
    assert_eq!(first_wrong(&outputs[0], &expected), None, "a read after three launches in one window");
    let expected = Square::reference(&second).unwrap();
    assert_eq!(first_wrong(&outputs[1], &expected), None, "an upload, a launch and a wait in the same window");
    assert!(time > Duration::ZERO, "four launches timed as {time:?}");
}

#[test]
fn a_windows_time_covers_every_launch_with_or_without_waits_between_them() {
    let Some(wgpu) = timed_backend() else { return };
    let input = Square::generate(&Len(1 << 21), 3).unwrap();
    let mut resident = Implements::<Square>::upload(&wgpu, &input).unwrap();
    let launches = 8;
    let mut median_of_three = |batch: usize, wait_between: bool| {
        let mut samples: Vec<Duration> = (0..3)
            .map(|_| {
                wgpu.time_on_device(&mut || {
                    for _ in 0..batch {
                        Implements::<Square>::launch(&wgpu, "naive", &mut resident)?;
                        if wait_between {
                            wgpu.synchronize()?;
                        }
                    }
                    Ok(())
                })
                .unwrap()
            })
            .collect();
        samples.sort();
        samples[1]
    };
    median_of_three(1, false);
    let one = median_of_three(1, false);
    let back_to_back = median_of_three(launches, false);
    let waited = median_of_three(launches, true);
    // Eight launches take about eight times one; half that bound leaves room for any machine's spread, and fails a
    // window that timed only its first or last launch.
    let least = one * launches as u32 / 2;
    assert!(back_to_back >= least, "{launches} launches back to back: {back_to_back:?}; one launch {one:?}");
    assert!(waited >= least, "{launches} launches, a wait after each: {waited:?}; one launch {one:?}");
}

#[test]
fn a_window_of_more_passes_than_its_query_set_is_refused_naming_the_limit() {
    let Some(wgpu) = timed_backend() else { return };
    let input = Square::generate(&Len(1024), 3).unwrap();
    let mut resident = Implements::<Square>::upload(&wgpu, &input).unwrap();
    let err = wgpu
        .time_on_device(&mut || {
            for _ in 0..300 {
                Implements::<Square>::launch(&wgpu, "naive", &mut resident)?;
            }
            Ok(())
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("300 compute passes") && err.contains("256"), "{err}");
    // The backend times windows again afterwards.
    let time = wgpu.time_on_device(&mut || Implements::<Square>::launch(&wgpu, "naive", &mut resident)).unwrap();
    assert!(time > Duration::ZERO);
}
