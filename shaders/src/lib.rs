//! # gpuworthy-shaders
//!
//! The WGSL compute shaders of gpuworthy's wgpu backend, one file per workload in this folder (`shaders/*.wgsl` in
//! the repository), as source text. They are a crate of their own so that the backend that embeds them can be
//! packaged: a crate may only include files inside its own folder, and the shaders live at the top of the repository
//! where the guide points readers to them.
//!
//! ```
//! assert!(gpuworthy_shaders::SQUARE.contains("fn square_naive"));
//! assert!(gpuworthy_shaders::FILES.iter().any(|(file, _)| *file == "softmax.wgsl"));
//! ```

#![deny(missing_docs)]

macro_rules! shader_files {
    ($($(#[$doc:meta])* $name:ident = $file:literal;)*) => {
        $($(#[$doc])* pub const $name: &str = include_str!(concat!("../", $file));)*

        /// Every shader file and its source, in the order above.
        pub const FILES: &[(&str, &str)] = &[$(($file, $name)),*];
    };
}

shader_files! {
    /// `square.wgsl`: `y = x²`, naive and `vec4`.
    SQUARE = "square.wgsl";
    /// `saxpy.wgsl`: `y = a·x + y`, naive and `vec4`.
    SAXPY = "saxpy.wgsl";
    /// `sum.wgsl`: a workgroup tree reduction.
    SUM = "sum.wgsl";
    /// `sum_subgroup.wgsl`: the subgroup reduction, which builds on `sum.wgsl` ([`SUM_WITH_SUBGROUPS`]).
    SUM_SUBGROUP = "sum_subgroup.wgsl";
    /// `softmax.wgsl`: softmax by rows, unfused, fused, and split over chunks of long rows.
    SOFTMAX = "softmax.wgsl";
    /// `matmul.wgsl`: naive, tiled, register-blocked and wide matrix products.
    MATMUL = "matmul.wgsl";
    /// `mandelbrot.wgsl`: escape-time iterations per pixel.
    MANDELBROT = "mandelbrot.wgsl";
    /// `histogram.wgsl`: global and workgroup-private atomics.
    HISTOGRAM = "histogram.wgsl";
    /// `stencil.wgsl`: a 3x3 stencil, naive, tiled and by rows.
    STENCIL = "stencil.wgsl";
    /// `copy.wgsl`: the copy that measures the adapter's bandwidth.
    COPY = "copy.wgsl";
}

/// The module of the subgroup sum: `sum.wgsl` followed by `sum_subgroup.wgsl`, so that the two sum kernels share
/// one per-thread loop. A module that uses subgroup operations cannot be created on an adapter without them, so the
/// other sum kernels live in [`SUM`] alone.
pub const SUM_WITH_SUBGROUPS: &str = concat!(include_str!("../sum.wgsl"), include_str!("../sum_subgroup.wgsl"));

#[cfg(test)]
mod tests {
    #[test]
    fn every_wgsl_file_of_the_folder_is_listed() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.ends_with(".wgsl"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = super::FILES.iter().map(|(file, _)| (*file).to_owned()).collect();
        listed.sort();
        assert_eq!(listed, on_disk);
    }
}
