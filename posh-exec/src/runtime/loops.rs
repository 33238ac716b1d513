//! A `for` loop handed over whole (`posh_core::rewrite`, `posh_core::planner::LoopPlan`): bash
//! expanded its words and its body's words once, with a marker where the body used the loop
//! variable. Each iteration runs the body's pipelines in order with the word in the marker's
//! place, as bash would have run them one call at a time: a pipeline's status is bash's, the
//! loop's is its last pipeline's (0 without iterations), and under `set -e` the first failing
//! pipeline ends the loop with its status (bash then exits).
//!
//! When every iteration's pipelines are planned wholly at one proxy (`one_proxy_for_all`, the
//! planner's rule, which `--explain` applies to the words it can know), they go there as one
//! request (`Sequence`), run in order there and stopped there by the same `set -e` rule: one
//! round trip for the loop instead of one per pipeline. Otherwise each pipeline is planned and
//! run when its turn comes, as its own call would be.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::AsFd as _;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::Path;
use std::sync::Arc;

use tokio::io::AsyncWriteExt as _;

use posh_core::planner::{
    MOST_PIPELINES_PLANNED_AHEAD, PIPELINES_PER_REQUEST, PipelinePlan, one_proxy_for_all, pipelines_per_request,
};
use posh_core::rewrite::{MARK_BODY, MARK_ITEM, MARK_LOOP};
use posh_exec::remote::TrafficByMount;
use posh_exec::remote::protocol::{Ended, MAX_LINE, Request, Sequence, VERSION};

use super::coherence::Written;
use super::execute::{self, StepEnd};
use super::local::Caller;
use super::output::{async_writer, one_destination};
use super::placement::{self, Step, Unit};
use super::session::Session;
use super::{PipelineCall, decode};

#[derive(Clone, Debug, PartialEq)]
pub struct LoopCall {
    /// `$0`, for messages.
    pub name: String,
    pub variable: String,
    /// How many values each iteration has: its word, then each expansion of it the body uses
    /// (`${f%.gz}`), as bash expanded them.
    pub values: usize,
    /// The iterations' values, `values` each.
    pub words: Vec<OsString>,
    pub errexit: bool,
    pub pipefail: bool,
    /// The body's pipelines, with [`MARK_ITEM`] where each iteration's word goes.
    pub body: Vec<PipelineCall>,
}

/// Reads the arguments after `__run` of a loop's call; `None` when they are a pipeline's.
pub fn decode_loop(args: &[OsString]) -> Result<Option<LoopCall>, String> {
    let [name, shellopts, stats, rest @ ..] = args else { return Err("__run needs NAME, SHELLOPTS and STATS".into()) };
    if rest.first().is_none_or(|first| first.as_bytes() != MARK_LOOP.as_bytes()) {
        return Ok(None);
    }
    let variable = rest.get(1).ok_or("a loop without its variable")?.to_string_lossy().into_owned();
    let values: usize = rest.get(2).and_then(|k| k.to_str()?.parse().ok()).ok_or("a loop without its values' count")?;
    let mut parts = rest[3..].split(|arg| arg.as_bytes() == MARK_BODY.as_bytes());
    let words = parts.next().unwrap_or_default().to_vec();
    if values == 0 || words.len() % values != 0 {
        return Err(format!("{} words for {values} values per iteration", words.len()));
    }
    let body = parts
        .map(|part| {
            let args: Vec<OsString> =
                [name, shellopts, stats].into_iter().cloned().chain(part.iter().cloned()).collect();
            decode(&args)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if body.is_empty() {
        return Err("a loop without a body".into());
    }
    let options: Vec<&[u8]> = shellopts.as_bytes().split(|&b| b == b':').collect();
    Ok(Some(LoopCall {
        name: name.to_string_lossy().into_owned(),
        variable,
        values,
        words,
        errexit: options.contains(&&b"errexit"[..]),
        pipefail: options.contains(&&b"pipefail"[..]),
        body,
    }))
}

impl LoopCall {
    /// Each iteration's values (see [`LoopCall::values`]).
    pub fn iterations(&self) -> std::slice::Chunks<'_, OsString> {
        self.words.chunks(self.values)
    }

    /// The body's pipelines as bash would run them in the iteration of `values`.
    pub fn iteration(&self, values: &[OsString]) -> Vec<PipelineCall> {
        let put = |text: &mut OsString| {
            if let Some(replaced) = with_values(text.as_bytes(), values) {
                *text = OsString::from_vec(replaced);
            }
        };
        let mut body = self.body.clone();
        for command in body.iter_mut().flat_map(|p| &mut p.commands) {
            command.argv.iter_mut().for_each(put);
            command.assignments.iter_mut().for_each(|(_, value)| put(value));
            command.redirects.iter_mut().for_each(|(_, _, target)| put(target));
        }
        body
    }

    /// Whether a pipeline that ended with `status` ends the loop.
    fn stops_at(&self, status: u8) -> bool {
        self.errexit && status != 0
    }
}

/// `text` with every `␟Ik␟I` replaced by `values[k]`; `None` when it holds none.
fn with_values(text: &[u8], values: &[OsString]) -> Option<Vec<u8>> {
    let mark = MARK_ITEM.as_bytes();
    let find = |from: &[u8]| from.windows(mark.len()).position(|w| w == mark);
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    let mut found = false;
    while let Some(at) = find(rest) {
        let after = &rest[at + mark.len()..];
        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
        let index = std::str::from_utf8(&after[..digits]).ok().and_then(|d| d.parse::<usize>().ok());
        match (index.and_then(|k| values.get(k)), after[digits..].starts_with(mark)) {
            (Some(value), true) => {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(value.as_bytes());
                rest = &after[digits + mark.len()..];
                found = true;
            }
            // Not a mark the rewrite wrote: kept as it is.
            _ => {
                out.extend_from_slice(&rest[..at + mark.len()]);
                rest = after;
            }
        }
    }
    out.extend_from_slice(rest);
    found.then_some(out)
}

/// Runs the loop's iterations one pipeline after another with `run`, which returns each
/// pipeline's status; returns the loop's.
pub fn each_iteration(call: &LoopCall, run: impl FnMut(&PipelineCall) -> u8) -> u8 {
    each_pipeline(call, call.iterations().flat_map(|values| call.iteration(values)), 0, run)
}

/// Runs `pipelines` (of the loop's iterations, in order) with `run`, as bash would run them
/// after a pipeline that ended with `status`; returns the loop's status.
fn each_pipeline(
    call: &LoopCall,
    pipelines: impl IntoIterator<Item = PipelineCall>,
    mut status: u8,
    mut run: impl FnMut(&PipelineCall) -> u8,
) -> u8 {
    for pipeline in pipelines {
        status = run(&pipeline);
        if call.stops_at(status) {
            return status;
        }
    }
    status
}

/// One pipeline of an iteration, placed as one job at the loop's proxy.
struct Job {
    call: PipelineCall,
    steps: Vec<Step>,
    units: Vec<Unit>,
}

/// The loop's iterations when every one runs at one proxy, one job per body pipeline.
struct OneProxy {
    mount: usize,
    jobs: Vec<Job>,
    /// What planning them asked the proxies.
    asked: TrafficByMount,
}

/// Plans every iteration as the runtime plans a call; `Some` when they all run at one proxy as
/// one job each (the planner's [`one_proxy_for_all`], and nothing the runtime had to move).
fn at_one_proxy(
    session: &Session,
    call: &LoopCall,
    cwd: &Path,
    env: &[(OsString, OsString)],
    stdout_file: Option<&Path>,
) -> Option<OneProxy> {
    if call.words.len() / call.values * call.body.len() > MOST_PIPELINES_PLANNED_AHEAD {
        return None;
    }
    let planning = super::metadata::Planning::new(session);
    let mut iterations: Vec<PipelineCall> = call.iterations().flat_map(|values| call.iteration(values)).collect();
    for iteration in &mut iterations {
        iteration.stdout_file = stdout_file.map(Path::to_path_buf);
    }
    planning.prefetch(iterations.iter().flat_map(|p| super::session::call_paths(p, cwd)));
    // As the planner plans them (`ScriptScope::pipelines_per_call`): a body of one pipeline
    // shares the requests' cost among its iterations; a longer body's pipelines cost a call each.
    let per_call = if call.body.len() == 1 { pipelines_per_request(iterations.len()) } else { 1 };
    let mut plans: Vec<PipelinePlan> = Vec::with_capacity(iterations.len());
    let mut jobs = Vec::with_capacity(iterations.len());
    for call in iterations {
        let (plan, units) =
            placement::place(&session.library, &session.config, &session.ratios, &call, cwd, env, &planning, per_call);
        plans.push(plan?);
        let steps = one_job(&units)?;
        jobs.push(Job { call, steps, units });
    }
    let name = one_proxy_for_all(&plans).ok()?;
    let mount = session.config.mounts.iter().position(|m| m.name == name)?;
    let there = |job: &Job| job.steps.iter().all(|s| s.remote.as_ref().is_some_and(|r| r.mount == mount));
    jobs.iter().all(there).then(|| OneProxy { mount, jobs, asked: planning.into_traffic() })
}

/// The steps of `units` when they are one job at one proxy, reading nothing from other mounts.
fn one_job(units: &[Unit]) -> Option<Vec<Step>> {
    placement::one_job_at(units)?;
    let lane = &units[0].lanes[0];
    lane.iter().all(|s| s.remote.as_ref().is_some_and(|r| r.streamed.is_empty())).then(|| lane.clone())
}

/// Runs a loop handed over to the session: as requests to one proxy when every iteration lands
/// there, else pipeline by pipeline. `stream` is the caller's: when it goes, so does the loop
/// (status 130).
pub fn run(
    session: &Arc<Session>,
    call: &LoopCall,
    caller: &Caller,
    cwd: &Path,
    env: &[(OsString, OsString)],
    stream: &std::os::unix::net::UnixStream,
) -> u8 {
    let forget = |pipeline: &PipelineCall| {
        session.answers.forget(&session.config, super::session::call_paths(pipeline, cwd));
        session.answers.learn(&caller.written);
    };
    let stdout_file = caller.fds[1].as_ref().and_then(super::regular_file_path);
    let one_by_one = |pipeline: &PipelineCall| {
        let pipeline = &PipelineCall { stdout_file: stdout_file.clone(), ..pipeline.clone() };
        let planning = super::metadata::Planning::new(session);
        planning.prefetch(super::session::call_paths(pipeline, cwd));
        let (_, units) =
            placement::place(&session.library, &session.config, &session.ratios, pipeline, cwd, env, &planning, 1);
        let asked = planning.into_traffic();
        let status =
            session.until_caller_goes(stream, execute::execute(Some(session), pipeline, caller, &units, &asked));
        forget(pipeline);
        status.unwrap_or(130)
    };
    let Some(OneProxy { mount, jobs, mut asked }) = at_one_proxy(session, call, cwd, env, stdout_file.as_deref())
    else {
        return each_iteration(call, one_by_one);
    };
    let calls: Vec<PipelineCall> = jobs.iter().map(|job| job.call.clone()).collect();
    // `> log 2>&1`: each job sends its stderr along with its stdout.
    let stderr_with_stdout = match &caller.fds {
        [_, Some(out), Some(err)] => one_destination(out.as_fd(), err.as_fd()),
        _ => false,
    };
    let requests: Vec<Request> =
        jobs.iter().map(|job| execute::job_request(&job.call, &job.steps, stderr_with_stdout)).collect();
    let mut status = 0;
    let mut first = 0;
    for end in request_ends(&requests) {
        let sequenced = Sequenced { session, call, caller, mount, asked: std::mem::take(&mut asked) };
        let outcome = session.until_caller_goes(stream, sequenced.run(&jobs[first..end], &requests[first..end]));
        jobs[first..end].iter().for_each(|job| forget(&job.call));
        match outcome {
            None => return 130,
            // Nothing of it ran: the rest goes pipeline by pipeline (each says for itself if it
            // cannot run at its proxy either).
            Some(Outcome::NotTaken) => return each_pipeline(call, calls[first..].iter().cloned(), status, one_by_one),
            Some(Outcome::Ended { status: last, stopped: true }) => return last,
            Some(Outcome::Ended { status: last, stopped: false }) => status = last,
            // The pipeline running when the stream broke failed (as a job of its own would); the
            // loop goes on after it, pipeline by pipeline.
            Some(Outcome::Broken { ended }) if call.stops_at(255) || first + ended + 1 >= calls.len() => return 255,
            Some(Outcome::Broken { ended }) => {
                return each_pipeline(call, calls[first + ended + 1..].iter().cloned(), 255, one_by_one);
            }
        }
        first = end;
    }
    status
}

/// Where each request of the loop's jobs ends (exclusive indices into `requests`): at most
/// [`PIPELINES_PER_REQUEST`] jobs, and a line of at most half of `MAX_LINE`, whatever the words.
fn request_ends(requests: &[Request]) -> Vec<usize> {
    let mut ends = Vec::new();
    let (mut jobs, mut bytes) = (0, 0);
    for (i, request) in requests.iter().enumerate() {
        let size = serde_json::to_vec(request).map_or(MAX_LINE, |line| line.len() + 1);
        if jobs > 0 && (jobs == PIPELINES_PER_REQUEST || bytes + size > MAX_LINE / 2) {
            ends.push(i);
            (jobs, bytes) = (0, 0);
        }
        jobs += 1;
        bytes += size;
    }
    ends.push(requests.len());
    ends
}

/// How a request of a loop's jobs ended.
enum Outcome {
    /// Every job ran, or the proxy stopped where bash stops: the last pipeline's status, and
    /// whether the loop ends there (`set -e`).
    Ended { status: u8, stopped: bool },
    /// Nothing of it ran.
    NotTaken,
    /// The stream broke after `ended` jobs ended: the next one failed (status 255, said on
    /// stderr as for a job of its own), the others did not run.
    Broken { ended: usize },
}

/// Jobs of a loop sent to one proxy as one request.
struct Sequenced<'a> {
    session: &'a Arc<Session>,
    call: &'a LoopCall,
    caller: &'a Caller,
    mount: usize,
    /// What planning asked the proxies, counted in the first pipeline's `--stats` record.
    asked: TrafficByMount,
}

impl Sequenced<'_> {
    /// Sends `jobs` and relays what they write; their messages and statuses as the jobs of their
    /// own would give them, their `--stats` records marked as a loop's.
    async fn run(self, jobs: &[Job], requests: &[Request]) -> Outcome {
        let Some(connection) = self.session.connection(self.mount).await else { return Outcome::NotTaken };
        let sequence = Sequence {
            version: VERSION,
            sequence: requests.to_vec(),
            errexit: self.call.errexit,
            pipefail: self.call.pipefail,
        };
        let cwd = self.caller.cwd.as_deref();
        let mut written = Vec::with_capacity(jobs.len());
        for job in jobs {
            written.push(Written::before_job(self.session.library(), &job.call, &job.steps, cwd, None).await);
        }
        let traffic = super::progress::traffic(self.mount);
        let working = super::progress::remote_work();
        let started = match connection.start_sequence(&sequence, &traffic).await {
            Ok(started) => started,
            Err(e) => {
                let mount = &self.session.config.mounts[self.mount].name;
                self.caller.warn(&format!("{e}; running the loop pipeline by pipeline instead (mount {mount})"));
                return Outcome::NotTaken;
            }
        };
        let mut stdout = async_writer(self.caller.dup(1));
        let mut stderr = async_writer(self.caller.dup(2));
        // Each job's messages as its statuses come, after its output, as a job of its own does.
        let mut ends: Vec<Vec<StepEnd>> = Vec::with_capacity(jobs.len());
        let mut on_exit = |ended: Ended| {
            if let Some(job) = jobs.get(ends.len()) {
                ends.push(execute::remote_ends(self.caller, &job.call, &job.steps, &ended, &[]));
            }
        };
        let finished = started.finish_sequence(jobs.len(), &mut stdout, &mut stderr, &traffic, &mut on_exit).await;
        let _ = tokio::join!(stdout.shutdown(), stderr.shutdown());
        // The client's filesystem caches show what the jobs wrote before bash reads it.
        for written in written {
            written.after_job().await;
        }
        drop(working);
        let mut status = 0;
        let mounts = &self.session.config.mounts[..];
        let (mut traffic, mut asked) = (BTreeMap::from([(self.mount, traffic)]), self.asked);
        for (job, ends) in jobs.iter().zip(&ends) {
            let statuses: Vec<i32> = ends.iter().map(|end| end.status).collect();
            let last = if job.call.pipefail {
                statuses.iter().rev().copied().find(|&s| s != 0).unwrap_or(0)
            } else {
                statuses.last().copied().unwrap_or(0)
            };
            status = (last & 0xff) as u8;
            self.session.record_ratios(&execute::measured_runs(ends, &job.units));
            if let Some(path) = &job.call.stats {
                // The request's bytes and the plan's questions count in its first pipeline's record.
                let record = super::stats::Record {
                    call: &job.call,
                    ends,
                    units: &job.units,
                    statuses: &statuses,
                    status,
                    mounts,
                    traffic: &traffic,
                    asked: &asked,
                    in_loop_request: true,
                    joined_at_client: &[],
                    run: Some(self.session.figures()),
                };
                record.append(path, self.caller);
                (traffic, asked) = (BTreeMap::new(), BTreeMap::new());
            }
        }
        let ended = ends.len();
        let line = jobs.get(ended).map_or(0, |job| job.call.commands[0].line);
        match finished {
            Ok(n) if n == jobs.len() => Outcome::Ended { status, stopped: self.call.stops_at(status) },
            Ok(_) if self.call.stops_at(status) => Outcome::Ended { status, stopped: true },
            Ok(n) => {
                let e =
                    format!("proxy {} ended a loop's request after {n} of {} pipelines", connection.addr(), jobs.len());
                self.caller.bash_error(&self.call.name, line, "posh", &e);
                Outcome::Broken { ended }
            }
            Err(e) => {
                self.caller.bash_error(&self.call.name, line, "posh", &format!("{e:#}"));
                Outcome::Broken { ended }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use posh_core::rewrite::{MARK_COMMAND, MARK_REDIRECT, MARK_WORDS};

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn decodes_a_loop_and_puts_each_value_in_place() {
        let (word, derived) = (format!("{MARK_ITEM}0{MARK_ITEM}"), format!("{MARK_ITEM}1{MARK_ITEM}"));
        let call = decode_loop(&args(&[
            "s.sh",
            "errexit:pipefail",
            "",
            MARK_LOOP,
            "f",
            "2",
            "a.log",
            "a",
            "b c.log",
            "b c",
            MARK_BODY,
            MARK_COMMAND,
            "2",
            MARK_REDIRECT,
            "1",
            ">>",
            &format!("out/{derived}.n"),
            MARK_WORDS,
            "grep",
            "-c",
            &format!("x{word}y{word}"),
            MARK_BODY,
            MARK_COMMAND,
            "3",
            MARK_WORDS,
            "wc",
            &word,
            &format!("{MARK_ITEM}7{MARK_ITEM}"),
        ]))
        .unwrap()
        .expect("a loop");
        assert!(call.errexit && call.pipefail);
        assert_eq!((call.variable.as_str(), call.iterations().count(), call.body.len()), ("f", 2, 2));
        let second = call.iterations().nth(1).map(|values| call.iteration(values)).unwrap();
        assert_eq!(second[0].commands[0].argv, args(&["grep", "-c", "xb c.logyb c.log"]));
        assert_eq!(second[0].commands[0].redirects[0].2, OsString::from("out/b c.n"));
        let unknown = format!("{MARK_ITEM}7{MARK_ITEM}");
        assert_eq!(second[1].commands[0].argv, args(&["wc", "b c.log", &unknown]), "no value 7: kept");
        assert_eq!(decode_loop(&args(&["s.sh", "", "", MARK_COMMAND, "1", MARK_WORDS, "wc"])), Ok(None));
        assert!(decode_loop(&args(&["s.sh", "", "", MARK_LOOP, "f", "1", "a"])).is_err(), "a loop without a body");
        let odd = args(&["s.sh", "", "", MARK_LOOP, "f", "2", "a", MARK_BODY, MARK_COMMAND, "1", MARK_WORDS, "wc"]);
        assert!(decode_loop(&odd).is_err(), "a word without its derived value");
    }

    /// Requests hold at most 256 jobs and half a request line, however long the words.
    #[test]
    fn requests_are_cut_by_count_and_size() {
        let small = Request { version: VERSION, ..Request::default() };
        assert_eq!(request_ends(&vec![small.clone(); 600]), [256, 512, 600]);
        let mut long = small.clone();
        long.cwd = "d".repeat(100_000);
        assert_eq!(request_ends(&vec![long; 12]), [5, 10, 12]);
        assert_eq!(request_ends(&[small]), [1]);
    }

    /// The loop's status is its last pipeline's; under `set -e` the first failing one ends it.
    #[test]
    fn iterations_stop_where_bash_stops() {
        let body = |errexit| LoopCall {
            name: "s".into(),
            variable: "f".into(),
            values: 1,
            words: args(&["0", "3", "0"]),
            errexit,
            pipefail: false,
            body: vec![
                decode(&args(&["s", "", "", MARK_COMMAND, "1", MARK_WORDS, &format!("{MARK_ITEM}0{MARK_ITEM}")]))
                    .unwrap(),
            ],
        };
        for (errexit, ran, status) in [(false, vec!["0", "3", "0"], 0), (true, vec!["0", "3"], 3)] {
            let call = body(errexit);
            let mut seen = Vec::new();
            let got = each_iteration(&call, |p| {
                let word = p.commands[0].argv[0].to_string_lossy().into_owned();
                let status = word.parse().unwrap();
                seen.push(word);
                status
            });
            assert_eq!((seen, got), (ran.iter().map(|s| s.to_string()).collect::<Vec<_>>(), status));
        }
    }
}
