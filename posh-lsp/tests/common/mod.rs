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

/// About `lines` lines of varied script, the same for the same `seed`: no two blocks alike (a
/// script of one block repeated is mostly cache hits for a server that keeps parsed chunks by
/// their text). Pipelines of 1 to 6 stages over the mounts and local files, with different
/// commands, options, patterns and outputs; functions and their calls, `for` and `while` loops,
/// conditionals, `case`, substitutions, here-documents, comments. Many pipelines hold a
/// `grep -v DEBUG` for the benchmarks to edit.
pub fn varied_script(lines: usize, seed: u64) -> String {
    let mut next = random_below(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let inputs = [
        "/mnt/logs/ray0.log",
        "/mnt/logs/ray1.log",
        "/mnt/logs/ray2.log",
        "/mnt/logs/ray3.log",
        "/mnt/logs/ray4.log",
        "/mnt/logs/ray*.log",
        "/mnt/a/big.txt",
        "/mnt/a/t.csv",
        "/proj/notes.txt",
    ];
    let words = ["rays", "traced", "ERROR", "WARN", "timeout", "frame", "pixel", "GET", "POST", "Zählung"];
    let mut out = String::from("#!/bin/bash\n# Generated: varied pipelines, functions, loops 🎉\nset -u\n");
    let mut functions: Vec<String> = Vec::new();
    let mut i = 0;
    while out.lines().count() < lines {
        i += 1;
        let word = format!("{}{i}", words[next(words.len())]);
        let input = inputs[next(inputs.len())];
        let stage = |k: usize, next: &mut dyn FnMut(usize) -> usize| -> String {
            match (k + next(13)) % 13 {
                0 => "grep -v DEBUG".to_string(),
                1 => format!("grep -i '{word}'"),
                2 => format!("cut -d ' ' -f {}", 1 + next(6)),
                3 => "sort".to_string(),
                4 => format!("sort -k {} -n", 1 + next(4)),
                5 => "uniq -c".to_string(),
                6 => format!("head -n {}", 1 + next(50)),
                7 => format!("tail -n {}", 1 + next(50)),
                8 => "wc -l".to_string(),
                9 => "tr a-z A-Z".to_string(),
                10 => format!("sed 's/{word}/x/g'"),
                11 => format!("awk '{{print ${}}}'", 1 + next(5)),
                _ => "grep -v DEBUG".to_string(),
            }
        };
        let stages = 1 + next(5);
        let pipeline: Vec<String> = (0..stages).map(|k| stage(k, &mut next)).collect();
        let sink = match next(4) {
            0 => format!(" > /proj/out{i}.txt"),
            1 => format!(" >> /proj/all{}.txt", next(9)),
            _ => String::new(),
        };
        match next(10) {
            0..=2 => out.push_str(&format!("cat {input} | {}{sink}\n", pipeline.join(" | "))),
            3 => {
                let name = format!("count_{word}").to_lowercase().replace('ä', "a");
                out.push_str(&format!(
                    "{name}() {{\n  local f=\"$1\"\n  grep -c '{word}' \"$f\" | sort -n\n  {} < \"$f\"\n}}\n",
                    pipeline.join(" | ")
                ));
                functions.push(name);
            }
            4 => out.push_str(&format!(
                "for f in {input} /mnt/logs/ray{}.log; do\n  {} \"$f\" | {}\n  echo \"$f done {i}\"\ndone\n",
                next(5),
                stage(0, &mut next).split(' ').next().unwrap_or("cat"),
                pipeline.join(" | ")
            )),
            5 => out.push_str(&format!(
                "if [ -s /proj/out{}.txt ]; then\n  grep '{word}' {input} | {}{sink}\nelse\n  echo 'no {word}' >&2\nfi\n",
                next(i),
                pipeline.join(" | ")
            )),
            6 => out.push_str(&format!("n{i}=$(grep -c '{word}' {input})\necho \"{word}: $n{i}\"\n")),
            7 if !functions.is_empty() => {
                let f = &functions[next(functions.len())];
                out.push_str(&format!("{f} {input}{sink}\n"));
            }
            7 => out.push_str(&format!("# {word}: nothing yet\n\n")),
            8 => out.push_str(&format!(
                "while read -r line; do\n  echo \"$line\" | {}\ndone < /proj/list{i}.txt\n",
                pipeline.join(" | ")
            )),
            _ => out.push_str(&format!(
                "case \"${{MODE:-{word}}}\" in\n  a) sort {input} | {} ;;\n  *) cat <<EOF | grep '{word}'\n{word} {i}\nEOF\n  ;;\nesac\n",
                pipeline.join(" | ")
            )),
        }
        if next(6) == 0 {
            out.push('\n');
        }
    }
    out
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

/// [`workspace_on_disk`] with [`varied_script`] instead of one block repeated.
pub fn varied_workspace_on_disk(dir: &Path, lines: usize, seed: u64) -> String {
    workspace_on_disk(dir, 1);
    let root = dir.display().to_string();
    varied_script(lines, seed).replace("/mnt/", &format!("{root}/mnt/")).replace("/proj/", &format!("{root}/proj/"))
}

/// The home every process a test starts gets (`isolate_in`, `home_env_in`): one file for the
/// workspace's tests.
#[path = "../../../posh-exec/tests/common/isolation.rs"]
mod isolation;
#[allow(unused_imports)] // each test binary uses some of it
pub use isolation::{REMOVED, home_env_in, isolate_in};

#[path = "../../../posh-core/src/test_random.rs"]
mod test_random;
pub use test_random::random_below;
