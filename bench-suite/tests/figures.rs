//! Every figure the guide quotes beside a results file is what that file says: in `docs/*.md`, the READMEs under
//! `docs/results/` (whose links are relative to their own folder) and the project's README, each paragraph (list
//! item, or table row) that cites files under `docs/results/` (a Markdown link, or a file name in backticks that
//! names one file) has each of its measured figures (a number with a unit of time, bandwidth, rate or size: `2.95 ms`, `2957 GB/s`; a percentage: `97%`; a spread: `±4%`; or a crossover, a size written before its
//! backend: `64x64x64 (cuda)`) in the files it cites, matched as a reviewer would match it:
//!
//! - the same quantity: the number with its unit beside it or heading its column, not the same digits inside a
//!   longer number, in another unit, or as a spread beside a median;
//! - the same precision: in the unit the file writes, the digits as written (`4.3 ms` does not quote `4.28 ms`); a
//!   figure in another unit of its kind (`150.8 TFLOP/s` for `150837.6 GFLOP/s`) or from an export's full precision
//!   (`.csv`, `.json`, in seconds) must round to the quoted digits;
//! - the row cited: a row of a table keyed by size (a sweep's) or a run's variant under its heading counts only if
//!   the quotation names that size (`2^24` is `16777216`, `2048` names `2048x2048x2048`); an export's record only if
//!   its workload, variant and device are among those the quotation names, and its phase (upload, kernel, ...) the one
//!   the sentence names before the figure; a row of one storage type (its line's, `bf16: ...`, or its run title's,
//!   `... on bf16 arrays at ...`; `f32` under a title that names none, in a file of 16-bit runs) only for a figure
//!   whose clause names that type or none.
//!
//! - the column: a bare number in a table takes the unit heading its column (the cell of the same index in a Markdown
//!   table, the heading its characters lie under in a fixed-width one, or, in a row shifted by a prefix of its own,
//!   the columns in order), never one of another table's; an export's quartiles (`kernel_p25_s`) are not its median;
//!   a lab's `min` and `max` columns are its spread; in a sweep's or a run's table, a figure's column says its
//!   backend and phase (`cuda kernel`, `upload`), which must be those the quotation gives it, where it gives one (the
//!   words just before it in its clause, `CUDA's kernel 17.3 µs`; just after it, `107 ms to compile`; or its table's
//!   heading, `kernel times with the data resident`); a run's rows under a title that names an expression (`` `y =
//!   a*x + b` on bf16 arrays at ...``) are that expression's, not another's named just before the figure or by a
//!   quoting table row; and a share of a copy peak labelled with a variant (`naive 66%, vec4 97%`) is not another
//!   variant's that a quoting table row names (`` | CUDA `vec4` | ``);
//! - the file cited: a figure whose own sentence names some of the paragraph's files (a link, or the file's name) is
//!   looked for in those alone; one whose sentence names none, in every file the paragraph cites; a link to a
//!   section of a README (`README.md#anchor`, or `section "Title"`) looks in that section alone, and a README row that
//!   names its run's file (`nvidia-h200-35.txt`) counts only for a figure whose sentence (or the one before it) names
//!   that run, where it names any.
//!
//! A table row that cites no file takes the files of the paragraph just before its table, whose words it is read
//! with. A figure after a hedge (`about`, `under`, `up to`, ...) is a goal or an estimate, not a quotation, and is
//! left alone; so are code blocks, whose outputs are examples, and a whole power of two of KiB, MiB or GiB, a buffer's
//! size. A file name in backticks that fits several results files is an error until the paragraph links the one it
//! means. The check is itself tested by mutation: the guide's figures changed by x1.5 or in their last digit must
//! fail it. With `GPUWORTHY_FIGURES_EXPLAIN=1`, a failure also prints where the same figure is written and the
//! words of its row, and the mutation test prints every changed figure the check still accepts.

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

/// The figures of `text`: each number followed by a unit, or directly by `%`, with the number as written and its
/// index (in characters) in `text`.
fn figures_at(text: &str) -> Vec<(usize, String, String)> {
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
        // A range (`9.7-9.8 ms`, `50–57 s`) quotes two figures in the unit after the second.
        let range_end = (matches!(chars.get(j), Some('-' | '–')) && chars.get(j + 1).is_some_and(char::is_ascii_digit))
            .then(|| {
                let mut k = j + 1;
                while k < chars.len()
                    && (chars[k].is_ascii_digit()
                        || (chars[k] == '.' && chars.get(k + 1).is_some_and(char::is_ascii_digit)))
                {
                    k += 1;
                }
                k
            });
        let (second, j) = match range_end {
            Some(k) => (Some((j + 1, chars[j + 1..k].iter().collect::<String>())), k),
            None => (None, j),
        };
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
                // A spread (`±4%`) is checked against the files' spreads, not their medians.
                let figure = if i > 0 && chars[i - 1] == '±' {
                    format!("{number} ±")
                } else if unit == "%" {
                    format!("{number}%")
                } else {
                    format!("{number} {unit}")
                };
                let unit_text = figure.strip_prefix(number.as_str()).unwrap_or_default().to_owned();
                found.push((i, number, figure));
                if let Some((at, second)) = second {
                    found.push((at, second.clone(), format!("{second}{unit_text}")));
                }
            }
        }
        i = j.max(i + 1);
    }
    found
}

/// What an exported value measures, from its column or key name, in the unit the export writes it: `*_s` columns
/// are seconds, `gb_per_s` GB/s, `gflop_per_s` GFLOP/s, `bytes` bytes. Other columns are not compared with figures.
fn exported_quantity(name: &str) -> Option<&'static str> {
    if name.ends_with("_p25_s") || name.ends_with("_p75_s") {
        None
    } else if name.ends_with("_s") && !name.ends_with("per_s") {
        Some("s")
    } else if name.ends_with("gb_per_s") {
        Some("GB/s")
    } else if name.ends_with("gflop_per_s") {
        Some("GFLOP/s")
    } else if name == "bytes" {
        Some("B")
    } else {
        None
    }
}

/// The phase a column or key of an export times (`upload_s`: the upload), or `None` for one that is not a phase's.
fn column_phase(name: &str) -> Option<&'static str> {
    Some(match name {
        "upload_s" => "upload",
        "download_s" => "download",
        "kernel_s" | "kernel_p25_s" | "kernel_p75_s" => "kernel",
        "end_to_end_s" | "pipelined_s" => "end-to-end",
        "compile_s" => "compile",
        "first_call_s" => "first call",
        _ => return None,
    })
}

/// The phase a quotation names last before character `at` of `text` in the same sentence (`downloads in 16.4 ms`:
/// the download), or `None`.
fn phase_before(text: &[char], at: usize) -> Option<&'static str> {
    let start = (0..at)
        .rev()
        .find(|&i| text[i] == '.' && text.get(i + 1).is_some_and(|c| c.is_whitespace()))
        .map_or(0, |i| i + 1);
    let before: String = text[start..at].iter().collect::<String>().to_lowercase();
    [
        ("upload", "upload"),
        ("download", "download"),
        ("kernel", "kernel"),
        ("end to end", "end-to-end"),
        ("end-to-end", "end-to-end"),
        ("whole run", "end-to-end"),
        ("compil", "compile"),
        ("first call", "first call"),
    ]
    .iter()
    .filter_map(|(word, phase)| before.rfind(word).map(|at| (at, *phase)))
    .max_by_key(|(at, _)| *at)
    .map(|(_, phase)| phase)
}

/// The built-in workloads' names, as exports write them in their records.
const WORKLOADS: [&str; 9] =
    ["square", "saxpy", "sum", "softmax", "matmul", "mandelbrot", "histogram", "stencil", "scan"];

/// Words too common in the guide and in the results to tell one row from another.
const COMMON: [&str; 40] = [
    "the",
    "and",
    "for",
    "with",
    "from",
    "one",
    "two",
    "its",
    "all",
    "per",
    "not",
    "but",
    "than",
    "each",
    "run",
    "runs",
    "kernel",
    "upload",
    "download",
    "end",
    "end-to-end",
    "compile",
    "first",
    "call",
    "check",
    "checked",
    "passed",
    "ok",
    "time",
    "times",
    "median",
    "variant",
    "size",
    "elements",
    "data",
    "host",
    "resident",
    "measured",
    "against",
    "results",
];

/// The words that can tell one row of a results file from another: sizes (`16777216`, `4096x4096`; `2^24` read as
/// `16777216`) and names (`vec4`, `simd`, `square`, `e1`, `mma-bf16`), lower-cased; units, numbers that are not a
/// power of two of 1024 or more (figures, not sizes) and common words are left out. Link targets (`](results/...)`) are not words of a quotation.
fn keys(text: &str) -> std::collections::BTreeSet<String> {
    let mut cleaned = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        cleaned.push_str(&rest[..at]);
        rest = rest[at + 2..].split_once(')').map_or("", |(_, after)| after);
    }
    cleaned.push_str(rest);
    let mut found = std::collections::BTreeSet::new();
    for word in cleaned.split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '^'))) {
        let word = word.trim_matches(|c: char| matches!(c, '-' | '_')).to_lowercase();
        if let Some((base, power)) = word.split_once('^') {
            if let (Ok(2), Ok(power)) = (base.parse::<u32>(), power.parse::<u32>())
                && power < 64
            {
                found.insert((1u64 << power).to_string());
            }
            continue;
        }
        let is_size = word.split('x').all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()));
        if is_size {
            // A ladder's sizes are powers of two; another number of four digits or more is a figure (`4103` GB/s).
            if word.contains('x') || word.parse::<u64>().is_ok_and(|n| n >= 1024 && n.is_power_of_two()) {
                // A square or cube (`2048x2048x2048`) is also named by its side (`matmul at 2048`).
                let parts: Vec<&str> = word.split('x').collect();
                if parts.len() > 1 && parts.iter().all(|p| *p == parts[0]) {
                    found.insert(parts[0].to_owned());
                }
                found.insert(word);
            }
            continue;
        }
        let has_letter = word.chars().any(char::is_alphabetic);
        let long_enough =
            word.chars().count() >= 3 || (word.chars().count() == 2 && word.chars().any(|c| c.is_ascii_digit()));
        if has_letter
            && long_enough
            && !COMMON.contains(&word.as_str())
            && !UNITS.iter().any(|u| u.to_lowercase() == word)
        {
            found.insert(word);
        }
    }
    found
}

/// A heading's anchor as Markdown renderers make it: lower case, spaces as hyphens, other punctuation dropped.
fn anchor_of(title: &str) -> String {
    title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The names of runs' files in `text` (`nvidia-h200-35` of `nvidia-h200-35.txt`, `2-core-lavapipe-32`): a word of
/// ASCII letters, digits and hyphens with a word of three letters, ending in a hyphen and a number.
fn run_names(text: &str) -> std::collections::BTreeSet<String> {
    run_names_among(&text.split(|c: char| !(c.is_alphanumeric() || c == '-')).map(str::to_lowercase).collect())
}

/// The words of `words` that name a run's file ([`run_names`]).
fn run_names_among(words: &std::collections::BTreeSet<String>) -> std::collections::BTreeSet<String> {
    words
        .iter()
        .filter(|w| {
            w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && w.rsplit_once('-').is_some_and(|(head, n)| {
                    head.split(|c: char| !c.is_ascii_alphabetic()).any(|letters| letters.len() >= 3)
                        && !n.is_empty()
                        && n.chars().all(|c| c.is_ascii_digit())
                })
        })
        .cloned()
        .collect()
}

/// Whether a figure of a row whose words are `row` can be the one a quotation with words `quote` means: the row's
/// sizes, if it has any, include one the quotation names, and the two share a name (or the row has none).
fn same_row(row: &std::collections::BTreeSet<String>, quote: &std::collections::BTreeSet<String>) -> bool {
    let is_size = |w: &&String| w.chars().next().is_some_and(|c| c.is_ascii_digit());
    let sizes: Vec<&String> = row.iter().filter(is_size).collect();
    let names: Vec<&String> = row.iter().filter(|w| !is_size(w)).collect();
    let _ = names;
    sizes.is_empty() || sizes.iter().any(|s| quote.contains(*s))
}

/// A results file as the check reads it: its text; each figure it writes, as written, with the words of its row; and
/// for an export (`.csv`, `.json`) each value by quantity, in the unit the export writes, with its record's words.
struct Source {
    /// Where the file is.
    path: PathBuf,
    text: String,
    /// Each number the file writes with its unit (beside it, or heading its column) and its row's index in `rows`.
    written: Vec<(String, &'static str, usize, Column)>,
    /// Each exported value: its quantity, its value, and its record's index in `rows`.
    exported: Vec<(&'static str, f64, usize, Option<&'static str>)>,
    /// The words of each row: a line with the first line of its block (a table's title), or an export's record.
    rows: Vec<std::collections::BTreeSet<String>>,
    /// A README's sections: each heading's anchor (`#probes-near-the-ladder`) and the rows from it to the next
    /// heading of its level or above.
    sections: Vec<(String, std::ops::Range<usize>)>,
    /// The expression a run's rows measure, by row: the one in backticks that starts their title (`` `y = a*x + b` at
    /// 67108864 on cuda``), without spaces.
    expressions: std::collections::BTreeMap<usize, String>,
    /// The backend a run's rows ran on, by row: the word after the last ` on ` of their title that names one
    /// (`` `y = a*x + b` on bf16 arrays at 67108864 on cuda (...)``, `square 65536 on wgpu (...)`).
    title_backends: std::collections::BTreeMap<usize, &'static str>,
    /// The variant each share of a run's copy peak is labelled with (`naive 66%, vec4 97%`), by its index in
    /// `written`.
    share_labels: std::collections::BTreeMap<usize, String>,
    /// The storage type of each run's row (by row): the one its own line names (`bf16: device-to-device copy`) or
    /// its run's title (`` `y = a*x + b` on bf16 arrays at 67108864 on cuda``); in a file whose titles name 16-bit
    /// types, the rows under a title that names none are `f32`'s.
    dtypes: std::collections::BTreeMap<usize, &'static str>,
    /// The runs a row of prose names by their files (`nvidia-h200-35.txt` in a README's table), by row.
    runs: std::collections::BTreeMap<usize, std::collections::BTreeSet<String>>,
    /// For an export's record (by row): its variant and its device's label, lower-cased.
    records: std::collections::BTreeMap<usize, (Option<String>, Option<String>)>,
    /// Every variant and label an export's records name.
    variants: std::collections::BTreeSet<String>,
    labels: std::collections::BTreeSet<String>,
}

impl Source {
    /// The file read once per test run (a file rewritten since, as the unit tests do, is read again).
    fn cached(path: &Path) -> std::sync::Arc<Source> {
        type Key = (PathBuf, u64, Option<std::time::SystemTime>);
        static CACHE: std::sync::Mutex<Vec<(Key, std::sync::Arc<Source>)>> = std::sync::Mutex::new(Vec::new());
        let meta = std::fs::metadata(path).ok();
        let key = (path.to_path_buf(), meta.as_ref().map_or(0, |m| m.len()), meta.and_then(|m| m.modified().ok()));
        let mut cache = CACHE.lock().unwrap();
        if let Some((_, source)) = cache.iter().find(|(k, _)| *k == key) {
            return source.clone();
        }
        let source = std::sync::Arc::new(Source::read(path));
        cache.push((key, source.clone()));
        source
    }

    fn read(path: &Path) -> Source {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut source = Source {
            path: path.to_path_buf(),
            text: String::new(),
            written: Vec::new(),
            exported: Vec::new(),
            rows: Vec::new(),
            runs: Default::default(),
            dtypes: Default::default(),
            share_labels: Default::default(),
            expressions: Default::default(),
            title_backends: Default::default(),
            sections: Vec::new(),
            records: Default::default(),
            variants: Default::default(),
            labels: Default::default(),
        };
        match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => {
                let mut lines = text.lines().filter(|l| !l.starts_with('#'));
                let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
                for line in lines {
                    let row = source.rows.len();
                    let mut words = std::collections::BTreeSet::new();
                    let mut record = (None, None);
                    for (name, cell) in header.iter().zip(line.split(',')) {
                        if let (Some(quantity), Ok(value)) = (exported_quantity(name), cell.parse::<f64>()) {
                            source.exported.push((quantity, value, row, column_phase(name)));
                        } else if matches!(*name, "workload" | "size" | "variant" | "backend" | "label") {
                            words.extend(keys(cell));
                        }
                        source.note_record(&mut record, name, cell);
                    }
                    source.rows.push(words);
                    source.records.insert(row, record);
                }
            }
            Some("json") => {
                if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
                    source.walk(&value);
                }
            }
            _ => {}
        }
        // A results README is prose: its lines are not run headings and the rows under them.
        let prose = path.extension().is_some_and(|e| e == "md");
        let first_row = source.rows.len();
        source.read_written(&text, prose);
        if prose {
            let headings: Vec<(usize, usize, String)> = text
                .lines()
                .enumerate()
                .filter_map(|(k, line)| {
                    let level = line.chars().take_while(|c| *c == '#').count();
                    let title = line[level..].strip_prefix(' ')?;
                    (level > 0).then(|| (k, level, anchor_of(title)))
                })
                .collect();
            for (n, (k, level, anchor)) in headings.iter().enumerate() {
                let end = headings[n + 1..].iter().find(|(_, l, _)| l <= level).map_or(text.lines().count(), |h| h.0);
                source.sections.push((anchor.clone(), first_row + k..first_row + end));
            }
        }
        source.text = text;
        source
    }

    /// Notes a record's variant or device label (from a field `name` of value `cell`), and adds it to the file's.
    fn note_record(&mut self, record: &mut (Option<String>, Option<String>), name: &str, cell: &str) {
        let value = cell.trim().to_lowercase();
        if value.is_empty() {
            return;
        }
        match name {
            "variant" => {
                self.variants.insert(value.clone());
                record.0 = Some(value);
            }
            "label" | "backend" => {
                self.labels.insert(value.clone());
                record.1 = Some(value);
            }
            _ => {}
        }
    }

    /// Whether the record at `row` (an export's) is one the quotation can mean: where it names variants or devices
    /// of the file, the record's are among them.
    fn record_named(&self, row: usize, quote: &std::collections::BTreeSet<String>) -> bool {
        let Some((variant, label)) = self.records.get(&row) else { return true };
        let fits = |universe: &std::collections::BTreeSet<String>, value: &Option<String>| {
            let named: Vec<&String> = universe.iter().filter(|v| quote.contains(*v)).collect();
            named.is_empty() || value.as_ref().is_none_or(|v| named.contains(&v))
        };
        fits(&self.variants, variant) && fits(&self.labels, label)
    }

    /// An export's values, each object with a value of a known quantity a record of its own, its words those of its
    /// naming fields and of the objects around it (a row inside its workload's sweep).
    fn walk(&mut self, value: &serde_json::Value) {
        fn go(source: &mut Source, value: &serde_json::Value, around: &std::collections::BTreeSet<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    let mut words = around.clone();
                    let mut record = (None, None);
                    for (k, v) in map {
                        if matches!(k.as_str(), "workload" | "size" | "variant" | "backend" | "label" | "device") {
                            if let Some(text) = v.as_str() {
                                words.extend(keys(text));
                                source.note_record(&mut record, k, text);
                            } else if let Some(n) = v.as_u64() {
                                words.extend(keys(&n.to_string()));
                            }
                        }
                    }
                    let row = source.rows.len();
                    source.rows.push(words.clone());
                    source.records.insert(row, record);
                    for (k, v) in map {
                        match (exported_quantity(k), v.as_f64()) {
                            (Some(quantity), Some(x)) => source.exported.push((quantity, x, row, column_phase(k))),
                            _ => go(source, v, &words),
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| go(source, v, around)),
                _ => {}
            }
        }
        go(self, value, &std::collections::BTreeSet::new());
    }

    /// The figures the file writes: each number with the unit beside it, or, for a bare number, each unit that heads
    /// a column in the lines above it (up to a blank line), as its tables print them; each with its row's words.
    fn read_written(&mut self, text: &str, prose: bool) {
        let mut headers: Vec<(&'static str, usize, usize, Option<usize>)> = Vec::new();
        let mut title_expression: Option<String> = None;
        let mut title_backend: Option<&'static str> = None;
        // The columns of a sweep's table (`size  cpu kernel  cuda kernel  cuda e2e ...`) or of a run's (`variant
        // compile  first  upload  kernel ...`): each column's backend and phase, and its span in the header line.
        let mut columns: Vec<(Column, usize, usize)> = Vec::new();
        let mut title = std::collections::BTreeSet::new();
        // The storage type the current run's title names (`Some(None)`: a title that names none).
        let mut title_dtype: Option<Option<&'static str>> = None;
        let mut unnamed_dtype = Vec::new();
        for line in text.lines() {
            if line.trim().is_empty() {
                headers.clear();
                title.clear();
                title_expression = None;
                title_backend = None;
                title_dtype = None;
                columns.clear();
                self.rows.push(Default::default()); // a row a line, so that a README's sections are its lines
                continue;
            }
            // A title names what the lines after it measure, until the next: a section (`== square`), a command
            // (`$ gpuworthy ...`), or a run's heading (`matmul 8192x8192x8192 on cuda (...)`, a size before " on ").
            let trimmed = line.trim_start();
            let heading = !prose
                && line.match_indices(" on ").any(|(at, _)| {
                    keys(&line[..at]).iter().any(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
                });
            // A title also starts a new table: the columns of the one before it no longer head anything.
            if heading {
                title = keys(line);
                title_dtype = Some(one_dtype(line));
                headers.clear();
                title_backend = line
                    .split(" on ")
                    .skip(1)
                    .filter_map(|after| {
                        let word: String = after.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
                        BACKENDS.iter().copied().find(|b| *b == word)
                    })
                    .last();
            } else if trimmed.starts_with("==") || trimmed.starts_with('#') {
                title.clear();
                title_expression = None;
                title_backend = None;
                title_dtype = None;
                headers.clear();
                columns.clear();
            } else if trimmed.starts_with('$') {
                title.clear();
            }
            // A row is named by its size where a table is keyed by size (a sweep's `16777216  418 µs (simd) ...`),
            // or by its table's title's size where the row names a variant of it (`vec4  107 ms ...` under
            // `square 67108864 on cuda`); a line of prose names no row, and its figures count wherever they are.
            let first = trimmed.split_whitespace().next().unwrap_or_default();
            let keyed_by_size = keys(first).iter().any(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()));
            let indented = line.starts_with(char::is_whitespace);
            let row = if keyed_by_size {
                keys(line)
            } else if indented {
                title.iter().filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit())).cloned().collect()
            } else {
                std::collections::BTreeSet::new()
            };
            let row_index = self.rows.len();
            self.rows.push(row);
            let runs = run_names(line);
            if !runs.is_empty() {
                self.runs.insert(row_index, runs);
            }
            // A run's title names its expression first (`` `y = a*x + b` on bf16 arrays at 67108864 on wgpu``).
            if !indented && trimmed.starts_with('`') {
                title_expression = expressions_in(line).into_iter().next();
            }
            if let Some(expression) = title_expression.as_ref().filter(|_| indented) {
                self.expressions.insert(row_index, expression.clone());
            }
            if let Some(backend) = title_backend.filter(|_| indented) {
                self.title_backends.insert(row_index, backend);
            }
            if !prose {
                match (one_dtype(line), title_dtype.filter(|_| indented)) {
                    (Some(own), _) | (None, Some(Some(own))) => {
                        self.dtypes.insert(row_index, own);
                    }
                    (None, Some(None)) => unnamed_dtype.push(row_index),
                    (None, None) => {}
                }
            }
            let chars: Vec<char> = line.chars().collect();
            let sweep_header = trimmed.starts_with("size ") && trimmed.contains(" kernel");
            let run_header =
                trimmed.starts_with("variant ") && trimmed.contains(" kernel") && trimmed.contains(" upload");
            if sweep_header || run_header {
                // A column is a phase's word (`kernel`, `e2e`, `upload`), with the backend's word before it in a
                // sweep's header (`cuda kernel`, `wgpu(cpu) e2e`).
                let mut header_words: Vec<(String, usize, usize)> = Vec::new();
                let mut k = 0;
                while k < chars.len() {
                    if chars[k].is_whitespace() {
                        k += 1;
                        continue;
                    }
                    let from = k;
                    while k < chars.len() && !chars[k].is_whitespace() {
                        k += 1;
                    }
                    header_words.push((chars[from..k].iter().collect(), from, k));
                }
                columns = header_words
                    .iter()
                    .enumerate()
                    .filter_map(|(n, (word, from, to))| {
                        let phase = if word == "first" { "first call" } else { phase_named(word)? };
                        let before = n.checked_sub(1).map(|m| &header_words[m]);
                        let backend = before.and_then(|(b, ..)| BACKENDS.iter().find(|k| b.starts_with(**k)).copied());
                        let start = if backend.is_some() { before.map_or(*from, |(_, s, _)| *s) } else { *from };
                        Some((Column { backend, phase: Some(phase) }, start, *to))
                    })
                    .collect();
            }
            // The column a figure of a table's row lies under (a sweep's row, keyed by its size, or a run's, indented
            // under its header): the column its cell (the figure, its unit and its variant: `4.28 µs (simd)`)
            // overlaps most.
            // (A line of prose under a table, a verdict or a note, has a cell or two, not a row's.)
            let in_table = !columns.is_empty() && (keyed_by_size || indented) && cells_of(&chars).len() >= 5;
            // A run's row shifted by a long variant's name (`tf32 (reduced precision)  3.33 µs ...`) has its times
            // in the columns' order.
            let numbers = numbers_of(&chars);
            let timed: Vec<usize> = numbers
                .iter()
                .filter(|(.., beside)| beside.and_then(family).is_some_and(|(kind, _)| kind == "time"))
                .map(|(i, ..)| *i)
                .collect();
            let in_order = columns.iter().all(|(c, ..)| c.backend.is_none()) && timed.len() == columns.len();
            let column_of = |i: usize, j: usize| {
                if !in_table {
                    return Column::default();
                }
                if in_order {
                    return timed.iter().position(|t| *t == i).map_or_else(Column::default, |k| columns[k].0);
                }
                let mut end = j;
                while end < chars.len() && chars[end] == ' ' {
                    end += 1;
                }
                while end < chars.len() && !chars[end].is_whitespace() {
                    end += 1;
                }
                if chars.get(end + 1) == Some(&'(') {
                    end = (end + 1..chars.len()).find(|&k| chars[k] == ')').map_or(end, |k| k + 1);
                }
                let overlap = |s: usize, e: usize| e.min(end).saturating_sub(s.max(i));
                columns
                    .iter()
                    .filter(|(_, s, e)| overlap(*s, *e) > 0)
                    .max_by_key(|(_, s, e)| overlap(*s, *e))
                    .map_or_else(Column::default, |(c, ..)| *c)
            };
            // Bare numbers not followed by a word (`2048x2048`, `2^26`, `9 threads`): the candidates for columns.
            let bare: Vec<usize> = numbers
                .iter()
                .filter(|(_, j, _, beside)| {
                    beside.is_none() && !chars.get(*j).is_some_and(|c| c.is_alphabetic() || matches!(c, 'x' | '^'))
                })
                .map(|(i, ..)| *i)
                .collect();
            for (i, j, number, beside) in numbers {
                match beside {
                    Some(unit) => {
                        // A share in a run's list (`kernel bandwidth as a share of it: naive 66%, vec4 97%`) is its
                        // variant's, the first word of its item.
                        if unit == "%" && line.contains("share of it:") {
                            let item_start = (0..i).rev().find(|&k| matches!(chars[k], ',' | ':')).map_or(0, |k| k + 1);
                            let item: String = chars[item_start..i].iter().collect();
                            if let Some(label) = item.split_whitespace().next() {
                                self.share_labels.insert(self.written.len(), label.to_lowercase());
                            }
                        }
                        self.written.push((number, unit, row_index, column_of(i, j)));
                    }
                    // A title's numbers (`CUDA driver 13.0`) are under no column.
                    None if !heading && bare.contains(&i) => {
                        // Under a column: in a Markdown table the cell of the same index, in a fixed-width one
                        // the column whose heading the number's characters overlap.
                        // A row printed with a prefix of its own (`128x65536 cuda fused:   fused ...`) is shifted;
                        // where it has as many such numbers as there are columns, they are the columns in order.
                        let cell = chars[..i].iter().filter(|c| **c == '|').count();
                        let under =
                            |k: usize, (_, start, end, heading_cell): &(&'static str, usize, usize, Option<usize>)| {
                                match heading_cell {
                                    Some(heading_cell) if line.contains('|') => *heading_cell == cell,
                                    _ if bare.len() == headers.len() => bare.get(k) == Some(&i),
                                    _ => i <= end + 1 && *start <= j + 1,
                                }
                            };
                        self.written.extend(
                            headers
                                .iter()
                                .enumerate()
                                .filter(|(k, h)| under(*k, h))
                                .map(|(_, (u, ..))| (number.clone(), *u, row_index, Column::default())),
                        );
                    }
                    None => {}
                }
            }
            // A column's unit is a word of its own in a header line, not the unit after a figure (`324.2 GB/s`).
            // Each is kept with its characters' span in the line and, in a Markdown table, its cell's index.
            let mut words: Vec<(&str, usize, usize)> = Vec::new();
            let mut start = None;
            for (at, c) in chars.iter().enumerate().chain([(chars.len(), &' ')]) {
                let separator = c.is_whitespace() || matches!(c, '|' | '(' | ')' | ',');
                match (separator, start) {
                    (true, Some(from)) => {
                        let byte = |k: usize| line.char_indices().nth(k).map_or(line.len(), |(b, _)| b);
                        words.push((&line[byte(from)..byte(at)], from, at - 1));
                        start = None;
                    }
                    (false, None) => start = Some(at),
                    _ => {}
                }
            }
            let table = line.contains('|');
            let mut headed = Vec::new();
            for (k, (word, from, to)) in words.iter().enumerate() {
                let after_a_number = k > 0 && words[k - 1].0.chars().next().is_some_and(|c| c.is_ascii_digit());
                if let Some(unit) = UNITS.iter().chain(["%"].iter()).find(|u| *u == word)
                    && !after_a_number
                {
                    let cell = table.then(|| chars[..*from].iter().filter(|c| **c == '|').count());
                    // The fastest and slowest of a lab's repeats (`min µs  median µs  max µs`) are its spread, another
                    // quantity than the median a quotation gives.
                    let spread = k > 0 && matches!(words[k - 1].0, "min" | "max");
                    headed.push((if spread { "±" } else { *unit }, *from, *to, cell));
                }
            }
            // A line that heads columns replaces the columns of the table before it.
            if !headed.is_empty() {
                headers = headed;
            }
        }
        if self.dtypes.values().any(|d| *d != "f32") {
            self.dtypes.extend(unnamed_dtype.into_iter().map(|row| (row, "f32")));
        }
    }
}

/// The numbers of a line (`chars`), each with where it starts and ends and the unit written with it: beside it
/// (`324.2 GB/s`, `97%`), after the second number of a range (`11.1-13.1 ms`), or before it (ncu's
/// `Duration  us  33.38`); a spread (`±4%`) has the unit `±`. `None` for a bare number, whose unit heads its column.
fn numbers_of(chars: &[char]) -> Vec<(usize, usize, String, Option<&'static str>)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || matches!(chars[i - 1], '.' | '_' | '/' | '^')));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit() || (chars[j] == '.' && chars.get(j + 1).is_some_and(char::is_ascii_digit)))
        {
            j += 1;
        }
        let number: String = chars[i..j].iter().collect();
        let rest: String = chars[j..].iter().collect();
        let beside = UNITS
            .iter()
            .chain(["%"].iter())
            .find(|u| if **u == "%" { rest.starts_with('%') } else { unit_follows(&rest, u) });
        // A spread (`±4%`, `±12 µs`) is another quantity than the median beside it.
        let beside = if i > 0 && chars[i - 1] == '±' { beside.map(|_| &"±") } else { beside };
        // The first number of a range (`11.1-13.1 ms`) has the unit after the second; a number after its
        // unit (ncu's `Duration  us  33.38`) has that unit.
        let beside = beside.or_else(|| {
            let second = rest.strip_prefix(['-', '–']).filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))?;
            let after = second.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            UNITS
                .iter()
                .chain(["%"].iter())
                .find(|u| if **u == "%" { after.starts_with('%') } else { unit_follows(after, u) })
        });
        let beside = beside.or_else(|| {
            let before: String = chars[..i].iter().collect();
            let mut words = before.split_whitespace().rev();
            let (word, earlier) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
            // `Duration  us  33.38`, not `102 ns  2368.7`, where the unit is the figure's before it.
            let labels = before.ends_with(char::is_whitespace) && !earlier.starts_with(|c: char| c.is_ascii_digit());
            UNITS.iter().chain(["%"].iter()).find(|u| labels && **u == word)
        });
        found.push((i, j, number, beside.copied()));
        i = j.max(i + 1);
    }
    found
}

/// What a table's column measures: on which backend (a sweep's `cuda kernel`) and which phase (`kernel`, `upload`,
/// `end-to-end`, ...), where its header says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Column {
    backend: Option<&'static str>,
    phase: Option<&'static str>,
}

/// The storage type a word names (`bf16`, `f16`, `fp16`, `f32`, `float32`, ...), as runs and quotations write it.
fn dtype_named(word: &str) -> Option<&'static str> {
    Some(match word {
        "bf16" | "bfloat16" => "bf16",
        "f16" | "fp16" | "float16" => "f16",
        "f32" | "fp32" | "float32" => "f32",
        _ => return None,
    })
}

/// The one storage type `text` names, where it names exactly one.
fn one_dtype(text: &str) -> Option<&'static str> {
    let named: std::collections::BTreeSet<&'static str> =
        text.split(|c: char| !c.is_alphanumeric()).filter_map(|w| dtype_named(&w.to_lowercase())).collect();
    if named.len() == 1 { named.into_iter().next() } else { None }
}

/// The one storage type the clause of the figure at `at` names, before it or just after it (`78.1 µs on bf16
/// arrays`, `| bf16 | 78.1 µs |`), up to the clause's end (a `,`, `;`, a bracket, a cell's `|`, a sentence's end, a
/// word that joins the next figure).
fn dtype_around(text: &[char], at: usize) -> Option<&'static str> {
    let end = (at..text.len())
        .find(|&i| {
            matches!(text[i], ',' | ';' | '(' | ')' | '|')
                || (text[i] == '.' && text.get(i + 1).is_none_or(|c| c.is_whitespace()))
        })
        .unwrap_or(text.len());
    let after: String = text[at..end].iter().collect();
    // ... and before the next figure's joining word (`78.0 µs and the f16 one 77.7`).
    let after: Vec<&str> = after
        .split_whitespace()
        .take_while(|w| !matches!(w.to_lowercase().as_str(), "and" | "against" | "vs" | "than" | "to" | "or" | "but"))
        .collect();
    one_dtype(&format!("{} {}", clause_before(text, at), after.join(" ")))
}

/// The backends a sweep's columns and a quotation's words name.
const BACKENDS: [&str; 3] = ["cpu", "cuda", "wgpu"];

/// The cells of a fixed-width line: runs of characters separated by two spaces or more, as (start, end).
fn cells_of(chars: &[char]) -> Vec<(usize, usize)> {
    let mut cells = Vec::new();
    let mut start = None;
    let mut k = 0;
    while k <= chars.len() {
        let gap = k == chars.len() || (chars[k] == ' ' && chars.get(k + 1).is_none_or(|c| *c == ' '));
        match (gap, start) {
            (true, Some(from)) => {
                cells.push((from, k));
                start = None;
            }
            (false, None) if !chars[k].is_whitespace() => start = Some(k),
            _ => {}
        }
        k += 1;
    }
    cells
}

/// The phase a word names (`kernel`, `e2e`, `compilation`), in a table's heading or a quotation; a word must be the
/// phase's own (`kernels took 3.96 s to compile` names no phase before its figure).
fn phase_named(word: &str) -> Option<&'static str> {
    Some(match word {
        "kernel" => "kernel",
        "upload" => "upload",
        "download" => "download",
        "e2e" | "end-to-end" => "end-to-end",
        "compile" | "compilation" => "compile",
        _ => return None,
    })
}

/// The words of a quotation just before character `at` that can only speak of the figure there: its clause (after
/// the last `,`, `;`, `:` or `(`), after the last word that joins it to the figure before (`and`, `against`, ...);
/// `end to end` written as one word.
fn clause_before(text: &[char], at: usize) -> String {
    let start = (0..at).rev().find(|&i| matches!(text[i], '.' | ',' | ';' | ':' | '(')).map_or(0, |i| i + 1);
    let before = text[start..at].iter().map(|c| if c.is_whitespace() { ' ' } else { *c }).collect::<String>();
    let before = before.replace("end to end", "end-to-end");
    let words: Vec<&str> = before.split(' ').collect();
    let joined = words
        .iter()
        .rposition(|w| matches!(w.to_lowercase().as_str(), "and" | "against" | "vs" | "than" | "to" | "or"))
        .map_or(0, |k| k + 1);
    words[joined..].join(" ")
}

/// The backend and the phase a quotation names just before character `at` (`the CPU's pass took 4.28 µs`, `CUDA
/// `fused` 41.8 µs`, `against CUDA's 4.36 µs`, `its kernel 135 µs`): within the three words before it (the phase
/// within two: `the same kernel compiled in 11.3 ms` times a compilation), in its clause,
/// and after the word that joins it to the figure before (`4.59 µs for CUDA's kernel and 4.55 µs for wgpu's` names
/// wgpu after its figure).
fn named_just_before(text: &[char], at: usize) -> Column {
    let before = clause_before(text, at).to_lowercase();
    let words: Vec<&str> = before.split_whitespace().collect();
    let near: Vec<&str> = words
        .iter()
        .rev()
        .take(3)
        .map(|word| {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-');
            word.strip_suffix("'s").unwrap_or(word)
        })
        .collect();
    Column {
        backend: near.iter().find_map(|w| BACKENDS.iter().find(|b| *b == w).copied()),
        phase: near.iter().take(2).find_map(|w| phase_named(w)),
    }
}

/// The unit family a unit measures, and the unit's size in the family's base (seconds, GB/s, GFLOP/s, bytes).
fn family(unit: &str) -> Option<(&'static str, f64)> {
    Some(match unit {
        "s" => ("time", 1.0),
        "ms" => ("time", 1e-3),
        "µs" | "us" => ("time", 1e-6),
        "ns" => ("time", 1e-9),
        "GB/s" => ("bandwidth", 1.0),
        "TB/s" => ("bandwidth", 1e3),
        "GFLOP/s" => ("rate", 1.0),
        "TFLOP/s" => ("rate", 1e3),
        "B" => ("size", 1.0),
        "KiB" => ("size", 1024.0),
        "MiB" => ("size", 1048576.0),
        "GiB" => ("size", 1073741824.0),
        _ => return None,
    })
}

/// Whether `unit` is written at the start of `rest` (after one space at most) as a unit of its own: `ms` in `4.28 ms`,
/// not in `4.28 msec`; `µs` and `us` are one unit.
fn unit_follows(rest: &str, unit: &str) -> bool {
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let spellings: &[&str] = if matches!(unit, "µs" | "us") { &["µs", "us"] } else { &[unit] };
    spellings.iter().any(|u| {
        rest.strip_prefix(u).is_some_and(|after| after.chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '/'))
    })
}

/// Whether `number` with `unit`, quoted in a text whose words are `quote`, is what one of `sources` says, in a row
/// the quotation names ([`same_row`]): the same digits with the same unit, beside the number or heading its column;
/// or the same quantity written in another unit of its kind (`150837.6` under `GFLOP/s` for `150.8 TFLOP/s`), or
/// exported at full precision (in the column of the `phase` the quotation names, where it names one), that converted
/// to `unit` and written with `number`'s decimals is `number`. In one unit
/// the digits must be the file's own: `4.3 ms` does not quote `4.28 ms`, nor does `93` inside `493 µs` count.
fn quoted_in(
    number: &str,
    unit: &str,
    sources: &[&Source],
    quote: &std::collections::BTreeSet<String>,
    phase: Option<&str>,
) -> bool {
    let mut found = false;
    matches(number, unit, sources, quote, phase, &mut |_| found = true);
    found
}

/// What a quoted figure was found as in an export: the file, the record's words (workload, size, variant, device)
/// and the column's phase. Two quotations of one record's quantity from two files are two runs' values of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Measured {
    file: PathBuf,
    record: Vec<String>,
    phase: Option<&'static str>,
    family: &'static str,
}

/// Calls `found` for every place of `sources` where the quotation's figure is what the file says ([`quoted_in`]):
/// `None` for a written figure, `Some` with the record for an export's value.
fn matches(
    number: &str,
    unit: &str,
    sources: &[&Source],
    quote: &std::collections::BTreeSet<String>,
    phase: Option<&str>,
    found: &mut dyn FnMut(Option<Measured>),
) {
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    let same_unit = |u: &str| u == unit || (matches!(u, "µs" | "us") && matches!(unit, "µs" | "us"));
    let family_of_quote = family(unit);
    let converted = |value: f64, from: f64| {
        family_of_quote.is_some_and(|(_, size)| format!("{:.*}", decimals, value * from / size) == number)
    };
    // A quotation whose words name no row of its files (a table row of block sizes, a sentence with no size or
    // name) is looked for in every row.
    let names_a_row = sources.iter().any(|s| s.rows.iter().any(|row| same_row(row, quote) && !row.is_empty()));
    // An export's record names its workload: where the quotation names workloads, the record's must be one of them.
    let workloads_named: Vec<&str> = WORKLOADS.iter().copied().filter(|w| quote.contains(*w)).collect();
    let same_workload = |row: &std::collections::BTreeSet<String>| {
        workloads_named.is_empty()
            || !WORKLOADS.iter().any(|w| row.contains(*w))
            || workloads_named.iter().any(|w| row.contains(*w))
    };
    // A row that names its run's file (`nvidia-h200-35.txt`) is that run's, not another's the quotation names.
    let quoted_runs = run_names_among(quote);
    let quoted_expressions: Vec<&str> = quote.iter().filter_map(|w| w.strip_prefix('=')).collect();
    let quoted_labels: Vec<&str> = quote.iter().filter_map(|w| w.strip_prefix('~')).collect();
    let quoted_backend =
        quote.iter().find_map(|w| w.strip_prefix('@')).and_then(|b| BACKENDS.iter().find(|k| **k == b).copied());
    let quoted_phase = quote.iter().find_map(|w| w.strip_prefix('%')).and_then(phase_named);
    let quoted_dtype = quote.iter().find_map(|w| w.strip_prefix("dtype:"));
    for source in sources {
        let in_row = |row: usize| !names_a_row || same_row(&source.rows[row], quote);
        // A quotation that links a section of a README (`README.md#anchor`) quotes that section.
        // (A section named by the start of its title, `section "Probes near the ladder"`, counts too.)
        let named: Vec<&std::ops::Range<usize>> = source
            .sections
            .iter()
            .filter(|(anchor, _)| {
                quote
                    .iter()
                    .any(|w| w.strip_prefix('#').is_some_and(|named| !named.is_empty() && anchor.starts_with(named)))
            })
            .map(|(_, r)| r)
            .collect();
        let in_section = |row: usize| named.is_empty() || named.iter().any(|r| r.contains(&row));
        for (index, (n, u, row, column)) in source.written.iter().enumerate() {
            let same = if same_unit(u) {
                n == number
            } else {
                match (family(u), family_of_quote, n.parse::<f64>()) {
                    (Some((k, from)), Some((kind, _)), Ok(value)) if k == kind => converted(value, from),
                    _ => false,
                }
            };
            // In a sweep's row, the column of the backend the quotation names before the figure; in a run's, the
            // backend its title names.
            let same_backend = quoted_backend.is_none()
                || (column.backend.is_none_or(|b| Some(b) == quoted_backend)
                    && source.title_backends.get(row).is_none_or(|b| Some(*b) == quoted_backend));
            let same_phase = column.phase.is_none() || quoted_phase.is_none() || column.phase == quoted_phase;
            // A run's row of one expression is not the figure of another the quotation names in backticks.
            let same_expression = quoted_expressions.is_empty()
                || source.expressions.get(row).is_none_or(|e| quoted_expressions.contains(&e.as_str()));
            // A share labelled with a variant is not the one of another variant a table row names (`CUDA `warp``).
            let same_share = quoted_labels.is_empty()
                || source.share_labels.get(&index).is_none_or(|label| quoted_labels.contains(&label.as_str()));
            let same_run = |row: usize| {
                quoted_runs.is_empty() || source.runs.get(&row).is_none_or(|runs| !runs.is_disjoint(&quoted_runs))
            };
            // A figure said to be of one storage type is not another's (`78.1 µs on bf16` is not an f16 run's).
            let same_dtype = quoted_dtype.is_none_or(|d| source.dtypes.get(row).is_none_or(|r| *r == d));
            if same
                && same_dtype
                && same_backend
                && same_phase
                && same_expression
                && same_share
                && in_row(*row)
                && same_run(*row)
                && in_section(*row)
            {
                found(None);
            }
        }
        for (quantity, value, row, column) in &source.exported {
            let from = family(quantity).filter(|(k, _)| family_of_quote.is_some_and(|(kind, _)| kind == *k));
            let same_phase = phase.is_none() || column.is_none() || *column == phase;
            if same_phase
                && from.is_some_and(|(_, from)| converted(*value, from))
                && in_row(*row)
                && same_workload(&source.rows[*row])
                && source.record_named(*row, quote)
            {
                found(Some(Measured {
                    file: source.path.clone(),
                    record: source.rows[*row].iter().cloned().collect(),
                    phase: *column,
                    family: from.map_or("", |(k, _)| k),
                }));
            }
        }
    }
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

/// `path` with its `.` and `..` components resolved by their names alone.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

/// The results files `unit` cites: Markdown links into a `results/` folder (relative to `base`), and file names in
/// backticks (`sweep.csv`, `run-2/sweep.csv`): the one file under `results` whose path ends so, or, where several
/// do, those in a folder the unit links to, or in the document's own folder. A name that still fits several files is
/// returned apart, as ambiguous: a citation must name one file.
fn cited(unit: &str, base: &Path, results: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let mut files = Vec::new();
    for link in unit.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or_default().split('#').next().unwrap_or_default();
        if [".txt", ".json", ".csv", ".md"].iter().any(|e| target.ends_with(e)) && !target.contains("://") {
            // Relative to the document, `..` resolved, so that a results README's `../scan/README.md` is the file.
            let path = lexically_normal(&base.join(target));
            if path.components().any(|c| c.as_os_str() == "results") && path.exists() {
                files.push(path);
            }
        }
    }
    let linked_folders: Vec<PathBuf> = files.iter().filter_map(|f| f.parent().map(Path::to_path_buf)).collect();
    // A machine's folder (`results/nvidia-h200`) of each file linked: a bare name is read as that machine's file.
    let linked_machines: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| {
            let parts: Vec<_> = f.components().collect();
            let at = parts.iter().rposition(|c| c.as_os_str() == "results")?;
            Some(parts.iter().take(at + 2).collect::<PathBuf>())
        })
        .collect();
    // The files of `paths` least deep in the folders: a machine's own file before its history's copies.
    fn shallowest<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> Vec<&'a PathBuf> {
        let paths: Vec<&PathBuf> = paths.collect();
        let least = paths.iter().map(|p| p.components().count()).min().unwrap_or(0);
        paths.into_iter().filter(|p| p.components().count() == least).collect()
    }
    let mut ambiguous = Vec::new();
    for (k, span) in unit.split('`').enumerate() {
        if k % 2 == 1 && [".txt", ".json", ".csv"].iter().any(|e| span.ends_with(e)) && !span.contains(' ') {
            let suffix = format!("/{}", span.trim_start_matches("./"));
            let mut fits: Vec<&PathBuf> = results.iter().filter(|p| p.to_string_lossy().ends_with(&suffix)).collect();
            // A results folder's README names its own files: a name there is a file of that folder or one below it,
            // never a file of the same name in another machine's folder, whose figures come from other runs. A name
            // found in neither is a file its README keeps in git history, as a name found nowhere is.
            if base.components().any(|c| c.as_os_str() == "results") {
                let own = lexically_normal(&base.join(span));
                fits.retain(|p| **p == own || p.starts_with(base));
            }
            let near = |folders: &[PathBuf]| -> Vec<&PathBuf> {
                fits.iter().filter(|p| p.parent().is_some_and(|d| folders.iter().any(|f| f == d))).copied().collect()
            };
            let chosen = match fits.len() {
                0 | 1 => fits.clone(),
                _ => {
                    let by_link = near(&linked_folders);
                    let by_machine =
                        shallowest(fits.iter().copied().filter(|p| linked_machines.iter().any(|m| p.starts_with(m))));
                    if !by_link.is_empty() {
                        by_link
                    } else if !by_machine.is_empty() {
                        by_machine
                    } else {
                        near(&[base.to_path_buf()])
                    }
                }
            };
            match chosen.len() {
                0 if fits.len() > 1 => ambiguous.push(format!("`{span}` names {} files", fits.len())),
                _ if chosen.len() > 1 => ambiguous.push(format!("`{span}` names {} files", chosen.len())),
                _ => files.extend(chosen.into_iter().cloned()),
            }
        }
    }
    files.sort();
    files.dedup();
    (files, ambiguous)
}

/// The figures of `markdown` (a document in `base`) that cite results files and are not in any of them, as
/// `line: figure (looked for in files)`.
fn quotations(markdown: &str, base: &Path, results: &[PathBuf]) -> Vec<Quotation> {
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
    let mut quoted = Vec::new();
    for (line, unit, before) in &units {
        let own = cited(unit, base, results);
        let (files, ambiguous) = match before {
            Some(k) if own.0.is_empty() && own.1.is_empty() => cited(&units[*k].1, base, results),
            _ => own,
        };
        if files.is_empty() && ambiguous.is_empty() {
            continue;
        }
        let sources: Vec<std::sync::Arc<Source>> = files.iter().map(|f| Source::cached(f)).collect();
        let chars: Vec<char> = unit.chars().collect();
        let located: Vec<(usize, String, String)> = figures_at(unit)
            .into_iter()
            .map(|(at, number, figure)| {
                let unit = figure.rsplit(' ').next().filter(|_| !figure.ends_with('%')).unwrap_or("%").to_owned();
                (at, number, unit)
            })
            // A whole power of two of KiB, MiB or GiB is a buffer's size, set by the run (`256 MiB` of 2^26
            // floats), not a measurement.
            .filter(|(_, number, unit)| {
                !(matches!(unit.as_str(), "KiB" | "MiB" | "GiB")
                    && number.parse::<u64>().is_ok_and(u64::is_power_of_two))
            })
            .collect();
        let figure_sources = located
            .iter()
            .map(|(at, _, _)| {
                let sentence = sentence_around(&chars, *at);
                let named = |f: &PathBuf| f.file_name().is_some_and(|name| sentence.contains(&*name.to_string_lossy()));
                files.iter().enumerate().filter(|(_, f)| named(f)).map(|(k, _)| k).collect()
            })
            .collect();
        // The runs a figure's sentence names, or else the sentence just before it (`... on two cores
        // (`2-core-lavapipe-32`) 180 of 180. Calibration took 54 s and 50 s ...`).
        let figure_runs = located
            .iter()
            .map(|(at, _, _)| {
                let own = run_names(&sentence_around(&chars, *at));
                let (start, _) = sentence_bounds(&chars, *at);
                match start.checked_sub(2) {
                    Some(before) if own.is_empty() => run_names(&sentence_around(&chars, before)),
                    _ => own,
                }
            })
            .collect();
        // A table after a paragraph that says it gives kernel times (`kernel times with the data resident`) times the
        // kernel in each of its cells that names no other phase.
        // So does a column headed by a phase (`| `naive` kernel |`, `| end to end |`): the table's first row.
        let header = before.and_then(|k| units.get(k + 1)).filter(|(_, row, _)| row.trim_start().starts_with('|'));
        let first_heading = header.and_then(|(_, row, _)| row.split('|').nth(1)).unwrap_or_default().to_lowercase();
        let table_phase =
            if before.is_some_and(|k| units[k].1.contains("kernel times")) || first_heading.contains("kernel time") {
                Some("kernel")
            } else if first_heading.contains("end to end") {
                Some("end-to-end")
            } else {
                None
            };
        let figure_columns = located
            .iter()
            .map(|(at, _, unit)| {
                let mut column = named_just_before(&chars, *at);
                // `took 107 ms to compile`: the phase named just after the figure and its unit.
                let after: String = chars[*at..chars.len().min(*at + 40)].iter().collect();
                let mut words = after.split_whitespace().skip(2);
                if column.phase.is_none() && words.next() == Some("to") {
                    column.phase =
                        words.next().and_then(|w| phase_named(w.trim_matches(|c: char| !c.is_alphanumeric())));
                }
                if column.phase.is_some() || family(unit).is_none_or(|(kind, _)| kind != "time") {
                    return column;
                }
                let cell = chars[..*at].iter().filter(|c| **c == '|').count();
                let heading = header.and_then(|(_, row, _)| row.split('|').nth(cell)).unwrap_or_default();
                let heading = heading.to_lowercase().replace("end to end", "end-to-end");
                column.phase =
                    heading.split(|c: char| !(c.is_alphanumeric() || c == '-')).find_map(phase_named).or(table_phase);
                column
            })
            .collect();
        let figure_expressions = located.iter().map(|(at, _, _)| expressions_in(&clause_before(&chars, *at))).collect();
        let figure_dtypes = located.iter().map(|(at, _, _)| dtype_around(&chars, *at)).collect();
        let figures = located.into_iter().map(|(at, number, unit)| (number, unit, phase_before(&chars, at))).collect();
        // A table row is read with the paragraph before its table, which names what its rows measure.
        let mut words = keys(unit);
        if let Some(k) = before {
            words.extend(keys(&units[*k].1));
        }
        words.extend(
            sections_named(before.map_or(unit.as_str(), |k| &units[k].1)).into_iter().chain(sections_named(unit)),
        );
        // A table row that names one expression in backticks quotes that expression's runs, as an `=expression` word
        // ([`expressions_in`]); prose names expressions in lists (`a*x + b`, `exp(-x*x) * sin(3*x)` and the polynomial
        // ran at ...) that no reading of its words can pair with their figures.
        let named = expressions_in(unit);
        if before.is_some() && named.len() == 1 {
            words.extend(named.into_iter().map(|e| format!("={e}")));
        }
        // A table row whose first cell names variants in backticks (`` | CUDA `warp` | ``) quotes their shares of a
        // copy peak, as `~variant` words.
        if before.is_some() {
            let first_cell = unit.trim_start().trim_start_matches('|').split('|').next().unwrap_or_default();
            words.extend(first_cell.split('`').skip(1).step_by(2).map(|v| format!("~{}", v.trim().to_lowercase())));
        }
        quoted.push(Quotation {
            line: *line,
            text: unit.clone(),
            crossovers: crossovers(unit),
            figures,
            files,
            ambiguous,
            sources,
            figure_sources,
            words,
            figure_runs,
            figure_columns,
            figure_expressions,
            figure_dtypes,
        });
    }
    quoted
}

/// The sentence of `text` around character `at`: from the end of the sentence before (a `.`, `?` or `!` followed
/// The expressions in backticks in `text`, each as its right-hand side without spaces (`` `y = a*x + b` `` and
/// `` `a*x + b` `` are `a*x+b`): an assignment spaced as the guide writes them (not a variable's setting such as
/// `GPUWORTHY_NVRTC_MINIMAL=0`), or a formula of `x` with a spaced operator (`` `exp(-x*x) * sin(3*x)` ``).
fn expressions_in(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|code| {
            let formula = code.contains('x') && [" * ", " + ", " - "].iter().any(|op| code.contains(op));
            if code.contains("==") || !(code.contains(" = ") || formula) {
                return None;
            }
            let right =
                if code.matches(" = ").count() == 1 { code.split_once(" = ").map_or(code, |(_, r)| r) } else { code };
            Some(right.split_whitespace().collect())
        })
        .collect()
}

/// The sections of results READMEs a paragraph links (`](results/auto/README.md#probes-near-the-ladder)`) or names
/// (`section "Probes near the ladder"`), as `#anchor` words, which [`keys`] never makes.
fn sections_named(text: &str) -> Vec<String> {
    let mut named = Vec::new();
    for (at, _) in text.match_indices("](") {
        let target = text[at + 2..].split(')').next().unwrap_or_default();
        if let Some((_, anchor)) = target.split_once(".md#") {
            named.push(format!("#{anchor}"));
        }
    }
    for (at, _) in text.match_indices("section \"") {
        if let Some(title) = text[at + 9..].split('"').next() {
            named.push(format!("#{}", anchor_of(title)));
        }
    }
    named
}

/// by white space) to the end of its own, or the text's ends.
fn sentence_around(text: &[char], at: usize) -> String {
    let (start, end) = sentence_bounds(text, at);
    text[start..end].iter().collect()
}

/// Where the sentence around character `at` of `text` starts and ends ([`sentence_around`]).
fn sentence_bounds(text: &[char], at: usize) -> (usize, usize) {
    let ends_here = |i: usize| matches!(text[i], '.' | '?' | '!') && text.get(i + 1).is_none_or(|c| c.is_whitespace());
    let start = (0..at).rev().find(|&i| ends_here(i)).map_or(0, |i| i + 1);
    let end = (at..text.len()).find(|&i| ends_here(i)).map_or(text.len(), |i| i + 1);
    (start, end)
}

/// One paragraph, list item or table row of the guide that cites results files: its first line, the crossovers and
/// figures it quotes, and the files it cites, read.
struct Quotation {
    line: usize,
    /// The paragraph, list item or table row itself.
    text: String,
    crossovers: Vec<String>,
    /// Each figure's number as written, its unit (`%` for a percentage), and the phase it is said to time.
    figures: Vec<(String, String, Option<&'static str>)>,
    files: Vec<PathBuf>,
    /// File names in backticks that fit several results files.
    ambiguous: Vec<String>,
    sources: Vec<std::sync::Arc<Source>>,
    /// For each figure, the indices in `sources` of the files its own sentence cites (empty: the sentence cites
    /// none, and the figure is looked for in every file the quotation cites).
    figure_sources: Vec<Vec<usize>>,
    /// The words that name the rows it quotes ([`keys`]).
    words: std::collections::BTreeSet<String>,
    /// For each figure, the runs' files its own sentence names ([`run_names`]).
    figure_runs: Vec<std::collections::BTreeSet<String>>,
    /// For each figure, the backend and phase named just before it ([`named_just_before`]).
    figure_columns: Vec<Column>,
    /// For each figure, the expressions its clause names in backticks before it ([`expressions_in`]).
    figure_expressions: Vec<Vec<String>>,
    /// For each figure, the storage type its clause names ([`dtype_around`]).
    figure_dtypes: Vec<Option<&'static str>>,
}

impl Quotation {
    fn sources(&self) -> Vec<&Source> {
        self.sources.iter().map(|s| &**s).collect()
    }

    /// The files figure `i` is looked for in: those its sentence cites, or, where it cites none, every file of the
    /// quotation. A paragraph that cites a run's sweep for one figure and another file for the next is read as it is
    /// written: each figure from its own sentence's file.
    /// The words figure `i` is read with: the quotation's, less the runs' files that only other sentences name
    /// (a paragraph that names a run in passing quotes others' figures too), and `@backend` and `%phase` for the
    /// backend and the phase named just before it.
    fn words_of(&self, i: usize) -> std::collections::BTreeSet<String> {
        let elsewhere = run_names_among(&self.words);
        let mut words = self.words.clone();
        words.retain(|w| !elsewhere.contains(w) || self.figure_runs[i].contains(w));
        // The backend and phase named just before the figure, as words no text makes (`@cuda`, `%kernel`).
        words.extend(self.figure_columns[i].backend.map(|b| format!("@{b}")));
        words.extend(self.figure_columns[i].phase.map(|p| format!("%{p}")));
        words.extend(self.figure_expressions[i].iter().map(|e| format!("={e}")));
        words.extend(self.figure_dtypes[i].map(|d| format!("dtype:{d}")));
        words
    }

    fn sources_of(&self, i: usize) -> Vec<&Source> {
        match self.figure_sources.get(i) {
            Some(own) if !own.is_empty() => own.iter().map(|&k| &*self.sources[k]).collect(),
            _ => self.sources(),
        }
    }

    fn names(&self) -> String {
        let names: Vec<String> =
            self.files.iter().map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string()).collect();
        names.join(", ")
    }
}

/// The figures of `markdown` (a document in `base`) that cite results files and are not in any of them, as
/// `line: figure (looked for in files)`.
fn misquoted(markdown: &str, base: &Path, results: &[PathBuf]) -> Vec<String> {
    let mut wrong = Vec::new();
    for quotation in quotations(markdown, base, results) {
        for name in &quotation.ambiguous {
            wrong.push(format!("{}: {name}: link the one meant", quotation.line));
        }
        let text: String = quotation.sources.iter().map(|s| s.text.as_str()).collect();
        for size in &quotation.crossovers {
            if !size_written(size, &text) {
                wrong.push(format!("{}: crossover {size} (not in {})", quotation.line, quotation.names()));
            }
        }
        for (i, (number, unit, phase)) in quotation.figures.iter().enumerate() {
            if !quoted_in(number, unit, &quotation.sources_of(i), &quotation.words_of(i), *phase) {
                let figure = if unit == "%" { format!("{number}%") } else { format!("{number} {unit}") };
                // With GPUWORTHY_FIGURES_EXPLAIN set, where the same figure is written, and the words of its row
                // against the quotation's: what to name in the sentence, or which file to cite.
                if std::env::var_os("GPUWORTHY_FIGURES_EXPLAIN").is_some() {
                    for source in &quotation.sources {
                        for (n, u, row, _) in source.written.iter().filter(|(n, u, ..)| n == number && u == unit) {
                            eprintln!(
                                "{}: {n} {u} is in a row of {:?}; the quotation names {:?}",
                                quotation.line, source.rows[*row], quotation.words
                            );
                        }
                    }
                }
                wrong.push(format!("{}: {figure} (not in {})", quotation.line, quotation.names()));
            }
        }
    }
    wrong
}

/// The guide's documents: `docs/*.md`, the READMEs of `docs/results/` and the project's README.
fn documents() -> Vec<PathBuf> {
    let markdown = |p: &PathBuf| p.extension().is_some_and(|e| e == "md");
    let mut documents: Vec<PathBuf> =
        std::fs::read_dir(root().join("docs")).unwrap().flatten().map(|e| e.path()).filter(markdown).collect();
    documents.extend(files_under(&root().join("docs").join("results")).into_iter().filter(markdown));
    documents.push(root().join("README.md"));
    documents.sort();
    documents
}

#[test]
fn every_figure_quoted_beside_a_results_file_is_in_that_file() {
    let results = files_under(&root().join("docs").join("results"));
    let mut wrong = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let text = std::fs::read_to_string(&document).unwrap();
        let base = document.parent().unwrap();
        checked += quotations(&text, base, &results).iter().map(|q| q.figures.len()).sum::<usize>();
        for miss in misquoted(&text, base, &results) {
            wrong.push(format!("{}:{miss}", document.strip_prefix(root()).unwrap().display()));
        }
    }
    // Counted among the figures checked against a cited file, so that a scan that stopped finding citations fails.
    assert!(checked > 1000, "only {checked} figures checked against a cited file: the scan is broken");
    assert!(wrong.is_empty(), "figures not found in the files cited beside them:\n{}", wrong.join("\n"));
}

/// Whether a quotation says which run it quotes (`run 2`, `runs 1 to 3`, `sweep-2`, `the first sweep`), so that two
/// runs' values of one quantity may stand side by side.
fn names_its_run(text: &str) -> bool {
    // What the reader reads: the link targets (`](results/.../run-2/...)`) are not words of the text.
    let mut read = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        read.push_str(&rest[..at]);
        rest = rest[at + 2..].split_once(')').map_or("", |(_, after)| after);
    }
    read.push_str(rest);
    let lower = read.to_lowercase();
    ["run 1", "run 2", "run 3", "runs 1", "runs 2", "run-1", "run-2", "run-3", "sweep-2", "first sweep", "second sweep"]
        .iter()
        .any(|w| lower.contains(w))
}

/// One quantity, one figure: where two quotations of the guide quote the same measured quantity (one record of an
/// export: the machine's workload, size, variant and device, in one phase) from two files, with two values, each
/// must name its run; otherwise the reader meets one quantity with two values.
fn second_values(documents: &[(String, String, PathBuf)], results: &[PathBuf]) -> Vec<String> {
    type Key = (PathBuf, Vec<String>, Option<&'static str>, &'static str);
    let mut seen: std::collections::BTreeMap<Key, Vec<(PathBuf, String, bool)>> = Default::default();
    for (name, text, base) in documents {
        for quotation in quotations(text, base, results) {
            let unit_text = quotation.text.as_str();
            for (i, (number, unit, phase)) in quotation.figures.iter().enumerate() {
                let mut records = Vec::new();
                matches(number, unit, &quotation.sources_of(i), &quotation.words_of(i), *phase, &mut |m| {
                    records.extend(m);
                });
                // A figure that fits several records is not pinned to one quantity.
                let files: std::collections::BTreeSet<&PathBuf> = records.iter().map(|m| &m.file).collect();
                if records.len() != 1 || files.len() != 1 {
                    continue;
                }
                let m = &records[0];
                let machine = m.file.ancestors().find(|a| a.parent().is_some_and(|p| p.ends_with("results")));
                let key = (machine.unwrap_or(&m.file).to_path_buf(), m.record.clone(), m.phase, m.family);
                let at = format!("{name}:{}: {number} {unit}", quotation.line);
                seen.entry(key).or_default().push((m.file.clone(), at, names_its_run(unit_text)));
            }
        }
    }
    let mut wrong = Vec::new();
    for ((_, record, phase, _), quotes) in seen {
        let files: std::collections::BTreeSet<&PathBuf> = quotes.iter().map(|(f, _, _)| f).collect();
        if files.len() > 1 && quotes.iter().any(|(_, _, named)| !named) {
            let listed: Vec<&str> = quotes.iter().map(|(_, at, _)| at.as_str()).collect();
            wrong.push(format!("{record:?} {}: {}", phase.unwrap_or("-"), listed.join("; ")));
        }
    }
    wrong
}

#[test]
fn one_quantity_is_quoted_with_one_value_or_with_its_runs_named() {
    let results = files_under(&root().join("docs").join("results"));
    let documents: Vec<(String, String, PathBuf)> = documents()
        .into_iter()
        .map(|d| {
            let name = d.strip_prefix(root()).unwrap().display().to_string();
            (name, std::fs::read_to_string(&d).unwrap(), d.parent().unwrap().to_path_buf())
        })
        .collect();
    let wrong = second_values(&documents, &results);
    assert!(wrong.is_empty(), "one quantity quoted with two values, a run not named:\n{}", wrong.join("\n"));
}

#[test]
fn a_planted_second_value_of_one_quantity_is_found_unless_its_run_is_named() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-second-values-{}", std::process::id()));
    let header = "workload,size,backend,variant,label,kernel_s,upload_s\n";
    for (run, kernel) in [("run-1", "4.18e-4"), ("run-2", "4.31e-4")] {
        std::fs::create_dir_all(dir.join("results/m").join(run)).unwrap();
        let csv =
            format!("{header}square,16777216,cpu,simd,cpu,{kernel},1e-3\nsquare,16777216,cuda,vec4,cuda,3.6e-5,5e-3\n");
        std::fs::write(dir.join("results/m").join(run).join("sweep.csv"), csv).unwrap();
    }
    let results = files_under(&dir.join("results"));
    let one = "At 2^24 the CPU's `simd` kernel took 418 µs ([csv](results/m/run-1/sweep.csv)).";
    let other = "Square at 2^24: the `simd` kernel takes 431 µs on the CPU ([csv](results/m/run-2/sweep.csv)).";
    let named = "In run 2, square at 2^24: the `simd` kernel takes 431 µs ([csv](results/m/run-2/sweep.csv)).";
    let guide = |texts: &[&str]| -> Vec<(String, String, PathBuf)> {
        texts.iter().enumerate().map(|(k, t)| (format!("doc{k}.md"), t.to_string(), dir.clone())).collect()
    };
    // Each figure is its file's, so the first check passes them all.
    for text in [one, other, named] {
        assert!(misquoted(text, &dir, &results).is_empty(), "{text}");
    }
    let found = second_values(&guide(&[one, other]), &results);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("418 µs") && found[0].contains("431 µs") && found[0].contains("kernel"), "{found:?}");
    // Named runs may stand side by side once both say which they are; one quotation alone is one value.
    let first_named = "In run 1, square at 2^24: the `simd` kernel took 418 µs ([csv](results/m/run-1/sweep.csv)).";
    assert!(second_values(&guide(&[first_named, named]), &results).is_empty());
    assert!(second_values(&guide(&[one]), &results).is_empty());
    // The same value quoted twice, or two quantities of one record (the kernel and the upload), are not two values.
    let upload = "At 2^24 the CPU's `simd` upload took 1.00 ms ([csv](results/m/run-2/sweep.csv)).";
    assert!(second_values(&guide(&[one, one, upload]), &results).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `number` changed as a reviewer would change it to test the check: times 1.5, or its last digit moved by one,
/// written with the same number of decimals.
fn mutations(number: &str) -> [String; 2] {
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    let value: f64 = number.parse().unwrap();
    let scaled = format!("{:.*}", decimals, value * 1.5);
    let mut digits: Vec<char> = number.chars().collect();
    let last = digits.len() - 1;
    let d = digits[last].to_digit(10).unwrap();
    digits[last] = char::from_digit(if d == 9 { 8 } else { d + 1 }, 10).unwrap();
    [scaled, digits.into_iter().collect()]
}

/// The check read as a reviewer reads it: every figure of the guide it accepts, changed by x1.5 or in its last
/// digit, is looked for again in the same files, and at least 95% of each kind of change must be refused. A check
/// that accepts a number found anywhere, or after rounding at any scale, fails here.
#[test]
fn the_check_refuses_the_guides_figures_when_they_are_changed() {
    let results = files_under(&root().join("docs").join("results"));
    let mut tried = [0usize; 2];
    let mut refused = [0usize; 2];
    let mut survivors: Vec<String> = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(&document).unwrap();
        let name = document.strip_prefix(root()).unwrap().display().to_string();
        for quotation in quotations(&text, document.parent().unwrap(), &results) {
            for (i, (number, unit, phase)) in quotation.figures.iter().enumerate() {
                let sources = quotation.sources_of(i);
                let words = quotation.words_of(i);
                if !quoted_in(number, unit, &sources, &words, *phase) {
                    continue; // the other test reports it
                }
                for (kind, changed) in mutations(number).into_iter().enumerate() {
                    // A change that gives another figure the same quotation quotes (`1.69 µs and 1.68 µs in runs 2
                    // and 3`) swaps two true figures, which no reading of the files can tell apart.
                    if changed == *number || quotation.figures.iter().any(|(n, u, _)| *n == changed && u == unit) {
                        continue;
                    }
                    tried[kind] += 1;
                    if quoted_in(&changed, unit, &sources, &words, *phase) {
                        survivors.push(format!("{name}:{}: {number} {unit} -> {changed}", quotation.line));
                    } else {
                        refused[kind] += 1;
                    }
                }
            }
        }
    }
    let rate = |k: usize| refused[k] as f64 / tried[k].max(1) as f64;
    eprintln!(
        "changed figures refused: x1.5 {}/{} ({:.1}%), last digit {}/{} ({:.1}%)",
        refused[0],
        tried[0],
        100.0 * rate(0),
        refused[1],
        tried[1],
        100.0 * rate(1)
    );
    if std::env::var_os("GPUWORTHY_FIGURES_EXPLAIN").is_some() {
        eprintln!("changed figures the check accepts:\n{}", survivors.join("\n"));
    }
    assert!(tried[0] > 800 && tried[1] > 800, "too few figures changed: {tried:?}");
    // The changes that survive are neighbours no reading of the words can tell apart: the same quantity in two runs
    // of one file (`135, 136 and 135 µs` over three runs), a median beside its run's repeats, or a README's prose.
    assert!(
        rate(0) >= 0.95 && rate(1) >= 0.95,
        "the check accepts too many changed figures; those it accepts:\n{}",
        survivors.join("\n")
    );
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
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_results_readme_names_its_own_folders_files_not_another_machines() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-folders-{}", std::process::id()));
    let (h100, h200) = (dir.join("results").join("h100"), dir.join("results").join("h200"));
    std::fs::create_dir_all(&h100).unwrap();
    std::fs::create_dir_all(h200.join("guide")).unwrap();
    // The H200's run of that name holds other figures; the H100's README's own file is kept in git history.
    let elsewhere = h200.join("guide").join("first-call-2.txt");
    std::fs::write(&elsewhere, "compile 97.5 ms\n").unwrap();
    let own = h100.join("run.txt");
    std::fs::write(&own, "compile 170 ms\n").unwrap();
    let results = vec![elsewhere, own];
    // In the H100's README, a name not of its folder is not checked against the H200's file of that name.
    assert!(misquoted("| `first-call-2.txt` | 170 ms in the first process |", &h100, &results).is_empty());
    // Its own file is checked, a wrong figure found.
    assert!(misquoted("| `run.txt` | 170 ms in the first process |", &h100, &results).is_empty());
    assert_eq!(misquoted("| `run.txt` | 107 ms in the first process |", &h100, &results).len(), 1);
    // A chapter outside the results (the guide) still finds the one file of that name, wherever it is.
    assert_eq!(misquoted("It compiled in 107 ms (`first-call-2.txt`).", &dir, &results).len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_figure_of_one_storage_type_is_not_found_in_another_types_run() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-dtypes-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let file = dir.join("results").join("half.txt");
    let heading = "  variant       compile      first         upload         kernel";
    let run = |dtype: &str, kernel: &str| {
        let on = if dtype.is_empty() { String::new() } else { format!(" on {dtype} arrays") };
        format!(
            "`y = a*x + b`{on} at 67108864 on cuda (H200)\n{heading}\n  generated     93.9 ms    42.6 ms    17.4 ms ±3%    {kernel} µs ±0%\n"
        )
    };
    let peers = "== peers\nbf16: device-to-device copy        74.3 us    3612.7 GB/s\n";
    std::fs::write(&file, format!("{}{}{}{peers}", run("bf16", "65.8"), run("f16", "66.1"), run("", "128"))).unwrap();
    let results = vec![file];
    let quote = |text: &str| misquoted(&format!("{text} (`half.txt`)."), &dir, &results);
    // Each run's figure under its own type, before or after it, or with no type named.
    assert!(quote("On bf16 arrays CUDA's kernel takes 65.8 µs").is_empty());
    assert!(quote("CUDA's kernel takes 66.1 µs on f16 arrays").is_empty());
    assert!(quote("CUDA's kernel takes 65.8 µs").is_empty());
    assert!(quote("CUDA's kernel takes 128 µs on f32 arrays").is_empty());
    // Another type's figure is not this one's: f16's 66.1 µs is not bf16's, nor the f32 run's 128 µs an f16 one's.
    assert_eq!(quote("CUDA's kernel takes 66.1 µs on bf16 arrays").len(), 1);
    assert_eq!(quote("CUDA's kernel takes 128 µs on f16 arrays").len(), 1);
    // Two figures joined by `and` each take the type written beside them.
    assert!(quote("CUDA's kernel takes 65.8 µs on bf16 and 66.1 µs on f16").is_empty());
    assert_eq!(quote("CUDA's kernel takes 66.1 µs on bf16 and 65.8 µs on f16").len(), 2);
    // A peer's line says its type too.
    assert!(quote("torch's copy of the bf16 tensor took 74.3 µs").is_empty());
    assert_eq!(quote("torch's copy of the f16 tensor took 74.3 µs").len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
