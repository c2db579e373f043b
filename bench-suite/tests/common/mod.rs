//! What the tool's integration tests share: where the `gpuworthy` binary is.

/// The `gpuworthy` binary cargo built for these tests or, where the tests were copied to another machine without the
/// build tree (as for a GPU machine), the one staged beside them in `../bin/`.
pub fn binary() -> std::path::PathBuf {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_gpuworthy"));
    if built.exists() {
        return built;
    }
    let here = std::env::current_exe().expect("the test binary has a path");
    here.parent().and_then(|d| d.parent()).map(|d| d.join("bin").join("gpuworthy")).unwrap_or(built)
}
