//! Every command the guide (`docs/*.md`) and the README show still works: each `gpuworthy ...` invocation (also one
//! run through `cargo run ... --bin gpuworthy --`, or a path ending in `gpuworthy` under `ncu` or
//! `compute-sanitizer`) parses against the tool's command line, each `cargo ... -p PACKAGE` names a package of the
//! workspace and each `--example` one of its examples, and the cheap ones (the CPU backend, small sizes, `devices`,
//! `explain`, expressions on the CPU) run and exit as the text says (0, or the code a trailing `# exits N` gives).
//!
//! Commands are taken from fenced code blocks and from inline code that starts with `gpuworthy ` or `cargo `.
//! Synopses with placeholders (`[--variant V]`, `<hash>`, `...`, words in capitals) are not invocations and are left
//! out; the test fails if it finds too few commands, so that it cannot pass by finding none.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use bench_suite::cli::{Cli, Command, RunArgs, Target};
use clap::Parser;
use gpuworthy::DeviceSpec;
use gpuworthy::core::Workload;
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::measure::size::ParseSize;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// A command found in a document, with where it was found.
#[derive(Debug)]
struct Found {
    file: String,
    line: usize,
    text: String,
}

/// The commands of one Markdown file: lines of fenced code blocks, and inline code spans (which may run across a
/// line break) that start like a command and give it an argument (a bare `gpuworthy run` names the subcommand).
fn commands_in(file: &Path) -> Vec<Found> {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file.strip_prefix(root()).unwrap_or(file).display().to_string();
    let mut found = Vec::new();
    let mut fenced: Option<String> = None;
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let inline = |paragraph: &mut Vec<(usize, &str)>, found: &mut Vec<Found>| {
        if let Some(&(first, _)) = paragraph.first() {
            let joined: Vec<&str> = paragraph.iter().map(|(_, l)| l.trim()).collect();
            for (k, span) in joined.join(" ").split('`').enumerate() {
                let command = span.starts_with("gpuworthy ") || span.starts_with("cargo ");
                if k % 2 == 1 && command && span.split_whitespace().count() > 2 {
                    found.push(Found { file: name.clone(), line: first, text: span.to_owned() });
                }
            }
        }
        paragraph.clear();
    };
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            inline(&mut paragraph, &mut found);
            fenced = if fenced.is_some() { None } else { Some(info.trim().to_owned()) };
            continue;
        }
        match &fenced {
            Some(lang) if lang.is_empty() || lang == "sh" || lang == "bash" || lang == "console" => {
                found.push(Found {
                    file: name.clone(),
                    line: i + 1,
                    text: trimmed.trim_start_matches("$ ").to_owned(),
                });
            }
            Some(_) => {}
            None if trimmed.is_empty() => inline(&mut paragraph, &mut found),
            None => paragraph.push((i + 1, line)),
        }
    }
    inline(&mut paragraph, &mut found);
    found
}

/// Splits a command line into words, honouring single and double quotes; `None` for shell syntax beyond that.
fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, ' ' | '\t') => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, ';' | '&' | '>' | '<' | '$' | '`' | '(' | ')') => return None,
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        out.push(word);
    }
    Some(out)
}

/// Whether `line` is a synopsis with placeholders rather than a command to run.
fn is_synopsis(line: &str) -> bool {
    line.contains('[') && !line.contains('\'')
        || line.contains("...")
        || line.contains('…')
        || line.contains('<')
        || line.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| c == ',' || c == '\'' || c == '"');
            !w.contains('=') && w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
        || line.split_whitespace().any(|w| w.len() == 1 && w.chars().all(|c| c.is_ascii_uppercase()))
}

/// A command ready to check: its environment, and the words after the program.
#[derive(Debug)]
enum Invocation {
    Gpuworthy { env: Vec<(String, String)>, args: Vec<String>, expect: i32 },
    Cargo { args: Vec<String> },
}

/// Reads one found line as an invocation, or `None` when it is not one this test checks.
fn invocation(found: &Found) -> Option<Invocation> {
    let (line, expect) = match found.text.split_once(" # ") {
        Some((command, comment)) => {
            let code = comment.trim().strip_prefix("exits ").and_then(|n| n.split_whitespace().next()?.parse().ok());
            (command.trim(), code.unwrap_or(0))
        }
        None => (found.text.trim(), 0),
    };
    if line.starts_with('#') || is_synopsis(line) {
        return None;
    }
    let mut words = words(line)?;
    let mut env = Vec::new();
    while let Some((name, value)) = words.first().and_then(|w| w.split_once('=')) {
        if !name.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()) {
            break;
        }
        env.push((name.to_owned(), value.to_owned()));
        words.remove(0);
    }
    let program = words.first()?.clone();
    if program == "cargo" {
        if let Some(at) = words.iter().position(|w| w == "--bin")
            && words.get(at + 1).map(String::as_str) == Some("gpuworthy")
        {
            let args = match words.iter().position(|w| w == "--") {
                Some(dash) => words[dash + 1..].to_vec(),
                None => Vec::new(),
            };
            return Some(Invocation::Gpuworthy { env, args, expect });
        }
        return Some(Invocation::Cargo { args: words[1..].to_vec() });
    }
    // `gpuworthy ...`, or a path to the binary anywhere in the line (under ncu or compute-sanitizer).
    let at = words.iter().position(|w| w == "gpuworthy" || w.ends_with("/gpuworthy"))?;
    Some(Invocation::Gpuworthy { env, args: words[at + 1..].to_vec(), expect })
}

/// The workspace's packages, by name, with their folders.
fn packages() -> Vec<(String, PathBuf)> {
    let mut packages = Vec::new();
    for entry in std::fs::read_dir(root()).unwrap().flatten() {
        let manifest = entry.path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest)
            && let Some(name) = text.lines().find_map(|l| l.strip_prefix("name = \""))
        {
            packages.push((name.trim_end_matches('"').to_owned(), entry.path()));
        }
    }
    packages
}

/// Checks a cargo command: its `-p` package exists and so does its `--example`.
fn check_cargo(args: &[String], packages: &[(String, PathBuf)]) -> Result<(), String> {
    let package = args.iter().position(|a| a == "-p").and_then(|i| args.get(i + 1));
    let Some(package) = package else { return Ok(()) };
    let (_, dir) =
        packages.iter().find(|(name, _)| name == package).ok_or_else(|| format!("no package `{package}`"))?;
    if let Some(example) = args.iter().position(|a| a == "--example").and_then(|i| args.get(i + 1)) {
        let file = dir.join("examples").join(format!("{example}.rs"));
        if !file.exists() {
            return Err(format!("package `{package}` has no example `{example}`"));
        }
    }
    Ok(())
}

/// Whether a parsed command is cheap enough to run here, on the CPU: `devices`, `explain`, `run` of a built-in workload
/// on the CPU at a size of at most 5·10^8 flops and 256 MiB, and `run --expr` on the CPU at up to 2^22 elements.
fn cheap(cli: &Cli) -> bool {
    match &cli.command {
        Command::Devices | Command::Explain { .. } => true,
        // An expression on the CPU at up to 2^22 elements (2^20 where no size is given).
        Command::Run(RunArgs { workload: None, expression, size, backend, .. }) if expression.expr.is_some() => {
            let on_cpu = matches!(backend, Some(Target::Device(DeviceSpec::Cpu)));
            let elements = size.as_deref().map_or(Ok(1 << 20), gpuworthy::measure::size::parse_count);
            on_cpu && elements.is_ok_and(|n| n <= 1 << 22)
        }
        Command::Run(RunArgs { workload, size, backend, params, lessons, .. }) => {
            let on_cpu = matches!(backend, Some(Target::Device(DeviceSpec::Cpu)) | None) && workload.is_some();
            /// Whether the run's size is at most 5·10^8 flops and 256 MiB.
            struct Small<'a> {
                size: Option<&'a str>,
                options: gpuworthy::measure::size::WorkloadOptions,
            }
            impl WorkloadVisitor for Small<'_> {
                type Output = bool;
                fn visit<W: CommandLineWorkload>(&mut self) -> bool {
                    let params_of = |s: &str| -> Option<<W as Workload>::Params> {
                        let mut p = <W as Workload>::Params::parse_size(s).ok()?;
                        p.apply(&self.options).ok()?;
                        Some(p)
                    };
                    let p = match self.size {
                        Some(s) => params_of(s),
                        None => W::quick_ladder().pop(),
                    };
                    p.is_some_and(|p| {
                        let c = W::cost(&p);
                        c.flops <= 500_000_000 && c.bytes <= 256 << 20
                    })
                }
            }
            let mut small = Small { size: size.as_deref(), options: params.options() };
            let small = workload.as_deref().is_some_and(|w| visit_workload_named(w, &mut small).unwrap_or(false));
            on_cpu && small && lessons.block_size.is_empty()
        }
        _ => false,
    }
}

#[test]
fn every_documented_command_parses_and_the_cheap_ones_run() {
    let mut files = vec![root().join("README.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    let packages = packages();
    let (mut parsed, mut ran, mut cargo) = (0, 0, 0);
    let mut failures = Vec::new();
    let scratch = std::env::temp_dir().join(format!("gpuworthy-docs-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for file in &files {
        for found in commands_in(file) {
            let place = format!("{}:{}: `{}`", found.file, found.line, found.text);
            match invocation(&found) {
                None => {}
                Some(Invocation::Cargo { args }) => {
                    cargo += 1;
                    if let Err(e) = check_cargo(&args, &packages) {
                        failures.push(format!("{place}: {e}"));
                    }
                }
                Some(Invocation::Gpuworthy { env, args, expect }) => {
                    let cli = match Cli::try_parse_from(std::iter::once("gpuworthy".to_owned()).chain(args.clone())) {
                        Ok(cli) => cli,
                        Err(e) if e.exit_code() == 0 => continue, // --help, --version
                        Err(e) if expect == 2 => {
                            let _ = e;
                            parsed += 1;
                            continue;
                        }
                        Err(e) => {
                            failures.push(format!("{place}: does not parse: {e}"));
                            continue;
                        }
                    };
                    parsed += 1;
                    if !cheap(&cli) {
                        continue;
                    }
                    let mut args = args;
                    if matches!(cli.command, Command::Run(RunArgs { quick: false, .. })) {
                        args.push("--quick".into());
                    }
                    // Output files the command names are written in a scratch folder, and calibration files too.
                    let out = Process::new(common::binary())
                        .args(&args)
                        .envs(env.iter().cloned())
                        .env("GPUWORTHY_CALIBRATION", scratch.join("calibration.json"))
                        .current_dir(&scratch)
                        .output()
                        .unwrap();
                    ran += 1;
                    if out.status.code() != Some(expect) {
                        failures.push(format!(
                            "{place}: exited {:?}, the text expects {expect}: {}",
                            out.status.code(),
                            String::from_utf8_lossy(&out.stderr)
                        ));
                    }
                }
            }
        }
    }
    println!("{parsed} gpuworthy commands parsed, {ran} of them run, {cargo} cargo commands checked");
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(failures.is_empty(), "{} documented commands fail:\n{}", failures.len(), failures.join("\n"));
    assert!(
        parsed >= 40 && ran >= 5 && cargo >= 10,
        "too few commands found: {parsed} parsed, {ran} run, {cargo} cargo"
    );
}

#[test]
fn synopses_are_told_from_commands() {
    assert!(is_synopsis("gpuworthy run WORKLOAD --size S --backend B [--variant V]"));
    assert!(is_synopsis("compute-sanitizer --tool memcheck target/release/deps/conformance-<hash> conformance::cuda"));
    assert!(!is_synopsis("gpuworthy run square --size 2^24 --backend cuda --variant vec4 --no-sync --quick"));
    assert!(!is_synopsis("GPUWORTHY_BACKEND=cuda:1 cargo run --release -p gpuworthy --example 03_choose_device"));
    let found =
        Found { file: "x".into(), line: 1, text: "gpuworthy run sum --size 1K --backend opencl # exits 2".into() };
    match invocation(&found) {
        Some(Invocation::Gpuworthy { expect: 2, args, .. }) => assert_eq!(args[0], "run"),
        other => panic!("{other:?}"),
    }
    assert_eq!(words("a 'b c' \"d\"").unwrap(), ["a", "b c", "d"]);
    assert!(words("for b in 1 2; do x; done").is_none());
}
