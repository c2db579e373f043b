//! A workload defined outside gpuworthy, as a user's crate defines one: this test crate depends on `gpuworthy` with
//! its default features (every backend compiled in) and implements a workload for the CPU alone. It compiles, runs on
//! the CPU through `Device`, is refused by name on every other backend, and goes through the sweep, calibration and
//! `auto` like a built-in workload.

use gpuworthy::choose::auto::Auto;
use gpuworthy::choose::catalog::{Catalog, WorkloadEntry, WorkloadOf};
use gpuworthy::core::workloads::Len;
use gpuworthy::core::{Backend, BackendKind, Cost, Error, Implements, Mismatch, Precision, Result, Workload};
use gpuworthy::cpu::CpuBackend;
use gpuworthy::measure::size::SizeRequest;
use gpuworthy::model::Placement;
use gpuworthy::model::sweep::SweepOptions;
use gpuworthy::{Device, DeviceWorkload, ErasedImplements};

/// `y = |x|`, on the CPU only.
struct Magnitude;

impl Workload for Magnitude {
    const NAME: &'static str = "magnitude";
    const LESSON: &'static str = "a workload only the CPU implements";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = Vec<f32>;

    fn params(input: &Vec<f32>) -> Len {
        Len(input.len())
    }

    fn validate(_: &Vec<f32>) -> Result<()> {
        Ok(())
    }

    fn generate(params: &Len, seed: u64) -> Result<Vec<f32>> {
        Ok(gpuworthy::core::rng::uniform_f32(seed, 0, params.0, -1.0, 1.0))
    }

    fn reference(input: &Vec<f32>) -> Result<Vec<f32>> {
        Ok(input.iter().map(|x| x.abs()).collect())
    }

    fn check(_: &Vec<f32>, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> std::result::Result<(), Mismatch> {
        if expected == actual { Ok(()) } else { Err(Mismatch::new("the magnitudes differ")) }
    }

    fn host_bytes(params: &Len) -> Option<u64> {
        (params.0 as u64).checked_mul(8)
    }

    fn cost(params: &Len) -> Cost {
        let n = params.0 as u64;
        Cost { bytes: 8 * n, flops: n, elements: n }
    }

    fn ladder() -> Vec<Len> {
        vec![Len(1 << 8), Len(1 << 12), Len(1 << 16), Len(1 << 18)]
    }

    fn quick_ladder() -> Vec<Len> {
        vec![Len(1 << 8), Len(1 << 12)]
    }

    fn conformance_params() -> Vec<Len> {
        vec![Len(0), Len(7)]
    }

    fn special_inputs() -> Vec<(&'static str, Vec<f32>)> {
        vec![("negative zero", vec![-0.0])]
    }
}

impl Implements<Magnitude> for CpuBackend {
    type Resident = (Vec<f32>, Vec<f32>);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar"]
    }

    fn best_variant(&self, _: &Len) -> &'static str {
        "scalar"
    }

    fn prepare(&self, _: &str) -> Result<()> {
        Ok(())
    }

    fn upload(&self, input: &Vec<f32>) -> Result<Self::Resident> {
        Ok((input.clone(), Vec::new()))
    }

    fn launch(&self, variant: &str, (x, y): &mut Self::Resident) -> Result<()> {
        if variant != "scalar" {
            return Err(Implements::<Magnitude>::unknown_variant(self, variant));
        }
        *y = x.iter().map(|v| v.abs()).collect();
        Ok(())
    }

    fn download(&self, (_, y): &mut Self::Resident) -> Result<Vec<f32>> {
        Ok(y.clone())
    }
}

impl DeviceWorkload for Magnitude {
    fn on_cpu(backend: &CpuBackend) -> Option<&dyn ErasedImplements<Self>> {
        Some(backend)
    }
}

/// The devices of every backend that open here; a backend listed in `GPUWORTHY_REQUIRE` must open.
fn devices() -> Vec<Device> {
    let required = BackendKind::required_by_env().unwrap();
    let opened = Device::all_available();
    for (spec, why) in &opened.unavailable {
        assert!(!required.contains(&spec.kind()), "{spec} is required by GPUWORTHY_REQUIRE but: {why}");
        eprintln!("SKIPPING {spec}: {why}");
    }
    opened.devices
}

#[test]
fn a_workload_only_the_cpu_implements_runs_there_and_is_unsupported_elsewhere_by_name() {
    let input = Magnitude::generate(&Len(100), 1).unwrap();
    let expected = Magnitude::reference(&input).unwrap();
    for device in devices() {
        if device.kind() == BackendKind::Cpu {
            assert!(device.supports::<Magnitude>());
            assert_eq!(device.run::<Magnitude>("scalar", &input).unwrap(), expected);
            let mut resident = device.upload::<Magnitude>(&input).unwrap();
            device.launch("scalar", &mut resident).unwrap();
            assert_eq!(device.download(&mut resident).unwrap(), expected);
            continue;
        }
        assert!(!device.supports::<Magnitude>());
        assert!(device.variants::<Magnitude>().is_empty());
        let variant = device.best_variant::<Magnitude>(&Len(100));
        let mut output = Vec::new();
        let errors = [
            device.run::<Magnitude>(variant, &input).err(),
            device.run_into::<Magnitude>(variant, &input, &mut output).err(),
            device.upload::<Magnitude>(&input).err(),
            device.check_size::<Magnitude>(&Len(100)).err(),
            device.prepare::<Magnitude>(variant).err(),
            device.measure::<Magnitude>(variant, &input, &gpuworthy::measure::MeasureOptions::quick()).err(),
        ];
        for err in errors {
            let err = err.expect("an unsupported backend refuses every phase");
            assert!(matches!(&err, Error::Unsupported { backend, .. } if *backend == device.kind()), "{err}");
            let message = err.to_string();
            assert!(message.contains("magnitude") && message.contains(device.kind().name()), "{message}");
        }
    }
}

#[test]
fn a_workload_of_ones_own_is_swept_calibrated_and_placed_like_a_builtin_one() {
    let devices = devices();
    let catalog = Catalog::new().with(WorkloadOf::<Magnitude>::sized_by_text());
    let entry = catalog.find("magnitude").unwrap();
    let options = SweepOptions { pipelined: false, ..SweepOptions::default() };
    let sweep = entry.sweep(&devices, &SizeRequest::quick(), &options, &()).unwrap();
    assert_eq!(sweep.rows.len(), 2, "one CPU row per size: {:?}", sweep.rows);
    assert!(sweep.rows.iter().all(|r| r.backend == BackendKind::Cpu && !r.check.is_failed()));
    for other in devices.iter().filter(|d| d.kind() != BackendKind::Cpu) {
        assert!(
            sweep.notes.iter().any(|n| n.backend == other.label().as_str() && n.message.contains("no implementation")),
            "{:?}",
            sweep.notes
        );
    }
    let calibration = gpuworthy::choose::catalog::calibrate(&devices, &catalog.entries(), &());
    assert!(calibration.model.knows("magnitude"));
    let auto = Auto::with_model(devices.clone(), calibration.model);
    for placement in [Placement::Host, Placement::Resident] {
        let choice = auto.choose::<Magnitude>(&Len(1 << 28), placement).unwrap();
        assert_eq!(choice.device.kind(), BackendKind::Cpu, "{placement}: {}", choice.reason);
    }
    // Without a model, the default for large resident data (a GPU) is kept to the devices that implement it.
    let uncalibrated = Auto::without_model(devices, "test");
    let choice = uncalibrated.choose::<Magnitude>(&Len(1 << 28), Placement::Resident).unwrap();
    assert_eq!(choice.device.kind(), BackendKind::Cpu, "{}", choice.reason);
    assert_eq!(choice.device.run::<Magnitude>(choice.variant, &vec![-2.0]).unwrap(), [2.0]);
}

#[test]
fn sizes_of_ones_own_workload_are_read_as_text_when_its_parameters_can_be() {
    let listed =
        SizeRequest { ladder: gpuworthy::measure::size::Ladder::Listed(vec!["2^10".into()]), ..SizeRequest::quick() };
    assert_eq!(WorkloadOf::<Magnitude>::sized_by_text().sizes(&listed).unwrap(), ["1024"]);
    assert!(WorkloadOf::<Magnitude>::new().sizes(&listed).is_err());
}

#[test]
fn an_expression_runs_through_a_device_on_every_backend() {
    use gpuworthy::core::expr::{Expr, ExprParams, Expression, Outputs};
    use std::sync::Arc;
    let program = Arc::new(Expr::parse("y = a * x + b").unwrap().bind(&["a", "b"]).unwrap());
    let params = ExprParams::new(program, 10_000, vec![2.0, 1.0]);
    let input = Expression::generate(&params, 1).unwrap();
    for device in devices() {
        let m = device
            .measure::<Expression>(
                device.best_variant::<Expression>(&params),
                &input,
                &gpuworthy::measure::MeasureOptions::quick(),
            )
            .unwrap();
        assert!(matches!(m.check, Some(Ok(()))), "{:?}", m.check);
        let variant = device.best_variant::<Expression>(&params);
        let Outputs::Elementwise(y) = device.run::<Expression>(variant, &input).unwrap() else { panic!("elementwise") };
        assert_eq!(y[0][3], 2.0 * input.arrays[0].values()[3] + 1.0);
    }
}

/// `y = |x|` as [`Magnitude`], but wrong past 2^14 elements: a planted wrong answer at the sizes calibration leaves
/// to the evaluation.
struct WrongPastCalibration;

impl Workload for WrongPastCalibration {
    const NAME: &'static str = "wrong_past_calibration";
    const LESSON: &'static str = "a wrong answer the evaluation must report";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = Vec<f32>;

    fn params(input: &Vec<f32>) -> Len {
        Magnitude::params(input)
    }

    fn validate(input: &Vec<f32>) -> Result<()> {
        Magnitude::validate(input)
    }

    fn generate(params: &Len, seed: u64) -> Result<Vec<f32>> {
        Magnitude::generate(params, seed)
    }

    fn reference(input: &Vec<f32>) -> Result<Vec<f32>> {
        Magnitude::reference(input)
    }

    fn check(x: &Vec<f32>, expected: &Vec<f32>, actual: &Vec<f32>, p: Precision) -> std::result::Result<(), Mismatch> {
        Magnitude::check(x, expected, actual, p)
    }

    fn host_bytes(params: &Len) -> Option<u64> {
        Magnitude::host_bytes(params)
    }

    fn cost(params: &Len) -> Cost {
        Magnitude::cost(params)
    }

    fn ladder() -> Vec<Len> {
        Magnitude::ladder()
    }

    fn quick_ladder() -> Vec<Len> {
        Magnitude::quick_ladder()
    }

    fn conformance_params() -> Vec<Len> {
        Magnitude::conformance_params()
    }

    fn special_inputs() -> Vec<(&'static str, Vec<f32>)> {
        Magnitude::special_inputs()
    }
}

impl Implements<WrongPastCalibration> for CpuBackend {
    type Resident = (Vec<f32>, Vec<f32>);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar"]
    }

    fn best_variant(&self, _: &Len) -> &'static str {
        "scalar"
    }

    fn prepare(&self, _: &str) -> Result<()> {
        Ok(())
    }

    fn upload(&self, input: &Vec<f32>) -> Result<Self::Resident> {
        Ok((input.clone(), Vec::new()))
    }

    fn launch(&self, _: &str, (x, y): &mut Self::Resident) -> Result<()> {
        let wrong = x.len() > 1 << 14;
        *y = x.iter().map(|v| if wrong { -v.abs() } else { v.abs() }).collect();
        Ok(())
    }

    fn download(&self, (_, y): &mut Self::Resident) -> Result<Vec<f32>> {
        Ok(y.clone())
    }
}

impl DeviceWorkload for WrongPastCalibration {
    fn on_cpu(backend: &CpuBackend) -> Option<&dyn ErasedImplements<Self>> {
        Some(backend)
    }
}

#[test]
fn a_wrong_answer_at_a_size_the_evaluation_measures_is_counted_and_reported() {
    let cpu = vec![Device::cpu().unwrap()];
    let catalog = Catalog::new().with(WorkloadOf::<WrongPastCalibration>::sized_by_text());
    let calibration = gpuworthy::choose::catalog::calibrate(&cpu, &catalog.entries(), &());
    let evaluation = gpuworthy::choose::catalog::evaluate(&calibration, &cpu, &catalog.entries(), &());
    let failed: Vec<&str> = evaluation.failures.iter().map(|f| f.size.as_str()).collect();
    // 2^16 and 2^18, each with the data on the host and resident.
    assert_eq!(failed, ["65536", "65536", "262144", "262144"], "{:?}", evaluation.failures);
    assert!(evaluation.failures.iter().all(|f| f.what.contains("check")), "{:?}", evaluation.failures);
}
