//! Every figure the guide quotes beside a results file is in that file: in `docs/*.md` and the README, each paragraph
//! (list item, or table row) that cites files under `docs/results/` (a Markdown link, or a file name in backticks) has
//! each of its measured figures (a number with a unit of time, bandwidth, rate or size: `2.95 ms`, `2957 GB/s`,
//! `512 MiB`; or a percentage: `97%`; or a crossover, a size written before its backend: `64x64x64 (cuda)`) written
//! somewhere in the files it cites. A table row that cites no file takes the files of the paragraph just before its
//! table. A figure after a hedge (`about`, `under`, `up to`, ...) is a goal or an estimate, not a quotation, and is
//! left alone; so are code blocks, whose outputs are examples.
//!
//! A stale figure (a chapter quoting one run while citing another) fails here with the chapter, the figure and the
//! files it was looked for in.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// The units a quoted figure carries, longest first so that `GB/s` is not read as `GB`.
const UNITS: [&str; 12] = ["GFLOP/s", "TFLOP/s", "GB/s", "TB/s", "KiB", "MiB", "GiB", "µs", "us", "ns", "ms", "s"];

/// Words before a figure that make it a goal, a bound or an estimate rather than a measurement quoted.
const HEDGES: [&str; 14] = [
    "about ",
    "~",
    "≈",
    "under ",
    "over ",
    "below ",
    "above ",
    "up to ",
    "at most ",
    "at least ",
    "within ",
    "less than ",
    "more than ",
    "per ",
];

/// The figures of `text`: each number followed by a unit, or directly by `%`, with the number as written.
fn figures(text: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0
                || !(chars[i - 1].is_alphanumeric() || matches!(chars[i - 1], '.' | '^' | '-' | '_' | '/' | 'x')));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit() || (chars[j] == '.' && j + 1 < chars.len() && chars[j + 1].is_ascii_digit()))
        {
            j += 1;
        }
        let number: String = chars[i..j].iter().collect();
        let unit = if chars.get(j) == Some(&'%') {
            Some("%")
        } else {
            let mut k = j;
            if k < chars.len() && chars[k] == ' ' {
                k += 1;
            }
            let rest: String = chars[k..chars.len().min(k + 8)].iter().collect();
            UNITS
                .iter()
                .find(|u| {
                    rest.starts_with(*u)
                        && rest[u.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '/')
                })
                .copied()
        };
        if let Some(unit) = unit {
            let before: String = chars[i.saturating_sub(12)..i].iter().collect::<String>().to_lowercase();
            if !HEDGES.iter().any(|h| before.ends_with(h)) {
                let figure = if unit == "%" { format!("{number}%") } else { format!("{number} {unit}") };
                found.push((number, figure));
            }
        }
        i = j.max(i + 1);
    }
    found
}

/// The numbers of `text` (integers, decimals, and exponents as JSON writes them).
fn numbers(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Whether one of `values` (in base units, or in the figure's unit a thousand times larger or smaller: µs for ms)
/// written in `figure`'s unit and rounded to `number`'s decimals is `number`.
fn rounds_to(number: &str, figure: &str, values: &[f64]) -> bool {
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    let scale = match figure.rsplit(' ').next().unwrap_or_default() {
        "ms" => 1e3,
        "µs" | "us" => 1e6,
        "ns" => 1e9,
        "GB/s" | "GFLOP/s" => 1e-9,
        "TB/s" | "TFLOP/s" => 1e-12,
        "KiB" => 1.0 / 1024.0,
        "MiB" => 1.0 / 1048576.0,
        "GiB" => 1.0 / 1073741824.0,
        _ => 1.0,
    };
    values.iter().any(|v| [1.0, scale, 1e-3, 1e3].iter().any(|s| format!("{:.*}", decimals, v * s) == number))
}

/// Whether `number` is written in `text` as a number of its own, not as part of a longer one: a percentage is looked
/// for this way, since two digits are found inside almost any file's longer numbers (`97` in `497 µs`).
fn written(number: &str, text: &str) -> bool {
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    text.match_indices(number).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let mut after = text[at + number.len()..].chars();
        let (next, then) = (after.next(), after.next());
        let inside_a_number = digit(before) || before == Some('.') || digit(next) || (next == Some('.') && digit(then));
        !inside_a_number
    })
}

/// The crossovers of `text`: each size (`65536`, `64x64`, `64x64x64`) written just before the backend it was measured
/// on, as the sweep's tables write them (`65536 (cuda)`).
fn crossovers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for backend in [" (cuda", " (wgpu", " (cpu"] {
        for (at, _) in text.match_indices(backend) {
            let size: String = text[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_digit() || *c == 'x')
                .collect::<Vec<char>>()
                .into_iter()
                .rev()
                .collect();
            let size = size.trim_start_matches('x');
            let whole = text[..at - size.len()]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '.' || c == '^'));
            if !size.is_empty() && whole && size.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                found.push(size.to_owned());
            }
        }
    }
    found
}

/// Whether the size `size` is written in `text` as a size of its own (`64x64` is not in `64x64x64`).
fn size_written(size: &str, text: &str) -> bool {
    text.match_indices(size).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + size.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '.') && !after.is_some_and(|c| c.is_alphanumeric())
    })
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The results files `unit` cites: Markdown links into a `results/` folder (relative to `base`), and file names in
/// backticks found under `results` (every file of that name).
fn cited(unit: &str, base: &Path, results: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for link in unit.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or_default().split('#').next().unwrap_or_default();
        if target.contains("results/") && [".txt", ".json", ".csv", ".md"].iter().any(|e| target.ends_with(e)) {
            let path = base.join(target);
            if path.exists() {
                files.push(path);
            }
        }
    }
    for (k, span) in unit.split('`').enumerate() {
        if k % 2 == 1 && [".txt", ".json", ".csv"].iter().any(|e| span.ends_with(e)) && !span.contains(' ') {
            let name = span.rsplit('/').next().unwrap_or(span);
            files.extend(results.iter().filter(|p| p.file_name().is_some_and(|f| f == name)).cloned());
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The figures of `markdown` (a document in `base`) that cite results files and are not in any of them, as
/// `line: figure (looked for in files)`.
fn misquoted(markdown: &str, base: &Path, results: &[PathBuf]) -> Vec<String> {
    // Each unit: its first line, its text, and for a table row the index of the unit just before its table.
    let mut units: Vec<(usize, String, Option<usize>)> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut fenced = false;
    let mut before_table = None;
    for (i, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            before_table = None;
            continue;
        }
        if fenced {
            continue;
        }
        let row = line.trim_start().starts_with('|');
        if line.trim().is_empty() || row {
            if !paragraph.is_empty() {
                units.push((start + 1, paragraph.join("\n"), None));
                paragraph.clear();
                before_table = Some(units.len() - 1);
            }
            if row {
                units.push((i + 1, line.to_owned(), before_table));
            }
            continue;
        }
        // A list item is a unit of its own: each bullet cites its own files.
        let trimmed = line.trim_start();
        let item = trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed.split_once(". ").is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if item && !paragraph.is_empty() {
            units.push((start + 1, paragraph.join("\n"), None));
            paragraph.clear();
            before_table = Some(units.len() - 1);
        }
        if paragraph.is_empty() {
            start = i;
        }
        paragraph.push(line);
    }
    if !paragraph.is_empty() {
        units.push((start + 1, paragraph.join("\n"), None));
    }
    let mut wrong = Vec::new();
    for (line, unit, before) in &units {
        let own = cited(unit, base, results);
        let files = match before {
            Some(k) if own.is_empty() => cited(&units[*k].1, base, results),
            _ => own,
        };
        if files.is_empty() {
            continue;
        }
        let text: String = files.iter().map(|f| std::fs::read_to_string(f).unwrap_or_default()).collect();
        // Files may hold a figure at full precision or in another unit (exports in seconds and bytes per second, a
        // probe's table in µs where the text says ms): a figure is found when one of their numbers, in the figure's
        // unit, rounds to it. A percentage must be written as it is quoted (`93%`, or `93` in a column of `%`).
        let exported: Vec<f64> = numbers(&text);
        for size in crossovers(unit) {
            if !size_written(&size, &text) {
                let names: Vec<String> =
                    files.iter().map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string()).collect();
                wrong.push(format!("{line}: crossover {size} (not in {})", names.join(", ")));
            }
        }
        for (number, figure) in figures(unit) {
            let found = if figure.ends_with('%') {
                written(&number, &text)
            } else {
                text.contains(&number) || rounds_to(&number, &figure, &exported)
            };
            if !found {
                let names: Vec<String> =
                    files.iter().map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string()).collect();
                wrong.push(format!("{line}: {figure} (not in {})", names.join(", ")));
            }
        }
    }
    wrong
}

#[test]
fn every_figure_quoted_beside_a_results_file_is_in_that_file() {
    let results = files_under(&root().join("docs").join("results"));
    let mut documents: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    documents.push(root().join("README.md"));
    documents.sort();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        let base = document.parent().unwrap();
        checked += figures(&text).len();
        for miss in misquoted(&text, base, &results) {
            wrong.push(format!("{}:{miss}", document.strip_prefix(root()).unwrap().display()));
        }
    }
    assert!(checked > 300, "only {checked} figures found in the guide: the scan is broken");
    assert!(wrong.is_empty(), "figures not found in the files cited beside them:\n{}", wrong.join("\n"));
}

#[test]
fn a_figure_that_is_not_in_its_file_is_found_and_a_hedged_one_is_not() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-figures-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let file = dir.join("results").join("run.txt");
    std::fs::write(&file, "square 2^26: kernel 2.95 ms, 181 GB/s, 93% of the copy peak; 497 µs end to end\n").unwrap();
    let results = vec![file];
    let right = "Square took 2.95 ms at 181 GB/s ([run](results/run.txt)).";
    assert!(misquoted(right, &dir, &results).is_empty());
    let wrong = "Square took 2.59 ms at 181 GB/s ([run](results/run.txt)).";
    let found = misquoted(wrong, &dir, &results);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("2.59 ms") && found[0].contains("run.txt"), "{found:?}");
    // Named in backticks, in a table row, the same; a hedged figure and one in a code block are not quotations.
    assert_eq!(misquoted("| square | 3.1 ms | `run.txt` |", &dir, &results).len(), 1);
    assert!(misquoted("It should take under 10 µs (`run.txt`).", &dir, &results).is_empty());
    assert!(misquoted("```\n9.99 ms\n```\n`run.txt`", &dir, &results).is_empty());
    // A paragraph that cites no results file is not checked.
    assert!(misquoted("A GPU can take 5 ms.", &dir, &results).is_empty());
    // A percentage is a figure: 93% is in the file, 97% is not (only inside 497), and a hedged one is an estimate.
    assert!(misquoted("It reached 93% of the copy peak (`run.txt`).", &dir, &results).is_empty());
    let found = misquoted("It reached 97% of the copy peak (`run.txt`).", &dir, &results);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("97%") && found[0].contains("run.txt"), "{found:?}");
    assert!(misquoted("It reached about 97% of the copy peak (`run.txt`).", &dir, &results).is_empty());
    // A table row that cites nothing is checked against the files of the paragraph just before its table.
    let table = "From [run](results/run.txt):\n\n| a | b |\n|---|---|\n| vec4 | 2.95 ms |\n| naive | 2.59 ms |";
    let found = misquoted(table, &dir, &results);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("6: 2.59 ms"), "{found:?}");
    assert!(misquoted("From [run](results/run.txt):\n\n```\nx\n```\n\n| naive | 2.59 ms |", &dir, &results).is_empty());
    // A crossover is a size written before its backend: one the file does not hold is found, and a smaller size is
    // not found inside a larger one.
    std::fs::write(&results[0], "crossover, data resident on the GPU: 64x64x64 (cuda); 65536 elements\n").unwrap();
    assert!(misquoted("Resident from 64x64x64 (cuda) ([run](results/run.txt)).", &dir, &results).is_empty());
    assert!(misquoted("Resident from 65536 (cuda) ([run](results/run.txt)).", &dir, &results).is_empty());
    let found = misquoted("Resident from 128x128x128 (wgpu) ([run](results/run.txt)).", &dir, &results);
    assert!(found.len() == 1 && found[0].contains("crossover 128x128x128"), "{found:?}");
    let found = misquoted("Resident from 64x64 (cuda) ([run](results/run.txt)).", &dir, &results);
    assert!(found.len() == 1 && found[0].contains("crossover 64x64 "), "{found:?}");
}
