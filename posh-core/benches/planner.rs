//! Planning speed: a single pipeline, and a 5,000-line script. The paper's prototype needed
//! 10-50 ms per pipeline; posh aims below 1 ms, so planning never shows next to running. And
//! planning at scale (issue 40): a pipeline split across 100 and 1,000 mounts (the target: under
//! 100 ms at 1,000, planning linear in commands x mounts), and a 100-pipeline script with 1,000
//! mounts configured. And loading the shipped annotation library, which every run that plans
//! pays before bash starts.
//!
//! `cargo bench -p posh-core --bench planner`

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use posh_core::config::Config;
use posh_core::fs::MemoryFileSystem;
use posh_core::library::Library;
use posh_core::planner::{PlanContext, PlanOptions, plan_script};

const CONFIG: &str = r#"
[[mount]]
path = "/mnt/logs"
proxy = "10.0.0.1:4433"
[[mount]]
path = "/mnt/a"
proxy = "10.0.0.2:4433"
[[mount]]
path = "/mnt/b"
proxy = "10.0.0.3:4433"
"#;

const PIPELINE: &str =
    "cat /mnt/logs/*.log | grep 'rays traced' | cut -d ' ' -f 4 | sort -n | uniq -c | sort -rn | head -n 5 > top.txt\n";

/// A script of about `lines` lines in the shapes real scripts have: pipelines, loops,
/// functions, conditionals, substitutions.
fn script(lines: usize) -> String {
    let chunk = "\
f() {
  grep -c error \"$1\" | sort -n
}
for l in /mnt/logs/*.log; do
  f \"$l\" >> counts.txt
done
if [ -s counts.txt ]; then
  cat /mnt/a/x.log /mnt/b/y.log | grep foo | tee local.txt | wc -l
fi
comm -12 /mnt/a/x.log /mnt/b/y.log > common.txt
n=$(zcat /mnt/logs/scan.gz | grep -v '^#' | cut -f 3 | sort | uniq -c | sort -rn | head -n 20 | wc -l)
echo \"$n\" && sort -u counts.txt | head
";
    let per_chunk = chunk.lines().count();
    chunk.repeat(lines.div_ceil(per_chunk))
}

fn file_system() -> MemoryFileSystem {
    let mut fs = MemoryFileSystem::new();
    for i in 0..20 {
        fs.add_file(format!("/mnt/logs/r{i}.log"), 100_000_000);
    }
    fs.add_file("/mnt/logs/scan.gz", 300_000_000)
        .add_file("/mnt/a/x.log", 800_000_000)
        .add_file("/mnt/b/y.log", 600_000_000);
    fs
}

fn bench(c: &mut Criterion) {
    let config = Config::parse(CONFIG, Path::new("posh.toml")).expect("the bench config parses");
    let library = Library::builtin();
    let fs = file_system();
    let ctx = PlanContext {
        library: &library,
        config: &config,
        fs: &fs,
        cwd: "/home/user".into(),
        options: PlanOptions::default(),
        ratios: &posh_core::planner::measured::NO_RATIOS,
    };

    let one = posh_core::shell::parse(PIPELINE);
    c.bench_function("plan one pipeline", |b| b.iter(|| plan_script(&ctx, PIPELINE, black_box(&one))));

    let source = script(5_000);
    let parsed = posh_core::shell::parse(&source);
    assert!(parsed.errors.is_empty());
    let pipelines = parsed.pipelines.len();
    let mut group = c.benchmark_group(format!("5,000-line script ({pipelines} pipelines)"));
    group.sample_size(10);
    group.bench_function("parse", |b| b.iter(|| posh_core::shell::parse(black_box(&source))));
    group.bench_function("plan", |b| b.iter(|| plan_script(&ctx, &source, black_box(&parsed))));
    group.finish();
}

/// `mounts` mounts `/data/m0` ... under `/data`, each with `files` files `f000.log` ...: the
/// configuration, and the file system.
fn many_mounts(mounts: usize, files: usize) -> (Config, MemoryFileSystem) {
    let toml: String = (0..mounts)
        .map(|i| format!("[[mount]]\nname = \"m{i}\"\npath = \"/data/m{i}\"\nproxy = \"embedded\"\n"))
        .collect();
    let config = Config::parse(&toml, Path::new("/data/posh.toml")).expect("the bench config parses");
    let mut fs = MemoryFileSystem::new();
    for i in 0..mounts {
        for f in 0..files {
            fs.add_file(format!("/data/m{i}/f{f:03}.log"), 3_000_000);
        }
    }
    (config, fs)
}

fn at_scale(c: &mut Criterion) {
    let library = Library::builtin();
    let split = "cat m*/f000.log | grep ERROR | wc -l\n";
    let parsed = posh_core::shell::parse(split);
    let mut group = c.benchmark_group("split across mounts");
    group.sample_size(10);
    for mounts in [100, 1_000] {
        let (config, fs) = many_mounts(mounts, 1);
        let ctx = PlanContext {
            library: &library,
            config: &config,
            fs: &fs,
            cwd: "/data".into(),
            options: PlanOptions::default(),
            ratios: &posh_core::planner::measured::NO_RATIOS,
        };
        // Planned split, one copy per mount: what is measured is what `--explain` shows.
        let plan = plan_script(&ctx, split, &parsed);
        let copies = plan.pipelines[0].nodes.iter().filter(|n| n.location != posh_core::planner::Location::Client);
        assert!(copies.count() >= mounts, "the pipeline is split across the {mounts} mounts");
        group.bench_function(format!("{mounts} mounts"), |b| b.iter(|| plan_script(&ctx, split, black_box(&parsed))));
    }
    group.finish();

    // A script of 100 pipelines, each over one mount's files, with 1,000 mounts configured.
    let (config, fs) = many_mounts(1_000, 100);
    let source: String =
        (0..100).map(|k| format!("grep -c ERROR m{}/f0*.log | sort -t: -k2 -n | tail -n 3\n", k * 10)).collect();
    let parsed = posh_core::shell::parse(&source);
    let ctx = PlanContext {
        library: &library,
        config: &config,
        fs: &fs,
        cwd: "/data".into(),
        options: PlanOptions::default(),
        ratios: &posh_core::planner::measured::NO_RATIOS,
    };
    let mut group = c.benchmark_group("1,000 mounts configured");
    group.sample_size(10);
    group.bench_function("100-pipeline script", |b| b.iter(|| plan_script(&ctx, &source, black_box(&parsed))));
    group.finish();
}

fn library(c: &mut Criterion) {
    c.bench_function("load the shipped library", |b| b.iter(Library::builtin));
}

criterion_group!(benches, bench, at_scale, library);
criterion_main!(benches);
