//! Which pipelines of a script go to the posh runtime, and the rewritten script that hands them
//! over. Nothing changes (bash runs the original text) unless a mount is configured, the script
//! parses, and some pipeline both can be handed over faithfully and may touch a mount.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};
use posh_core::config::Config;
use posh_core::fs::{FileMeta, FileSystem};
use posh_core::library::Library;
use posh_core::planner::{self, Location, PlanContext, PlanOptions, ScriptScope};
use posh_core::rewrite;
use posh_core::shell::Pipeline;

use crate::os_fs::OsFileSystem;

/// A script whose pipelines go to the runtime.
#[derive(Debug)]
pub struct HandOver {
    /// The script bash runs, which hands them over.
    pub text: String,
    /// With `text` a script file bash runs itself (`rewrite::ScriptFile`), the same script
    /// rewritten for `bash -c`, which the file's first line runs where bash cannot load the
    /// builtin; `None` when `text` is for `bash -c`.
    pub fallback: Option<String>,
    /// The mounts whose proxies their plans place commands at, by index in the configuration:
    /// the runtime connects them while bash starts.
    pub mounts: Vec<usize>,
    /// The script starts background jobs: one may still run a handed-over pipeline, or be about
    /// to hand one over, when bash ends (`sort big > out &`, `( sort big > out ) &`).
    pub background: bool,
}

/// The rewritten script, or `None` to run the original. Its pipelines are planned as
/// `--explain` plans them, with the values of the script's variables given `inputs` (what the
/// run gets: `run_inputs`). What the plans need to know of the
/// mounts' files is asked of their proxies through `planning` (the run's session, which goes on
/// to run the script), all the directories the script names at once; without it (or where a
/// proxy does not answer), of the mounts.
#[allow(clippy::too_many_arguments)]
pub fn rewrite(
    source: &str,
    library: &Library,
    config: &Config,
    ratios: &posh_core::planner::measured::Ratios,
    inputs: &posh_core::values::Inputs,
    stats: Option<&str>,
    socket: Option<&str>,
    file: Option<ScriptFile<'_>>,
    planning: Option<&crate::runtime::metadata::Planning<'_>>,
) -> Option<HandOver> {
    if config.mounts.is_empty() {
        return None;
    }
    let script = posh_core::shell::parse_as_bash(source, &mut crate::bash_syntax::check);
    if !script.errors.is_empty() {
        return None;
    }
    let scope = ScriptScope::new(source, &script, library);
    let cwd = std::env::current_dir().ok()?;
    let mut bash = None;
    let fs: &dyn FileSystem = match planning {
        Some(planning) => {
            let named = planner::directories_named(&script, &cwd);
            // bash's verdict, needed only if something is handed over, is asked while the plan
            // waits for the proxies' answers: started before `list_ahead`, which waits for the
            // connections and the listings (started after it, `bash -n` ran in series with the
            // rest of the start, traced with strace on the 20 ms link).
            if !named.is_empty() {
                bash = Some(crate::bash_syntax::Asked::start(source, &script));
            }
            planning.list_ahead(&named);
            planning
        }
        None => &SeamsAssumed,
    };
    let ctx = PlanContext { library, config, fs, cwd, options: PlanOptions::default(), ratios };
    let values = planner::values_of(&ctx, source, &script, &scope, inputs);
    let scope = scope.with_values(values);
    // The planner's own hand-over rules (`ScriptScope::why_stays`), so that what `--explain`
    // shows is what runs.
    let mut chosen = Vec::new();
    let mut mounts = Vec::new();
    // Words of theirs that the mounts' proxies glob (`planner::globs`).
    let mut globs = Vec::new();
    // Loops the runtime gets whole: their body's pipelines go in their call.
    let goes_to_runtime = |i: usize| planner::plan_pipeline_in(&ctx, &script.pipelines[i], &scope).goes_to_runtime();
    let loops: Vec<(&posh_core::shell::ForLoop, Vec<posh_core::shell::Pipeline>)> = script
        .loops
        .iter()
        .filter(|l| planner::why_loop_stays_with_bash(&ctx, &script, &scope, l, &goes_to_runtime).is_none())
        .map(|l| (l, planner::body_of(&script, l).into_iter().map(|i| Pipeline::clone(&script.pipelines[i])).collect()))
        .collect();
    // (Those of a substitution among its words are chosen as any other.)
    let in_a_body = |p: &posh_core::shell::Pipeline| {
        loops.iter().any(|(l, _)| l.body.start <= p.span.start && p.span.end <= l.body.end)
    };
    for pipeline in &script.pipelines {
        if in_a_body(pipeline) {
            continue;
        }
        if scope.why_stays(library, pipeline).is_some() && !scope.may_go_in_part(library, pipeline) {
            continue;
        }
        let plan = planner::plan_pipeline_in(&ctx, pipeline, &scope);
        // The whole pipeline, or the parts of it the plan hands over while bash keeps the rest.
        if !plan.handed_parts.is_empty() {
            chosen.extend(plan.handed_parts.iter().map(|part| pipeline.part(part.commands.0..part.commands.1)));
        } else if plan.goes_to_runtime() {
            chosen.push(Pipeline::clone(pipeline));
            globs.extend(plan.globs_at_proxy.iter().map(|glob| glob.span));
        } else {
            continue;
        }
        mounts.extend(plan.nodes.iter().filter_map(|n| match &n.location {
            Location::Mount(name) => config.mounts.iter().position(|m| &m.name == name),
            Location::Client => None,
        }));
    }
    if chosen.is_empty() && loops.is_empty() {
        return None;
    }
    // A script bash rejects is bash's to report, in its own words (`Plan::confirm_with_bash`).
    if bash.unwrap_or_else(|| crate::bash_syntax::Asked::start(source, &script)).rejects() {
        return None;
    }
    mounts.sort_unstable();
    mounts.dedup();
    // The trampoline each handed-over pipeline starts.
    let runtime = posh_exec::helper("posh-run").ok()?;
    // Or, where bash can load it, the same hand-over without a process.
    let builtin = posh_exec::bash_builtin();
    let builtin = builtin.as_ref().map(|path| path.to_string_lossy());
    let runtime = runtime.to_string_lossy();
    let prologue =
        rewrite::Prologue { runtime: &runtime, stats, socket, builtin: builtin.as_deref(), file: None, globs: &globs };
    let background =
        script.pipelines.iter().any(|p| p.background || p.context.contains(&posh_core::shell::Context::Background));
    let loops: Vec<rewrite::HandedLoop<'_>> =
        loops.iter().map(|(the_loop, body)| rewrite::HandedLoop { the_loop, body }).collect();
    let for_bash_c = rewrite::rewrite(source, &chosen, &loops, prologue).text;
    let (text, fallback) = match (file, builtin.as_deref()) {
        (Some(file), Some(builtin)) => {
            let fallback = file.fallback.to_string_lossy();
            let file = rewrite::ScriptFile { name: file.name, builtin, fallback: &fallback };
            let as_file = rewrite::Prologue { file: Some(file), ..prologue };
            // Where bash cannot load the builtin, it cannot in the fallback either.
            let fallback = rewrite::rewrite(source, &chosen, &loops, rewrite::Prologue { builtin: None, ..prologue });
            (rewrite::rewrite(source, &chosen, &loops, as_file).text, Some(fallback.text))
        }
        _ => (for_bash_c, None),
    };
    Some(HandOver { text, fallback, mounts, background })
}

/// What a line typed at posh's prompt is planned with: bash's live state when Enter was
/// pressed.
#[derive(Debug)]
pub struct LiveState {
    /// bash's working directory.
    pub cwd: PathBuf,
    /// bash's scalar variables (others are unknown to the plan).
    pub variables: std::collections::BTreeMap<String, String>,
    /// The names of bash's functions (and of its aliases, when their definitions are not known).
    pub defined: Vec<String>,
    /// bash's aliases, name and value, when bash expands them (`shopt expand_aliases`).
    pub aliases: std::collections::BTreeMap<String, String>,
}

/// The scope a line typed at the prompt is planned in: bash's live functions (commands naming
/// one stay with bash) and the values of its variables (the arguments unknown). The line's
/// rewrite and its preview share it.
pub fn live_scope<'a>(
    ctx: &PlanContext<'_>,
    source: &'a str,
    script: &posh_core::shell::Script,
    live: &LiveState,
) -> ScriptScope<'a> {
    let scope = ScriptScope::new(source, script, ctx.library).with_functions(live.defined.iter().cloned());
    let inputs = posh_core::values::Inputs { env: live.variables.clone(), env_complete: false, args: None };
    let values = planner::values_of(ctx, source, script, &scope, &inputs);
    scope.with_values(values)
}

/// The line `typed` at the prompt, its pipelines that may touch a mount made calls of the
/// builtin (`rewrite::rewrite_line`), as a script's would be; `None` to run it as typed. Planned
/// with `live`: the values of bash's variables, its working directory, its functions (commands
/// that name one stay with bash) and aliases, expanded first as bash would expand them
/// (`aliases`); the handed-over pipelines carry the expansion, the rest of the line is given
/// back to bash as typed.
pub fn rewrite_line(
    typed: &str,
    library: &Library,
    config: &Config,
    ratios: &posh_core::planner::measured::Ratios,
    live: &LiveState,
) -> Option<String> {
    if config.mounts.is_empty() {
        return None;
    }
    let expanded = crate::aliases::expand(typed, &live.aliases);
    let source = expanded.as_ref().map_or(typed, |e| e.text.as_str());
    let script = posh_core::shell::parse_as_bash(source, &mut crate::bash_syntax::check);
    if !script.errors.is_empty() || !script.left_to_bash.is_empty() {
        return None;
    }
    let ctx = PlanContext {
        library,
        config,
        fs: &SeamsAssumed,
        cwd: live.cwd.clone(),
        options: PlanOptions::default(),
        ratios,
    };
    let scope = live_scope(&ctx, source, &script, live);
    let mut chosen = Vec::new();
    for pipeline in &script.pipelines {
        if scope.why_stays(library, pipeline).is_some() && !scope.may_go_in_part(library, pipeline) {
            continue;
        }
        let plan = planner::plan_pipeline_in(&ctx, pipeline, &scope);
        let parts: Vec<posh_core::shell::Pipeline> = if !plan.handed_parts.is_empty() {
            plan.handed_parts.iter().map(|part| pipeline.part(part.commands.0..part.commands.1)).collect()
        } else if plan.goes_to_runtime() {
            vec![Pipeline::clone(pipeline)]
        } else {
            continue;
        };
        chosen.extend(parts);
    }
    if chosen.is_empty() || crate::bash_syntax::rejects(source, &script) {
        return None;
    }
    let Some(expanded) = &expanded else { return Some(rewrite::rewrite_line(source, &chosen).text) };
    // Each expansion lies in a call, or between them where bash gets the typed words back.
    let mut text = String::new();
    let mut at = 0;
    for (span, call) in rewrite::line_calls(source, &chosen) {
        text.push_str(expanded.typed(typed, at..span.start)?);
        text.push_str(&call);
        at = span.end;
    }
    text.push_str(expanded.typed(typed, at..source.len())?);
    Some(text)
}

/// A script given by its file (not `-c`), to be run by bash as a file of its own when the
/// builtin is there: its name, and where the run keeps the fallback for a bash that cannot load
/// the builtin.
#[derive(Debug, Clone, Copy)]
pub struct ScriptFile<'a> {
    pub name: &'a str,
    pub fallback: &'a Path,
}

/// Where a run directory `dir` keeps the rewritten script, and its fallback (see [`HandOver`]).
pub fn script_paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("script.sh"), dir.join("fallback.sh"))
}

/// The file system as the hand-over decision sees it: every file ends its last line. Whether
/// split pieces meet at a line's end decides only how a pipeline splits, never that it stays at
/// the client (split copies run at proxies), so assuming it can only hand over a pipeline that
/// runs wholly at the client, which the runtime does faithfully; the runtime's plan, made
/// when the pipeline runs, reads the files' last bytes. Reading them here too cost every run a
/// round trip per split at its start. (`metadata::Planning::before_the_script` assumes the same.)
struct SeamsAssumed;

impl FileSystem for SeamsAssumed {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        OsFileSystem.metadata(path)
    }
    fn directory_size(&self, path: &Path) -> Option<u64> {
        OsFileSystem.directory_size(path)
    }
    fn read_dir(&self, path: &Path) -> Vec<String> {
        OsFileSystem.read_dir(path)
    }
    fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
        OsFileSystem.read_dirs(paths)
    }
    fn read_to_string(&self, path: &Path) -> Option<String> {
        OsFileSystem.read_to_string(path)
    }
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        vec![Some(true); paths.len()]
    }
}

/// Gives `bash` the rewritten `text` to run as `bash -c TEXT NAME ARGS` would, whatever its
/// length: one argument may not exceed 128 KiB (Linux's MAX_ARG_STRLEN), so the text is stored in
/// the run's private directory `dir` and `bash -c` only evaluates it, from its first line. That
/// keeps `$0`, `"$@"`, `$LINENO`, bash's messages (`NAME: line N: ...`), top-level `exit` and
/// `return`, and the script's standard input as `bash -c TEXT` has them (docs/running.md
/// compares the ways measured).
///
/// A script rewritten as a file (`HandOver::fallback`) is run as `bash FILE ARGS` instead: its
/// first line gives it its name back.
pub fn hand_to_bash(bash: &mut Command, hand_over: &HandOver, dir: &Path, name: &str, args: &[String]) -> Result<()> {
    let (script, fallback) = script_paths(dir);
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    write(&script, &hand_over.text)?;
    if let Some(text) = &hand_over.fallback {
        write(&fallback, text)?;
        bash.arg(&script).args(args);
        return Ok(());
    }
    let path = script.to_str().context("the runtime's directory is not UTF-8")?;
    let quoted = format!("'{}'", path.replace('\'', "'\\''"));
    bash.arg("-c").arg(format!("eval \"$(< {quoted})\"")).arg(name).args(args);
    Ok(())
}
