//! The cost model behind `auto`, `explain` and the calibration: each phase's time on each device as a function of a
//! workload's cost, fitted from measurements on this machine.
//!
//! For every (device, workload, variant) the kernel's time is `fixed + bytes·per_byte + flops·per_flop` ([`CostFit`](crate::model::fit::CostFit)):
//! `fixed` is the launch and synchronisation overhead that a tiny size pays, `per_byte` the inverse of the bandwidth a
//! memory-bound kernel reaches, `per_flop` the inverse of the arithmetic rate of a compute-bound one. The transfers of a
//! (device, workload) are fitted the same way against the bytes the workload moves (uploads and downloads of one
//! workload always move the same share of its bytes, so one fit per direction covers every size). Fits minimise the
//! relative error, so that a 5 µs point counts as much as a 50 ms one, and keep every coefficient non-negative, so
//! that a prediction never shrinks as the work grows. Between the sizes calibration measured, a [`Curve`] interpolates
//! the measured times (log-log), which keeps what no three-term formula can (a working set that leaves a cache);
//! beyond them, it follows the fit, scaled to meet the nearest measured point, and a kernel's time grows with the
//! bytes its variant really moves ([`gpuworthy_core::Workload::traffic`], recorded beside each calibrated point):
//! two shapes of one cost can move different bytes (a softmax whose rows are too long to be held on chip reads
//! them twice), and so can one kernel at two sizes (the CPU's streaming stores past 2^22 elements).
//!
//! A prediction for data that starts on the host adds to a GPU's kernel what its whole runs from the host took beyond
//! their kernels (the transfers as one run pays them; the upload and download timed apart where that was not
//! measured), and takes the CPU's kernel alone (the CPU computes where the data already is); where the device has a
//! pipelined path (CUDA's chunks overlapping host staging, both copies and the kernels) and calibration measured its
//! whole runs, the faster of the two is predicted, and the prediction says which. For data resident on a device it compares kernels. The
//! choice is the device and full-precision variant predicted fastest, and the phase that decides is named: the
//! transfers, the launch overhead, or the kernel.
//!
//! This folder turns measurements into predictions: measured rows ([`rows`]), sweeps over sizes ([`sweep`]) and
//! where their curves cross ([`crossover`]), the fits ([`fit`]) and the cost model (this module) that calibration
//! makes ([`calibration`]), and the calibrations shipped for machines one does not have ([`reference`]). It stands
//! on [`crate::device`] and [`crate::measure`].

pub mod calibration;
pub mod contention;
pub mod crossover;
pub mod fit;
pub mod reference;
pub mod rows;
pub mod sweep;

use std::fmt;

#[cfg(doc)]
use gpuworthy_core::Backend;
use gpuworthy_core::{BackendKind, Cost, Precision, Resemblance};
use serde::{Deserialize, Serialize};

use crate::device::DeviceLabel;
use crate::measure::names::{SizeLabel, VariantName, WorkloadName};
use crate::model::fit::{Curve, StreamBound};
use crate::model::rows::Row;

/// One variant's kernel on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantModel {
    /// The variant.
    pub variant: VariantName,
    /// Whether it computes in full `f32` precision; `auto` chooses only these unless its caller allows others
    /// ([`Model::allowing`]).
    pub full_precision: bool,
    /// The precision it computes in (calibrations written before there were four say only whether it was full:
    /// [`VariantModel::precision`] reads those).
    #[serde(default, with = "precision_by_name")]
    pub precision: Option<Precision>,
    /// The kernel's time.
    pub kernel: Curve,
}

/// A variant's precision in a calibration file, by the name reports use (`bf16`); a name this build does not know
/// reads as none, so that the variant falls back on its `full_precision` flag.
mod precision_by_name {
    use gpuworthy_core::Precision;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(precision: &Option<Precision>, serializer: S) -> Result<S::Ok, S::Error> {
        match precision {
            Some(p) => serializer.serialize_some(p.label()),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Precision>, D::Error> {
        Ok(Option::<String>::deserialize(deserializer)?.and_then(|name| Precision::from_label(&name)))
    }
}

impl VariantModel {
    /// The precision it computes in: as calibrated, or for an older calibration `f32` where it was full precision
    /// and TF32 (then the only reduced one) where it was not.
    pub fn precision(&self) -> Precision {
        self.precision.unwrap_or(if self.full_precision { Precision::Fp32 } else { Precision::Tf32 })
    }
}

/// One workload on one device: its transfers and each variant's kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadModel {
    /// The workload.
    pub workload: WorkloadName,
    /// Host to device, against the workload's bytes (zero on the CPU).
    pub upload: Curve,
    /// Device to host, against the workload's bytes (zero on the CPU).
    pub download: Curve,
    /// Host to device through the backend's pinned (page-locked) staging memory, where the device has it (CUDA).
    #[serde(default)]
    pub upload_pinned: Option<Curve>,
    /// Device to host through pinned staging memory, where the device has it.
    #[serde(default)]
    pub download_pinned: Option<Curve>,
    /// A whole run (upload, kernel and download overlapped) through the device's pipelined path, with its documented
    /// best variant, against the workload's cost, where the device has that path (CUDA).
    #[serde(default)]
    pub pipelined: Option<Curve>,
    /// What a whole run from the host takes beyond its kernel, against the workload's cost (each end-to-end run less
    /// its variant's kernel, every variant measured): the transfers as one run pays them, with the synchronisation
    /// and overlap that phases timed apart do not show. On a GPU, a run from the host is predicted as its kernel plus
    /// this, and the upload and download shown share it in their proportions. A CPU adapter (lavapipe) keeps its
    /// phases: its whole runs share the cores they are timed on with everything else on the machine, and on two cores
    /// one expression's whole run took much longer in a calibration than in the evaluation after it (measured:
    /// docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
    #[serde(default)]
    pub host_overhead: Option<Curve>,
    /// Each variant measured.
    pub variants: Vec<VariantModel>,
    /// How this workload streams from memory on this device, measured above its calibration ladder
    /// ([`crate::model::calibration::measure_workload_streaming`]): a kernel of that variant past the ladder is predicted from
    /// it. None where not measured (a calibration file older than the field, a workload bound by its arithmetic).
    #[serde(default)]
    pub streaming: Option<OwnStreaming>,
    /// For a workload bound by its arithmetic, its kernel timed past the calibration ladder on this GPU
    /// ([`crate::model::calibration::measure_compute_probe`]): that variant's kernel between the ladder and the probe is
    /// interpolated, and grows from the probe past it ([`Curve::predict_kernel_probed`]). None where not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_probe: Option<ComputeProbe>,
    /// Whether this device, as a member of a group run from the host, reads its part where it lies and writes it in
    /// place ([`gpuworthy_core::Implements::reads_parts_in_place`]), through its pageable path and through its
    /// pipelined one; where not, the part is cut and its output copied in, on the host, and a group's prediction
    /// charges those copies ([`Model::host_copy_s_per_byte`]). `false` in calibrations older than the field.
    #[serde(default)]
    pub parts_in_place: bool,
    /// As [`WorkloadModel::parts_in_place`], through the device's pipelined path.
    #[serde(default)]
    pub parts_in_place_pipelined: bool,
}

/// A kernel of a workload bound by its arithmetic, timed once past the calibration ladder
/// ([`gpuworthy_core::Workload::compute_probe`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputeProbe {
    /// The variant timed (the backend's documented best at the probe's size).
    pub variant: VariantName,
    /// The bytes the workload's cost counts at the probe's size ([`gpuworthy_core::Workload::cost`]).
    pub bytes: u64,
    /// The flops the workload's cost counts at the probe's size.
    pub flops: u64,
    /// Its kernel's median, in seconds.
    pub seconds: f64,
}

/// A workload's own rate from memory on one device: one variant, measured at sizes above the calibration ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnStreaming {
    /// The variant measured (the backend's documented best at the far probe).
    pub variant: VariantName,
    /// Each probe, fewest bytes first: the bytes the variant really moved ([`gpuworthy_core::Workload::traffic`])
    /// and its seconds per byte there. Empty in a file older than the field (whose one rate is not used: as if
    /// nothing was probed).
    #[serde(default)]
    pub probes: Vec<(u64, f64)>,
}

/// One device of the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceModel {
    /// The device's label in reports (`cpu`, `cuda`, `wgpu`, `wgpu(cpu)`).
    pub label: DeviceLabel,
    /// Its backend (its name in JSON).
    #[serde(with = "crate::model::rows::backend_name")]
    pub backend: BackendKind,
    /// Whether it is a GPU.
    pub is_gpu: bool,
    /// Each workload measured on it.
    pub workloads: Vec<WorkloadModel>,
    /// Seconds per byte the device streams past its caches ([`crate::model::calibration::measure_streaming`]): a
    /// memory-bound kernel past its calibrated sizes takes at least this much for each byte more.
    #[serde(default)]
    pub stream_s_per_byte: Option<f64>,
    /// The bytes of the device's last-level cache, where known (the CPU's, from the operating system; a GPU's L2,
    /// from its driver or from a device of the same name whose driver says,
    /// [`gpuworthy_core::Backend::cache_bytes`]): a
    /// memory-bound kernel that moves no more than this past its calibrated sizes is not held to
    /// [`DeviceModel::stream_s_per_byte`], since its data can stay in the cache from one run to the next. The
    /// 16-core hosts of the GPU machines have 300 MiB of it; calibrated up to 32 MiB and held to the streaming
    /// rate beyond, their square, saxpy and sum at 2^24 elements (64-192 MiB) were predicted slower than
    /// they ran (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    #[serde(default)]
    pub cache_bytes: Option<u64>,
}

impl DeviceModel {
    /// The seconds a byte that this device's whole runs from the host grew by between the two largest calibrated
    /// sizes of the workloads calibrated past `bytes` (their [`WorkloadModel::host_overhead`]), the median over those
    /// workloads; `None` where no workload reached further. Every workload's transfers cross the same link, and a
    /// workload whose ladder stops early has seen only its slower start: WGSL's matmul from the host, whose ladder
    /// stops at 12 MiB, grown at its own rate, was predicted too slow at 2048^3 on an H100 and an H200
    /// (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    pub fn host_transfer_per_byte_beyond(&self, bytes: u64) -> Option<f64> {
        let rates: Vec<f64> = self
            .workloads
            .iter()
            .filter_map(|w| w.host_overhead.as_ref()?.growth_at_top())
            .filter(|&(top, _, _)| top > bytes)
            .map(|(_, _, per_byte)| per_byte)
            .collect();
        median(rates)
    }

    /// The streaming rate that bounds a memory-bound kernel moving `bytes` past its calibrated sizes: none where
    /// they fit in the device's last-level cache.
    pub fn stream_bound(&self, bytes: u64) -> Option<f64> {
        self.stream_s_per_byte.filter(|_| self.cache_bytes.is_none_or(|cache| bytes > cache))
    }

    /// The time of the shortest kernel this device runs, what a launch costs here: the median, over its workloads,
    /// of the fastest full-precision variant's time at the workload's smallest calibrated size. Each of those is one
    /// measurement of the same launch path; the median of ten is steadier than any one (in an H200's calibration, a
    /// CUDA expression's launch measured slower than the device's other workloads and than expressions in the
    /// evaluation after it; measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). `None` where
    /// nothing was calibrated.
    pub fn launch_floor(&self) -> Option<f64> {
        let floors: Vec<f64> = self
            .workloads
            .iter()
            .filter_map(|w| {
                w.variants
                    .iter()
                    .filter(|v| v.full_precision)
                    .filter_map(|v| v.kernel.points.first().map(|p| p.2))
                    .min_by(f64::total_cmp)
            })
            .collect();
        median(floors)
    }

    /// What `workload`'s streaming probes say of its variants that were not probed, at `cost`: the probed variant's
    /// prediction from its probes over its prediction without them (1 within the calibrated sizes, and where nothing
    /// was probed). Only the documented best variant is probed, and another extrapolated from the copy's rate alone
    /// looked faster than it past the ladder: on an H200, WGSL's `tiled` stencil at 4096x4096 was predicted faster
    /// than the probed `rows` variant, and was not (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    pub fn unprobed_slowdown(
        &self,
        workload: &WorkloadModel,
        cost: &Cost,
        moved: &dyn Fn(BackendKind, &str) -> Option<u64>,
    ) -> f64 {
        let Some(own) = workload.streaming.as_ref().filter(|own| !own.probes.is_empty()) else { return 1.0 };
        let Some(v) = workload.variants.iter().find(|v| v.variant == own.variant) else { return 1.0 };
        let moved = moved(self.backend, &v.variant);
        let bytes = moved.unwrap_or(cost.bytes);
        let with = v.kernel.predict_kernel(cost, self.stream_bound_of(workload, &v.variant, bytes), moved);
        let without = v.kernel.predict_kernel(cost, self.stream_bound(bytes).map(StreamBound::EachByteMore), moved);
        // At most a cache's gain ([`crate::model::fit::CACHE_RATE_MAX`]): the probed variant's rate says how the memory
        // treats this workload, not that another variant runs many times faster than its own sizes showed.
        if with > 0.0 && without > 0.0 { (with / without).max(1.0 / crate::model::fit::CACHE_RATE_MAX) } else { 1.0 }
    }

    /// How `variant` of `workload`, moving `bytes` past its calibrated sizes, is held to a streaming rate: predicted
    /// from its own probes where that variant's were measured (past the device's last-level cache, from the probes
    /// past it alone), else held to [`DeviceModel::stream_bound`]'s for each byte past the calibrated sizes.
    pub fn stream_bound_of(&self, workload: &WorkloadModel, variant: &str, bytes: u64) -> Option<StreamBound> {
        let Some(own) = workload.streaming.as_ref().filter(|own| own.variant == variant && !own.probes.is_empty())
        else {
            return self.stream_bound(bytes).map(StreamBound::EachByteMore);
        };
        let past_cache: Vec<(u64, f64)> = match self.cache_bytes {
            Some(cache) if bytes > cache => own.probes.iter().copied().filter(|p| p.0 > cache).collect(),
            _ => Vec::new(),
        };
        Some(if past_cache.is_empty() {
            StreamBound::Measured(own.probes.clone())
        } else {
            StreamBound::FromMemory(past_cache)
        })
    }
}

/// The median of `values` (the mean of the two middle ones for an even count); `None` when there are none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some(0.5 * (values[n / 2 - 1] + values[n / 2])),
    }
}

/// Where a workload's data is when the work is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Placement {
    /// In host memory, and the result is wanted there: a GPU pays the upload and the download.
    Host,
    /// Already on the device, and the result stays there: only kernels are compared.
    Resident,
    /// In host memory, moved through pinned (page-locked) staging buffers where a device has them (CUDA's
    /// `HostMemory::Pinned`, `gpuworthy run --pinned`); a device without them moves it as for [`Placement::Host`].
    PinnedHost,
}

impl Placement {
    /// Whether a GPU pays the upload and the download.
    pub fn moves_data(self) -> bool {
        self != Placement::Resident
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Placement::Host => "data on the host",
            Placement::Resident => "data resident on the device",
            Placement::PinnedHost => "data on the host, moved through pinned memory",
        })
    }
}

/// The phase that decides between two devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Moving the data to the GPU and back.
    Transfer,
    /// The fixed cost of launching and synchronising, which a small size cannot amortise.
    LaunchOverhead,
    /// The kernel's own work.
    Kernel,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Transfer => "the transfers",
            Phase::LaunchOverhead => "the launch overhead",
            Phase::Kernel => "the kernel",
        })
    }
}

/// The predicted time of a workload's best full-precision variant on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The device's label.
    pub device: DeviceLabel,
    /// Whether the device is a GPU.
    pub is_gpu: bool,
    /// The variant predicted fastest there.
    pub variant: VariantName,
    /// Upload, seconds (zero when resident, and on the CPU).
    pub upload_s: f64,
    /// The kernel's fixed part (launch overhead), seconds.
    pub launch_s: f64,
    /// The kernel, seconds (its launch overhead included).
    pub kernel_s: f64,
    /// Download, seconds (zero when resident, and on the CPU).
    pub download_s: f64,
    /// The sum; for a pipelined run, its whole predicted time.
    pub total_s: f64,
    /// Whether the data on the host is predicted to move through the device's pipelined path, faster there than its
    /// pageable transfers: `upload_s` and `download_s` are then the transfer time the pipeline does not hide behind
    /// the kernel (the whole run's time beyond the kernel, shared out as the pageable transfers are).
    #[serde(default)]
    pub pipelined: bool,
}

/// What one device's arithmetic and special functions cost at one length, beyond the memory traffic of a calibrated
/// expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateSample {
    /// The elements the probes had.
    pub len: u64,
    /// Seconds per arithmetic operation per element, past what the base expression's memory traffic hides.
    pub per_flop_s: f64,
    /// Seconds per call of each special function (`exp`, `sin` ...), by name.
    pub per_call_s: Vec<(String, f64)>,
}

impl RateSample {
    /// The seconds per call of `name`, if measured.
    fn call(&self, name: &str) -> Option<f64> {
        self.per_call_s.iter().find(|(n, _)| n == name).map(|(_, s)| *s)
    }
}

/// One device's [`RateSample`]s at a few lengths, shortest first: the rates that price an expression calibration
/// never saw ([`Model::predict_resembling`]). A rate depends on the length: a CPU runs a short array on fewer threads
/// (one below its evaluator's task size), so that a call costs a whole core's time there and a fraction of it on a
/// long array; between the lengths measured the rates are interpolated along the logarithm of the length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputeRates {
    /// The device's label.
    pub label: DeviceLabel,
    /// The rates at each length measured, shortest first.
    pub samples: Vec<RateSample>,
}

impl ComputeRates {
    /// `rate` of the samples at `len` elements: interpolated between the two lengths around it, the nearest outside
    /// them; `None` where a sample lacks it. The rates are taken non-increasing with the length (each sample's the
    /// least of its own and every shorter one's): a longer array is spread over at least as many threads, so a call
    /// costs no more per element there, and a sample that says otherwise is a probe slowed by something else on the
    /// machine (on two cores, a CPU's `atan` measured slower a call at 2^14 than at 2^10, and an expression at
    /// 8192 elements went to a CPU adapter that took longer than the CPU; measured:
    /// docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
    fn at(&self, len: u64, rate: impl Fn(&RateSample) -> Option<f64>) -> Option<f64> {
        let x = |n: u64| (n.max(1) as f64).ln();
        let mut least = f64::INFINITY;
        let mut monotone: Vec<(u64, Option<f64>)> = Vec::with_capacity(self.samples.len());
        for sample in &self.samples {
            let r = rate(sample).map(|r| {
                least = least.min(r);
                least
            });
            monotone.push((sample.len, r));
        }
        let above = monotone.iter().position(|(n, _)| *n >= len);
        match above {
            Some(0) => monotone[0].1,
            None => monotone.last()?.1,
            Some(i) => {
                let ((low_len, low), (high_len, high)) = (monotone[i - 1], monotone[i]);
                let w = (x(len) - x(low_len)) / (x(high_len) - x(low_len)).max(f64::MIN_POSITIVE);
                Some(low? * (1.0 - w) + high? * w)
            }
        }
    }

    /// The seconds per call of `name` at `len` elements, if measured.
    pub fn per_call_s(&self, name: &str, len: u64) -> Option<f64> {
        self.at(len, |s| s.call(name))
    }

    /// The time `resemblance`'s extra arithmetic and calls take on this device, and the functions it has no rate
    /// for.
    pub fn extra_s(&self, resemblance: &Resemblance) -> (f64, Vec<&'static str>) {
        let len = resemblance.elements;
        let mut unpriced = Vec::new();
        let mut per_element = resemblance.extra_flops as f64 * self.at(len, |s| Some(s.per_flop_s)).unwrap_or(0.0);
        for &(name, calls) in &resemblance.calls {
            match self.per_call_s(name, len) {
                Some(s) => per_element += calls as f64 * s,
                None => unpriced.push(name),
            }
        }
        (per_element * len as f64, unpriced)
    }
}

/// How far the model's choices were from the fastest measured, by `calibrate --evaluate` at sizes calibration did not
/// use: the error a prediction is said with, and within which two devices are a toss-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelError {
    /// What was evaluated (the workloads, the expressions calibration never saw, or both).
    pub covered: String,
    /// Points evaluated with auto's choice measured.
    pub points: usize,
    /// Points where auto's choice was within 10% of the fastest.
    pub within_10: usize,
    /// The regret (auto's choice's time over the fastest) that 90% of the points stayed within.
    pub p90_regret: f64,
    /// The largest regret.
    pub worst_regret: f64,
    /// The relative error of the prediction for auto's choice that 90% of the points stayed within
    /// (`|predicted / measured - 1|`).
    #[serde(default)]
    pub p90_prediction_error: Option<f64>,
}

impl ModelError {
    /// The relative difference within which two predictions are a toss-up: the prediction error 90% of the points
    /// stayed within (else the regret they stayed within), between 5% and 50%.
    pub fn margin(&self) -> f64 {
        self.p90_prediction_error.unwrap_or(self.p90_regret - 1.0).clamp(0.05, 0.5)
    }
}

/// The toss-up margin of a model never evaluated: the evaluation's goal, 10%.
pub const DEFAULT_TOSS_UP_MARGIN: f64 = 0.10;

/// The cost model of a machine: every device, workload and variant calibration measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Model {
    /// Each device.
    pub devices: Vec<DeviceModel>,
    /// The model's error, measured by the last `calibrate --evaluate`, if one ran.
    #[serde(default)]
    pub error: Option<ModelError>,
    /// Each device's arithmetic and special-function rates, where calibration measured them (expressions).
    #[serde(default)]
    pub rates: Vec<ComputeRates>,
    /// How the host slowed the members of device sets run at once, per GPU kind, where calibration measured it
    /// ([`contention::measure_contention`]): a group's prediction applies it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contention: Vec<contention::HostContention>,
    /// Seconds per byte the host takes to copy into memory it has just allocated (a group member's cut of its part,
    /// and its output copied into place, [`contention::measure_host_copy`]), where calibration measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_copy_s_per_byte: Option<f64>,
    /// The reduced precisions its predictions may choose besides `f32` ([`Model::allowing`]): none unless the caller
    /// allowed them. Not stored: a caller's allowance, not the machine's.
    #[serde(skip)]
    pub allowed: Vec<Precision>,
}

impl Model {
    /// This model, its predictions also choosing variants that compute in `precisions` (`f32` ones always): what
    /// `auto` does for a caller who accepts a lower precision (`--precision bf16`, or `--tolerance 1e-2`, which
    /// [`Precision::within_tolerance`] turns into precisions). Only variants whose results passed their
    /// precision's check were fitted, so a precision allowed here is one whose error was measured within its bound.
    pub fn allowing(mut self, precisions: &[Precision]) -> Model {
        self.allowed = precisions.iter().copied().filter(|p| p.is_reduced()).collect();
        self
    }

    /// Whether a prediction may choose `variant`: `f32` always, a reduced precision where it was allowed.
    pub fn allows(&self, variant: &VariantModel) -> bool {
        let precision = variant.precision();
        !precision.is_reduced() || self.allowed.contains(&precision)
    }

    /// Fits the model to a sweep's rows (any workloads, devices and variants); rows that failed their check, and
    /// variants measured at fewer than two sizes, are left out.
    pub fn from_rows(rows: &[Row]) -> Model {
        let mut model = Model::default();
        let ok = |r: &&Row| !r.check.is_failed() && r.kernel_s > 0.0;
        for r in rows.iter().filter(ok) {
            if !model.devices.iter().any(|d| d.label == r.label) {
                model.devices.push(DeviceModel {
                    label: r.label.clone(),
                    backend: r.backend,
                    is_gpu: r.on_gpu,
                    workloads: Vec::new(),
                    stream_s_per_byte: None,
                    cache_bytes: None,
                });
            }
        }
        for device in &mut model.devices {
            let of_device: Vec<&Row> = rows.iter().filter(ok).filter(|r| r.label == device.label).collect();
            let mut workloads: Vec<&WorkloadName> = of_device.iter().map(|r| &r.workload).collect();
            workloads.dedup();
            for workload in workloads {
                let of_workload: Vec<&Row> = of_device.iter().copied().filter(|r| r.workload == *workload).collect();
                let cost = |r: &Row| Cost { bytes: r.bytes, flops: r.nominal_flops, elements: r.elements };
                let on_host = device.backend == BackendKind::Cpu;
                let transfer = |time: fn(&Row) -> f64| {
                    if on_host {
                        Curve::default()
                    } else {
                        Curve::through(&of_workload.iter().map(|r| (cost(r), time(r))).collect::<Vec<_>>())
                            .unwrap_or_default()
                    }
                };
                let mut variants: Vec<&str> = of_workload.iter().map(|r| r.variant.as_str()).collect();
                variants.sort_unstable();
                variants.dedup();
                let variants = variants
                    .into_iter()
                    .filter_map(|variant| {
                        let samples: Vec<&Row> = of_workload.iter().copied().filter(|r| r.variant == variant).collect();
                        let sizes = samples.iter().map(|r| r.bytes).collect::<std::collections::BTreeSet<_>>().len();
                        if sizes < 2 {
                            return None;
                        }
                        let kernel = Curve::through_moving(
                            &samples.iter().map(|r| (cost(r), r.traffic_bytes, r.kernel_s)).collect::<Vec<_>>(),
                        )?;
                        Some(VariantModel {
                            variant: variant.into(),
                            full_precision: samples[0].is_full_precision(),
                            precision: Some(samples[0].precision),
                            kernel,
                        })
                    })
                    .collect();
                device.workloads.push(WorkloadModel {
                    workload: workload.clone(),
                    upload: transfer(|r| r.upload_s),
                    download: transfer(|r| r.download_s),
                    upload_pinned: None,
                    download_pinned: None,
                    pipelined: fastest_per_size(
                        of_workload.iter().filter_map(|r| Some((cost(r), r.pipelined_s?))).collect(),
                    ),
                    host_overhead: device
                        .is_gpu
                        .then(|| {
                            let beyond = |r: &Row| (r.end_to_end_s - r.kernel_s).max(MIN_OVERHEAD_S);
                            Curve::through(&of_workload.iter().map(|r| (cost(r), beyond(r))).collect::<Vec<_>>())
                        })
                        .flatten(),
                    variants,
                    streaming: None,
                    compute_probe: None,
                    parts_in_place: false,
                    parts_in_place_pipelined: false,
                });
            }
        }
        model
    }

    /// Adds the transfers through pinned staging memory of the device labelled `label`, fitted to `rows` (a sweep of
    /// that device opened with pinned host memory; their kernels are not used).
    pub fn add_pinned_transfers(&mut self, label: &DeviceLabel, rows: &[Row]) {
        let Some(device) = self.devices.iter_mut().find(|d| d.label == *label) else { return };
        for w in &mut device.workloads {
            let of_workload: Vec<&Row> =
                rows.iter().filter(|r| r.workload == w.workload && r.label == *label && !r.check.is_failed()).collect();
            let cost = |r: &Row| Cost { bytes: r.bytes, flops: r.nominal_flops, elements: r.elements };
            let fit = |time: fn(&Row) -> f64| {
                Curve::through(&of_workload.iter().map(|r| (cost(r), time(r))).collect::<Vec<_>>())
            };
            w.upload_pinned = fit(|r| r.upload_s);
            w.download_pinned = fit(|r| r.download_s);
        }
    }

    /// Adds the whole runs through the pipelined path of the device labelled `label` for `workload`: `(cost, seconds)`
    /// samples of its documented best variant (several at one size keep the fastest).
    pub fn add_pipelined_runs(&mut self, label: &DeviceLabel, workload: &str, samples: Vec<(Cost, f64)>) {
        let Some(device) = self.devices.iter_mut().find(|d| d.label == *label) else { return };
        if let Some(w) = device.workloads.iter_mut().find(|w| w.workload == workload) {
            w.pipelined = fastest_per_size(samples);
        }
    }

    /// Each device's best full-precision variant for `workload` at `cost`, fastest first.
    pub fn predict(&self, workload: &str, cost: &Cost, placement: Placement) -> Vec<Prediction> {
        self.predict_preferring(workload, cost, placement, &|_| None, &|_, _| None)
    }

    /// As [`Model::predict`], but on each device the variant `preferred(device label)` names is taken unless another
    /// is predicted more than [`VARIANT_MARGIN`] faster: between variants whose calibrated times are that close, the
    /// calibration's noise would decide, and the backend's documented rule (`best_variant`) is the better guess.
    /// `moved(backend, variant)` is the bytes that variant really moves at this size, where known
    /// ([`gpuworthy_core::Workload::traffic`]): past the calibrated sizes a kernel grows with them
    /// ([`Curve::predict_kernel`]).
    pub fn predict_preferring(
        &self,
        workload: &str,
        cost: &Cost,
        placement: Placement,
        preferred: &dyn Fn(&DeviceLabel) -> Option<&'static str>,
        moved: &dyn Fn(BackendKind, &str) -> Option<u64>,
    ) -> Vec<Prediction> {
        let mut predictions: Vec<Prediction> = self
            .devices
            .iter()
            .filter_map(|device| {
                let w = device.workloads.iter().find(|w| w.workload == workload)?;
                let unprobed = device.unprobed_slowdown(w, cost, moved);
                let candidates: Vec<(&VariantModel, f64)> = w
                    .variants
                    .iter()
                    .filter(|v| self.allows(v))
                    .map(|v| {
                        let moved = moved(device.backend, &v.variant);
                        let bound = device.stream_bound_of(w, &v.variant, moved.unwrap_or(cost.bytes));
                        let probed = matches!(bound, Some(StreamBound::Measured(_) | StreamBound::FromMemory(_)));
                        let kernel = match w.compute_probe.as_ref().filter(|p| p.variant == v.variant) {
                            Some(p) => v.kernel.predict_kernel_probed(cost, (p.bytes, p.flops, p.seconds)),
                            None => v.kernel.predict_kernel(cost, bound, moved),
                        };
                        (v, if probed { kernel } else { kernel * unprobed })
                    })
                    .collect();
                let fastest = candidates.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
                let rule = preferred(&device.label)
                    .and_then(|name| candidates.iter().copied().find(|(v, _)| v.variant == name))
                    .filter(|(rule, t)| {
                        *t <= fastest.1 * (1.0 + VARIANT_MARGIN)
                            || !fastest.0.kernel.faster_at_neighbours(&rule.kernel, cost)
                    });
                let (variant, kernel) = rule.unwrap_or(fastest);
                let pinned = placement == Placement::PinnedHost;
                let through = |pageable: &Curve, pinned_curve: &Option<Curve>| match pinned_curve {
                    Some(curve) if pinned => curve.predict(cost),
                    _ if placement.moves_data() => pageable.predict(cost),
                    _ => 0.0,
                };
                let (mut upload_s, mut download_s) =
                    (through(&w.upload, &w.upload_pinned), through(&w.download, &w.download_pinned));
                // From pageable host memory, the transfers as a whole run pays them, shared out as the phases are.
                if let Some(overhead) = w.host_overhead.as_ref().filter(|_| placement == Placement::Host) {
                    let top = overhead.points.last().map_or(u64::MAX, |p| p.0);
                    let link = device.host_transfer_per_byte_beyond(top);
                    let share =
                        overhead.predict_whole_run_within(cost, link) / (upload_s + download_s).max(f64::MIN_POSITIVE);
                    upload_s *= share;
                    download_s *= share;
                }
                let phased = Prediction {
                    device: device.label.clone(),
                    is_gpu: device.is_gpu,
                    variant: variant.variant.clone(),
                    upload_s,
                    launch_s: variant.kernel.fit.fixed_s.min(kernel),
                    kernel_s: kernel,
                    download_s,
                    total_s: upload_s + kernel + download_s,
                    pipelined: false,
                };
                // The pipelined path, measured with the documented best variant, where it beats the phased run.
                let piped = w.pipelined.as_ref().filter(|_| placement == Placement::Host).and_then(|curve| {
                    let (variant, kernel) = preferred(&device.label)
                        .and_then(|name| candidates.iter().copied().find(|(v, _)| v.variant == name))
                        .unwrap_or((variant, kernel));
                    let total_s = curve.predict_whole_run(cost).max(kernel);
                    let pageable = (upload_s + download_s).max(f64::MIN_POSITIVE);
                    let exposed = total_s - kernel;
                    (total_s < phased.total_s).then(|| Prediction {
                        variant: variant.variant.clone(),
                        upload_s: exposed * upload_s / pageable,
                        launch_s: variant.kernel.fit.fixed_s.min(kernel),
                        kernel_s: kernel,
                        download_s: exposed * download_s / pageable,
                        total_s,
                        pipelined: true,
                        ..phased.clone()
                    })
                });
                Some(piped.unwrap_or(phased))
            })
            .collect();
        predictions.sort_by(|a, b| a.total_s.total_cmp(&b.total_s));
        predictions
    }

    /// The smallest of `sizes` (in ladder order, each with its cost) from which the predicted fastest device is a GPU
    /// at every larger size, with that GPU's label: the crossover the model predicts. A size at which the CPU has no
    /// prediction (a curve fitted to fewer than two sizes) does not count, as a size the CPU skipped does not count
    /// in a measured crossover: a GPU that is fastest only for want of a CPU to compare has not crossed it.
    pub fn crossover(
        &self,
        workload: &str,
        sizes: &[(SizeLabel, Cost)],
        placement: Placement,
    ) -> Option<(SizeLabel, DeviceLabel)> {
        let mut from: Option<(SizeLabel, DeviceLabel)> = None;
        for (size, cost) in sizes {
            let predictions = self.predict(workload, cost, placement);
            if !predictions.iter().any(|p| !p.is_gpu) {
                continue;
            }
            match predictions.first() {
                Some(best) if best.is_gpu => {
                    from.get_or_insert_with(|| (size.clone(), best.device.clone()));
                }
                Some(_) => from = None,
                None => {}
            }
        }
        from
    }

    /// Predictions for an instance calibration never measured ([`Resemblance`]): each device's prediction of the
    /// instance it resembles, at the same bytes moved, with the kernel grown by the extra arithmetic and special
    /// functions at the device's [`ComputeRates`]; on a GPU, with the resembled instance's launch replaced by the
    /// device's ([`DeviceModel::launch_floor`]). On a GPU that work overlaps the memory traffic (the kernel is the
    /// longer of the two); on a CPU, whose evaluator passes over each block once per operation, it adds to it.
    pub fn predict_resembling(
        &self,
        resemblance: &Resemblance,
        placement: Placement,
        preferred: &dyn Fn(&DeviceLabel) -> Option<&'static str>,
    ) -> Vec<Prediction> {
        let mut predictions =
            self.predict_preferring(&resemblance.like, &resemblance.cost, placement, preferred, &|_, _| None);
        for p in &mut predictions {
            // On a GPU, the resembled instance's launch is one measurement of what every kernel there pays: the
            // device's launch floor across its workloads says it better.
            if let Some(device) = self.devices.iter().find(|d| d.label == p.device && d.is_gpu) {
                let own_floor = device
                    .workloads
                    .iter()
                    .find(|w| w.workload == resemblance.like)
                    .and_then(|w| w.variants.iter().find(|v| v.variant == p.variant))
                    .and_then(|v| v.kernel.points.first())
                    .map(|point| point.2);
                if let (Some(floor), Some(own_floor)) = (device.launch_floor(), own_floor) {
                    let shift = floor - own_floor;
                    let kernel = (p.kernel_s + shift).max(floor.min(p.kernel_s));
                    p.launch_s = (p.launch_s + shift).clamp(0.0, kernel);
                    p.total_s += kernel - p.kernel_s;
                    p.kernel_s = kernel;
                }
            }
            let Some(rates) = self.rates.iter().find(|r| r.label == p.device) else { continue };
            let (extra, _) = rates.extra_s(resemblance);
            let kernel = if p.is_gpu { p.kernel_s.max(p.launch_s + extra) } else { p.kernel_s + extra };
            p.total_s += kernel - p.kernel_s;
            p.kernel_s = kernel;
        }
        predictions.sort_by(|a, b| a.total_s.total_cmp(&b.total_s));
        predictions
    }

    /// Adds `other`'s devices' workloads and rates to this model, replacing those of the same name.
    pub fn merge(&mut self, other: Model) {
        for device in other.devices {
            match self.devices.iter_mut().find(|d| d.label == device.label) {
                Some(mine) => {
                    for w in device.workloads {
                        mine.workloads.retain(|m| m.workload != w.workload);
                        mine.workloads.push(w);
                    }
                }
                None => self.devices.push(device),
            }
        }
        for rates in other.rates {
            self.rates.retain(|r| r.label != rates.label);
            self.rates.push(rates);
        }
        for measured in other.contention {
            self.contention.retain(|c| c.gpu != measured.gpu);
            self.contention.push(measured);
        }
        self.host_copy_s_per_byte = other.host_copy_s_per_byte.or(self.host_copy_s_per_byte);
    }

    /// The relative difference within which two predictions are a toss-up ([`ModelError::margin`], or
    /// [`DEFAULT_TOSS_UP_MARGIN`] before an evaluation).
    pub fn toss_up_margin(&self) -> f64 {
        self.error.as_ref().map_or(DEFAULT_TOSS_UP_MARGIN, ModelError::margin)
    }

    /// Whether the model knows `workload` on any device.
    pub fn knows(&self, workload: &str) -> bool {
        self.devices.iter().any(|d| d.workloads.iter().any(|w| w.workload == workload && !w.variants.is_empty()))
    }
}

/// The least time a run's overhead beyond its kernel is taken to be: an end-to-end run timed faster than its kernel
/// (a host clock against a device timer) overlapped its phases entirely.
const MIN_OVERHEAD_S: f64 = 1e-9;

/// A curve through `samples`, keeping the fastest of several at one size; `None` without any.
fn fastest_per_size(mut samples: Vec<(Cost, f64)>) -> Option<Curve> {
    samples.sort_by(|a, b| (a.0.bytes, a.0.flops).cmp(&(b.0.bytes, b.0.flops)).then(a.1.total_cmp(&b.1)));
    samples.dedup_by(|later, first| (later.0.bytes, later.0.flops) == (first.0.bytes, first.0.flops));
    Curve::through(&samples)
}

/// How much faster than the documented best variant another variant must be predicted before the model picks it.
pub const VARIANT_MARGIN: f64 = 0.25;

/// The phase that makes `other` slower than `winner`: its launch overhead if that alone takes longer than the
/// winner's whole run, else its kernel if that alone does, else its transfers if it moves more than the winner, else
/// the kernel (the winner's is faster). The same rule explains `auto`'s choices and the sweep's verdicts.
pub fn deciding_phase(winner: &Prediction, other: &Prediction) -> Phase {
    let transfers = |p: &Prediction| p.upload_s + p.download_s;
    if other.launch_s >= winner.total_s {
        Phase::LaunchOverhead
    } else if other.kernel_s >= winner.total_s {
        Phase::Kernel
    } else if transfers(other) > transfers(winner) {
        Phase::Transfer
    } else {
        Phase::Kernel
    }
}

#[cfg(test)]
impl WorkloadModel {
    /// A test's model of `workload` with these variants' kernels and no transfers or other curves measured.
    pub(crate) fn kernels_only(workload: &str, variants: Vec<VariantModel>) -> WorkloadModel {
        WorkloadModel {
            workload: workload.into(),
            upload: Curve::default(),
            download: Curve::default(),
            upload_pinned: None,
            download_pinned: None,
            pipelined: None,
            host_overhead: None,
            streaming: None,
            compute_probe: None,
            parts_in_place: false,
            parts_in_place_pipelined: false,
            variants,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fit::CostFit;

    fn cost(bytes: u64, flops: u64) -> Cost {
        Cost { bytes, flops, elements: bytes / 4 }
    }

    /// A machine whose times follow known formulas, measured at every other size of a ladder: the model fitted to
    /// those rows finds the crossovers of the formulas, resident and from the host, within one step of the whole
    /// ladder (the sizes between the calibrated ones are interpolated).
    #[test]
    fn a_model_fitted_on_a_synthetic_machine_finds_its_crossovers_within_one_step() {
        use crate::model::rows::Row;
        // The CPU streams 20 GB/s after 1 µs; the GPU launches in 10 µs and streams 2 TB/s; its transfers take 15 µs
        // and 50 GB/s each way. 8 bytes per element.
        let cpu = |bytes: f64| 1e-6 + bytes / 20e9;
        let gpu = |bytes: f64| 10e-6 + bytes / 2e12;
        let transfer = |bytes: f64| 15e-6 + bytes / 50e9;
        let ladder: Vec<u64> = (10..=26).map(|p| 1u64 << p).collect();
        let row = |n: u64, backend: BackendKind| {
            let bytes = 8.0 * n as f64;
            let (kernel, moved) =
                if backend.is_gpu() { (gpu(bytes), 2.0 * transfer(bytes)) } else { (cpu(bytes), 0.0) };
            let mut r = Row::with_times("synthetic", &n.to_string(), backend, kernel, kernel + moved);
            r.upload_s = moved / 2.0;
            r.download_s = moved / 2.0;
            (r.bytes, r.flops, r.nominal_flops, r.elements) = (8 * n, n, n, n);
            r
        };
        let rows: Vec<Row> =
            ladder.iter().step_by(2).flat_map(|&n| [row(n, BackendKind::Cpu), row(n, BackendKind::Cuda)]).collect();
        let model = Model::from_rows(&rows);
        let sizes: Vec<(SizeLabel, Cost)> =
            ladder.iter().map(|&n| (n.to_string().into(), Cost { bytes: 8 * n, flops: n, elements: n })).collect();
        for (placement, gpu_total) in [
            (Placement::Resident, &(|b: f64| gpu(b)) as &dyn Fn(f64) -> f64),
            (Placement::Host, &|b: f64| gpu(b) + 2.0 * transfer(b)),
        ] {
            let truth = ladder
                .iter()
                .position(|&n| {
                    ladder.iter().filter(|&&m| m >= n).all(|&m| gpu_total(8.0 * m as f64) < cpu(8.0 * m as f64))
                })
                .expect("the formulas cross within the ladder");
            let (size, device) = model.crossover("synthetic", &sizes, placement).expect("a predicted crossover");
            let predicted = sizes.iter().position(|(s, _)| *s == size).unwrap();
            assert_eq!(device, DeviceLabel::of(BackendKind::Cuda));
            assert!(
                predicted.abs_diff(truth) <= 1,
                "{placement}: predicted {size}, the formulas cross at {}",
                ladder[truth]
            );
        }
    }

    /// A device whose upload and download, timed apart, add up to more than a whole run pays beyond its kernel (as
    /// the wgpu backend's on an H100 did; measured: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so): the
    /// prediction from the host is the kernel plus what the whole runs took beyond it, and the
    /// phases shown share that.
    #[test]
    fn a_run_from_the_host_is_predicted_from_whole_runs_not_from_phases_timed_apart() {
        use crate::model::rows::Row;
        let row = |n: u64| {
            let bytes = 8.0 * n as f64;
            let kernel = 5e-6 + bytes / 2e12;
            let (upload, download) = (20e-6 + bytes / 10e9, 30e-6 + bytes / 5e9);
            // The whole run overlaps a quarter of the phases away.
            let mut r = Row::with_times(
                "overlap",
                &n.to_string(),
                BackendKind::Wgpu,
                kernel,
                kernel + 0.75 * (upload + download),
            );
            (r.upload_s, r.download_s) = (upload, download);
            (r.bytes, r.flops, r.nominal_flops, r.elements) = (8 * n, n, n, n);
            r
        };
        let rows: Vec<Row> = (10..=22).step_by(4).map(|p| row(1 << p)).collect();
        let model = Model::from_rows(&rows);
        let at = |r: &Row| Cost { bytes: r.bytes, flops: r.flops, elements: r.elements };
        for r in &rows {
            let host = &model.predict("overlap", &at(r), Placement::Host)[0];
            assert!((host.total_s / r.end_to_end_s - 1.0).abs() < 0.02, "{} against {}", host.total_s, r.end_to_end_s);
            let phases = host.upload_s / host.download_s;
            assert!((phases / (r.upload_s / r.download_s) - 1.0).abs() < 0.05, "upload over download {phases}");
            // Resident data pays no transfer.
            assert_eq!(model.predict("overlap", &at(r), Placement::Resident)[0].upload_s, 0.0);
        }
    }

    /// Two workloads on one GPU whose transfers cross the same link: one calibrated up to 2^18 elements, where its
    /// whole runs still grow by 10 GB/s, the other up to 2^22, where they grow by 25 GB/s (WGSL's matmul against
    /// square on an H100). Past its ladder, the first grows at the link's rate that the second reached.
    #[test]
    fn a_whole_run_past_a_short_ladder_grows_at_the_rate_the_device_reached_further() {
        use crate::model::rows::Row;
        let row = |workload: &'static str, n: u64, overhead: f64| {
            let bytes = 8 * n;
            let kernel = 5e-6 + bytes as f64 / 2e12;
            let mut r = Row::with_times(workload, &n.to_string(), BackendKind::Wgpu, kernel, kernel + overhead);
            (r.upload_s, r.download_s) = (overhead / 2.0, overhead / 2.0);
            (r.bytes, r.flops, r.nominal_flops, r.elements) = (bytes, n, n, n);
            r
        };
        let short = |n: u64| 100e-6 + (8 * n) as f64 / 10e9;
        let long = |n: u64| 100e-6 + (8 * n) as f64 / 25e9;
        let mut rows: Vec<Row> = (10..=18).step_by(4).map(|p| row("short", 1 << p, short(1 << p))).collect();
        rows.extend((10..=22).step_by(4).map(|p| row("long", 1 << p, long(1 << p))));
        let model = Model::from_rows(&rows);
        let device = &model.devices[0];
        let (top, past) = (8u64 << 18, 8u64 << 20);
        let link = device.host_transfer_per_byte_beyond(top).unwrap();
        assert!((link * 25e9 - 1.0).abs() < 1e-6, "the link's rate past the short ladder: {} GB/s", 1e-9 / link);
        assert_eq!(device.host_transfer_per_byte_beyond(8 << 22), None, "nothing was calibrated further");
        let at = Cost { bytes: past, flops: 1 << 20, elements: 1 << 20 };
        let host = &model.predict("short", &at, Placement::Host)[0];
        let kernel = 5e-6 + past as f64 / 2e12;
        let expected = kernel + short(1 << 18) + (past - top) as f64 / 25e9;
        assert!((host.total_s / expected - 1.0).abs() < 0.01, "{} against {expected}", host.total_s);
        assert!(host.total_s < 0.8 * (kernel + short(1 << 20)), "grown at its own 10 GB/s: {}", host.total_s);
    }

    /// A CPU at 20 GB/s with no overhead, and a GPU at 2 TB/s behind a 10 µs launch and 10 GB/s transfers.
    fn synthetic() -> Model {
        let curve = |fit: CostFit| Curve { fit, points: Vec::new(), traffic: Vec::new() };
        let variant = |kernel: CostFit| VariantModel {
            variant: "v".into(),
            full_precision: true,
            precision: None,
            kernel: curve(kernel),
        };
        let workload = |upload: CostFit, kernel: CostFit| WorkloadModel {
            upload: curve(upload),
            download: curve(upload),
            ..WorkloadModel::kernels_only("square", vec![variant(kernel)])
        };
        let per_byte = |rate: f64| CostFit { per_byte_s: 1.0 / rate, ..CostFit::default() };
        Model {
            rates: Vec::new(),
            error: None,
            contention: Vec::new(),
            host_copy_s_per_byte: None,
            allowed: Vec::new(),
            devices: vec![
                DeviceModel {
                    label: DeviceLabel::named("cpu"),
                    backend: BackendKind::Cpu,
                    is_gpu: false,
                    workloads: vec![workload(CostFit::default(), per_byte(20e9))],
                    stream_s_per_byte: None,
                    cache_bytes: None,
                },
                DeviceModel {
                    label: DeviceLabel::named("cuda"),
                    backend: BackendKind::Cuda,
                    is_gpu: true,
                    workloads: vec![workload(per_byte(10e9), CostFit { fixed_s: 10e-6, ..per_byte(2e12) })],
                    stream_s_per_byte: None,
                    cache_bytes: None,
                },
            ],
        }
    }

    /// A CPU calibrated up to 32 MiB at 200 GB/s, whose memory streams at 100 GB/s: past its ladder, a kernel that
    /// fits its last-level cache keeps the ladder's rate, and one that does not is held to the streaming rate.
    #[test]
    fn a_size_that_fits_the_last_level_cache_is_not_held_to_the_streaming_rate() {
        let mut model = synthetic();
        let cpu = &mut model.devices[0];
        let top = 32u64 << 20;
        cpu.workloads[0].variants[0].kernel = Curve::through(&[
            (Cost { bytes: top / 4, flops: 0, elements: 0 }, top as f64 / 4.0 / 200e9),
            (Cost { bytes: top, flops: 0, elements: 0 }, top as f64 / 200e9),
        ])
        .unwrap();
        cpu.stream_s_per_byte = Some(1.0 / 100e9);
        let kernel_at = |model: &Model, bytes: u64| {
            let cost = Cost { bytes, flops: 0, elements: 0 };
            model.predict("square", &cost, Placement::Resident).into_iter().find(|p| !p.is_gpu).unwrap().kernel_s
        };
        let (inside, outside) = (128u64 << 20, 512u64 << 20);
        // No cache known: held to the streaming rate for every byte past the ladder.
        let held = |bytes: u64| (top as f64 / 200e9) + (bytes - top) as f64 / 100e9;
        assert!((kernel_at(&model, inside) / held(inside) - 1.0).abs() < 1e-9);
        // A 300 MiB cache: 128 MiB keeps the ladder's 200 GB/s; 512 MiB is held as before.
        model.devices[0].cache_bytes = Some(300 << 20);
        assert!((kernel_at(&model, inside) / (inside as f64 / 200e9) - 1.0).abs() < 1e-9);
        assert!((kernel_at(&model, outside) / held(outside) - 1.0).abs() < 1e-9);
    }

    /// The same CPU with square's own streaming rates measured (80 GB/s at 192 MiB, 50 at 768, slower than the copy's
    /// 100): past the ladder that variant is predicted from them, past the cache from the probe past it alone;
    /// another variant is as before, and so is everything with a file that has no probes.
    #[test]
    fn a_variants_own_streaming_rate_predicts_it_past_the_cache() {
        let mut model = synthetic();
        let top = 32u64 << 20;
        let cpu = &mut model.devices[0];
        cpu.workloads[0].variants[0].kernel = Curve::through(&[
            (Cost { bytes: top / 4, flops: 0, elements: 0 }, top as f64 / 4.0 / 200e9),
            (Cost { bytes: top, flops: 0, elements: 0 }, top as f64 / 200e9),
        ])
        .unwrap();
        cpu.stream_s_per_byte = Some(1.0 / 100e9);
        cpu.cache_bytes = Some(300 << 20);
        let kernel_at = |model: &Model, bytes: u64| {
            let cost = Cost { bytes, flops: 0, elements: 0 };
            model.predict("square", &cost, Placement::Resident).into_iter().find(|p| !p.is_gpu).unwrap().kernel_s
        };
        let (inside, outside) = (128u64 << 20, 512u64 << 20);
        let before = (kernel_at(&model, inside), kernel_at(&model, outside));
        let probes = vec![(192u64 << 20, 1.0 / 80e9), (768u64 << 20, 1.0 / 50e9)];
        model.devices[0].workloads[0].streaming =
            Some(OwnStreaming { variant: "other".into(), probes: probes.clone() });
        assert_eq!((kernel_at(&model, inside), kernel_at(&model, outside)), before);
        model.devices[0].workloads[0].streaming = Some(OwnStreaming { variant: "v".into(), probes: probes.clone() });
        // Inside the cache too: a size the cache could hold streams partly, between the ladder's rate and the probes'.
        let inside_rate = inside as f64 / kernel_at(&model, inside);
        assert!(inside_rate < 200e9 && inside_rate > 80e9, "{inside_rate}");
        let far = 768u64 << 20;
        assert!((kernel_at(&model, far) / (far as f64 / 50e9) - 1.0).abs() < 1e-9);
        // Past the cache, from the probes past it alone: the one within it (192 MiB, 80 GB/s) says nothing there.
        assert!((kernel_at(&model, outside) / (outside as f64 / 50e9) - 1.0).abs() < 1e-9);
        assert!(kernel_at(&model, outside) > 1.5 * before.1);
        let device = &model.devices[0];
        let w = &device.workloads[0];
        assert_eq!(device.stream_bound_of(w, "v", inside), Some(StreamBound::Measured(probes)));
        assert_eq!(device.stream_bound_of(w, "v", outside), Some(StreamBound::FromMemory(vec![(far, 1.0 / 50e9)])));
        // A file older than the probes: as if nothing was probed.
        model.devices[0].workloads[0].streaming = Some(OwnStreaming { variant: "v".into(), probes: Vec::new() });
        assert_eq!((kernel_at(&model, inside), kernel_at(&model, outside)), before);
    }

    /// A GPU with two stencil-like variants calibrated in its L2 (`rows` at 2 TB/s, `tiled` at 2.2), `rows` probed
    /// at 1 TB/s from memory: past the ladder `tiled` is slowed as much as `rows` was, so it keeps its small lead
    /// and no longer looks twice as fast as the probed variant.
    #[test]
    fn a_variant_not_probed_is_slowed_as_much_as_the_probed_one() {
        let mut model = synthetic();
        let gpu = &mut model.devices[1];
        gpu.stream_s_per_byte = Some(1.0 / 3e12);
        let through = |rate: f64| {
            let samples: Vec<(Cost, f64)> = [1u64 << 20, 8 << 20, 32 << 20]
                .iter()
                .map(|&b| (Cost { bytes: b, flops: b / 8, elements: b / 8 }, 3e-6 + b as f64 / rate))
                .collect();
            Curve::through(&samples).unwrap()
        };
        let w = &mut gpu.workloads[0];
        w.variants = vec![
            VariantModel { variant: "rows".into(), full_precision: true, precision: None, kernel: through(2e12) },
            VariantModel { variant: "tiled".into(), full_precision: true, precision: None, kernel: through(2.2e12) },
        ];
        let bytes = 512u64 << 20;
        let cost = Cost { bytes, flops: bytes / 8, elements: bytes / 8 };
        let gpu_choice = |model: &Model| {
            let p = model.predict("square", &cost, Placement::Resident).into_iter().find(|p| p.is_gpu).unwrap();
            (p.variant, p.kernel_s)
        };
        let rows_before = through(2e12).predict_kernel(&cost, Some(StreamBound::EachByteMore(1.0 / 3e12)), None);
        let (variant, tiled_before) = gpu_choice(&model);
        assert_eq!(variant, "tiled");
        assert!(tiled_before < 0.6 * bytes as f64 / 1e12, "{tiled_before}");
        model.devices[1].workloads[0].streaming =
            Some(OwnStreaming { variant: "rows".into(), probes: vec![(bytes, 1.0 / 1e12)] });
        let rows = bytes as f64 / 1e12;
        let (variant, tiled) = gpu_choice(&model);
        assert_eq!(variant, "tiled");
        assert!((tiled / rows - tiled_before / rows_before).abs() < 1e-9, "{tiled} {rows}");
        assert!(tiled > 0.8 * rows && tiled < rows, "{tiled} {rows}");
        // Within the calibrated sizes nothing changes.
        let inside = Cost { bytes: 8 << 20, flops: 1 << 20, elements: 1 << 20 };
        assert_eq!(model.devices[1].unprobed_slowdown(&model.devices[1].workloads[0], &inside, &|_, _| None), 1.0);
    }

    /// A GPU whose matmul-like kernel was calibrated up to 1024^3 while the GPU was not yet full, and probed at
    /// 3072^3: the probed variant's prediction at 2048^3 comes from the probe, the other variant's does not.
    #[test]
    fn a_compute_probe_predicts_its_own_variant_past_the_ladder() {
        let mut model = synthetic();
        let matmul = |n: u64| Cost { bytes: 12 * n * n, flops: 2 * n * n * n, elements: n * n };
        let through = |times: [f64; 3]| {
            let samples: Vec<(Cost, f64)> = [256, 512, 1024].iter().zip(times).map(|(&n, t)| (matmul(n), t)).collect();
            Curve::through(&samples).unwrap()
        };
        let w = &mut model.devices[1].workloads[0];
        w.variants = vec![
            VariantModel {
                variant: "wide".into(),
                full_precision: true,
                precision: None,
                kernel: through([42e-6, 75e-6, 142e-6]),
            },
            VariantModel {
                variant: "tiled".into(),
                full_precision: true,
                precision: None,
                kernel: through([50e-6, 90e-6, 170e-6]),
            },
        ];
        let at = matmul(2048);
        let gpu_kernel = |model: &Model| {
            let p = model.predict("square", &at, Placement::Resident).into_iter().find(|p| p.is_gpu).unwrap();
            (p.variant, p.kernel_s)
        };
        let (variant, before) = gpu_kernel(&model);
        assert_eq!(variant, "wide");
        let probe = matmul(3072);
        model.devices[1].workloads[0].compute_probe =
            Some(ComputeProbe { variant: "wide".into(), bytes: probe.bytes, flops: probe.flops, seconds: 1.65e-3 });
        let (variant, after) = gpu_kernel(&model);
        assert_eq!(variant, "wide");
        let expected = 142e-6 + (1.65e-3 - 142e-6) * 7.0 / 26.0;
        assert!((after - expected).abs() < 1e-9 && after < 0.8 * before, "{after} against {before}");
        // A probe of a variant that is not calibrated here changes nothing.
        model.devices[1].workloads[0].compute_probe.as_mut().unwrap().variant = "register".into();
        assert_eq!(gpu_kernel(&model), (VariantName::from("wide"), before));
    }

    /// Two GPUs whose shortest kernels take 3.5 µs (cuda) and 4.1 µs (wgpu) across five workloads, where one
    /// calibration measured the base expression slow on cuda (4.4 µs, a moment's): an expression never seen is priced
    /// from each device's launch floor, and goes to cuda at a launch-bound size; its prediction grows with its extra
    /// work as before.
    #[test]
    fn an_unseen_expression_is_priced_from_the_devices_launch_floor_not_one_measurement() {
        let launch_bound = |name: &str, at: f64| {
            let points = [(8192u64, 2048u64, at), (131072, 32768, at + 0.05e-6), (2 << 20, 512 << 10, at + 0.4e-6)];
            let samples: Vec<(Cost, f64)> =
                points.iter().map(|&(bytes, flops, t)| (Cost { bytes, flops, elements: bytes / 8 }, t)).collect();
            let mut w = synthetic().devices[1].workloads[0].clone();
            w.workload = name.into();
            w.variants[0].kernel = Curve::through(&samples).unwrap();
            w
        };
        let gpu = |label: &str, floors: [f64; 5], base: f64| {
            let mut device = synthetic().devices[1].clone();
            device.label = DeviceLabel::named(label);
            device.backend = label.parse().unwrap();
            device.workloads = ["square", "saxpy", "sum", "softmax", "histogram"]
                .iter()
                .zip(floors)
                .map(|(name, at)| launch_bound(name, at))
                .chain([launch_bound("expr: base", base)])
                .collect();
            device
        };
        let cuda = gpu("cuda", [3.3e-6, 3.5e-6, 3.9e-6, 3.4e-6, 3.6e-6], 4.4e-6);
        let wgpu = gpu("wgpu", [4.0e-6, 4.1e-6, 4.2e-6, 4.1e-6, 4.3e-6], 4.1e-6);
        assert!((cuda.launch_floor().unwrap() - 3.55e-6).abs() < 1e-12, "{:?}", cuda.launch_floor());
        let model = Model { devices: vec![cuda, wgpu], ..Model::default() };
        let resemblance = |elements: u64| Resemblance {
            like: "expr: base".into(),
            cost: Cost { bytes: 8 * elements, flops: 2 * elements, elements },
            elements,
            extra_flops: 0,
            calls: Vec::new(),
        };
        let before = model.predict("expr: base", &resemblance(1024).cost, Placement::Resident);
        assert_eq!(before[0].device, DeviceLabel::named("wgpu"), "{before:?}");
        let after = model.predict_resembling(&resemblance(1024), Placement::Resident, &|_| None);
        assert_eq!(after[0].device, DeviceLabel::named("cuda"), "{after:?}");
        assert!((after[0].kernel_s - 3.55e-6).abs() < 0.01e-6, "{after:?}");
        // Larger, the same shift: the base's curve less its own launch, plus the device's.
        let larger = model.predict_resembling(&resemblance(1 << 18), Placement::Resident, &|_| None);
        let base = model.predict("expr: base", &resemblance(1 << 18).cost, Placement::Resident);
        let (cuda_after, cuda_before) = (
            larger.iter().find(|p| p.device == DeviceLabel::named("cuda")).unwrap(),
            base.iter().find(|p| p.device == DeviceLabel::named("cuda")).unwrap(),
        );
        assert!((cuda_before.kernel_s - cuda_after.kernel_s - 0.85e-6).abs() < 0.01e-6, "{larger:?} {base:?}");
    }

    #[test]
    fn rates_are_interpolated_along_the_length_and_held_past_the_ends() {
        let sample = |len: u64, exp: f64| RateSample { len, per_flop_s: 0.0, per_call_s: vec![("exp".into(), exp)] };
        let rates = ComputeRates {
            label: DeviceLabel::named("cpu"),
            samples: vec![sample(1 << 12, 16e-9), sample(1 << 20, 1e-9)],
        };
        assert_eq!(rates.per_call_s("exp", 1 << 10), Some(16e-9));
        assert_eq!(rates.per_call_s("exp", 1 << 24), Some(1e-9));
        let middle = rates.per_call_s("exp", 1 << 16).unwrap();
        assert!((middle - 8.5e-9).abs() < 1e-12, "{middle}");
        assert_eq!(rates.per_call_s("sin", 1 << 16), None);
        let r = Resemblance { elements: 1 << 12, calls: vec![("exp", 2), ("sin", 1)], ..Resemblance::default() };
        let (extra, unpriced) = rates.extra_s(&r);
        assert!((extra - 2.0 * 16e-9 * 4096.0).abs() < 1e-12 && unpriced == ["sin"], "{extra} {unpriced:?}");
        // A longer probe slower per call than a shorter one is noise: held at the shorter one's rate.
        let noisy = ComputeRates {
            label: DeviceLabel::named("cpu"),
            samples: vec![sample(1 << 10, 4e-9), sample(1 << 14, 7e-9), sample(1 << 18, 3.5e-9)],
        };
        assert_eq!(noisy.per_call_s("exp", 1 << 14), Some(4e-9));
        assert_eq!(noisy.per_call_s("exp", 1 << 12), Some(4e-9));
        assert_eq!(noisy.per_call_s("exp", 1 << 18), Some(3.5e-9));
    }

    #[test]
    fn a_gpu_that_wins_above_its_crossover_is_chosen_there_and_only_there() {
        let model = synthetic();
        // Resident: the GPU's 10 µs launch against the CPU's 20 GB/s crosses at about 200 KB.
        let small = model.predict("square", &cost(64 << 10, 0), Placement::Resident);
        assert_eq!(small[0].device.as_str(), "cpu");
        assert_eq!(deciding_phase(&small[0], &small[1]), Phase::LaunchOverhead);
        let large = model.predict("square", &cost(64 << 20, 0), Placement::Resident);
        assert_eq!(large[0].device.as_str(), "cuda");
        assert_eq!(deciding_phase(&large[0], &large[1]), Phase::Kernel);
    }

    #[test]
    fn pinned_transfers_are_used_only_where_calibrated_and_asked_for() {
        // The CPU at 8 GB/s; the GPU's pageable copies at 10 GB/s each way lose to it, pinned ones at 50 GB/s win.
        let mut model = synthetic();
        model.devices[0].workloads[0].variants[0].kernel.fit.per_byte_s = 1.0 / 8e9;
        let at = |model: &Model, placement| model.predict("square", &cost(64 << 20, 0), placement);
        assert_eq!(at(&model, Placement::Host)[0].device.as_str(), "cpu");
        // Without a pinned calibration, pinned placement predicts the pageable transfers.
        assert_eq!(at(&model, Placement::PinnedHost), at(&model, Placement::Host));
        let pinned = Curve {
            fit: CostFit { per_byte_s: 1.0 / 50e9, ..CostFit::default() },
            points: Vec::new(),
            traffic: Vec::new(),
        };
        let gpu = &mut model.devices[1].workloads[0];
        gpu.upload_pinned = Some(pinned.clone());
        gpu.download_pinned = Some(pinned);
        let best = &at(&model, Placement::PinnedHost)[0];
        assert_eq!(best.device.as_str(), "cuda");
        assert!((best.upload_s - (64 << 20) as f64 / 50e9).abs() < 1e-9, "{best:?}");
        assert_eq!(at(&model, Placement::Host)[0].device.as_str(), "cpu");
        assert_eq!(at(&model, Placement::Resident)[0].upload_s, 0.0);
    }

    #[test]
    fn a_pipelined_path_is_predicted_for_data_on_the_host_where_it_is_calibrated_and_faster() {
        // The CPU at 8 GB/s; the GPU's pageable copies (10 GB/s each way) lose to it; its pipelined whole run at 25
        // GB/s wins, and is predicted only for data on the host.
        let mut model = synthetic();
        model.devices[0].workloads[0].variants[0].kernel.fit.per_byte_s = 1.0 / 8e9;
        let size = cost(64 << 20, 0);
        let at = |model: &Model, placement| model.predict("square", &size, placement);
        let uncalibrated = at(&model, Placement::Host);
        assert_eq!(uncalibrated[0].device.as_str(), "cpu");
        assert!(uncalibrated.iter().all(|p| !p.pipelined));
        let rate = |r: f64| Curve {
            fit: CostFit { per_byte_s: 1.0 / r, ..CostFit::default() },
            points: Vec::new(),
            traffic: Vec::new(),
        };
        model.add_pipelined_runs(
            &DeviceLabel::named("cuda"),
            "square",
            vec![(cost(1 << 20, 0), (1 << 20) as f64 / 25e9)],
        );
        assert!(model.devices[1].workloads[0].pipelined.is_some());
        model.devices[1].workloads[0].pipelined = Some(rate(25e9));
        let host = at(&model, Placement::Host);
        let best = &host[0];
        assert_eq!((best.device.as_str(), best.pipelined), ("cuda", true), "{host:?}");
        assert!((best.total_s - (64 << 20) as f64 / 25e9).abs() < 1e-9, "{best:?}");
        // What the pipeline does not hide is shared out as the pageable transfers are: here equally.
        let exposed = best.total_s - best.kernel_s;
        assert!((best.upload_s + best.download_s - exposed).abs() < 1e-12 && best.upload_s == best.download_s);
        // The CPU's pass alone takes longer than the whole pipelined run.
        assert_eq!((host[1].device.as_str(), deciding_phase(best, &host[1])), ("cpu", Phase::Kernel));
        // Resident and pinned placements never take it, and a pipelined path slower than the phased run is not taken.
        assert!(at(&model, Placement::Resident).iter().chain(&at(&model, Placement::PinnedHost)).all(|p| !p.pipelined));
        model.devices[1].workloads[0].pipelined = Some(rate(4e9));
        assert!(at(&model, Placement::Host).iter().all(|p| !p.pipelined));
        // The predicted crossover for data on the host follows.
        model.devices[1].workloads[0].pipelined = Some(rate(25e9));
        let ladder: Vec<(SizeLabel, Cost)> =
            (20..=28).step_by(2).map(|p| (format!("2^{p}").into(), cost(1 << p, 0))).collect();
        assert_eq!(model.crossover("square", &ladder, Placement::Host).map(|c| c.1), Some(DeviceLabel::named("cuda")));
    }

    #[test]
    fn a_gpu_fastest_only_for_want_of_a_cpu_prediction_has_not_crossed() {
        let mut model = synthetic();
        let ladder: Vec<(SizeLabel, Cost)> =
            (10..=28).step_by(2).map(|p| (format!("2^{p}").into(), cost(1 << p, 0))).collect();
        assert!(model.crossover("square", &ladder, Placement::Resident).is_some(), "the synthetic GPU crosses");
        // The CPU's curve could not be fitted (one size swept): no size has a CPU prediction, so none is a crossover.
        model.devices[0].workloads[0].variants.clear();
        assert!(model.predict("square", &ladder[0].1, Placement::Resident).iter().all(|p| p.is_gpu));
        assert_eq!(model.crossover("square", &ladder, Placement::Resident), None);
        assert_eq!(model.crossover("square", &ladder, Placement::Host), None);
    }

    #[test]
    fn resident_data_moves_the_crossover_down() {
        // A compute-bound kernel: the GPU's kernel wins from a small size, its transfers only from a larger one.
        let mut model = synthetic();
        model.devices[1].workloads[0].variants[0].kernel.fit.per_byte_s = 1.0 / 4e12;
        model.devices[0].workloads[0].variants[0].kernel.fit.per_byte_s = 1.0 / 2e9;
        let gpu = &mut model.devices[1].workloads[0];
        gpu.upload.fit.fixed_s = 20e-6;
        gpu.download.fit.fixed_s = 20e-6;
        let ladder: Vec<(SizeLabel, Cost)> =
            (10..=28).step_by(2).map(|p| (format!("2^{p}").into(), cost(1 << p, 0))).collect();
        let resident = model.crossover("square", &ladder, Placement::Resident).unwrap();
        let host = model.crossover("square", &ladder, Placement::Host).unwrap();
        let position = |size: &str| ladder.iter().position(|(s, _)| s == size).unwrap();
        assert!(position(&resident.0) < position(&host.0), "resident {resident:?}, host {host:?}");
        assert_eq!(resident.1.as_str(), "cuda");
    }

    #[test]
    fn data_on_the_host_keeps_memory_bound_work_on_the_cpu() {
        let model = synthetic();
        let host = model.predict("square", &cost(64 << 20, 0), Placement::Host);
        assert_eq!(host[0].device.as_str(), "cpu", "{host:?}");
        assert_eq!(deciding_phase(&host[0], &host[1]), Phase::Transfer);
    }

    /// A CPU device model with square's `scalar` and `simd` kernels on these curves.
    fn cpu_square(scalar: Curve, simd: Curve) -> Model {
        let variant = |name: &str, kernel: Curve| VariantModel {
            variant: name.into(),
            full_precision: true,
            precision: None,
            kernel,
        };
        Model {
            rates: Vec::new(),
            error: None,
            contention: Vec::new(),
            host_copy_s_per_byte: None,
            allowed: Vec::new(),
            devices: vec![DeviceModel {
                label: DeviceLabel::named("cpu"),
                backend: BackendKind::Cpu,
                is_gpu: false,
                workloads: vec![WorkloadModel::kernels_only(
                    "square",
                    vec![variant("scalar", scalar), variant("simd", simd)],
                )],
                stream_s_per_byte: None,
                cache_bytes: None,
            }],
        }
    }

    #[test]
    fn a_reduced_precision_is_chosen_only_where_it_is_allowed() {
        let curve = |per_byte_s: f64| Curve {
            fit: CostFit { per_byte_s, ..CostFit::default() },
            points: Vec::new(),
            traffic: Vec::new(),
        };
        // `simd` is bf16 here and ten times faster than `scalar` (f32).
        let mut model = cpu_square(curve(1e-9), curve(1e-10));
        let simd = &mut model.devices[0].workloads[0].variants[1];
        (simd.full_precision, simd.precision) = (false, Some(Precision::Bf16));
        let pick = |m: &Model| m.predict("square", &cost(1 << 20, 0), Placement::Host)[0].variant.clone();
        assert_eq!(pick(&model), "scalar", "f32 unless allowed");
        assert_eq!(pick(&model.clone().allowing(&[Precision::Tf32, Precision::Fp16])), "scalar", "not bf16");
        assert_eq!(pick(&model.clone().allowing(&[Precision::Bf16])), "simd");
        assert_eq!(pick(&model.clone().allowing(&Precision::within_tolerance(1e-2, 8192))), "simd");
        assert_eq!(pick(&model.clone().allowing(&Precision::within_tolerance(1e-3, 8192))), "scalar");
        // A calibration written before there were four precisions: not full precision reads as TF32.
        let old = VariantModel { variant: "tf32".into(), full_precision: false, precision: None, kernel: curve(1.0) };
        assert_eq!(old.precision(), Precision::Tf32);
    }

    #[test]
    fn the_documented_variant_wins_a_near_tie_but_not_a_clear_loss() {
        let curve = |per_byte_s: f64| Curve {
            fit: CostFit { per_byte_s, ..CostFit::default() },
            points: Vec::new(),
            traffic: Vec::new(),
        };
        let model = |simd: f64| cpu_square(curve(1e-10), curve(simd));
        let prefer_simd = |_: &DeviceLabel| Some("simd");
        let pick = |m: Model| {
            m.predict_preferring("square", &cost(1 << 20, 0), Placement::Host, &prefer_simd, &|_, _| None)[0]
                .variant
                .clone()
        };
        assert_eq!(pick(model(1.1e-10)), "simd", "a 10% difference is noise: the rule decides");
        assert_eq!(pick(model(2e-10)), "scalar", "twice as slow is not noise");
    }

    #[test]
    fn between_calibrated_sizes_the_documented_variant_stays_unless_beaten_on_both_sides() {
        // Measured at 2^16 and 2^20 elements: the rule's `scalar` is faster at 2^16, `simd` at 2^20. Interpolated,
        // simd looks twice as fast at 2^18, but where the two cross in between is unknown: the rule decides.
        let through = |points: &[(u64, f64)]| {
            Curve::through(&points.iter().map(|&(bytes, t)| (cost(bytes, bytes / 8), t)).collect::<Vec<_>>()).unwrap()
        };
        let scalar = through(&[(1 << 19, 6.5e-6), (1 << 23, 305e-6)]);
        let simd = through(&[(1 << 19, 7.3e-6), (1 << 23, 57e-6)]);
        let at_2_18 = cost(1 << 21, 1 << 18);
        assert!(simd.predict(&at_2_18) * (1.0 + VARIANT_MARGIN) < scalar.predict(&at_2_18));
        assert!(!simd.faster_at_neighbours(&scalar, &at_2_18));
        // Beyond the calibrated range, and where it was faster at both neighbours, the faster curve is trusted.
        assert!(simd.faster_at_neighbours(&scalar, &cost(1 << 25, 1 << 22)));
        let simd_everywhere = through(&[(1 << 19, 3e-6), (1 << 23, 57e-6)]);
        assert!(simd_everywhere.faster_at_neighbours(&scalar, &at_2_18));
        let model = |simd: &Curve| cpu_square(scalar.clone(), simd.clone());
        let prefer_scalar = |_: &DeviceLabel| Some("scalar");
        let pick = |m: Model| {
            m.predict_preferring("square", &at_2_18, Placement::Host, &prefer_scalar, &|_, _| None)[0].variant.clone()
        };
        assert_eq!(pick(model(&simd)), "scalar");
        assert_eq!(pick(model(&simd_everywhere)), "simd");
    }

    #[test]
    fn a_model_fits_from_rows_and_predicts_what_was_measured() {
        let mut rows = Vec::new();
        for (size, kernel) in [("1024", 2e-6), ("1048576", 60e-6), ("16777216", 900e-6)] {
            let mut r = Row::with_times("square", size, BackendKind::Cpu, kernel, kernel);
            r.bytes = 8 * size.parse::<u64>().unwrap();
            rows.push(r);
        }
        let model = Model::from_rows(&rows);
        assert!(model.knows("square") && !model.knows("sum"));
        let at = |bytes| model.predict("square", &cost(bytes, 1), Placement::Host)[0].total_s;
        assert!((at(8 << 20) - 60e-6).abs() / 60e-6 < 0.3, "{}", at(8 << 20));
    }
}
