//! Device groups: every workload ([`Workload::sharding`]) and expressions of each kind, run over every group this
//! machine can form, with equal, uneven and empty shares, from the host and resident (parts uploaded, launched,
//! downloaded and joined), each result checked against the reference by its own check.
//!
//! The groups are the opened devices together (`cpu+wgpu` on a machine with lavapipe), the CPU with each other
//! device, every CUDA GPU where there are two or more (`cuda:*`, pageable and pipelined), the CPU with a pipelined
//! GPU, and the CPU alone (a group of one). Workloads whose output is their parts' outputs end to end run in place
//! (each member writes into its place in one output), and the rest cut and join. A backend that cannot open is skipped loudly, and fails where `GPUWORTHY_REQUIRE` lists it.

use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_each_workload};
use gpuworthy::device::group::DeviceGroup;
use gpuworthy_core::{Backend, BackendKind, Precision, Workload};
use gpuworthy_tests::{SEED, available_devices};

/// The groups this machine can form.
fn groups() -> Vec<DeviceGroup> {
    let devices = available_devices();
    let cpu = devices.iter().find(|d| d.kind() == BackendKind::Cpu).cloned().expect("the CPU opens");
    let mut groups = vec![DeviceGroup::new(vec![cpu.clone()]).unwrap()];
    for other in devices.iter().filter(|d| d.kind() != BackendKind::Cpu) {
        groups.push(DeviceGroup::new(vec![cpu.clone(), other.clone()]).unwrap());
    }
    if devices.len() > 2 {
        groups.push(DeviceGroup::new(devices.clone()).unwrap());
    }
    let pipelined = gpuworthy::HostMemory::Pipelined;
    if devices.iter().any(|d| d.kind() == BackendKind::Cuda) {
        // Each GPU pipelining its part straight from the caller's arrays into its place in the output.
        groups.push(DeviceGroup::open_with_host_memory("cpu+cuda", pipelined).expect("the CUDA GPU opens pipelined"));
    }
    if gpuworthy::cuda::CudaBackend::device_count() >= 2 {
        groups.push(DeviceGroup::open("cuda:*").expect("every CUDA GPU opens"));
        groups.push(DeviceGroup::open_with_host_memory("cuda:*", pipelined).expect("every CUDA GPU opens pipelined"));
    }
    groups
}

/// The shares each group is run with: equal, uneven both ways, and one member given nothing.
fn shares(members: usize) -> Vec<Vec<f64>> {
    let mut all = vec![vec![1.0; members]];
    if members > 1 {
        all.push((0..members).map(|i| 0.7f64.powi(i as i32)).collect());
        all.push((0..members).map(|i| 1.0 + i as f64).collect());
        all.push((0..members).map(|i| if i == 0 { 0.0 } else { 1.0 }).collect());
    }
    all
}

struct OnGroups {
    groups: Vec<DeviceGroup>,
    failures: Vec<String>,
    runs: usize,
}

impl WorkloadVisitor for OnGroups {
    type Output = ();

    fn visit<W: CommandLineWorkload>(&mut self) {
        let Some(sharding) = W::sharding() else {
            eprintln!("{}: does not split over a group yet", W::NAME);
            return;
        };
        for params in W::conformance_params() {
            let input = W::generate(&params, SEED).unwrap();
            let expected = W::reference(&input).unwrap();
            // A join that loses a part is caught by the check: the planted wrong answer.
            let units = (sharding.units)(&params);
            if units >= 2 {
                let first = (sharding.cut)(&input, 0..units / 2);
                let lost = (sharding.join)(&input, vec![(0..units / 2, W::reference(&first).unwrap())]);
                // (Where the second half's output is empty, as with rows of no columns, nothing is lost.)
                assert!(
                    format!("{lost:?}") == format!("{expected:?}")
                        || W::check(&input, &expected, &lost, Precision::Fp32).is_err(),
                    "{} {params}: a join missing its second part passed the check",
                    W::NAME
                );
            }
            // In place, the whole output as allocated, before any member wrote its place, fails the check: a member
            // that wrote nothing cannot pass. (An output with nothing to write is the exception.)
            let whole = sharding.in_place.as_ref().and_then(|in_place| (in_place.output)(&input, None));
            if let Some(unwritten) = &whole {
                assert!(
                    format!("{unwritten:?}") == format!("{expected:?}")
                        || W::check(&input, &expected, unwritten, Precision::Fp32).is_err(),
                    "{} {params}: an output no member wrote passed the check",
                    W::NAME
                );
            }
            for group in self.groups.iter().filter(|g| g.supports::<W>()) {
                for shares in shares(group.members().len()) {
                    self.runs += 1;
                    let outcome = group.run::<W>(&input, &shares).map_err(|e| e.to_string()).and_then(|run| {
                        // Each member's report is its own: members in order, their parts consecutive.
                        let told = run
                            .members
                            .windows(2)
                            .all(|w| w[0].member < w[1].member && w[0].units.end == w[1].units.start);
                        if !told {
                            return Err(format!("the members' reports are out of order: {:?}", run.members));
                        }
                        if run.in_place != whole.is_some() {
                            return Err(format!(
                                "in place: {}, where the workload writes in place: {}",
                                run.in_place,
                                whole.is_some()
                            ));
                        }
                        W::check(&input, &expected, &run.output, Precision::Fp32).map_err(|e| e.to_string())
                    });
                    // The same parts resident: uploaded, launched (once: saxpy updates y in place), downloaded and
                    // joined.
                    // Then fresh parts through the host-clock step: launched from one thread, downloaded and joined.
                    let resident = (|| -> gpuworthy_core::Result<(W::Output, W::Output)> {
                        let mut parts = group.upload::<W>(&input, &shares)?;
                        let launch = group.launch::<W>(&mut parts)?;
                        assert_eq!(launch.kernels.len(), parts.parts().len(), "a kernel time per part");
                        let downloaded = group.download::<W>(&mut parts, &input)?.0;
                        let mut fresh = group.upload::<W>(&input, &shares)?;
                        Ok((downloaded, group.launch_and_join::<W>(&mut fresh, &input)?.0))
                    })()
                    .map_err(|e| e.to_string())
                    .and_then(|(output, stepped)| {
                        W::check(&input, &expected, &output, Precision::Fp32).map_err(|e| format!("resident: {e}"))?;
                        W::check(&input, &expected, &stepped, Precision::Fp32)
                            .map_err(|e| format!("resident, launched and joined on the host's clock: {e}"))
                    });
                    let outcome = outcome.and(resident);
                    if let Err(why) = outcome {
                        self.failures.push(format!(
                            "{} {params} on {} with shares {shares:?}: {why}",
                            W::NAME,
                            group.label()
                        ));
                    }
                }
            }
        }
    }
}

#[test]
fn every_workload_that_splits_matches_its_reference_on_every_group() {
    let mut visitor = OnGroups { groups: groups(), failures: Vec::new(), runs: 0 };
    visit_each_workload(&mut visitor);
    for group in &visitor.groups {
        eprintln!("group {}", group.label());
    }
    assert!(visitor.runs > 0, "no group ran anything");
    assert!(visitor.failures.is_empty(), "{}", visitor.failures.join("\n"));
}

#[test]
fn a_member_that_cannot_open_is_named_and_bad_shares_are_refused() {
    let err = DeviceGroup::open("cpu+cuda:999").expect_err("no machine has a 1000th GPU");
    assert!(err.is_unavailable() && err.to_string().contains("cuda:999"), "{err}");
    let cpu = DeviceGroup::open("cpu").unwrap();
    let input = gpuworthy_core::workloads::Square::generate(&gpuworthy_core::workloads::Len(64), 1).unwrap();
    let wrong = cpu.run::<gpuworthy_core::workloads::Square>(&input, &[1.0, 1.0]).unwrap_err().to_string();
    assert!(wrong.contains("2 shares for the 1 members"), "{wrong}");
    let zero = cpu.run::<gpuworthy_core::workloads::Square>(&input, &[0.0]).unwrap_err().to_string();
    assert!(zero.contains("every share is 0"), "{zero}");
}

/// Expressions on every group: elementwise with several outputs, and reductions whose members return partials that
/// the join combines before the post-map, each checked against the expression's bounded reference.
#[test]
fn expressions_match_their_reference_on_every_group() {
    use gpuworthy_core::expr::{ExprParams, Expression};
    use std::sync::Arc;
    let mut failures = Vec::new();
    let mut runs = 0;
    for source in ["y = 3 * x + z", "u = x * z; v = exp(x) - z", "s = sum(x * z)", "r = sqrt(sum(x * x))", "m = max(x)"]
    {
        let program = Arc::new(gpuworthy_core::expr::Expr::parse(source).unwrap().bind(&[]).unwrap());
        for n in [1usize, 1000, 65537] {
            let input = Expression::generate(&ExprParams::new(Arc::clone(&program), n, Vec::new()), SEED).unwrap();
            let expected = Expression::reference(&input).unwrap();
            for group in groups().iter().filter(|g| g.supports::<Expression>()) {
                for shares in shares(group.members().len()) {
                    runs += 1;
                    let outcome = group.run::<Expression>(&input, &shares).map_err(|e| e.to_string()).and_then(|run| {
                        Expression::check(&input, &expected, &run.output, Precision::Fp32).map_err(|e| e.to_string())
                    });
                    if let Err(why) = outcome {
                        failures.push(format!("`{source}` at {n} on {} with shares {shares:?}: {why}", group.label()));
                    }
                }
            }
        }
    }
    assert!(runs > 0, "no group ran an expression");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs from the host with the arrays page-locked in place (and so an output kept from run to run): on a group with
/// a CUDA GPU its copies go straight from and to the caller's arrays; every result matches its reference, alone and
/// together. A workload that does not write in place has no output to lock, and is refused by name.
#[test]
fn runs_on_page_locked_arrays_match_their_reference() {
    use gpuworthy::choose::group_run::{HostArrays, measure_from_host};
    use gpuworthy_core::workloads::{Len, Square, Sum};
    let arrays = HostArrays { reuse_output: true, page_locked: true };
    let input = Square::generate(&Len((1 << 21) + 5), SEED).unwrap();
    let expected = Square::reference(&input).unwrap();
    for group in groups() {
        let host = measure_from_host::<Square>(&group, &input, 2, None, arrays)
            .unwrap_or_else(|e| panic!("{}: {e}", group.label()));
        Square::check(&input, &expected, &host.median.output, Precision::Fp32)
            .unwrap_or_else(|e| panic!("{}: {e}", group.label()));
        let cuda = group.members().iter().any(|m| m.backend().kind() == BackendKind::Cuda);
        assert_eq!(
            host.page_lock.is_some_and(|(bytes, _)| bytes > 0),
            cuda,
            "{}: locked only with a GPU",
            group.label()
        );
    }
    let sum = Sum::generate(&Len(1000), SEED).unwrap();
    let refused = measure_from_host::<Sum>(&groups()[0], &sum, 1, None, arrays).err().expect("sum is not in place");
    assert!(refused.to_string().contains("not written in place"), "{refused}");
}

/// A reduction's combine on the GPUs: over every CUDA GPU (two or more), the members' values added by an NCCL
/// all-reduce match the reference for the built-in sum and for expression reductions, at sizes that split unevenly;
/// an elementwise expression has no value to add and is refused by name, and a group with a CPU member has no
/// collective. Without two CUDA GPUs and NCCL the GPU half is skipped loudly.
#[test]
fn a_reduction_combined_through_nccl_matches_its_reference() {
    use gpuworthy::device::collective::Collective;
    use gpuworthy_core::expr::{ExprParams, Expression};
    use gpuworthy_core::workloads::{Len, Sum};
    use std::sync::Arc;
    let cpu_pair = DeviceGroup::new(vec![available_devices()[0].clone(), available_devices()[0].clone()]).unwrap();
    let refused = Collective::open(&cpu_pair).unwrap_err().to_string();
    assert!(refused.contains("not a CUDA device"), "{refused}");
    if gpuworthy::cuda::CudaBackend::device_count() < 2 {
        eprintln!("SKIPPED: an NCCL combine needs two CUDA GPUs");
        return;
    }
    let group = DeviceGroup::open("cuda:*").expect("every CUDA GPU opens");
    let collective = match Collective::open(&group) {
        Ok(collective) => collective,
        Err(e) if e.is_unavailable() => return eprintln!("SKIPPED: NCCL: {e}"),
        Err(e) => panic!("opening NCCL over {}: {e}", group.label()),
    };
    let shares = vec![1.0; group.members().len()];
    for n in [1000usize, (1 << 22) + 3] {
        let input = Sum::generate(&Len(n), SEED).unwrap();
        let mut parts = group.upload::<Sum>(&input, &shares).unwrap();
        assert!(Collective::keeps_value_on_gpus(&mut parts));
        let step = group.launch_and_all_reduce::<Sum>(&collective, &mut parts).unwrap();
        assert!(step.launches + step.all_reduce + step.download <= step.total, "{step:?}");
        let total = step.output;
        Sum::check(&input, &Sum::reference(&input).unwrap(), &total, Precision::Fp32)
            .unwrap_or_else(|e| panic!("sum at {n}: {e}"));
    }
    for source in ["s = sum(x * z)", "y = 3 * x + z"] {
        let program = Arc::new(gpuworthy_core::expr::Expr::parse(source).unwrap().bind(&[]).unwrap());
        let input = Expression::generate(&ExprParams::new(program, 65537, Vec::new()), SEED).unwrap();
        let mut parts = group.upload::<Expression>(&input, &shares).unwrap();
        let reduces = Collective::keeps_value_on_gpus(&mut parts);
        assert_eq!(reduces, source.contains("sum"), "`{source}`");
        let outcome = group.launch_and_all_reduce::<Expression>(&collective, &mut parts);
        if reduces {
            let output = outcome.unwrap_or_else(|e| panic!("`{source}`: {e}")).output;
            Expression::check(&input, &Expression::reference(&input).unwrap(), &output, Precision::Fp32)
                .unwrap_or_else(|e| panic!("`{source}`: {e}"));
        } else {
            let refused = outcome.unwrap_err().to_string();
            assert!(refused.contains("not a reduction"), "{refused}");
        }
    }
}

/// Calibration measures how the host slows each set's members (every GPU kind present, beside the CPU), and the set
/// evaluation runs every set auto chooses among, each checked, with auto's set against the fastest: on this machine's
/// devices, from a calibration of square made here.
#[test]
fn the_hosts_contention_is_measured_and_autos_set_is_timed_against_every_set() {
    use gpuworthy::choose::auto::Auto;
    use gpuworthy::choose::group::{open_set, predict_group};
    use gpuworthy::choose::set_evaluation::evaluate_sets_over;
    use gpuworthy::model::Placement;
    use gpuworthy::model::calibration::{Calibration, CalibrationDevices, calibrate_workload};
    use gpuworthy::model::contention::measure_contention;
    use gpuworthy_core::workloads::{Len, Square};

    let devices = available_devices();
    let others: Vec<_> = devices.iter().filter(|d| d.kind() != BackendKind::Cpu).collect();
    if others.is_empty() {
        eprintln!("SKIPPING the host's contention: only the CPU opened here, so there is no set to measure");
        return;
    }
    let contention = measure_contention(&devices, &());
    assert_eq!(contention.len(), others.len(), "one per kind beside the CPU: {contention:?}");
    for measured in &contention {
        eprintln!("the host's contention beside the CPU: {}", measured.describe().join("; "));
        assert!(measured.sets.iter().any(|s| s.gpus == 1 && s.with_cpu), "{measured:?}");
        for set in &measured.sets {
            assert!(set.gpu_slowdown >= 1.0 && set.gpu_slowdown.is_finite() && set.set_s > 0.0, "{set:?}");
            assert_eq!(set.cpu_slowdown.is_some(), set.with_cpu, "{set:?}");
            assert!(set.cpu_slowdown.is_none_or(|c| c >= 1.0 && c.is_finite()), "{set:?}");
        }
    }
    let started = std::time::Instant::now();
    let part = calibrate_workload::<Square>(&CalibrationDevices::of(&devices), &());
    let mut calibration = Calibration::from_parts(&devices, vec![part], started);
    calibration.model.contention = contention;
    let auto = Auto::with_model(devices.clone(), calibration.model);
    let evaluation = evaluate_sets_over::<Square>(&auto, &[Len(1 << 12), Len(1 << 20)], &());
    assert!(evaluation.failures.is_empty(), "{:?}", evaluation.failures);
    assert_eq!(evaluation.points.len(), 2);
    for point in &evaluation.points {
        for device in &devices {
            assert!(point.set(device.label().as_str()).is_some(), "{} alone is measured: {point:?}", device.label());
        }
        let (chosen, fastest) = (point.set(&point.auto_set).unwrap(), point.set(&point.fastest_set).unwrap());
        assert!(point.sets.iter().all(|s| s.measured_s >= fastest.measured_s && s.predicted_s > 0.0), "{point:?}");
        assert!((point.regret - chosen.measured_s / fastest.measured_s).abs() < 1e-9 && point.regret >= 1.0);
    }
    // A set of the CPU with another device, predicted with the contention and opened as predicted, runs and is right.
    let cpu = devices.iter().find(|d| d.kind() == BackendKind::Cpu).unwrap().label();
    let input = Square::generate(&Len(1 << 20), SEED).unwrap();
    for other in &others {
        let members = [cpu.clone(), other.label()];
        let predicted = predict_group::<Square>(&auto, &Len(1 << 20), Placement::Host, &members).unwrap();
        assert!(predicted.slowdowns.is_some() || predicted.members.iter().any(|m| m.fraction == 0.0), "{predicted:?}");
        let (opened, shares) = open_set(&auto, &predicted).unwrap();
        let run = DeviceGroup::new(opened).unwrap().run::<Square>(&input, &shares).unwrap();
        assert_eq!(run.output, Square::reference(&input).unwrap(), "{}", predicted.name());
    }
}
