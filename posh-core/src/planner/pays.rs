//! Whether handing a pipeline to proxies pays at all (issue 40, "do no harm"): the transfer model
//! of `place` counts bytes and round trips of the link, but a call of the runtime costs some
//! time of its own (planning bash's words, a stream to each proxy, a job there), while a command
//! at the client that opens a mount's file pays more than one round trip for it (the networked
//! filesystem looks the name up, opens, reads and closes). On a fast link with small files the
//! call costs more than the round trips it saves, and bash over the mount is faster: the
//! pipeline's commands then stay at the client, and the plan says why.

use crate::planner::PlanContext;
use crate::planner::graph::Built;
use crate::planner::model::{Location, NodeKind, Stream, Why};
use crate::planner::place;

/// What a call of the runtime costs beyond the link's round trips and bytes: measured with
/// `bench/cold-calls.sh` on the emulated datacenter link (0.5 ms): a call per file over 1,000
/// small files took posh-exec about 4.9 ms a file where bash over the mount took 3.5 ms, of which
/// about 1 ms is starting the command (both pay it) and 0.5 ms the link's round trip.
pub(crate) const CALL_SECONDS: f64 = 0.0034;

/// What the call a pipeline goes in costs it: a loop's pipelines sent to a proxy as one request
/// share the request's cost (`PlanOptions::pipelines_per_call`).
fn call_seconds(ctx: &PlanContext<'_>) -> f64 {
    CALL_SECONDS / ctx.options.pipelines_per_call.max(1) as f64
}

/// Round trips a command at the client spends on each file of a mount it opens through the
/// networked filesystem (sshfs: a lookup, an open, a read and a close; the attribute cache saves
/// some), where the transfer model counts one.
pub(crate) const MOUNT_ROUND_TRIPS_PER_FILE: u32 = 3;

/// `built` unless keeping every command of the pipeline at the client is predicted no slower,
/// its call's cost counted; then the plan `at_client` makes of the pipeline unsplit (`unsplit`
/// builds it), every command at the client for [`Why::DoesNotPay`].
pub(crate) fn unless_it_does_not_pay(ctx: &PlanContext<'_>, built: Built, unsplit: impl FnOnce() -> Built) -> Built {
    // A word only bash knows: where it runs is decided when it runs, with this rule too.
    let unknown = built.plan.nodes.iter().any(|n| matches!(n.why, Why::DependsOnShell(_)));
    if unknown || !at_a_proxy(&built) {
        return built;
    }
    let call = call_seconds(ctx);
    let offloaded = place::predicted_seconds(ctx, &built) + mount_round_trips(ctx, &built) + call;
    // Every file of a mount a command reads crosses to the client when the commands run there:
    // when that alone costs more than the call, the pipeline pays, and is not planned again (with
    // a thousand mounts, a second plan of the pipeline unsplit cost as much as the first).
    if at_client_at_least(ctx, &built) * (1.0 - 1e-9) > offloaded {
        return built;
    }
    let mut kept = unsplit();
    for n in 0..kept.plan.nodes.len() {
        if !kept.pinned[n] && matches!(kept.plan.nodes[n].kind, NodeKind::Command { .. }) {
            kept.pinned[n] = true;
            kept.plan.nodes[n].location = Location::Client;
        }
    }
    place::place(ctx, &mut kept);
    // A command a rule keeps at a proxy (its working directory lives there): nothing to compare.
    if at_a_proxy(&kept) {
        return built;
    }
    let at_client = place::predicted_seconds(ctx, &kept) + mount_round_trips(ctx, &kept);
    if at_client > offloaded {
        return built;
    }
    let share = match ctx.options.pipelines_per_call {
        1 => String::new(),
        n => format!(" (its share of a request of {n} pipelines)"),
    };
    let why = Why::DoesNotPay(format!(
        "predicted {} at the client through the mount, {} at a proxy plus the call's own {}{share}",
        millis(at_client),
        millis(offloaded - call),
        millis(call)
    ));
    for n in 0..kept.plan.nodes.len() {
        let node = &mut kept.plan.nodes[n];
        if matches!(node.kind, NodeKind::Command { .. }) && node.why == Why::Cheapest {
            node.why = why.clone();
        }
    }
    kept
}

/// A lower bound of what the pipeline planned in `built` is predicted to take with every command
/// at the client: each file of a mount some command reads, read once through the mount (its
/// bytes, its round trip and the mount's extra ones), whatever the plan splits.
fn at_client_at_least(ctx: &PlanContext<'_>, built: &Built) -> f64 {
    let plan = &built.plan;
    let mut read = vec![false; plan.nodes.len()];
    for e in &plan.edges {
        if matches!(plan.nodes[e.to].kind, NodeKind::Command { .. }) {
            read[e.from] = true;
        }
    }
    let extra = f64::from(MOUNT_ROUND_TRIPS_PER_FILE - 1);
    plan.nodes
        .iter()
        .filter(|n| read[n.id])
        .filter_map(|n| match (&n.kind, &n.location) {
            (NodeKind::ReadFile { size, .. }, at @ Location::Mount(name)) => {
                let mount = ctx.config.mount_named(name)?;
                let round_trip = mount.link.rtt.max(ctx.config.client.rtt).as_secs_f64();
                Some(place::seconds_between(ctx, at, &Location::Client, *size) + round_trip * extra)
            }
            _ => None,
        })
        .sum()
}

fn at_a_proxy(built: &Built) -> bool {
    built.plan.nodes.iter().any(|n| matches!(n.kind, NodeKind::Command { .. }) && n.location != Location::Client)
}

/// The round trips beyond the one the transfer model counts that commands at the client spend
/// opening files of mounts through the networked filesystem.
fn mount_round_trips(ctx: &PlanContext<'_>, built: &Built) -> f64 {
    let plan = &built.plan;
    let extra = f64::from(MOUNT_ROUND_TRIPS_PER_FILE - 1);
    plan.edges
        .iter()
        .filter(|e| e.crosses && e.stream == Stream::File)
        .filter_map(|e| {
            let (from, to) = (&plan.nodes[e.from], &plan.nodes[e.to]);
            match (&from.location, &to.location) {
                (Location::Mount(name), Location::Client) | (Location::Client, Location::Mount(name)) => {
                    ctx.config.mount_named(name).map(|m| m.link.rtt.max(ctx.config.client.rtt).as_secs_f64() * extra)
                }
                _ => None,
            }
        })
        .sum()
}

fn millis(seconds: f64) -> String {
    format!("{:.1} ms", seconds * 1e3)
}
