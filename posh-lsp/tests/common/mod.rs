//! The workspace the tests and the benchmark plan against: a project at /proj with a posh.toml
//! of two mounts, an annotation file of its own, and data files of known sizes.

#![allow(dead_code)]

use std::path::Path;

use posh_core::fs::MemoryFileSystem;
use posh_lsp::ide::{Settings, UserDirs, World};

pub const MB: u64 = 1_000_000;

pub const CONFIG: &str = r#"# The project's two data mounts.
[[mount]]
path = "/mnt/logs"
proxy = "10.0.0.1:4433"
rtt = "30ms"

[[mount]]
name = "a"
path = "/mnt/a"
proxy = "10.0.0.2:4433"
"#;

/// The project's own annotations: `csvstat` is nowhere else.
pub const TOOLS: &str = "# The project's tools.\ncsvstat[filters_input, output_ratio:0.01]:\n- PARAMS:\n  - type:input_file, size:list, splittable, desc:\"CSV files\"\n";

pub fn file_system() -> MemoryFileSystem {
    let mut fs = MemoryFileSystem::new();
    fs.add_text("/proj/posh.toml", CONFIG).add_text("/proj/annotations/tools.posh", TOOLS);
    for i in 0..5 {
        fs.add_file(format!("/mnt/logs/ray{i}.log"), 500 * MB);
    }
    fs.add_file("/mnt/a/big.txt", 900 * MB).add_file("/mnt/a/t.csv", 50 * MB).add_file("/proj/notes.txt", 10_000);
    fs
}

pub fn world(fs: &MemoryFileSystem) -> World {
    World::load(fs, Path::new("/proj"), UserDirs::default(), &[], Settings::default())
}

/// A workspace: posh.toml mounting `data/` (relative to it), five logs of 500 MB there (sparse
/// files), and an annotation file of the project's own.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("posh.toml"), "[[mount]]\nname = \"logs\"\npath = \"data\"\nproxy = \"10.0.0.1:4433\"\n")
        .unwrap();
    std::fs::create_dir(root.join("data")).unwrap();
    for i in 0..5 {
        std::fs::File::create(root.join(format!("data/ray{i}.log"))).unwrap().set_len(500 * MB).unwrap();
    }
    std::fs::create_dir(root.join("annotations")).unwrap();
    std::fs::write(
        root.join("annotations/tools.posh"),
        "csvstat[filters_input, output_ratio:0.01]:\n- PARAMS:\n  - type:input_file, size:list, splittable\n",
    )
    .unwrap();
    dir
}
