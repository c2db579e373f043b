//! Predictions for device groups: what a set of devices would take together for a piece of work, with the shares
//! that make its members finish at once, from the same per-device model that predicts each device alone.
//!
//! A group's time is its slowest member's: each member runs the cut its share gives it ([`Sharding::part`]), over
//! its own host link, so its prediction is the model's for that smaller instance on that device. The shares are
//! found by balancing: start in proportion to each member's speed on the whole instance, then move work from the
//! members predicted slower to those predicted faster until the times agree (small instances are not linear in
//! size, so one proportional step is not enough). Members named by the same label are devices of one kind (the
//! two H200s of `explain --on nvidia-h200 --gpus 2`), each predicted as that kind.
//!
//! Members slow one another when their data starts on the host: the GPUs' copies and the CPU's kernel share the
//! host's memory. Where calibration measured that for the set ([`crate::model::contention`]), each member's
//! prediction is slowed by it before the shares are balanced, so a set the host cannot feed is predicted as it runs;
//! where it did not (a machine calibrated before, a set of two GPU kinds), the prediction says it is left out. A
//! member whose device does not read its part where it lies (the default path cuts the part and copies its output
//! into place) is charged those copies at the host's rate into fresh memory, which calibration measures: on a
//! 32-core host a group's cut of 1 GiB cost more than the two GPUs' whole work.
//!
//! [`Sharding::part`]: gpuworthy_core::Sharding

use gpuworthy_core::{Backend, Error, Result};

use crate::choose::auto::Auto;
use crate::device::group::DeviceGroup;
use crate::device::{DeviceLabel, DeviceWorkload};
use crate::model::contention::Slowdowns;
use crate::model::{Placement, Prediction};

/// Balancing steps after the first split in proportion to speed.
const BALANCING_STEPS: usize = 4;

/// One member's part of a predicted group run.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberPrediction {
    /// The device kind it is.
    pub device: DeviceLabel,
    /// The fraction of the units it takes.
    pub fraction: f64,
    /// Its predicted run of its part (`None` where its share is nothing).
    pub prediction: Option<Prediction>,
}

/// A group's predicted run.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupPrediction {
    /// The members, in order.
    pub members: Vec<MemberPrediction>,
    /// The slowest member's predicted time: the group's.
    pub total_s: f64,
    /// The host's contention applied to the members (data on the host, measured by calibration for this set or,
    /// past the sets measured, a what-if from the largest); `None` where it was not applied: data resident, one
    /// member running, or a set calibration did not measure.
    pub slowdowns: Option<Slowdowns>,
}

impl GroupPrediction {
    /// The group as written: its members' labels joined by `+`, a run of one label written `label×count`
    /// (`cpu+cuda×2`).
    pub fn name(&self) -> String {
        let mut parts: Vec<(String, usize)> = Vec::new();
        for member in &self.members {
            match parts.last_mut() {
                Some((label, count)) if *label == member.device.as_str() => *count += 1,
                _ => parts.push((member.device.to_string(), 1)),
            }
        }
        parts
            .into_iter()
            .map(|(label, count)| if count == 1 { label } else { format!("{label}×{count}") })
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The shares as percentages, in member order, a run of three or more equal ones written once with its
    /// count (`29% / 71%`, `0% / 25%×4`).
    pub fn shares(&self) -> String {
        let mut runs: Vec<(String, usize)> = Vec::new();
        for member in &self.members {
            let share = format!("{:.0}%", 100.0 * member.fraction);
            match runs.last_mut() {
                Some((last, count)) if *last == share => *count += 1,
                _ => runs.push((share, 1)),
            }
        }
        runs.into_iter()
            .map(|(share, count)| match count {
                1 => share,
                2 => format!("{share} / {share}"),
                _ => format!("{share}×{count}"),
            })
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// The model's fastest prediction for `device` running `W` at `params`, if it knows the device.
fn predict_member<W: DeviceWorkload>(
    auto: &Auto,
    params: &W::Params,
    placement: Placement,
    device: &DeviceLabel,
) -> Option<Prediction> {
    let (predictions, _) = auto.predict::<W>(params, placement)?;
    predictions.into_iter().filter(|p| p.device == *device).min_by(|a, b| a.total_s.total_cmp(&b.total_s))
}

/// `W` at `params` predicted on a group of `members` (device labels the model knows; a label given twice is two
/// devices of that kind), with the shares balanced so that the members finish together. `None` where the workload
/// does not split, has no units, or the model does not know a member.
pub fn predict_group<W: DeviceWorkload>(
    auto: &Auto,
    params: &W::Params,
    placement: Placement,
    members: &[DeviceLabel],
) -> Option<GroupPrediction> {
    let sharding = W::sharding()?;
    let units = (sharding.units)(params);
    if units == 0 || members.is_empty() {
        return None;
    }
    let mut shares = Vec::with_capacity(members.len());
    let mut alone = Vec::with_capacity(members.len());
    for device in members {
        let prediction = predict_member::<W>(auto, params, placement, device)?;
        shares.push(1.0 / prediction.total_s.max(1e-12));
        alone.push(prediction);
    }
    // The fastest member with the whole of the work and the others nothing: what the group does when no split pays
    // for a member's fixed costs.
    let (fastest, whole) = alone.into_iter().enumerate().min_by(|a, b| a.1.total_s.total_cmp(&b.1.total_s))?;
    let mut best = Some(GroupPrediction {
        total_s: whole.total_s,
        slowdowns: None,
        members: members
            .iter()
            .enumerate()
            .map(|(i, device)| MemberPrediction {
                device: device.clone(),
                fraction: if i == fastest { 1.0 } else { 0.0 },
                prediction: (i == fastest).then(|| whole.clone()),
            })
            .collect(),
    });
    for _ in 0..=BALANCING_STEPS {
        let ranges = sharding.split(params, &shares).ok()?;
        let mut predicted = Vec::with_capacity(members.len());
        for (device, range) in members.iter().zip(&ranges) {
            let prediction = match range.is_empty() {
                true => None,
                false => Some(predict_member::<W>(auto, &(sharding.part)(params, range.clone()), placement, device)?),
            };
            predicted.push(MemberPrediction {
                device: device.clone(),
                fraction: range.len() as f64 / units as f64,
                prediction,
            });
        }
        let slowdowns = add_the_hosts_costs::<W>(auto, params, placement, &sharding, &ranges, &mut predicted);
        let total_s = predicted.iter().filter_map(|m| m.prediction.as_ref()).map(|p| p.total_s).fold(0.0, f64::max);
        // Each member's share over its time is its speed on the work it was given: the next shares.
        for (share, member) in shares.iter_mut().zip(&predicted) {
            if let Some(p) = &member.prediction {
                *share /= p.total_s.max(1e-12);
            }
        }
        let sum: f64 = shares.iter().sum();
        shares.iter_mut().for_each(|s| *s /= sum);
        if best.as_ref().is_none_or(|b| total_s < b.total_s) {
            best = Some(GroupPrediction { members: predicted, total_s, slowdowns });
        }
    }
    best
}

/// What the host adds to each running member of `predicted` (parts `ranges` of `params`) with data on the host,
/// where two or more members run: the host's contention that calibration measured for the set (a GPU's transfers, the
/// CPU's streaming, [`Slowdowns::apply`]), and the host's copies of a part whose device does not read it in place
/// ([`crate::model::WorkloadModel::parts_in_place`]: the part's bytes on the host, its input cut and its output copied
/// into place, at the host's rate into fresh memory, [`crate::model::Model::host_copy_s_per_byte`]). Returns the
/// slowdowns applied (`None`: none, see [`GroupPrediction::slowdowns`]).
fn add_the_hosts_costs<W: DeviceWorkload>(
    auto: &Auto,
    params: &W::Params,
    placement: Placement,
    sharding: &gpuworthy_core::Sharding<W>,
    ranges: &[std::ops::Range<usize>],
    predicted: &mut [MemberPrediction],
) -> Option<Slowdowns> {
    let model = auto.model.as_ref().filter(|_| placement.moves_data())?;
    if predicted.iter().filter(|m| m.prediction.is_some()).count() < 2 {
        return None;
    }
    let part_of = |range: &std::ops::Range<usize>| (sharding.part)(params, range.clone());
    // The contention, where calibration measured this set (one kind of GPU, with the CPU or not).
    let running: Vec<&Prediction> = predicted.iter().filter_map(|m| m.prediction.as_ref()).collect();
    // A device of another backend than the CPU's is slowed as a GPU is (lavapipe's copies cross the host's memory).
    let is_cpu = |p: &Prediction| {
        model
            .devices
            .iter()
            .find(|d| d.label == p.device)
            .map_or(!p.is_gpu, |d| d.backend == gpuworthy_core::BackendKind::Cpu)
    };
    let mut gpu_kinds: Vec<&DeviceLabel> = running.iter().filter(|p| !is_cpu(p)).map(|p| &p.device).collect();
    let gpus = gpu_kinds.len();
    gpu_kinds.dedup();
    let with_cpu = running.iter().any(|p| is_cpu(p));
    let slowdowns = match gpu_kinds.as_slice() {
        [gpu] => model.contention.iter().find(|c| c.gpu == **gpu).and_then(|c| c.slowdowns(gpus, with_cpu)),
        _ => None,
    };
    for (member, range) in predicted.iter_mut().zip(ranges) {
        let (Some(slowdowns), Some(prediction)) = (&slowdowns, member.prediction.as_mut()) else { continue };
        let device = model.devices.iter().find(|d| d.label == prediction.device);
        *prediction = slowdowns.apply(prediction, device, W::cost(&part_of(range)).bytes);
    }
    // The copies, where the host's rate was measured.
    if let Some(per_byte) = model.host_copy_s_per_byte {
        let instance = W::instance(params).unwrap_or_else(|| W::NAME.to_owned());
        let like = W::resemblance(params).map(|r| r.like);
        for (member, range) in predicted.iter_mut().zip(ranges) {
            let Some(prediction) = member.prediction.as_mut() else { continue };
            let workload = model.devices.iter().find(|d| d.label == prediction.device).and_then(|d| {
                let named = |name: &str| d.workloads.iter().find(|w| w.workload == name);
                named(&instance).or_else(|| like.as_deref().and_then(named))
            });
            let in_place = workload.is_some_and(|w| {
                sharding.in_place.is_some()
                    && if prediction.pipelined { w.parts_in_place_pipelined } else { w.parts_in_place }
            });
            if !in_place {
                prediction.total_s += W::host_bytes(&part_of(range)).unwrap_or(0) as f64 * per_byte;
            }
        }
    }
    slowdowns
}

/// The groups worth showing beside the devices alone, from the devices' predictions at the whole size: the fastest
/// GPU kind `gpus` times over (when `gpus` ≥ 2), the CPU with that GPU, and the CPU with all `gpus` of them.
pub fn candidate_groups(predictions: &[Prediction], gpus: usize) -> Vec<Vec<DeviceLabel>> {
    let fastest = |gpu: bool| {
        predictions.iter().filter(|p| p.is_gpu == gpu).min_by(|a, b| a.total_s.total_cmp(&b.total_s)).map(|p| &p.device)
    };
    let (Some(cpu), Some(gpu)) = (fastest(false), fastest(true)) else {
        return match fastest(true) {
            Some(gpu) if gpus >= 2 => vec![vec![gpu.clone(); gpus]],
            _ => Vec::new(),
        };
    };
    let mut groups = Vec::new();
    if gpus >= 2 {
        groups.push(vec![gpu.clone(); gpus]);
    }
    groups.push(vec![cpu.clone(), gpu.clone()]);
    if gpus >= 2 {
        groups.push(std::iter::once(cpu.clone()).chain(vec![gpu.clone(); gpus]).collect());
    }
    groups
}

/// The fastest device set for a piece of work: one device alone or a group, by the model ([`choose_set`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SetChoice {
    /// The set's predicted run: one member with everything where a device alone is fastest.
    pub prediction: GroupPrediction,
    /// The fastest device alone, for comparison.
    pub alone: Prediction,
    /// Why, in words: the set's predicted time against the fastest device alone, a toss-up where they are within
    /// the model's error.
    pub reason: String,
}

/// The fastest set for `W` at `params` among the devices alone and the groups [`candidate_groups`] forms with `gpus`
/// GPUs of the fastest kind, by `auto`'s model; `None` without a model that knows the workload.
pub fn choose_set<W: DeviceWorkload>(
    auto: &Auto,
    params: &W::Params,
    placement: Placement,
    gpus: usize,
) -> Option<SetChoice> {
    let (predictions, _) = auto.predict::<W>(params, placement)?;
    let alone = predictions.iter().min_by(|a, b| a.total_s.total_cmp(&b.total_s))?.clone();
    let single = GroupPrediction {
        members: vec![MemberPrediction {
            device: alone.device.clone(),
            fraction: 1.0,
            prediction: Some(alone.clone()),
        }],
        total_s: alone.total_s,
        slowdowns: None,
    };
    let fastest = candidate_groups(&predictions, gpus)
        .iter()
        .filter_map(|members| predict_group::<W>(auto, params, placement, members))
        .filter(|group| group.members.iter().filter(|m| m.fraction > 0.0).count() > 1)
        .chain(std::iter::once(single))
        .min_by(|a, b| a.total_s.total_cmp(&b.total_s))?;
    let time = |s: f64| crate::measure::duration(std::time::Duration::from_secs_f64(s));
    let margin = auto.toss_up_margin();
    let reason = if fastest.members.len() == 1 {
        format!("{} alone is predicted fastest ({}); no group is predicted faster", alone.device, time(alone.total_s))
    } else if fastest.total_s * (1.0 + margin) >= alone.total_s {
        format!(
            "{} predicted {} against {} on {} alone: a toss-up, within the model's error ({:.0}%)",
            fastest.name(),
            time(fastest.total_s),
            time(alone.total_s),
            alone.device,
            100.0 * margin
        )
    } else {
        format!(
            "{} predicted {} against {} on {} alone ({:.2}x), shares {}",
            fastest.name(),
            time(fastest.total_s),
            time(alone.total_s),
            alone.device,
            alone.total_s / fastest.total_s.max(1e-12),
            fastest.shares()
        )
    };
    Some(SetChoice { prediction: fastest, alone, reason })
}

/// How many devices of `device`'s kind this machine has, for the groups a set may use: every CUDA GPU, every wgpu
/// adapter, one CPU.
pub fn devices_of_kind(device: &crate::Device) -> usize {
    DeviceGroup::parse(&format!("{}:*", device.kind())).map_or(1, |specs| specs.len().max(1))
}

/// Runs `W` on `input` (data on the host, result wanted there) on the fastest set the model predicts
/// ([`choose_set`], with every GPU of the fastest kind this machine has): a device alone, or a group of the opened
/// devices with the predicted shares. Without a model, the device [`crate::choose::auto::run`] chooses.
pub fn run_on_fastest_set<W: DeviceWorkload>(input: &W::Input) -> Result<(W::Output, Option<SetChoice>)> {
    run_on_fastest_set_with::<W>(crate::choose::auto::global()?, input)
}

/// [`run_on_fastest_set`] with this `auto`'s devices and model.
pub fn run_on_fastest_set_with<W: DeviceWorkload>(
    auto: &Auto,
    input: &W::Input,
) -> Result<(W::Output, Option<SetChoice>)> {
    let params = W::params(input);
    let gpus = auto.devices.iter().filter(|d| d.kind().is_gpu()).map(devices_of_kind).max().unwrap_or(0);
    let alone = |choice: Option<SetChoice>| -> Result<(W::Output, Option<SetChoice>)> {
        let chosen = auto.decide::<W>(&params, Placement::Host, Some(input))?;
        Ok((chosen.device.run::<W>(chosen.variant, input)?, choice))
    };
    let Some(choice) = choose_set::<W>(auto, &params, Placement::Host, gpus) else { return alone(None) };
    if choice.prediction.members.len() == 1 {
        return alone(Some(choice));
    }
    let (members, shares) = open_set(auto, &choice.prediction)?;
    let output = DeviceGroup::new(members)?.run::<W>(input, &shares)?.output;
    Ok((output, Some(choice)))
}

/// The devices of a predicted set and their shares: the opened device of each label, and for a label given k times
/// the first k devices of its kind, each through the path its prediction took (a member predicted pipelined opens
/// pipelined), so that the set runs as it was predicted.
pub fn open_set(auto: &Auto, set: &GroupPrediction) -> Result<(Vec<crate::Device>, Vec<f64>)> {
    let mut members = Vec::with_capacity(set.members.len());
    let mut shares = Vec::with_capacity(members.capacity());
    for (i, member) in set.members.iter().enumerate() {
        let opened = auto.devices.iter().find(|d| d.label() == member.device).ok_or_else(|| {
            Error::invalid(format!("the model's device {} is not among the devices opened here", member.device))
        })?;
        let pipelined = member.prediction.as_ref().is_some_and(|p| p.pipelined);
        let nth = set.members[..i].iter().filter(|m| m.device == member.device).count();
        let device = match (nth, pipelined) {
            (0, false) => opened.clone(),
            (0, true) => auto.pipelined.iter().find(|d| d.label() == member.device).unwrap_or(opened).clone(),
            _ => {
                let specs = DeviceGroup::parse(&format!("{}:*", opened.kind()))?;
                let spec = specs.get(nth).cloned().ok_or_else(|| {
                    Error::invalid(format!("the set has {} {} devices, this machine fewer", nth + 1, opened.kind()))
                })?;
                let memory = if pipelined { crate::HostMemory::Pipelined } else { crate::HostMemory::Pageable };
                crate::Device::open_with_host_memory(spec, memory)?
            }
        };
        members.push(device);
        shares.push(member.fraction);
    }
    Ok((members, shares))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;
    use crate::model::fit::{CostFit, Curve};
    use crate::model::{DeviceModel, Model, VariantModel, WorkloadModel};
    use gpuworthy_core::BackendKind;
    use gpuworthy_core::workloads::{Len, Square};

    /// A model of a CPU and a GPU that square at fixed rates plus a fixed cost: the CPU at 1 ns an element, the GPU
    /// at 0.25 ns plus 1 ms.
    fn model() -> Model {
        let device = |label: &str, is_gpu: bool, per_byte_s: f64, fixed_s: f64| DeviceModel {
            label: DeviceLabel::named(label),
            backend: if is_gpu { BackendKind::Cuda } else { BackendKind::Cpu },
            is_gpu,
            workloads: vec![WorkloadModel::kernels_only(
                "square",
                vec![VariantModel {
                    variant: "v".into(),
                    full_precision: true,
                    precision: None,
                    kernel: Curve {
                        fit: CostFit { fixed_s, per_byte_s, per_flop_s: 0.0 },
                        points: Vec::new(),
                        traffic: Vec::new(),
                    },
                }],
            )],
            stream_s_per_byte: None,
            cache_bytes: None,
        };
        Model {
            rates: Vec::new(),
            error: None,
            contention: Vec::new(),
            host_copy_s_per_byte: None,
            allowed: Vec::new(),
            devices: vec![device("cpu", false, 1e-9 / 8.0, 0.0), device("gpu", true, 0.25e-9 / 8.0, 1e-3)],
        }
    }

    #[test]
    fn a_group_balances_its_members_and_is_its_slowest_members_time() {
        let auto = Auto::with_model(vec![Device::cpu().unwrap()], model());
        let params = Len(1 << 26);
        let (cpu, gpu) = (DeviceLabel::named("cpu"), DeviceLabel::named("gpu"));
        let two = predict_group::<Square>(&auto, &params, Placement::Resident, &[gpu.clone(), gpu.clone()]).unwrap();
        assert_eq!(two.name(), "gpu×2");
        let alone = predict_member::<Square>(&auto, &params, Placement::Resident, &gpu).unwrap().total_s;
        // Two GPUs each take half: the per-element part halves, the fixed 1 ms stays.
        assert!((two.total_s - (alone - 1e-3) / 2.0 - 1e-3).abs() < 1e-6, "{} vs {alone}", two.total_s);
        assert_eq!(two.shares(), "50% / 50%");
        let mixed = predict_group::<Square>(&auto, &params, Placement::Resident, &[cpu.clone(), gpu.clone()]).unwrap();
        let times: Vec<f64> = mixed.members.iter().map(|m| m.prediction.as_ref().unwrap().total_s).collect();
        assert!((times[0] - times[1]).abs() < 0.02 * times[1], "balanced: {times:?} at {}", mixed.shares());
        assert!(mixed.total_s < alone, "the CPU's part makes the GPU's shorter: {} vs {alone}", mixed.total_s);
        assert!(mixed.members[0].fraction < 0.3 && mixed.members[0].fraction > 0.05, "{}", mixed.shares());
        // Where the GPU's fixed millisecond is most of its time, any part for it makes the group slower than the
        // CPU alone: the CPU takes it all.
        let small = predict_group::<Square>(&auto, &Len(1 << 10), Placement::Resident, &[cpu.clone(), gpu]).unwrap();
        assert_eq!(small.shares(), "100% / 0%");
        let cpu_only = predict_group::<Square>(&auto, &Len(1 << 10), Placement::Resident, &[cpu]).unwrap();
        assert_eq!(cpu_only.shares(), "100%");
    }

    /// From the host, a set's members are slowed as calibration measured the host slowing them: two GPUs whose
    /// transfers each took 1.8x as long together gain little over one, and a CPU whose streaming took 1.5x as long
    /// beside the GPU is given less of the work. Resident data is not slowed.
    #[test]
    fn from_the_host_members_are_slowed_as_the_host_slowed_them() {
        use crate::model::contention::{HostContention, SetContention};
        let mut model = model();
        let link = Curve { fit: CostFit { per_byte_s: 1.0 / 10e9, ..CostFit::default() }, ..Curve::default() };
        model.devices[1].workloads[0].upload = link.clone();
        model.devices[1].workloads[0].download = link;
        let plain = Auto::with_model(vec![Device::cpu().unwrap()], model.clone());
        let set = |gpus, with_cpu, gpu_slowdown, cpu_slowdown| SetContention {
            gpus,
            with_cpu,
            gpu_slowdown,
            cpu_slowdown,
            set_s: 0.0,
        };
        model.contention = vec![HostContention {
            gpu: DeviceLabel::named("gpu"),
            gpus_present: 2,
            elements: 1 << 24,
            sets: vec![set(2, false, 1.8, None), set(1, true, 1.2, Some(1.5))],
        }];
        let slowed = Auto::with_model(vec![Device::cpu().unwrap()], model);
        let params = Len(1 << 26);
        let (cpu, gpu) = (DeviceLabel::named("cpu"), DeviceLabel::named("gpu"));
        let alone = predict_member::<Square>(&plain, &params, Placement::Host, &gpu).unwrap().total_s;
        let two = |auto: &Auto| predict_group::<Square>(auto, &params, Placement::Host, &[gpu.clone(), gpu.clone()]);
        let (free, shared) = (two(&plain).unwrap(), two(&slowed).unwrap());
        assert!(free.slowdowns.is_none() && alone / free.total_s > 1.9, "{} vs {alone}", free.total_s);
        assert_eq!(shared.slowdowns.as_ref().map(|s| s.gpu), Some(1.8));
        // Half the transfers each, 1.8x as slow: about 2 / 1.8 the speed of one, a little more for the kernels.
        let ratio = alone / shared.total_s;
        assert!(ratio > 2.0 / 1.8 && ratio < 1.25, "{} vs {alone}", shared.total_s);
        let mixed = |auto: &Auto| predict_group::<Square>(auto, &params, Placement::Host, &[cpu.clone(), gpu.clone()]);
        let (free, shared) = (mixed(&plain).unwrap(), mixed(&slowed).unwrap());
        let cpu_share = |g: &GroupPrediction| g.members[0].fraction;
        assert!(cpu_share(&shared) > 0.0 && cpu_share(&shared) < cpu_share(&free) - 0.03, "{}", shared.shares());
        assert!(shared.total_s > free.total_s);
        let resident = predict_group::<Square>(&slowed, &params, Placement::Resident, &[gpu.clone(), gpu.clone()]);
        assert!(resident.unwrap().slowdowns.is_none());
    }

    /// A member that cuts its part and copies its output in is charged the host's copies; one that reads its part in
    /// place is not; nor is a device alone.
    #[test]
    fn a_member_that_cuts_its_part_is_charged_the_hosts_copies() {
        let mut model = model();
        model.host_copy_s_per_byte = Some(1.0 / 2e9);
        let gpu = DeviceLabel::named("gpu");
        let params = Len(1 << 26);
        let two = |model: &Model| {
            let auto = Auto::with_model(vec![Device::cpu().unwrap()], model.clone());
            predict_group::<Square>(&auto, &params, Placement::Host, &[gpu.clone(), gpu.clone()]).unwrap()
        };
        let mut reading = model.clone();
        reading.devices[1].workloads[0].parts_in_place = true;
        let in_place = two(&reading);
        assert_eq!(in_place.shares(), "50% / 50%");
        // Half of 2^26 elements in and out (256 MiB) at 2 GB/s is 134 ms more for each member that cuts, against
        // 17.8 ms for one GPU alone: the split no longer pays, and one GPU takes it all.
        let cutting = two(&model);
        let auto = Auto::with_model(vec![Device::cpu().unwrap()], model);
        let alone = predict_member::<Square>(&auto, &params, Placement::Host, &gpu).unwrap().total_s;
        assert_eq!((cutting.shares().as_str(), cutting.total_s), ("100% / 0%", alone));
        assert!(in_place.total_s < 0.6 * alone, "{} against {alone}", in_place.total_s);
        let half = predict_group::<Square>(&auto, &Len(1 << 25), Placement::Host, std::slice::from_ref(&gpu)).unwrap();
        assert_eq!(
            half.total_s,
            predict_member::<Square>(&auto, &Len(1 << 25), Placement::Host, &gpu).unwrap().total_s
        );
    }

    #[test]
    fn the_fastest_set_is_a_group_only_where_one_is_predicted_faster() {
        let auto = Auto::with_model(vec![Device::cpu().unwrap()], model());
        let large = choose_set::<Square>(&auto, &Len(1 << 26), Placement::Resident, 2).unwrap();
        assert_eq!(large.prediction.name(), "cpu+gpu×2", "{}", large.reason);
        assert!(large.prediction.total_s < large.alone.total_s && large.reason.contains("shares"), "{}", large.reason);
        let small = choose_set::<Square>(&auto, &Len(1 << 10), Placement::Resident, 2).unwrap();
        assert_eq!(small.prediction.name(), "cpu", "{}", small.reason);
        assert!(small.reason.contains("no group is predicted faster"), "{}", small.reason);
    }

    /// The fastest set runs and its result is the reference's; a set whose device is not opened here is an error
    /// naming it.
    #[test]
    fn the_fastest_set_runs_or_names_the_device_it_lacks() {
        use gpuworthy_core::Workload;
        let cpu = Device::cpu().unwrap();
        let mut model = model();
        model.devices[0].label = cpu.label();
        let auto = Auto::with_model(vec![cpu], model);
        let small = Square::generate(&Len(1 << 10), 1).unwrap();
        let (output, choice) = run_on_fastest_set_with::<Square>(&auto, &small).unwrap();
        assert_eq!(output, Square::reference(&small).unwrap());
        assert_eq!(choice.unwrap().prediction.members.len(), 1);
        let large = Square::generate(&Len(1 << 24), 1).unwrap();
        let err = run_on_fastest_set_with::<Square>(&auto, &large).unwrap_err().to_string();
        assert!(err.contains("gpu") && err.contains("not among the devices opened"), "{err}");
    }

    #[test]
    fn candidates_are_the_gpus_together_and_with_the_cpu() {
        let p = |label: &str, is_gpu: bool, total_s: f64| Prediction {
            device: DeviceLabel::named(label),
            is_gpu,
            variant: "v".into(),
            upload_s: 0.0,
            launch_s: 0.0,
            kernel_s: total_s,
            download_s: 0.0,
            total_s,
            pipelined: false,
        };
        let predictions = [p("cpu", false, 3.0), p("cuda", true, 1.0), p("wgpu", true, 2.0)];
        let names = |gpus| -> Vec<String> {
            candidate_groups(&predictions, gpus)
                .iter()
                .map(|g| g.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("+"))
                .collect()
        };
        assert_eq!(names(1), ["cpu+cuda"]);
        assert_eq!(names(2), ["cuda+cuda", "cpu+cuda", "cpu+cuda+cuda"]);
    }
}
