//! One backend's implementation of a workload seen through an object-safe interface ([`ErasedImplements`]), so that a
//! [`crate::Device`] can hold whichever backend it opened and still run a workload on it.
//!
//! The phases' resident data travels as `dyn Any` and is checked back to the backend's own type on every launch and
//! download; the harness's measurements run on the concrete backend, so that no timed loop pays a virtual call.

use std::any::Any;

use std::ops::Range;

use gpuworthy_core::{Error, Implements, PartOutput, Precision, Result, Workload};

use crate::measure::{
    CheckResult, ClockComparison, MeasureOptions, Measurement, Stats, compare_clocks, measure, measure_end_to_end,
    time_resident_kernel,
};

/// One backend's [`Implements<W>`] seen through an object-safe interface: the resident data as `dyn Any`, the
/// harness's measurement run on the concrete backend. Every `B: Implements<W>` is one.
pub trait ErasedImplements<W: Workload>: Send + Sync {
    /// [`Implements::variants`].
    fn variants(&self) -> Vec<&'static str>;
    /// [`Implements::best_variant`].
    fn best_variant(&self, params: &W::Params) -> &'static str;
    /// [`Implements::precision`].
    fn precision(&self, variant: &str) -> Precision;
    /// [`Implements::check_size`].
    fn check_size(&self, params: &W::Params) -> Result<()>;
    /// [`Implements::prepare`].
    fn prepare(&self, variant: &str) -> Result<()>;
    /// [`Implements::prepare_for`].
    fn prepare_for(&self, variant: &str, params: &W::Params) -> Result<()>;
    /// [`Implements::settle`].
    fn settle(&self, variant: &str, params: &W::Params) -> Result<()>;
    /// [`Implements::upload`], the resident data boxed.
    fn upload(&self, input: &W::Input) -> Result<Box<dyn Any + Send>>;
    /// [`Implements::launch`] on data this backend uploaded.
    fn launch(&self, variant: &str, resident: &mut (dyn Any + Send)) -> Result<()>;
    /// [`Implements::download`] of data this backend uploaded.
    fn download(&self, resident: &mut (dyn Any + Send)) -> Result<W::Output>;
    /// [`Implements::download_part`] of data this backend uploaded.
    fn download_part(
        &self,
        resident: &mut (dyn Any + Send),
        input: &W::Input,
        units: Range<usize>,
        output: &mut PartOutput<'_>,
    ) -> Result<()>;
    /// [`Implements::run`].
    fn run(&self, variant: &str, input: &W::Input) -> Result<W::Output>;
    /// [`Implements::run_into`].
    fn run_into(&self, variant: &str, input: &W::Input, output: &mut W::Output) -> Result<()>;
    /// [`Implements::run_part`].
    fn run_part(&self, variant: &str, input: &W::Input, units: Range<usize>, output: &mut PartOutput<'_>)
    -> Result<()>;
    /// [`Implements::reads_parts_in_place`].
    fn reads_parts_in_place(&self, variant: &str, params: &W::Params) -> bool;
    /// [`measure`] on the concrete backend.
    fn measure(&self, variant: &str, input: &W::Input, options: &MeasureOptions) -> Result<Measurement>;
    /// [`measure_end_to_end`] on the concrete backend.
    fn measure_end_to_end(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> Result<(Stats, Option<CheckResult>)>;
    /// [`compare_clocks`] on the concrete backend.
    fn compare_clocks(&self, variant: &str, input: &W::Input, options: &MeasureOptions) -> Result<ClockComparison>;
    /// [`time_resident_kernel`] on the concrete backend.
    fn time_resident_kernel(&self, variant: &str, input: &W::Input, options: &MeasureOptions) -> Result<Stats>;
}

impl<W: Workload, B: Implements<W>> ErasedImplements<W> for B
where
    B::Resident: 'static,
{
    fn variants(&self) -> Vec<&'static str> {
        Implements::<W>::variants(self)
    }

    fn best_variant(&self, params: &W::Params) -> &'static str {
        Implements::<W>::best_variant(self, params)
    }

    fn precision(&self, variant: &str) -> Precision {
        Implements::<W>::precision(self, variant)
    }

    fn check_size(&self, params: &W::Params) -> Result<()> {
        Implements::<W>::check_size(self, params)
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        Implements::<W>::prepare(self, variant)
    }

    fn prepare_for(&self, variant: &str, params: &W::Params) -> Result<()> {
        Implements::<W>::prepare_for(self, variant, params)
    }

    fn settle(&self, variant: &str, params: &W::Params) -> Result<()> {
        Implements::<W>::settle(self, variant, params)
    }

    fn upload(&self, input: &W::Input) -> Result<Box<dyn Any + Send>> {
        Ok(Box::new(Implements::<W>::upload(self, input)?))
    }

    fn launch(&self, variant: &str, resident: &mut (dyn Any + Send)) -> Result<()> {
        Implements::<W>::launch(self, variant, downcast::<W, B>(self, resident)?)
    }

    fn download(&self, resident: &mut (dyn Any + Send)) -> Result<W::Output> {
        Implements::<W>::download(self, downcast::<W, B>(self, resident)?)
    }

    fn download_part(
        &self,
        resident: &mut (dyn Any + Send),
        input: &W::Input,
        units: Range<usize>,
        output: &mut PartOutput<'_>,
    ) -> Result<()> {
        Implements::<W>::download_part(self, downcast::<W, B>(self, resident)?, input, units, output)
    }

    fn run(&self, variant: &str, input: &W::Input) -> Result<W::Output> {
        Implements::<W>::run(self, variant, input)
    }

    fn run_into(&self, variant: &str, input: &W::Input, output: &mut W::Output) -> Result<()> {
        Implements::<W>::run_into(self, variant, input, output)
    }

    fn run_part(
        &self,
        variant: &str,
        input: &W::Input,
        units: Range<usize>,
        output: &mut PartOutput<'_>,
    ) -> Result<()> {
        Implements::<W>::run_part(self, variant, input, units, output)
    }

    fn reads_parts_in_place(&self, variant: &str, params: &W::Params) -> bool {
        Implements::<W>::reads_parts_in_place(self, variant, params)
    }

    fn measure(&self, variant: &str, input: &W::Input, options: &MeasureOptions) -> Result<Measurement> {
        measure::<W, B>(self, variant, input, options)
    }

    fn compare_clocks(&self, variant: &str, input: &W::Input, options: &MeasureOptions) -> Result<ClockComparison> {
        compare_clocks::<W, B>(self, variant, input, options)
    }

    fn time_resident_kernel(&self, variant: &str, input: &W::Input, options: &MeasureOptions) -> Result<Stats> {
        time_resident_kernel::<W, B>(self, variant, input, options)
    }

    fn measure_end_to_end(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> Result<(Stats, Option<CheckResult>)> {
        measure_end_to_end::<W, B>(self, variant, input, options)
    }
}

/// The backend's own resident type inside `resident`. [`Device`] checks that the data is this device's before it
/// gets here, so a failure is a bug in the dispatch, reported rather than panicked on.
fn downcast<'a, W: Workload, B: Implements<W>>(
    backend: &B,
    resident: &'a mut (dyn Any + Send),
) -> Result<&'a mut B::Resident>
where
    B::Resident: 'static,
{
    resident.downcast_mut::<B::Resident>().ok_or_else(|| {
        Error::invalid(format!("{} data of another backend cannot be launched on {}", W::NAME, backend.kind()))
    })
}
