//! Declarative variant tables and kernel-source registries, shared by the GPU backends.
//!
//! A GPU backend's variant of a workload is a few facts: its name, the kernels one launch runs (in order), the
//! precision it computes in, and the launch shape those kernels were written for (block size, tile). Written as one
//! [`VariantTable`] per workload, they drive the backend's `variants()`, `prepare` (compile every kernel the table
//! names) and `launch` (look the variant up, run its kernels with its shape), so that a variant is added in one place
//! and a kernel name cannot be misspelt in one of three. The kernels themselves live in source files listed in a
//! [`KernelSource`] registry (CUDA C in `cuda/kernels/`, WGSL in `shaders/`); each backend's tests check that every
//! kernel its tables name is defined by its sources, without a GPU.

use crate::backend::Implements;
use crate::error::Result;
use crate::workload::{Precision, Workload};

/// One variant of a workload on a GPU backend.
#[derive(Debug, Clone, Copy)]
pub struct Variant<L: 'static> {
    /// The name users pick it by (`naive`, `vec4`, `fused`).
    pub name: &'static str,
    /// The kernels (entry points) one launch runs, in order; empty for a variant that calls a vendor library.
    pub kernels: &'static [&'static str],
    /// The arithmetic it computes in.
    pub precision: Precision,
    /// The launch shape its kernels expect: the backend's own type.
    pub launch: L,
}

impl<L> Variant<L> {
    /// A full-precision variant running `kernels` with `launch`.
    pub const fn new(name: &'static str, kernels: &'static [&'static str], launch: L) -> Self {
        Variant { name, kernels, precision: Precision::Fp32, launch }
    }

    /// The same variant computing in `precision` (TF32, bf16 or fp16 tensor cores).
    pub const fn in_precision(self, precision: Precision) -> Self
    where
        L: Copy,
    {
        Variant { precision, ..self }
    }

    /// The kernel one launch runs: the first of [`Variant::kernels`] (empty for a library call).
    pub fn kernel(&self) -> Option<&'static str> {
        self.kernels.first().copied()
    }
}

/// Every variant of one workload on one GPU backend, in ladder order (naive first).
#[derive(Debug)]
pub struct VariantTable<L: 'static> {
    /// The workload's name.
    pub workload: &'static str,
    /// Its variants.
    pub variants: &'static [Variant<L>],
}

impl<L> VariantTable<L> {
    /// The variants' names, in ladder order.
    pub fn names(&self) -> Vec<&'static str> {
        self.variants.iter().map(|v| v.name).collect()
    }

    /// The variant called `name`.
    pub fn find(&self, name: &str) -> Option<&Variant<L>> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// The variant called `name` of `W` on `backend`, or the error that names the variants `backend` offers.
    pub fn lookup<W: Workload, B: Implements<W>>(&self, backend: &B, name: &str) -> Result<&Variant<L>> {
        self.find(name).ok_or_else(|| backend.unknown_variant(name))
    }

    /// The precision of the variant called `name` (fp32 for a name the table lacks).
    pub fn precision(&self, name: &str) -> Precision {
        self.find(name).map_or(Precision::Fp32, |v| v.precision)
    }

    /// Every `(variant, kernel)` pair of the table, for the tests that check kernel names against the sources.
    pub fn kernels(&self) -> Vec<(&'static str, &'static str)> {
        self.variants.iter().flat_map(|v| v.kernels.iter().map(move |k| (v.name, *k))).collect()
    }
}

/// One GPU source file and the kernels (entry points) it defines.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    /// The file name, relative to the backend's source folder.
    pub file: &'static str,
    /// The source text, embedded at compile time.
    pub source: &'static str,
    /// The kernels it defines.
    pub kernels: &'static [&'static str],
}

impl KernelSource {
    /// The source in `sources` that defines `kernel`.
    pub fn defining(sources: &'static [KernelSource], kernel: &str) -> Option<&'static KernelSource> {
        sources.iter().find(|s| s.kernels.contains(&kernel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: VariantTable<u32> = VariantTable {
        workload: "square",
        variants: &[
            Variant::new("naive", &["square_naive"], 256),
            Variant::new("fast", &["a", "b"], 64).in_precision(Precision::Tf32),
        ],
    };

    #[test]
    fn a_table_answers_names_precisions_and_kernels() {
        assert_eq!(TABLE.names(), ["naive", "fast"]);
        assert_eq!(TABLE.find("fast").map(|v| v.launch), Some(64));
        assert_eq!(TABLE.precision("fast"), Precision::Tf32);
        assert!(TABLE.find("turbo").is_none());
        assert_eq!(TABLE.kernels(), [("naive", "square_naive"), ("fast", "a"), ("fast", "b")]);
    }
}
