//! Raw kernels on the CPU ([`gpuworthy_core::raw`]): the kernel's own Rust function, run on this backend's thread pool
//! so that rayon's parallel iterators inside it use the cores the built-in kernels use.
//!
//! There is nothing to compile and nothing to upload: the function reads the caller's arrays where they are, and the
//! "resident" outputs are host vectors kept from one launch to the next, so that a benchmark's repeated launches do
//! not time the allocator.

use gpuworthy_core::raw::{Raw, RawInput};
use gpuworthy_core::{Backend, Error, Implements, Result, Workload};

use crate::CpuBackend;

/// The one variant: the kernel's CPU function.
const FUNCTION: &str = "function";

impl CpuBackend {
    /// Runs `input`'s kernel into `outputs`, resized to the shape's length.
    fn run_raw(&self, input: &RawInput, outputs: &mut Vec<Vec<f32>>) -> Result<()> {
        let params = &input.params;
        let n = params.shape.elements()?;
        outputs.resize_with(params.kernel.outputs().len(), Vec::new);
        for output in outputs.iter_mut() {
            output.resize(n, 0.0);
        }
        let slices = input.slices();
        let mut views: Vec<&mut [f32]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        self.install(|| params.kernel.run_cpu(&slices, &params.scalars, params.shape, &mut views))
    }
}

impl Implements<Raw> for CpuBackend {
    type Resident = (RawInput, Vec<Vec<f32>>);

    fn variants(&self) -> Vec<&'static str> {
        vec![FUNCTION]
    }

    /// A kernel without a CPU function is [`Error::Unsupported`] here, before any data is made.
    fn check_size(&self, params: &gpuworthy_core::raw::RawParams) -> Result<()> {
        if params.kernel.cpu_function().is_none() {
            return Err(Error::unsupported(
                self.kind(),
                format!("raw kernel `{}` (it has no CPU function)", params.kernel.name()),
            ));
        }
        Ok(())
    }

    fn best_variant(&self, _: &gpuworthy_core::raw::RawParams) -> &'static str {
        FUNCTION
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        if variant == FUNCTION { Ok(()) } else { Err(Implements::<Raw>::unknown_variant(self, variant)) }
    }

    fn upload(&self, input: &RawInput) -> Result<Self::Resident> {
        Raw::validate(input)?;
        Implements::<Raw>::check_size(self, &input.params)?;
        Ok((input.clone(), Vec::new()))
    }

    fn launch(&self, variant: &str, (input, outputs): &mut Self::Resident) -> Result<()> {
        Implements::<Raw>::prepare(self, variant)?;
        self.run_raw(input, outputs)
    }

    fn download(&self, (_, outputs): &mut Self::Resident) -> Result<Vec<Vec<f32>>> {
        Ok(<[Vec<f32>]>::to_vec(outputs))
    }

    /// Runs straight from the caller's arrays: on the CPU, an upload would only copy them.
    fn run(&self, variant: &str, input: &RawInput) -> Result<Vec<Vec<f32>>> {
        let mut outputs = Vec::new();
        Implements::<Raw>::run_into(self, variant, input, &mut outputs)?;
        Ok(outputs)
    }

    fn run_into(&self, variant: &str, input: &RawInput, output: &mut Vec<Vec<f32>>) -> Result<()> {
        Raw::validate(input)?;
        Implements::<Raw>::check_size(self, &input.params)?;
        Implements::<Raw>::prepare(self, variant)?;
        self.run_raw(input, output)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use gpuworthy_core::raw::{RawKernel, RawParams, Shape};
    use gpuworthy_core::{BackendKind, Precision};

    use super::*;

    #[test]
    fn a_kernel_runs_on_the_pool_and_a_missing_or_panicking_function_is_an_error() {
        let cpu = CpuBackend::new().unwrap();
        let kernel = RawKernel::new("scale", &["x"], &["y"], &["a"])
            .unwrap()
            .cpu(|args, out| {
                use rayon::prelude::*;
                let a = args.scalars[0];
                out[0].par_iter_mut().zip(args.inputs[0]).for_each(|(y, x)| *y = a * x);
            })
            .reference("y = a * x")
            .unwrap();
        let params = RawParams::new(Arc::new(kernel), Shape::Line(10_000), vec![3.0]).unwrap();
        let input = Raw::generate(&params, 2).unwrap();
        let output = Implements::<Raw>::run(&cpu, FUNCTION, &input).unwrap();
        assert!(Raw::check(&input, &Raw::reference(&input).unwrap(), &output, Precision::Fp32).is_ok());

        let bare = RawKernel::new("gpu_only", &["x"], &["y"], &[]).unwrap().reference("y = x").unwrap();
        let params = RawParams::new(Arc::new(bare), Shape::Line(4), vec![]).unwrap();
        let err = Implements::<Raw>::check_size(&cpu, &params).unwrap_err();
        assert!(matches!(err, Error::Unsupported { backend: BackendKind::Cpu, .. }), "{err}");
        let input = Raw::generate(&params, 1).unwrap();
        assert!(Implements::<Raw>::run(&cpu, FUNCTION, &input).unwrap_err().to_string().contains("`gpu_only`"));

        let panics = RawKernel::new("panics", &["x"], &["y"], &[]).unwrap().cpu(|_, _| panic!("index out of range"));
        let params = RawParams::new(Arc::new(panics), Shape::Line(4), vec![]).unwrap();
        let input = Raw::generate(&params, 1).unwrap();
        let err = Implements::<Raw>::run(&cpu, FUNCTION, &input).unwrap_err().to_string();
        assert!(err.contains("`panics` panicked: index out of range"), "{err}");
    }
}
