//! Every `GPUWORTHY_` variable the workspace reads is in core's list of them (`gpuworthy_core::env::VARIABLES`):
//! `gpuworthy devices` shows each listed variable in effect and calls any other `GPUWORTHY_` name it finds set a
//! likely misspelling, so a variable read but not listed would be reported as a mistake exactly when a user sets it.
//!
//! A variable is any string literal `"GPUWORTHY_…"` in the Rust sources of the crates and the Python package; the
//! few names that tests plant as unknown or read as their own switches are listed here, each with why.

use std::collections::BTreeSet;

use gpuworthy::core::env::VARIABLES;
use gpuworthy_tests::source::{files, root};

/// Names in the sources that are not variables of gpuworthy's: planted by tests, or a test's own switch.
const NOT_VARIABLES: &[(&str, &str)] = &[
    ("GPUWORTHY_EXAMPLE", "set in a doc example of `env::read`"),
    ("GPUWORTHY_SURELY_UNSET", "a doc example's unset name"),
    ("GPUWORTHY_TEST_FLAG", "set by env's unit test, which plants it as unknown"),
    ("GPUWORTHY_WGPU_CHECK", "the misspelling the cli test plants for `devices` to point out"),
    ("GPUWORTHY_FIGURES_EXPLAIN", "the figures test's switch to print how it matched each figure"),
    ("GPUWORTHY_PLANTED", "planted by this file's own test of the scan"),
];

/// Every `"GPUWORTHY_…"` literal in `text`.
fn names_in(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("\"GPUWORTHY_") {
        let after = &rest[at + 1..];
        let end = after.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).unwrap_or(0);
        // The prefix alone (`"GPUWORTHY_"`, as a test of names) is not a name.
        if end > "GPUWORTHY_".len() && after[end..].starts_with('"') {
            names.push(after[..end].to_owned());
        }
        rest = &after[end..];
    }
    names
}

#[test]
fn every_variable_read_is_listed() {
    let root = root();
    let mut read = BTreeSet::new();
    for dir in ["core", "cpu", "cuda", "wgpu-backend", "shaders", "gpuworthy", "bench-suite", "tests", "python"] {
        for file in files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            read.extend(names_in(&text));
        }
    }
    assert!(read.contains("GPUWORTHY_BACKEND") && read.len() > 10, "the scan found too little: {read:?}");
    let listed: BTreeSet<&str> = VARIABLES.iter().map(|v| v.name).collect();
    let unlisted: Vec<&String> = read
        .iter()
        .filter(|name| !listed.contains(name.as_str()) && !NOT_VARIABLES.iter().any(|(n, _)| n == name))
        .collect();
    assert!(unlisted.is_empty(), "read but not in gpuworthy_core::env::VARIABLES: {unlisted:?}");
    for (name, why) in NOT_VARIABLES {
        assert!(!listed.contains(name), "{name} is listed as a variable, but here as not one ({why})");
    }
}

#[test]
fn the_scan_finds_a_planted_name() {
    let planted =
        r#"let x = env::read("GPUWORTHY_PLANTED")?; name.starts_with("GPUWORTHY_"); // "GPUWORTHY_X in a comment"#;
    assert_eq!(names_in(planted), ["GPUWORTHY_PLANTED"]);
}
