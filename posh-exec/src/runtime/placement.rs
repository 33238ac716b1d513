//! Where each command of a handed-over pipeline runs. bash has expanded every word, so the
//! pipeline is planned again with its words as literals (the planner then knows every file), by
//! the same planner and rules as `--explain`, and the plan is written in the proxy's terms
//! (working directory and view under the export root). The runtime adds no rule of its own: it
//! departs from the plan only for what the run alone shows (words that are not UTF-8 here; a
//! busy or lost proxy in `execute`), and `--stats` records why.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use posh_core::annotation::MergeKind;
use posh_core::config::Config;
use posh_core::fs::{FileSystem, normalize_path};
use posh_core::library::Library;
use posh_core::planner::measured::Ratios;
use posh_core::planner::{self, Carried, Location, NodeKind, PipelinePlan, PlanContext, PlanOptions, ScriptScope};
use posh_core::shell::expanded::{self, ExpandedCommand};
use posh_exec::remote::protocol::{JobCommand, MAX_HOME_BYTES, Redirect};

use super::{CommandCall, PipelineCall};

/// One command (or one copy of a split command) and where it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Index of the command in the pipeline.
    pub command: usize,
    /// Which copy of a split command (its lane), 0 when unsplit.
    pub copy: usize,
    /// The words to run at the client (a copy's subset of the files).
    pub argv: Vec<OsString>,
    pub remote: Option<RemoteStep>,
    /// Why the planner put the step at the client, in plain words (for `--stats`); `None` when
    /// it chose a proxy or nothing was planned.
    pub why: Option<String>,
    /// The planner's shape of the command, under which what it read and wrote is recorded
    /// (`posh_core::planner::measured`); `None` when it has no annotation or was not planned.
    pub shape: Option<String>,
}

/// A step in the proxy's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteStep {
    /// Index into the configuration's mounts.
    pub mount: usize,
    /// The working directory relative to the export root.
    pub cwd: String,
    /// Where the mount lies below the working directory, when it does (see `Request::view`).
    pub view: Option<String>,
    pub job: JobCommand,
    /// For each of `job.redirects`, the command's redirection it came from (for messages).
    pub redirect_of: Vec<usize>,
    /// Files it reads from other mounts, each streamed to this proxy by its own mount's proxy.
    pub streamed: Vec<StreamedInput>,
}

/// A file a remote step reads from another mount (the plan's edge between two proxies): that
/// mount's proxy sends it (`SendFiles`) into a pipe that stands under `word` in the step's view.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedInput {
    pub word: String,
    /// Index into the configuration's mounts: the mount it lies on.
    pub mount: usize,
    /// Where it lies, relative to that mount's export root.
    pub path: String,
}

/// Consecutive commands of the pipeline: one lane, or a split with one lane per copy whose
/// outputs the fan-in merges in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Unit {
    pub commands: std::ops::Range<usize>,
    pub lanes: Vec<Vec<Step>>,
    /// How a split's copies are combined (the plan's merge node); `None` when unsplit.
    pub fan_in: Option<FanIn>,
}

/// How a split's copies combine at the client, as the annotations say: the last command's
/// outputs by its merge, each command's statuses by its `no_match_status`.
#[derive(Clone, Debug, PartialEq)]
pub struct FanIn {
    pub kind: MergeKind,
    /// The merging command (`sort -m ...`, a rerun), when posh does not combine itself.
    pub argv: Vec<OsString>,
    /// For each command of the unit, the status that says its copy selected nothing.
    pub no_match_status: Vec<Option<u8>>,
    /// Where the plan joins the copies when not at the client: a `cat` (or the merging command)
    /// at a proxy that reads the copies' outputs, joined as `kind` says, and applies the split
    /// command's redirections (its `command` is the split command's, its `copy` the number of
    /// copies).
    pub at: Option<Step>,
}

impl Unit {
    pub fn is_split(&self) -> bool {
        self.lanes.len() > 1
    }
}

/// The mount whose proxy runs the whole of `units` as one job, if one does: a single unit, not
/// split, every step at that proxy in one working directory and view.
pub fn one_job_at(units: &[Unit]) -> Option<usize> {
    let [unit] = units else { return None };
    let [steps] = &unit.lanes[..] else { return None };
    let first = steps.first()?.remote.as_ref()?;
    let at_first = |step: &Step| {
        step.remote.as_ref().is_some_and(|r| (r.mount, &r.cwd, &r.view) == (first.mount, &first.cwd, &first.view))
    };
    (unit.fan_in.is_none() && steps.iter().all(at_first)).then_some(first.mount)
}

/// Plans `call` run in `cwd`, with what `fs` tells of the files: its units, and the plan they
/// follow (`None` when nothing could be planned). Every command runs at the client when bash's
/// words cannot be planned (words that are not UTF-8, say). `pipelines_per_call` share the
/// call's cost (`PlanOptions::pipelines_per_call`: a loop's requests), 1 for a call of its own.
#[allow(clippy::too_many_arguments)]
pub fn place(
    library: &Library,
    config: &Config,
    ratios: &Ratios,
    call: &PipelineCall,
    cwd: &Path,
    env: &[(OsString, OsString)],
    fs: &dyn FileSystem,
    pipelines_per_call: usize,
) -> (Option<PipelinePlan>, Vec<Unit>) {
    // A removed directory has no path the plan could place a command by (a proxy has none
    // either); the commands run there at the client, as bash runs them. Only the caller's
    // `/proc/PID/cwd` (what it sends when it has no path) can lead to one: a path is not
    // stat-ed, which on a mount whose attribute cache lapsed cost every call a round trip.
    if cwd.starts_with("/proc") && std::fs::metadata(cwd).is_ok_and(|m| m.nlink() == 0) {
        return (None, departed(call, WORKING_DIR_REMOVED));
    }
    if call.commands.iter().any(|c| c.no_match.is_some()) {
        return (None, departed(call, "a glob matched nothing under failglob (bash's error)"));
    }
    if call.commands.iter().any(|c| c.ambiguous.is_some()) {
        return (None, departed(call, "a redirection's target expanded into none or several words (bash's error)"));
    }
    let pipeline = match planned_pipeline(call) {
        Ok(pipeline) => pipeline,
        Err(reason) => return (None, departed(call, &reason)),
    };
    let options = PlanOptions { pipelines_per_call, output_file: call.stdout_file.clone(), ..PlanOptions::default() };
    let ctx = PlanContext { library, config, fs, cwd: cwd.to_path_buf(), options, ratios };
    let plan = planner::plan_pipeline_in(&ctx, &pipeline, &ScriptScope::handed_over());
    // `split`: the step is a copy of a split command, whose redirections the fan-in applies.
    let step_of = |command: usize, copy: usize, argv: Vec<String>, location: &Location, split: bool| -> Step {
        let argv_os: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let why = (*location == Location::Client).then(|| client_reason(&plan, command, copy)).flatten();
        let local = Step { command, copy, argv: argv_os, remote: None, why, shape: shape(&plan, command) };
        let Location::Mount(name) = location else { return local };
        let redirects = if split { &[][..] } else { &call.commands[command].redirects[..] };
        let carried = carried(&plan, command);
        let along = taken_along(&carried, env);
        let remote = along
            .and_then(|along| remote_step(config, name, &call.commands[command], redirects, argv, cwd, along))
            .and_then(|mut remote| {
                for (word, mount) in streamed_inputs(&plan, command, copy) {
                    remote.streamed.push(streamed_input(config, &mount, word, cwd)?);
                }
                Ok(remote)
            });
        match remote {
            Ok(remote) => Step { remote: Some(remote), ..local },
            // Recorded with its reason, for `--stats`.
            Err(reason) => Step { why: Some(departure(name, &reason)), ..local },
        }
    };
    let mut units = Vec::new();
    let mut i = 0;
    while i < call.commands.len() {
        let copies = copies(&plan, i);
        let merge = plan.nodes.iter().filter_map(|n| match &n.kind {
            NodeKind::Merge { kind, command, argv } if *command >= i => Some((*command, *kind, argv)),
            _ => None,
        });
        let end = merge.min_by_key(|(command, ..)| *command);
        match (copies.len(), end) {
            (0 | 1, _) | (_, None) => {
                let (argv, location) = copies
                    .first()
                    .map(|(argv, location)| (argv.clone(), location.clone()))
                    .unwrap_or_else(|| (utf8_argv(&call.commands[i]), Location::Client));
                let lanes = vec![vec![step_of(i, 0, argv, &location, false)]];
                units.push(Unit { commands: i..i + 1, lanes, fan_in: None });
                i += 1;
            }
            (n, Some((last, kind, merge_argv))) => {
                let region = i..last + 1;
                let lanes: Option<Vec<Vec<Step>>> = (0..n)
                    .map(|k| {
                        region
                            .clone()
                            .map(|c| {
                                copies_of_len(&plan, c, n)
                                    .map(|copies| step_of(c, k, copies[k].0.clone(), &copies[k].1, true))
                            })
                            .collect()
                    })
                    .collect();
                match lanes {
                    Some(lanes) => {
                        let no_match_status = region.clone().map(|c| no_match_status(&plan, c)).collect();
                        let argv = merge_argv.iter().map(OsString::from).collect();
                        // A merge the plan puts at a proxy that cannot be written in its terms
                        // (a word not UTF-8) joins at the client.
                        let at = merge_location(&plan, last).and_then(|name| {
                            // `cat` reading the copies' outputs joined (in order, or merged by
                            // posh), or the merging command (a rerun, `sort -m`), with the split
                            // command's redirections.
                            let command = &call.commands[last];
                            let merge = match kind {
                                MergeKind::Rerun | MergeKind::SortMerge => {
                                    let along = taken_along(&carried(&plan, last), env).ok()?;
                                    remote_step(
                                        config,
                                        name,
                                        command,
                                        &command.redirects,
                                        merge_argv.clone(),
                                        cwd,
                                        along,
                                    )
                                }
                                _ => cat_job(config, name, &[], &command.redirects, cwd, env),
                            };
                            let merge = merge.ok()?;
                            let argv = merge.job.argv.iter().map(OsString::from).collect();
                            Some(Step { copy: n, remote: Some(merge), ..local_step(last, argv) })
                        });
                        let fan_in = FanIn { kind, argv, no_match_status, at };
                        units.push(Unit { commands: region.clone(), lanes, fan_in: Some(fan_in) })
                    }
                    None => {
                        let planned: Vec<&str> = copies
                            .iter()
                            .filter_map(|(_, location)| match location {
                                Location::Mount(name) => Some(name.as_str()),
                                Location::Client => None,
                            })
                            .collect();
                        let planned = planned.join(", ");
                        units.extend(region.clone().map(|c| Unit {
                            commands: c..c + 1,
                            lanes: vec![vec![Step {
                                why: Some(departure(&planned, "its copies did not line up")),
                                ..local_step(c, call.commands[c].argv.clone())
                            }]],
                            fan_in: None,
                        }))
                    }
                }
                i = region.end;
            }
        }
    }
    (Some(plan), coalesce(units))
}

/// Joins neighbouring unsplit units into one lane, so that commands placed together on a proxy
/// run there as one job.
fn coalesce(units: Vec<Unit>) -> Vec<Unit> {
    let mut joined: Vec<Unit> = Vec::new();
    for unit in units {
        match joined.last_mut() {
            Some(last) if !last.is_split() && !unit.is_split() => {
                last.commands.end = unit.commands.end;
                last.lanes[0].extend(unit.lanes.into_iter().flatten());
            }
            _ => joined.push(unit),
        }
    }
    joined
}

/// Every command at the client, each with the reason `--stats` gives for leaving the plan.
/// `--stats`'s reason for the commands of a call made in a directory that was removed.
pub const WORKING_DIR_REMOVED: &str = "the working directory was removed";

fn departed(call: &PipelineCall, reason: &str) -> Vec<Unit> {
    let mut units = all_local(call);
    for step in units.iter_mut().flat_map(|u| u.lanes.iter_mut().flatten()) {
        step.why = Some(format!("run at the client: {reason}"));
    }
    units
}

/// Every command at the client, as bash would run them.
pub fn all_local(call: &PipelineCall) -> Vec<Unit> {
    vec![Unit {
        commands: 0..call.commands.len(),
        lanes: vec![call.commands.iter().enumerate().map(|(i, c)| local_step(i, c.argv.clone())).collect()],
        fan_in: None,
    }]
}

/// `--stats`'s reason for a command the plan put on mount `planned` and the runtime ran at the
/// client.
fn departure(planned: &str, reason: &str) -> String {
    format!("planned at {planned}, run at the client: {reason}")
}

fn local_step(command: usize, argv: Vec<OsString>) -> Step {
    Step { command, copy: 0, argv, remote: None, why: None, shape: None }
}

/// The plan's node for copy `copy` of command `index` (0 when unsplit).
fn copy_node(plan: &PipelinePlan, index: usize, copy: usize) -> Option<&posh_core::planner::Node> {
    plan.copies_of(index)
        .find(|n| matches!(n.kind, NodeKind::Command { copy: c, .. } if c.map_or(0, |(i, _)| i) == copy))
}

/// The planner's reason for running copy `copy` of command `index` where it runs.
fn client_reason(plan: &PipelinePlan, index: usize, copy: usize) -> Option<String> {
    copy_node(plan, index, copy).map(|n| n.why.explain())
}

fn utf8_argv(command: &CommandCall) -> Vec<String> {
    command.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect()
}

/// The copies of command `index`, in copy order: (argv, location).
fn copies(plan: &PipelinePlan, index: usize) -> Vec<(Vec<String>, Location)> {
    let mut copies: Vec<_> = plan
        .copies_of(index)
        .filter_map(|n| match &n.kind {
            NodeKind::Command { argv, copy, .. } => {
                Some((copy.map_or(0, |(i, _)| i), argv.clone(), n.location.clone()))
            }
            _ => None,
        })
        .collect();
    copies.sort_by_key(|(i, _, _)| *i);
    copies.into_iter().map(|(_, argv, location)| (argv, location)).collect()
}

/// The files copy `copy` of command `index` reads streamed from other mounts' proxies, as the
/// plan's edges between two proxies say: (word, mount).
fn streamed_inputs(plan: &PipelinePlan, index: usize, copy: usize) -> Vec<(String, String)> {
    let Some(node) = copy_node(plan, index, copy) else { return Vec::new() };
    let into = plan.edges.iter().filter(|e| e.to == node.id && e.between_proxies);
    into.filter_map(|e| match (&plan.node(e.from).kind, &plan.node(e.from).location) {
        (NodeKind::ReadFile { path, .. }, Location::Mount(mount)) => Some((path.clone(), mount.clone())),
        _ => None,
    })
    .collect()
}

/// The file `word` on mount `name`, as its proxy is asked to send it. A file that is not there
/// when the command runs (or is empty, see `posh_proxy::peer`) leaves the command to the client,
/// whose message about it is bash's.
fn streamed_input(config: &Config, name: &str, word: String, cwd: &Path) -> Result<StreamedInput, String> {
    let file = normalize_path(&cwd.join(&word));
    if !std::fs::metadata(&file).is_ok_and(|m| m.is_file() && m.len() > 0) {
        return Err(format!("`{word}`, which it would stream from {name}, is not a file with content"));
    }
    let mount = config.mounts.iter().position(|m| m.name == name).ok_or_else(|| format!("no mount {name}"))?;
    let path = file.strip_prefix(&config.mounts[mount].path).ok().and_then(Path::to_str).map(String::from);
    let path = path.ok_or_else(|| format!("`{word}` is not a UTF-8 path under mount {name}"))?;
    Ok(StreamedInput { word, mount, path })
}

/// A `cat` at mount `name` with `args` and `redirects`, taking along the locale only.
fn cat_job(
    config: &Config,
    name: &str,
    args: &[&str],
    redirects: &[(u32, String, OsString)],
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> Result<RemoteStep, String> {
    let argv: Vec<String> = std::iter::once("cat").chain(args.iter().copied()).map(String::from).collect();
    let command = CommandCall { argv: argv.iter().map(OsString::from).collect(), ..CommandCall::default() };
    remote_step(config, name, &command, redirects, argv, cwd, taken_along(&Carried::default(), env)?)
}

/// The mount where the plan joins the copies of split command `last`, if not the client.
fn merge_location(plan: &PipelinePlan, last: usize) -> Option<&str> {
    plan.nodes.iter().find_map(|n| match (&n.kind, &n.location) {
        (NodeKind::Merge { command, .. }, Location::Mount(name)) if *command == last => Some(name.as_str()),
        _ => None,
    })
}

/// The status by which command `index` says it selected nothing, as the plan says.
fn no_match_status(plan: &PipelinePlan, index: usize) -> Option<u8> {
    plan.copies_of(index).find_map(|n| match &n.kind {
        NodeKind::Command { no_match_status, .. } => *no_match_status,
        _ => None,
    })
}

/// What command `index` takes along from the client, as the plan says.
fn shape(plan: &PipelinePlan, index: usize) -> Option<String> {
    plan.copies_of(index).find_map(|n| match &n.kind {
        NodeKind::Command { shape, .. } => shape.clone(),
        _ => None,
    })
}

fn carried(plan: &PipelinePlan, index: usize) -> Carried {
    let carries = plan.copies_of(index).find_map(|n| match &n.kind {
        NodeKind::Command { carries, .. } => Some(carries),
        _ => None,
    });
    carries.cloned().unwrap_or_default()
}

fn copies_of_len(plan: &PipelinePlan, index: usize, n: usize) -> Option<Vec<(Vec<String>, Location)>> {
    Some(copies(plan, index)).filter(|c| c.len() == n)
}

/// The pipeline bash expanded as the planner reads it: every word a literal, built from the words
/// themselves (`shell::expanded`), or why it cannot be planned.
fn planned_pipeline(call: &PipelineCall) -> Result<posh_core::shell::Pipeline, String> {
    const NOT_UTF8: &str = "a word bash expanded is not UTF-8, which the planner cannot read";
    fn text(w: &OsString) -> Result<&str, &'static str> {
        w.to_str().ok_or(NOT_UTF8)
    }
    let mut assignments = Vec::with_capacity(call.commands.len());
    let mut argv = Vec::with_capacity(call.commands.len());
    let mut redirects = Vec::with_capacity(call.commands.len());
    for command in &call.commands {
        let pairs = command.assignments.iter().map(|(var, value)| Ok((text(var)?, text(value)?)));
        assignments.push(pairs.collect::<Result<Vec<_>, &str>>()?);
        argv.push(command.argv.iter().map(text).collect::<Result<Vec<_>, &str>>()?);
        let targets = command.redirects.iter().map(|(fd, op, target)| Ok((*fd, op.as_str(), text(target)?)));
        redirects.push(targets.collect::<Result<Vec<_>, &str>>()?);
    }
    let commands: Vec<ExpandedCommand<'_>> = (0..call.commands.len())
        .map(|i| ExpandedCommand { assignments: &assignments[i], argv: &argv[i], redirects: &redirects[i] })
        .collect();
    expanded::pipeline(&commands, call.stdin_is_text)
        .map_err(|e| format!("posh could not plan the pipeline bash handed over ({e})"))
}

/// What a command takes along to a proxy: its environment and, when it has one, its home.
struct Along {
    env: std::collections::BTreeMap<String, String>,
    home: Option<std::collections::BTreeMap<String, String>>,
}

/// The locale and the variables `carried` names, as the caller has them, and a copy of the home
/// files it names. Fails on what is not UTF-8 and on configuration too large to take along.
fn taken_along(carried: &Carried, env: &[(OsString, OsString)]) -> Result<Along, String> {
    let reads = |name: &OsStr| name.to_str().is_some_and(|name| planner::reaches_proxy(name, &carried.env));
    let mut along = Along { env: std::collections::BTreeMap::new(), home: None };
    for (var, value) in env.iter().filter(|(k, _)| reads(k)) {
        along.env.insert(utf8(var)?, utf8(value)?);
    }
    if !carried.home.is_empty() {
        along.home = Some(home_files(&carried.home, env)?);
    }
    Ok(along)
}

fn utf8(word: &OsStr) -> Result<String, String> {
    word.to_str().map(str::to_string).ok_or_else(|| "a word is not UTF-8".to_string())
}

/// `command` (with the copy's `argv` and the `redirects` it makes itself) as a job for the proxy
/// of mount `name`. The planner has checked that the proxy sees every word as the client does
/// (`posh_core::planner` reach rules); this only writes the job in the proxy's terms, and fails
/// only on words that are not UTF-8.
fn remote_step(
    config: &Config,
    name: &str,
    command: &CommandCall,
    redirects: &[(u32, String, OsString)],
    argv: Vec<String>,
    cwd: &Path,
    along: Along,
) -> Result<RemoteStep, String> {
    let not_utf8 = || "a word is not UTF-8".to_string();
    let mount_index = config.mounts.iter().position(|m| m.name == name).ok_or_else(|| format!("no mount {name}"))?;
    let mount = &config.mounts[mount_index];
    // Relative words resolve from a working directory on the mount, or from above it through a
    // view; a command without relative words runs at the export root.
    let cwd = normalize_path(cwd);
    let (job_cwd, view) = match cwd.strip_prefix(&mount.path) {
        Ok(rest) => (rest.to_str().ok_or_else(not_utf8)?.to_string(), None),
        Err(_) => match mount.path.strip_prefix(&cwd) {
            Ok(below) => (String::new(), Some(below.to_str().ok_or_else(not_utf8)?.to_string())),
            Err(_) => (String::new(), None),
        },
    };
    let mut job_redirects = Vec::new();
    let mut redirect_of = Vec::new();
    for (index, (fd, op, target)) in redirects.iter().enumerate() {
        let target = target.to_str().ok_or_else(not_utf8)?;
        let mut push = |fd: u32, op: &str, target: String| {
            job_redirects.push(Redirect { fd, op: op.to_string(), target });
            redirect_of.push(index);
        };
        match op.as_str() {
            ">&" | "<" | ">" | ">|" | ">>" => push(*fd, op, target.to_string()),
            "&>" | "&>>" => {
                push(1, &op[1..], target.to_string());
                push(2, ">&", "1".to_string());
            }
            _ => return Err(format!("its redirection `{op}` cannot be made at a proxy")),
        }
    }
    // Its own assignments win, as in bash.
    let Along { mut env, home } = along;
    for (var, value) in &command.assignments {
        env.insert(utf8(var)?, utf8(value)?);
    }
    Ok(RemoteStep {
        mount: mount_index,
        cwd: job_cwd,
        view,
        job: JobCommand { argv, env, files: Vec::new(), redirects: job_redirects, home },
        redirect_of,
        streamed: Vec::new(),
    })
}

/// A copy of each of `files` (relative to the home) that the user has, read where bash's
/// command would read it: under `$HOME`, and `.config/...` under `$XDG_CONFIG_HOME` when set.
fn home_files(
    files: &[String],
    env: &[(OsString, OsString)],
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| Path::new(v)).filter(|v| v.is_absolute());
    let home = var("HOME").ok_or("it reads files in the user's home, and HOME is not set")?;
    let mut copies = std::collections::BTreeMap::new();
    let mut total = 0;
    for file in files {
        let path = match (file.strip_prefix(".config/"), var("XDG_CONFIG_HOME")) {
            (Some(rest), Some(config)) => config.join(rest),
            _ => home.join(file),
        };
        let shown = || format!("~/{file}");
        let text = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Ok(meta) if meta.is_file() && meta.len() + total <= MAX_HOME_BYTES as u64 => std::fs::read_to_string(&path)
                .map_err(|e| format!("its configuration {} cannot be read as text ({e})", shown()))?,
            Ok(meta) if meta.is_file() => {
                return Err(format!("its configuration in the home ({}) is larger than a job takes along", shown()));
            }
            Ok(_) => continue,
            Err(e) => return Err(format!("its configuration {} cannot be read ({e})", shown())),
        };
        total += text.len() as u64;
        copies.insert(file.clone(), text);
    }
    Ok(copies)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the runtime read a call before it planned the words themselves: quoted back into shell
    /// text, parsed again. The reference the words' pipeline must match.
    fn pipeline_text(call: &PipelineCall) -> Option<String> {
        let quote = |w: &OsStr| w.to_str().map(|w| shell_words::quote(w).into_owned());
        let mut commands = Vec::new();
        for command in &call.commands {
            let mut words = Vec::new();
            for (var, value) in &command.assignments {
                words.push(format!("{}={}", var.to_str()?, quote(value)?));
            }
            for word in &command.argv {
                words.push(quote(word)?);
            }
            if call.stdin_is_text && std::ptr::eq(command, &call.commands[0]) {
                words.push("<<<text".to_string());
            }
            for (fd, op, target) in &command.redirects {
                let fd = if op.starts_with('&') { String::new() } else { fd.to_string() };
                words.push(format!("{fd}{op}{}", quote(target)?));
            }
            commands.push(words.join(" "));
        }
        Some(commands.join(" | ") + "\n")
    }

    fn reparsed(call: &PipelineCall) -> posh_core::shell::Pipeline {
        let script = posh_core::shell::parse(&pipeline_text(call).unwrap());
        assert!(script.errors.is_empty(), "{call:?}: {:?}", script.errors);
        let [pipeline] = &script.pipelines[..] else { panic!("{call:?}: {:?}", script.pipelines) };
        posh_core::shell::Pipeline::clone(pipeline)
    }

    fn command(argv: &[&str]) -> CommandCall {
        CommandCall { argv: argv.iter().map(OsString::from).collect(), ..CommandCall::default() }
    }

    fn call(commands: Vec<CommandCall>, stdin_is_text: bool) -> PipelineCall {
        PipelineCall {
            name: "s".into(),
            stats: None,
            pipefail: false,
            noclobber: false,
            stdin_is_text,
            commands,
            globs: Vec::new(),
            stdout_file: None,
        }
    }

    /// Words bash may hand over, each a literal now: quotes, glob and brace characters, `$`,
    /// tildes, newlines, empty words, operators, comments, non-ASCII.
    const WORDS: &[&str] = &[
        "",
        " ",
        "a b",
        "it's",
        "\"q\"",
        "$HOME",
        "${x:-y}",
        "$(date)",
        "`id`",
        "$'\\n'",
        "*",
        "*.log",
        "a?b",
        "[ab]",
        "x[",
        "{a,b}",
        "{1..3}",
        "~",
        "~/x",
        "a~b",
        "a\nb",
        "\n",
        "\t",
        "#c",
        "a#b",
        "!",
        "!x",
        "-n",
        "--",
        "-",
        "x=y",
        "\\",
        "a\\b",
        "é",
        "|",
        ";",
        "&",
        "<",
        ">",
        "(",
        ")",
        "a%b",
        "@(a|b)",
        "ERROR upstream",
        "data/big.log",
        "/mnt/d/f 1.txt",
        "../d/x.txt",
        "0",
        "12",
    ];

    /// Calls over every word: as an argument, a file, a redirection's target, an assignment's
    /// value, a pipe's second command, a here-string's command.
    fn calls() -> Vec<(&'static str, PipelineCall)> {
        let mut calls = Vec::new();
        for word in WORDS {
            let mut add = |c: PipelineCall| calls.push((*word, c));
            add(call(vec![command(&["grep", "-c", word, "f.txt"])], false));
            add(call(vec![command(&["cat", word]), command(&["grep", word]), command(&["wc", "-l"])], false));
            add(call(vec![command(&["sort", "-k", word])], true));
            for op in ["<", ">", ">|", ">>", "&>", "&>>"] {
                let mut sorted = command(&["sort"]);
                sorted.redirects.push((if op == "<" { 0 } else { 1 }, op.to_string(), OsString::from(word)));
                add(call(vec![command(&["cat", "f.txt"]), sorted], false));
            }
            let mut assigned = command(&["sort", "big.txt"]);
            assigned.assignments.push(("LC_ALL".into(), OsString::from(word)));
            add(call(vec![assigned], false));
        }
        let mut both = command(&["grep", "x", "a.log"]);
        both.redirects =
            vec![(2, ">&".into(), "1".into()), (1, ">".into(), "out".into()), (3, ">&".into(), "-".into())];
        calls.push(("2>&1", call(vec![both, command(&["wc"])], false)));
        calls
    }

    /// Whether the quoted text read every word back as bash expanded it: `shell_words` leaves
    /// a few words unquoted that the shell reads otherwise (`{a,b}` a brace expansion, `a=b`
    /// before the command an assignment).
    fn read_back(call: &PipelineCall, pipeline: &posh_core::shell::Pipeline) -> bool {
        call.commands.iter().zip(&pipeline.commands).all(|(command, read)| {
            let words: Vec<Option<&str>> = read.words.iter().map(|w| w.literal.as_deref()).collect();
            let expanded: Vec<Option<&str>> = command.argv.iter().map(|w| w.to_str()).collect();
            let targets: Vec<Option<&str>> = read
                .redirects
                .iter()
                .filter_map(|r| match &r.target {
                    posh_core::shell::RedirectTarget::File(w) => Some(w.literal.as_deref()),
                    _ => None,
                })
                .collect();
            let files = command.redirects.iter().filter(|(_, op, target)| {
                op != ">&" || target.to_str().is_some_and(|t| t.parse::<u32>().is_err() && t != "-")
            });
            let assigned: Vec<Option<String>> =
                read.assignments.iter().map(|w| w.literal.as_deref().map(str::to_string)).collect();
            let values = command
                .assignments
                .iter()
                .map(|(k, v)| Some(format!("{}={}", k.to_string_lossy(), v.to_string_lossy())));
            words == expanded
                && targets == files.map(|(_, _, target)| target.to_str()).collect::<Vec<_>>()
                && assigned == values.collect::<Vec<_>>()
        })
    }

    #[test]
    fn the_words_make_the_pipeline_their_quoted_text_parsed_to() {
        let mut misread = Vec::new();
        for (word, call) in calls() {
            let (new, old) = (planned_pipeline(&call).unwrap(), reparsed(&call));
            assert!(read_back(&call, &new), "{call:?}: {new:?}");
            if read_back(&call, &old) {
                assert_eq!(new, old, "{call:?}");
            } else {
                misread.push(word);
            }
        }
        // The quoted text misread brace expansions only (as words, targets and values); the words
        // are read as bash gave them.
        misread.dedup();
        assert_eq!(misread, ["{a,b}", "{1..3}"]);
    }

    #[test]
    fn the_words_are_planned_as_their_quoted_text_was() {
        let config = Config::parse(
            "[[mount]]\nname = \"d\"\npath = \"/mnt/d\"\nproxy = \"10.0.0.1:4433\"\nrtt = \"20ms\"\n",
            Path::new("/home/u/posh.toml"),
        )
        .unwrap();
        let library = Library::builtin();
        let mut fs = posh_core::fs::MemoryFileSystem::new();
        for word in WORDS.iter().filter(|w| !w.is_empty() && !w.contains('/')) {
            fs.add_file(format!("/mnt/d/{word}"), 5_000_000);
        }
        fs.add_file("/mnt/d/f.txt", 10_000_000).add_file("/mnt/d/big.txt", 300_000_000);
        fs.add_file("/mnt/d/a.log", 1_000).add_file("/mnt/d/f 1.txt", 20);
        let ctx = PlanContext {
            library: &library,
            config: &config,
            fs: &fs,
            cwd: "/mnt/d".into(),
            options: PlanOptions::default(),
            ratios: &posh_core::planner::measured::NO_RATIOS,
        };
        let mut remote = 0;
        for (_, call) in calls() {
            let scope = ScriptScope::handed_over();
            if !read_back(&call, &reparsed(&call)) {
                continue;
            }
            let old = planner::plan_pipeline_in(&ctx, &reparsed(&call), &scope);
            let new = planner::plan_pipeline_in(&ctx, &planned_pipeline(&call).unwrap(), &scope);
            assert_eq!(new, old, "{call:?}");
            remote += usize::from(new.runs_at_a_proxy());
        }
        assert!(remote > 100, "the calls are planned at the proxy too ({remote})");
    }

    #[test]
    fn a_word_is_read_as_bash_expanded_it() {
        // A command name holding `=` is a word, never an assignment.
        let named = call(vec![command(&["a=b", "x"])], false);
        let pipeline = planned_pipeline(&named).unwrap();
        assert!(pipeline.commands[0].assignments.is_empty());
        let words: Vec<_> = pipeline.commands[0].words.iter().map(|w| w.literal.as_deref()).collect();
        assert_eq!(words, [Some("a=b"), Some("x")]);
        // What cannot be planned is said.
        let mut odd = command(&["cat"]);
        odd.redirects.push((0, "<>".into(), "f".into()));
        assert!(planned_pipeline(&call(vec![odd], false)).unwrap_err().contains("`<>`"));
        let not_utf8 =
            CommandCall { argv: vec![std::os::unix::ffi::OsStringExt::from_vec(vec![0xff])], ..Default::default() };
        assert!(planned_pipeline(&call(vec![not_utf8], false)).unwrap_err().contains("UTF-8"));
    }

    #[test]
    fn home_files_are_read_where_the_command_would_read_them() {
        let dir = tempfile::tempdir().unwrap();
        let (home, config) = (dir.path().join("home"), dir.path().join("xdg"));
        std::fs::create_dir_all(config.join("git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".gitconfig"), "[user]\n").unwrap();
        std::fs::write(config.join("git/ignore"), "*.tmp\n").unwrap();
        let files = [".gitconfig".to_string(), ".config/git/ignore".to_string(), ".config/git/attributes".to_string()];
        let env = |vars: &[(&str, &Path)]| -> Vec<(OsString, OsString)> {
            vars.iter().map(|(k, v)| (OsString::from(k), v.as_os_str().to_owned())).collect()
        };
        let copies = home_files(&files, &env(&[("HOME", &home), ("XDG_CONFIG_HOME", &config)])).unwrap();
        let names: Vec<&str> = copies.keys().map(String::as_str).collect();
        assert_eq!(names, [".config/git/ignore", ".gitconfig"], "what the user has, from $XDG_CONFIG_HOME");
        let copies = home_files(&files, &env(&[("HOME", &home)])).unwrap();
        assert_eq!(copies.keys().collect::<Vec<_>>(), [".gitconfig"], "~/.config when XDG_CONFIG_HOME is not set");
        assert!(home_files(&files, &[]).unwrap_err().contains("HOME is not set"));
        std::fs::write(home.join(".gitconfig"), vec![b'#'; MAX_HOME_BYTES + 1]).unwrap();
        assert!(home_files(&files, &env(&[("HOME", &home)])).unwrap_err().contains("larger than a job takes along"));
    }
}
