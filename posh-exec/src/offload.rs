//! Which pipelines of a script go to the posh runtime, and the rewritten script that hands them
//! over. Nothing changes (bash runs the original text) unless a mount is configured, the script
//! parses, and some pipeline both can be handed over faithfully and may touch a mount.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result};
use posh_core::config::Config;
use posh_core::library::Library;
use posh_core::planner::{self, Location, PlanContext, PlanOptions, ScriptScope, Why};
use posh_core::rewrite;

use crate::os_fs::OsFileSystem;

/// The rewritten script, or `None` to run the original.
pub fn rewrite(
    source: &str,
    library: &Library,
    config: &Config,
    ratios: &posh_core::planner::measured::Ratios,
    stats: Option<&str>,
    socket: Option<&str>,
) -> Option<String> {
    if config.mounts.is_empty() {
        return None;
    }
    let script = posh_core::shell::parse(source);
    if !script.errors.is_empty() {
        return None;
    }
    let scope = ScriptScope::new(source, &script);
    let cwd = std::env::current_dir().ok()?;
    let ctx = PlanContext { library, config, fs: &OsFileSystem, cwd, options: PlanOptions::default(), ratios };
    // The planner's own hand-over rules (`ScriptScope::why_stays`), so that what `--explain`
    // shows is what runs.
    let chosen: Vec<usize> = script
        .pipelines
        .iter()
        .enumerate()
        .filter(|(_, p)| scope.why_stays(library, p).is_none())
        .filter(|(_, p)| may_touch_a_mount(&planner::plan_pipeline_in(&ctx, p, &scope)))
        .map(|(i, _)| i)
        .collect();
    if chosen.is_empty() {
        return None;
    }
    // The trampoline each handed-over pipeline starts.
    let runtime = posh_exec::helper("posh-run").ok()?;
    let prologue = rewrite::Prologue { runtime: &runtime.to_string_lossy(), stats, socket };
    Some(rewrite::rewrite(source, &script, &chosen, prologue).text)
}

/// Statically, some node may run on a proxy, or a word only the shell knows may name a mount's
/// files: only then is the runtime worth its call.
fn may_touch_a_mount(plan: &planner::PipelinePlan) -> bool {
    plan.nodes.iter().any(|n| n.location != Location::Client || matches!(n.why, Why::DependsOnShell(_)))
}

/// Gives `bash` the rewritten `text` to run as `bash -c TEXT NAME ARGS` would, whatever its
/// length: one argument may not exceed 128 KiB (Linux's MAX_ARG_STRLEN), so the text is stored in
/// the run's private directory `dir` and `bash -c` only evaluates it, from its first line. That
/// keeps `$0`, `"$@"`, `$LINENO`, bash's messages (`NAME: line N: ...`), top-level `exit` and
/// `return`, and the script's standard input as `bash -c TEXT` has them (docs/running.md
/// compares the ways measured).
pub fn hand_to_bash(bash: &mut Command, text: &str, dir: &Path, name: &str, args: &[String]) -> Result<()> {
    let script = dir.join("script.sh");
    std::fs::write(&script, text).with_context(|| format!("cannot write {}", script.display()))?;
    let path = script.to_str().context("the runtime's directory is not UTF-8")?;
    let quoted = format!("'{}'", path.replace('\'', "'\\''"));
    bash.arg("-c").arg(format!("eval \"$(< {quoted})\"")).arg(name).args(args);
    Ok(())
}
