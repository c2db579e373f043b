//! Lists every `.wgsl` file of this folder, so that a new shader joins the crate's [`FILES`] without an edit: the
//! generated `files.rs` holds one `(file name, source)` pair per file, embedded with `include_str!`.

use std::fmt::Write;
use std::{env, fs, path::Path};

fn main() {
    let folder = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let mut files: Vec<String> = fs::read_dir(&folder)
        .expect("the crate's folder is readable")
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".wgsl"))
        .collect();
    files.sort();
    let mut out =
        String::from("/// Every shader file of the folder and its source, by file name, in file-name order.\n");
    out.push_str("pub const FILES: &[(&str, &str)] = &[\n");
    for file in &files {
        writeln!(out, "    ({file:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{file}\"))),").unwrap();
        println!("cargo::rerun-if-changed={file}");
    }
    out.push_str("];\n");
    println!("cargo::rerun-if-changed=.");
    let target = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("files.rs");
    fs::write(target, out).expect("OUT_DIR is writable");
}
