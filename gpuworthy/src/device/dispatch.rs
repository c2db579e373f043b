//! The built-in workloads as types: code generic over the workload, run for each of them or for the one named.
//!
//! Workloads are types (their inputs and outputs differ), so a name chosen at run time (`gpuworthy run softmax`)
//! picks an instantiation of generic code. A [`WorkloadVisitor`] is that generic code, written once as a method with
//! the workload as its type parameter (the shape of [`crate::device::WithBackend`]); [`visit_each_workload`] runs it
//! for every built-in workload and [`visit_workload_named`] for the one named, returning an error for an unknown
//! name. Both are generated from the one compile-time list ([`gpuworthy_core::for_each_workload!`]).
//!
//! This is for the built-in eight (their conformance trials, the command line's `run`). Code that must take
//! workloads from outside too (sweeps, calibration, evaluation) works over the run-time list of
//! [`crate::choose::catalog`], which a user's workload joins.

use gpuworthy_core::{Error, Result, WORKLOAD_NAMES};

use gpuworthy_core::shard::PartBytes;

use crate::device::DeviceWorkload;
use crate::measure::size::ParseSize;

/// A workload a [`crate::Device`] runs whose size can be written as text ([`ParseSize`]) and whose output can be
/// handed between processes ([`PartBytes`], for ranks of a world: [`crate::device::rank`]): every built-in one.
pub trait CommandLineWorkload: DeviceWorkload<Params: ParseSize, Output: PartBytes> {}

impl<W> CommandLineWorkload for W
where
    W: DeviceWorkload,
    W::Params: ParseSize,
    W::Output: PartBytes,
{
}

/// Code generic over the workload, run by [`visit_each_workload`] and [`visit_workload_named`].
///
/// ```
/// use gpuworthy::core::Workload;
/// use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
///
/// struct Lesson;
/// impl WorkloadVisitor for Lesson {
///     type Output = &'static str;
///     fn visit<W: CommandLineWorkload>(&mut self) -> &'static str {
///         W::LESSON
///     }
/// }
/// assert!(visit_workload_named("softmax", &mut Lesson)?.contains("fusion"));
/// assert!(visit_workload_named("fft", &mut Lesson).is_err());
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub trait WorkloadVisitor {
    /// What one visit returns.
    type Output;
    /// Runs the code for workload `W`.
    fn visit<W: CommandLineWorkload>(&mut self) -> Self::Output;
}

/// The error for a workload name that is not one of the built-in ones.
pub fn unknown_workload(name: &str) -> Error {
    Error::invalid(format!("unknown workload `{name}`: expected one of {}", WORKLOAD_NAMES.join(", ")))
}

macro_rules! visits {
    ([] $($name:ident: $workload:ty),* $(,)?) => {
        /// Runs `visitor` for every built-in workload, in the order of the specification.
        pub fn visit_each_workload<V: WorkloadVisitor>(visitor: &mut V) -> Vec<V::Output> {
            vec![$(visitor.visit::<$workload>()),*]
        }

        /// Runs `visitor` for the built-in workload called `name`, or returns [`unknown_workload`].
        pub fn visit_workload_named<V: WorkloadVisitor>(name: &str, visitor: &mut V) -> Result<V::Output> {
            match name {
                $(stringify!($name) => Ok(visitor.visit::<$workload>()),)*
                other => Err(unknown_workload(other)),
            }
        }
    };
}

gpuworthy_core::for_each_workload!(visits);

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::Backend;

    struct Name;
    impl WorkloadVisitor for Name {
        type Output = &'static str;
        fn visit<W: CommandLineWorkload>(&mut self) -> &'static str {
            W::NAME
        }
    }

    #[test]
    fn every_workload_is_visited_once_and_found_by_its_name() {
        assert_eq!(visit_each_workload(&mut Name), WORKLOAD_NAMES);
        for name in WORKLOAD_NAMES {
            assert_eq!(visit_workload_named(name, &mut Name).unwrap(), *name);
        }
        let err = visit_workload_named("fft", &mut Name).unwrap_err().to_string();
        assert!(err.contains("fft") && err.contains("softmax"), "{err}");
    }

    /// Every workload, on every device that opens here: the variants are listed, the best one is among them at
    /// every ladder size, and a run through the device matches the reference.
    #[test]
    fn every_workload_runs_on_every_available_device() {
        struct RunsOn<'a>(&'a crate::Device);
        impl WorkloadVisitor for RunsOn<'_> {
            type Output = ();
            fn visit<W: CommandLineWorkload>(&mut self) {
                let device = self.0;
                let variants = device.variants::<W>();
                assert!(!variants.is_empty(), "{} offers no {} variant", device.label(), W::NAME);
                for params in W::ladder() {
                    let best = device.best_variant::<W>(&params);
                    assert!(
                        variants.contains(&best),
                        "{}: best {} variant `{best}` not in {variants:?}",
                        device.label(),
                        W::NAME
                    );
                }
                let params = W::quick_ladder().remove(0);
                let input = W::generate(&params, 3).unwrap();
                let best = device.best_variant::<W>(&params);
                let output = device.run::<W>(best, &input).unwrap();
                let expected = W::reference(&input).unwrap();
                W::check(&input, &expected, &output, device.precision::<W>(best)).unwrap();
            }
        }
        let opened = crate::Device::all_available();
        assert!(
            opened.devices.iter().any(|d| d.kind() == gpuworthy_core::BackendKind::Cpu),
            "{:?}",
            opened.unavailable
        );
        for device in &opened.devices {
            visit_each_workload(&mut RunsOn(device));
        }
    }
}
