//! # gpuworthy-shaders
//!
//! The WGSL compute shaders of gpuworthy's wgpu backend, one file per workload in this folder (`shaders/*.wgsl` in
//! the repository), as source text (every `.wgsl` file of the folder is in [`FILES`], listed by the build script). They are a crate of their
//! own so that the backend that embeds them can be packaged: a crate may only include files inside its own folder, and the shaders live at the top of the repository
//! where the guide points readers to them.
//!
//! ```
//! assert!(gpuworthy_shaders::source("square.wgsl").contains("fn square_naive"));
//! assert!(gpuworthy_shaders::FILES.iter().any(|(file, _)| *file == "softmax.wgsl"));
//! ```

#![deny(missing_docs)]

// `FILES`, made by the build script from the folder's `.wgsl` files.
include!(concat!(env!("OUT_DIR"), "/files.rs"));

/// The source of the shader file `file` (`"scan.wgsl"`). Evaluated in a constant, a file that is not in the folder
/// stops the build.
pub const fn source(file: &str) -> &'static str {
    let mut i = 0;
    while i < FILES.len() {
        if same(FILES[i].0, file) {
            return FILES[i].1;
        }
        i += 1;
    }
    panic!("no such shader file in the shaders folder")
}

/// Whether `a` and `b` are the same text (`==` on `str` is not yet a `const fn`).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The module of the subgroup sum: `sum.wgsl` followed by `sum_subgroup.wgsl`, so that the two sum kernels share
/// one per-thread loop. A module that uses subgroup operations cannot be created on an adapter without them, so the
/// other sum kernels live in `sum.wgsl` alone.
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
