//! Device groups: one computation split over several devices at once (`cpu+wgpu`, `cuda:0,1`, `cuda:*`,
//! `cpu+cuda:*`), each member running its part with its own best variant on a thread of its own, and the parts
//! joined by the workload's own join ([`gpuworthy_core::shard`]).
//!
//! A group is a list of opened [`Device`]s beside the single device rather than a fifth kind of it, because what it
//! adds (a share per member, a split, a join) belongs to the run, not to a backend: every member stays the device it
//! is, with its variants, limits and errors. The split follows shares, which [`DeviceGroup::measure_shares`] takes
//! from a timed run of each member: equal parts would leave the faster member idle while the slower finishes.
//!
//! Two ways to run: [`DeviceGroup::run`] from the host's data to the host's output (each member cuts its own part on
//! its thread), and resident ([`DeviceGroup::upload`], [`DeviceGroup::launch`], [`DeviceGroup::download`]), where each
//! member's part stays on it between launches and a launch's time is its slowest member's kernel.
//!
//! A member that fails fails the run with its name; a partial result is never returned, and the parts already on
//! members are freed.

use std::ops::Range;
use std::time::{Duration, Instant};

use gpuworthy_core::{Backend, BackendKind, Error, Result, Workload};

use crate::HostMemory;
use crate::Resident;
use crate::device::spec::DeviceSpec;
use crate::device::{Device, DeviceLabel, DeviceWorkload};

/// Opened devices that run one computation together.
#[derive(Clone, Debug)]
pub struct DeviceGroup {
    members: Vec<Device>,
    /// How reports name each member: as written (`cuda:1`) when the group was opened from text, else its label, with
    /// its position where two members share a label.
    names: Vec<String>,
}

/// One member's part of a group's run.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRun {
    /// The member's position in the group.
    pub member: usize,
    /// The member's label.
    pub label: DeviceLabel,
    /// The variant it ran (its best for its part).
    pub variant: &'static str,
    /// The units of the work it took ([`gpuworthy_core::Sharding::unit`]).
    pub units: Range<usize>,
    /// Its run from the host's data to its part of the output, transfers included.
    pub time: Duration,
}

/// A group's run: the joined output, each member's part, and the phases the group adds.
#[derive(Debug, Clone)]
pub struct GroupRun<W: Workload> {
    /// The whole output.
    pub output: W::Output,
    /// Each member's part, in member order (a member whose share rounded to nothing ran nothing and is absent).
    pub members: Vec<MemberRun>,
    /// From the members' start to the last member's end, their cuts included: the slowest member decides it.
    pub parallel: Duration,
    /// The longest a member took to cut its part from the input on the host (the members cut at once, each on its
    /// thread, so this is the part of `parallel` the cuts took at most).
    pub split: Duration,
    /// Joining the parts' outputs into the whole, on the host, after every member finished.
    pub join: Duration,
    /// Whether the members wrote their parts straight into one whole output ([`gpuworthy_core::InPlace`]): then
    /// nothing is joined (`join` is zero), and a member whose backend reads the input where it lies cuts nothing
    /// either (`split` is zero; a member that cuts does so inside its own time).
    pub in_place: bool,
    /// In place, allocating the whole output and mapping its pages in, before the members start (part of
    /// `parallel`); zero otherwise.
    pub allocate: Duration,
}

/// Data uploaded to a group ([`DeviceGroup::upload`]): each member's part resident on it. Dropping it frees every
/// part.
pub struct GroupResident<W: Workload> {
    parts: Vec<MemberPart<W>>,
}

impl<W: Workload> GroupResident<W> {
    /// Each part's member (its position in the group), units and variant, in member order.
    pub fn parts(&self) -> Vec<(usize, Range<usize>, &'static str)> {
        self.parts.iter().map(|p| (p.member, p.units.clone(), p.variant)).collect()
    }

    /// Each part's member, variant and resident data, in member order (for a collective over the parts).
    #[cfg(feature = "cuda")]
    pub(crate) fn parts_mut(&mut self) -> Vec<(usize, &'static str, &mut Resident<W>)> {
        self.parts.iter_mut().map(|p| (p.member, p.variant, &mut p.resident)).collect()
    }
}

/// One member's resident part.
struct MemberPart<W: Workload> {
    member: usize,
    units: Range<usize>,
    variant: &'static str,
    resident: Resident<W>,
}

/// One launch over a group ([`DeviceGroup::launch`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupLaunch {
    /// From the first member's launch to the last member's end, on the host's clock.
    pub wall: Duration,
    /// Each member's kernel on its own device timer, by member position, in member order.
    pub kernels: Vec<(usize, Duration)>,
}

impl GroupLaunch {
    /// The slowest member's kernel: the group's kernel time.
    pub fn slowest(&self) -> Duration {
        self.kernels.iter().map(|(_, k)| *k).max().unwrap_or_default()
    }
}

/// `whole` (a workload's whole output, [`gpuworthy_core::InPlace::output`]) lent in one place per range of units, in
/// order; an error where the workload's split does not give one place per range.
fn places_in<'a, W: Workload>(
    in_place: &gpuworthy_core::InPlace<W>,
    input: &W::Input,
    whole: &'a mut W::Output,
    ranges: &[Range<usize>],
) -> Result<Vec<gpuworthy_core::PartOutput<'a>>> {
    let places = (in_place.split)(input, whole, ranges);
    if places.len() != ranges.len() {
        return Err(Error::invalid(format!(
            "{}: the output split into {} places for {} parts",
            W::NAME,
            places.len(),
            ranges.len()
        )));
    }
    Ok(places)
}

/// `work` done on a thread per item, all at once; the results in order, or the first error in item order (every
/// thread is waited for either way, so nothing runs on after an error is returned).
fn in_parallel<I: Send, T: Send>(items: Vec<I>, work: impl Fn(I) -> Result<T> + Sync) -> Result<Vec<T>> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items.into_iter().map(|item| scope.spawn(move || work(item))).collect();
        let results: Vec<Result<T>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::invalid("a member's thread panicked"))))
            .collect();
        results.into_iter().collect()
    })
}

impl DeviceGroup {
    /// The forms a group is written in.
    pub const FORMS: &'static str = "`cpu+wgpu`, `cuda:0,1`, `cuda:*` (every CUDA GPU), `wgpu:*`, `cpu+cuda:*`";

    /// Whether `text` names a group rather than one device: it joins devices with `+`, or lists several of one
    /// backend (`cuda:0,1`, `cuda:*`).
    pub fn is_group(text: &str) -> bool {
        text.contains('+') || text.contains(',') || text.contains('*')
    }

    /// The members `text` names, in order: `+` joins parts, and a part is a device (`cpu`, `cuda:1`, `wgpu`), a
    /// list of one backend's (`cuda:0,1`), or every device of a backend (`cuda:*`, `wgpu:*`). A device named twice
    /// is an error.
    pub fn parse(text: &str) -> Result<Vec<DeviceSpec>> {
        let mut specs = Vec::new();
        for part in text.split('+').map(str::trim) {
            if part.is_empty() {
                return Err(Error::invalid(format!("`{text}`: an empty member; a group is written {}", Self::FORMS)));
            }
            let (kind, detail) = match part.split_once(':') {
                Some((kind, detail)) => (kind.trim(), Some(detail.trim())),
                None => (part, None),
            };
            match detail {
                Some("*") => specs.extend(every_device(kind.parse()?)?),
                Some(list) if list.contains(',') => {
                    for item in list.split(',').map(str::trim) {
                        specs.push(format!("{kind}:{item}").parse()?);
                    }
                }
                _ => specs.push(part.parse()?),
            }
        }
        for (i, spec) in specs.iter().enumerate() {
            if specs[..i].contains(spec) {
                return Err(Error::invalid(format!("`{text}`: {spec} is named twice; each device is a member once")));
            }
        }
        Ok(specs)
    }

    /// Opens every member `text` names ([`DeviceGroup::parse`]); a member that cannot open is an error naming it.
    pub fn open(text: &str) -> Result<DeviceGroup> {
        DeviceGroup::open_with_host_memory(text, HostMemory::Pageable)
    }

    /// [`DeviceGroup::open`] with every member that has a choice of host memory (CUDA's) moving its data through
    /// `memory`; the others move pageable memory, the only kind they have. A group run from the host with
    /// [`HostMemory::Pipelined`] has each GPU pipeline its own part.
    pub fn open_with_host_memory(text: &str, memory: HostMemory) -> Result<DeviceGroup> {
        let mut members = Vec::new();
        let mut names = Vec::new();
        for spec in DeviceGroup::parse(text)? {
            let memory = if memory.available_on(spec.kind()) { memory } else { HostMemory::Pageable };
            let device = Device::open_with_host_memory(spec.clone(), memory)
                .map_err(|e| naming(&format!("member {spec} of `{text}`"), e))?;
            members.push(device);
            names.push(spec.to_string());
        }
        Ok(DeviceGroup { names, ..DeviceGroup::new(members)? })
    }

    /// A group of opened devices: at least one, none twice.
    pub fn new(members: Vec<Device>) -> Result<DeviceGroup> {
        if members.is_empty() {
            return Err(Error::invalid("a group needs at least one member"));
        }
        for (i, device) in members.iter().enumerate() {
            if members[..i].iter().any(|m| m.same_device(device)) {
                return Err(Error::invalid(format!("{} is a member twice", device.label())));
            }
        }
        let labels: Vec<String> = members.iter().map(|m| m.label().to_string()).collect();
        let names =
            labels
                .iter()
                .enumerate()
                .map(|(i, label)| {
                    if labels.iter().filter(|l| *l == label).count() > 1 {
                        format!("{label}#{i}")
                    } else {
                        label.clone()
                    }
                })
                .collect();
        Ok(DeviceGroup { members, names })
    }

    /// How reports name each member, in order (`cuda:0`, `cuda:1`; see [`DeviceGroup::label`]).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The members, in order.
    pub fn members(&self) -> &[Device] {
        &self.members
    }

    /// The group as reports name it: its members' names joined by `+` (`cpu+cuda:0+cuda:1`).
    pub fn label(&self) -> String {
        self.names.join("+")
    }

    /// Whether the group can run `W`: the workload splits, and every member implements it.
    pub fn supports<W: DeviceWorkload>(&self) -> bool {
        W::sharding().is_some() && self.members.iter().all(|m| m.supports::<W>())
    }

    /// Runs `W` on `input` over the members, each taking the consecutive units its share gives it
    /// ([`gpuworthy_core::Sharding::split`]), every member at once on a thread of its own, each cutting its own part;
    /// the parts' outputs are joined in order. Errors name the member that failed; a workload that does not split is refused by name.
    pub fn run<W: DeviceWorkload>(&self, input: &W::Input, shares: &[f64]) -> Result<GroupRun<W>> {
        self.run_reusing::<W>(input, shares, &mut None)
    }

    /// [`DeviceGroup::run`] into `kept`, an earlier run's output kept for reuse (as NumPy's `out=`), where the
    /// workload writes in place and its shape is this input's: the members then write into memory already mapped
    /// (and page-locked, where the caller locked it: [`DeviceGroup::page_lock`]), and the run allocates nothing. The
    /// output is taken from `kept` into the run's; a run that fails puts it back, so that memory the caller locked is
    /// never freed behind its back.
    ///
    /// ```
    /// use gpuworthy::core::{Workload, workloads::{Len, Square}};
    /// use gpuworthy::device::group::DeviceGroup;
    ///
    /// let group = DeviceGroup::open("cpu")?; // on a GPU host: "cuda:0,1", "cpu+cuda"
    /// let x = Square::generate(&Len(1 << 16), 1)?;
    /// let mut kept = None;
    /// let first = group.run_reusing::<Square>(&x, &[1.0], &mut kept)?;
    /// assert!(first.in_place && first.join.is_zero()); // written in place: nothing joined
    /// let memory = first.output.as_ptr();
    /// kept = Some(first.output);
    /// let second = group.run_reusing::<Square>(&x, &[1.0], &mut kept)?;
    /// assert_eq!(second.output.as_ptr(), memory); // the same output, written again
    /// assert_eq!(second.output[5], x[5] * x[5]);
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn run_reusing<W: DeviceWorkload>(
        &self,
        input: &W::Input,
        shares: &[f64],
        kept: &mut Option<W::Output>,
    ) -> Result<GroupRun<W>> {
        let sharding = self.sharding_for::<W>(shares)?;
        let params = W::params(input);
        let units = (sharding.units)(&params);
        let parts = sharding.split(&params, shares)?;
        // Every member with units runs; with no units at all, the first runs the empty instance (its output is the
        // empty output, a reduction's identity).
        let work: Vec<(usize, &Device, Range<usize>)> = self
            .members
            .iter()
            .zip(parts)
            .enumerate()
            .filter(|(_, (_, range))| !range.is_empty() || units == 0)
            .take(if units == 0 { 1 } else { usize::MAX })
            .map(|(i, (device, range))| (i, device, range))
            .collect();
        let started = Instant::now();
        if let Some(in_place) = sharding.in_place.as_ref()
            && let Some(mut whole) = (in_place.output)(input, kept.take())
        {
            let run = self.run_in_place(input, &sharding, in_place, (&mut whole, started), work);
            return match run {
                Ok((members, parallel, allocate)) => {
                    let (split, join) = (Duration::ZERO, Duration::ZERO);
                    Ok(GroupRun { output: whole, members, parallel, split, join, in_place: true, allocate })
                }
                Err(e) => {
                    *kept = Some(whole);
                    Err(e)
                }
            };
        }
        // Each member cuts its own part on its own thread, so the cuts overlap one another and the other members'
        // runs; the time a member spends cutting is its `cut` time, not its run's.
        let results = in_parallel(work, |(member, device, range): (usize, &Device, Range<usize>)| {
            let name = &self.names[member];
            let cut_start = Instant::now();
            let part = (sharding.cut)(input, range.clone());
            let cut = cut_start.elapsed();
            let variant = device.best_variant::<W>(&W::params(&part));
            let start = Instant::now();
            let output = device
                .run::<W>(variant, &part)
                .map_err(|e| naming(&format!("member {name} ({variant}, {} {range:?})", sharding.unit), e))?;
            let run = MemberRun { member, label: device.label(), variant, units: range, time: start.elapsed() };
            Ok((output, run, cut))
        })?;
        let parallel = started.elapsed();
        let mut outputs = Vec::with_capacity(results.len());
        let mut members = Vec::with_capacity(results.len());
        let mut split = Duration::ZERO;
        for (output, run, cut) in results {
            outputs.push((run.units.clone(), output));
            split = split.max(cut);
            members.push(run);
        }
        let join_start = Instant::now();
        let output = (sharding.join)(input, outputs);
        let join = join_start.elapsed();
        Ok(GroupRun { output, members, parallel, split, join, in_place: false, allocate: Duration::ZERO })
    }

    /// [`DeviceGroup::run`] for a workload whose output is its parts' outputs end to end: `whole` (allocated from
    /// `started` on, its values unspecified) is lent to the members in pieces, each member writes its part into its
    /// piece ([`Device::run_part`], reading the input where it lies where its backend can), and nothing is joined.
    /// Returns the members' runs, the time from `started` to the last member's end, and the allocation's time.
    fn run_in_place<W: DeviceWorkload>(
        &self,
        input: &W::Input,
        sharding: &gpuworthy_core::Sharding<W>,
        in_place: &gpuworthy_core::InPlace<W>,
        (whole, started): (&mut W::Output, Instant),
        work: Vec<(usize, &Device, Range<usize>)>,
    ) -> Result<(Vec<MemberRun>, Duration, Duration)> {
        let allocate = started.elapsed();
        let params = W::params(input);
        let ranges: Vec<Range<usize>> = work.iter().map(|(_, _, range)| range.clone()).collect();
        let places = places_in::<W>(in_place, input, whole, &ranges)?;
        let members = in_parallel(work.into_iter().zip(places).collect(), |((member, device, range), mut place)| {
            let name = &self.names[member];
            let variant = device.best_variant::<W>(&(sharding.part)(&params, range.clone()));
            let start = Instant::now();
            device
                .run_part::<W>(variant, input, range.clone(), &mut place)
                .map_err(|e| naming(&format!("member {name} ({variant}, {} {range:?})", sharding.unit), e))?;
            Ok(MemberRun { member, label: device.label(), variant, units: range, time: start.elapsed() })
        })?;
        Ok((members, started.elapsed(), allocate))
    }

    /// Uploads `input` over the members in parts by `shares` (as [`DeviceGroup::run`] splits it), every member at
    /// once: each part then stays on its member between launches. A member that fails fails the upload with its
    /// name, and the parts already uploaded are freed.
    pub fn upload<W: DeviceWorkload>(&self, input: &W::Input, shares: &[f64]) -> Result<GroupResident<W>> {
        let sharding = self.sharding_for::<W>(shares)?;
        let params = W::params(input);
        let units = (sharding.units)(&params);
        let ranges = sharding.split(&params, shares)?;
        let work: Vec<(usize, Range<usize>)> = ranges
            .into_iter()
            .enumerate()
            .filter(|(_, range)| !range.is_empty() || units == 0)
            .take(if units == 0 { 1 } else { usize::MAX })
            .collect();
        let parts = in_parallel(work, |(member, units)| {
            let device = &self.members[member];
            let part = (sharding.cut)(input, units.clone());
            let variant = device.best_variant::<W>(&W::params(&part));
            let resident = device
                .upload::<W>(&part)
                .map_err(|e| naming(&format!("uploading to member {}", self.names[member]), e))?;
            Ok(MemberPart { member, units, variant, resident })
        })?;
        Ok(GroupResident { parts })
    }

    /// Launches every member's part at once, each its best variant, and waits for all: the wall time from the first
    /// launch to the last member's end, and each member's kernel on its own device timer.
    pub fn launch<W: DeviceWorkload>(&self, resident: &mut GroupResident<W>) -> Result<GroupLaunch> {
        let started = Instant::now();
        let kernels = in_parallel(resident.parts.iter_mut().collect(), |part| {
            let device = &self.members[part.member];
            let variant = part.variant;
            let kernel = device
                .time_on_device(&mut || device.launch::<W>(variant, &mut part.resident))
                .map_err(|e| naming(&format!("launching on member {}", self.names[part.member]), e))?;
            Ok((part.member, kernel))
        })?;
        Ok(GroupLaunch { wall: started.elapsed(), kernels })
    }

    /// One launch of every member's part with its download and combine: a resident run's step on the host's clock,
    /// with nothing else around it. Every part is launched (the CPU on a thread of its own, the GPUs from this one); then a workload
    /// written in place has its whole output allocated while the GPUs run and every member downloads straight into
    /// its place at once, and any other (a reduction's partials, a few bytes each) downloads each part in turn on
    /// this thread (the first waits for its kernel, the others are done by then) and joins them. Spawning a thread
    /// per member and timing each on its own clock, as [`DeviceGroup::launch`] does, cost a group of two H200s about
    /// 200 µs a launch of `sum` 2^30 beside its 513 µs kernel (measured:
    /// docs/results/nvidia-h200-x2/groups/groups-runs-3.txt).
    pub fn launch_and_join<W: DeviceWorkload>(
        &self,
        resident: &mut GroupResident<W>,
        input: &W::Input,
    ) -> Result<(W::Output, Duration)> {
        let sharding = W::sharding().ok_or_else(|| Error::invalid(format!("{} does not split", W::NAME)))?;
        let started = Instant::now();
        let launched = self.launch_every_part(resident);
        let download = |part: &mut MemberPart<W>| {
            let output = self.members[part.member]
                .download::<W>(&mut part.resident)
                .map_err(|e| naming(&format!("downloading from member {}", self.names[part.member]), e));
            output.map(|o| (part.units.clone(), o))
        };
        if let Err(e) = launched {
            // Every launch enqueued is waited for before the error returns, by its download.
            resident.parts.iter_mut().for_each(|part| drop(download(part)));
            return Err(e);
        }
        let whole = sharding.in_place.as_ref().and_then(|in_place| Some((in_place, (in_place.output)(input, None)?)));
        let output = match whole {
            Some((in_place, whole)) => {
                self.download_into_places(resident.parts.iter_mut().collect(), input, in_place, whole)?
            }
            None => {
                let outputs = resident.parts.iter_mut().map(download).collect::<Result<Vec<_>>>()?;
                (sharding.join)(input, outputs)
            }
        };
        Ok((output, started.elapsed()))
    }

    /// Downloads every member's part at once and joins them into the whole output (`input` is the one uploaded,
    /// which the join reads for the output's shape): the output, the downloads' wall time and the join's.
    pub fn download<W: DeviceWorkload>(
        &self,
        resident: &mut GroupResident<W>,
        input: &W::Input,
    ) -> Result<(W::Output, Duration, Duration)> {
        // Uploaded, so the workload splits and every member implements it.
        let join =
            W::sharding().map(|s| s.join).ok_or_else(|| Error::invalid(format!("{} does not split", W::NAME)))?;
        let started = Instant::now();
        if let Some(in_place) = W::sharding().and_then(|s| s.in_place)
            && let Some(whole) = (in_place.output)(input, None)
        {
            let output = self.download_into_places(resident.parts.iter_mut().collect(), input, &in_place, whole)?;
            return Ok((output, started.elapsed(), Duration::ZERO));
        }
        let outputs = in_parallel(resident.parts.iter_mut().collect(), |part| {
            let device = &self.members[part.member];
            let output = device
                .download::<W>(&mut part.resident)
                .map_err(|e| naming(&format!("downloading from member {}", self.names[part.member]), e))?;
            Ok((part.units.clone(), output))
        })?;
        let downloaded = started.elapsed();
        let join_start = Instant::now();
        let output = join(input, outputs);
        Ok((output, downloaded, join_start.elapsed()))
    }

    /// Launches every part: a member that computes on the calling thread (the CPU) on a thread of its own, every
    /// GPU's launch enqueued from this thread (it returns at once, so the GPUs start microseconds apart); returns once
    /// the CPU members are done, the GPUs' work still running.
    pub(crate) fn launch_every_part<W: DeviceWorkload>(&self, resident: &mut GroupResident<W>) -> Result<()> {
        std::thread::scope(|scope| -> Result<()> {
            let (gpu_parts, host_parts): (Vec<_>, Vec<_>) =
                resident.parts.iter_mut().partition(|part| self.members[part.member].is_gpu());
            let host_threads: Vec<_> = host_parts
                .into_iter()
                .map(|part| {
                    let device = &self.members[part.member];
                    scope.spawn(move || device.launch::<W>(part.variant, &mut part.resident))
                })
                .collect();
            let launched: Result<()> = gpu_parts.into_iter().try_for_each(|part| {
                self.members[part.member]
                    .launch::<W>(part.variant, &mut part.resident)
                    .map_err(|e| naming(&format!("launching on member {}", self.names[part.member]), e))
            });
            for thread in host_threads {
                thread.join().unwrap_or_else(|_| Err(Error::invalid("a member's thread panicked")))?;
            }
            launched
        })
    }

    /// Every part in `parts` downloaded at once, each member straight into its place in `whole`, the whole output of
    /// a workload written in place ([`Device::download_part`]).
    fn download_into_places<W: DeviceWorkload>(
        &self,
        parts: Vec<&mut MemberPart<W>>,
        input: &W::Input,
        in_place: &gpuworthy_core::InPlace<W>,
        mut whole: W::Output,
    ) -> Result<W::Output> {
        let ranges: Vec<Range<usize>> = parts.iter().map(|part| part.units.clone()).collect();
        let places = places_in::<W>(in_place, input, &mut whole, &ranges)?;
        in_parallel(parts.into_iter().zip(places).collect(), |(part, mut place)| {
            let device = &self.members[part.member];
            device
                .download_part::<W>(&mut part.resident, input, part.units.clone(), &mut place)
                .map_err(|e| naming(&format!("downloading from member {}", self.names[part.member]), e))
        })?;
        Ok(whole)
    }

    /// `W`'s sharding where the group can run it with `shares`: it splits, one share per member, and every member
    /// implements it.
    fn sharding_for<W: DeviceWorkload>(&self, shares: &[f64]) -> Result<gpuworthy_core::Sharding<W>> {
        let sharding = W::sharding()
            .ok_or_else(|| Error::invalid(format!("{} does not split over a device group yet", W::NAME)))?;
        if shares.len() != self.members.len() {
            return Err(Error::invalid(format!(
                "{} shares for the {} members of {}",
                shares.len(),
                self.members.len(),
                self.label()
            )));
        }
        if let Some(member) = self.members.iter().find(|m| !m.supports::<W>()) {
            return Err(Error::unsupported(member.backend().kind(), W::NAME));
        }
        Ok(sharding)
    }

    /// Each member's time for the whole of `input` alone: one run to warm up (compilation, first-touch allocation),
    /// then one timed, from the host's data to the host's output (a group's run pays the transfers too). With
    /// `output`, both write into it ([`Device::run_into`]), as a group's runs into a kept output do; where its shape
    /// is the result's, a backend writes into it in place, page-locked memory and all.
    pub fn time_each_alone<W: DeviceWorkload>(
        &self,
        input: &W::Input,
        mut output: Option<&mut W::Output>,
    ) -> Result<Vec<Duration>> {
        let params = W::params(input);
        let mut times = Vec::with_capacity(self.members.len());
        for (device, name) in self.members.iter().zip(&self.names) {
            let variant = device.best_variant::<W>(&params);
            let mut timed = || -> Result<Duration> {
                let mut run = || match output.as_deref_mut() {
                    Some(output) => device.run_into::<W>(variant, input, output),
                    None => device.run::<W>(variant, input).map(drop),
                };
                run()?;
                let start = Instant::now();
                run()?;
                Ok(start.elapsed())
            };
            let time = timed().map_err(|e| naming(&format!("timing member {name} alone"), e))?;
            times.push(time);
        }
        Ok(times)
    }

    /// Shares for `W` on `input` from measurement ([`DeviceGroup::time_each_alone`]): each member's in proportion to
    /// its speed, so that every member would finish together if they did not slow each other.
    pub fn measure_shares<W: DeviceWorkload>(&self, input: &W::Input) -> Result<Vec<f64>> {
        Ok(shares_from_times(&self.time_each_alone::<W>(input, None)?))
    }

    /// Page-locks `input`'s host arrays and `output`'s ([`gpuworthy_core::InPlace`]) through the first member that
    /// can (a CUDA GPU; the lock serves every GPU of the process), so that the members' copies go straight from and
    /// to them ([`Backend::page_lock`]): the locks, and how long locking took. No locks where no member can lock
    /// memory; an error for a workload whose output is not written in place.
    ///
    /// # Safety
    ///
    /// `input`'s and `output`'s arrays stay allocated, at the same addresses, until every returned lock is dropped
    /// (the group's runs into `output` through [`DeviceGroup::run_reusing`] keep them so).
    pub unsafe fn page_lock<W: DeviceWorkload>(
        &self,
        input: &W::Input,
        output: &mut W::Output,
    ) -> Result<(Vec<gpuworthy_core::backend::PageLock>, Duration)> {
        let sharding = W::sharding();
        let units = sharding.as_ref().map_or(0, |s| (s.units)(&W::params(input)));
        let in_place = sharding.and_then(|s| s.in_place).ok_or_else(|| {
            Error::invalid(format!("{}'s output is not written in place, so there is no output to page-lock", W::NAME))
        })?;
        let started = Instant::now();
        let Some(locker) = self.members.iter().find(|m| m.backend().kind() == BackendKind::Cuda) else {
            return Ok((Vec::new(), started.elapsed()));
        };
        let places = (in_place.split)(input, output, std::slice::from_ref(&(0..units)));
        let mut locks = Vec::new();
        for bytes in (in_place.input_bytes)(input).into_iter().chain(places.iter().flat_map(|p| p.bytes())) {
            // SAFETY: the caller keeps these arrays allocated until the locks drop (this function's contract).
            if let Some(lock) = unsafe { locker.backend().page_lock(bytes) }? {
                locks.push(lock);
            }
        }
        Ok((locks, started.elapsed()))
    }
}

/// Shares in proportion to speed: the inverse of each time (a time too short to read counts as a nanosecond).
pub fn shares_from_times(times: &[Duration]) -> Vec<f64> {
    times.iter().map(|t| 1.0 / t.as_secs_f64().max(1e-9)).collect()
}

/// Every device of `kind` on this machine, for `kind:*`.
fn every_device(kind: BackendKind) -> Result<Vec<DeviceSpec>> {
    let specs: Vec<DeviceSpec> = match kind {
        BackendKind::Cpu => vec![DeviceSpec::Cpu],
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            (0..gpuworthy_cuda::CudaBackend::device_count()).map(|ordinal| DeviceSpec::Cuda { ordinal }).collect()
        }
        #[cfg(feature = "wgpu")]
        // By index in the adapters' list: two GPUs of one model share a name. A CPU adapter (lavapipe) is a member
        // only where there is no GPU adapter.
        BackendKind::Wgpu => {
            let adapters = gpuworthy_wgpu::WgpuBackend::adapters();
            let on_cpu =
                |info: &gpuworthy_wgpu::wgpu::AdapterInfo| info.device_type == gpuworthy_wgpu::wgpu::DeviceType::Cpu;
            let any_gpu = adapters.iter().any(|a| !on_cpu(a));
            adapters
                .iter()
                .enumerate()
                .filter(|(_, info)| !any_gpu || !on_cpu(info))
                .map(|(index, _)| DeviceSpec::Wgpu { adapter: Some(index.to_string()) })
                .collect()
        }
        #[allow(unreachable_patterns)]
        other => {
            return Err(Device::open(DeviceSpec::from(other))
                .err()
                .unwrap_or_else(|| Error::invalid(format!("{other}: not compiled in"))));
        }
    };
    if specs.is_empty() {
        return Err(Error::Unavailable {
            backend: kind,
            reason: format!("`{kind}:*` names every {kind} device, and this machine has none"),
        });
    }
    Ok(specs)
}

/// `error` with the member it happened on named first, its kind kept (an unavailable member stays unavailable).
fn naming(member: &str, error: Error) -> Error {
    match error {
        Error::InvalidInput(message) => Error::InvalidInput(format!("{member}: {message}")),
        Error::Unavailable { backend, reason } => Error::Unavailable { backend, reason: format!("{member}: {reason}") },
        Error::Device { backend, message } => Error::Device { backend, message: format!("{member}: {message}") },
        Error::TooLarge { what, limit } => Error::TooLarge { what: format!("{member}: {what}"), limit },
        Error::Unsupported { backend, workload } => {
            Error::Unsupported { backend, workload: format!("{workload}` ({member})`") }
        }
        // A compile log, a variant list or a missing feature already names its backend.
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_group_parses_to_its_members() {
        let specs =
            |text: &str| DeviceGroup::parse(text).map(|s| s.iter().map(ToString::to_string).collect::<Vec<_>>());
        assert_eq!(specs("cpu+wgpu").unwrap(), ["cpu", "wgpu"]);
        assert_eq!(specs("cuda:0,1").unwrap(), ["cuda:0", "cuda:1"]);
        assert_eq!(specs(" cpu + cuda:2 ").unwrap(), ["cpu", "cuda:2"]);
        assert_eq!(specs("cpu:*").unwrap(), ["cpu"]);
        assert!(
            DeviceGroup::is_group("cpu+cuda") && DeviceGroup::is_group("cuda:*") && !DeviceGroup::is_group("cuda:1")
        );
    }

    #[test]
    fn a_bad_group_is_refused_with_the_reason() {
        let err = |text: &str| DeviceGroup::parse(text).unwrap_err().to_string();
        assert!(err("cpu+").contains("an empty member"), "{}", err("cpu+"));
        assert!(err("cpu+cpu").contains("named twice"), "{}", err("cpu+cpu"));
        assert!(err("cuda:0,0").contains("named twice"));
        assert!(err("cpu+gpu").contains("unknown backend"), "{}", err("cpu+gpu"));
        assert!(err("cuda:a,b").contains("ordinal is a number"), "{}", err("cuda:a,b"));
        assert!(DeviceGroup::new(Vec::new()).is_err());
        let cpu = Device::cpu().unwrap();
        assert!(DeviceGroup::new(vec![cpu.clone(), cpu]).unwrap_err().to_string().contains("member twice"));
    }
}
