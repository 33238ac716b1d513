//! The planner: shell pipelines to placed DAGs with predicted bytes on every edge.
//!
//! `graph` builds each pipeline's DAG (commands fitted to annotations, redirections, files,
//! splits, byte predictions); `place` gives every node a location; `render` prints plans for
//! people (text, the script with placements written into it, Graphviz); the JSON form is the
//! serialised [`Plan`].

mod expand;
mod graph;
mod model;
mod place;
pub mod render;

use std::path::PathBuf;

use crate::config::Config;
use crate::fs::FileSystem;
use crate::library::Library;
use crate::shell::{Context, Pipeline, Script};

pub use expand::{Expanded, expand_word};
pub use model::*;

/// Everything the planner reads besides the script.
pub struct PlanContext<'a> {
    pub library: &'a Library,
    pub config: &'a Config,
    pub fs: &'a dyn FileSystem,
    /// The working directory relative paths resolve against.
    pub cwd: PathBuf,
    pub options: PlanOptions,
}

impl std::fmt::Debug for PlanContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanContext").field("cwd", &self.cwd).field("options", &self.options).finish_non_exhaustive()
    }
}

#[derive(Clone, Debug)]
pub struct PlanOptions {
    pub strategy: Strategy,
    /// The splitting factor: at most this many copies of a split command per mount.
    pub copies_per_mount: usize,
}

impl Default for PlanOptions {
    fn default() -> PlanOptions {
        PlanOptions { strategy: Strategy::CostBased, copies_per_mount: 1 }
    }
}

/// Plans every pipeline of a script.
pub fn plan_script(ctx: &PlanContext<'_>, script: &Script) -> Plan {
    let functions = function_names(script);
    Plan {
        pipelines: script.pipelines.iter().map(|p| plan_pipeline_in(ctx, p, &functions)).collect(),
        strategy: ctx.options.strategy,
    }
}

/// Plans one pipeline, knowing which names are the script's functions.
pub fn plan_pipeline_in(ctx: &PlanContext<'_>, pipeline: &Pipeline, functions: &[String]) -> PipelinePlan {
    let mut built = graph::build_pipeline(ctx, pipeline, functions);
    place::place(ctx, &mut built);
    built.plan
}

/// Names of the functions a script defines (they run in bash, never remotely).
pub fn function_names(script: &Script) -> Vec<String> {
    let mut names: Vec<String> = script
        .pipelines
        .iter()
        .flat_map(|p| &p.context)
        .filter_map(|c| if let Context::Function(name) = c { Some(name.clone()) } else { None })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests;
