//! What the script rewriter builds on: the shell model and the planner. Any script parses (with
//! errors) and is planned against two mounts, never a panic.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use posh_core::config::Config;
use posh_core::fs::MemoryFileSystem;
use posh_core::library::Library;
use posh_core::planner::{self, PlanContext, PlanOptions, measured};

const CONFIG: &str = "[[mount]]\npath = \"/mnt/a\"\nproxy = \"10.0.0.2:4433\"\n\n\
                      [[mount]]\npath = \"/mnt/b\"\nproxy = \"10.0.0.3:4433\"\n";

fuzz_target!(|source: &str| {
    static SETUP: OnceLock<(Library, Config, MemoryFileSystem)> = OnceLock::new();
    let (library, config, fs) = SETUP.get_or_init(|| {
        let config = Config::parse(CONFIG, std::path::Path::new("posh.toml")).expect("the fuzz config");
        let mut fs = MemoryFileSystem::new();
        fs.add_file("/mnt/a/x.log", 800 << 20).add_file("/mnt/b/y.log", 600 << 20);
        (Library::builtin(), config, fs)
    });
    let script = posh_core::shell::parse_tolerant(source);
    let ctx = PlanContext {
        library,
        config,
        fs,
        cwd: "/mnt".into(),
        options: PlanOptions::default(),
        ratios: &measured::NO_RATIOS,
    };
    let _ = planner::plan_script(&ctx, source, &script);
});
