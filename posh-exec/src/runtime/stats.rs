//! `--stats`: one JSON line per pipeline run by the runtime, with where each command ran and the
//! bytes measured on the streams to and from each proxy.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use posh_core::config::Mount;
use posh_exec::remote::TrafficByMount;
use posh_wire::measure::IoCount;

use super::PipelineCall;
use super::execute::StepEnd;
use super::local::Caller;
use super::placement::Unit;

#[derive(Debug)]
pub struct Record<'a> {
    pub call: &'a PipelineCall,
    /// Every step, ordered by command and copy.
    pub ends: &'a [StepEnd],
    /// The steps as placed, for the planner's reasons.
    pub units: &'a [Unit],
    pub statuses: &'a [i32],
    pub status: u8,
    pub mounts: &'a [Mount],
    /// Per mount index: the jobs' streams.
    pub traffic: &'a TrafficByMount,
    /// Per mount index: the plan's questions about the proxy's files (`metadata`).
    pub asked: &'a TrafficByMount,
    /// It ran as one job of a loop's request to its proxy (see `loops`).
    pub in_loop_request: bool,
    /// Split commands whose copies the plan joined at a proxy and the run joined at the client,
    /// each with why (a busy or unreachable proxy).
    pub joined_at_client: &'a [(usize, String)],
    /// The run's connections and memory so far (with a runtime session).
    pub run: Option<super::session::RunFigures>,
}

impl Record<'_> {
    /// Where command `index` ran in the end: `client`, a mount's name, or the places of its
    /// copies.
    fn locations(&self, index: usize) -> Vec<String> {
        self.ends
            .iter()
            .filter(|end| end.command == index)
            .map(|end| match end.mount {
                Some(mount) => self.mounts.get(mount).map_or("?".to_string(), |m| m.name.clone()),
                None => "client".to_string(),
            })
            .collect()
    }

    /// Why command `index` (or one of its copies, or their join) ran at the client, when it did:
    /// what the run found (a busy or unreachable proxy), else, when it ran there whole, the
    /// planner's reason. A join at the client comes first: a copy then run there too (its
    /// proxy still busy when asked again) is said after it.
    fn client_reason(&self, index: usize) -> Option<String> {
        let ends = || self.ends.iter().filter(|end| end.command == index);
        let ran_at_client = ends().all(|end| end.mount.is_none());
        let departed = ends().find_map(|end| end.departure.as_deref());
        let joined = self.joined_at_client.iter().find(|(command, _)| *command == index).map(|(_, why)| why.as_str());
        let steps = self.units.iter().flat_map(|u| u.lanes.iter().flatten());
        match (joined, departed) {
            (Some(joined), Some(departed)) => Some(format!("{joined}; {departed}")),
            (Some(why), None) | (None, Some(why)) => Some(why.to_string()),
            (None, None) => steps.filter(|s| s.command == index && ran_at_client).find_map(|s| s.why.clone()),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        let commands: Vec<serde_json::Value> = self
            .call
            .commands
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let locations = self.locations(i);
                let location = match &locations[..] {
                    [one] => serde_json::json!(one),
                    many => serde_json::json!(many),
                };
                let mut record = serde_json::json!({
                    "line": c.line,
                    "command": c.argv.first().map(|a| a.to_string_lossy().into_owned()),
                    "location": location,
                    "status": self.statuses[i],
                });
                if let Some(why) = self.client_reason(i) {
                    record["why"] = serde_json::json!(why);
                }
                // What its copies read and wrote, as the kernel counted (files, pipes, start-up).
                let copies: Vec<_> = self.ends.iter().filter(|end| end.command == i).map(|end| end.io).collect();
                if let Some(io) = IoCount::total(copies.iter().copied()).filter(|_| !copies.is_empty()) {
                    record["read"] = serde_json::json!(io.read);
                    record["written"] = serde_json::json!(io.written);
                }
                record
            })
            .collect();
        let mut proxies = serde_json::Map::new();
        for mount in self.traffic.keys().chain(self.asked.keys()) {
            let Some(name) = self.mounts.get(*mount).map(|m| m.name.clone()) else { continue };
            let (sent, received) = self.traffic.get(mount).map_or((0, 0), |t| t.totals());
            let proxy = proxies
                .entry(name)
                .or_insert_with(|| serde_json::json!({ "bytes_to_proxy": sent, "bytes_from_proxy": received }));
            if let Some(asked) = self.asked.get(mount).filter(|a| a.questions() > 0) {
                let (sent, received) = asked.totals();
                proxy["questions"] = serde_json::json!(asked.questions());
                proxy["question_bytes"] = serde_json::json!(sent + received);
            }
        }
        let mut record = serde_json::json!({
            "line": self.call.commands[0].line,
            "commands": commands,
            "status": self.status,
            "proxies": proxies,
        });
        if self.in_loop_request {
            record["loop_request"] = serde_json::json!(true);
        }
        if let Some(run) = &self.run {
            // What each mount's proxy may have sent the client that it has not read yet.
            let receive_window = u64::from(posh_wire::protocol::CLIENT_RECEIVE_WINDOW);
            let mut figures = serde_json::json!({
                "connections_open": run.connections_open,
                "most_connecting_at_once": run.most_connecting_at_once,
                "unread_bytes_per_mount_at_most": receive_window,
            });
            if let Some(peak) = run.peak_rss_bytes {
                figures["peak_rss_bytes"] = serde_json::json!(peak);
            }
            record["run"] = figures;
        }
        // Where its globs were expanded (`globs`): at a mount's proxy, or at the client, and why
        // there when a proxy was to.
        let globs: Vec<serde_json::Value> = self
            .call
            .globs
            .iter()
            .map(|glob| {
                let at = glob.mount.clone().unwrap_or_else(|| "client".to_string());
                let mut expanded = serde_json::json!({ "pattern": glob.pattern, "at": at, "names": glob.names });
                if let Some(why) = &glob.why {
                    expanded["why"] = serde_json::json!(why);
                }
                if glob.predicted {
                    expanded["predicted"] = serde_json::json!(true);
                }
                expanded
            })
            .collect();
        if !globs.is_empty() {
            record["globs"] = serde_json::json!(globs);
        }
        record
    }

    /// Appends the record to `path`; a failure is reported on the caller's stderr.
    pub fn append(&self, path: &Path, caller: &Caller) {
        let written = OpenOptions::new().append(true).create(true).open(path).and_then(|mut file| {
            // `--stats /dev/stderr` on the progress line's terminal.
            let _paused = super::progress::pause(std::os::fd::AsFd::as_fd(&file));
            file.write_all(format!("{}\n", self.to_json()).as_bytes())
        });
        if let Err(e) = written {
            caller.warn(&format!("{}: cannot write statistics: {e}", path.display()));
        }
    }
}
