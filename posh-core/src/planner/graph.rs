//! From a shell pipeline to its DAG: commands fitted to annotations, redirections followed
//! through a file-descriptor table as bash applies them, file inputs and outputs resolved and
//! sized, splits made, and bytes predicted on every edge. Placement comes after (`place`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::annotation::{ArgType, MergeKind, OutputBound};
use crate::fs::{FileKind, FileMeta};
use crate::matcher::{Invocation, NoMatch};
use crate::planner::PlanContext;
use crate::planner::expand::{Expanded, expand_word};
use crate::planner::measured::Ratios;
use crate::planner::model::{
    Carried, Edge, Location, Node, NodeId, NodeKind, OutputEstimate, PipelinePlan, Stream, Why,
};
use crate::planner::reach::{FileWord, Reach, reach, reaches};
use crate::shell::{self, CommandKind, RedirectOp, RedirectTarget};

/// Where a command's standard input comes from, after its redirections.
#[derive(Clone, Debug, PartialEq)]
enum Input {
    Pipe,
    Stdin,
    File(String),
    Text(u64),
}

/// Where an output descriptor goes, after redirections.
#[derive(Clone, Debug, PartialEq)]
enum Output {
    Pipe,
    Stdout,
    Stderr,
    File { path: String, append: bool },
    Discard,
}

/// A file a command reads or writes by name, resolved.
#[derive(Clone, Debug)]
struct FileUse {
    path: String,
    location: Location,
    size: u64,
    config: bool,
    /// Index among the invocation's splittable values, for the splittable argument's files.
    split_value: Option<usize>,
    /// Its annotation says a stream may stand in for it (`streamable`).
    streamable: bool,
}

/// What the planner learned about one command of a pipeline.
struct Facts<'l> {
    index: usize,
    span: crate::text::Span,
    argv: Vec<String>,
    /// `argv` for people: known words quoted, words only the shell knows as written.
    shown: Vec<String>,
    /// `Some` when the command must run in bash at the client.
    shell_reason: Option<Why>,
    /// Where a rule other than splitting puts the command (`needs_current_dir`).
    pin: Option<(Location, Why)>,
    invocation: Option<Invocation<'l>>,
    annotation: Option<std::sync::Arc<str>>,
    stdin: Input,
    stdout: Output,
    stderr: Output,
    inputs: Vec<FileUse>,
    outputs: Vec<FileUse>,
    /// The names it removes or replaces (`type:removed_file`).
    removed: Vec<String>,
    /// An input argument is `-`: the command reads its standard input among its files.
    dash_input: bool,
    /// The targets of its file redirections, in order.
    redirect_files: Vec<String>,
    /// It has redirections of any kind.
    redirected: bool,
    /// Where it may run, by the files it names and what it reads.
    reach: Reach,
    /// What its annotation says bounds its output.
    bound: Option<Bound>,
    /// Its shape, once asked: every copy of a split command asks (a thousand copies of a
    /// thousand words).
    shape: std::cell::OnceCell<Option<String>>,
    /// The indices of its inputs that are not among the splittable files, once asked: every
    /// copy reads them besides its share.
    unsplit_inputs: std::cell::OnceCell<Vec<usize>>,
    /// Its splittable argument prepared for narrowing, once asked (per copy otherwise).
    narrowing: std::cell::OnceCell<Option<crate::matcher::Narrowing>>,
}

/// An upper bound on a command's output, per input, from its annotation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bound {
    /// At most this many bytes of each input, and never more than the input (`head -n 10`).
    Prefix(u64),
    /// At most this many bytes per input and per total line, whatever the input's size (`wc`,
    /// checksums), besides the names of the files; and at most the input.
    Fixed(u64),
    /// At most its smallest input (`comm -12`).
    Smallest,
}

/// Bytes a line is assumed to take, for a bound counted in lines (`head -n 10`).
const ASSUMED_LINE_BYTES: u64 = 100;

/// The bound the annotation puts on `invocation`'s output: `output_per_input`,
/// `output_within_smallest_input`, or the last
/// `bounds_lines`/`bounds_bytes` option given (the last of `head -n`/`-c` wins), or else the
/// defaults of such options (`head` alone prints 10 lines). A value with a sign bounds nothing.
fn output_bound(invocation: &Invocation<'_>) -> Option<Bound> {
    let options = &invocation.entry.options;
    if let Some(bytes) = options.output_per_input {
        return Some(Bound::Fixed(bytes.ceil() as u64));
    }
    if options.output_within_smallest_input {
        return Some(Bound::Smallest);
    }
    let bound = |kind: OutputBound, text: &str| {
        let count = gnu_count(text)?;
        Some(Bound::Prefix(match kind {
            OutputBound::Lines => count.saturating_mul(ASSUMED_LINE_BYTES),
            OutputBound::Bytes => count,
        }))
    };
    let mut given = invocation.values.iter().filter_map(|v| Some((invocation.entry.arg(v.arg).bounds?, v)));
    if let Some((kind, value)) = given.next_back() {
        return bound(kind, invocation.value_text(value));
    }
    let mut defaults = invocation.defaults.iter().filter_map(|d| Some((invocation.entry.arg(d.arg).bounds?, d)));
    defaults.next_back().and_then(|(kind, default)| bound(kind, &default.value))
}

/// A count as GNU tools read it: digits and an optional multiplier (`4K`, `1MB`, `2b`); `None`
/// for a signed or unreadable value.
fn gnu_count(text: &str) -> Option<u64> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let number: u64 = text[..digits].parse().ok()?;
    let (suffix, power) = match &text[digits..] {
        "" => return Some(number),
        "b" => return number.checked_mul(512),
        s if s.ends_with("iB") => (&s[..1], 1024u64),
        s if s.len() == 2 && s.ends_with('B') => (&s[..1], 1000),
        s => (s, 1024),
    };
    let exponent = ["k", "M", "G", "T", "P", "E"].iter().position(|p| p.eq_ignore_ascii_case(suffix))? as u32 + 1;
    number.checked_mul(power.checked_pow(exponent)?)
}

impl Facts<'_> {
    /// The first file it names by a relative path (its working directory's `.` included).
    fn relative_word(&self) -> Option<String> {
        let mut files = self.inputs.iter().chain(&self.outputs).map(|f| &f.path).chain(&self.redirect_files);
        files.find(|path| !path.starts_with('/')).cloned()
    }

    /// Its files (inputs, outputs, redirection targets) lie on more than one mount.
    fn spans_mounts(&self, ctx: &PlanContext<'_>) -> bool {
        let named = self.inputs.iter().chain(&self.outputs).map(|f| f.location.clone());
        let redirected = self.redirect_files.iter().map(|path| ctx.location_of(&ctx.absolute(path)));
        let mut mounts = named.chain(redirected).filter(|l| *l != Location::Client);
        mounts.next().is_some_and(|first| mounts.any(|other| other != first))
    }

    /// Its shape for measured ratios, when it has an annotation to be measured against.
    fn shape(&self) -> Option<String> {
        let shape = || {
            self.invocation.as_ref()?;
            let files: Vec<&str> = self.inputs.iter().chain(&self.outputs).map(|f| f.path.as_str()).collect();
            Some(super::measured::shape(&self.argv, &files))
        };
        self.shape.get_or_init(shape).clone()
    }

    /// Where its predicted output comes from: its annotation's bound, what earlier runs of its
    /// shape measured, its annotation's ratio, or an assumption.
    fn output_estimate(&self, ratios: &Ratios) -> OutputEstimate {
        let Some(invocation) = &self.invocation else {
            return OutputEstimate::Assumed { ratio: 1.0 };
        };
        let options = &invocation.entry.options;
        // What its annotation states it keeps of its input is never undercut by what runs measured.
        let floor = if options.output_holds_input { 1.0 } else { 0.0 };
        let measured = self.shape().and_then(|shape| ratios.get(&shape).copied()).filter(|m| m.ratio >= floor);
        match (self.bound, measured) {
            // A bound by the inputs' sizes leaves room for what runs measured below it.
            (Some(Bound::Smallest), Some(measured)) => {
                return OutputEstimate::Measured { ratio: measured.ratio, runs: measured.runs };
            }
            (Some(_), _) => return OutputEstimate::Bounded,
            (None, Some(measured)) => return OutputEstimate::Measured { ratio: measured.ratio, runs: measured.runs },
            (None, None) => {}
        }
        match options.output_ratio {
            Some(ratio) => OutputEstimate::Annotation { ratio: ratio.max(floor) },
            None if options.output_holds_input => OutputEstimate::Annotation { ratio: 1.0 },
            None => OutputEstimate::Assumed { ratio: if options.filters_input { 0.5 } else { 1.0 } },
        }
    }

    fn merge_kind(&self) -> MergeKind {
        self.invocation.as_ref().and_then(|i| i.entry.options.merge).unwrap_or(MergeKind::Concat)
    }

    /// The file words a copy reading the splittable files `members` (indices into `inputs`)
    /// names: those files, every other file argument, but no redirection (the fan-in applies
    /// those at the client).
    fn copy_words(&self, members: &[usize]) -> Vec<&str> {
        let inputs = self.copy_inputs(members).into_iter().map(|i| self.inputs[i].path.as_str());
        inputs.chain(self.outputs.iter().map(|f| f.path.as_str())).collect()
    }

    /// The inputs a copy reading the splittable files `members` (ascending indices into
    /// `inputs`) reads, in argv order: in time of its share and the unsplit inputs, not of all
    /// the inputs (a split across a thousand mounts asks this once per copy).
    fn copy_inputs(&self, members: &[usize]) -> Vec<usize> {
        let unsplit = self.unsplit_inputs.get_or_init(|| {
            self.inputs.iter().enumerate().filter(|(_, f)| f.split_value.is_none()).map(|(i, _)| i).collect()
        });
        crate::matcher::merged_ascending(unsplit, members)
    }

    fn splittable_across_input(&self) -> bool {
        self.invocation.as_ref().is_some_and(|i| i.entry.options.splittable_across_input)
    }

    /// Whether every piece of its output is whole lines, given whether its input's are.
    fn output_whole_lines(&self, input_whole: impl FnOnce() -> bool) -> bool {
        let options = self.invocation.as_ref().map(|i| &i.entry.options);
        options.is_some_and(|o| o.output_ends_lines || (o.output_ends_as_input && input_whole()))
    }

    /// The copies of a split: up to `factor` per run of files on one mount, each an equal share.
    fn parts(&self, factor: usize) -> Vec<(Location, Vec<usize>)> {
        let mut parts = Vec::new();
        for (location, members) in self.split_runs() {
            let per = members.len().div_ceil(members.len().min(factor));
            parts.extend(members.chunks(per).map(|c| (location.clone(), c.to_vec())));
        }
        parts
    }

    /// Contiguous runs of the splittable argument's files by location, in argv order.
    fn split_runs(&self) -> Vec<(Location, Vec<usize>)> {
        let mut runs: Vec<(Location, Vec<usize>)> = Vec::new();
        for (i, file) in self.inputs.iter().enumerate().filter(|(_, f)| f.split_value.is_some()) {
            match runs.last_mut() {
                Some((location, members)) if *location == file.location => members.push(i),
                _ => runs.push((file.location.clone(), vec![i])),
            }
        }
        runs
    }
}

/// A pipeline's DAG before placement, with which nodes are pinned where they stand.
#[derive(Clone)]
pub(crate) struct Built {
    pub plan: PipelinePlan,
    pub pinned: Vec<bool>,
    /// Per node, the mounts whose proxies may run it besides the client (`None`: any).
    pub allowed: Vec<Option<Vec<String>>>,
    /// A command of the pipeline, unsplit, could run at more than one mount's proxy (a file
    /// streamed to it from the other): only then may planning it unsplit beat its split.
    pub could_stream: bool,
    /// A split's merge whose output feeds the next command through a pipe, with nothing
    /// redirected, and the mounts of its copies (all at proxies): it may be merged at one of
    /// them, the commands after it there too (see `planner::merged_near_the_data`).
    pub pipe_merge: Option<(NodeId, Vec<String>)>,
}

/// Builds `pipeline`'s DAG; with `stays` (why the pipeline stays with bash), every command is at
/// the client for that reason unless a more precise one holds; without `split`, no command is
/// split.
pub(crate) fn build_pipeline(
    ctx: &PlanContext<'_>,
    pipeline: &shell::Pipeline,
    functions: &[String],
    stays: Option<String>,
    cwd_known: bool,
    split: bool,
) -> Built {
    let count = pipeline.commands.len();
    let mut facts: Vec<Facts<'_>> =
        pipeline.commands.iter().enumerate().map(|(i, c)| analyse(ctx, c, i, count, functions)).collect();
    if !cwd_known {
        // Relative words name files only bash can place (a `cd` the planner cannot follow came
        // before): they are words only the shell can tell, as `$PWD/...` would be.
        for (facts, command) in facts.iter_mut().zip(&pipeline.commands) {
            let relative_glob = command.words.iter().find(|w| w.glob && !w.raw.starts_with('/'));
            let relative = relative_glob.map(|w| w.raw.to_string()).or_else(|| facts.relative_word());
            if facts.shell_reason.is_none()
                && let Some(word) = relative
            {
                let word = if word == "." { "$PWD".to_string() } else { format!("$PWD/{word}") };
                facts.shell_reason = Some(Why::DependsOnShell(word));
            }
        }
    }
    if let Some(why) = stays {
        for facts in &mut facts {
            facts.shell_reason.get_or_insert_with(|| Why::StaysWithBash(why.clone()));
        }
    }
    // Room for each command, its files and the three streams: growing these one node at a time
    // was a tenth of planning an opening's pipelines.
    let room = 2 * facts.len() + 3;
    let mut graph = Graph {
        ctx,
        nodes: Vec::with_capacity(room),
        edges: Vec::with_capacity(room),
        pinned: Vec::with_capacity(room),
        allowed: Vec::with_capacity(room),
        pipe: Vec::new(),
        special: HashMap::new(),
        files: HashMap::new(),
        pipe_merge: None,
    };
    let mut i = 0;
    while i < facts.len() {
        match split_segment(ctx, &facts, i).filter(|_| split) {
            Some(end) => {
                graph.add_split(&facts[i..=end]);
                i = end + 1;
            }
            None => {
                graph.add_command(&facts[i]);
                i += 1;
            }
        }
    }
    let plan = PipelinePlan {
        span: pipeline.span,
        nodes: graph.nodes,
        edges: graph.edges,
        bash_bytes: 0,
        posh_bytes: 0,
        between_proxies_bytes: 0,
        stays_with_bash: None,
        handed_parts: Vec::new(),
        values: Vec::new(),
        unknown_values: Vec::new(),
        globs_at_proxy: Vec::new(),
    };
    let could_stream = facts.iter().any(|f| matches!(f.reach, Reach::ClientOr(_)) && f.spans_mounts(ctx));
    Built { plan, pinned: graph.pinned, allowed: graph.allowed, could_stream, pipe_merge: graph.pipe_merge }
}

/// When command `start` splits across its files, the last command of the segment that runs as
/// one copy per part: following commands join while they are splittable across their input and
/// read only the pipe, and while the command before them combines by concatenation (the
/// segment's last command may combine otherwise: the fan-in merges as its annotation says). A
/// split needs every copy to be runnable where its files are and no input redirection (the
/// copies read their files). Only the segment's last command may have redirections: the fan-in
/// applies them to the merged output at the client, once, as bash would to the unsplit command;
/// behind other commands, they may not move stderr (a lane has one).
fn split_segment(ctx: &PlanContext<'_>, facts: &[Facts<'_>], start: usize) -> Option<usize> {
    let first = &facts[start];
    let runs = first.split_runs();
    let parts = first.parts(ctx.options.copies_per_mount.max(1));
    let copies = parts.len();
    let redirected_input = !matches!(first.stdin, Input::Pipe | Input::Stdin);
    if first.shell_reason.is_some() || copies < 2 || first.pin.is_some() || first.dash_input || redirected_input {
        return None;
    }
    // A copy reads its files where they are: nothing is streamed to it.
    let runnable = |words: Vec<&str>, location: &Location| match location {
        Location::Client => true,
        Location::Mount(name) => reaches(ctx, words.into_iter().map(FileWord::fixed), name),
    };
    if !runs.iter().all(|(location, members)| runnable(first.copy_words(members), location)) {
        return None;
    }
    // The commands after the first read each piece on its own: no line may straddle two pieces.
    // Each command's output must end lines, or end as its input does, which for the first
    // command means every piece's last (non-empty) file ends with a newline.
    let files_end_lines = || {
        let seams: Vec<PathBuf> = parts[..parts.len() - 1]
            .iter()
            .filter_map(|(_, members)| members.iter().rev().map(|&i| &first.inputs[i]).find(|f| f.size > 0))
            .map(|f| ctx.absolute(&f.path))
            .collect();
        ctx.fs.end_with_newlines(&seams).into_iter().all(|ends| ends == Some(true))
    };
    // Whether lines are whole after the segment's last command so far.
    let mut aligned = None;
    let mut end = start;
    while end + 1 < facts.len() {
        let (current, next) = (&facts[end], &facts[end + 1]);
        let joins = current.merge_kind() == MergeKind::Concat
            && current.stdout == Output::Pipe
            && !current.redirected
            && next.shell_reason.is_none()
            && next.splittable_across_input()
            && next.pin.is_none()
            && next.stdin == Input::Pipe
            && next.inputs.iter().all(|f| f.config)
            && next.outputs.is_empty()
            && runs.iter().all(|(location, _)| runnable(next.copy_words(&[]), location))
            && *aligned.get_or_insert_with(|| current.output_whole_lines(files_end_lines));
        if !joins {
            break;
        }
        end += 1;
        // It joined, so its input's lines were whole.
        aligned = Some(facts[end].output_whole_lines(|| true));
    }
    // A command writing its stderr elsewhere cannot be a later command of a lane.
    loop {
        if end == start || facts[end].stderr == Output::Stderr {
            return Some(end);
        }
        end = end.checked_sub(1).filter(|&e| e >= start)?;
    }
}

fn analyse<'l>(
    ctx: &PlanContext<'l>,
    command: &shell::Command,
    index: usize,
    count: usize,
    functions: &[String],
) -> Facts<'l> {
    let mut facts = Facts {
        index,
        span: command.span,
        argv: Vec::new(),
        shown: Vec::new(),
        shell_reason: None,
        pin: None,
        invocation: None,
        annotation: None,
        stdin: if index == 0 { Input::Stdin } else { Input::Pipe },
        stdout: if index + 1 == count { Output::Stdout } else { Output::Pipe },
        stderr: Output::Stderr,
        inputs: Vec::new(),
        outputs: Vec::new(),
        removed: Vec::new(),
        dash_input: false,
        redirect_files: Vec::new(),
        redirected: !command.redirects.is_empty(),
        reach: Reach::Anywhere,
        bound: None,
        shape: std::cell::OnceCell::new(),
        unsplit_inputs: std::cell::OnceCell::new(),
        narrowing: std::cell::OnceCell::new(),
    };
    if command.kind == CommandKind::Compound {
        facts.shell_reason = Some(Why::RunsInShell);
        facts.shown.push("(compound command)".to_string());
    }
    for word in &command.words {
        match expand_word_in(ctx, word) {
            Expanded::Words(words) => {
                facts.shown.extend(words.iter().map(|w| shell_words::quote(w).into_owned()));
                facts.argv.extend(words);
            }
            Expanded::Unknown(raw) => {
                facts.shell_reason.get_or_insert(Why::DependsOnShell(raw.clone()));
                facts.shown.push(raw.clone());
                facts.argv.push(raw);
            }
        }
    }
    apply_redirects(ctx, command, &mut facts);
    if facts.shell_reason.is_some() {
        return facts;
    }
    let Some(name) = facts.argv.first() else {
        facts.shell_reason = Some(Why::RunsInShell);
        return facts;
    };
    if functions.iter().any(|f| f == name) || shell::is_builtin(name) {
        facts.shell_reason = Some(Why::RunsInShell);
        return facts;
    }
    match ctx.library.match_argv(&facts.argv) {
        Ok(invocation) => {
            facts.annotation = Some(ctx.library.shown(invocation.entry));
            // A value's index among the splittable argument's (`splittable_values`, which keeps
            // their order), counted as they come: searched for, a glob of 2,000 files took 4
            // million comparisons per plan.
            let splittable = invocation.entry.splittable_arg();
            let mut split_values = 0..;
            for value in &invocation.values {
                let text = invocation.value_text(value).to_string();
                let split_value = (Some(value.arg) == splittable).then(|| split_values.next()).flatten();
                let spec = invocation.entry.arg(value.arg);
                match value.ty {
                    ArgType::InputFile if text == "-" => facts.dash_input = true,
                    ArgType::InputFile => facts
                        .inputs
                        .push(FileUse { streamable: spec.streamable, ..ctx.file_use(&text, spec.config, split_value) }),
                    ArgType::OutputFile if text == "-" => {}
                    ArgType::OutputFile => facts.outputs.push(ctx.file_use(&text, false, None)),
                    ArgType::RemovedFile => facts.removed.push(text),
                    ArgType::Str => {}
                }
            }
            for default in &invocation.defaults {
                match default.ty {
                    ArgType::InputFile => facts.inputs.push(ctx.file_use(&default.value, false, None)),
                    ArgType::OutputFile => facts.outputs.push(ctx.file_use(&default.value, false, None)),
                    ArgType::RemovedFile => facts.removed.push(default.value.clone()),
                    ArgType::Str => {}
                }
            }
            if invocation.entry.options.needs_current_dir {
                // It works on the whole working directory (git stats every file), so it runs
                // where that lives. What it reads of the user's (git's identity and
                // configuration) goes along: see `Carried`.
                let cwd = ctx.working_directory();
                facts.pin = Some((cwd.location.clone(), Why::CurrentDirectory));
                facts.inputs.push(cwd);
            }
            let inputs = facts.inputs.iter().map(|f| FileWord { word: &f.path, streamable: f.streamable });
            let others = facts
                .outputs
                .iter()
                .map(|f| f.path.as_str())
                .chain(facts.redirect_files.iter().map(String::as_str))
                .chain(facts.removed.iter().map(String::as_str));
            // A proxy opens no FIFO or device as a redirection (it would wait for an other end
            // that is the script's, at the client).
            // A word's path when it lies on a mount and is of this kind there.
            let on_a_mount_as = |word: &str, kind: FileKind| {
                let path = crate::fs::normalize_path(&ctx.cwd.join(word));
                let found =
                    ctx.config.mount_for(&path).is_some() && ctx.fs.metadata(&path).is_some_and(|m| m.kind == kind);
                found.then_some(path)
            };
            let special = |word: &&String| on_a_mount_as(word, FileKind::Special).is_some();
            // What a proxy's job removes is kept aside to be put back; a directory with entries
            // could not be (`rmdir` would fail on it, `mv` would move it whole).
            let full_directory = |word: &&String| {
                on_a_mount_as(word, FileKind::Directory).is_some_and(|path| !ctx.fs.read_dir(&path).is_empty())
            };
            facts.reach = match (facts.redirect_files.iter().find(special), facts.removed.iter().find(full_directory)) {
                (Some(word), _) => {
                    Reach::ClientOnly(format!("`{word}` is a FIFO or a device, which the client opens as bash does"))
                }
                (None, Some(word)) => Reach::ClientOnly(format!(
                    "it removes or replaces `{word}`, a directory with entries, which a proxy could not put back \
                     were the job not to complete"
                )),
                (None, None) => reach(ctx, inputs.chain(others.map(FileWord::fixed))),
            };
            // A command reading the very file its output already goes to: GNU cat and grep see
            // that and skip it with an error, which only a command writing the file itself can
            // (at a proxy its output is a stream).
            if let (Some(output), Output::Stdout) = (&ctx.options.output_file, &facts.stdout)
                && let Some(file) = facts.inputs.iter().find(|f| ctx.absolute(&f.path) == *output)
            {
                facts.reach = Reach::ClientOnly(format!(
                    "it reads `{}`, the file its output already goes to, which it sees only where it writes it",
                    file.path
                ));
            }
            let reads_script_input = facts.stdin == Input::Stdin
                && index == 0
                && (facts.dash_input || facts.inputs.iter().all(|f| f.config))
                && !invocation.entry.options.ignores_stdin;
            if reads_script_input {
                // It would have to take the script's input away from the commands after it.
                facts.reach = Reach::ClientOnly(
                    "it reads the standard input bash gives it (the script's, or a pipe from a command bash runs), \
                         which stays at the client"
                        .to_string(),
                );
            }
            let assigned = command.assignments.iter().map(|w| w.raw.split('=').next().unwrap_or_default());
            let reads_env = &invocation.entry.options.reads_env;
            if let Some(name) = assigned.into_iter().find(|name| !crate::planner::reaches_proxy(name, reads_env)) {
                facts.reach = Reach::ClientOnly(format!(
                    "the script gives it `{name}`, and a proxy passes on only the locale, `TZ` and what its \
                     annotation says it reads"
                ));
            }
            // A rule's place must be reachable (an unpinned command is kept within its reach by
            // placement, or split, whose copies' fan-in takes the redirections).
            match &facts.reach {
                Reach::ClientOnly(why) if facts.pin.is_some() => {
                    facts.pin = Some((Location::Client, Why::ClientOnly(why.clone())))
                }
                Reach::SeveralMounts if facts.pin.is_some() => facts.pin = Some((Location::Client, Why::SeveralMounts)),
                _ => {}
            }
            if let Some(from) = invocation.file_lists_in_words() {
                // Names read from input resolve where the command runs; only at the client do
                // they name what they name under bash (and only there may they reach any file).
                facts.pin = Some((Location::Client, Why::FileNamesFromInput(from)));
            }
            facts.bound = output_bound(&invocation);
            facts.invocation = Some(invocation);
        }
        Err(NoMatch::NoAnnotation { .. } | NoMatch::Empty) => facts.shell_reason = Some(Why::NoAnnotation),
        Err(why) => facts.shell_reason = Some(Why::NoEntryFits(why.to_string())),
    }
    facts
}

/// Follows the redirections in order, as bash applies them, through a descriptor table.
fn apply_redirects(ctx: &PlanContext<'_>, command: &shell::Command, facts: &mut Facts<'_>) {
    let mut out = [facts.stdout.clone(), facts.stderr.clone()];
    for redirect in &command.redirects {
        let file_word = match &redirect.target {
            RedirectTarget::File(word) => match expand_word_in(ctx, word) {
                Expanded::Words(w) if w.len() == 1 => Some(w[0].clone()),
                _ => {
                    facts.shell_reason.get_or_insert(Why::DependsOnShell(word.raw.to_string()));
                    continue;
                }
            },
            _ => None,
        };
        let output_for = |path: &str, append: bool| match path {
            "/dev/null" => Output::Discard,
            "/dev/stdout" => Output::Stdout,
            "/dev/stderr" => Output::Stderr,
            _ => Output::File { path: path.to_string(), append },
        };
        let fd = redirect.fd.map(|fd| fd as usize);
        facts.redirect_files.extend(file_word.clone());
        match (redirect.op, file_word, &redirect.target) {
            (RedirectOp::Read | RedirectOp::ReadWrite, Some(path), _) if fd.unwrap_or(0) == 0 => {
                facts.stdin = if path == "/dev/null" { Input::Text(0) } else { Input::File(path) };
            }
            (RedirectOp::Write | RedirectOp::Clobber | RedirectOp::Append, Some(path), _) => {
                let target = fd.unwrap_or(1);
                if (1..=2).contains(&target) {
                    out[target - 1] = output_for(&path, redirect.op == RedirectOp::Append);
                }
            }
            (RedirectOp::WriteBoth | RedirectOp::AppendBoth, Some(path), _) => {
                let target = output_for(&path, redirect.op == RedirectOp::AppendBoth);
                out = [target.clone(), target];
            }
            (RedirectOp::DuplicateOutput, _, RedirectTarget::Fd(source)) => {
                let target = fd.unwrap_or(1);
                if (1..=2).contains(&target) && (1..=2).contains(&(*source as usize)) {
                    out[target - 1] = out[*source as usize - 1].clone();
                }
            }
            (RedirectOp::DuplicateOutput | RedirectOp::DuplicateInput, _, RedirectTarget::Close) => {
                if let Some(target @ 1..=2) = fd.or(Some(1)) {
                    out[target - 1] = Output::Discard;
                }
            }
            (RedirectOp::HereString, _, RedirectTarget::Text(word)) => {
                facts.stdin = Input::Text(word.literal.as_deref().map_or(word.raw.len(), str::len) as u64 + 1);
            }
            (RedirectOp::HereDoc, _, RedirectTarget::HereDoc { body, .. }) => {
                facts.stdin = Input::Text(body.len() as u64)
            }
            // Descriptors above 2 and exotic forms do not change where the data goes.
            _ => {}
        }
    }
    [facts.stdout, facts.stderr] = out;
}

impl PlanContext<'_> {
    fn absolute(&self, path: &str) -> PathBuf {
        crate::fs::normalize_path(&self.cwd.join(path))
    }

    pub(crate) fn location_of(&self, path: &Path) -> Location {
        match self.config.mount_for(path) {
            Some(mount) => Location::Mount(mount.name.clone()),
            None => Location::Client,
        }
    }

    fn file_use(&self, path: &str, config: bool, split_value: Option<usize>) -> FileUse {
        let absolute = self.absolute(path);
        let location = self.location_of(&absolute);
        let size = match self.fs.metadata(&absolute) {
            Some(FileMeta { kind: FileKind::Directory, .. }) => self.fs.directory_size(&absolute).unwrap_or(0),
            Some(meta) => meta.size,
            None => 0,
        };
        FileUse { path: path.to_string(), location, size, config, split_value, streamable: false }
    }

    /// The working directory of a command that runs where it lives (`needs_current_dir`). On
    /// a mount it is not walked: the command goes there whatever its size, and through the
    /// mount each entry would cost the client a round trip (git's 20,000 files, twice). Its
    /// bytes are then unknown, and shown as 0.
    fn working_directory(&self) -> FileUse {
        let location = self.location_of(&self.absolute("."));
        match location {
            Location::Client => self.file_use(".", false, None),
            Location::Mount(_) => FileUse {
                path: ".".to_string(),
                location,
                size: 0,
                config: false,
                split_value: None,
                streamable: false,
            },
        }
    }
}

struct Graph<'c> {
    ctx: &'c PlanContext<'c>,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    pinned: Vec<bool>,
    /// Producers whose output goes down the pipe to the next command: (node, stream, bytes).
    pipe: Vec<(NodeId, Stream, u64)>,
    /// The pipeline's standard streams, made on first use.
    special: HashMap<&'static str, NodeId>,
    /// Read and write nodes by path, so a file used twice is one node.
    files: HashMap<(bool, String), NodeId>,
    allowed: Vec<Option<Vec<String>>>,
    pipe_merge: Option<(NodeId, Vec<String>)>,
}

impl Graph<'_> {
    fn node(&mut self, kind: NodeKind, location: Location, why: Why, pinned: bool) -> NodeId {
        let id = self.nodes.len();
        self.nodes.push(Node { id, kind, location, why });
        self.pinned.push(pinned);
        self.allowed.push(None);
        id
    }

    fn edge(&mut self, from: NodeId, to: NodeId, stream: Stream, bytes: u64) {
        self.edges.push(Edge { from, to, stream, bytes, crosses: false, between_proxies: false });
    }

    fn special(&mut self, name: &'static str, kind: NodeKind) -> NodeId {
        if let Some(&id) = self.special.get(name) {
            return id;
        }
        let id = self.node(kind, Location::Client, Why::DataLocation, true);
        self.special.insert(name, id);
        id
    }

    fn read_file(&mut self, file: &FileUse) -> NodeId {
        if let Some(&id) = self.files.get(&(false, file.path.clone())) {
            return id;
        }
        let kind = NodeKind::ReadFile { path: file.path.clone(), size: file.size };
        let id = self.node(kind, file.location.clone(), Why::DataLocation, true);
        self.files.insert((false, file.path.clone()), id);
        id
    }

    fn write_file(&mut self, path: &str, append: bool) -> NodeId {
        self.changed_file(path, append, false)
    }

    /// A name a command writes, or removes or replaces (`removes`).
    fn changed_file(&mut self, path: &str, append: bool, removes: bool) -> NodeId {
        if let Some(&id) = self.files.get(&(true, path.to_string())) {
            return id;
        }
        // Where it lies is all a written name tells the plan: its size or whether it exists
        // now does not matter, and asking would cost a round trip on a networked mount for a
        // name no listing has yet.
        let location = self.ctx.location_of(&self.ctx.absolute(path));
        let kind = NodeKind::WriteFile { path: path.to_string(), append, removes };
        let id = self.node(kind, location, Why::DataLocation, true);
        self.files.insert((true, path.to_string()), id);
        id
    }

    /// Wires a command's standard input; returns its bytes.
    fn connect_stdin(&mut self, to: NodeId, input: &Input) -> u64 {
        match input {
            Input::Pipe => {
                let mut total = 0;
                for (from, stream, bytes) in std::mem::take(&mut self.pipe) {
                    self.edge(from, to, stream, bytes);
                    total += bytes;
                }
                total
            }
            Input::Stdin => {
                let stdin = self.special("stdin", NodeKind::Stdin);
                self.edge(stdin, to, Stream::Stdout, 0);
                0
            }
            Input::File(path) => {
                let file = self.ctx.file_use(path, false, None);
                let from = self.read_file(&file);
                self.edge(from, to, Stream::File, file.size);
                file.size
            }
            Input::Text(bytes) => {
                let text = self.node(NodeKind::Text { bytes: *bytes }, Location::Client, Why::DataLocation, true);
                self.edge(text, to, Stream::Stdout, *bytes);
                *bytes
            }
        }
    }

    fn connect_output(&mut self, from: NodeId, stream: Stream, output: &Output, bytes: u64) {
        let to = match output {
            Output::Pipe => {
                self.pipe.push((from, stream, bytes));
                return;
            }
            Output::Discard => return,
            Output::Stdout => self.special("stdout", NodeKind::Stdout),
            Output::Stderr => self.special("stderr", NodeKind::Stderr),
            Output::File { path, append } => self.write_file(path, *append),
        };
        self.edge(from, to, stream, bytes);
    }

    fn add_command(&mut self, facts: &Facts<'_>) {
        let (id, bytes) = self.add_copy(facts, None, None);
        self.connect_output(id, Stream::Stdout, &facts.stdout, bytes);
        self.connect_output(id, Stream::Stderr, &facts.stderr, 0);
    }

    /// A node for `facts`, or for one copy of it: `copy` is (index, count, where it runs) and
    /// `split` says which of its inputs the copy reads (a first command's share of the
    /// splittable files) or how many bytes it gets from the copy before it. Returns the node and
    /// its predicted output bytes.
    fn add_copy(
        &mut self,
        facts: &Facts<'_>,
        copy: Option<(usize, usize, Location)>,
        split: Option<Share<'_>>,
    ) -> (NodeId, u64) {
        let (location, why, pinned) = match (&facts.shell_reason, &facts.pin, &copy, &facts.reach) {
            (Some(why), _, _, _) => (Location::Client, why.clone(), true),
            (None, Some((location, why)), _, _) => (location.clone(), why.clone(), true),
            (None, None, Some((_, _, location)), _) => (location.clone(), Why::Split, true),
            (None, None, None, Reach::SeveralMounts) => (Location::Client, Why::SeveralMounts, true),
            (None, None, None, Reach::ClientOnly(why)) => (Location::Client, Why::ClientOnly(why.clone()), true),
            (None, None, None, _) => (Location::Client, Why::Cheapest, false),
        };
        let argv = match (&split, &facts.invocation) {
            (Some(Share::Files(keep)), Some(invocation)) => {
                let values: Vec<usize> = keep.iter().filter_map(|&i| facts.inputs[i].split_value).collect();
                let narrowing = facts.narrowing.get_or_init(|| invocation.narrowing().ok());
                let narrowed = narrowing.as_ref().map(|n| n.argv_with_subset(invocation, &values));
                narrowed.and_then(Result::ok).unwrap_or_else(|| facts.argv.clone())
            }
            _ => facts.argv.clone(),
        };
        let text = match split {
            Some(Share::Files(_)) => shell_words::join(&argv),
            _ => facts.shown.join(" "),
        };
        let estimate = facts.output_estimate(self.ctx.ratios);
        let kind = NodeKind::Command {
            command: facts.index,
            argv,
            text,
            span: facts.span,
            copy: copy.as_ref().map(|(i, n, _)| (*i, *n)),
            annotation: facts.annotation.clone(),
            no_match_status: facts.invocation.as_ref().and_then(|i| i.entry.options.no_match_status),
            carries: facts.invocation.as_ref().map_or_else(Carried::default, |i| Carried {
                env: i.entry.options.reads_env.clone(),
                home: i.entry.options.reads_home.clone(),
            }),
            shape: facts.shape(),
            output: estimate,
        };
        let id = self.node(kind, location, why, pinned);
        if let (Reach::ClientOr(mounts), None) = (&facts.reach, &copy) {
            self.allowed[id] = Some(mounts.clone());
        }
        let mut bytes_in = match split {
            None => self.connect_stdin(id, &facts.stdin),
            Some(Share::Piped(bytes)) => bytes,
            Some(Share::Files(_)) => 0,
        };
        // The size of each input it reads: standard input only when it reads that.
        let reads_stdin = facts.dash_input || facts.inputs.is_empty();
        let mut input_sizes: Vec<u64> = if reads_stdin { vec![bytes_in] } else { Vec::new() };
        let (mut inputs, mut names) = (0, 0);
        let used = match split {
            Some(Share::Files(keep)) => facts.copy_inputs(keep),
            _ => (0..facts.inputs.len()).collect(),
        };
        for file in used.into_iter().map(|i| &facts.inputs[i]) {
            let from = self.read_file(file);
            self.edge(from, id, Stream::File, file.size);
            bytes_in += file.size;
            input_sizes.push(file.size);
            if !file.config {
                inputs += 1;
                names += file.path.len() as u64 + 1;
            }
        }
        // Several files: a line (or header) per file may name it, and a total line may follow.
        let (inputs, headers) = if inputs > 1 { (inputs + 1, names) } else { (1, 0) };
        let by_ratio = (bytes_in as f64 * estimate.ratio().unwrap_or(1.0)).round() as u64;
        let bytes_out = match facts.bound {
            None => by_ratio,
            Some(Bound::Smallest) => by_ratio.min(input_sizes.into_iter().min().unwrap_or(0)),
            Some(Bound::Prefix(per_input)) => bytes_in.min(per_input.saturating_mul(inputs) + headers),
            // Never above the input either: a count of a tiny file is no reason to leave it.
            Some(Bound::Fixed(per_input)) => bytes_in.min(per_input.saturating_mul(inputs) + names),
        };
        for file in &facts.outputs {
            let to = self.write_file(&file.path, false);
            self.edge(id, to, Stream::File, bytes_out);
        }
        for path in &facts.removed {
            let to = self.changed_file(path, false, true);
            self.edge(id, to, Stream::File, 0);
        }
        // A command that names output files writes its output there (sort -o, tar -cf,
        // mogrify -path), unless its annotation says it writes both (tee).
        let both = facts.invocation.as_ref().is_some_and(|i| i.entry.options.output_to_stdout_too);
        let to_stdout = if facts.outputs.is_empty() || both { bytes_out } else { 0 };
        (id, to_stdout)
    }

    /// The mount whose proxy may join a split's copies: a merge written to a file there, with
    /// nothing else redirected, of copies that all run at proxies. The runtime has the copies
    /// send their outputs there, into a `cat` that writes the file (the outputs joined in order,
    /// or merged by posh: `sum`, `uniq_count`) or into the merging command (a rerun, `sort -m`).
    fn remote_merge_mount<'l>(
        &self,
        last: &Facts<'_>,
        mut copies: impl Iterator<Item = &'l Location>,
    ) -> Option<String> {
        let Output::File { path, .. } = &last.stdout else { return None };
        if last.stderr != Output::Stderr {
            return None;
        }
        let Location::Mount(mount) = self.ctx.location_of(&self.ctx.absolute(path)) else { return None };
        copies.all(|location| matches!(location, Location::Mount(_))).then_some(mount)
    }

    fn add_split(&mut self, segment: &[Facts<'_>]) {
        let first = &segment[0];
        let last = segment.last().expect("a segment has a command");
        let factor = self.ctx.options.copies_per_mount.max(1);
        let parts = first.parts(factor);
        let count = parts.len();
        let mut outputs = Vec::new();
        for (k, (location, members)) in parts.iter().enumerate() {
            let (mut id, mut bytes) =
                self.add_copy(first, Some((k, count, location.clone())), Some(Share::Files(members)));
            if k == 0 && first.stdin == Input::Pipe {
                // The command reads its files, not the pipe; the pipe is still connected to it.
                self.connect_stdin(id, &Input::Pipe);
            }
            self.connect_output(id, Stream::Stderr, &first.stderr, 0);
            for facts in &segment[1..] {
                let (next, next_bytes) =
                    self.add_copy(facts, Some((k, count, location.clone())), Some(Share::Piped(bytes)));
                self.edge(id, next, Stream::Stdout, bytes);
                self.connect_output(next, Stream::Stderr, &facts.stderr, 0);
                (id, bytes) = (next, next_bytes);
            }
            outputs.push((id, bytes));
        }
        let kind = last.merge_kind();
        let argv = match kind {
            MergeKind::SortMerge | MergeKind::Rerun => {
                let reading_stdin = last.invocation.as_ref().and_then(|i| i.argv_without_splittable().ok());
                let mut argv = reading_stdin.unwrap_or_else(|| last.argv.clone());
                if kind == MergeKind::SortMerge {
                    argv.insert(1, "-m".to_string());
                }
                argv
            }
            MergeKind::Concat | MergeKind::Sum | MergeKind::UniqCount => Vec::new(),
        };
        // Output written to a file on one of the copies' mounts may be merged at that mount's
        // proxy (the other copies' outputs streamed to it), if that costs less.
        let merge_at = self.remote_merge_mount(last, parts.iter().map(|(location, _)| location));
        let merge = self.node(
            NodeKind::Merge { kind, command: last.index, argv },
            Location::Client,
            Why::FanIn,
            merge_at.is_none(),
        );
        if let Some(mount) = merge_at {
            self.allowed[merge] = Some(vec![mount]);
        }
        let at_proxies = parts.iter().all(|(location, _)| matches!(location, Location::Mount(_)));
        if at_proxies && last.stdout == Output::Pipe && !last.redirected {
            let mut mounts: Vec<String> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for (location, _) in &parts {
                if let Location::Mount(name) = location
                    && seen.insert(name)
                {
                    mounts.push(name.clone());
                }
            }
            self.pipe_merge = Some((merge, mounts));
        }
        let total: u64 = outputs.iter().map(|(_, b)| b).sum();
        for (id, bytes) in outputs {
            self.edge(id, merge, Stream::Stdout, bytes);
        }
        let merged = match kind {
            // One line of totals per copy, added up into one.
            MergeKind::Sum => total / count as u64,
            MergeKind::Rerun => {
                (total as f64 * last.output_estimate(self.ctx.ratios).ratio().unwrap_or(1.0)).round() as u64
            }
            MergeKind::Concat | MergeKind::SortMerge | MergeKind::UniqCount => total,
        };
        self.connect_output(merge, Stream::Stdout, &last.stdout, merged);
    }
}

/// What one copy of a split command reads.
#[derive(Clone, Copy)]
enum Share<'a> {
    /// The first command's copy: these of its inputs (indices into `Facts::inputs`).
    Files(&'a [usize]),
    /// A later command's copy: this many bytes down the pipe from the copy before it.
    Piped(u64),
}

/// `word` as the planner can know it in `ctx`: a glob is one only the shell can tell where the
/// script may change how bash matches globs.
fn expand_word_in(ctx: &PlanContext<'_>, word: &crate::shell::Word) -> Expanded {
    if ctx.options.globs_differ && word.glob && word.literal.is_none() {
        return Expanded::Unknown(word.raw.to_string());
    }
    expand_word(word, ctx.fs, &ctx.cwd)
}
