//! Reading the workspace's own sources, for the tests that hold the code to a rule no compiler checks (no import
//! circle between modules, every test that needs a backend honouring `GPUWORTHY_REQUIRE`): the files, and their code
//! without comments or the text of string literals, so that a rule is read from code alone.

use std::path::{Path, PathBuf};

/// The workspace's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_owned()
}

/// `source` without its comments, and with string literals emptied, so that a path in either is not an import.
pub fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let next = chars.get(i + 1).copied();
        match (chars[i], next) {
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            ('r', Some('"' | '#')) if i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') => {
                // A raw string: r"…" or r#"…"#.
                let mut j = i + 1;
                let mut hashes = 0;
                while chars.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if chars.get(j) != Some(&'"') {
                    out.push(chars[i]);
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    if j >= chars.len() {
                        break;
                    }
                    if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
            }
            ('"', _) => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            ('\'', _) if chars.get(i + 2) == Some(&'\'') || (next == Some('\\')) => {
                // A char literal ('"' or '\n'); a lifetime has no closing quote and passes through.
                let end = (i + 1..chars.len()).find(|&j| chars[j] == '\'' && j > i + 1).unwrap_or(i);
                out.push_str("' '");
                i = end + 1;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Every `.rs` file under `path` (a file, or a folder).
pub fn files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_owned()];
    }
    let mut all = Vec::new();
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        all.extend(files(&entry.path()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")));
    }
    all
}
