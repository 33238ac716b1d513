//! Runs a placed pipeline: local commands as processes, each run of consecutive commands on one
//! proxy as one job over its own stream, split copies concatenated in order, every status
//! collected for the pipeline's status (and `--stats`).

use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::Arc;

use posh_core::annotation::MergeKind;
use posh_exec::remote::protocol::{
    GLOBS_DIFFER, Joined, PeerInput, PeerOutput, PeerSource, Request, SendFiles, SentFile, VERSION, VERSION_EXPECTING,
};
use posh_exec::remote::{Connection, StartError, Traffic, TrafficByMount};
use posh_wire::measure::IoCount;

use futures_util::StreamExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::task::JoinSet;

use super::PipelineCall;
use super::coherence::Written;
use super::fan_in;
use super::local::{self, Caller};
use super::output::{async_writer, one_destination};
use super::placement::{Step, StreamedInput, Unit};
use super::progress;
use super::session::Session;

/// How a step ended, and where it ran in the end (a proxy may have left it to the client).
#[derive(Clone, Debug)]
pub struct StepEnd {
    pub command: usize,
    pub copy: usize,
    pub status: i32,
    /// The mount whose proxy ran it; `None`: the client.
    pub mount: Option<usize>,
    /// What it read and wrote, when measured.
    pub io: Option<IoCount>,
    /// Why it ran at the client although the plan put it at a proxy, when that was found out
    /// only at run time (a busy or unreachable proxy), for `--stats`.
    pub departure: Option<String>,
}

impl StepEnd {
    fn local(step: &Step, status: i32) -> StepEnd {
        StepEnd { command: step.command, copy: step.copy, status, mount: None, io: None, departure: None }
    }
}

pub(super) type Statuses = Vec<StepEnd>;

/// Runs `units` (from [`super::placement`]); returns the pipeline's status as bash computes it.
/// Without a session every step must be local. `asked`: what the plan's questions to each
/// mount's proxy cost (for `--stats`).
pub async fn execute(
    session: Option<&Arc<Session>>,
    call: &PipelineCall,
    caller: &Caller,
    units: &[Unit],
    asked: &TrafficByMount,
) -> u8 {
    execute_with_statuses(session, call, caller, units, asked).await.0
}

/// [`execute`], with each command's status too, in the pipeline's order (bash's `PIPESTATUS`).
pub async fn execute_with_statuses(
    session: Option<&Arc<Session>>,
    call: &PipelineCall,
    caller: &Caller,
    units: &[Unit],
    asked: &TrafficByMount,
) -> (u8, Vec<u8>) {
    let mut started = Started::default();
    // A refused attempt's bytes go on counting with this one's (`Caller::refused`).
    let mut traffic = std::mem::take(&mut *caller.refused.lock().unwrap_or_else(|e| e.into_inner()));
    let mut input = caller.dup(0);
    // `> log 2>&1`: a remote job writing the caller's stdout sends its stderr along with it.
    // Asked only when something runs remotely: the probe costs system calls and brief locks.
    let remote = units.iter().flat_map(|u| u.lanes.iter().flatten()).any(|step| step.remote.is_some());
    let stderr_with_stdout = match &caller.fds {
        [_, Some(out), Some(err)] if remote => one_destination(out.as_fd(), err.as_fd()),
        _ => false,
    };
    let mut units_left = units.iter().enumerate();
    while let Some((u, unit)) = units_left.next() {
        let last = u + 1 == units.len();
        let (output, next_input) = if last { (caller.dup(1), None) } else { pipe() };
        if unit.is_split() {
            // Copies read their own files, never the pipe.
            drop(input.take());
            let mut copies_call = call.clone();
            for command in &mut copies_call.commands[unit.commands.clone()] {
                command.redirects.clear();
            }
            let fan_in = unit.fan_in.as_ref().expect("a split unit has a fan-in");
            let mut output = output;
            if let (Some(session), Some(merge)) = (session, &fan_in.at) {
                // The commands after the merge, when the plan puts them all at its proxy: one
                // job with it, writing the pipeline's output.
                let after = &units[u + 1..];
                let along = same_job_after(merge, after);
                let absorbs = along.is_some();
                let merge_steps: Vec<Step> =
                    std::iter::once(merge.clone()).chain(along.into_iter().flatten()).collect();
                let mut joined =
                    RemoteFanIn::new(session, call, &copies_call, caller, &mut traffic, unit, &merge_steps);
                let result = if absorbs {
                    joined.merge.stderr_with_stdout = stderr_with_stdout;
                    // What comes back is a copy of the caller's stdout: the split's own goes on.
                    joined.start(caller.dup(1)).await.map_err(|not_joined| NotJoined { output, ..not_joined })
                } else {
                    joined.start(output).await
                };
                match result {
                    // The copies' outputs meet at the merge's proxy, which applies the split
                    // command's redirections there (or feeds the commands after it).
                    Ok(run) => {
                        started.tasks.spawn(run);
                        input = next_input;
                        if absorbs {
                            units_left.by_ref().for_each(drop);
                        }
                        continue;
                    }
                    Err(not_joined) => {
                        // Said as a job a proxy did not take is: on the progress line's
                        // terminal (a lost connection warned about), and in `--stats`.
                        if let Some(not_taken) = &not_joined.why {
                            let said = format!(
                                "{}; the copies are joined at the client instead (mount {})",
                                not_taken.what, not_taken.mount
                            );
                            if not_taken.lost {
                                caller.warn(&said);
                            } else {
                                progress::notice(format_args!("posh-exec: {said}"));
                            }
                            let why = format!("joined at the client: {} (mount {})", not_taken.what, not_taken.mount);
                            started.joined_at_client.push((unit.commands.end - 1, why));
                        }
                        output = not_joined.output;
                    }
                }
            }
            // The fan-in applies the split command's redirections (the planner allows them on
            // the region's last command only) to the combined output, once, in bash's order.
            let split = unit.commands.end - 1;
            let (output, stderr) =
                match local::redirect(caller, call, &call.commands[split], [None, output, caller.dup(2)]) {
                    Ok([_, output, stderr]) => (output, stderr),
                    Err(status) => {
                        // bash would not start the command: none of its copies runs. Each is
                        // recorded where it was placed, as a command a proxy could not start is.
                        let placed = |step: &Step| StepEnd {
                            mount: step.remote.as_ref().map(|remote| remote.mount),
                            ..StepEnd::local(step, if step.command == split { status } else { 0 })
                        };
                        let ends: Statuses = unit.lanes.iter().flatten().map(placed).collect();
                        started.tasks.spawn(async move { ends });
                        input = next_input;
                        continue;
                    }
                };
            // Each copy's stderr goes into its own output, which is concatenated in order, when
            // the two are one destination (`> log 2>&1`).
            let stderr_with_stdout = match (&output, &stderr) {
                (Some(out), Some(err)) => one_destination(out.as_fd(), err.as_fd()),
                _ => false,
            };
            let mut readers = Vec::new();
            for lane in &unit.lanes {
                let (writer, reader) = pipe();
                readers.extend(reader);
                let ctx = LaneContext {
                    session,
                    call: &copies_call,
                    caller,
                    traffic: &mut traffic,
                    stderr: stderr.as_ref(),
                    stderr_with_stdout,
                };
                run_lane(ctx, lane, None, writer, &mut started);
            }
            let to = fan_in::Destination { caller, call, command: &call.commands[split], output, stderr };
            let merged = fan_in::start(fan_in, readers, to);
            started.merges.spawn(async move { (split, merged.await) });
        } else {
            let ctx = LaneContext {
                session,
                call,
                caller,
                traffic: &mut traffic,
                stderr: None,
                stderr_with_stdout: last && stderr_with_stdout,
            };
            run_lane(ctx, &unit.lanes[0], input.take(), output, &mut started);
        }
        input = next_input;
    }
    drop(input);

    let joined_at_client = std::mem::take(&mut started.joined_at_client);
    let (mut ends, merges) = started.wait().await;
    if caller.expected.as_ref().is_some_and(|expected| expected.unmet()) {
        // Nothing ran: the call is planned again, and that run is the one recorded, with what
        // this one's refused request cost.
        *caller.refused.lock().unwrap_or_else(|e| e.into_inner()) = traffic;
        return (0, Vec::new());
    }
    ends.sort_by_key(|end| (end.command, end.copy));
    let mut statuses: Vec<Vec<i32>> = vec![Vec::new(); call.commands.len()];
    for end in &ends {
        statuses[end.command].push(end.status);
    }
    let no_match = |command: usize| {
        let unit = units.iter().find(|u| u.commands.contains(&command))?;
        unit.fan_in.as_ref()?.no_match_status[command - unit.commands.start]
    };
    let mut statuses: Vec<i32> =
        statuses.iter().enumerate().map(|(command, copies)| combine_copies(no_match(command), copies)).collect();
    // A merge that failed fails the command, unless a copy already did.
    for (command, status) in merges {
        if statuses[command] == 0 {
            statuses[command] = status;
        }
    }
    let status = if call.pipefail {
        statuses.iter().rev().copied().find(|&s| s != 0).unwrap_or(0)
    } else {
        *statuses.last().expect("a pipeline has a command")
    };
    if let Some(session) = session {
        session.record_ratios(&measured_runs(&ends, units));
    }
    if let Some(path) = &call.stats {
        let mounts = session.map_or(&[][..], |s| &s.config.mounts[..]);
        let record = super::stats::Record {
            call,
            ends: &ends,
            units,
            statuses: &statuses,
            status: (status & 0xff) as u8,
            mounts,
            traffic: &traffic,
            asked,
            in_loop_request: false,
            joined_at_client: &joined_at_client,
            run: session.map(|s| s.figures()),
        };
        record.append(path, caller);
    }
    ((status & 0xff) as u8, statuses.iter().map(|&s| (s & 0xff) as u8).collect())
}

/// The steps of `after` (the units after a split whose merge runs as `merge`) when every one of
/// them runs in the merge's job: unsplit, at its proxy, in its working directory and view.
fn same_job_after(merge: &Step, after: &[Unit]) -> Option<Vec<Step>> {
    let at = merge.remote.as_ref()?;
    if after.is_empty() || after.iter().any(Unit::is_split) {
        return None;
    }
    let steps: Vec<Step> = after.iter().flat_map(|u| u.lanes[0].iter().cloned()).collect();
    let together =
        |s: &Step| s.remote.as_ref().is_some_and(|r| (r.mount, &r.cwd, &r.view) == (at.mount, &at.cwd, &at.view));
    steps.iter().all(together).then_some(steps)
}

/// What the pipeline's commands read and wrote, as (shape, read, written, processes), one run
/// per command (its copies added up, and counted: each read its own start-up). A command counts only when every copy of it was measured and exited
/// on its own: one killed (by SIGPIPE when `head` had enough) read only part of its input.
pub(super) fn measured_runs(ends: &[StepEnd], units: &[Unit]) -> Vec<(String, u64, u64, u32)> {
    let steps: Vec<&Step> = units.iter().flat_map(|u| u.lanes.iter().flatten()).collect();
    let mut runs = Vec::new();
    let commands: std::collections::BTreeSet<usize> = ends.iter().map(|e| e.command).collect();
    for command in commands {
        let Some(shape) = steps.iter().find(|s| s.command == command).and_then(|s| s.shape.clone()) else {
            continue;
        };
        let copies = ends.iter().filter(|e| e.command == command);
        let processes = u32::try_from(copies.clone().count()).unwrap_or(u32::MAX);
        if let Some(total) = IoCount::total(copies.map(|e| e.io.filter(|_| e.status < 128))) {
            runs.push((shape, total.read, total.written, processes));
        }
    }
    runs
}

/// The status of a command run as several copies. Any failure wins (`cat a missing` fails as
/// one command would), except the status by which the command says it selected nothing
/// (`no_match_status`, grep's 1): a copy that selected something makes the whole succeed.
fn combine_copies(no_match: Option<u8>, copies: &[i32]) -> i32 {
    let no_match = no_match.map(i32::from);
    match copies {
        [] => 1,
        [one] => *one,
        _ if copies.iter().all(|&s| s == 0 || Some(s) == no_match) => *copies.iter().min().unwrap_or(&1),
        _ => copies.iter().copied().find(|&s| s != 0 && Some(s) != no_match).unwrap_or(0),
    }
}

/// A pipe as (write end, read end); both `None` if the system has no descriptor left (the
/// commands then meet a closed descriptor, and the failure shows in their statuses).
pub(super) fn pipe() -> (Option<OwnedFd>, Option<OwnedFd>) {
    match std::io::pipe() {
        Ok((reader, writer)) => (Some(OwnedFd::from(writer)), Some(OwnedFd::from(reader))),
        Err(_) => (None, None),
    }
}

/// What a pipeline has started: tasks (remote jobs, fan-ins, statuses known at once) and local
/// processes, each with the index of its command.
#[derive(Default)]
struct Started {
    tasks: JoinSet<Statuses>,
    children: Vec<(StepEnd, std::process::Child)>,
    /// Fan-ins, each with its split command's index.
    merges: JoinSet<(usize, fan_in::MergeStatus)>,
    /// `children`, killed if the pipeline is given up before they were waited for.
    kill_on_drop: local::KillOnDrop,
    /// Of `children`, those writing to the progress line's terminal themselves.
    direct: Vec<progress::Working>,
    /// Splits whose copies the plan joined at a proxy and the run at the client: the split
    /// command's index, and why (for `--stats`).
    joined_at_client: Vec<(usize, String)>,
}

impl Started {
    /// Waits for everything; returns every step's status, and every fan-in's.
    async fn wait(self) -> (Statuses, Vec<(usize, fan_in::MergeStatus)>) {
        let Started { tasks, children, merges, kill_on_drop, direct, joined_at_client: _ } = self;
        let waits = tokio::task::spawn_blocking(move || {
            children
                .into_iter()
                .map(|(end, mut child)| match posh_wire::measure::wait_blocking(&mut child) {
                    Ok((status, io)) => StepEnd { status: local::shell_status(status), io, ..end },
                    Err(_) => StepEnd { status: 1, ..end },
                })
                .collect::<Statuses>()
        });
        let mut statuses: Statuses = joined(tasks).await.into_iter().flatten().collect();
        statuses.extend(waits.await.unwrap_or_default());
        kill_on_drop.disarm();
        drop(direct);
        (statuses, joined(merges).await)
    }
}

/// Every task's result, in the order they end. A task the runtime cancelled (posh-exec ending
/// under a pipeline) gives none, where `JoinSet::join_all` would panic; a panic goes on.
async fn joined<T: 'static>(mut set: JoinSet<T>) -> Vec<T> {
    let mut results = Vec::new();
    while let Some(result) = set.join_next().await {
        match result {
            Ok(value) => results.push(value),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => {}
        }
    }
    results
}

struct LaneContext<'a> {
    session: Option<&'a Arc<Session>>,
    call: &'a PipelineCall,
    caller: &'a Caller,
    traffic: &'a mut TrafficByMount,
    /// Where the commands' stderr goes; `None`: the caller's.
    stderr: Option<&'a OwnedFd>,
    /// Every command's stderr goes into the lane's output: that output leads to the caller's
    /// stdout, and the caller's stderr is the same destination.
    stderr_with_stdout: bool,
}

/// Starts the steps of one lane, reading `input` and writing `output`: local steps as processes
/// (into `children`), runs of remote steps on one mount as one job (a task in `tasks`).
fn run_lane(
    ctx: LaneContext<'_>,
    steps: &[Step],
    mut input: Option<OwnedFd>,
    output: Option<OwnedFd>,
    started: &mut Started,
) {
    // Dropped when the lane is started: the concatenation waits for every copy of its pipe.
    let lane_stderr = if ctx.stderr_with_stdout { output.as_ref().and_then(|o| o.try_clone().ok()) } else { None };
    let mut output = Some(output);
    // Remote groups one after another, each at another mount than the one before.
    let mut chain: Vec<RemoteGroup> = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let group_end = match &steps[i].remote {
            None => i + 1,
            Some(first) => {
                i + steps[i..]
                    .iter()
                    .take_while(|s| {
                        s.remote
                            .as_ref()
                            .is_some_and(|r| r.mount == first.mount && r.cwd == first.cwd && r.view == first.view)
                    })
                    .count()
            }
        };
        let writes_lane_output = group_end == steps.len();
        let (step_output, next_input) = if writes_lane_output { (output.take().flatten(), None) } else { pipe() };
        let stderr = match (&lane_stderr, ctx.stderr) {
            (Some(fd), _) | (None, Some(fd)) => fd.try_clone().ok(),
            (None, None) => ctx.caller.dup(2),
        };
        let group = &steps[i..group_end];
        match (&group[0].remote, ctx.session) {
            (Some(_), Some(session)) => {
                let job = RemoteGroup {
                    // A remote first command does not read the script's input (the planner keeps
                    // those at the client), and must not take any of it from later commands; a
                    // here-document is the pipeline's own.
                    stdin: input.take().filter(|_| group[0].command != 0 || ctx.call.stdin_is_text),
                    stdout: step_output,
                    stderr_with_stdout: ctx.stderr_with_stdout && writes_lane_output,
                    stderr,
                    ..RemoteGroup::new(session, ctx.call, group, ctx.caller, ctx.traffic)
                };
                // A group at another mount's proxy than the one before it reads that one's output
                // straight from its proxy.
                match chain.last() {
                    Some(previous) if previous.mount() != job.mount() => chain.push(job),
                    _ => {
                        spawn_chain(std::mem::take(&mut chain), started);
                        chain.push(job);
                    }
                }
            }
            _ => {
                spawn_chain(std::mem::take(&mut chain), started);
                start_local(ctx.caller, ctx.call, group, [input.take(), step_output, stderr], started);
            }
        }
        input = next_input;
        i = group_end;
    }
    spawn_chain(chain, started);
}

/// Starts consecutive remote groups: one alone as it is, several as a [`RemoteChain`].
fn spawn_chain(mut chain: Vec<RemoteGroup>, started: &mut Started) {
    match chain.len() {
        0 => {}
        1 => {
            let group = chain.pop().expect("one group");
            started.tasks.spawn(group.run());
        }
        _ => {
            started.tasks.spawn(RemoteChain { groups: chain }.run());
        }
    }
}

/// Starts `steps` at the client as a chain of processes reading `fds[0]`, writing `fds[1]`, each
/// with its stderr on a copy of `fds[2]`.
fn start_local(caller: &Caller, call: &PipelineCall, steps: &[Step], fds: [Option<OwnedFd>; 3], started: &mut Started) {
    let [mut input, output, stderr] = fds;
    let mut output = Some(output);
    for (k, step) in steps.iter().enumerate() {
        let (stdout, next_input) = if k + 1 == steps.len() { (output.take().flatten(), None) } else { pipe() };
        let command = &call.commands[step.command];
        let step_stderr = stderr.as_ref().and_then(|fd| fd.try_clone().ok());
        if !command.redirects.iter().any(|(fd, _, _)| *fd == 1) {
            started.direct.extend(progress::writes_directly(stdout.as_ref()));
        }
        match local::spawn(caller, call, command, &step.argv, [input.take(), stdout, step_stderr]) {
            Ok(child) => {
                started.kill_on_drop.add(&child);
                started.children.push((StepEnd::local(step, 0), child));
            }
            Err(status) => {
                let end = StepEnd::local(step, status);
                started.tasks.spawn(async move { vec![end] });
            }
        }
        // Our copies of the pipe ends go here, so EOF and SIGPIPE reach the children.
        input = next_input;
    }
}

/// Consecutive steps on one proxy, run as one job.
struct RemoteGroup {
    session: Arc<Session>,
    call: PipelineCall,
    steps: Vec<Step>,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    /// `stdout` and the caller's stderr are one destination: the job sends both as one stream.
    stderr_with_stdout: bool,
    /// Where the commands' stderr goes otherwise (the caller's, or the lane's output).
    stderr: Option<OwnedFd>,
    /// Its stderr is the jobs' stderr; its cwd and environment serve a fallback at the client.
    caller: Caller,
    traffic: Arc<Traffic>,
    /// The traffic counters of the mounts that stream files to it.
    source_traffic: TrafficByMount,
}

/// Files another mount's proxy sends straight to this group's proxy (one `SendFiles` request
/// for all the group reads from that mount).
struct Source {
    inputs: Vec<StreamedInput>,
    mount: usize,
    job: posh_exec::remote::Job,
    addr: String,
}

/// A group's pipes that go straight to or from another proxy's job instead of the client.
#[derive(Default)]
struct Links {
    /// The last command's stdout is the next group's stdin.
    output: Option<PeerOutput>,
    /// The first command's stdin is the previous groups' outputs, joined in order.
    stdin: Vec<PeerSource>,
    /// How `stdin` is joined: in order, or merged as a split command's annotation says.
    joined: Joined,
}

/// A group whose job the proxies took, with the jobs that stream files to it.
struct Running {
    job: posh_exec::remote::Job,
    sources: Vec<Source>,
    written: Written,
    /// For the progress line, from the job's request on.
    working: Option<progress::Working>,
}

impl Running {
    /// Cancels the group's jobs, none of which took any input yet, and waits until their
    /// proxies have ended them.
    async fn cancel(self) {
        tokio::join!(self.job.cancel(), cancel_sources(self.sources));
    }
}

/// Why a group's job was not taken: said to the user when the group then runs elsewhere.
struct NotTaken {
    /// What went wrong (`proxy 10.0.0.2:4433 is busy`).
    what: String,
    /// The mount whose proxy it was.
    mount: String,
    /// The proxy was busy or lost: trying it again now would meet the same.
    proxy_unavailable: bool,
    /// The connection was lost: warned about, as a proxy out of reach is (a busy or refusing
    /// proxy is said in `--stats` only, see `progress::notice`).
    lost: bool,
    /// Refused for [`GLOBS_DIFFER`]: the names the job was planned with are not bash's now.
    globs_differ: bool,
}

impl NotTaken {
    fn running_at_the_client(&self) -> String {
        format!("{}; running it at the client instead (mount {})", self.what, self.mount)
    }
}

/// Cancels groups whose jobs took no input yet, and waits until their proxies have ended them.
async fn cancel_all(running: Vec<Running>) {
    futures_util::future::join_all(running.into_iter().map(Running::cancel)).await;
}

/// Cancels jobs that took no input yet, and waits until their proxies have ended them.
async fn cancel_sources(sources: Vec<Source>) {
    futures_util::future::join_all(sources.into_iter().map(|source| source.job.cancel())).await;
}

impl RemoteGroup {
    /// The group of `steps` (all at one proxy), its descriptors still to be given; its
    /// traffic is counted in `traffic`, by mount.
    fn new(
        session: &Arc<Session>,
        call: &PipelineCall,
        steps: &[Step],
        caller: &Caller,
        traffic: &mut TrafficByMount,
    ) -> RemoteGroup {
        let mount = steps[0].remote.as_ref().expect("a remote group").mount;
        let sources = steps.iter().filter_map(|s| s.remote.as_ref()).flat_map(|r| &r.streamed);
        let mut traffic_of = |mount: usize| traffic.entry(mount).or_insert_with(|| progress::traffic(mount)).clone();
        let source_traffic = sources.map(|input| (input.mount, traffic_of(input.mount))).collect();
        RemoteGroup {
            session: session.clone(),
            call: call.clone(),
            steps: steps.to_vec(),
            stdin: None,
            stdout: None,
            stderr_with_stdout: false,
            stderr: None,
            caller: caller.duplicate(),
            traffic: traffic_of(mount),
            source_traffic,
        }
    }

    fn mount(&self) -> usize {
        self.steps[0].remote.as_ref().expect("a remote group").mount
    }

    async fn run(self) -> Statuses {
        // Its words were guessed: it runs at its proxy, which confirms them, or not at all.
        let expected = self.caller.expected.clone().filter(|expected| expected.mount == self.mount());
        let Some((connection, source_connections)) = self.connections().await else {
            if let Some(expected) = expected {
                expected.set_unmet();
                return Vec::new();
            }
            let mount = &self.session.config.mounts[self.mount()].name;
            let why = format!("run at the client: no connection to a proxy it needs (mount {mount})");
            return self.run_here(why).await;
        };
        match self.start(&connection, &source_connections, Links::default()).await {
            Ok(running) => self.finish(running).await,
            Err(not_taken) if expected.is_some() => {
                if !not_taken.proxy_unavailable && !not_taken.globs_differ {
                    // A proxy that does not take a job's condition (an older one) is not asked
                    // to check a guess again.
                    self.session.stop_predicting();
                }
                expected.expect("just matched").set_unmet();
                Vec::new()
            }
            Err(not_taken) => {
                if not_taken.lost {
                    self.caller.warn(&not_taken.running_at_the_client());
                } else {
                    progress::notice(format_args!("posh-exec: {}", not_taken.running_at_the_client()));
                }
                let why = format!("run at the client: {} (mount {})", not_taken.what, not_taken.mount);
                self.run_here(why).await
            }
        }
    }

    /// The files streamed to the group, by the mount that sends them, in the order they come.
    fn streamed_by_mount(&self) -> Vec<(usize, Vec<StreamedInput>)> {
        let mut by_mount: Vec<(usize, Vec<StreamedInput>)> = Vec::new();
        for input in self.steps.iter().filter_map(|s| s.remote.as_ref()).flat_map(|r| &r.streamed) {
            match by_mount.iter_mut().find(|(mount, _)| *mount == input.mount) {
                Some((_, inputs)) => inputs.push(input.clone()),
                None => by_mount.push((input.mount, vec![input.clone()])),
            }
        }
        by_mount
    }

    /// The connections the group needs: to its proxy, and to the proxy of each mount that sends
    /// it files (as [`Self::streamed_by_mount`] orders them); `None` if one cannot be had.
    async fn connections(&self) -> Option<(Arc<Connection>, Vec<Arc<Connection>>)> {
        // Set up together (the session bounds how many at once).
        let sources = self.streamed_by_mount().into_iter().map(|(mount, _)| self.session.connection(mount));
        let (connection, sources) =
            tokio::join!(self.session.connection(self.mount()), futures_util::future::join_all(sources));
        Some((connection?, sources.into_iter().collect::<Option<Vec<_>>>()?))
    }

    /// Asks the proxies for the group's job and for the jobs streaming its files (each one's
    /// output waits for this proxy, which the request introduces). Nothing ran yet when this
    /// fails: the caller may run the group elsewhere.
    async fn start(
        &self,
        connection: &Connection,
        source_connections: &[Arc<Connection>],
        links: Links,
    ) -> Result<Running, NotTaken> {
        let remote = self.steps[0].remote.as_ref().expect("a remote group");
        let mount = &self.session.config.mounts[remote.mount];
        let working = progress::remote_work();
        let mut request = Request {
            peer_output: links.output,
            peer_stdin: links.stdin,
            peer_stdin_joined: links.joined,
            ..job_request(&self.call, &self.steps, self.stderr_with_stdout)
        };
        if let Some(expected) = self.caller.expected.as_ref().filter(|expected| expected.mount == remote.mount) {
            request.version = VERSION_EXPECTING;
            request.expect_globs = expected.globs.clone();
        }
        let mut sources = Vec::with_capacity(source_connections.len());
        for ((mount, inputs), source) in self.streamed_by_mount().into_iter().zip(source_connections) {
            let tokens: Vec<String> = inputs.iter().map(|_| random_token()).collect();
            let files = inputs.iter().zip(&tokens).map(|(input, token)| SentFile {
                path: input.path.clone(),
                to: PeerOutput { token: token.clone(), peer: connection.fingerprint().to_string(), pipe: false },
            });
            let send = SendFiles { version: VERSION, send: files.collect() };
            let traffic = self.source_traffic.get(&mount).cloned().unwrap_or_default();
            let job = match source.send_files(&send, &traffic).await {
                Ok(job) => job,
                Err(e) => {
                    cancel_sources(sources).await;
                    let mount = self.session.config.mounts[mount].name.clone();
                    let lost = matches!(e, StartError::Lost(_));
                    return Err(NotTaken {
                        what: e.to_string(),
                        mount,
                        proxy_unavailable: true,
                        lost,
                        globs_differ: false,
                    });
                }
            };
            let (addr, fingerprint) = (source.addr().to_string(), source.fingerprint().to_string());
            for (input, token) in inputs.iter().zip(tokens) {
                let source = PeerSource { addr: addr.clone(), fingerprint: fingerprint.clone(), token };
                request.peer_inputs.push(PeerInput { path: input.word.clone(), source });
            }
            sources.push(Source { inputs, mount, job, addr });
        }
        let cwd = self.caller.cwd.as_deref();
        let seen = self.caller.seen.clone();
        let written = Written::before_job(self.session.library(), &self.call, &self.steps, cwd, seen).await;
        let started = connection.start(&request, &self.traffic).await;
        let globs_differ = matches!(&started, Err(StartError::Refused { reason, .. }) if reason == GLOBS_DIFFER);
        let (what, proxy_unavailable, lost) = match started {
            Ok(job) => return Ok(Running { job, sources, written, working }),
            Err(e) if e.is_busy() => (format!("proxy {} is busy", connection.addr()), true, false),
            Err(e @ StartError::Refused { .. }) => (e.to_string(), false, false),
            Err(StartError::Lost(e)) => (format!("{e:#}"), true, true),
        };
        // Their slots are free again when this group is asked again (or runs elsewhere).
        cancel_sources(sources).await;
        Err(NotTaken { what, mount: mount.name.clone(), proxy_unavailable, lost, globs_differ })
    }

    /// Streams the group's input and output until its job and the jobs streaming to it end.
    async fn finish(self, running: Running) -> Statuses {
        let Running { job, sources, written, working: _working } = running;
        // Ctrl-Z of the caller's job stops this one at its proxy, `fg` and `bg` continue it.
        let job = match &self.caller.job {
            Some(caller_job) => job.suspended_by(caller_job.suspended.clone()),
            None => job,
        };
        let remote = self.steps[0].remote.as_ref().expect("a remote group");
        let line = self.call.commands[self.steps[0].command].line;
        let streams = finish_sources(&self.caller, &self.call.name, line, &self.source_traffic, sources);
        let stdin = self.stdin.and_then(|fd| pipe_reader(fd).ok());
        let mut stdout = async_writer(self.stdout);
        let mut stderr = async_writer(self.stderr);
        let (ended, broken) = tokio::join!(job.finish(stdin, &mut stdout, &mut stderr, &self.traffic), streams);
        // Everything written before the status goes back to bash.
        let _ = tokio::join!(stdout.shutdown(), stderr.shutdown());
        // And the client's filesystem caches show what the job wrote before bash reads it.
        written.after_job().await;
        match ended {
            Ok(ended) => {
                let written = ended.written.iter().map(|file| (remote.mount, file.clone()));
                self.caller.written.lock().unwrap_or_else(|e| e.into_inner()).extend(written);
                remote_ends(&self.caller, &self.call, &self.steps, &ended, &broken)
            }
            Err(e) => {
                self.caller.bash_error(&self.call.name, line, "posh", &format!("{e:#}"));
                self.steps
                    .iter()
                    .map(|s| StepEnd { status: 255, mount: Some(remote.mount), ..StepEnd::local(s, 0) })
                    .collect()
            }
        }
    }

    /// The steps at the client, on the same descriptors: the proxy took nothing from them, for
    /// the reason `why` (recorded for `--stats`).
    async fn run_here(self, why: String) -> Statuses {
        let local: Vec<Step> = self.steps.iter().map(|s| Step { remote: None, ..s.clone() }).collect();
        let mut started = Started::default();
        start_local(&self.caller, &self.call, &local, [self.stdin, self.stdout, self.stderr], &mut started);
        let ends = started.wait().await.0;
        ends.into_iter().map(|end| StepEnd { departure: Some(why.clone()), ..end }).collect()
    }
}

/// The job a run of `steps` at one proxy asks for, without streams between proxies.
pub(super) fn job_request(call: &PipelineCall, steps: &[Step], stderr_with_stdout: bool) -> Request {
    let remote = steps[0].remote.as_ref().expect("remote steps");
    Request {
        version: VERSION,
        cwd: remote.cwd.clone(),
        view: remote.view.clone(),
        commands: steps.iter().filter_map(|s| s.remote.as_ref().map(|r| r.job.clone())).collect(),
        noclobber: call.noclobber,
        stderr_with_stdout,
        progress: progress::reporting(),
        ..Request::default()
    }
}

/// How the remote `steps` (one job) ended, as the proxy said: bash's message for each command
/// that did not start (written to the caller's stderr), and each status; a command whose
/// streamed file did not arrive whole (`broken`, by word) failed, whatever it said.
pub(super) fn remote_ends(
    caller: &Caller,
    call: &PipelineCall,
    steps: &[Step],
    ended: &posh_exec::remote::protocol::Ended,
    broken: &[String],
) -> Statuses {
    steps
        .iter()
        .zip(&ended.commands)
        .map(|(step, exit)| {
            let remote = step.remote.as_ref().expect("remote steps");
            if let Some(error) = &exit.error {
                let command = &call.commands[step.command];
                let what = match error.redirect {
                    Some(r) => {
                        let original = remote.redirect_of.get(r).copied();
                        original.and_then(|o| command.redirects.get(o)).map_or_else(
                            || "redirection".to_string(),
                            |(_, _, target)| target.to_string_lossy().into_owned(),
                        )
                    }
                    None => command.argv[0].to_string_lossy().into_owned(),
                };
                caller.bash_error(&call.name, command.line, &what, &error.message);
            }
            let reads_broken = remote.streamed.iter().any(|input| broken.contains(&input.word));
            let status = match exit.status() {
                0 if reads_broken => 1,
                status => status,
            };
            StepEnd { mount: Some(remote.mount), io: exit.io, ..StepEnd::local(step, status) }
        })
        .collect()
}

/// Remote groups in a row, each at another mount's proxy than the one before: each one's output
/// goes straight from its proxy to the next one's (`Links`), as the plan's edges between two
/// proxies say. Each group was built with client pipes between it and its neighbours: they are
/// used only when the proxies cannot stream to each other (the pipe is then relayed through the
/// client, as said on stderr) or a group runs elsewhere.
struct RemoteChain {
    groups: Vec<RemoteGroup>,
}

impl RemoteChain {
    async fn run(mut self) -> Statuses {
        let session = self.groups[0].session.clone();
        let pairs: Vec<(usize, usize)> = self.groups.windows(2).map(|w| (w[0].mount(), w[1].mount())).collect();
        if pairs.iter().any(|&(from, to)| session.pipes_relayed(from, to)) {
            return self.relayed().await;
        }
        let connecting = self.groups.iter().map(RemoteGroup::connections);
        let Some(connections) =
            futures_util::future::join_all(connecting).await.into_iter().collect::<Option<Vec<_>>>()
        else {
            return self.relayed().await;
        };
        let links: Vec<(PeerOutput, PeerSource)> =
            connections.windows(2).map(|w| pipe_link(&w[0].0, &w[1].0)).collect();
        // In order, so that each output is registered before the next proxy comes for it.
        let mut running = Vec::with_capacity(self.groups.len());
        for (k, group) in self.groups.iter().enumerate() {
            let (connection, sources) = &connections[k];
            let output = links.get(k).map(|(output, _)| output.clone());
            let stdin = k.checked_sub(1).map(|previous| links[previous].1.clone()).into_iter().collect();
            match group.start(connection, sources, Links { output, stdin, ..Links::default() }).await {
                Ok(r) => running.push(r),
                Err(not_taken) => {
                    // The jobs started are cancelled before they took any input: each group runs
                    // as if alone, and says for itself if it cannot run at its proxy either.
                    cancel_all(running).await;
                    // Refused for another reason than busy or lost, a reader may have failed to
                    // reach its writer's proxy: such pipes go through the client from now on.
                    if !not_taken.proxy_unavailable && k > 0 {
                        let (from, to) = pairs[k - 1];
                        session.relay_pipes(from, to);
                        let mounts = &session.config.mounts;
                        progress::notice(format_args!(
                            "posh-exec: {}; the pipe from mount {} to mount {} goes through the client instead",
                            not_taken.what, mounts[from].name, mounts[to].name
                        ));
                    }
                    return self.relayed().await;
                }
            }
        }
        // The client pipes between the groups are not used: their ends close here.
        let last = self.groups.len() - 1;
        for (k, group) in self.groups.iter_mut().enumerate() {
            if k > 0 {
                group.stdin = None;
            }
            if k < last {
                group.stdout = None;
            }
        }
        let finished = self.groups.into_iter().zip(running).map(|(group, running)| group.finish(running));
        futures_util::future::join_all(finished).await.into_iter().flatten().collect()
    }

    /// Each group on its own, the pipes between them relayed through the client.
    async fn relayed(self) -> Statuses {
        let runs = self.groups.into_iter().map(RemoteGroup::run);
        futures_util::future::join_all(runs).await.into_iter().flatten().collect()
    }
}

/// A split's copies joined at a proxy (`FanIn::at`): each copy's job sends its output straight
/// to the merge's proxy, whose `cat` (or rerun command, or `sort -m`) reads them, joined as the
/// annotation's merge says, and writes where the split command's redirections say, or feeds
/// the commands after it in the same job when the plan puts them all there (the job then writes
/// the pipeline's output). Nothing but statuses, messages and that output comes to the client.
struct RemoteFanIn {
    /// One job per copy; `None` if a copy does not run wholly at one proxy.
    lanes: Option<Vec<RemoteGroup>>,
    merge: RemoteGroup,
    joined: Joined,
}

impl RemoteFanIn {
    fn new(
        session: &Arc<Session>,
        call: &PipelineCall,
        copies_call: &PipelineCall,
        caller: &Caller,
        traffic: &mut TrafficByMount,
        unit: &Unit,
        merge: &[Step],
    ) -> RemoteFanIn {
        let one_job = |lane: &Vec<Step>| {
            let first = lane.first()?.remote.as_ref()?;
            lane.iter()
                .all(|s| {
                    s.remote
                        .as_ref()
                        .is_some_and(|r| (r.mount, &r.cwd, &r.view) == (first.mount, &first.cwd, &first.view))
                })
                .then_some(())
        };
        let lanes: Option<Vec<RemoteGroup>> = unit
            .lanes
            .iter()
            .map(|lane| {
                one_job(lane)?;
                Some(RemoteGroup {
                    stderr: caller.dup(2),
                    ..RemoteGroup::new(session, copies_call, lane, caller, traffic)
                })
            })
            .collect();
        let merge = RemoteGroup { stderr: caller.dup(2), ..RemoteGroup::new(session, call, merge, caller, traffic) };
        let joined = match unit.fan_in.as_ref().map(|f| f.kind) {
            Some(MergeKind::SortMerge) => Joined::Apart,
            Some(MergeKind::Sum) => Joined::Sum,
            Some(MergeKind::UniqCount) => Joined::UniqCount,
            Some(MergeKind::Concat | MergeKind::Rerun) | None => Joined::Concat,
        };
        RemoteFanIn { lanes, merge, joined }
    }

    /// Starts the copies' jobs, then the merge's, which fetches their outputs before anything
    /// runs; then the returned task streams them to their ends. If one of them cannot start, the
    /// others are cancelled before they took any input, and `output` comes back for the client's
    /// fan-in, with why.
    async fn start(
        self,
        output: Option<OwnedFd>,
    ) -> Result<impl Future<Output = Statuses> + Send + 'static, NotJoined> {
        let RemoteFanIn { lanes, merge, joined } = self;
        let Some(lanes) = lanes else {
            // The plan joins the copies at a proxy only when each runs there as one job.
            return Err(NotJoined { output, why: None });
        };
        let Some((merge_connection, merge_sources)) = merge.connections().await else {
            return Err(NotJoined { why: Some(no_connection(&merge)), output });
        };
        // The copies' connections set up and their jobs asked for together, a bounded number
        // at a time (one after another, a thousand copies' round trips added up, and the first
        // copies' outputs waited for the merge's proxy past its patience).
        let copies = lanes.iter().map(|lane| start_copy(lane, &merge_connection));
        let started: Vec<Result<(Running, PeerSource), NotTaken>> =
            futures_util::stream::iter(copies).buffered(super::session::CONNECTING_AT_ONCE).collect().await;
        let mut running = Vec::with_capacity(lanes.len());
        let mut stdin = Vec::with_capacity(lanes.len());
        let mut not_taken = None;
        for result in started {
            match result {
                Ok((r, source)) => {
                    running.push(r);
                    stdin.push(source);
                }
                Err(why) => {
                    not_taken.get_or_insert(why);
                }
            }
        }
        if let Some(not_taken) = not_taken {
            cancel_all(running).await;
            return Err(NotJoined { output, why: Some(not_taken) });
        }
        let merge = RemoteGroup { stdout: output, ..merge };
        let joined = match merge.start(&merge_connection, &merge_sources, Links { output: None, stdin, joined }).await {
            Ok(joined) => joined,
            Err(not_taken) => {
                cancel_all(running).await;
                return Err(NotJoined { output: merge.stdout, why: Some(not_taken) });
            }
        };
        let split = merge.steps[0].command;
        Ok(async move {
            let copies = lanes.into_iter().zip(running).map(|(lane, running)| lane.finish(running));
            let (copies, merged) = tokio::join!(futures_util::future::join_all(copies), merge.finish(joined));
            let mut ends: Statuses = copies.into_iter().flatten().collect();
            // The merge failing (a redirection it could not make, a lost proxy) fails the split
            // command, as bash's failing redirection would.
            if let Some(status) = merged.first().map(|end| end.status).filter(|&s| s != 0) {
                for end in ends.iter_mut().filter(|end| end.command == split) {
                    end.status = status;
                }
            }
            // The commands that ran after the merge in its job end as themselves.
            ends.extend(merged.into_iter().skip(1));
            ends
        })
    }
}

/// Why a group's job was not asked for: a proxy it needs could not be reached.
fn no_connection(group: &RemoteGroup) -> NotTaken {
    NotTaken {
        what: "no connection to a proxy it needs".to_string(),
        mount: group.session.config.mounts[group.mount()].name.clone(),
        proxy_unavailable: true,
        lost: false,
        globs_differ: false,
    }
}

/// Starts one copy of a split joined at a proxy: its job, its output sent to the merge's proxy
/// (`merge_connection`); returns it with the merge's source for that output.
async fn start_copy(lane: &RemoteGroup, merge_connection: &Connection) -> Result<(Running, PeerSource), NotTaken> {
    let Some((connection, sources)) = lane.connections().await else {
        return Err(no_connection(lane));
    };
    let (output, source) = pipe_link(&connection, merge_connection);
    let links = Links { output: Some(output), ..Links::default() };
    lane.start(&connection, &sources, links).await.map(|running| (running, source))
}

/// Why a split's copies were not joined at the proxy the plan chose (see [`RemoteFanIn::start`]):
/// the split's output, back for the client's fan-in, and the job a proxy did not take, if one
/// did not.
struct NotJoined {
    output: Option<OwnedFd>,
    why: Option<NotTaken>,
}

/// Waits for the jobs streaming files to this group's proxy, their stderr going to the
/// caller's; says why each one that did not deliver its whole file failed, and returns
/// their words. One that met a reader that stopped early (SIGPIPE) delivered what was read.
async fn finish_sources(
    caller: &Caller,
    name: &str,
    line: usize,
    source_traffic: &TrafficByMount,
    sources: Vec<Source>,
) -> Vec<String> {
    let mut broken = Vec::new();
    for Source { inputs, mount, job, addr } in sources {
        let traffic = source_traffic.get(&mount).cloned().unwrap_or_default();
        let ended =
            job.finish(None::<tokio::io::Empty>, &mut tokio::io::sink(), &mut tokio::io::sink(), &traffic).await;
        for (k, input) in inputs.into_iter().enumerate() {
            let why = match &ended {
                Ok(ended) => match ended.commands.get(k) {
                    Some(exit) if matches!(exit.status(), 0 | SIGPIPE_STATUS) => continue,
                    Some(exit) => {
                        exit.error.as_ref().map_or_else(|| format!("status {}", exit.status()), |e| e.message.clone())
                    }
                    None => "its proxy reported nothing".to_string(),
                },
                Err(e) => format!("{e:#}"),
            };
            caller.bash_error(name, line, &input.word, &format!("not streamed whole from proxy {addr}: {why}"));
            broken.push(input.word);
        }
    }
    broken
}

/// A shell's status for a command that SIGPIPE ended.
const SIGPIPE_STATUS: i32 = 128 + 13;

/// A pipe from a job at `from`'s proxy to one at `to`'s: the writer's `PeerOutput` and the
/// reader's `PeerSource`, under one new token.
fn pipe_link(from: &Connection, to: &Connection) -> (PeerOutput, PeerSource) {
    let token = random_token();
    let output = PeerOutput { token: token.clone(), peer: to.fingerprint().to_string(), pipe: true };
    let source = PeerSource { addr: from.addr().to_string(), fingerprint: from.fingerprint().to_string(), token };
    (output, source)
}

/// A token no one can guess, naming one stream between two proxies.
fn random_token() -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    // The system's generator fails only on a broken system. The token pairs a fetch with its
    // job; the proxy also requires the fingerprint the client introduced, so even a guessed
    // token gives another proxy nothing.
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An async reader on a pipe of ours (no other process shares its read end).
pub(super) fn pipe_reader(fd: OwnedFd) -> std::io::Result<tokio::net::unix::pipe::Receiver> {
    tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
}
