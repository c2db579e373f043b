//! Every test that needs a backend honours `GPUWORTHY_REQUIRE`: it opens the backend through
//! `BackendKind::opened_or_skipped` (or the conformance helpers built on it), which skips loudly where the backend is
//! missing and fails where the variable requires it. A test that opens a backend with `let Ok(..) = .. else { return }`
//! or `if let Ok(..)` passes silently with no GPU, so that `GPUWORTHY_REQUIRE=cuda cargo test` could pass having run
//! nothing: this test finds such openings in every crate's code.

use gpuworthy_tests::source::{code_only, files, root};

/// The crates whose code is read.
const CRATES: &[&str] = &["core", "cpu", "cuda", "wgpu-backend", "gpuworthy", "bench-suite", "python", "tests"];

/// How a backend is opened.
const OPENINGS: &[&str] = &["CudaBackend::", "WgpuBackend::", "Device::cuda(", "Device::wgpu("];

/// The lines of `code` that open a backend and drop its error unseen: a `let Ok(..)` or `if let Ok(..)` of an
/// opening.
fn silent_openings(code: &str) -> Vec<String> {
    code.lines()
        .filter(|line| {
            let line = line.trim_start();
            (line.starts_with("let Ok(") || line.starts_with("if let Ok(")) && OPENINGS.iter().any(|o| line.contains(o))
        })
        .map(|line| line.trim().to_owned())
        .collect()
}

#[test]
fn no_test_opens_a_backend_without_honouring_gpuworthy_require() {
    let mut found = Vec::new();
    for krate in CRATES {
        for file in files(&root().join(krate)) {
            if file.components().any(|c| c.as_os_str() == "target") {
                continue;
            }
            let source = std::fs::read_to_string(&file).expect("a source file");
            for line in silent_openings(&code_only(&source)) {
                found.push(format!("{}: {line}", file.strip_prefix(root()).unwrap_or(&file).display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "open the backend with BackendKind::opened_or_skipped, which honours GPUWORTHY_REQUIRE:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_finds_a_planted_silent_opening_and_not_one_in_a_comment() {
    let planted = "fn t() {\n    let Ok(cuda) = CudaBackend::new(0) else {\n        return;\n    };\n}\n\
                   fn u() {\n    if let Ok(gpu) = Device::wgpu(None) {}\n}\n\
                   // let Ok(cuda) = CudaBackend::new(0) else { return };\n";
    let found = silent_openings(&code_only(planted));
    assert_eq!(found.len(), 2, "{found:?}");
    let honest = "let Some(cuda) = BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) else { return };";
    assert!(silent_openings(&code_only(honest)).is_empty());
}
