//! The records a sweep measures: one [`Row`] per (workload, size, device, variant), typed (a check is a [`Check`],
//! a precision a [`Precision`]), and the few ways of reading a set of rows that every consumer shares (the best row
//! of a device at a size, the sizes and devices present).
//!
//! Rows sit below the model, the crossover and the sweep, which all read them, so that none of those imports another
//! to reach them.

use std::fmt;

use gpuworthy_core::{Backend, BackendKind, KernelClock, Precision};
use serde::{Deserialize, Serialize};

use crate::device::{Device, DeviceLabel};
use crate::measure::names::{SizeLabel, VariantName, WorkloadName};
use crate::measure::{CheckResult, Measurement};

/// One measured (workload, size, backend, variant).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Workload name.
    pub workload: WorkloadName,
    /// Size as the workload displays it.
    pub size: SizeLabel,
    /// Elements of the output (pixels, matrix entries) or input (1D): the plots' x axis.
    pub elements: u64,
    /// The backend.
    #[serde(serialize_with = "backend_name::serialize")]
    pub backend: BackendKind,
    /// How reports name the backend on its device: `cpu`, `cuda`, `wgpu`, or `wgpu(cpu)` for a CPU adapter.
    pub label: DeviceLabel,
    /// Whether the device is a GPU: false for the CPU and for a CPU adapter such as lavapipe, which no verdict calls
    /// a GPU.
    pub on_gpu: bool,
    /// Variant name.
    pub variant: VariantName,
    /// The arithmetic it computed in: `fp32`, `tf32`, `bf16` or `fp16` in reports.
    #[serde(serialize_with = "precision_label")]
    pub precision: Precision,
    /// The clock behind the kernel time (its words in JSON and reports: `CUDA events`, `host wall clock`).
    #[serde(serialize_with = "in_words")]
    pub kernel_clock: KernelClock,
    /// First use of the variant (compilation), seconds.
    pub compile_s: f64,
    /// First upload + launch + download, seconds.
    pub first_call_s: f64,
    /// Median upload, seconds.
    pub upload_s: f64,
    /// Median kernel time, seconds.
    pub kernel_s: f64,
    /// 25th percentile of the kernel time.
    pub kernel_p25_s: f64,
    /// 75th percentile of the kernel time.
    pub kernel_p75_s: f64,
    /// Median download, seconds.
    pub download_s: f64,
    /// Median upload + kernel + download, synchronised, seconds, with pageable host memory.
    pub end_to_end_s: f64,
    /// Median upload + kernel + download through the device's pipelined path (CUDA's `HostMemory::Pipelined`:
    /// chunks overlapping on several streams), seconds; `None` where the device has none or it failed.
    pub pipelined_s: Option<f64>,
    /// Bytes a perfect implementation moves.
    pub bytes: u64,
    /// Bytes this variant really moves ([`gpuworthy_core::Workload::traffic`]): more than `bytes` where it reads an
    /// input twice or reads the lines it writes.
    pub traffic_bytes: u64,
    /// Flops of the run.
    pub flops: u64,
    /// The flops the workload's cost gives for this size before any run (equal to `flops` except for mandelbrot,
    /// whose run counts the iterations it took): what a model predicts from.
    pub nominal_flops: u64,
    /// Kernel-time throughput, decimal GB/s.
    pub gb_per_s: f64,
    /// Kernel-time throughput, decimal GFLOP/s.
    pub gflop_per_s: f64,
    /// Whether its output matched the reference: `ok`, `not checked`, or `FAILED: ` and the mismatch in reports.
    pub check: Check,
}

/// Writes a value as its words ([`fmt::Display`]), as reports say it.
fn in_words<T: fmt::Display, S: serde::Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// A [`BackendKind`] in JSON: its name, as the command line spells it (`cpu`, `cuda`, `wgpu`), read back by
/// [`BackendKind`]'s `FromStr`. The rows, the model and the calibration file write backends so.
pub(crate) mod backend_name {
    use gpuworthy_core::BackendKind;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `kind` as its name.
    pub(crate) fn serialize<S: Serializer>(kind: &BackendKind, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(kind.name())
    }

    /// Reads a backend's name; any other text is an error naming the backends.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BackendKind, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

impl Row {
    /// The row of measurement `m` of `W` at `params` on `device`.
    pub fn new<W: gpuworthy_core::Workload>(device: &Device, params: &W::Params, m: &Measurement) -> Row {
        let nominal = W::cost(params);
        let elements = nominal.elements;
        Row {
            workload: m.workload.into(),
            size: m.size.clone(),
            elements,
            backend: device.kind(),
            label: device.label(),
            on_gpu: device.is_gpu(),
            variant: m.variant.clone(),
            precision: m.precision,
            kernel_clock: m.kernel_clock,
            compile_s: m.compile.as_secs_f64(),
            first_call_s: m.first_call.as_secs_f64(),
            upload_s: m.upload.median.as_secs_f64(),
            kernel_s: m.kernel.median.as_secs_f64(),
            kernel_p25_s: m.kernel.p25.as_secs_f64(),
            kernel_p75_s: m.kernel.p75.as_secs_f64(),
            download_s: m.download.median.as_secs_f64(),
            end_to_end_s: m.end_to_end.median.as_secs_f64(),
            pipelined_s: None,
            bytes: m.cost.bytes,
            traffic_bytes: W::traffic(params, device.kind(), &m.variant),
            flops: m.cost.flops,
            nominal_flops: nominal.flops,
            gb_per_s: m.gb_per_s(m.kernel.median),
            gflop_per_s: m.gflop_per_s(m.kernel.median),
            check: Check::of(m.check.as_ref()),
        }
    }

    /// A row of variant `v` with only its times set (half of `end_to_end_s` each way for the transfers), its size
    /// parsed as its element count, its kernel clock its backend's own: for tests and worked examples of the
    /// crossover and verdict logic.
    pub fn with_times(
        workload: impl Into<WorkloadName>,
        size: &str,
        backend: BackendKind,
        kernel_s: f64,
        end_to_end_s: f64,
    ) -> Row {
        Row {
            workload: workload.into(),
            size: size.into(),
            elements: size.parse().unwrap_or(1),
            backend,
            label: DeviceLabel::of(backend),
            on_gpu: backend.is_gpu(),
            variant: "v".into(),
            precision: Precision::Fp32,
            kernel_clock: match backend {
                BackendKind::Cpu => KernelClock::HostWallClock,
                BackendKind::Cuda => KernelClock::CudaEvents,
                BackendKind::Wgpu => KernelClock::TimestampQueries,
            },
            compile_s: 0.0,
            first_call_s: 0.0,
            upload_s: end_to_end_s / 2.0,
            kernel_s,
            kernel_p25_s: kernel_s,
            kernel_p75_s: kernel_s,
            download_s: end_to_end_s / 2.0,
            end_to_end_s,
            pipelined_s: None,
            bytes: 8,
            traffic_bytes: 8,
            flops: 1,
            nominal_flops: 1,
            gb_per_s: 0.0,
            gflop_per_s: 0.0,
            check: Check::Passed,
        }
    }

    /// Whether the variant computes in full `f32` precision (crossovers and verdicts compare only these with the CPU).
    pub fn is_full_precision(&self) -> bool {
        self.precision == Precision::Fp32
    }

    /// The time that counts when the data starts on the host: end-to-end on a GPU through its fastest transfer mode
    /// ([`Row::host_transfer`]), the kernel on the CPU (which computes where the data already is).
    pub fn host_time(&self) -> f64 {
        match self.pipelined_s {
            Some(p) if self.backend != BackendKind::Cpu => p.min(self.phased_host_time()),
            _ => self.phased_host_time(),
        }
    }

    /// [`Row::host_time`] without the pipelined path: the end-to-end phase on a GPU, the kernel on the CPU.
    pub fn phased_host_time(&self) -> f64 {
        if self.backend == BackendKind::Cpu { self.kernel_s } else { self.end_to_end_s }
    }

    /// The transfer mode behind [`Row::host_time`] on a GPU: `pipelined` where that path was measured no slower (a
    /// row measured on a pipelined device alone has the same time in both), else `pageable`.
    pub fn host_transfer(&self) -> &'static str {
        match self.pipelined_s {
            Some(p) if self.backend != BackendKind::Cpu && p <= self.end_to_end_s => "pipelined",
            _ => "pageable",
        }
    }
}

/// Writes a precision as reports name it.
pub(crate) fn precision_label<S: serde::Serializer>(precision: &Precision, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(precision.label())
}

/// Whether a row's output matched the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// It matched, within the workload's tolerance.
    Passed,
    /// It was not compared (too costly to compute the reference at this size, or not asked for).
    NotChecked,
    /// It did not match: where and by how much.
    Failed(String),
}

impl Check {
    /// The check of a measurement: `None` where it was not validated.
    pub fn of(result: Option<&CheckResult>) -> Check {
        match result {
            None => Check::NotChecked,
            Some(Ok(())) => Check::Passed,
            Some(Err(mismatch)) => Check::Failed(mismatch.to_string()),
        }
    }

    /// Whether the output failed its check: such a row never wins and is never fitted.
    pub fn is_failed(&self) -> bool {
        matches!(self, Check::Failed(_))
    }
}

impl fmt::Display for Check {
    /// `ok`, `not checked`, or `FAILED: ` and the mismatch, as tables, CSV and JSON write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::Passed => f.write_str("ok"),
            Check::NotChecked => f.write_str("not checked"),
            Check::Failed(why) => write!(f, "FAILED: {why}"),
        }
    }
}

impl Serialize for Check {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl std::str::FromStr for Check {
    type Err = String;

    /// Reads a check as [`Check`]'s `Display` writes it (`ok`, `not checked`, `FAILED: ...`), so that exported rows
    /// read back typed.
    fn from_str(text: &str) -> Result<Check, String> {
        match text {
            "ok" => Ok(Check::Passed),
            "not checked" => Ok(Check::NotChecked),
            _ => match text.strip_prefix("FAILED") {
                Some(why) => Ok(Check::Failed(why.trim_start_matches(':').trim_start().to_owned())),
                None => Err(format!("`{text}` is not a check (ok, not checked, or FAILED: and why)")),
            },
        }
    }
}

impl<'de> Deserialize<'de> for Check {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Check, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The best row of the backend labelled `label` at `size` by `time`.
pub fn best<'a>(rows: &'a [Row], size: &str, label: &DeviceLabel, time: impl Fn(&Row) -> f64) -> Option<&'a Row> {
    rows.iter()
        .filter(|r| r.size == size && r.label == *label && !r.check.is_failed())
        .min_by(|a, b| time(a).total_cmp(&time(b)))
}

/// The sizes of `rows`, in ladder order.
pub fn sizes(rows: &[Row]) -> Vec<SizeLabel> {
    let mut sizes: Vec<SizeLabel> = Vec::new();
    for r in rows {
        if !sizes.contains(&r.size) {
            sizes.push(r.size.clone());
        }
    }
    sizes
}

/// The labels of the backends in `rows`, in the order they were measured, with those that satisfy `keep`.
pub fn labels(rows: &[Row], keep: impl Fn(&Row) -> bool) -> Vec<DeviceLabel> {
    let mut labels: Vec<DeviceLabel> = Vec::new();
    for r in rows.iter().filter(|r| keep(r)) {
        if !labels.contains(&r.label) {
            labels.push(r.label.clone());
        }
    }
    labels
}

/// The label of the CPU backend's rows.
pub fn cpu_label() -> DeviceLabel {
    DeviceLabel::of(BackendKind::Cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check reads back from what reports write, so that exported rows are typed again when read.
    #[test]
    fn a_check_reads_back_as_it_was_written() {
        for check in [Check::Passed, Check::NotChecked, Check::Failed("element 3: 1.5 against 2".to_owned())] {
            assert_eq!(check.to_string().parse::<Check>(), Ok(check.clone()));
            let json = serde_json::to_string(&check).unwrap();
            assert_eq!(serde_json::from_str::<Check>(&json).unwrap(), check);
        }
        assert!("maybe".parse::<Check>().unwrap_err().contains("`maybe` is not a check"));
    }

    #[test]
    fn a_precision_is_found_by_its_label() {
        for precision in [Precision::Fp32, Precision::Tf32] {
            assert_eq!(Precision::from_label(precision.label()), Some(precision));
        }
        assert_eq!(Precision::from_label("half"), None);
    }
}
