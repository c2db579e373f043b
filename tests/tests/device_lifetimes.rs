//! Devices opened, used and dropped on many threads at once, while the threads that used them exit, all finish.
//!
//! On NVIDIA's Linux driver, destroying a Vulkan device or instance while another thread that had called into Vulkan
//! was exiting deadlocked both threads inside the driver: the raw-kernel tests, whose test threads each open and drop
//! their devices, hung about once in ten runs, and this test hung in every run on the H200 until the wgpu backend
//! stopped destroying devices: it keeps them for the process and hands an idle one to the next backend
//! (`docs/results/nvidia-h200/driver-deadlock/`). It does what those tests did, many times over and on more threads,
//! and a watchdog turns a deadlock into a failure instead of a hang.
//! On lavapipe and without a GPU it checks only that the devices open, run and drop on many threads; the deadlock
//! needs NVIDIA's driver.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use gpuworthy::core::workloads::{Len, Square};
use gpuworthy::core::{Precision, Workload};

/// Rounds of [`THREADS`] threads, each opening every device, squaring a small array on it and exiting.
const ROUNDS: usize = 8;
const THREADS: usize = 8;

/// Far beyond the few seconds the rounds take; past it, the threads are taken to be deadlocked.
const WATCHDOG: Duration = Duration::from_secs(240);

#[test]
fn devices_opened_and_dropped_on_many_threads_at_once_all_finish() {
    let (finished, watch) = mpsc::channel();
    thread::spawn(move || {
        let mut runs = 0;
        for _ in 0..ROUNDS {
            let workers: Vec<_> = (0..THREADS)
                .map(|seed| {
                    thread::spawn(move || {
                        let mut runs = 0;
                        for device in gpuworthy_tests::available_devices() {
                            let input = Square::generate(&Len(1024), seed as u64).expect("an input");
                            let variant = device.best_variant::<Square>(&Len(1024));
                            let output = device
                                .run::<Square>(variant, &input)
                                .unwrap_or_else(|e| panic!("{}: {e}", device.label()));
                            let expected = Square::reference(&input).expect("the reference");
                            Square::check(&input, &expected, &output, Precision::Fp32)
                                .unwrap_or_else(|e| panic!("{}: {e}", device.label()));
                            runs += 1;
                        }
                        runs
                    })
                })
                .collect();
            runs += workers.into_iter().map(|w| w.join().expect("a worker")).sum::<usize>();
        }
        let _ = finished.send(runs);
    });
    match watch.recv_timeout(WATCHDOG) {
        Ok(runs) => eprintln!("{runs} runs on devices opened and dropped on {THREADS} threads at once, {ROUNDS} times"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("devices opened and dropped on {THREADS} threads did not finish in {WATCHDOG:?}: a deadlock")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("a worker failed (its panic is above)"),
    }
}
