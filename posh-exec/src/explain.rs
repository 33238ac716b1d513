//! `posh-exec --explain`: the plan of a script, without running it.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;

use anyhow::{Context as _, Result};
use posh_core::config::Config;
use posh_core::library::Library;
use posh_core::planner::measured::Ratios;
use posh_core::planner::{self, PlanContext, PlanOptions, render};

use crate::os_fs::OsFileSystem;

mod graphviz;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Dot,
    Svg,
    Png,
}

/// Prints the plan of the script run with `inputs` (its environment and arguments, as the run
/// would get them: words that read them are planned with their values); returns the exit status
/// (2 when the script has a syntax error, as bash; bash is asked as a run asks it, see
/// `offload::rewrite`). What the plan needs to know of the mounts' files is asked of their
/// proxies through `planning`, as the run asks them (all the directories the script names at
/// once); of the mounts where a proxy does not answer, which is said on stderr.
#[allow(clippy::too_many_arguments)]
pub fn run(
    name: &str,
    source: &str,
    inputs: &posh_core::values::Inputs,
    library: &Library,
    config: &Config,
    ratios: &Ratios,
    options: PlanOptions,
    format: Format,
    planning: Option<&crate::runtime::metadata::Planning<'_>>,
) -> Result<u8> {
    // As the run parses and checks it: see `offload::rewrite`.
    let bash = &mut crate::bash_syntax::check;
    let script = posh_core::shell::parse_as_bash(source, bash);
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let fs: &dyn posh_core::fs::FileSystem = match planning {
        Some(planning) => {
            planning.list_ahead(&planner::directories_named(&script, &cwd));
            planning
        }
        None => &OsFileSystem,
    };
    let ctx = PlanContext { library, config, fs, cwd, options, ratios };
    let mut plan = planner::plan_script_given(&ctx, source, &script, inputs);
    for mount in planning.map(|p| p.unanswered()).unwrap_or_default() {
        eprintln!(
            "posh-exec: the proxy of mount {} did not answer; the plan asked the mount itself",
            config.mounts[mount].name
        );
    }
    let bash_rejects = script.bash_rejects.clone().or_else(|| plan.confirm_with_bash(source, &script, bash));
    // Made whole before anything is printed: a drawing that fails prints nothing.
    let out = match format {
        Format::Text => render::render_text(name, source, &plan).into_bytes(),
        Format::Json => {
            (serde_json::to_string_pretty(&render::ExplainDocument::new(name, source, &plan))? + "\n").into_bytes()
        }
        Format::Dot => render::render_dot(name, source, &plan).into_bytes(),
        Format::Svg => graphviz::draw(&render::render_dot(name, source, &plan), graphviz::Picture::Svg)?,
        Format::Png => {
            // As curl does: binary output would garble the terminal.
            anyhow::ensure!(
                !std::io::stdout().is_terminal(),
                "not writing a PNG to the terminal: redirect it to a file (> plan.png)"
            );
            graphviz::draw(&render::render_dot(name, source, &plan), graphviz::Picture::Png)?
        }
    };
    let lines = posh_core::LineIndex::new(source);
    // Where posh's parser found the error, with its column; else in bash's words, when bash
    // rejects what posh's parser read (as a run would say it).
    if let Some(message) = bash_rejects.as_ref().filter(|_| script.errors.is_empty()) {
        eprintln!("{name}: {message}");
    }
    for error in &script.errors {
        let (line, col) = lines.line_col(source, error.span.start);
        let message = &error.message;
        let prefix = if message.starts_with("syntax error") { "" } else { "syntax error: " };
        eprintln!("{name}:{line}:{col}: {prefix}{message}");
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&out).and_then(|()| stdout.flush()).context("cannot write the plan")?;
    Ok(if script.errors.is_empty() && bash_rejects.is_none() { 0 } else { 2 })
}

/// The configuration: `--config`, `$POSH_CONFIG`, the nearest `posh.toml`, the user's.
pub fn load_config(explicit: Option<&Path>) -> Result<Config> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let env = std::env::var_os("POSH_CONFIG").map(std::path::PathBuf::from);
    let user =
        posh_core::config::xdg_base_dir(std::env::var_os("XDG_CONFIG_HOME"), std::env::var_os("HOME"), ".config");
    Ok(posh_core::config::load(&OsFileSystem, explicit, env.as_deref(), &cwd, user.as_deref())?)
}
