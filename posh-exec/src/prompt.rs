//! `posh-exec -i`: bash's own interactive shell, its typed lines planned by a session that lives
//! as long as the prompt (docs/interactive.md).
//!
//! bash starts with an init file of posh's (`--rcfile`): it sources the user's `~/.bashrc` as
//! bash would, loads the builtin and gives it the session's socket (`__posh_run __prompt`), and
//! binds Enter to the builtin's `__line` before `accept-line` (`posh_handoff::bash_builtin`'s
//! `prompt`). For each line the builtin asks the session ([`answer`]): the session plans the
//! line with bash's live state, as a script's text (`offload::rewrite_line`), and answers with
//! the line rewritten, or nothing when it does not touch a mount. bash runs what it is given in
//! its own shell, so functions, aliases, `cd`, jobs and `$?` are bash's.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::{Context as _, Result};
use posh_core::planner::{self, PlanContext, PlanOptions, render};
use posh_exec::handoff;

use crate::offload::LiveState;
use crate::runtime::session::Session;

/// The key sequences the init file binds: the builtin's `__line`, `accept-line`, and the preview.
const LINE_KEY: &str = r"\e[99;1~";
const ACCEPT_KEY: &str = r"\e[99;2~";

/// When the preview is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Preview {
    /// On its key alone (Alt-p, `\ep`).
    Key,
    /// Also after every key that changes the line's words (a space, a `|`).
    Typing,
}

/// The text of the init file bash starts with (`bash --rcfile FILE -i`).
pub fn init_file(builtin: Option<&Path>, socket: &str, stats: &str, preview: Preview) -> String {
    let quote = |text: &str| format!("'{}'", text.replace('\'', "'\\''"));
    let mut text = String::from(
        "# posh's prompt (posh-exec -i): bash's interactive shell, its lines planned by posh.\n\
         # The user's ~/.bashrc, as bash -i reads it.\n\
         if [ -f ~/.bashrc ]; then . ~/.bashrc; fi\n",
    );
    let Some(builtin) = builtin else {
        text.push_str(
            "echo 'posh-exec: the posh builtin (libposh_handoff.so) is not installed: lines run as bash runs them' >&2\n",
        );
        return text;
    };
    let keymaps = ["emacs", "vi-insert", "vi-command"];
    text.push_str(&format!(
        "if builtin enable -f {} __posh_run 2>/dev/null && __posh_run __prompt {} {}; then\n",
        quote(&builtin.to_string_lossy()),
        quote(socket),
        quote(stats)
    ));
    for map in keymaps {
        text.push_str(&format!(
            "  bind -m {map} -x '\"{LINE_KEY}\": __posh_run __line \"$_\"'\n\
             \x20 bind -m {map} '\"{ACCEPT_KEY}\": accept-line'\n\
             \x20 bind -m {map} '\"\\C-m\": \"{LINE_KEY}{ACCEPT_KEY}\"'\n\
             \x20 bind -m {map} '\"\\C-j\": \"{LINE_KEY}{ACCEPT_KEY}\"'\n"
        ));
    }
    for map in ["emacs", "vi-insert"] {
        text.push_str(&format!("  bind -m {map} -x '\"\\ep\": __posh_run __preview \"$_\"'\n"));
        if preview == Preview::Typing {
            for key in [" ", "|"] {
                text.push_str(&format!(
                    "  bind -m {map} -x '\"{key}\": READLINE_LINE=\"${{READLINE_LINE:0:READLINE_POINT}}{key}${{READLINE_LINE:READLINE_POINT}}\"; ((READLINE_POINT++)); __posh_run __preview \"$_\"'\n"
                ));
            }
        }
    }
    // Before each prompt, after the user's own PROMPT_COMMAND: what a rewritten line turned off
    // is back even when it ran no call.
    text.push_str(
        "  PROMPT_COMMAND=(\"${PROMPT_COMMAND[@]}\" '__posh_run __on')\n\
         else\n\
         \x20 echo 'posh-exec: bash could not load the posh builtin: lines run as bash runs them' >&2\n\
         fi\n",
    );
    text
}

/// Answers a question of the builtin ([`handoff::ASK_LINE`], [`handoff::ASK_PREVIEW`]) on
/// `stream`; `false` when `args` is no question.
pub fn answer(session: &Session, handoff: &handoff::Handoff, stream: &UnixStream) -> bool {
    let Some(question) = handoff.args.first() else { return false };
    let preview = question == handoff::ASK_PREVIEW;
    if !preview && question != handoff::ASK_LINE {
        return false;
    }
    let line = handoff.args.get(1).map(|l| l.to_string_lossy().into_owned()).unwrap_or_default();
    let mut live = LiveState {
        cwd: handoff.cwd.clone(),
        variables: handoff
            .env
            .iter()
            .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v.to_str()?.to_string())))
            .collect::<BTreeMap<_, _>>(),
        defined: Vec::new(),
        aliases: BTreeMap::new(),
    };
    let mut words = handoff.args.iter().skip(2).map(|n| n.to_string_lossy().into_owned());
    for name in words.by_ref() {
        if name == handoff::ALIASES {
            break;
        }
        live.defined.push(name);
    }
    while let (Some(name), Some(value)) = (words.next(), words.next()) {
        live.aliases.insert(name, value);
    }
    let text = if preview {
        describe(session, &line, &live)
    } else {
        crate::offload::rewrite_line(&line, session.library(), &session.config, session.ratios(), &live)
            .unwrap_or_default()
    };
    let _ = handoff::answer_text(stream, text.as_bytes());
    true
}

/// The preview: where each pipeline of `line` would run and what it would move, in words, from
/// the plans `--explain` makes (`grep at logs, moves ~3 KB (bash would move 200 MB)`).
pub fn describe(session: &Session, line: &str, live: &LiveState) -> String {
    let library = session.library();
    let config = &session.config;
    if line.trim().is_empty() {
        return String::new();
    }
    // Planned as bash will run it: its aliases expanded (the sentences show the expansion).
    let handed = crate::offload::rewrite_line(line, library, config, session.ratios(), live).is_some();
    let expanded = crate::aliases::expand(line, &live.aliases);
    let line = expanded.as_ref().map_or(line, |e| e.text.as_str());
    let script = posh_core::shell::parse_as_bash(line, &mut crate::bash_syntax::check);
    if !script.errors.is_empty() {
        return "posh: the line does not parse yet: bash runs it as it is".to_string();
    }
    let ctx = PlanContext {
        library,
        config,
        fs: &crate::os_fs::OsFileSystem,
        cwd: live.cwd.clone(),
        options: PlanOptions::default(),
        ratios: session.ratios(),
    };
    let scope = crate::offload::live_scope(&ctx, line, &script, live);
    let mut out = Vec::new();
    for pipeline in &script.pipelines {
        let plan = planner::plan_pipeline_in(&ctx, pipeline, &scope);
        let text = line[pipeline.span.range()].trim();
        let [bash, posh, between] = render::pipeline_figures(&plan);
        let mut places: Vec<(String, Vec<String>)> = Vec::new();
        for node in &plan.nodes {
            let planner::NodeKind::Command { argv, .. } = &node.kind else { continue };
            let name = argv
                .first()
                .map_or("(compound command)".to_string(), |n| n.rsplit('/').next().unwrap_or(n).to_string());
            let at = match &node.location {
                planner::Location::Client => "here".to_string(),
                planner::Location::Mount(mount) => format!("at {mount}"),
            };
            match places.iter_mut().find(|(a, _)| *a == at) {
                Some((_, names)) if names.contains(&name) => {}
                Some((_, names)) => names.push(name),
                None => places.push((at, vec![name])),
            }
        }
        let where_ =
            places.iter().map(|(at, names)| format!("{} {at}", names.join(", "))).collect::<Vec<_>>().join("; ");
        let sentence = match &plan.stays_with_bash {
            Some(why) if plan.handed_parts.is_empty() => format!("{text}: bash runs it here ({why})"),
            _ if !handed || !plan.may_touch_a_mount() => format!("{text}: bash runs it here, it needs no proxy"),
            _ => format!("{text}: {where_}, moves {} (bash would move {bash})", render::posh_moves(posh, between)),
        };
        out.push(format!("posh: {sentence}"));
    }
    out.join("\n")
}

/// Writes the init file into the run's directory and returns its path.
pub fn write_init(dir: &Path, text: &str) -> Result<std::path::PathBuf> {
    let path = dir.join("prompt.bashrc");
    let mut file = std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    let _ = path.as_os_str().as_bytes();
    Ok(path)
}
