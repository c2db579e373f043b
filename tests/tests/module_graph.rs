//! No import circles: within each library crate, no module imports (directly or through others) a module that
//! imports it, at either level of the crate's folders.
//!
//! A module here is a top-level module of a crate (`src/x.rs` or `src/x/`, with everything under it), and, inside a
//! folder `src/x/`, each of its files (`src/x/y.rs`, with `mod.rs` as the folder's own module). An import is any
//! path `crate::x…` in its code (comments and its unit tests left out: a test may use a module above the one it
//! tests as an example), where `x` is a module, or an item that `lib.rs` re-exports from a module (`crate::Device`
//! is `crate::device::Device`); inside a folder, `crate::x::y…` and `super::y…`. `lib.rs` itself is the crate's root,
//! not a module. The facade's folders are meant to read in one direction (measure, device, model, choose,
//! user code), and so are the files of each; a circle means two modules can only be understood together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use gpuworthy_tests::source::{code_only, files, root};

/// The library crates whose modules must form no circle.
const CRATES: &[&str] = &["core", "cpu", "cuda", "wgpu-backend", "gpuworthy"];

/// `code` without its `#[cfg(test)]` items (the unit tests' module).
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // The item ends at the end of its first braced block, or at its first `;` if that comes first.
        let (Some(open), semicolon) = (after.find('{'), after.find(';')) else { return out };
        if semicolon.is_some_and(|s| s < open) {
            rest = &after[semicolon.unwrap_or(0) + 1..];
            continue;
        }
        let mut depth = 0;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The first path segments after each `crate::` in `code` (with `crate::{a, b::c}` giving `a` and `b`), except
/// `$crate::`, which a macro uses to reach the crate from wherever it expands.
fn crate_paths(code: &str) -> BTreeSet<String> {
    paths_after(code, "crate::")
}

/// The first path segments after each `prefix` (`crate::`, `crate::device::`, `super::`) in `code`, as
/// [`crate_paths`] reads them.
fn paths_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].ends_with('$')
            || code[..at].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 1 => {
                        found.insert(ident(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.remove("");
    found
}

/// The top-level modules of the crate at `src` and, for each, the modules it imports.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("the crate's src").flatten() {
        let path = entry.path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        if name == "lib" || name == "main" || name == "bin" {
            continue;
        }
        let own = modules.entry(name).or_default();
        own.extend(files(&path));
    }
    // `pub use module::{A, B}` and `pub use module::A` in lib.rs: the item's module.
    let lib = code_only(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let mut reexported: BTreeMap<String, String> = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else { continue };
        let Some((module, items)) = path.split_once("::") else { continue };
        if !modules.contains_key(module.trim()) {
            continue;
        }
        for item in items.trim_matches(|c| c == '{' || c == '}' || char::is_whitespace(c)).split(',') {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap_or(item).rsplit("::").next().unwrap_or(item).trim();
            if !name.is_empty() {
                reexported.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    modules
        .iter()
        .map(|(name, files)| {
            let mut imports = BTreeSet::new();
            for file in files {
                let code = without_tests(&code_only(&std::fs::read_to_string(file).expect("a source file")));
                for first in crate_paths(&code) {
                    let target =
                        if modules.contains_key(&first) { Some(first) } else { reexported.get(&first).cloned() };
                    if let Some(target) = target.filter(|t| t != name) {
                        imports.insert(target);
                    }
                }
            }
            (name.clone(), imports)
        })
        .collect()
}

/// A circle of imports in `graph`, as the modules along it, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|start| visit(start, graph, &mut Vec::new(), &mut done))
}

/// For each folder module `src/x/` of the crate at `src`, the graph of its files: each file (`mod` for `mod.rs`) and
/// the files of the same folder it imports through `crate::x::y`, `super::y` or an item that `lib.rs` re-exports
/// from `x::y`. A path to an item of the folder's own module is an import of `mod`.
fn folder_graphs(src: &Path) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let lib = code_only(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let mut graphs = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("the crate's src").flatten() {
        let folder = entry.path();
        let Some(name) = folder.file_name().and_then(|n| n.to_str()).map(str::to_owned) else { continue };
        if !folder.join("mod.rs").is_file() {
            continue;
        }
        let members: Vec<(String, PathBuf)> = files(&folder)
            .into_iter()
            .filter(|f| f.parent() == Some(folder.as_path()))
            .map(|f| (f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned(), f))
            .collect();
        let member = |segment: &str| {
            if members.iter().any(|(m, _)| m == segment && m != "mod") { segment.to_owned() } else { "mod".to_owned() }
        };
        // Items lib.rs re-exports from this folder: `pub use x::y::Item` names `y`, `pub use x::Item` the folder's own.
        let mut reexported: BTreeMap<String, String> = BTreeMap::new();
        for statement in lib.split(';') {
            let Some(path) = statement.trim().strip_prefix(&format!("pub use {name}::")) else { continue };
            let (inner, items) = match path.split_once("::") {
                Some((inner, items)) if !inner.contains('{') => (member(inner.trim()), items),
                _ => ("mod".to_owned(), path),
            };
            for item in items.trim_matches(|c| c == '{' || c == '}' || char::is_whitespace(c)).split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    reexported.insert(item.to_owned(), inner.clone());
                }
            }
        }
        let mut graph = BTreeMap::new();
        for (own, file) in &members {
            let code = without_tests(&code_only(&std::fs::read_to_string(file).expect("a source file")));
            let mut imports: BTreeSet<String> = paths_after(&code, &format!("crate::{name}::"))
                .into_iter()
                .chain(if own == "mod" { BTreeSet::new() } else { paths_after(&code, "super::") })
                .map(|segment| member(&segment))
                .collect();
            imports.extend(crate_paths(&code).into_iter().filter_map(|first| reexported.get(&first).cloned()));
            imports.remove(own);
            graph.insert(own.clone(), imports);
        }
        graphs.insert(name, graph);
    }
    graphs
}

#[test]
fn no_module_of_a_library_crate_imports_one_that_imports_it() {
    let mut circles = Vec::new();
    for krate in CRATES {
        let graph = module_graph(&root().join(krate).join("src"));
        assert!(graph.len() > 1, "{krate}: found no modules");
        if let Some(found) = circle(&graph) {
            circles.push(format!("{krate}/src: {}", found.join(" -> ")));
        }
        for (folder, graph) in folder_graphs(&root().join(krate).join("src")) {
            if let Some(found) = circle(&graph) {
                circles.push(format!("{krate}/src/{folder}: {}", found.join(" -> ")));
            }
        }
    }
    assert!(circles.is_empty(), "import circles:\n{}", circles.join("\n"));
}

#[test]
fn the_checker_sees_imports_and_finds_circles() {
    let code = code_only(
        "use crate::a::X; // crate::b in a comment\nlet s = \"crate::c\"; use crate::{d, e::f}; $crate::g; \
         let c = '\"'; let l: &'static str = r#\"crate::h\"#; crate::i",
    );
    let found: Vec<String> = crate_paths(&code).into_iter().collect();
    assert_eq!(found, ["a", "d", "e", "i"]);
    let code = without_tests("use crate::a;\n#[cfg(test)]\nmod tests { use crate::b; fn f() { crate::c } }\ncrate::d");
    assert_eq!(crate_paths(&code).into_iter().collect::<Vec<_>>(), ["a", "d"]);
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            g.entry((*from).to_owned()).or_default().insert((*to).to_owned());
            g.entry((*to).to_owned()).or_default();
        }
        g
    };
    assert_eq!(circle(&graph(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(circle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap(), ["a", "b", "c", "a"]);
}

#[test]
fn the_checker_finds_a_circle_between_the_files_of_a_folder() {
    let src = std::env::temp_dir().join(format!("module-graph-{}", std::process::id())).join("src");
    std::fs::create_dir_all(src.join("g")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod g;\npub use g::b::Item;\n").unwrap();
    std::fs::write(src.join("g/mod.rs"), "pub mod a;\npub mod b;\npub mod c;\n").unwrap();
    std::fs::write(src.join("g/a.rs"), "use super::b::Thing;\n").unwrap();
    std::fs::write(src.join("g/b.rs"), "pub struct Item;\n").unwrap();
    std::fs::write(src.join("g/c.rs"), "// crate::g::a in a comment\nfn f() -> crate::Item { todo!() }\n").unwrap();
    let graphs = folder_graphs(&src);
    assert!(circle(&graphs["g"]).is_none(), "{graphs:?}");
    assert_eq!(graphs["g"]["c"], BTreeSet::from(["b".to_owned()]), "a re-exported item is an import of its file");
    std::fs::write(src.join("g/b.rs"), "pub struct Item;\nuse crate::g::c::X;\n").unwrap();
    let found = circle(&folder_graphs(&src)["g"]).expect("b -> c -> b");
    assert_eq!(found.len(), 3, "{found:?}");
    std::fs::remove_dir_all(src.parent().unwrap()).unwrap();
}
