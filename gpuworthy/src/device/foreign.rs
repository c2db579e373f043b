//! Expressions run on arrays another library owns in a GPU's memory (CuPy arrays, PyTorch tensors): compiled once
//! for a device ([`Device::prepare_expression`]), then launched on the owner's pointers and stream with no copy
//! ([`Device::run_expression_on_foreign_memory`]).
//!
//! This is the one path on which a caller hands the facade raw device pointers, so it is kept apart from the typed
//! phases of [`Device`]: the caller vouches for the pointers (the run is `unsafe`), and the device that prepared an
//! expression is the one that runs it. Only CUDA has such a path today; any other device answers
//! [`Error::Unsupported`], and code above the facade never names the backend that has it.

use std::sync::Arc;

use gpuworthy_core::expr::Program;
use gpuworthy_core::{Backend, Dtype, Error, Result};

use crate::device::Device;

/// What a device reports as the work it lacks when it has no foreign-memory path.
const FOREIGN_MEMORY: &str = "expressions on another library's device memory";

/// An expression compiled for one device ([`Device::prepare_expression`]): its program and its kernel, kept by a
/// caller that runs one expression many times instead of generating and hashing its source at every call.
#[derive(Debug, Clone)]
pub struct PreparedExpression {
    program: Arc<Program>,
    /// The CUDA backend's compiled form.
    #[cfg(feature = "cuda")]
    cuda: gpuworthy_cuda::expr::PreparedExpression,
}

impl PreparedExpression {
    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }
}

impl Device {
    /// `program`'s kernel for arrays stored as `dtype` (`f32`, or a 16-bit type computed in `f32`), compiled (or
    /// found in the caches) for this device, for [`Device::run_expression_on_foreign_memory`]. A device without that
    /// path is [`Error::Unsupported`].
    pub fn prepare_expression(&self, program: Arc<Program>, dtype: Dtype) -> Result<PreparedExpression> {
        match self {
            #[cfg(feature = "cuda")]
            Device::Cuda(b) => {
                let cuda = b.prepare_expression(Arc::clone(&program), dtype)?;
                Ok(PreparedExpression { program, cuda })
            }
            _ => {
                let _ = (program, dtype);
                Err(Error::unsupported(self.kind(), FOREIGN_MEMORY))
            }
        }
    }

    /// Runs `prepared` on arrays of `n` elements (stored as it was prepared for) in this device's memory that another
    /// library owns, with no copy:
    /// `inputs` one pointer per input of the program, `outputs` one per output that overwrites no input, `scalars`
    /// in the program's order. `stream` is the raw stream their owner orders its work on (0 for the legacy default
    /// stream): the work is ordered after and before it. An elementwise program returns `None`; a reduction returns
    /// its value, read back once its kernel has finished. A device without this path is [`Error::Unsupported`].
    ///
    /// # Safety
    ///
    /// `prepared` must come from [`Device::prepare_expression`] on this device. Every pointer must address at least
    /// `n` elements of the type it was prepared for in this device's memory, valid until the work enqueued on `stream` after this call has finished;
    /// outputs must not overlap each other or an input they do not overwrite; `stream` must be 0 or a live stream of
    /// this device's context.
    pub unsafe fn run_expression_on_foreign_memory(
        &self,
        prepared: &PreparedExpression,
        inputs: &[u64],
        outputs: &[u64],
        scalars: &[f32],
        n: usize,
        stream: u64,
    ) -> Result<Option<f32>> {
        match self {
            #[cfg(feature = "cuda")]
            Device::Cuda(b) => {
                // SAFETY: the caller vouches for the pointers, `n` and the stream (this function's contract, which is
                // the backend's), and `prepared` was made on this device.
                unsafe { b.run_expression_on_foreign_memory(&prepared.cuda, inputs, outputs, scalars, n, stream) }
            }
            _ => {
                let _ = (prepared, inputs, outputs, scalars, n, stream);
                Err(Error::unsupported(self.kind(), FOREIGN_MEMORY))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_has_no_foreign_memory_path_and_says_so() {
        let cpu = Device::cpu().unwrap();
        let program = gpuworthy_core::expr::Expr::parse("y = x * 2").unwrap().bind(&[]).unwrap();
        let err = cpu.prepare_expression(Arc::new(program), Dtype::Bf16).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    }
}
