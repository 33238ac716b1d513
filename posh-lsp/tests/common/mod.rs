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

/// About `lines` lines of script as people write them: pipelines over the mounts, loops,
/// functions, conditionals, substitutions, comments.
pub fn script(lines: usize) -> String {
    let chunk = "\
# Zählen, was die Strahlen taten 🎉
count() {
  grep -c 'rays traced' \"$1\" | sort -n
}
for log in /mnt/logs/ray*.log; do
  count \"$log\" >> /proj/counts.txt
done
cat /mnt/logs/ray0.log /mnt/logs/ray1.log | grep -v DEBUG | cut -d ' ' -f 2 | sort | uniq -c > /proj/top.txt
if [ -s /proj/counts.txt ]; then
  csvstat /mnt/a/t.csv | head -n 3
fi
total=$(cat /mnt/a/big.txt | wc -l)
echo \"$total\" && sort -u /proj/counts.txt | head
";
    let per_chunk = chunk.lines().count();
    chunk.repeat(lines.div_ceil(per_chunk))
}

/// The workspace of [`file_system`] on disk under `dir` (sparse files of the same sizes), and
/// [`script`] with its paths moved there: for the benchmark that drives the real server.
pub fn workspace_on_disk(dir: &Path, lines: usize) -> String {
    let at = |path: &str| dir.join(path.trim_start_matches('/'));
    let config = CONFIG.replace("\"/mnt/", &format!("\"{}/mnt/", dir.display()));
    for (path, text) in [("/proj/posh.toml", config.as_str()), ("/proj/annotations/tools.posh", TOOLS)] {
        std::fs::create_dir_all(at(path).parent().unwrap()).unwrap();
        std::fs::write(at(path), text).unwrap();
    }
    let files = (0..5).map(|i| (format!("/mnt/logs/ray{i}.log"), 500 * MB));
    for (path, size) in files.chain([("/mnt/a/big.txt".to_string(), 900 * MB), ("/mnt/a/t.csv".to_string(), 50 * MB)]) {
        std::fs::create_dir_all(at(&path).parent().unwrap()).unwrap();
        std::fs::File::create(at(&path)).unwrap().set_len(size).unwrap();
    }
    let root = dir.display().to_string();
    script(lines).replace("/mnt/", &format!("{root}/mnt/")).replace("/proj/", &format!("{root}/proj/"))
}

/// The home every process a test starts gets (`isolate_in`, `home_env_in`): one file for the
/// workspace's tests.
#[path = "../../../posh-exec/tests/common/isolation.rs"]
mod isolation;
#[allow(unused_imports)] // each test binary uses some of it
pub use isolation::{REMOVED, home_env_in, isolate_in};
