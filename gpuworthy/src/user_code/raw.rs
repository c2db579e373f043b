//! Raw kernels through the facade ([`gpuworthy_core::raw`]): run one on a [`Device`] with named arrays and scalars,
//! let `auto` place it, and sweep and calibrate it through the run-time list of workloads ([`raw_entry`]).
//!
//! A raw kernel is a workload like an expression: one type ([`Raw`]) whose parameters carry the kernel, so every
//! backend answers for it through its own [`Implements`](gpuworthy_core::Implements), and a backend the kernel has no
//! body for refuses it with [`Error::Unsupported`](gpuworthy_core::Error::Unsupported) before any data is made.

use std::sync::Arc;

use gpuworthy_core::raw::{Raw, RawInput, RawKernel, RawParams, Shape, raw_ladder};
use gpuworthy_core::{Error, Result};

use crate::Device;
use crate::choose::catalog::WorkloadOf;
use crate::user_code::expression::{ExprOutputs, ExprValue};

/// Where each of `names` (the kernel's arrays or scalars, `kind` as `("an array", "array")`) is among `given`: one
/// index per name, in the kernel's order; an error names a value given that the kernel does not take, one it takes
/// that was not given, or one given twice.
fn pick(kernel: &RawKernel, kind: (&str, &str), names: &[String], given: &[&str]) -> Result<Vec<usize>> {
    let (what, noun) = kind;
    if let Some(unknown) = given.iter().find(|g| !names.iter().any(|n| n == *g)) {
        return Err(Error::invalid(format!(
            "`{unknown}` is given as {what}, but `{}` takes no {noun} of that name (it takes {})",
            kernel.name(),
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        )));
    }
    names
        .iter()
        .map(|name| match given.iter().enumerate().filter(|(_, g)| *g == name).collect::<Vec<_>>().as_slice() {
            [(i, _)] => Ok(*i),
            [] => Err(Error::invalid(format!("`{}` needs {what} `{name}`, which was not given", kernel.name()))),
            _ => Err(Error::invalid(format!("{what} `{name}` is given twice"))),
        })
        .collect()
}

/// The values of `kernel`'s scalars in its order, from these named ones; an error names one missing, unknown or given
/// twice.
pub fn raw_scalars(kernel: &RawKernel, scalars: &[(&str, f32)]) -> Result<Vec<f32>> {
    let names: Vec<&str> = scalars.iter().map(|(n, _)| *n).collect();
    Ok(pick(kernel, ("a scalar", "scalar"), kernel.scalars(), &names)?.into_iter().map(|i| scalars[i].1).collect())
}

/// The input of the [`Raw`] workload for `kernel` over `shape` with these named arrays and scalars: every input the
/// kernel declares given once, of the shape's length, and a value for every scalar; an error names what is missing,
/// unknown or of another length.
pub fn raw_input(
    kernel: &Arc<RawKernel>,
    shape: Shape,
    inputs: &[(&str, &[f32])],
    scalars: &[(&str, f32)],
) -> Result<RawInput> {
    let array_names: Vec<&str> = inputs.iter().map(|(n, _)| *n).collect();
    let arrays =
        pick(kernel, ("an array", "array"), kernel.inputs(), &array_names)?.into_iter().map(|i| inputs[i].1.to_vec());
    let arrays = arrays.collect();
    let values = raw_scalars(kernel, scalars)?;
    let input = RawInput { params: RawParams::new(Arc::clone(kernel), shape, values)?, arrays };
    <Raw as gpuworthy_core::Workload>::validate(&input)?;
    Ok(input)
}

/// `outputs` of `kernel`, by name.
pub fn raw_outputs(kernel: &RawKernel, outputs: Vec<Vec<f32>>) -> ExprOutputs {
    ExprOutputs { outputs: kernel.outputs().iter().cloned().zip(outputs.into_iter().map(ExprValue::Array)).collect() }
}

impl Device {
    /// Runs `kernel` over `shape` on this device with these named arrays and scalars (data from the host and back)
    /// and returns its outputs by name. A device the kernel has no body for is
    /// [`Error::Unsupported`](gpuworthy_core::Error::Unsupported).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use gpuworthy::Device;
    /// use gpuworthy::core::raw::{RawKernel, Shape};
    ///
    /// let kernel = Arc::new(
    ///     RawKernel::new("scale", &["x"], &["y"], &["a"])?
    ///         .cpu(|args, out| out[0].iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = args.scalars[0] * x))
    ///         .reference("y = a * x")?,
    /// );
    /// let out = Device::cpu()?.run_raw(&kernel, Shape::Line(3), &[("x", &[1.0, 2.0, 3.0])], &[("a", 2.0)])?;
    /// assert_eq!(out.array("y"), Some(&[2.0, 4.0, 6.0][..]));
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn run_raw(
        &self,
        kernel: &Arc<RawKernel>,
        shape: Shape,
        inputs: &[(&str, &[f32])],
        scalars: &[(&str, f32)],
    ) -> Result<ExprOutputs> {
        let input = raw_input(kernel, shape, inputs, scalars)?;
        self.check_size::<Raw>(&input.params)?;
        let outputs = self.run::<Raw>(self.best_variant::<Raw>(&input.params), &input)?;
        Ok(raw_outputs(kernel, outputs))
    }
}

/// Runs `kernel` where the process's `auto` ([`crate::choose::auto::global`]) predicts it fastest with the data on the host,
/// and returns its outputs by name and the choice with its reason.
///
/// ```
/// use std::sync::Arc;
/// use gpuworthy::core::raw::{RawKernel, Shape};
///
/// let kernel = Arc::new(
///     RawKernel::new("negate", &["x"], &["y"], &[])?
///         .cpu(|args, out| out[0].iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = -x))
///         .reference("y = -x")?,
/// );
/// let (out, choice) = gpuworthy::user_code::raw::run_raw_auto(&kernel, Shape::Line(2), &[("x", &[1.0, -2.0])], &[])?;
/// assert_eq!(out.array("y"), Some(&[-1.0, 2.0][..]));
/// println!("ran on {} because {}", choice.device.label(), choice.reason);
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn run_raw_auto(
    kernel: &Arc<RawKernel>,
    shape: Shape,
    inputs: &[(&str, &[f32])],
    scalars: &[(&str, f32)],
) -> Result<(ExprOutputs, crate::choose::auto::Choice)> {
    crate::choose::auto::global()?.run_raw(kernel, shape, inputs, scalars)
}

impl crate::choose::auto::Auto {
    /// Runs `kernel` over `shape` where this `auto` predicts it fastest with the data on the host, among the devices
    /// the kernel has a body for, and returns its outputs by name and the choice with its reason.
    pub fn run_raw(
        &self,
        kernel: &Arc<RawKernel>,
        shape: Shape,
        inputs: &[(&str, &[f32])],
        scalars: &[(&str, f32)],
    ) -> Result<(ExprOutputs, crate::choose::auto::Choice)> {
        let input = raw_input(kernel, shape, inputs, scalars)?;
        let choice = self.decide::<Raw>(&input.params, crate::model::Placement::Host, Some(&input))?;
        let outputs = choice.device.run::<Raw>(choice.variant, &input)?;
        Ok((raw_outputs(kernel, outputs), choice))
    }
}

/// The sweep's, calibration's and evaluation's entry for `params`' kernel: measured at lines of 2^10 to 2^26
/// elements, or at square grids of as many, like `params`' shape ([`raw_ladder`]); sizes written as text read `1024`,
/// `2^20` or `512x512`.
pub fn raw_entry(params: &RawParams) -> WorkloadOf<Raw> {
    let template = params.clone();
    let (full, quick) = (raw_ladder(params, false), raw_ladder(params, true));
    WorkloadOf::with_ladders(full, quick, move |text| Ok(template.with_shape(Shape::parse(text)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> Arc<RawKernel> {
        Arc::new(
            RawKernel::new("square_matrix", &["matrix"], &["result"], &[])
                .unwrap()
                .cpu(|args, out| out[0].iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = x * x))
                .reference("result = matrix * matrix")
                .unwrap(),
        )
    }

    #[test]
    fn missing_unknown_repeated_and_uneven_arrays_are_errors_that_name_them() {
        let cpu = Device::cpu().unwrap();
        let (four, three) = ([1.0f32, 2.0, 3.0, 4.0], [1.0f32, 2.0, 3.0]);
        let grid = Shape::Grid { width: 2, height: 2 };
        for (inputs, scalars, expected) in [
            (&[][..], &[][..], "needs an array `matrix`, which was not given"),
            (&[("matrix", &four[..]), ("x", &four[..])][..], &[][..], "`x` is given as an array"),
            (&[("matrix", &four[..]), ("matrix", &four[..])][..], &[][..], "given twice"),
            (&[("matrix", &three[..])][..], &[][..], "holds 3 elements, but its shape 2x2 holds 4"),
            (&[("matrix", &four[..])][..], &[("a", 1.0)][..], "`a` is given as a scalar"),
        ] {
            let err = cpu.run_raw(&square(), grid, inputs, scalars).unwrap_err().to_string();
            assert!(err.contains(expected), "{expected}: {err}");
        }
        let out = cpu.run_raw(&square(), grid, &[("matrix", &four)], &[]).unwrap();
        assert_eq!(out.array("result"), Some(&[1.0, 4.0, 9.0, 16.0][..]));
    }

    #[test]
    fn a_raw_entry_reads_lines_and_grids() {
        use crate::choose::catalog::WorkloadEntry;
        use crate::measure::size::{Ladder, SizeRequest};
        let params = RawParams::new(square(), Shape::Grid { width: 1, height: 1 }, vec![]).unwrap();
        let entry = raw_entry(&params);
        let listed =
            SizeRequest { ladder: Ladder::Listed(vec!["64x32".into(), "2^10".into()]), options: Default::default() };
        assert_eq!(entry.sizes(&listed).unwrap(), ["64x32", "1024"]);
        assert_eq!(entry.name(), "raw");
    }
}
