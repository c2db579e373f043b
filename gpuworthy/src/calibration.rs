//! Calibration: measuring on this machine what the cost model needs, and keeping it between runs.
//!
//! `gpuworthy calibrate` (or [`Calibration::measure`]) runs every workload's short ladder on every device and variant
//! with short measurements, fits the [`Model`] to the rows, and stores it as JSON with the machine's fingerprint (CPU
//! model and threads, each GPU's name and driver, gpuworthy's version). Programs load it at start
//! ([`Calibration::load`]); a file that is missing, unreadable, corrupt, from another machine or from another version
//! of gpuworthy is not trusted: the loader says why (a warning for the caller to show) and `auto` falls back to its
//! conservative default.
//!
//! The file lives at `GPUWORTHY_CALIBRATION` when that is set, else in the user's cache directory
//! (`$XDG_CACHE_HOME/gpuworthy/calibration.json`, `~/.cache/…` on Linux, `~/Library/Caches/…` on macOS,
//! `%LOCALAPPDATA%\gpuworthy\…` on Windows).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpuworthy_core::{Backend, BackendKind, Error, Result, Workload, env};
use serde::{Deserialize, Serialize};

use crate::Device;
use crate::measure::{MeasureOptions, utc_now};
use crate::model::Model;
use crate::sweep::{Progress, Row, SweepOptions, sweep_workload};

/// What the calibration of a machine depends on: when any of it changes, the calibration is stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineFingerprint {
    /// The CPU's model name.
    pub cpu: String,
    /// The CPU backend's instruction set and threads.
    pub cpu_backend: String,
    /// Each other device: label, name and driver.
    pub devices: Vec<String>,
    /// gpuworthy's version.
    pub gpuworthy_version: String,
}

impl MachineFingerprint {
    /// The fingerprint of this machine with these devices.
    pub fn of(devices: &[Device]) -> MachineFingerprint {
        let cpu = devices.iter().find(|d| d.kind() == BackendKind::Cpu);
        MachineFingerprint {
            cpu: cpu.map_or_else(String::new, |d| d.device().name.clone()),
            cpu_backend: cpu.map_or_else(String::new, |d| d.device().driver.clone()),
            devices: devices.iter().filter(|d| d.kind() != BackendKind::Cpu).map(ToString::to_string).collect(),
            gpuworthy_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// A machine's calibration: its fingerprint, when it was measured, the rows measured, and the model fitted to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The machine it describes.
    pub fingerprint: MachineFingerprint,
    /// When it was measured (UTC).
    pub measured_utc: String,
    /// How long the measurement took, in seconds.
    pub took_s: f64,
    /// The sizes measured, per workload (the short ladders): `calibrate --evaluate` measures the others.
    pub sizes: Vec<(String, Vec<String>)>,
    /// The fitted model.
    pub model: Model,
}

/// What loading a calibration found.
#[derive(Debug)]
pub enum Loaded {
    /// A calibration of this machine.
    Calibrated(Box<Calibration>),
    /// No file: the machine was never calibrated.
    Missing(PathBuf),
    /// A file that is not trusted, and why (to be shown as a warning).
    Ignored(String),
}

/// How calibration measures: short measurements, and a time budget per measurement.
pub fn calibration_options() -> SweepOptions {
    SweepOptions {
        measure: MeasureOptions {
            warmup: 1,
            spin_up: Duration::from_millis(100),
            min_repetitions: 3,
            max_repetitions: 20,
            target_time: Duration::from_millis(25),
            validate: true,
            seed: 1,
        },
        budget: Duration::from_millis(1500),
        validate_up_to_flops: 100_000_000,
    }
}

/// The default place of the calibration file: `GPUWORTHY_CALIBRATION`, else the user's cache directory; `None` when
/// neither is known.
pub fn default_path() -> Result<Option<PathBuf>> {
    if let Some(path) = env::read("GPUWORTHY_CALIBRATION")? {
        return Ok(Some(PathBuf::from(path)));
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let cache = if cfg!(windows) {
        var("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|home| home.join("Library").join("Caches"))
    } else {
        var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|home| home.join(".cache")))
    };
    Ok(cache.map(|dir| dir.join("gpuworthy").join("calibration.json")))
}

impl Calibration {
    /// Measures every workload's short ladder on every device and variant, and fits the model.
    pub fn measure(devices: &[Device], progress: &dyn Progress) -> Calibration {
        let started = Instant::now();
        let options = calibration_options();
        let mut rows: Vec<Row> = Vec::new();
        let mut sizes = Vec::new();
        macro_rules! measure_each {
            ([] $($name:ident: $workload:ty),* $(,)?) => {$({
                type W = $workload;
                let ladder = W::quick_ladder();
                let planned: usize = devices.iter().map(|d| d.variants::<W>().len()).sum();
                progress.plan((ladder.len() * planned) as u64);
                let sweep = sweep_workload::<W>(devices, &ladder, &options, progress);
                sizes.push((W::NAME.to_owned(), ladder.iter().map(ToString::to_string).collect()));
                rows.extend(sweep.rows);
            })*};
        }
        gpuworthy_core::for_each_workload!(measure_each);
        Calibration {
            fingerprint: MachineFingerprint::of(devices),
            measured_utc: utc_now(),
            took_s: started.elapsed().as_secs_f64(),
            sizes,
            model: Model::from_rows(&rows),
        }
    }

    /// Writes the calibration as JSON at `path`, making its folder.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |e: std::io::Error| Error::invalid(format!("cannot write the calibration to {}: {e}", path.display()));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let json = serde_json::to_string_pretty(self).map_err(|e| Error::invalid(e.to_string()))?;
        std::fs::write(path, json).map_err(io)
    }

    /// Reads the calibration at `path` and checks that it describes `machine`.
    pub fn load(path: &Path, machine: &MachineFingerprint) -> Loaded {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing(path.to_owned()),
            Err(e) => return Loaded::Ignored(format!("cannot read the calibration {}: {e}", path.display())),
        };
        let calibration: Calibration = match serde_json::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                return Loaded::Ignored(format!(
                    "the calibration {} is corrupt ({e}); run `gpuworthy calibrate` again",
                    path.display()
                ));
            }
        };
        if calibration.fingerprint != *machine {
            let why = if calibration.fingerprint.gpuworthy_version != machine.gpuworthy_version {
                format!("gpuworthy {}, not {}", calibration.fingerprint.gpuworthy_version, machine.gpuworthy_version)
            } else {
                "another machine or other devices".to_owned()
            };
            return Loaded::Ignored(format!(
                "the calibration {} describes {why}; run `gpuworthy calibrate` on this one",
                path.display()
            ));
        }
        Loaded::Calibrated(Box::new(calibration))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> MachineFingerprint {
        MachineFingerprint {
            cpu: "a CPU".into(),
            cpu_backend: "AVX2, 2 threads".into(),
            devices: vec!["wgpu(cpu): llvmpipe".into()],
            gpuworthy_version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    fn saved(dir: &str, calibration: &Calibration) -> PathBuf {
        let path = std::env::temp_dir().join(format!("gpuworthy-test-{dir}-{}", std::process::id())).join("c.json");
        calibration.save(&path).unwrap();
        path
    }

    fn calibration(fingerprint: MachineFingerprint) -> Calibration {
        Calibration { fingerprint, measured_utc: utc_now(), took_s: 1.0, sizes: Vec::new(), model: Model::default() }
    }

    #[test]
    fn a_calibration_of_this_machine_round_trips() {
        let path = saved("round", &calibration(machine()));
        assert!(matches!(Calibration::load(&path, &machine()), Loaded::Calibrated(_)));
    }

    #[test]
    fn a_corrupt_file_is_ignored_with_the_reason() {
        let path = saved("corrupt", &calibration(machine()));
        std::fs::write(&path, "{ \"fingerprint\": 3").unwrap();
        match Calibration::load(&path, &machine()) {
            Loaded::Ignored(why) => assert!(why.contains("corrupt"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_file_from_another_machine_or_version_is_ignored() {
        let other = MachineFingerprint { cpu: "another CPU".into(), ..machine() };
        let path = saved("foreign", &calibration(other));
        match Calibration::load(&path, &machine()) {
            Loaded::Ignored(why) => assert!(why.contains("another machine"), "{why}"),
            other => panic!("{other:?}"),
        }
        let old = MachineFingerprint { gpuworthy_version: "0.0.1".into(), ..machine() };
        let path = saved("stale", &calibration(old));
        match Calibration::load(&path, &machine()) {
            Loaded::Ignored(why) => assert!(why.contains("gpuworthy 0.0.1"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_file_is_missing() {
        let path = std::env::temp_dir().join("gpuworthy-test-no-such-dir/calibration.json");
        assert!(matches!(Calibration::load(&path, &machine()), Loaded::Missing(_)));
    }
}
