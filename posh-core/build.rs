//! Embeds the shipped annotation library (`../annotations/*.posh`) into the crate, so every
//! binary carries it.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("../annotations");
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "posh"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::from("pub static BUILTIN: &[(&str, &str)] = &[\n");
    for file in files {
        let name = file.file_name().expect("a file").to_string_lossy().into_owned();
        let path = file.canonicalize().expect("listed files exist");
        writeln!(out, "    ({name:?}, include_str!({:?})),", path.display().to_string()).expect("writing to a String");
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("builtin_annotations.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
