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

use std::collections::BTreeSet;

// Placement runs for every pipeline of a script an editor opens: its many small maps hash with
// FxHash (their keys are node ids and places, not a client's input).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::planner::PlanContext;
use crate::planner::graph::Built;
use crate::planner::model::{Edge, Location, NodeId, NodeKind, Strategy, Stream, Why};

pub(crate) fn place(ctx: &PlanContext<'_>, built: &mut Built) {
    match ctx.options.strategy {
        Strategy::Greedy => greedy(built),
        Strategy::CostBased => cost_based(ctx, built),
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

/// The predicted time the plan's crossing edges take (see [`edge_cost`]): what the
/// cost-based placement minimises, for comparing two plans of one pipeline.
pub(crate) fn predicted_seconds(ctx: &PlanContext<'_>, built: &Built) -> f64 {
    let plan = &built.plan;
    let crossing = plan.edges.iter().filter(|e| e.crosses);
    crossing.map(|e| edge_cost(ctx, &plan.nodes[e.from].location, &plan.nodes[e.to].location, e)).sum()
}

/// A lower bound of [`predicted_seconds`] for the plan of the pipeline `split` (a split plan)
/// builds unsplit: there each command that reads files runs at one place, so of its files all
/// but those of one mount cross, each at least at its own mount's rate and round trip. With a
/// thousand mounts, building and placing the unsplit plan cost as much as the split one; when
/// this bound already exceeds the split plan's time, the unsplit plan cannot be chosen.
pub(crate) fn unsplit_at_least(ctx: &PlanContext<'_>, split: &Built) -> f64 {
    let plan = &split.plan;
    // Per command of the pipeline: seconds of its files' edges, in all and per mount.
    let mut per_command: HashMap<usize, (f64, HashMap<&str, f64>)> = HashMap::default();
    for e in &plan.edges {
        let (from, to) = (&plan.nodes[e.from], &plan.nodes[e.to]);
        let (NodeKind::ReadFile { .. }, Location::Mount(mount), NodeKind::Command { command, .. }) =
            (&from.kind, &from.location, &to.kind)
        else {
            continue;
        };
        let own = link(ctx, &from.location);
        let round_trip = if e.bytes > 0 || e.stream == Stream::File { own.rtt.as_secs_f64() } else { 0.0 };
        let seconds = e.bytes as f64 / own.bandwidth_bytes_per_sec.max(1.0) + round_trip;
        let (all, by_mount) = per_command.entry(*command).or_default();
        *all += seconds;
        *by_mount.entry(mount.as_str()).or_default() += seconds;
    }
    per_command.values().map(|(all, by_mount)| all - by_mount.values().copied().fold(0.0, f64::max)).sum()
}

/// Seconds `edge` takes between two locations: its bytes' transfer, and for a file named
/// across the network (made, removed, opened), the round trip that costs even when nothing is
/// read or written (`touch`, `rm`, `mkdir` of a mount's files from the client).
fn edge_cost(ctx: &PlanContext<'_>, a: &Location, b: &Location, edge: &Edge) -> f64 {
    transfer(ctx, a, b, edge.bytes, edge.bytes > 0 || edge.stream == Stream::File)
}

/// Seconds a file of `bytes` takes between two locations, its round trip counted (as
/// [`edge_cost`] counts a file's edge).
pub(crate) fn seconds_between(ctx: &PlanContext<'_>, a: &Location, b: &Location, bytes: u64) -> f64 {
    transfer(ctx, a, b, bytes, true)
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
    link_seconds(link(ctx, a), link(ctx, b), bytes, round_trip)
}

/// The link estimate of a location: the client's own, or its mount's.
fn link<'c>(ctx: &PlanContext<'c>, location: &Location) -> &'c crate::config::Link {
    match location {
        Location::Client => &ctx.config.client,
        Location::Mount(name) => ctx.config.mount_named(name).map_or(&ctx.config.client, |m| &m.link),
    }
}

/// The bandwidth between the ends of links `x` and `y`, bytes a second.
fn bandwidth(x: &crate::config::Link, y: &crate::config::Link) -> f64 {
    x.bandwidth_bytes_per_sec.min(y.bandwidth_bytes_per_sec).max(1.0)
}

/// Seconds to move `bytes` between the ends of links `x` and `y`, with a round trip or without.
fn link_seconds(x: &crate::config::Link, y: &crate::config::Link, bytes: u64, round_trip: bool) -> f64 {
    let bandwidth = bandwidth(x, y);
    let latency = if round_trip { x.rtt.max(y.rtt).as_secs_f64() } else { 0.0 };
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
        let mut known: HashMap<&Location, usize> = HashMap::default();
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
}

fn cost_based(ctx: &PlanContext<'_>, built: &mut Built) {
    let plan = &built.plan;
    let places = Places::of(ctx, plan);
    let candidates = &places.locations;
    let free = free_nodes(built);
    let is_free = |n: NodeId| !built.pinned[n];
    // Bytes between free nodes, and each free node's single free successor.
    let mut free_edges: HashMap<(NodeId, NodeId), u64> = HashMap::default();
    for e in plan.edges.iter().filter(|e| is_free(e.from) && is_free(e.to)) {
        *free_edges.entry((e.from, e.to)).or_default() += e.bytes;
    }
    let mut successor: HashMap<NodeId, NodeId> = HashMap::default();
    let mut to_client = HashSet::default();
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
    let mut children: HashMap<NodeId, Vec<(NodeId, u64)>> = HashMap::default();
    for (&(child, parent), &bytes) in &free_edges {
        if successor.get(&child) == Some(&parent) {
            children.entry(parent).or_default().push((child, bytes));
        }
    }
    for list in children.values_mut() {
        list.sort_unstable();
    }
    // Candidates grouped by their link: every candidate of a group costs alike to and from any
    // place but itself, so a node's costs over all candidates take one pass per group rather
    // than one per candidate (a split's copies bring a place per mount: with a thousand mounts,
    // a thousand candidates each costed from a thousand others made the placement quadratic).
    let groups = LinkGroups::of(&places);
    // The cost of a free node's edges to pinned nodes at each candidate: the bytes and round
    // trips to the pinned ends summed per group of places (exactly, as integers), less the
    // candidate's own place, which costs nothing.
    let local = |n: NodeId| -> Vec<f64> {
        let mut by_place: HashMap<usize, (u128, u64)> = HashMap::default();
        let to_pinned = |e: &&Edge| (e.from == n && !is_free(e.to)) || (e.to == n && !is_free(e.from));
        for e in incident[n].iter().map(|&i| &plan.edges[i]).filter(to_pinned) {
            let other = if e.from == n { e.to } else { e.from };
            let (bytes, round_trips) = by_place.entry(places.of_node[other]).or_default();
            *bytes += u128::from(e.bytes);
            *round_trips += u64::from(e.bytes > 0 || e.stream == Stream::File);
        }
        let mut by_group = vec![(0u128, 0u64); groups.members.len()];
        for (&place, &(bytes, round_trips)) in &by_place {
            let (group_bytes, group_round_trips) = &mut by_group[groups.of_place[place]];
            *group_bytes += bytes;
            *group_round_trips += round_trips;
        }
        (0..candidates.len())
            .map(|at| {
                let own = by_place.get(&at).copied().unwrap_or_default();
                let mut cost = 0.0;
                for (g, &(bytes, round_trips)) in by_group.iter().enumerate() {
                    let (bytes, round_trips) = if groups.of_place[at] == g {
                        (bytes - own.0, round_trips - own.1)
                    } else {
                        (bytes, round_trips)
                    };
                    if bytes == 0 && round_trips == 0 {
                        continue;
                    }
                    let (x, y) = (places.links[groups.members[g][0]], places.links[at]);
                    cost += bytes as f64 / bandwidth(x, y) + round_trips as f64 * link_seconds(x, y, 0, true);
                }
                cost
            })
            .collect()
    };
    // Less than one byte's cost: between placements that move the same bytes, a command that
    // reads files or another command's output stays by its data (its proxy takes the CPU, and a
    // reader that stops early, such as `head`, stops the stream where it starts); one that reads
    // neither stays at the client (a job for nothing costs a round trip). This looks at the
    // edges, not at their bytes, so that a file that is empty or not written yet when the
    // script is explained is placed as when it runs.
    let has_input = |n: NodeId| {
        incident[n].iter().map(|&i| &plan.edges[i]).any(|e| {
            e.to == n && matches!(plan.nodes[e.from].kind, NodeKind::ReadFile { .. } | NodeKind::Command { .. })
        })
    };
    let tie_break =
        |has_input: bool, at: &Location| -> f64 { if has_input == (*at == Location::Client) { 1e-12 } else { 0.0 } };
    // Children before parents: construction order is topological.
    let mut best: HashMap<NodeId, Vec<f64>> = HashMap::default();
    let mut choice: HashMap<(NodeId, usize), Vec<(NodeId, usize)>> = HashMap::default();
    for &n in &free {
        let local = local(n);
        // The mounts whose proxies may run it, as a set: asked of every candidate.
        let allowed_mounts: Option<HashSet<&str>> =
            built.allowed[n].as_ref().map(|mounts| mounts.iter().map(String::as_str).collect());
        let allowed = |at: &Location| match (&allowed_mounts, at) {
            (None, _) | (_, Location::Client) => true,
            (Some(mounts), Location::Mount(name)) => mounts.contains(name.as_str()),
        };
        let has_input = has_input(n);
        // Each child's costs at every candidate, ordered within each group of places.
        let node_children: Vec<(NodeId, u64, ChildCosts)> = children
            .get(&n)
            .into_iter()
            .flatten()
            .map(|&(child, bytes)| (child, bytes, ChildCosts::of(&best[&child], &groups)))
            .collect();
        let mut costs = Vec::with_capacity(candidates.len());
        for (li, at) in candidates.iter().enumerate() {
            if (to_client.contains(&n) || !allowed(at)) && *at != Location::Client {
                costs.push(f64::INFINITY);
                continue;
            }
            let mut cost = local[li] + tie_break(has_input, at);
            let mut picks = Vec::new();
            for (child, bytes, child_costs) in &node_children {
                let (pick, child_cost) = child_costs.cheapest_to(li, *bytes, &places, &groups, &best[child]);
                cost += child_cost;
                picks.push((*child, pick));
            }
            costs.push(cost);
            choice.insert((n, li), picks);
        }
        best.insert(n, costs);
    }
    let free_set: HashSet<NodeId> = free.iter().copied().collect();
    let mut assigned: HashMap<NodeId, usize> = HashMap::default();
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

/// The places of a [`Places`] grouped by their link's figures: between a place of a group and
/// any other place, every place of the group costs the same.
struct LinkGroups {
    /// Each group's places, in ascending order.
    members: Vec<Vec<usize>>,
    /// Per place, its group.
    of_place: Vec<usize>,
}

impl LinkGroups {
    fn of(places: &Places<'_>) -> LinkGroups {
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut known: HashMap<(u64, std::time::Duration), usize> = HashMap::default();
        let mut of_place = Vec::with_capacity(places.links.len());
        for (place, link) in places.links.iter().enumerate() {
            let group = *known.entry((link.bandwidth_bytes_per_sec.to_bits(), link.rtt)).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            });
            members[group].push(place);
            of_place.push(group);
        }
        LinkGroups { members, of_place }
    }
}

/// A child's costs at every candidate place, each group's places ordered by cost (then by
/// place), with the lowest and second-lowest place among each prefix of that order: the child's
/// cheapest place for a parent at any candidate is then found per group, not per place.
struct ChildCosts {
    /// Per group: (cost, place) ascending, and per prefix the two lowest places in it.
    ordered: Vec<Vec<(f64, usize)>>,
    lowest: Vec<Vec<(usize, Option<usize>)>>,
}

impl ChildCosts {
    fn of(costs: &[f64], groups: &LinkGroups) -> ChildCosts {
        let mut ordered = Vec::with_capacity(groups.members.len());
        let mut lowest = Vec::with_capacity(groups.members.len());
        for members in &groups.members {
            let mut by_cost: Vec<(f64, usize)> = members.iter().map(|&p| (costs[p], p)).collect();
            by_cost.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut two: (usize, Option<usize>) = (usize::MAX, None);
            let prefixes = by_cost
                .iter()
                .map(|&(_, p)| {
                    two = if p < two.0 {
                        (p, (two.0 != usize::MAX).then_some(two.0))
                    } else {
                        (two.0, Some(two.1.map_or(p, |q| q.min(p))))
                    };
                    two
                })
                .collect();
            ordered.push(by_cost);
            lowest.push(prefixes);
        }
        ChildCosts { ordered, lowest }
    }

    /// The child's place and cost, its output of `bytes` sent to a parent at place `to`: the
    /// minimum over every place of its cost there plus the transfer, the lowest place on a tie
    /// (place 0 when none is finite), as a scan of every place in order finds it.
    fn cheapest_to(
        &self,
        to: usize,
        bytes: u64,
        places: &Places<'_>,
        groups: &LinkGroups,
        costs: &[f64],
    ) -> (usize, f64) {
        // A stream predicted to carry nothing (unread stdin, stderr) is set up with the others
        // and costs no round trip of its own.
        let round_trip = bytes > 0;
        let transfer = |g: usize| link_seconds(places.links[groups.members[g][0]], places.links[to], bytes, round_trip);
        // The cheapest of each group (its first place in cost order other than `to`), and the
        // place `to` itself, where the transfer costs nothing.
        let mut least = costs[to] + 0.0;
        let mut per_group = Vec::with_capacity(self.ordered.len());
        for (g, by_cost) in self.ordered.iter().enumerate() {
            let first = by_cost.iter().find(|&&(_, p)| p != to);
            let sum = first.map(|&(cost, _)| cost + transfer(g));
            if let Some(sum) = sum {
                least = least.min(sum);
            }
            per_group.push(sum);
        }
        if least == f64::INFINITY {
            return (0, f64::INFINITY);
        }
        let mut pick = if costs[to] + 0.0 == least { to } else { usize::MAX };
        for (g, sum) in per_group.into_iter().enumerate() {
            if sum != Some(least) {
                continue;
            }
            // Sums grow with costs: the places tying at the least are a prefix of the order.
            let extra = transfer(g);
            let tied = self.ordered[g].partition_point(|&(cost, _)| cost + extra <= least);
            let (first, second) = self.lowest[g][tied - 1];
            let lowest = if first != to { Some(first) } else { second };
            if let Some(place) = lowest {
                pick = pick.min(place);
            }
        }
        (pick, least)
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
    let mut suggestions: HashMap<NodeId, BTreeSet<Location>> = HashMap::default();
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
    use super::*;
    use crate::config::Link;

    /// The child's cheapest place for a parent at `to` by scanning every place in order, as the
    /// placement did before grouping the places by link.
    fn scanned(costs: &[f64], links: &[&Link], to: usize, bytes: u64) -> (usize, f64) {
        let transfer =
            |a: usize, b: usize| if a == b { 0.0 } else { link_seconds(links[a], links[b], bytes, bytes > 0) };
        (0..costs.len())
            .map(|ci| (ci, costs[ci] + transfer(ci, to)))
            .fold((0, f64::INFINITY), |acc, x| if x.1 < acc.1 { x } else { acc })
    }

    #[test]
    fn grouping_places_by_link_picks_what_scanning_every_place_picks() {
        let slow = Link::default();
        let fast = Link { bandwidth_bytes_per_sec: 1.25e9, rtt: std::time::Duration::from_micros(500) };
        let links: Vec<&Link> = (0..12).map(|i| if i == 1 { &fast } else { &slow }).collect();
        let places =
            Places { locations: vec![Location::Client; links.len()], links: links.clone(), of_node: Vec::new() };
        let groups = LinkGroups::of(&places);
        assert_eq!(groups.members.len(), 2);
        // Ties within a group and across groups, places no child may run (infinite), and costs
        // apart by less than a transfer's rounding swallows (a later place cheaper by an ulp
        // ties once the transfer is added: the lower place is still picked).
        let ulp = f64::EPSILON;
        let cases: Vec<Vec<f64>> = vec![
            vec![0.5, 0.5, 0.2, 0.2, 0.5, 0.2, f64::INFINITY, 0.2, 0.2, 0.9, 0.0, 0.2],
            vec![f64::INFINITY; 12],
            vec![0.0; 12],
            (0..12).map(|i| if i % 4 == 0 { f64::INFINITY } else { 2.0 - f64::from(i) * ulp }).collect(),
            (0..12).map(|i| if i % 2 == 0 { f64::INFINITY } else { 0.03 * f64::from(12 - i) }).collect(),
        ];
        for costs in &cases {
            let child = ChildCosts::of(costs, &groups);
            for bytes in [0, 1, 1_000, 50_000_000] {
                for to in 0..links.len() {
                    let grouped = child.cheapest_to(to, bytes, &places, &groups, costs);
                    assert_eq!(grouped, scanned(costs, &links, to, bytes), "costs {costs:?}, {bytes} bytes to {to}");
                }
            }
        }
    }
}
