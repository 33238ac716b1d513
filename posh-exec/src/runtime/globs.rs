//! The globs of a call that bash passed unexpanded (`rewrite::MARK_GLOB`, chosen by
//! `planner::globs`), expanded before the pipeline is planned: by bash at the mount's proxy, all
//! of a call's patterns on one mount in one request (`Request::glob`), or, where no proxy
//! answers, by bash here with the same script (`posh_wire::glob::SCRIPT`), which lists the mount
//! as bash would have. Either way the names are bash's; what a pattern that matched nothing
//! becomes (itself, nothing under `nullglob`, bash's error under `failglob`) is decided here from
//! the caller's options, as bash decides it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};

use posh_core::config::Config;
use posh_core::planner::globs::{listed_dir, split_pattern};
use posh_exec::remote::protocol::{self, Request};
use posh_wire::glob::{self, ExpectedGlob, GlobRequest};
use std::sync::atomic::{AtomicBool, Ordering};

use super::PipelineCall;

/// A word bash passed as a pattern, with the caller's glob state (`rewrite::GLOB_STATE`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GlobWord {
    pub pattern: String,
    /// `set -f`: the word is itself.
    pub noglob: bool,
    pub nullglob: bool,
    pub failglob: bool,
    /// The [`glob::OPTIONS`] set.
    pub options: Vec<String>,
    pub globignore: String,
    pub locale: BTreeMap<String, String>,
}

impl GlobWord {
    /// Reads the words after a [`MARK_GLOB`](posh_core::rewrite::MARK_GLOB): the state, then the
    /// pattern.
    pub fn decode(words: &[OsString]) -> Result<GlobWord, String> {
        let text = |w: &OsString| w.to_str().map(str::to_string).ok_or("a glob's state is not UTF-8");
        let [flags, bashopts, globignore, lc_all, lc_collate, lc_ctype, lang, pattern] = words else {
            return Err("a glob without its state".into());
        };
        let bashopts = text(bashopts)?;
        let set: Vec<&str> = bashopts.split(':').collect();
        let mut locale = BTreeMap::new();
        for (name, value) in glob::LOCALE.iter().zip([lc_all, lc_collate, lc_ctype, lang]) {
            let value = text(value)?;
            if !value.is_empty() {
                locale.insert(name.to_string(), value);
            }
        }
        Ok(GlobWord {
            pattern: text(pattern)?,
            noglob: text(flags)?.contains('f'),
            nullglob: set.contains(&"nullglob"),
            failglob: set.contains(&"failglob"),
            // A `GLOBIGNORE` (the script's environment's: the planner leaves a script that sets
            // one to bash) turned `dotglob` on, which `$BASHOPTS` does not show.
            options: glob::OPTIONS
                .iter()
                .filter(|o| set.contains(o) || (**o == "dotglob" && !globignore.is_empty()))
                .map(|o| o.to_string())
                .collect(),
            globignore: text(globignore)?,
            locale,
        })
    }

    /// A request for this word's glob state, without patterns yet.
    fn request(&self) -> GlobRequest {
        GlobRequest {
            patterns: Vec::new(),
            options: self.options.clone(),
            globignore: self.globignore.clone(),
            locale: self.locale.clone(),
        }
    }
}

/// Where a call's globs were expanded, for `--stats`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobEnd {
    pub pattern: String,
    /// The mount whose proxy expanded it, or `None`: the client.
    pub mount: Option<String>,
    pub names: usize,
    /// Why at the client, when a proxy was meant to.
    pub why: Option<String>,
    /// Guessed from a listing the run kept, and confirmed by the proxy before the job ran
    /// (see [`predict`]), rather than asked first.
    pub predicted: bool,
}

/// Where one pattern is expanded.
#[derive(Debug, PartialEq, Eq)]
struct Place<'a> {
    /// The mount whose proxy expands it, if any, in `dir` (relative to the mount's path).
    mount: Option<usize>,
    dir: String,
    /// Where bash expands it at the client, when no proxy does.
    here: PathBuf,
    /// Why at the client, though on a mount.
    why_here: Option<String>,
    /// What bash matches there, and what goes before each name it gives.
    pattern: &'a str,
    prefix: &'a str,
}

impl<'a> Place<'a> {
    /// From the caller's working directory `cwd` when that is on the pattern's mount (bash
    /// there sees the whole names, as `GLOBIGNORE` must), else from the directory the pattern
    /// lists, its literal prefix put back before each name (then a `GLOBIGNORE` is matched
    /// here: the proxy would not see the prefix).
    fn of(pattern: &'a str, config: Option<&Config>, cwd: &Path, globignore: bool) -> Place<'a> {
        let at_client =
            Place { mount: None, dir: String::new(), here: cwd.to_path_buf(), why_here: None, pattern, prefix: "" };
        let (Some(config), Some((prefix, rest))) = (config, split_pattern(pattern)) else { return at_client };
        let listed = listed_dir(prefix, cwd);
        let Some(mount) = config.mount_index_for(&listed) else { return at_client };
        let relative = |dir: &Path| dir.strip_prefix(&config.mounts[mount].path).ok()?.to_str().map(str::to_string);
        let plain_prefix = !prefix.starts_with('/') && !prefix.split('/').any(|c| c == "..");
        if plain_prefix
            && config.mount_index_for(cwd) == Some(mount)
            && let Some(dir) = relative(cwd)
        {
            return Place { mount: Some(mount), dir, ..at_client };
        }
        let Some(dir) = relative(&listed) else { return at_client };
        let why_here = globignore.then(|| {
            "GLOBIGNORE matches whole names, and the working directory is not on the glob's mount".to_string()
        });
        Place { mount: Some(mount), dir, here: listed, why_here, pattern: rest, prefix }
    }
}

/// One batch: the patterns of one call that list one directory with one glob state.
struct Batch {
    /// The mount the directory lies on (`dir` relative to its path), if any.
    mount: Option<usize>,
    dir: String,
    /// The directory at the client.
    here: PathBuf,
    why_here: Option<String>,
    /// (command, argv index, the pattern's literal prefix)
    words: Vec<(usize, usize, String)>,
    request: GlobRequest,
}

/// Expands the globs of `call` (its commands' `globs`) in place, `cwd` being the caller's
/// working directory: a batch on a mount of `config` is asked of `at_proxy` (mount index and
/// request, answering the names or why not), any other, or one no proxy answered, is expanded
/// by bash here. Batches are made per listed directory and glob state.
pub async fn expand<F, Fut>(call: &mut PipelineCall, config: Option<&Config>, cwd: &Path, at_proxy: F)
where
    F: Fn(usize, Request) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Vec<Vec<u8>>>, String>>,
{
    let batches = batches(call, config, cwd);
    // Every mount's batch asked at once: asked one after another, a pipeline over 100 mounts
    // waited 100 round trips (and a bash started at each proxy) before it began.
    let asked = batches.iter().map(|batch| async {
        let (Some(mount), Some(config), None) = (batch.mount, config, &batch.why_here) else {
            return Answered { names: None, at: None, why: batch.why_here.clone(), predicted: false };
        };
        let request = Request {
            version: protocol::VERSION,
            cwd: batch.dir.clone(),
            glob: Some(batch.request.clone()),
            ..Request::default()
        };
        let name = config.mounts[mount].name.clone();
        let (names, at, why) = match at_proxy(mount, request).await {
            Ok(names) if names.len() == batch.words.len() => (Some(names), Some(name), None),
            Ok(_) => (None, None, Some(format!("the proxy of @{name} answered another number of patterns"))),
            Err(e) => (None, None, Some(format!("the proxy of @{name}: {e}"))),
        };
        Answered { names, at, why, predicted: false }
    });
    let answers = futures_util::future::join_all(asked).await;
    substitute(call, batches, answers);
}

/// A call's globs as [`predict`] guessed them: the proxy of `mount` checks them before the job.
#[derive(Debug)]
pub struct Expected {
    pub mount: usize,
    pub globs: Vec<ExpectedGlob>,
    /// The names expected of each of `globs`, per pattern (to add patterns to one).
    answers: Vec<Vec<Vec<Vec<u8>>>>,
    /// The proxy did not run the job (the names differ, or it could not check them): nothing
    /// of the call ran, and it is planned again with the names asked.
    unmet: AtomicBool,
}

impl Expected {
    pub fn unmet(&self) -> bool {
        self.unmet.load(Ordering::Relaxed)
    }

    pub fn set_unmet(&self) {
        self.unmet.store(true, Ordering::Relaxed);
    }

    /// Adds that the name `name` in `dir` (relative to the mount's path), which the listing the
    /// run keeps lacks (the file a `>` is about to make), is still absent at the proxy: a
    /// pattern that matches that name alone (its last character bracketed), expected to match
    /// nothing, in the glob state of the call's globs. `false` when the name cannot be written
    /// so, or the job expects as many globs as it may: the plan must then look the name up.
    pub fn expect_absent(&mut self, dir: &str, name: &str) -> bool {
        let plain = |c: char| c.is_ascii_alphanumeric() || "._,+@%=-".contains(c);
        let Some(last) = name.chars().last().filter(|c| c.is_ascii_alphanumeric()) else { return false };
        if !name.chars().all(plain) {
            return false;
        }
        let pattern = format!("{}[{last}]", &name[..name.len() - 1]);
        // Asked with the globs of its directory when there are some: one bash at the proxy.
        let k = match self.globs.iter().position(|g| g.cwd == dir) {
            Some(k) => k,
            None if self.globs.len() < protocol::MAX_EXPECTED_GLOBS => {
                let Some(state) = self.globs.first().map(|g| g.glob.clone()) else { return false };
                self.globs.push(ExpectedGlob::new(dir.to_string(), GlobRequest { patterns: Vec::new(), ..state }, &[]));
                self.answers.push(Vec::new());
                self.globs.len() - 1
            }
            None => return false,
        };
        let mut glob = self.globs[k].glob.clone();
        glob.patterns.push(pattern);
        self.answers[k].push(Vec::new());
        self.globs[k] = ExpectedGlob::new(dir.to_string(), glob, &self.answers[k]);
        true
    }
}

/// Expands the globs of `call` in place with the names `listed` (mount index, directory relative
/// to the mount's path) gives of a directory, when every pattern lists a directory of one mount
/// with a proxy, of which the run keeps a listing, in a glob state this guess knows
/// (`names_matching`: no `dotglob`, `extglob`, `nocaseglob`, `globstar` or `GLOBIGNORE`, a
/// collation that sorts bytes). Returns what the proxy must confirm, or `None`, the call as it
/// was: the call is planned with the guess, and its job runs only if the proxy's bash expands
/// the same names ([`ExpectedGlob`]); otherwise it is planned again with the names asked
/// ([`expand`]). A right guess saves the round trip of asking before planning.
pub fn predict(
    call: &mut PipelineCall,
    config: &Config,
    cwd: &Path,
    listed: impl Fn(usize, &str) -> Option<Vec<String>>,
) -> Option<Expected> {
    let batches = batches(call, Some(config), cwd);
    let mount = batches.first()?.mount?;
    let mut globs = Vec::with_capacity(batches.len());
    let mut expected_names = Vec::with_capacity(batches.len());
    let mut answers = Vec::with_capacity(batches.len());
    for batch in &batches {
        if batch.mount != Some(mount) || batch.why_here.is_some() || !guessable(&batch.request) {
            return None;
        }
        let mut names = Vec::with_capacity(batch.request.patterns.len());
        for ((c, index, _), pattern) in batch.words.iter().zip(&batch.request.patterns) {
            let word = call.commands[*c].globs.iter().find(|(i, _)| i == index).map(|(_, w)| w)?;
            let (dir, last) = match pattern.rsplit_once('/') {
                Some((dir, last)) if dir.split('/').all(|c| !c.is_empty() && c != "." && c != "..") => (dir, last),
                Some(_) => return None,
                None => ("", pattern.as_str()),
            };
            if dir.contains(['*', '?', '['])
                || (last.starts_with('.') && !batch.request.options.iter().any(|o| o == "globskipdots"))
            {
                return None;
            }
            let listed_dir =
                [batch.dir.as_str(), dir].iter().filter(|d| !d.is_empty()).copied().collect::<Vec<_>>().join("/");
            let matched = posh_core::planner::names_matching(last, &listed(mount, &listed_dir)?)?;
            // What bash makes of no match is the client's to decide, but `failglob` stops the
            // command: such a guess is not worth a job.
            if matched.is_empty() && word.failglob {
                return None;
            }
            let shown =
                |name: String| if dir.is_empty() { name.into_bytes() } else { format!("{dir}/{name}").into_bytes() };
            names.push(matched.into_iter().map(shown).collect::<Vec<_>>());
        }
        if globs.len() == protocol::MAX_EXPECTED_GLOBS {
            return None;
        }
        globs.push(ExpectedGlob::new(batch.dir.clone(), batch.request.clone(), &names));
        expected_names.push(names.clone());
        let at = Some(config.mounts[mount].name.clone());
        answers.push(Answered { names: Some(names), at, why: None, predicted: true });
    }
    substitute(call, batches, answers);
    Some(Expected { mount, globs, answers: expected_names, unmet: AtomicBool::new(false) })
}

/// Whether [`predict`]'s matcher expands patterns as bash does in `request`'s glob state.
fn guessable(request: &GlobRequest) -> bool {
    let bytewise = |value: &String| matches!(value.as_str(), "" | "C" | "POSIX") || value.starts_with("C.");
    let collation =
        ["LC_ALL", "LC_COLLATE", "LANG"].iter().find_map(|name| request.locale.get(*name).filter(|v| !v.is_empty()));
    request.globignore.is_empty()
        && request.options.iter().all(|o| o == "globasciiranges" || o == "globskipdots")
        && collation.is_none_or(bytewise)
}

/// One batch's names, and where they came from.
struct Answered {
    /// Per pattern; `None`: bash expands them here.
    names: Option<Vec<Vec<Vec<u8>>>>,
    /// The mount whose proxy answered (or is to confirm them).
    at: Option<String>,
    /// Why here, when a proxy was meant to answer.
    why: Option<String>,
    predicted: bool,
}

/// The batches of `call`'s globs: per listed directory and glob state.
fn batches(call: &PipelineCall, config: Option<&Config>, cwd: &Path) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    for (c, command) in call.commands.iter().enumerate() {
        for (index, word) in &command.globs {
            if word.noglob {
                continue;
            }
            let place = Place::of(&word.pattern, config, cwd, !word.globignore.is_empty());
            let fits = |b: &&mut Batch| {
                b.mount == place.mount
                    && b.dir == place.dir
                    && b.here == place.here
                    && b.why_here == place.why_here
                    && request_key(&b.request) == request_key(&word.request())
            };
            let batch = match batches.iter_mut().find(fits) {
                Some(batch) => batch,
                None => {
                    batches.push(Batch {
                        mount: place.mount,
                        dir: place.dir.clone(),
                        here: place.here.clone(),
                        why_here: place.why_here.clone(),
                        words: Vec::new(),
                        request: word.request(),
                    });
                    batches.last_mut().expect("just pushed")
                }
            };
            batch.request.patterns.push(place.pattern.to_string());
            batch.words.push((c, *index, place.prefix.to_string()));
        }
    }
    batches
}

/// Puts each batch's names (bash's here where a batch has none) in place of its words.
fn substitute(call: &mut PipelineCall, batches: Vec<Batch>, answers: Vec<Answered>) {
    let mut expanded: BTreeMap<(usize, usize), Vec<OsString>> = BTreeMap::new();
    let mut ends = Vec::new();
    for (batch, Answered { names, at, why, predicted }) in batches.into_iter().zip(answers) {
        let answer = names.map_or_else(|| expand_here(&batch.request, &batch.here), Ok).unwrap_or_else(|e| {
            // bash cannot list the directory here either: to bash that is no match.
            tracing::debug!("glob at the client: {e}");
            vec![Vec::new(); batch.words.len()]
        });
        for ((c, index, prefix), (names, rest)) in
            batch.words.iter().zip(answer.into_iter().zip(&batch.request.patterns))
        {
            ends.push(GlobEnd {
                pattern: format!("{prefix}{rest}"),
                mount: at.clone(),
                names: names.len(),
                why: why.clone(),
                predicted,
            });
            let words = names
                .into_iter()
                .map(|name| {
                    let mut word = prefix.as_bytes().to_vec();
                    word.extend(name);
                    OsString::from_vec(word)
                })
                .collect();
            expanded.insert((*c, *index), words);
        }
    }
    // Every word replaced by its names, or by what bash makes of no match; the later words of a
    // command first, so the indices of the earlier ones stay (and the first word that matched
    // nothing is the one a failglob error names, as bash's).
    for (c, command) in call.commands.iter_mut().enumerate() {
        let globs = std::mem::take(&mut command.globs);
        for (index, word) in globs.iter().rev() {
            let names = expanded.remove(&(c, *index)).unwrap_or_default();
            let replacement = match (names.is_empty(), word.noglob, word.nullglob, word.failglob) {
                (false, ..) => names,
                (true, true, ..) | (true, false, false, false) => vec![OsString::from(&word.pattern)],
                (true, false, _, true) => {
                    command.no_match = Some(word.pattern.clone());
                    Vec::new()
                }
                (true, false, true, false) => Vec::new(),
            };
            command.argv.splice(*index..*index + 1, replacement);
        }
    }
    call.globs = ends;
}

/// What patterns asked together must share.
fn request_key(request: &GlobRequest) -> (&[String], &str, &BTreeMap<String, String>) {
    (&request.options, &request.globignore, &request.locale)
}

/// Expands `request`'s patterns with bash in `dir`, at the client.
fn expand_here(request: &GlobRequest, dir: &Path) -> Result<Vec<Vec<Vec<u8>>>, String> {
    let argv = request.argv();
    let mut command = std::process::Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(dir).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command.envs(&request.locale).stdin(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let output = command.output().map_err(|e| format!("bash in {}: {e}", dir.display()))?;
    if !output.status.success() {
        return Err(format!("bash ended with {}", output.status));
    }
    glob::read_answer(&output.stdout, request.patterns.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_glob_state_reads_as_bash_set_it() {
        let state =
            words(&["hBf", "dotglob:extglob:failglob:nullglob:xpg_echo", "*.tmp", "", "C", "", "en_US.UTF-8", "a/*"]);
        let word = GlobWord::decode(&state).unwrap();
        assert!(word.noglob && word.nullglob && word.failglob);
        assert_eq!(word.options, ["dotglob", "extglob"]);
        assert_eq!(word.globignore, "*.tmp");
        assert_eq!(word.locale.keys().collect::<Vec<_>>(), ["LANG", "LC_COLLATE"]);
        assert!(GlobWord::decode(&state[1..]).is_err());
    }

    /// A call's globs are guessed from the listing kept of their directory, in bash's order
    /// under `LC_ALL=C`, and an absent output name joins its directory's glob as a pattern
    /// expected to match nothing; what the matcher does not know is not guessed.
    #[test]
    fn globs_are_guessed_from_a_kept_listing() {
        let config =
            Config::parse("[[mount]]\nname = \"m\"\npath = \"/m\"\nproxy = \"10.0.0.1:4433\"\n", Path::new("/p.toml"))
                .unwrap();
        let c_locale = BTreeMap::from([("LC_ALL".to_string(), "C".to_string())]);
        let word = |pattern: &str, options: &[&str]| GlobWord {
            pattern: pattern.to_string(),
            options: options.iter().map(|o| o.to_string()).collect(),
            locale: c_locale.clone(),
            ..GlobWord::default()
        };
        let call_of = |word: GlobWord| PipelineCall {
            name: "s".into(),
            stats: None,
            pipefail: false,
            noclobber: false,
            stdin_is_text: false,
            commands: vec![crate::runtime::CommandCall {
                argv: words(&["cat", &word.pattern]),
                globs: vec![(1, word)],
                ..crate::runtime::CommandCall::default()
            }],
            globs: Vec::new(),
            stdout_file: None,
        };
        let listed = |mount: usize, dir: &str| {
            assert_eq!((mount, dir), (0, "rt/logs"));
            Some(["b.log", "a.log", "B.log", ".x.log", "notes"].map(String::from).to_vec())
        };
        let mut call = call_of(word("logs/*.log", &["globasciiranges"]));
        let mut expected = predict(&mut call, &config, Path::new("/m/rt"), listed).expect("a guess");
        assert_eq!(call.commands[0].argv, words(&["cat", "logs/B.log", "logs/a.log", "logs/b.log"]));
        assert!(call.globs[0].predicted);
        assert!(expected.expect_absent("rt", "slow-rays.txt"));
        assert!(!expected.expect_absent("rt", "two words.txt"));
        assert_eq!(expected.globs.len(), 1, "one bash at the proxy for the directory");
        let glob = &expected.globs[0];
        assert_eq!(glob.glob.patterns, ["logs/*.log", "slow-rays.tx[t]"]);
        let names = ["logs/B.log", "logs/a.log", "logs/b.log"].map(|n| n.as_bytes().to_vec()).to_vec();
        assert!(glob.is_met_by(&glob::answer_text(&[names, vec![]])));
        for unknown in [word("logs/*.log", &["nocaseglob"]), word("logs/@(a|b).log", &[]), word("logs/*/x", &[])] {
            let mut call = call_of(unknown.clone());
            assert!(predict(&mut call, &config, Path::new("/m/rt"), listed).is_none(), "{unknown:?}");
            assert_eq!(call.commands[0].argv[1], *unknown.pattern, "left as it was");
        }
        let mut call = call_of(GlobWord {
            locale: BTreeMap::from([("LANG".into(), "en_US.UTF-8".into())]),
            ..word("logs/*.log", &[])
        });
        assert!(predict(&mut call, &config, Path::new("/m/rt"), listed).is_none(), "a collation that is not bytes");
    }

    /// Each mount's batch is asked at once: three proxies that answer only when all three were
    /// asked (a barrier) answer every pattern, where asking one after another would wait out the
    /// first and expand at the client.
    #[test]
    fn the_batches_of_several_mounts_are_asked_together() {
        let mut text = String::new();
        for m in ["a", "b", "c"] {
            text.push_str(&format!("[[mount]]\nname = \"{m}\"\npath = \"/{m}\"\nproxy = \"10.0.0.1:4433\"\n\n"));
        }
        let config = Config::parse(&text, Path::new("/home/u/posh.toml")).unwrap();
        let word = |pattern: &str| GlobWord { pattern: pattern.to_string(), ..GlobWord::default() };
        let command = crate::runtime::CommandCall {
            argv: words(&["cat", "/a/*.log", "/b/*.log", "/c/*.log"]),
            globs: vec![(1, word("/a/*.log")), (2, word("/b/*.log")), (3, word("/c/*.log"))],
            ..crate::runtime::CommandCall::default()
        };
        let mut call = PipelineCall {
            name: "s".into(),
            stats: None,
            pipefail: false,
            noclobber: false,
            stdin_is_text: false,
            commands: vec![command],
            globs: Vec::new(),
            stdout_file: None,
        };
        let all_asked = tokio::sync::Barrier::new(3);
        let at_proxy = |mount: usize, _request: Request| {
            let all_asked = &all_asked;
            async move {
                tokio::time::timeout(std::time::Duration::from_secs(5), all_asked.wait())
                    .await
                    .map_err(|_| "asked alone".to_string())?;
                Ok(vec![vec![format!("x{mount}.log").into_bytes()]])
            }
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        runtime.block_on(expand(&mut call, Some(&config), Path::new("/home/u"), at_proxy));
        assert_eq!(call.commands[0].argv, words(&["cat", "/a/x0.log", "/b/x1.log", "/c/x2.log"]));
        let at: Vec<Option<&str>> = call.globs.iter().map(|g| g.mount.as_deref()).collect();
        assert_eq!(at, [Some("a"), Some("b"), Some("c")], "{:?}", call.globs);
    }
}
