//! posh-exec: runs a bash script, placing pipelines next to their data.
//!
//! `--explain` prints the plan: where each command would run and the bytes each edge would
//! move. Running a script hands it to bash itself (exec, so signals, exit status, stdin and the
//! environment are bash's own): the right behaviour when nothing is remote. The configuration is
//! read either way, so a broken posh.toml is reported before anything runs.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Parser;
use posh_core::config::{Config, ProxyAddress};
use posh_core::planner::{PlanOptions, Strategy};

mod aliases;
mod bash_syntax;
mod dash_c;
mod explain;
mod offload;
mod os_fs;
mod prompt;
mod ratios;
mod runtime;
mod setup_cli;

#[derive(Parser, Debug)]
#[command(name = "posh-exec", version = posh_cli::VERSION, about = "Run a bash script, placing pipelines next to their data")]
struct Cli {
    /// Print the plan (placement and predicted bytes per pipeline) instead of running.
    #[arg(long)]
    explain: bool,
    /// The form of `--explain`: text, json (see docs/explain.md), dot (Graphviz's input) or
    /// svg and png (drawn by Graphviz's `dot`, which must be installed).
    #[arg(long, value_enum, default_value = "text", requires = "explain")]
    format: explain::Format,
    /// Placement: cost-based (default) or greedy (the paper's algorithm).
    #[arg(long, value_enum, default_value = "cost-based")]
    placement: Placement,
    /// At most this many copies of a split command per mount.
    #[arg(long, default_value_t = 1, value_name = "N")]
    copies_per_mount: usize,
    /// Print this client's identity (created on first use), for a proxy's authorized-clients
    /// file, and exit.
    #[arg(long, exclusive = true)]
    print_identity: bool,
    /// Print a posh.toml for the networked filesystems mounted here (NFS, sshfs, SMB/CIFS, from
    /// /proc/self/mountinfo), with link estimates measured on the spot, and exit.
    #[arg(long, conflicts_with_all = ["explain", "print_rewritten", "stats", "check", "command", "args"])]
    suggest_config: bool,
    /// With --suggest-config: read this mount table instead (another process's
    /// /proc/PID/mountinfo, say).
    #[arg(long, value_name = "FILE", requires = "suggest_config")]
    mountinfo: Option<PathBuf>,
    /// Check each mount of the configuration: its proxy answers, is the one pinned, sees the
    /// client's files; measure its link. Exit status 0 when all are good, 1 when one is not.
    #[arg(long, conflicts_with_all = ["explain", "print_rewritten", "stats", "command", "args"])]
    check: bool,
    /// Print the script as bash will run it (pipelines handed to the posh runtime rewritten into
    /// runtime calls) instead of running it.
    #[arg(long, conflicts_with = "explain")]
    print_rewritten: bool,
    /// Append one JSON line per pipeline run by the posh runtime to FILE (a regular file is emptied
    /// first; `/dev/stderr` works too): its line, where each command ran, the statuses, and the
    /// bytes that crossed to and from each proxy.
    #[arg(long, value_name = "FILE", conflicts_with = "explain")]
    stats: Option<PathBuf>,
    /// A status line on stderr while remote work runs for more than a second: what each mount's
    /// proxy read and what crossed the network. `auto`: when stderr is a terminal and TERM is set
    /// and not `dumb`.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    progress: runtime::progress::When,
    /// The configuration file (else $POSH_CONFIG, the nearest posh.toml, ~/.config/posh/posh.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve mount NAME through ADDRESS instead of the `proxy` posh.toml gives it: `host:port`,
    /// `ssh://[user@]host[:port]` or `embedded`. May be given once per mount.
    #[arg(long = "proxy", value_name = "NAME=ADDRESS", value_parser = proxy_override)]
    proxies: Vec<(String, ProxyAddress)>,
    /// Extra annotation files, checked and loaded after the shipped library.
    #[arg(long = "annotations", value_name = "FILE")]
    annotations: Vec<PathBuf>,
    /// Run COMMANDS instead of a script file, as `bash -c`: every word after COMMANDS is `$0` (NAME,
    /// else `bash`) and the arguments, `--` included.
    #[arg(short = 'c', value_name = "COMMANDS", allow_hyphen_values = true)]
    command: Option<String>,
    /// The script (or, with -c, `$0`), then its arguments. Everything after the script belongs
    /// to it, `-h` and `--version` included.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "SCRIPT [ARGS]")]
    args: Vec<String>,
    /// Open bash's own interactive prompt (your ~/.bashrc, history, completion, jobs), each typed
    /// line's pipelines that touch a mount run next to their data (docs/interactive.md). The
    /// default without a script when standard input and error are a terminal.
    #[arg(short = 'i', long = "interactive", conflicts_with_all = ["explain", "print_rewritten", "command", "args", "check", "suggest_config"])]
    interactive: bool,
    /// At the prompt: show where a line would run and what it would move on Alt-p (`key`), or
    /// also as it is typed, at each space and `|` (`typing`).
    #[arg(long, value_enum, value_name = "WHEN", default_value = "key")]
    preview: prompt::Preview,
    /// `-c -- COMMANDS`: bash gets the `--` too.
    #[arg(skip)]
    dashes: bool,
}

/// `NAME=ADDRESS` of `--proxy`.
fn proxy_override(text: &str) -> Result<(String, ProxyAddress), String> {
    let (name, address) =
        text.split_once('=').ok_or_else(|| format!("expected NAME=ADDRESS (`logs=ssh://storage`), found `{text}`"))?;
    Ok((name.to_string(), ProxyAddress::parse(address)?))
}

/// `config` with the mounts `--proxy` names served through the addresses it gives.
fn override_proxies(mut config: Config, overrides: &[(String, ProxyAddress)]) -> Result<Config> {
    for (name, address) in overrides {
        let known = || config.mounts.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ");
        let Some(index) = config.mounts.iter().position(|m| &m.name == name) else {
            let from = config.origin.as_ref().map_or("the configuration".to_string(), |p| p.display().to_string());
            let mounts = if config.mounts.is_empty() { "none".to_string() } else { known() };
            anyhow::bail!("--proxy {name}=...: {from} has no mount named `{name}` (its mounts: {mounts})");
        };
        let mount = &mut config.mounts[index];
        if !matches!(address, ProxyAddress::Ssh { .. }) {
            mount.proxy_program = None;
        }
        mount.proxy = address.clone();
    }
    Ok(config)
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Placement {
    CostBased,
    Greedy,
}

fn main() -> ExitCode {
    // `__run` is how a rewritten script hands a pipeline over; its words are not options.
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if raw.get(1).is_some_and(|a| a == "__run") {
        return ExitCode::from(runtime::trampoline(&raw[2..]));
    }
    // `__probe` is a measurement of `--suggest-config` or `--check` in a child of its own.
    if raw.get(1).is_some_and(|a| a == "__probe") {
        return ExitCode::from(setup_cli::probe_child(&raw[2..]));
    }
    let cli = parse(raw);
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("posh-exec: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// What the script runs with, as the value analysis takes it (`--explain` and the rewrite
/// alike, so that both plan what the run gets): this environment, and the words after the
/// script (after `$0` with -c).
fn run_inputs(args: &[String]) -> posh_core::values::Inputs {
    let all: Vec<_> = std::env::vars_os().collect();
    let env: std::collections::BTreeMap<String, String> =
        all.iter().filter_map(|(k, v)| Some((k.to_str()?.to_string(), v.to_str()?.to_string()))).collect();
    posh_core::values::Inputs {
        // A variable posh cannot read as text is not unset: then none is known unset.
        env_complete: env.len() == all.len(),
        env,
        args: Some(args.get(1..).unwrap_or_default().to_vec()),
    }
}

/// posh-exec's command line, with `-c COMMANDS [NAME [ARGS...]]` read as `bash -c` reads it (see
/// `dash_c`).
fn parse(raw: Vec<std::ffi::OsString>) -> Cli {
    use clap::CommandFactory as _;
    let command = Cli::command();
    let takes_value =
        |name: &str| command.get_arguments().any(|a| a.get_long() == Some(name) && a.get_action().takes_values());
    let split = dash_c::split(raw, takes_value);
    let mut cli = posh_cli::parse_from::<Cli>(split.options);
    if let Some(words) = split.after_command {
        let words: Option<Vec<String>> = words.into_iter().map(|w| w.into_string().ok()).collect();
        let Some(words) = words else {
            eprintln!("posh-exec: an argument after -c's command string is not UTF-8");
            std::process::exit(2);
        };
        cli.args = words;
        cli.dashes = split.dashes;
    }
    cli
}

/// The shipped library plus `--annotations` files, whose diagnostics are printed; the flag is
/// true when one of them has an error.
fn load_library(files: &[PathBuf]) -> Result<(posh_core::library::Library, bool)> {
    let mut library = posh_core::library::Library::builtin();
    let mut errors = false;
    for path in files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read annotation file", path.display()))?;
        let diagnostics = library.add_source(&path.display().to_string(), &text);
        let index = posh_core::LineIndex::new(&text);
        for d in &diagnostics {
            let (line, col) = index.line_col(&text, d.span.start);
            eprintln!("{}:{line}:{col}: {}[{}]: {}", path.display(), d.severity.as_str(), d.code.as_str(), d.message);
            errors |= d.severity == posh_core::Severity::Error;
        }
    }
    Ok((library, errors))
}

/// Where the client keeps its identity and pinned proxies: `$XDG_STATE_HOME/posh/`, else
/// `~/.local/state/posh/`.
fn client_state() -> Result<runtime::session::ClientState> {
    let state =
        posh_core::config::xdg_base_dir(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"), ".local/state")
            .context("neither XDG_STATE_HOME nor HOME is set: nowhere to keep the client identity")?
            .join("posh");
    Ok(runtime::session::ClientState {
        identity_dir: state.join("identity"),
        known_proxies: state.join("known_proxies"),
        ratios: ratios::file(&state),
        lingering: state.join("lingering"),
    })
}

/// What earlier runs measured, for every plan of this run; none without a state directory.
fn measured_ratios() -> posh_core::planner::measured::Ratios {
    client_state().map(|state| ratios::load(&state.ratios)).unwrap_or_default()
}

/// The `--stats` file, made empty when it is a regular file, as an absolute path.
fn stats_file(path: Option<&std::path::Path>) -> Result<Option<String>> {
    let Some(path) = path else { return Ok(None) };
    // A regular file starts empty; anything else (`--stats /dev/stderr`, a link to a
    // terminal, a pipe or whatever the caller's stderr is) is only appended to.
    let regular = std::fs::symlink_metadata(path).map_or(true, |m| m.is_file());
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .truncate(false)
        .open(path)
        .and_then(|file| if regular { file.set_len(0) } else { Ok(()) })
        .with_context(|| format!("{}: cannot write statistics", path.display()))?;
    Ok(Some(std::path::absolute(path)?.to_string_lossy().into_owned()))
}

/// posh's prompt: bash's interactive shell with a session beside it for as long as it lives.
fn run_prompt(
    cli: &Cli,
    config: Config,
    library: Arc<posh_core::library::Library>,
    stats: Option<String>,
) -> Result<u8> {
    let socket = runtime::session::RuntimeSocket::bind()?;
    let builtin = posh_exec::bash_builtin();
    let init = prompt::init_file(builtin.as_deref(), socket.path(), stats.as_deref().unwrap_or_default(), cli.preview);
    let init = prompt::write_init(socket.directory(), &init)?;
    let mut bash = runtime::session::bash_beside_runtime();
    bash.arg("--rcfile").arg(&init).arg("-i");
    let state = client_state()?;
    let ratios = measured_ratios();
    let _line = runtime::progress::start(cli.progress, &config.mounts);
    // Separate proxies are connected while bash starts: the first line finds them warm.
    let mounts: Vec<usize> = (0..config.mounts.len()).collect();
    let started = runtime::session::start(config, library, ratios, state, socket.directory())?;
    runtime::session::run_script(started, socket, bash, &mounts, true)
}

fn run(cli: Cli) -> Result<u8> {
    if cli.print_identity {
        let dir = client_state()?.identity_dir;
        let identity = posh_exec::remote::identity::Identity::load_or_create(&dir, "posh-exec")?;
        println!("{}", identity.fingerprint());
        eprintln!("posh-exec: identity in {} (add the line above to a proxy's authorized-clients file)", dir.display());
        return Ok(0);
    }
    if cli.suggest_config {
        return setup_cli::suggest_config(cli.mountinfo.as_deref());
    }
    let config = override_proxies(explain::load_config(cli.config.as_deref())?, &cli.proxies)?;
    if cli.check {
        return setup_cli::check(config, &cli.annotations);
    }
    // Nothing mounted and nothing to check: bash runs the script as it is, at no extra cost.
    let needs_library = cli.explain || cli.print_rewritten || !config.mounts.is_empty() || !cli.annotations.is_empty();
    let (library, annotation_errors) =
        if needs_library { load_library(&cli.annotations)? } else { (posh_core::library::Library::empty(), false) };
    // One library for the plan and the run's runtime: what one parses, the other need not.
    let library = Arc::new(library);
    if cli.explain {
        let (name, source) = match (&cli.command, cli.args.first()) {
            (Some(commands), _) => ("-c".to_string(), commands.clone()),
            (None, Some(script)) => {
                let source =
                    std::fs::read_to_string(script).with_context(|| format!("{script}: cannot read the script"))?;
                (script.clone(), source)
            }
            (None, None) => {
                anyhow::bail!("no script given (usage: posh-exec --explain SCRIPT, or -c COMMANDS)")
            }
        };
        let strategy = match cli.placement {
            Placement::CostBased => Strategy::CostBased,
            Placement::Greedy => Strategy::Greedy,
        };
        let options = PlanOptions { strategy, copies_per_mount: cli.copies_per_mount, ..PlanOptions::default() };
        let inputs = run_inputs(&cli.args);
        let ratios = measured_ratios();
        // The plan asks the mounts' proxies what the run's plans ask them (see `explain::run`).
        let remote = config.mounts.iter().any(|m| matches!(m.proxy, posh_core::config::ProxyAddress::Remote { .. }));
        let socket = remote.then(runtime::session::RuntimeSocket::bind).transpose().ok().flatten();
        let started = match (&socket, client_state()) {
            (Some(socket), Ok(state)) => {
                runtime::session::start(config.clone(), Arc::clone(&library), ratios.clone(), state, socket.directory())
                    .ok()
            }
            _ => None,
        };
        let planning = started.as_ref().map(|s| runtime::metadata::Planning::before_the_script(&s.session, false));
        let code =
            explain::run(&name, &source, &inputs, &library, &config, &ratios, options, cli.format, planning.as_ref());
        drop(planning);
        if let Some(started) = started {
            started.end();
        }
        let code = code?;
        return Ok(if annotation_errors { code.max(1) } else { code });
    }
    let stats = stats_file(cli.stats.as_deref())?;
    let interactive = cli.interactive || {
        use std::io::IsTerminal as _;
        cli.command.is_none()
            && cli.args.is_empty()
            && std::io::stdin().is_terminal()
            && std::io::stderr().is_terminal()
    };
    if interactive {
        return run_prompt(&cli, config, library, stats);
    }
    let (name, source) = match (&cli.command, cli.args.first()) {
        (Some(commands), _) => {
            // As `bash -c COMMANDS` without NAME, whose messages then say `bash:`.
            (cli.args.first().cloned().unwrap_or_else(|| "bash".into()), Some(commands.clone()))
        }
        (None, Some(script)) if !needs_library => (script.clone(), None),
        // An unreadable script is bash's to report, in bash's words.
        (None, Some(script)) => (script.clone(), std::fs::read_to_string(script).ok()),
        (None, None) => {
            anyhow::bail!("no script given (usage: posh-exec SCRIPT [ARGS...] or posh-exec -c COMMANDS)")
        }
    };
    // The runtime's socket exists before the rewrite, which names it.
    let socket = (needs_library && !cli.print_rewritten).then(runtime::session::RuntimeSocket::bind).transpose()?;
    let socket_path = socket.as_ref().map(|s| s.path());
    let ratios = if needs_library { measured_ratios() } else { Default::default() };
    // A script file runs as bash's own script file, with the fallback beside it in the run's
    // directory (not for `-c`, which bash runs as text, nor for --print-rewritten, which has no run).
    let fallback = socket.as_ref().map(|s| offload::script_paths(s.directory()).1);
    let file = match (&cli.command, &fallback) {
        (None, Some(fallback)) => Some(offload::ScriptFile { name: &name, fallback }),
        _ => None,
    };
    // The run's session starts before the script is planned: the plan's questions about the
    // mounts' files go to their proxies, on the connections the run then uses.
    let started = match (&socket, &source) {
        (Some(socket), Some(_)) if needs_library && !config.mounts.is_empty() => Some(runtime::session::start(
            config.clone(),
            Arc::clone(&library),
            ratios.clone(),
            client_state()?,
            socket.directory(),
        )?),
        _ => None,
    };
    let rewritten = source.as_deref().filter(|_| needs_library).and_then(|source| {
        let planning = started.as_ref().map(|s| runtime::metadata::Planning::before_the_script(&s.session, true));
        let inputs = run_inputs(&cli.args);
        offload::rewrite(
            source,
            &library,
            &config,
            &ratios,
            &inputs,
            stats.as_deref(),
            socket_path,
            file,
            planning.as_ref(),
        )
    });
    if cli.print_rewritten {
        let text = rewritten.map(|r| r.text).or(source).unwrap_or_default();
        print!("{}", text.replace('\u{1f}', "␟"));
        return Ok(0);
    }
    let mut bash = Command::new("bash");
    match (&cli.command, rewritten) {
        (_, Some(hand_over)) => {
            let rest = if cli.command.is_some() { cli.args.get(1..).unwrap_or_default() } else { &cli.args[1..] };
            // posh-exec stays beside bash as the run's runtime.
            let socket = socket.context("a rewritten script comes with the runtime's socket")?;
            let started = started.context("a rewritten script comes with the run's session")?;
            let mut bash = runtime::session::bash_beside_runtime();
            offload::hand_to_bash(&mut bash, &hand_over, socket.directory(), &name, rest)?;
            // Started before bash, so that every pipeline's jobs count in it.
            let _line = runtime::progress::start(cli.progress, &config.mounts);
            return runtime::session::run_script(started, socket, bash, &hand_over.mounts, hand_over.background);
        }
        (Some(commands), None) => bash.arg("-c").args(cli.dashes.then_some("--")).arg(commands).args(&cli.args),
        (None, None) => bash.args(&cli.args),
    };
    // Bash runs the script alone, and exec runs no destructor: the proxies asked about the
    // script learn that this client is gone, and the runtime's directory goes now.
    if let Some(started) = started {
        started.end();
    }
    drop(socket);
    let error = bash.exec();
    Err(error).context("cannot start bash")
}
