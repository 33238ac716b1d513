//! Placement: every node not pinned by its data (files, the script's streams) or by a rule
//! (builtins, unknown words, no annotation, split copies) gets a location.
//!
//! - `Greedy` is the paper's algorithm: along each path between two pinned nodes, cut at the
//!   edge with the fewest predicted bytes; nodes before the cut run with the first pinned node,
//!   after it with the second; a node two paths disagree on runs at the client, and so does a
//!   command that reads files on several mounts.
//! - `CostBased` minimises the predicted transfer time (bytes over the link's bandwidth, plus its
//!   round trip) over the whole DAG. Free nodes form trees (every command sends its output to
//!   one place), so dynamic programming over the trees finds the optimum exactly.

use std::collections::{BTreeSet, HashMap};

use crate::planner::PipelinePlan;
use crate::planner::PlanContext;
use crate::planner::graph::Built;
use crate::planner::model::{Edge, Location, NodeId, NodeKind, Strategy, Stream, Why};

pub(crate) fn place(ctx: &PlanContext<'_>, built: &mut Built) {
    match ctx.options.strategy {
        Strategy::Greedy => greedy(built),
        Strategy::CostBased => {
            cost_based(ctx, built);
            keep_what_does_not_pay(ctx, built);
        }
    }
    let plan = &mut built.plan;
    for edge in &mut plan.edges {
        let (from, to) = (&plan.nodes[edge.from], &plan.nodes[edge.to]);
        edge.crosses = from.location != to.location;
        // A file streamed to a command at another proxy, or a pipe between commands at two (or
        // into a merge at a proxy).
        edge.between_proxies = edge.crosses
            && matches!(from.kind, NodeKind::ReadFile { .. } | NodeKind::Command { .. })
            && matches!(to.kind, NodeKind::Command { .. } | NodeKind::Merge { .. })
            && matches!((&from.location, &to.location), (Location::Mount(_), Location::Mount(_)));
    }
    let moved = |between_proxies: bool| {
        let edges = plan.edges.iter().filter(|e| e.crosses && e.between_proxies == between_proxies);
        edges.map(|e| e.bytes).sum()
    };
    plan.posh_bytes = moved(false);
    plan.between_proxies_bytes = moved(true);
    // Under bash every command runs at the client, so every byte of a remote file crosses.
    plan.bash_bytes = plan
        .nodes
        .iter()
        .filter(|n| n.location != Location::Client)
        .map(|n| match n.kind {
            NodeKind::ReadFile { size, .. } => size,
            NodeKind::WriteFile { .. } => {
                plan.edges.iter().filter(|e| e.to == n.id).map(|e| e.bytes).max().unwrap_or(0)
            }
            _ => 0,
        })
        .sum();
}

/// What one job at a proxy costs the runtime besides the round trip of its streams: the call
/// planned, the request written, the job's directory, supervisor and sandbox set up at the proxy,
/// its commands started and their statuses sent back. From issue 40's measurement on the
/// emulated datacenter link (0.5 ms; `bench/cold-calls.sh` measures it): a loop of 1,000
/// `n=$(grep -c TODO "$f")` took posh 4.9 s with every `grep` at the proxy, bash 3.5 s with
/// every `grep` reading through the mount (two round trips, 1 ms, a file): a job cost 2.4 ms
/// where the shell's own part of an iteration is the same, 0.5 ms of it the round trip.
pub const JOB_SECONDS: f64 = 0.0019;

/// Round trips a file opened through a networked mount at the client waits for before its bytes
/// flow: its open, then its first read (or write). sshfs and NFS both pay them per file; a job
/// at the proxy pays one round trip for all of its files.
const MOUNT_FILE_ROUND_TRIPS: f64 = 2.0;

/// The predicted time of the plan (see [`seconds_placed`]): what the cost-based placement
/// minimises, for comparing two plans of one pipeline.
pub(crate) fn predicted_seconds(ctx: &PlanContext<'_>, built: &Built) -> f64 {
    let plan = &built.plan;
    seconds_placed(ctx, plan, &|n| &plan.nodes[n].location)
}

/// Seconds the plan takes with each node at `at(node)`: every crossing edge's transfer, and
/// [`JOB_SECONDS`] for each proxy that runs a job.
fn seconds_placed<'p>(ctx: &PlanContext<'_>, plan: &'p PipelinePlan, at: &dyn Fn(NodeId) -> &'p Location) -> f64 {
    let crossing = plan.edges.iter().map(|e| edge_cost(ctx, at(e.from), at(e.to), e)).sum::<f64>();
    crossing + jobs(plan, at).len() as f64 * JOB_SECONDS
}

/// The mounts whose proxies run a command (or a merge) of the plan with each node at `at(node)`.
fn jobs<'p>(plan: &'p PipelinePlan, at: &dyn Fn(NodeId) -> &'p Location) -> BTreeSet<&'p str> {
    let working = plan.nodes.iter().filter(|n| matches!(n.kind, NodeKind::Command { .. } | NodeKind::Merge { .. }));
    working
        .filter_map(|n| match at(n.id) {
            Location::Mount(name) => Some(name.as_str()),
            Location::Client => None,
        })
        .collect()
}

/// Seconds `edge` takes between two locations: its bytes' transfer, and for a file named
/// across the network (made, removed, opened), the round trip that costs even when nothing is
/// read or written (`touch`, `rm`, `mkdir` of a mount's files from the client); a file the
/// client opens through the mount waits for [`MOUNT_FILE_ROUND_TRIPS`].
fn edge_cost(ctx: &PlanContext<'_>, a: &Location, b: &Location, edge: &Edge) -> f64 {
    let file = edge.stream == Stream::File;
    let cost = transfer(ctx, a, b, edge.bytes, edge.bytes > 0 || file);
    if file && a != b && (*a == Location::Client || *b == Location::Client) {
        cost + (MOUNT_FILE_ROUND_TRIPS - 1.0) * transfer(ctx, a, b, 0, true)
    } else {
        cost
    }
}

/// The commands the cost-based placement put at proxies run at the client instead when that is
/// predicted faster: a job costs [`JOB_SECONDS`] besides its round trip, which a small file
/// on a fast link does not win back (`grep -c TODO note.txt` on a datacenter link). The reason
/// says what both would cost, for `--explain` and `--stats`.
fn keep_what_does_not_pay(ctx: &PlanContext<'_>, built: &mut Built) {
    let plan = &built.plan;
    let moved: Vec<NodeId> = free_nodes(built)
        .into_iter()
        .filter(|&n| plan.nodes[n].location != Location::Client)
        .filter(|&n| matches!(plan.nodes[n].kind, NodeKind::Command { .. } | NodeKind::Merge { .. }))
        .collect();
    if moved.is_empty() {
        return;
    }
    let placed = |n: NodeId| &plan.nodes[n].location;
    let here = |n: NodeId| if moved.contains(&n) { &Location::Client } else { &plan.nodes[n].location };
    let (away, near) = (seconds_placed(ctx, plan, &placed), seconds_placed(ctx, plan, &here));
    if near >= away {
        return;
    }
    let proxies: Vec<&str> = jobs(plan, &placed).into_iter().collect();
    let detail = format!(
        "a job at {} is predicted to take {} (its start {} and the data's round trips), running it here through \
         the mount {}",
        proxies.join(", "),
        milliseconds(away),
        milliseconds(JOB_SECONDS * proxies.len() as f64),
        milliseconds(near),
    );
    for n in moved {
        built.plan.nodes[n].location = Location::Client;
        built.plan.nodes[n].why = Why::DoesNotPay(detail.clone());
    }
}

fn milliseconds(seconds: f64) -> String {
    format!("{:.1} ms", seconds * 1e3)
}

/// Whether node `n` may run `at` (the planner's reach rules).
pub(crate) fn allowed(built: &Built, n: NodeId, at: &Location) -> bool {
    match (&built.allowed[n], at) {
        (None, _) | (_, Location::Client) => true,
        (Some(mounts), Location::Mount(name)) => mounts.contains(name),
    }
}

/// The indices of each node's edges, in and out.
fn incident_edges(plan: &crate::planner::PipelinePlan) -> Vec<Vec<usize>> {
    let mut incident = vec![Vec::new(); plan.nodes.len()];
    for (i, e) in plan.edges.iter().enumerate() {
        incident[e.from].push(i);
        if e.to != e.from {
            incident[e.to].push(i);
        }
    }
    incident
}

fn free_nodes(built: &Built) -> Vec<NodeId> {
    (0..built.plan.nodes.len()).filter(|&n| !built.pinned[n]).collect()
}

/// Seconds to move `bytes` between two locations, with a round trip or without.
fn transfer(ctx: &PlanContext<'_>, a: &Location, b: &Location, bytes: u64, round_trip: bool) -> f64 {
    if a == b {
        return 0.0;
    }
    let ends = (*a == Location::Client, *b == Location::Client);
    link_seconds(link(ctx, a), link(ctx, b), ends, bytes, round_trip)
}

/// The link estimate of a location: the client's own, or its mount's.
fn link<'c>(ctx: &PlanContext<'c>, location: &Location) -> &'c crate::config::Link {
    match location {
        Location::Client => &ctx.config.client,
        Location::Mount(name) => ctx.config.mount_named(name).map_or(&ctx.config.client, |m| &m.link),
    }
}

/// Seconds to move `bytes` between the ends of links `x` and `y` (`clients`: whether each end is
/// the client), with a round trip or without.
fn link_seconds(
    x: &crate::config::Link,
    y: &crate::config::Link,
    clients: (bool, bool),
    bytes: u64,
    round_trip: bool,
) -> f64 {
    let bandwidth = x.bandwidth_bytes_per_sec.min(y.bandwidth_bytes_per_sec).max(1.0);
    // Between the client and a mount, the mount's `rtt` is the round trip (it defaults to the
    // client's); between two proxies, the longer of theirs.
    let rtt = match clients {
        (true, _) => y.rtt,
        (_, true) => x.rtt,
        _ => x.rtt.max(y.rtt),
    };
    let latency = if round_trip { rtt.as_secs_f64() } else { 0.0 };
    bytes as f64 / bandwidth + latency
}

/// The places a cost-based placement chooses among (the client and every location a node of the
/// plan has), each with its link, and each node's place among them: costs between places are
/// then looked up by number, not by a mount's name (with a thousand mounts, a name look-up per
/// edge and candidate made the placement cubic).
struct Places<'c> {
    locations: Vec<Location>,
    links: Vec<&'c crate::config::Link>,
    /// Per node, the index of its location in `locations`.
    of_node: Vec<usize>,
}

impl<'c> Places<'c> {
    fn of(ctx: &PlanContext<'c>, plan: &crate::planner::PipelinePlan) -> Places<'c> {
        let mut locations: Vec<Location> = vec![Location::Client];
        let mut known: HashMap<&Location, usize> = HashMap::new();
        known.insert(&Location::Client, 0);
        let mut of_node = Vec::with_capacity(plan.nodes.len());
        for node in &plan.nodes {
            let index = *known.entry(&node.location).or_insert_with(|| {
                locations.push(node.location.clone());
                locations.len() - 1
            });
            of_node.push(index);
        }
        let links = locations.iter().map(|l| link(ctx, l)).collect();
        Places { locations, links, of_node }
    }

    /// Seconds to move `bytes` between places `a` and `b` (see [`transfer`]).
    fn transfer(&self, a: usize, b: usize, bytes: u64, round_trip: bool) -> f64 {
        if a == b {
            return 0.0;
        }
        // Place 0 is the client (see `of`).
        link_seconds(self.links[a], self.links[b], (a == 0, b == 0), bytes, round_trip)
    }
}

fn cost_based(ctx: &PlanContext<'_>, built: &mut Built) {
    let plan = &built.plan;
    let places = Places::of(ctx, plan);
    let candidates = &places.locations;
    let free = free_nodes(built);
    let is_free = |n: NodeId| !built.pinned[n];
    // Bytes between free nodes, and each free node's single free successor.
    let mut free_edges: HashMap<(NodeId, NodeId), u64> = HashMap::new();
    for e in plan.edges.iter().filter(|e| is_free(e.from) && is_free(e.to)) {
        *free_edges.entry((e.from, e.to)).or_default() += e.bytes;
    }
    let mut successor: HashMap<NodeId, NodeId> = HashMap::new();
    let mut to_client = std::collections::HashSet::new();
    for &(from, to) in free_edges.keys() {
        if successor.insert(from, to).is_some_and(|other| other != to) {
            // Two free successors break the tree shape; it only arises with the shell's own
            // plumbing, which runs at the client anyway.
            to_client.insert(from);
        }
    }
    // Each node's edges, and each free node's free children with the bytes they send it: looked
    // up per node and candidate, where a scan of every edge made a pipeline's placement grow
    // with the square of its length.
    let incident = incident_edges(plan);
    let mut children: HashMap<NodeId, Vec<(NodeId, u64)>> = HashMap::new();
    for (&(child, parent), &bytes) in &free_edges {
        if successor.get(&child) == Some(&parent) {
            children.entry(parent).or_default().push((child, bytes));
        }
    }
    for list in children.values_mut() {
        list.sort_unstable();
    }
    // The cost of a free node's edges to pinned nodes at each candidate: the pinned ends grouped
    // by place first (a command reading a thousand mounts' files has a thousand edges, each to
    // be costed at each of a thousand candidates otherwise).
    let local = |n: NodeId| -> Vec<f64> {
        let mut by_place: HashMap<usize, (u64, u32, u32)> = HashMap::new();
        let to_pinned = |e: &&Edge| (e.from == n && !is_free(e.to)) || (e.to == n && !is_free(e.from));
        for e in incident[n].iter().map(|&i| &plan.edges[i]).filter(to_pinned) {
            let other = if e.from == n { e.to } else { e.from };
            let (bytes, round_trips, files) = by_place.entry(places.of_node[other]).or_default();
            *bytes += e.bytes;
            *round_trips += u32::from(e.bytes > 0 || e.stream == Stream::File);
            *files += u32::from(e.stream == Stream::File);
        }
        let mut by_place: Vec<(usize, (u64, u32, u32))> = by_place.into_iter().collect();
        by_place.sort_unstable();
        (0..candidates.len())
            .map(|at| {
                by_place
                    .iter()
                    .map(|&(other, (bytes, round_trips, files))| {
                        // As `edge_cost`: a file the client opens through the mount waits for
                        // more round trips than one.
                        let through_mount = if (at == 0) != (other == 0) { MOUNT_FILE_ROUND_TRIPS - 1.0 } else { 0.0 };
                        let round_trips = f64::from(round_trips) + f64::from(files) * through_mount;
                        places.transfer(at, other, bytes, false) + round_trips * places.transfer(at, other, 0, true)
                    })
                    .sum()
            })
            .collect()
    };
    // Less than one byte's cost: between placements that move the same bytes, a command that
    // reads files or another command's output stays by its data (its proxy takes the CPU, and a
    // reader that stops early, such as `head`, stops the stream where it starts); one that reads
    // neither stays at the client (a job for nothing costs a round trip). This looks at the
    // edges, not at their bytes, so that a file that is empty or not written yet when the
    // script is explained is placed as when it runs.
    let tie_break = |n: NodeId, at: &Location| -> f64 {
        let has_input = incident[n].iter().map(|&i| &plan.edges[i]).any(|e| {
            e.to == n && matches!(plan.nodes[e.from].kind, NodeKind::ReadFile { .. } | NodeKind::Command { .. })
        });
        if has_input == (*at == Location::Client) { 1e-12 } else { 0.0 }
    };
    // Children before parents: construction order is topological.
    let mut best: HashMap<NodeId, Vec<f64>> = HashMap::new();
    let mut choice: HashMap<(NodeId, usize), Vec<(NodeId, usize)>> = HashMap::new();
    for &n in &free {
        let local = local(n);
        // The mounts whose proxies may run it, as a set: asked of every candidate.
        let allowed_mounts: Option<std::collections::HashSet<&str>> =
            built.allowed[n].as_ref().map(|mounts| mounts.iter().map(String::as_str).collect());
        let allowed = |at: &Location| match (&allowed_mounts, at) {
            (None, _) | (_, Location::Client) => true,
            (Some(mounts), Location::Mount(name)) => mounts.contains(name.as_str()),
        };
        let mut costs = Vec::with_capacity(candidates.len());
        for (li, at) in candidates.iter().enumerate() {
            if (to_client.contains(&n) || !allowed(at)) && *at != Location::Client {
                costs.push(f64::INFINITY);
                continue;
            }
            let mut cost = local[li] + tie_break(n, at);
            let mut picks = Vec::new();
            for &(child, bytes) in children.get(&n).into_iter().flatten() {
                let child_costs = &best[&child];
                // A stream predicted to carry nothing (unread stdin, stderr) is set up with the
                // others and costs no round trip of its own.
                let (pick, child_cost) = (0..candidates.len())
                    .map(|ci| (ci, child_costs[ci] + places.transfer(ci, li, bytes, bytes > 0)))
                    .fold((0, f64::INFINITY), |acc, x| if x.1 < acc.1 { x } else { acc });
                cost += child_cost;
                picks.push((child, pick));
            }
            costs.push(cost);
            choice.insert((n, li), picks);
        }
        best.insert(n, costs);
    }
    let free_set: std::collections::HashSet<NodeId> = free.iter().copied().collect();
    let mut assigned: HashMap<NodeId, usize> = HashMap::new();
    let mut stack: Vec<(NodeId, usize)> = Vec::new();
    for &root in free.iter().filter(|n| successor.get(n).is_none_or(|s| !free_set.contains(s)) || to_client.contains(n))
    {
        if assigned.contains_key(&root) {
            continue;
        }
        let costs = &best[&root];
        let pick = (0..candidates.len()).fold(0, |acc, i| if costs[i] < costs[acc] { i } else { acc });
        stack.push((root, pick));
    }
    while let Some((n, li)) = stack.pop() {
        if assigned.insert(n, li).is_some() {
            continue;
        }
        stack.extend(choice.get(&(n, li)).into_iter().flatten().copied());
    }
    for &n in &free {
        let li = assigned.get(&n).copied().unwrap_or(0);
        built.plan.nodes[n].location = candidates[li].clone();
        built.plan.nodes[n].why = Why::Cheapest;
    }
}

fn greedy(built: &mut Built) {
    let plan = &built.plan;
    let pinned = &built.pinned;
    // The paper sends a command that reads files on several mounts to the client.
    let mut several_mounts = Vec::new();
    for n in free_nodes(built) {
        let mounts: BTreeSet<&Location> = plan
            .edges
            .iter()
            .filter(|e| e.to == n && matches!(plan.nodes[e.from].kind, NodeKind::ReadFile { .. }))
            .map(|e| &plan.nodes[e.from].location)
            .filter(|l| **l != Location::Client)
            .collect();
        if mounts.len() > 1 {
            several_mounts.push(n);
        }
    }
    let is_fixed = |n: NodeId| pinned[n] || several_mounts.contains(&n);
    let location_of = |n: NodeId| {
        if several_mounts.contains(&n) { Location::Client } else { plan.nodes[n].location.clone() }
    };
    let mut suggestions: HashMap<NodeId, BTreeSet<Location>> = HashMap::new();
    // Every path from a fixed node through free nodes to the next fixed node.
    let mut stack: Vec<Vec<(NodeId, u64)>> =
        (0..plan.nodes.len()).filter(|&n| is_fixed(n)).map(|n| vec![(n, 0)]).collect();
    let incident = incident_edges(plan);
    while let Some(path) = stack.pop() {
        let (last, _) = *path.last().expect("paths are never empty");
        for e in incident[last].iter().map(|&i| &plan.edges[i]).filter(|e| e.from == last) {
            let mut next = path.clone();
            next.push((e.to, e.bytes));
            if !is_fixed(e.to) {
                stack.push(next);
                continue;
            }
            if next.len() < 3 {
                continue;
            }
            // Cut at the cheapest edge; on a tie, the later one keeps more work by the data.
            let cut = (1..next.len()).fold(1, |acc, i| if next[i].1 <= next[acc].1 { i } else { acc });
            let (source, sink) = (location_of(next[0].0), location_of(e.to));
            for (i, &(node, _)) in next.iter().enumerate().take(next.len() - 1).skip(1) {
                let side = if i < cut { source.clone() } else { sink.clone() };
                suggestions.entry(node).or_default().insert(side);
            }
        }
    }
    for n in free_nodes(built) {
        let side = suggestions.get(&n).filter(|sides| sides.len() == 1).and_then(|sides| sides.first());
        let side = side.filter(|side| allowed(built, n, side)).cloned();
        let node = &mut built.plan.nodes[n];
        if several_mounts.contains(&n) {
            node.location = Location::Client;
            node.why = Why::SeveralMounts;
            continue;
        }
        match side {
            Some(side) => {
                node.location = side;
                node.why = Why::GreedyCut;
            }
            None => {
                node.location = Location::Client;
                node.why = Why::GreedyConflict;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;
    use crate::fs::MemoryFileSystem;
    use crate::library::Library;
    use crate::planner::{Location, PlanContext, PlanOptions, Why, measured, plan_script};

    /// Where `grep -c TODO FILE` runs over a link of `rtt` and `bandwidth`, the file `size` bytes,
    /// and why.
    fn grep_count(rtt: &str, bandwidth: &str, size: u64) -> (Location, Why) {
        let config = format!(
            "[client]\nrtt = \"20ms\"\n\n[[mount]]\nname = \"d\"\npath = \"/mnt/d\"\nproxy = \"10.0.0.1:4433\"\n\
             rtt = \"{rtt}\"\nbandwidth = \"{bandwidth}\"\n"
        );
        let config = Config::parse(&config, Path::new("posh.toml")).unwrap();
        let mut fs = MemoryFileSystem::new();
        fs.add_file("/mnt/d/note.txt", size);
        let library = Library::builtin();
        let ratios = &measured::NO_RATIOS;
        let ctx = PlanContext {
            library: &library,
            config: &config,
            fs: &fs,
            cwd: "/mnt/d".into(),
            options: PlanOptions::default(),
            ratios,
        };
        let script = "grep -c TODO note.txt\n";
        let plan = plan_script(&ctx, script, &crate::shell::parse(script));
        let grep = plan.pipelines[0].copies_of(0).next().unwrap();
        (grep.location.clone(), grep.why.clone())
    }

    #[test]
    fn a_job_that_does_not_pay_for_itself_stays_at_the_client() {
        // A small file on a datacenter link: the job's own cost is more than the round trip it
        // spares, and the plan says what both would cost.
        let (at, why) = grep_count("0.5ms", "5Gbit", 2_000);
        assert_eq!(at, Location::Client);
        let Why::DoesNotPay(detail) = &why else { panic!("{why:?}") };
        assert_eq!(
            detail,
            "a job at d is predicted to take 2.4 ms (its start 1.9 ms and the data's round trips), running it here \
             through the mount 1.2 ms"
        );
        assert!(why.explain().ends_with("a job there does not pay, so it runs at the client"));
        // The same file over a WAN link, or a large one on the fast link: the job pays.
        assert_eq!(grep_count("20ms", "600Mbit", 2_000), (Location::Mount("d".into()), Why::Cheapest));
        assert_eq!(grep_count("0.5ms", "5Gbit", 50_000_000), (Location::Mount("d".into()), Why::Cheapest));
    }
}
