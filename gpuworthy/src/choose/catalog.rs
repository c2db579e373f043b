//! The run-time list of workloads: the eight built-in ones and any a program adds, each behind one object-safe
//! interface ([`WorkloadEntry`]), so that sweeps, calibration and its evaluation take a workload defined outside
//! gpuworthy with no edit to any crate.
//!
//! Workloads are types, and the measuring code is generic over them ([`crate::model::sweep::sweep_workload`],
//! [`crate::model::calibration::calibrate_workload`], [`crate::choose::evaluation::evaluate_workload`]). A [`WorkloadOf<W>`] is
//! that generic code instantiated for one `W` and held as a `&dyn WorkloadEntry`, as ripgrep holds its flags as
//! `&dyn Flag`: a list of them is a value the command line builds and a program extends.
//!
//! This module is the top of the facade: it reads sweeps, calibration, auto and the evaluation, and none of those
//! imports it.
//!
//! ```
//! use gpuworthy::choose::catalog::{Catalog, WorkloadEntry};
//! use gpuworthy::measure::size::SizeRequest;
//! use gpuworthy::model::sweep::SweepOptions;
//!
//! let catalog = Catalog::builtin();
//! let square = catalog.find("square")?;
//! let devices = [gpuworthy::Device::cpu()?];
//! let options = SweepOptions { pipelined: false, ..SweepOptions::default() };
//! let sizes = SizeRequest { ladder: gpuworthy::measure::size::Ladder::Listed(vec!["1024".into()]), ..SizeRequest::quick() };
//! let sweep = square.sweep(&devices, &sizes, &options, &())?;
//! assert_eq!(sweep.rows[0].size, "1024");
//! # Ok::<(), gpuworthy::core::Error>(())
//! ```

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use gpuworthy_core::{Error, Result, Workload};

use crate::Device;
use crate::choose::auto::Auto;
use crate::choose::evaluation::{Evaluation, evaluate_workload_over};
use crate::device::DeviceWorkload;
use crate::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_each_workload};
use crate::measure::MeasureOptions;
use crate::measure::names::SizeLabel;
use crate::measure::size::{Ladder, ParseSize, SizeRequest, WorkloadOptions};
use crate::model::calibration::{
    Calibration, CalibrationDevices, WorkloadCalibration, calibrate_workload_over, measure_streaming,
};
use crate::model::sweep::{Progress, SweepOptions, WorkloadSweep, sweep_workload};

/// One workload as the run-time list holds it: its name, and what sweeps, calibration and evaluation do with it.
pub trait WorkloadEntry: Send + Sync {
    /// The workload's name ([`Workload::NAME`]).
    fn name(&self) -> &'static str;

    /// The lesson it teaches ([`Workload::LESSON`]).
    fn lesson(&self) -> &'static str;

    /// The sizes `request` names, as the workload displays them; an error for a size that does not parse, an option
    /// the workload does not have, or sizes written as text for a workload that cannot read them.
    fn sizes(&self, request: &SizeRequest) -> Result<Vec<SizeLabel>>;

    /// Sweeps the sizes of `request` on every device and variant ([`sweep_workload`]).
    fn sweep(
        &self,
        devices: &[Device],
        request: &SizeRequest,
        options: &SweepOptions,
        progress: &dyn Progress,
    ) -> Result<WorkloadSweep>;

    /// Measures what the cost model needs of this workload ([`calibrate_workload`]).
    fn calibrate(&self, devices: &CalibrationDevices, progress: &dyn Progress) -> WorkloadCalibration;

    /// Compares auto's choices with the fastest measured at the sizes calibration left out ([`evaluate_workload`]).
    fn evaluate(&self, calibration: &Calibration, auto: &Auto, progress: &dyn Progress) -> Evaluation;

    /// Compares auto's choices of device set with the fastest set measured, data on the host
    /// ([`crate::choose::set_evaluation::evaluate_sets_over`]).
    fn evaluate_sets(&self, auto: &Auto, progress: &dyn Progress) -> crate::choose::set_evaluation::SetEvaluation;
}

/// The [`WorkloadEntry`] of workload `W`.
///
/// [`WorkloadOf::new`] takes the sizes from the workload's own ladders; [`WorkloadOf::sized_by_text`] also reads
/// sizes written as text (`--sizes 1024,2^20`), for a workload whose parameters implement [`ParseSize`];
/// [`WorkloadOf::with_ladders`] is measured at ladders given, for a workload whose sizes depend on more than its type
/// (an expression's program travels in its parameters).
pub struct WorkloadOf<W: Workload> {
    text: Option<SizeText<W::Params>>,
    /// The full and the short ladder, where they are given rather than the workload's own.
    ladders: Option<Ladders<W::Params>>,
    workload: PhantomData<fn() -> W>,
}

/// A full ladder of parameters and a short one.
type Ladders<P> = (Vec<P>, Vec<P>);

/// Reads parameters from text.
type Parse<P> = Box<dyn Fn(&str) -> Result<P> + Send + Sync>;

/// Sets the workload's own options on parameters.
type Apply<P> = Box<dyn Fn(&mut P, &WorkloadOptions) -> Result<()> + Send + Sync>;

/// How parameters of type `P` are read from text, and the workload's own options set on them.
struct SizeText<P> {
    parse: Parse<P>,
    apply: Apply<P>,
}

impl<W: Workload> WorkloadOf<W> {
    /// The entry of `W`, measured at the sizes of its own ladders.
    pub fn new() -> Self {
        WorkloadOf { text: None, ladders: None, workload: PhantomData }
    }

    /// The entry of `W`, which also reads sizes and the workload's own options written as text.
    pub fn sized_by_text() -> Self
    where
        W::Params: ParseSize,
    {
        let text = SizeText {
            parse: Box::new(<W::Params as ParseSize>::parse_size),
            apply: Box::new(<W::Params as ParseSize>::apply),
        };
        WorkloadOf { text: Some(text), ladders: None, workload: PhantomData }
    }

    /// The entry of `W` measured at `full` and `quick` (sweeps, calibration and its evaluation), reading sizes
    /// written as text with `parse`; it takes none of the workloads' own options (`--bins` ...).
    pub fn with_ladders(
        full: Vec<W::Params>,
        quick: Vec<W::Params>,
        parse: impl Fn(&str) -> Result<W::Params> + Send + Sync + 'static,
    ) -> Self {
        let apply = |_: &mut W::Params, options: &WorkloadOptions| match options.named().first() {
            Some(option) => Err(Error::invalid(format!("{option} does not apply to {}", W::NAME))),
            None => Ok(()),
        };
        let text = SizeText { parse: Box::new(parse), apply: Box::new(apply) };
        WorkloadOf { text: Some(text), ladders: Some((full, quick)), workload: PhantomData }
    }

    /// The full ladder and the short one.
    fn ladders(&self) -> Ladders<W::Params> {
        self.ladders.clone().unwrap_or_else(|| (W::ladder(), W::quick_ladder()))
    }

    /// The parameters `request` names.
    fn params(&self, request: &SizeRequest) -> Result<Vec<W::Params>> {
        let mut ladder = match &request.ladder {
            Ladder::Full => self.ladders().0,
            Ladder::Quick => self.ladders().1,
            Ladder::Listed(sizes) => {
                let text = self.text.as_ref().ok_or_else(|| {
                    Error::invalid(format!(
                        "{} takes no sizes written as text: it is measured at its own ladder",
                        W::NAME
                    ))
                })?;
                sizes.iter().map(|s| (text.parse)(s)).collect::<Result<Vec<_>>>()?
            }
        };
        match &self.text {
            Some(text) => ladder.iter_mut().try_for_each(|p| (text.apply)(p, &request.options))?,
            None => {
                if let Some(option) = request.options.named().first() {
                    return Err(Error::invalid(format!("{option} does not apply to {}", W::NAME)));
                }
            }
        }
        Ok(ladder)
    }
}

impl<W: Workload> Default for WorkloadOf<W> {
    fn default() -> Self {
        WorkloadOf::new()
    }
}

impl<W: DeviceWorkload> WorkloadEntry for WorkloadOf<W> {
    fn name(&self) -> &'static str {
        W::NAME
    }

    fn lesson(&self) -> &'static str {
        W::LESSON
    }

    fn sizes(&self, request: &SizeRequest) -> Result<Vec<SizeLabel>> {
        Ok(self.params(request)?.iter().map(|p| SizeLabel::from(p.to_string())).collect())
    }

    fn sweep(
        &self,
        devices: &[Device],
        request: &SizeRequest,
        options: &SweepOptions,
        progress: &dyn Progress,
    ) -> Result<WorkloadSweep> {
        let ladder = self.params(request)?;
        let planned: usize = devices.iter().map(|d| d.variants::<W>().len()).sum();
        progress.plan((ladder.len() * planned) as u64);
        Ok(sweep_workload::<W>(devices, &ladder, options, progress))
    }

    fn calibrate(&self, devices: &CalibrationDevices, progress: &dyn Progress) -> WorkloadCalibration {
        let (full, quick) = self.ladders();
        calibrate_workload_over::<W>(devices, &full, quick, progress)
    }

    fn evaluate(&self, calibration: &Calibration, auto: &Auto, progress: &dyn Progress) -> Evaluation {
        evaluate_workload_over::<W>(calibration, auto, &self.ladders().0, progress)
    }

    fn evaluate_sets(&self, auto: &Auto, progress: &dyn Progress) -> crate::choose::set_evaluation::SetEvaluation {
        crate::choose::set_evaluation::evaluate_sets_over::<W>(auto, &self.ladders().0, progress)
    }
}

/// A list of workloads: the built-in ones, and any a program adds.
#[derive(Default)]
pub struct Catalog {
    entries: Vec<Box<dyn WorkloadEntry>>,
}

impl Catalog {
    /// An empty list.
    pub fn new() -> Catalog {
        Catalog::default()
    }

    /// The eight built-in workloads, in the order of the specification.
    pub fn builtin() -> Catalog {
        struct Entry;
        impl WorkloadVisitor for Entry {
            type Output = Box<dyn WorkloadEntry>;
            fn visit<W: CommandLineWorkload>(&mut self) -> Box<dyn WorkloadEntry> {
                Box::new(WorkloadOf::<W>::sized_by_text())
            }
        }
        Catalog { entries: visit_each_workload(&mut Entry) }
    }

    /// This list with `entry` added at its end.
    pub fn with(mut self, entry: impl WorkloadEntry + 'static) -> Catalog {
        self.entries.push(Box::new(entry));
        self
    }

    /// Every entry, in order.
    pub fn entries(&self) -> Vec<&dyn WorkloadEntry> {
        self.entries.iter().map(|e| &**e).collect()
    }

    /// The names of the entries, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name()).collect()
    }

    /// The entry called `name`, or an error listing the names there are.
    pub fn find(&self, name: &str) -> Result<&dyn WorkloadEntry> {
        self.entries.iter().map(|e| &**e).find(|e| e.name() == name).ok_or_else(|| {
            Error::invalid(format!("unknown workload `{name}`: expected one of {}", self.names().join(", ")))
        })
    }
}

/// Measures each of `workloads` on `devices` (and their pinned and pipelined twins) and fits the cost model: what
/// `gpuworthy calibrate` does, for any list of workloads.
pub fn calibrate(devices: &[Device], workloads: &[&dyn WorkloadEntry], progress: &dyn Progress) -> Calibration {
    let started = Instant::now();
    let twins = CalibrationDevices::of(devices);
    warm_start(devices, progress);
    let parts = workloads.iter().map(|w| w.calibrate(&twins, progress)).collect();
    let streaming = measure_streaming(devices, progress);
    let mut calibration = Calibration::from_parts(devices, parts, started);
    for (label, per_byte) in streaming {
        if let Some(device) = calibration.model.devices.iter_mut().find(|d| d.label == label) {
            device.stream_s_per_byte = Some(per_byte);
        }
    }
    calibration.model.contention = crate::model::contention::measure_contention(devices, progress);
    calibration.model.host_copy_s_per_byte = crate::model::contention::measure_host_copy();
    calibration.took_s = started.elapsed().as_secs_f64();
    calibration
}

/// How long calibration keeps each GPU busy before its first measurement ([`warm_start`]).
pub const WARM_START: Duration = Duration::from_millis(500);

/// Keeps each GPU of `devices` busy for [`WARM_START`] with short kernels (square at 2^16 elements), so that the
/// first workload calibrated finds it as every later one does: each measurement's own spin-up is short
/// ([`crate::model::calibration::CALIBRATION_SPIN_UP`]) because the device is already busy, which a GPU idle before the
/// command started is not. On an H200, the workload calibrated first measured CUDA's short kernels slower than the
/// same launches took once the device had been busy for a while (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub fn warm_start(devices: &[Device], progress: &dyn Progress) {
    use gpuworthy_core::workloads::{Len, Square};
    let params = Len(1 << 16);
    let Ok(input) = Square::generate(&params, 1) else { return };
    let options = MeasureOptions {
        warmup: 1,
        spin_up: WARM_START,
        min_repetitions: 1,
        max_repetitions: 1,
        validate: false,
        ..MeasureOptions::default()
    };
    progress.now_measuring("warming up the GPUs".to_owned());
    // Every GPU at once, a thread each. A device that cannot run it will say so in the measurements that follow.
    std::thread::scope(|scope| {
        for device in devices.iter().filter(|d| d.is_gpu() && d.supports::<Square>()) {
            let (input, options, params) = (&input, &options, &params);
            scope.spawn(move || {
                let _ = device.time_resident_kernel::<Square>(device.best_variant::<Square>(params), input, options);
            });
        }
    });
}

/// Measures each of `workloads` at the sizes `calibration` did not use and compares auto's choice (by the
/// calibration's model, on `devices`) with the fastest measured: what `gpuworthy calibrate --evaluate` does.
pub fn evaluate(
    calibration: &Calibration,
    devices: &[Device],
    workloads: &[&dyn WorkloadEntry],
    progress: &dyn Progress,
) -> Evaluation {
    let auto = Auto::with_model(devices.to_vec(), calibration.model.clone());
    let mut evaluation = Evaluation::default();
    for workload in workloads {
        evaluation.extend(workload.evaluate(calibration, &auto, progress));
    }
    evaluation
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::WORKLOAD_NAMES;

    #[test]
    fn the_builtin_list_holds_every_workload_and_finds_each_by_name() {
        let catalog = Catalog::builtin();
        assert_eq!(catalog.names(), WORKLOAD_NAMES);
        let err = catalog.find("fft").err().expect("no such workload").to_string();
        assert!(err.contains("fft") && err.contains("stencil"), "{err}");
    }

    #[test]
    fn sizes_written_as_text_are_read_and_refused_where_the_workload_cannot_read_them() {
        let listed = SizeRequest { ladder: Ladder::Listed(vec!["2^10".into()]), ..SizeRequest::quick() };
        assert_eq!(Catalog::builtin().find("square").unwrap().sizes(&listed).unwrap(), ["1024"]);
        let own = WorkloadOf::<gpuworthy_core::workloads::Square>::new();
        let err = own.sizes(&listed).unwrap_err().to_string();
        assert!(err.contains("square") && err.contains("own ladder"), "{err}");
        assert!(!own.sizes(&SizeRequest::quick()).unwrap().is_empty());
        let bins = SizeRequest {
            options: WorkloadOptions { bins: Some(16), ..WorkloadOptions::default() },
            ..SizeRequest::quick()
        };
        assert!(own.sizes(&bins).unwrap_err().to_string().contains("--bins"));
    }
}
