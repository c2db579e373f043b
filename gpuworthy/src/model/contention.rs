//! Members slowing one another: how much a device's run from the host slows when other devices of the machine move
//! data through the same host at once, measured by calibration and applied to a group's prediction.
//!
//! A group's members each have their own link to the host, but not their own host: every GPU's copies go through the
//! same memory controllers (and, from pageable memory, through staging copies on the same cores), and the CPU's own
//! streaming kernels read that memory too. On a two-H200 host, square 2^26 from the host ran 1.23x faster on two GPUs
//! than on one where a model of independent links predicted 1.94x, and the CPU beside a GPU made the pair slower
//! than the CPU alone (measured: docs/results/nvidia-h200-x2/groups/README.md). No per-link figure predicts that, so
//! calibration measures it the way a group meets it: each member of a set runs its equal part of a memory-bound
//! workload (square, data on the host) alone, then all members at once, and a member's slowdown is its time in the
//! set over its time alone ([`measure_contention`]).
//!
//! The slowdowns apply only where they act ([`Slowdowns::apply`]): to a GPU member's time beyond its kernel (the
//! transfers and their staging, which a GPU's own memory does not share), and to the part of a CPU member's kernel
//! that streams memory (a compute-bound CPU kernel barely notices). A set with more GPUs than the machine has is a
//! what-if: its GPUs share the aggregate the largest measured set reached (the host carries no more), and it says so.

use std::time::Duration;

use gpuworthy_core::workloads::{Len, Square};
use gpuworthy_core::{Backend, BackendKind, Workload};
use serde::{Deserialize, Serialize};

use crate::Device;
use crate::HostMemory;
use crate::device::DeviceLabel;
use crate::device::group::DeviceGroup;
use crate::model::sweep::Progress;
use crate::model::{DeviceModel, Prediction};

/// The elements of the square each set runs from the host: 64 MiB in and 64 MiB out, large enough that the transfers
/// dominate a GPU's run and the CPU's square streams past its caches, small enough that every set of a two-GPU host
/// is measured in a few seconds.
pub const CONTENTION_ELEMENTS: usize = 1 << 24;

/// Timed runs of each set and of each member alone (after one untimed): the median is kept.
pub const CONTENTION_REPEATS: usize = 5;

/// The most GPUs of a kind measured together; more are predicted as what-ifs.
pub const CONTENTION_MAX_GPUS: usize = 8;

/// One set's measured slowdowns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetContention {
    /// GPUs of the kind in the set.
    pub gpus: usize,
    /// Whether the CPU was a member.
    pub with_cpu: bool,
    /// The GPU members' time in the set over their time alone on the same part (their mean); 1 with no GPU.
    pub gpu_slowdown: f64,
    /// The CPU member's time in the set over its time alone on the same part, where it was a member.
    pub cpu_slowdown: Option<f64>,
    /// The set's median run of the whole square, seconds.
    pub set_s: f64,
}

/// How the host slowed the members of each set of one GPU kind with the CPU, as calibration measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostContention {
    /// The GPU kind's label (`cuda`, `wgpu`).
    pub gpu: DeviceLabel,
    /// How many GPUs of the kind the machine has.
    pub gpus_present: usize,
    /// The elements of the square measured.
    pub elements: u64,
    /// Each set measured.
    pub sets: Vec<SetContention>,
}

/// The slowdowns that apply to one group's members, and where they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Slowdowns {
    /// A GPU member's time beyond its kernel is multiplied by this.
    pub gpu: f64,
    /// A CPU member's streaming is multiplied by this.
    pub cpu: f64,
    /// Whether the set had more GPUs than were measured together: the GPUs then share the largest set's aggregate.
    pub extrapolated_from: Option<usize>,
}

impl Slowdowns {
    /// No slowdown: a member alone.
    pub const NONE: Slowdowns = Slowdowns { gpu: 1.0, cpu: 1.0, extrapolated_from: None };

    /// `prediction` (a member's, for its part, data on the host) slowed as a member of the set: a GPU's (any device
    /// of a backend other than the CPU's, `device` says) time beyond its kernel by [`Slowdowns::gpu`]; the CPU's
    /// kernel, for as long as it streams `bytes` at `device`'s streaming rate (all of it where that rate is not
    /// known), by [`Slowdowns::cpu`].
    pub fn apply(&self, prediction: &Prediction, device: Option<&DeviceModel>, bytes: u64) -> Prediction {
        let mut slowed = prediction.clone();
        if device.map_or(prediction.is_gpu, |d| d.backend != BackendKind::Cpu) {
            let beyond = (prediction.total_s - prediction.kernel_s).max(0.0);
            slowed.upload_s *= self.gpu;
            slowed.download_s *= self.gpu;
            slowed.total_s = prediction.kernel_s + beyond * self.gpu;
        } else {
            let streaming = device
                .and_then(|d| d.stream_s_per_byte)
                .map_or(prediction.kernel_s, |per_byte| (per_byte * bytes as f64).min(prediction.kernel_s));
            let extra = streaming * (self.cpu - 1.0).max(0.0);
            slowed.kernel_s += extra;
            slowed.total_s += extra;
        }
        slowed
    }
}

impl HostContention {
    /// The slowdowns for a set of `gpus` GPUs of this kind, with the CPU or not: measured where that set was, a
    /// what-if past the largest set measured (its GPUs share that set's aggregate transfer rate, the CPU slowed as
    /// there), `None` where the set was not measured and is not larger than every one that was. A member is slowed
    /// at least as much as in any smaller set (fewer GPUs, or the same without the CPU): another member's traffic
    /// never speeds its own, and a set measured at lighter loads each (three members sharing the square) must not
    /// predict the GPUs faster beside the CPU than without it.
    pub fn slowdowns(&self, gpus: usize, with_cpu: bool) -> Option<Slowdowns> {
        let own = self.own_slowdowns(gpus, with_cpu)?;
        let mut slowdowns = own.clone();
        for cpu in [false, with_cpu] {
            for fewer in 1..=gpus {
                if let Some(smaller) = self.own_slowdowns(fewer, cpu) {
                    slowdowns.gpu = slowdowns.gpu.max(smaller.gpu);
                    slowdowns.cpu = slowdowns.cpu.max(smaller.cpu);
                }
            }
        }
        Some(slowdowns)
    }

    /// [`HostContention::slowdowns`] from the set itself (or the largest measured, past it) alone.
    fn own_slowdowns(&self, gpus: usize, with_cpu: bool) -> Option<Slowdowns> {
        if gpus + usize::from(with_cpu) <= 1 {
            return Some(Slowdowns::NONE);
        }
        if let Some(set) = self.sets.iter().find(|s| s.gpus == gpus && s.with_cpu == with_cpu) {
            return Some(Slowdowns {
                gpu: set.gpu_slowdown,
                cpu: set.cpu_slowdown.unwrap_or(1.0),
                extrapolated_from: None,
            });
        }
        let largest = self.sets.iter().filter(|s| s.with_cpu == with_cpu).max_by_key(|s| s.gpus)?;
        (gpus > largest.gpus).then(|| Slowdowns {
            gpu: largest.gpu_slowdown * gpus as f64 / largest.gpus.max(1) as f64,
            cpu: largest.cpu_slowdown.unwrap_or(1.0),
            extrapolated_from: Some(largest.gpus),
        })
    }

    /// The measurements in words, one set a line (`cuda×2: each GPU's transfers 1.52x slower`).
    pub fn describe(&self) -> Vec<String> {
        self.sets
            .iter()
            .map(|set| {
                let name = match (set.with_cpu, set.gpus) {
                    (true, 1) => format!("cpu+{}", self.gpu),
                    (true, n) => format!("cpu+{}×{n}", self.gpu),
                    (false, n) => format!("{}×{n}", self.gpu),
                };
                let cpu = set.cpu_slowdown.map_or_else(String::new, |c| format!(", the CPU's square {c:.2}x slower"));
                format!("{name}: each GPU's transfers {:.2}x slower{cpu}", set.gpu_slowdown)
            })
            .collect()
    }
}

/// The bytes [`measure_host_copy`] copies: 64 MiB, past any host's caches.
pub const HOST_COPY_BYTES: usize = 64 << 20;

/// Seconds per byte this host takes to copy into memory it has just allocated, as a group member's cut of its part
/// and the copy of its output into place do (fresh memory: the system maps each page in as it is first written, which
/// on a 32-core host costs more than the copy itself). The median of three copies after one untimed; `None` where the
/// source cannot be allocated.
pub fn measure_host_copy() -> Option<f64> {
    let source = Square::generate(&Len(HOST_COPY_BYTES / 4), 7).ok()?;
    let mut times = Vec::with_capacity(3);
    for run in 0..4 {
        let started = std::time::Instant::now();
        let copy = std::hint::black_box(source.to_vec());
        let took = started.elapsed();
        drop(copy);
        if run > 0 {
            times.push(took);
        }
    }
    Some(median(times).as_secs_f64() / HOST_COPY_BYTES as f64)
}

/// The sets measured for one GPU kind of `gpus` devices, with the CPU where there is one: every count of GPUs from
/// two alone, and from one with the CPU.
fn sets_to_measure(gpus: usize, with_cpu: bool) -> Vec<(usize, bool)> {
    let gpus = gpus.min(CONTENTION_MAX_GPUS);
    let alone = (2..=gpus).map(|g| (g, false));
    let beside = (1..=gpus).filter(move |_| with_cpu).map(|g| (g, true));
    alone.chain(beside).collect()
}

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Each member's median time running its part (`shares`) of `input` in `group`, and the group's median time, over
/// [`CONTENTION_REPEATS`] runs after one untimed.
fn member_times(
    group: &DeviceGroup,
    input: &<Square as Workload>::Input,
    shares: &[f64],
) -> gpuworthy_core::Result<(Vec<Duration>, Duration)> {
    let mut kept = None;
    let mut per_member = vec![Vec::new(); group.members().len()];
    let mut whole = Vec::new();
    for run in 0..=CONTENTION_REPEATS {
        let measured = group.run_reusing::<Square>(input, shares, &mut kept)?;
        if run > 0 {
            for member in &measured.members {
                per_member[member.member].push(member.time);
            }
            whole.push(measured.parallel + measured.join);
        }
        kept = Some(measured.output);
    }
    Ok((per_member.into_iter().map(median).collect(), median(whole)))
}

/// Measures how the host slows each set of `devices`' GPUs (every device of each kind present other than the CPU
/// backend, through its pipelined path where it has one, as a group's run from the host takes it) with and without
/// the CPU: one [`HostContention`] per such kind that forms a set. A set that cannot run (a member that fails to open or run) is
/// left out and said in the progress; nothing here fails the calibration.
pub fn measure_contention(devices: &[Device], progress: &dyn Progress) -> Vec<HostContention> {
    let cpu = devices.iter().find(|d| d.kind() == BackendKind::Cpu);
    let Ok(input) = Square::generate(&Len(CONTENTION_ELEMENTS), 7) else { return Vec::new() };
    let mut measured = Vec::new();
    // Every device of a backend other than the CPU's: the GPUs, and a CPU adapter (lavapipe), whose copies cross the
    // same host memory as a GPU's do.
    for gpu in devices.iter().filter(|d| d.kind() != BackendKind::Cpu && d.supports::<Square>()) {
        let Ok(specs) = DeviceGroup::parse(&format!("{}:*", gpu.kind())) else { continue };
        let sets = sets_to_measure(specs.len(), cpu.is_some());
        if sets.is_empty() {
            continue;
        }
        progress.plan(sets.len() as u64);
        let memory =
            if HostMemory::Pipelined.available_on(gpu.kind()) { HostMemory::Pipelined } else { HostMemory::Pageable };
        let opened: Vec<Device> = specs
            .iter()
            .take(CONTENTION_MAX_GPUS)
            .filter_map(|spec| Device::open_with_host_memory(spec.clone(), memory).ok())
            .collect();
        let mut contention = HostContention {
            gpu: gpu.label(),
            gpus_present: specs.len(),
            elements: CONTENTION_ELEMENTS as u64,
            sets: Vec::new(),
        };
        for (gpus, with_cpu) in sets {
            progress.now_measuring(format!(
                "the host's contention: {}{}×{gpus} at once",
                if with_cpu { "cpu+" } else { "" },
                gpu.kind()
            ));
            match measure_set(cpu.filter(|_| with_cpu), opened.get(..gpus), &input) {
                Some((gpu_slowdown, cpu_slowdown, set_s)) => {
                    contention.sets.push(SetContention { gpus, with_cpu, gpu_slowdown, cpu_slowdown, set_s });
                }
                None => progress.now_measuring(format!("the host's contention: {}×{gpus} could not run", gpu.kind())),
            }
            progress.advance(1);
        }
        if !contention.sets.is_empty() {
            measured.push(contention);
        }
    }
    measured
}

/// One set's slowdowns `(GPUs' mean, CPU's, the set's median time)`: each member alone on its equal part, then all at
/// once. `None` where the set has fewer GPUs than asked or a run fails.
fn measure_set(
    cpu: Option<&Device>,
    gpus: Option<&[Device]>,
    input: &<Square as Workload>::Input,
) -> Option<(f64, Option<f64>, f64)> {
    let members: Vec<Device> = cpu.into_iter().chain(gpus?).cloned().collect();
    let shares = vec![1.0 / members.len() as f64; members.len()];
    let group = DeviceGroup::new(members.clone()).ok()?;
    let (together, whole) = member_times(&group, input, &shares).ok()?;
    // Each member alone on the part it ran in the set: the same length, so the same work.
    let part = Square::generate(&Len(input.len() / members.len()), 7).ok()?;
    let mut slowdowns = Vec::with_capacity(members.len());
    for (member, time) in members.into_iter().zip(together) {
        let is_gpu = member.kind() != BackendKind::Cpu;
        let (alone, _) = member_times(&DeviceGroup::new(vec![member]).ok()?, &part, &[1.0]).ok()?;
        slowdowns.push((is_gpu, time.as_secs_f64() / alone[0].as_secs_f64().max(1e-9)));
    }
    let gpu: Vec<f64> = slowdowns.iter().filter(|s| s.0).map(|s| s.1).collect();
    let gpu_slowdown = if gpu.is_empty() { 1.0 } else { gpu.iter().sum::<f64>() / gpu.len() as f64 };
    let cpu_slowdown = slowdowns.iter().find(|s| !s.0).map(|s| s.1);
    Some((gpu_slowdown.max(1.0), cpu_slowdown.map(|c| c.max(1.0)), whole.as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(gpus: usize, with_cpu: bool, gpu_slowdown: f64, cpu_slowdown: Option<f64>) -> SetContention {
        SetContention { gpus, with_cpu, gpu_slowdown, cpu_slowdown, set_s: 0.01 }
    }

    fn contention() -> HostContention {
        HostContention {
            gpu: DeviceLabel::named("cuda"),
            gpus_present: 2,
            elements: 1 << 24,
            sets: vec![set(2, false, 1.5, None), set(1, true, 1.2, Some(1.8)), set(2, true, 1.7, Some(2.0))],
        }
    }

    #[test]
    fn measured_sets_give_their_own_slowdowns_and_larger_ones_share_the_largest_aggregate() {
        let c = contention();
        assert_eq!(c.slowdowns(1, false), Some(Slowdowns::NONE));
        assert_eq!(c.slowdowns(0, true), Some(Slowdowns::NONE));
        assert_eq!(c.slowdowns(2, false).unwrap().gpu, 1.5);
        let beside = c.slowdowns(1, true).unwrap();
        assert_eq!((beside.gpu, beside.cpu, beside.extrapolated_from), (1.2, 1.8, None));
        // Four GPUs share what two carried together: each twice as slow again.
        let four = c.slowdowns(4, false).unwrap();
        assert_eq!((four.gpu, four.extrapolated_from), (3.0, Some(2)));
        assert_eq!(c.slowdowns(4, true).unwrap().cpu, 2.0);
        // A set smaller than the largest measured but not measured itself is not guessed.
        let only_large = HostContention { sets: vec![c.sets[0].clone()], ..c.clone() };
        assert_eq!(only_large.slowdowns(1, true), None);
        // Measured lighter beside the CPU (each GPU a third of the square, not a half), the GPUs are still slowed at
        // least as without it.
        let lighter = HostContention {
            sets: vec![set(2, false, 1.5, None), set(1, true, 1.1, Some(2.0)), set(2, true, 1.2, Some(3.0))],
            ..c.clone()
        };
        let both = lighter.slowdowns(2, true).unwrap();
        assert_eq!((both.gpu, both.cpu), (1.5, 3.0));
        assert_eq!(lighter.slowdowns(1, true).unwrap().gpu, 1.1);
        assert!(c.describe()[1].starts_with("cpu+cuda: each GPU's transfers 1.20x slower, the CPU's square 1.80x"));
    }

    #[test]
    fn a_gpu_is_slowed_beyond_its_kernel_and_the_cpu_while_it_streams() {
        let prediction = |is_gpu: bool| Prediction {
            device: DeviceLabel::named(if is_gpu { "cuda" } else { "cpu" }),
            is_gpu,
            variant: "vec4".into(),
            upload_s: 0.002,
            launch_s: 0.000_01,
            kernel_s: 0.001,
            download_s: 0.003,
            total_s: 0.006,
            pipelined: false,
        };
        let slow = Slowdowns { gpu: 2.0, cpu: 1.5, extrapolated_from: None };
        let gpu = slow.apply(&prediction(true), None, 1 << 20);
        assert!((gpu.total_s - (0.001 + 0.005 * 2.0)).abs() < 1e-12, "{gpu:?}");
        assert_eq!(gpu.kernel_s, 0.001);
        // A CPU kernel of 6 ms that streams for 2 ms: only those 2 ms slow down.
        let cpu_alone = Prediction { upload_s: 0.0, download_s: 0.0, kernel_s: 0.006, ..prediction(false) };
        let device = DeviceModel {
            label: DeviceLabel::named("cpu"),
            backend: BackendKind::Cpu,
            is_gpu: false,
            workloads: Vec::new(),
            stream_s_per_byte: Some(0.002 / (1u64 << 20) as f64),
            cache_bytes: None,
        };
        let cpu = slow.apply(&cpu_alone, Some(&device), 1 << 20);
        assert!((cpu.total_s - 0.007).abs() < 1e-12, "{cpu:?}");
        // Without a streaming rate, all of it is taken as streaming.
        assert!((slow.apply(&cpu_alone, None, 1 << 20).total_s - 0.009).abs() < 1e-12);
        assert_eq!(Slowdowns::NONE.apply(&prediction(true), None, 0), prediction(true));
    }

    #[test]
    fn sets_measured_are_every_count_of_gpus_alone_from_two_and_beside_the_cpu_from_one() {
        assert_eq!(sets_to_measure(2, true), [(2, false), (1, true), (2, true)]);
        assert_eq!(sets_to_measure(1, true), [(1, true)]);
        assert_eq!(sets_to_measure(1, false), []);
        assert_eq!(sets_to_measure(3, false), [(2, false), (3, false)]);
        assert_eq!(sets_to_measure(20, false).len(), CONTENTION_MAX_GPUS - 1);
    }
}
