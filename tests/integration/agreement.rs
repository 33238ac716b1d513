//! One plan: where `posh-exec --explain --format json` places each command, against where
//! `--stats` says the runtime ran it. The oracle and the peer scripts check it on every run with
//! a mount; the benchmark harness reports the same comparison per workload.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `location` of a plan node as `--stats` names places: `client` or the mount's name.
fn planned_place(node: &Value) -> String {
    match node["location"]["kind"].as_str() {
        Some("mount") => node["location"]["mount"].as_str().unwrap_or("?").to_string(),
        _ => "client".to_string(),
    }
}

/// A command as planned: its program, why it runs where it runs, and the places of its copies in
/// copy order.
type Planned = (String, String, Vec<String>);

/// The command nodes of an `--explain` pipeline by command index.
fn planned_commands(pipeline: &Value) -> Vec<Planned> {
    let mut commands: Vec<(usize, usize, String, String, String)> = Vec::new();
    for node in pipeline["nodes"].as_array().into_iter().flatten() {
        let kind = &node["kind"];
        if kind["type"] != "command" {
            continue;
        }
        let index = kind["command"].as_u64().unwrap_or(0) as usize;
        let copy = kind["copy"][0].as_u64().unwrap_or(0) as usize;
        let program = kind["argv"][0].as_str().unwrap_or_default().to_string();
        let why = node["why"]["reason"].as_str().unwrap_or_default().to_string();
        commands.push((index, copy, program, why, planned_place(node)));
    }
    commands.sort_by_key(|(index, copy, ..)| (*index, *copy));
    let mut grouped: Vec<Planned> = Vec::new();
    for (index, _, program, why, place) in commands {
        match grouped.get_mut(index) {
            Some((_, _, places)) => places.push(place),
            None => grouped.push((program, why, vec![place])),
        }
    }
    grouped
}

/// The calls of the runtime an `--explain` pipeline plans, as (line, commands): the whole
/// pipeline, or each part of it that goes to the runtime while bash keeps the rest.
fn handed_calls(pipeline: &Value) -> Vec<(u64, Vec<Planned>)> {
    let planned = planned_commands(pipeline);
    let line = pipeline["line"].as_u64().unwrap_or(0);
    let Some(parts) = pipeline["handed_parts"].as_array() else { return vec![(line, planned)] };
    let source = pipeline["source"].as_str().unwrap_or_default();
    let start = pipeline["span"]["start"].as_u64().unwrap_or(0);
    parts
        .iter()
        .map(|part| {
            let (first, end) = (part["commands"][0].as_u64().unwrap_or(0), part["commands"][1].as_u64().unwrap_or(0));
            let offset = (part["span"]["start"].as_u64().unwrap_or(0) - start) as usize;
            let lines_before = source.as_bytes()[..offset.min(source.len())].iter().filter(|&&b| b == b'\n').count();
            let commands = planned.get(first as usize..end as usize).map(<[_]>::to_vec).unwrap_or_default();
            (line + lines_before as u64, commands)
        })
        .collect()
}

/// Of the commands the `--stats` records (JSON lines) say ran at a proxy (each copy counted), how
/// many `explain` placed there before the run (not `depends_on_shell`, which is placed when it
/// runs): (stated, at a proxy).
pub(crate) fn stated_before(explain: &Value, stats: &str) -> (usize, usize) {
    let pipelines = explain["pipelines"].as_array().cloned().unwrap_or_default();
    let (mut stated, mut at_proxy) = (0, 0);
    for record in stats.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()) {
        let line = record["line"].as_u64().unwrap_or(0);
        let ran: Vec<(String, Vec<String>)> = record["commands"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let places = match &c["location"] {
                    Value::Array(places) => places.iter().map(|p| p.as_str().unwrap_or("?").to_string()).collect(),
                    place => vec![place.as_str().unwrap_or("?").to_string()],
                };
                (c["command"].as_str().unwrap_or_default().to_string(), places)
            })
            .collect();
        let plan = pipelines.iter().flat_map(handed_calls).find(|(at, planned)| {
            *at == line
                && planned.len() == ran.len()
                && planned.iter().zip(&ran).all(|((program, ..), (ran_program, _))| program == ran_program)
        });
        for (i, (_, places)) in ran.iter().enumerate() {
            let remote = places.iter().filter(|p| *p != "client").count();
            if remote == 0 {
                continue;
            }
            at_proxy += remote;
            if let Some((_, planned)) = &plan
                && let Some((_, why, planned_places)) = planned.get(i)
                && why != "depends_on_shell"
                && planned_places == places
            {
                stated += remote;
            }
        }
    }
    (stated, at_proxy)
}

/// Every command of the `--stats` records (JSON lines) that ran elsewhere than the plan in
/// `explain` said, described for people. A command whose words only bash can tell
/// (`depends_on_shell`) is placed when the script runs, so it has no static place to agree with.
pub(crate) fn disagreements(explain: &Value, stats: &str) -> Vec<String> {
    let pipelines = explain["pipelines"].as_array().cloned().unwrap_or_default();
    let mut found = Vec::new();
    for record in stats.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()) {
        let ran: Vec<(String, Vec<String>, Option<String>)> = record["commands"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let places = match &c["location"] {
                    Value::Array(places) => places.iter().map(|p| p.as_str().unwrap_or("?").to_string()).collect(),
                    place => vec![place.as_str().unwrap_or("?").to_string()],
                };
                (c["command"].as_str().unwrap_or_default().to_string(), places, c["why"].as_str().map(String::from))
            })
            .collect();
        let line = record["line"].as_u64().unwrap_or(0);
        // A loop the plan sends to its proxy as one request runs there so, and only such a loop.
        let in_request = record["loop_request"].as_bool().unwrap_or(false);
        let around = explain["loops"].as_array().into_iter().flatten().find(|l| {
            l["line"].as_u64().is_some_and(|first| first <= line)
                && l["last_line"].as_u64().is_some_and(|last| line <= last)
        });
        let planned_request = around.map(|l| l["runs"].as_str().unwrap_or_default());
        match (planned_request, in_request) {
            (Some("one_job"), false) => {
                found.push(format!("line {line}: its loop was planned as one request, but it ran on its own"))
            }
            (Some("one_job" | "at_run_time"), true) => {}
            (_, true) => found.push(format!("line {line}: ran in a loop's request the plan does not make")),
            _ => {}
        }
        let plan = pipelines.iter().flat_map(handed_calls).find(|(at, planned)| {
            *at == line
                && planned.len() == ran.len()
                && planned.iter().zip(&ran).all(|((program, ..), (ran_program, ..))| program == ran_program)
        });
        let Some((_, planned)) = plan else {
            let programs: Vec<&str> = ran.iter().map(|(p, ..)| p.as_str()).collect();
            found.push(format!(
                "line {line}: the runtime ran `{}`, which --explain does not plan",
                programs.join(" | ")
            ));
            continue;
        };
        for ((program, why, planned_places), (_, places, runtime_why)) in planned.iter().zip(&ran) {
            let seen_only_by_the_run = runtime_why.as_deref().is_some_and(|w| {
                RUN_ONLY_FACTS.iter().any(|fact| w.starts_with("run at the client: ") && w.ends_with(fact))
            });
            if why == "depends_on_shell" || planned_places == places || seen_only_by_the_run {
                continue;
            }
            found.push(format!(
                "line {line}: `{program}` planned at {} ({why}), ran at {}{}",
                planned_places.join("+"),
                places.join("+"),
                runtime_why.as_ref().map(|w| format!(" ({w})")).unwrap_or_default()
            ));
        }
    }
    found
}

/// Departures for what only the run can see, which `--explain` could not have planned for
/// (`--stats` says `run at the client: FACT`): the runtime's own words.
const RUN_ONLY_FACTS: &[&str] = &["the working directory was removed"];

/// Runs `posh-exec --explain --format json SCRIPT ARGS` as `command` would run the script with
/// `args` (same program, working directory, arguments and the environment it sets; `command`
/// clears the rest), or says why it failed.
pub(crate) fn explain_like(command: &Command, script: &Path, args: &[String]) -> Result<Value, String> {
    let mut explain = Command::new(command.get_program());
    explain
        .args(["--explain", "--format", "json"])
        .arg(script)
        .args(args)
        .env_clear()
        .stdin(std::process::Stdio::null());
    if let Some(dir) = command.get_current_dir() {
        explain.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => explain.env(key, value),
            None => explain.env_remove(key),
        };
    }
    let out = explain.output().map_err(|e| format!("cannot run posh-exec --explain: {e}"))?;
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("posh-exec --explain printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}
