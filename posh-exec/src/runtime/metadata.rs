//! The file system a handed-over pipeline is planned against. Files on a mount whose proxy runs
//! apart (`proxy = "host:port"`) are described by that proxy, a whole directory per question
//! (`posh_proxy::metadata`), instead of through the mount: there each `stat` of a plan is a round
//! trip once the mount's attribute cache has lapsed (sshfs keeps it 20 s), which made a loop of
//! small pipelines pay two round trips each. Everything else is asked of the mount
//! (`OsFileSystem`), as `--explain` asks it: both describe the same files, so the plan is the
//! one `--explain` shows.
//!
//! Where a split may cut `cat`'s output (whether a file's last byte is a newline) is asked of
//! the proxies too, all at once, and never kept: it depends on the files' content.
//!
//! The run keeps the other answers for [`LIFETIME`]. What a plan learns from them is a size and
//! whether a name is a file or a directory, which only weigh where commands run: a stale answer may
//! place a command less well, never change what it does (the runtime checks for itself what
//! must be true when it runs: a streamed file's content, say). To keep them close all the same:
//! a name a listing lacks is asked of the mount (a file the script has made since) unless the
//! listing came after the pipeline was handed over (`Planning::list_beside`), and once a
//! pipeline ends, every path its words or redirections name is forgotten (what it may have
//! written).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use posh_core::config::{Config, ProxyAddress};
use posh_core::fs::{FileKind, FileMeta, FileSystem, normalize_path, normalized};
use posh_exec::remote::TrafficByMount;
use posh_exec::remote::protocol::{Answer, Question, WrittenFile};

use super::session::Session;
use crate::os_fs::OsFileSystem;

/// How long the run trusts a proxy's answer.
pub const LIFETIME: Duration = Duration::from_secs(5);
/// How long a plan waits for an answer before asking the mount instead.
const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// The proxies' answers the run keeps, by mount index and question.
#[derive(Debug, Default)]
pub struct Answers(Mutex<HashMap<(usize, Question), Kept>>);

#[derive(Debug)]
struct Kept {
    at: Instant,
    /// `None`: the proxy could not answer (an old proxy, busy, not a directory); the mount is
    /// asked until the answer would have lapsed.
    answer: Option<Arc<Answer>>,
}

impl Answers {
    fn get(&self, key: &(usize, Question)) -> Option<Option<Arc<Answer>>> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(key).filter(|k| k.at.elapsed() < LIFETIME).map(|k| k.answer.clone())
    }

    /// The names of the directory `dir` (relative to mount `mount`'s path) in the listing its
    /// proxy gave and the run keeps, learned names included; `None` when it keeps none. For a
    /// guess the proxy checks (`globs::predict`): the listing need not be whole (a call since
    /// may have made a name no output word shows), a missing name only costs the guess.
    pub fn names_in(&self, mount: usize, dir: &str) -> Option<Vec<String>> {
        let answer = self.get(&(mount, Question::List(dir.to_string())))??;
        let Answer::Listing { files, dirs, others, .. } = &*answer else { return None };
        let names = files.iter().map(|(name, _)| name).chain(dirs).chain(others);
        Some(names.cloned().collect())
    }

    /// `path` as (mount, directory relative to the mount's path, name) when the run keeps a
    /// whole listing of its directory from the mount's proxy that lacks its name.
    pub fn lacks(&self, config: &Config, path: &Path) -> Option<(usize, String, String)> {
        let (mount, relative) = on_remote_mount(config, path)?;
        let (dir, name) = split(&relative);
        let answer = self.get(&(mount, Question::List(dir.to_string())))??;
        let whole = matches!(*answer, Answer::Listing { complete: true, .. });
        (whole && !lists(&answer, name)).then(|| (mount, dir.to_string(), name.to_string()))
    }

    /// Whether the answer to `key` the run keeps came at `since` or later.
    fn kept_since(&self, key: &(usize, Question), since: Instant) -> bool {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(key).is_some_and(|k| k.at >= since)
    }

    /// Keeps `answer`, a listing's names sorted: a plan looks up each of its files in it, and
    /// a glob's 2,000 files looked up by scanning were most of a plan's time.
    fn keep(&self, key: (usize, Question), mut answer: Option<Arc<Answer>>) {
        if let Some(Answer::Listing { files, dirs, others, .. }) = answer.as_mut().map(Arc::make_mut) {
            files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            dirs.sort_unstable();
            others.sort_unstable();
        }
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|_, k| k.at.elapsed() < LIFETIME);
        kept.insert(key, Kept { at: Instant::now(), answer });
    }

    /// Forgets what the run knows of `paths` (absolute): their entries in their directories'
    /// listings, and what was asked of them as directories.
    pub fn forget(&self, config: &Config, paths: impl IntoIterator<Item = PathBuf>) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.is_empty() {
            return;
        }
        for path in paths {
            let Some((mount, relative)) = on_remote_mount(config, &path) else { continue };
            kept.remove(&(mount, Question::List(relative.clone())));
            kept.remove(&(mount, Question::SizeBelow(relative.clone())));
            let (parent, name) = split(&relative);
            // The bytes below each directory above it may have changed.
            let mut above = Some(parent);
            while let Some(dir) = above {
                kept.remove(&(mount, Question::SizeBelow(dir.to_string())));
                above = (!dir.is_empty()).then(|| split(dir).0);
            }
            let listing = kept.get_mut(&(mount, Question::List(parent.to_string())));
            if let Some(Kept { answer: Some(answer), .. }) = listing
                && let Answer::Listing { files, dirs, others, complete } = Arc::make_mut(answer)
            {
                if let Ok(at) = find_file(files, name) {
                    files.remove(at);
                }
                for names in [dirs, others] {
                    if let Ok(at) = find(names, name) {
                        names.remove(at);
                    }
                }
                // The name may exist now: the directory's names are the mount's to tell.
                *complete = false;
            }
        }
    }

    /// Takes what proxies said their jobs left written (`written`, emptied) into the listings
    /// the run keeps of those files' directories: a plan after the job finds the file and its
    /// size there rather than asking the mount. The listings stay as complete as they were:
    /// the job may have made names no output word shows.
    pub fn learn(&self, written: &Mutex<Vec<(usize, WrittenFile)>>) {
        let written = std::mem::take(&mut *written.lock().unwrap_or_else(|e| e.into_inner()));
        if written.is_empty() {
            return;
        }
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (mount, file) in written {
            let (parent, name) = split(&file.path);
            let listing = kept.get_mut(&(mount, Question::List(parent.to_string())));
            let Some(Kept { answer: Some(answer), .. }) = listing else { continue };
            let Answer::Listing { files, dirs, others, .. } = Arc::make_mut(answer) else { continue };
            match find_file(files, name) {
                Ok(at) => files[at].1 = file.size,
                Err(at) => files.insert(at, (name.to_string(), file.size)),
            }
            for names in [dirs, others] {
                if let Ok(at) = find(names, name) {
                    names.remove(at);
                }
            }
        }
    }
}

/// The mount (index) whose proxy runs apart and holds `path`, with `path` relative to it; `None`
/// for the mount's root, which its proxy's answers do not describe.
fn on_remote_mount(config: &Config, path: &Path) -> Option<(usize, String)> {
    remote_directory(config, path).filter(|(_, relative)| !relative.is_empty())
}

/// The mount (index) whose proxy runs apart and holds the directory `path`, with `path` relative
/// to it (`""` for the mount's root, which its proxy lists).
fn remote_directory(config: &Config, path: &Path) -> Option<(usize, String)> {
    let path = normalize_path(path);
    let index = config.mount_index_for(&path)?;
    let mount = &config.mounts[index];
    if !matches!(mount.proxy, ProxyAddress::Remote { .. } | ProxyAddress::Ssh { .. }) {
        return None;
    }
    let relative = path.strip_prefix(&mount.path).ok()?.to_str()?.to_string();
    Some((index, relative))
}

/// The names of a whole listing, sorted as the mount's are (`OsFileSystem::read_dir`); `None`
/// when the listing is not the directory's every name.
fn names_of(answer: &Answer) -> Option<Vec<String>> {
    let Answer::Listing { files, dirs, others, complete: true } = answer else { return None };
    let mut names: Vec<String> =
        files.iter().map(|(name, _)| name.clone()).chain(dirs.iter().cloned()).chain(others.iter().cloned()).collect();
    names.sort();
    Some(names)
}

/// Whether a listing names `name`.
fn lists(answer: &Answer, name: &str) -> bool {
    let Answer::Listing { files, dirs, others, .. } = answer else { return false };
    find_file(files, name).is_ok() || find(dirs, name).is_ok() || find(others, name).is_ok()
}

/// Where `name` is (or would go) among a listing's names, sorted when kept (`Answers::keep`).
fn find(names: &[String], name: &str) -> Result<usize, usize> {
    names.binary_search_by(|n| n.as_str().cmp(name))
}

/// As [`find`], among a listing's files and their sizes.
fn find_file(files: &[(String, u64)], name: &str) -> Result<usize, usize> {
    files.binary_search_by(|(file, _)| file.as_str().cmp(name))
}

/// `dir/name` as (`dir`, `name`); `""` for a name at the root.
fn split(relative: &str) -> (&str, &str) {
    relative.rsplit_once('/').unwrap_or(("", relative))
}

/// A pipeline's plan's view of the file system: see the module's comment.
pub struct Planning<'s> {
    session: &'s Session,
    /// What the questions of this plan cost, by mount: the pipeline's `--stats` counts it (the
    /// plan before the script's go to `Session::asked_before_the_script`).
    traffic: RefCell<TrafficByMount>,
    /// The script has not started: a name a whole listing lacks does not exist (nothing of the
    /// script can have made it since), and is not asked of the mount.
    before_the_script: bool,
    /// When the pipeline this plan is for was handed over: bash waits for it, so a name that a
    /// whole listing answered since then lacks does not exist either (the file a `>` is about
    /// to make, say), where an older listing may predate what the script made.
    started: Instant,
    /// Every file is taken to end its last line (`offload::SeamsAssumed`).
    seams_assumed: bool,
    /// The mounts whose proxies did not answer a question of this plan: the mount answered.
    unanswered: RefCell<std::collections::BTreeSet<usize>>,
    /// Paths taken to be absent without asking (normalized): the job this plan is for runs
    /// only if its proxy finds them absent (`globs::Expected::expect_absent`).
    assumed_absent: Vec<PathBuf>,
}

impl<'s> Planning<'s> {
    pub fn new(session: &'s Session) -> Planning<'s> {
        Planning {
            session,
            traffic: RefCell::default(),
            before_the_script: false,
            started: Instant::now(),
            seams_assumed: false,
            unanswered: RefCell::default(),
            assumed_absent: Vec::new(),
        }
    }

    /// A plan that takes `paths` to be absent, asking nothing of them: for a job whose proxy
    /// confirms it before it runs.
    pub fn assuming_absent(session: &'s Session, paths: &[PathBuf]) -> Planning<'s> {
        Planning { assumed_absent: paths.iter().map(|p| normalize_path(p)).collect(), ..Planning::new(session) }
    }

    /// The view of the script's plan before it runs, which decides what is handed over
    /// (`offload::rewrite`) or shows it (`--explain`): nothing of the script has run yet, and
    /// with `seams_assumed` every file ends its last line (see `offload::SeamsAssumed`).
    pub fn before_the_script(session: &'s Session, seams_assumed: bool) -> Planning<'s> {
        Planning { before_the_script: true, seams_assumed, ..Planning::new(session) }
    }

    /// The mounts whose proxies could not answer (unreachable, busy, too old) a question of this
    /// plan, which their mounts answered instead.
    pub fn unanswered(&self) -> Vec<usize> {
        self.unanswered.borrow().iter().copied().collect()
    }

    /// Asks, all at once (one round trip to each proxy), for the listings of `dirs` that lie on
    /// mounts with proxies apart and that the run does not know yet (see
    /// `planner::directories_named`).
    pub fn list_ahead(&self, dirs: &[PathBuf]) {
        let mut wanted = std::collections::BTreeSet::new();
        for dir in dirs {
            if let Some((mount, relative)) = remote_directory(&self.session.config, dir)
                && self.session.answers.get(&(mount, Question::List(relative.clone()))).is_none()
            {
                wanted.insert((mount, relative));
            }
        }
        self.ask_listings(wanted);
    }

    /// Asks for the listings `wanted` (mount, directory) at once, and keeps the answers.
    fn ask_listings(&self, wanted: std::collections::BTreeSet<(usize, String)>) {
        self.session.runtime.block_on(self.asked_listings(wanted));
    }

    async fn asked_listings(&self, wanted: std::collections::BTreeSet<(usize, String)>) {
        if wanted.is_empty() {
            return;
        }
        let questions = wanted.into_iter().map(|(mount, dir)| async move {
            let question = Question::List(dir);
            let answer = self.ask(mount, &question).await.map(Arc::new);
            ((mount, question), answer)
        });
        for (key, answer) in futures_util::future::join_all(questions).await {
            self.session.answers.keep(key, answer);
        }
    }

    /// The listings of the directories holding `paths` (files a call's redirections read, on
    /// mounts with proxies apart) that the run lacks, or keeps from before this pipeline without
    /// the path's name, asked at once: run beside the call's globs, whose names the plan waits
    /// for anyway, the fresh listing that tells the plan the size of a `< made.txt` the script
    /// has made since costs no round trip of its own (else the name is asked of the mount, a
    /// round trip through a networked filesystem).
    pub async fn list_beside(&self, paths: impl IntoIterator<Item = PathBuf>) {
        self.asked_listings(self.directories_to_ask(paths, true)).await;
    }

    /// The directories holding `paths` (mount, directory) whose listings the run lacks, and with
    /// `lacking_the_name`, those whose whole listing it keeps without the path's name.
    fn directories_to_ask(
        &self,
        paths: impl IntoIterator<Item = PathBuf>,
        lacking_the_name: bool,
    ) -> std::collections::BTreeSet<(usize, String)> {
        let mut wanted = std::collections::BTreeSet::new();
        for path in paths {
            let Some((mount, relative)) = on_remote_mount(&self.session.config, &path) else { continue };
            let (dir, name) = split(&relative);
            let ask = match self.session.answers.get(&(mount, Question::List(dir.to_string()))) {
                None => true,
                Some(Some(answer)) => {
                    lacking_the_name
                        && matches!(&*answer, Answer::Listing { complete: true, .. })
                        && !lists(&answer, name)
                }
                Some(None) => false,
            };
            if ask {
                wanted.insert((mount, dir.to_string()));
            }
        }
        wanted
    }

    /// The names in the directory `path` as its proxy's whole listing gives them, `None` when
    /// the mount must be asked.
    fn names_below(&self, path: &Path) -> Option<Vec<String>> {
        let (mount, relative) = remote_directory(&self.session.config, path)?;
        names_of(&*self.answer(mount, Question::List(relative))?)
    }

    /// The bytes and questions this plan sent to each mount's proxy.
    /// The first plan of the run's runtime also counts what the plan before the script asked
    /// (`list_ahead`): its pipeline's `--stats` record says it, as a loop's first does its plans'.
    pub fn into_traffic(self) -> TrafficByMount {
        let mut traffic = self.traffic.into_inner();
        let before =
            std::mem::take(&mut *self.session.asked_before_the_script.lock().unwrap_or_else(|e| e.into_inner()));
        for (mount, asked) in before {
            match traffic.entry(mount) {
                std::collections::btree_map::Entry::Vacant(entry) => {
                    entry.insert(asked);
                }
                std::collections::btree_map::Entry::Occupied(entry) => entry.get().absorb(&asked),
            }
        }
        traffic
    }

    /// Asks, all at once, for the listings of the directories holding `paths` that the run does
    /// not know yet: a pipeline over five mounts' files (`cat d0/* ... d4/*`) then waits for one
    /// round trip, not five one after the other as its plan asks about each file.
    pub fn prefetch(&self, paths: impl IntoIterator<Item = PathBuf>) {
        let wanted = self.directories_to_ask(paths, false);
        if wanted.len() < 2 {
            return;
        }
        self.ask_listings(wanted);
    }

    /// The proxy's answer to `question` about mount `mount`, asked now unless the run has one.
    fn answer(&self, mount: usize, question: Question) -> Option<Arc<Answer>> {
        let key = (mount, question);
        if let Some(kept) = self.session.answers.get(&key) {
            return kept;
        }
        let asked = self.session.runtime.block_on(self.ask(mount, &key.1)).map(Arc::new);
        self.session.answers.keep(key, asked.clone());
        asked
    }

    /// Asks mount `mount`'s proxy `question`; `None` when it cannot answer (unreachable, busy, an
    /// older proxy) within [`ANSWER_WAIT`].
    async fn ask(&self, mount: usize, question: &Question) -> Option<Answer> {
        let traffic = if self.before_the_script {
            let mut before = self.session.asked_before_the_script.lock().unwrap_or_else(|e| e.into_inner());
            before.entry(mount).or_default().clone()
        } else {
            self.traffic.borrow_mut().entry(mount).or_default().clone()
        };
        let connection = if self.before_the_script {
            // A proxy reached through ssh is started by the run when a pipeline goes to it (its
            // login may ask for a password), not to plan; the plan waits for no handshake longer
            // than for an answer.
            if matches!(self.session.config.mounts[mount].proxy, ProxyAddress::Ssh { .. }) {
                return None;
            }
            tokio::time::timeout(ANSWER_WAIT, self.session.connection(mount)).await.ok().flatten()
        } else {
            self.session.connection(mount).await
        };
        let Some(connection) = connection else {
            self.unanswered.borrow_mut().insert(mount);
            return None;
        };
        match tokio::time::timeout(ANSWER_WAIT, connection.ask(question, &traffic)).await {
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(e)) => {
                tracing::debug!("{e:#}");
                // A path that is not a directory beneath the export is refused with the path
                // first (`PATH`: REASON): an answer, which the mount would give too. Busy, an
                // older proxy or a lost connection is no answer.
                if !format!("{e:#}").contains(": `") {
                    self.unanswered.borrow_mut().insert(mount);
                }
                None
            }
            Err(_) => {
                self.unanswered.borrow_mut().insert(mount);
                None
            }
        }
    }
}

impl FileSystem for Planning<'_> {
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        if !self.assumed_absent.is_empty() && self.assumed_absent.iter().any(|p| *p == *normalized(path)) {
            return None;
        }
        let on_mount = remote_directory(&self.session.config, path);
        // A mount's own directory, whose proxy listed its export root (asked ahead): a directory,
        // not asked of the mount (on a cold mount, a round trip per mount a split names).
        if let Some((mount, root)) = &on_mount
            && root.is_empty()
            && let Some(Some(answer)) = self.session.answers.get(&(*mount, Question::List(String::new())))
            && matches!(*answer, Answer::Listing { .. })
        {
            return Some(FileMeta { kind: FileKind::Directory, size: 0 });
        }
        let on_mount = on_mount.filter(|(_, relative)| !relative.is_empty());
        let known = on_mount.and_then(|(mount, relative)| {
            let (dir, name) = split(&relative);
            let answer = self.answer(mount, Question::List(dir.to_string()))?;
            let Answer::Listing { files, dirs, complete, others } = &*answer else { return None };
            // Asked only of a name the listing lacks: most names a plan asks about are there.
            let nothing_ran_since = || {
                let key = (mount, Question::List(dir.to_string()));
                self.before_the_script || self.session.answers.kept_since(&key, self.started)
            };
            match find_file(files, name) {
                Ok(at) => Some(Some(FileMeta { kind: FileKind::File, size: files[at].1 })),
                Err(_) if find(dirs, name).is_ok() => Some(Some(FileMeta { kind: FileKind::Directory, size: 0 })),
                // Nothing of the script has run since the listing: a name it lacks is not there.
                Err(_) if *complete && find(others, name).is_err() && nothing_ran_since() => Some(None),
                Err(_) => None,
            }
        });
        known.unwrap_or_else(|| OsFileSystem.metadata(path))
    }

    fn directory_size(&self, path: &Path) -> Option<u64> {
        let known = on_remote_mount(&self.session.config, path).and_then(|(mount, relative)| {
            match &*self.answer(mount, Question::SizeBelow(relative))? {
                Answer::SizeBelow(bytes) => Some(*bytes),
                _ => None,
            }
        });
        known.or_else(|| OsFileSystem.directory_size(path))
    }

    /// From the proxy's listing when it names every entry; else through the mount.
    fn read_dir(&self, path: &Path) -> Vec<String> {
        self.names_below(path).unwrap_or_else(|| OsFileSystem.read_dir(path))
    }

    /// The listings the run lacks asked of the proxies at once, then as `read_dir`.
    fn read_dirs(&self, paths: &[PathBuf]) -> Vec<Vec<String>> {
        self.list_ahead(paths);
        let listed: Vec<Option<Vec<String>>> = paths.iter().map(|path| self.names_below(path)).collect();
        let through_mount: Vec<PathBuf> =
            paths.iter().zip(&listed).filter(|(_, names)| names.is_none()).map(|(path, _)| path.clone()).collect();
        let mut from_mount = OsFileSystem.read_dirs(&through_mount).into_iter();
        listed.into_iter().map(|names| names.unwrap_or_else(|| from_mount.next().unwrap_or_default())).collect()
    }

    fn read_to_string(&self, path: &Path) -> Option<String> {
        OsFileSystem.read_to_string(path)
    }

    /// Asked of each mount's proxy at once, and never kept: where a split may cut depends on the
    /// files' content, read afresh for every plan.
    fn end_with_newlines(&self, paths: &[PathBuf]) -> Vec<Option<bool>> {
        if self.seams_assumed {
            return vec![Some(true); paths.len()];
        }
        let mut ends = vec![None; paths.len()];
        let mut by_mount: BTreeMap<usize, Vec<(usize, String)>> = BTreeMap::new();
        let mut through_mount = Vec::new();
        for (i, path) in paths.iter().enumerate() {
            match on_remote_mount(&self.session.config, path) {
                Some((mount, relative)) => by_mount.entry(mount).or_default().push((i, relative)),
                None => through_mount.push(i),
            }
        }
        let questions = by_mount.iter().map(|(mount, files)| {
            let question = Question::EndsWithNewline(files.iter().map(|(_, file)| file.clone()).collect());
            async move { self.ask(*mount, &question).await }
        });
        let answers = self.session.runtime.block_on(futures_util::future::join_all(questions));
        for (files, answer) in by_mount.values().zip(answers) {
            match answer {
                Some(Answer::EndsWithNewline(answered)) if answered.len() == files.len() => {
                    for ((i, _), answered) in files.iter().zip(answered) {
                        ends[*i] = answered;
                    }
                }
                _ => through_mount.extend(files.iter().map(|(i, _)| *i)),
            }
        }
        let asked: Vec<PathBuf> = through_mount.iter().map(|&i| paths[i].clone()).collect();
        for (i, answered) in through_mount.into_iter().zip(OsFileSystem.end_with_newlines(&asked)) {
            ends[i] = answered;
        }
        ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        let text = "[[mount]]\nname = \"far\"\npath = \"/data\"\nproxy = \"10.0.0.1:4433\"\n\n\
                    [[mount]]\nname = \"near\"\npath = \"/local\"\nproxy = \"embedded\"\n";
        Config::parse(text, Path::new("/home/u/posh.toml")).unwrap()
    }

    fn listing(files: &[(&str, u64)], dirs: &[&str]) -> Option<Arc<Answer>> {
        let files = files.iter().map(|(name, size)| (name.to_string(), *size)).collect();
        let dirs = dirs.iter().map(|d| d.to_string()).collect();
        Some(Arc::new(Answer::Listing { files, dirs, others: Vec::new(), complete: true }))
    }

    /// A listing of `files` that no longer claims to hold every name of its directory.
    fn incomplete(files: &[(&str, u64)]) -> Option<Option<Arc<Answer>>> {
        let files = files.iter().map(|(name, size)| (name.to_string(), *size)).collect();
        Some(Some(Arc::new(Answer::Listing { files, dirs: Vec::new(), others: Vec::new(), complete: false })))
    }

    #[test]
    fn only_paths_below_a_separate_proxys_mount_are_asked_of_it() {
        let config = config();
        assert_eq!(on_remote_mount(&config, Path::new("/data/logs/a.log")), Some((0, "logs/a.log".into())));
        assert_eq!(on_remote_mount(&config, Path::new("/data/./logs/../a.log")), Some((0, "a.log".into())));
        // Its root (described by no answer), an embedded proxy's mount, the client's files.
        assert_eq!(on_remote_mount(&config, Path::new("/data")), None);
        assert_eq!(on_remote_mount(&config, Path::new("/local/a.log")), None);
        assert_eq!(on_remote_mount(&config, Path::new("/home/u/a.log")), None);
        assert_eq!(split("logs/a.log"), ("logs", "a.log"));
        assert_eq!(split("a.log"), ("", "a.log"));
    }

    #[test]
    fn what_a_pipeline_names_is_forgotten_and_the_rest_of_its_directory_kept() {
        let config = config();
        let answers = Answers::default();
        let logs = (0, Question::List("logs".into()));
        answers.keep(logs.clone(), listing(&[("a.log", 10), ("b.log", 20)], &["old"]));
        answers.keep((0, Question::SizeBelow("logs".into())), Some(Arc::new(Answer::SizeBelow(30))));
        answers.keep((0, Question::SizeBelow("logs/old".into())), Some(Arc::new(Answer::SizeBelow(5))));
        answers.keep((0, Question::SizeBelow(String::new())), Some(Arc::new(Answer::SizeBelow(35))));
        answers.keep((0, Question::List("other".into())), listing(&[("b.log", 1)], &[]));
        answers.forget(&config, ["/data/logs/b.log", "/data/logs/old", "/home/u/-c"].map(PathBuf::from));
        // No longer every name of `logs` (`b.log` may exist again): the mount lists it.
        assert_eq!(answers.get(&logs), incomplete(&[("a.log", 10)]));
        // The bytes below `logs/old`, `logs` and the root may have changed; not another directory.
        assert_eq!(answers.get(&(0, Question::SizeBelow("logs".into()))), None);
        assert_eq!(answers.get(&(0, Question::SizeBelow("logs/old".into()))), None);
        assert_eq!(answers.get(&(0, Question::SizeBelow(String::new()))), None);
        assert_eq!(answers.get(&(0, Question::List("other".into()))), Some(listing(&[("b.log", 1)], &[])));
    }

    #[test]
    fn what_a_job_left_written_is_taken_into_its_directory_s_listing() {
        let config = config();
        let answers = Answers::default();
        let logs = (0, Question::List("logs".into()));
        answers.keep(logs.clone(), listing(&[("a.log", 10), ("c.log", 30)], &["b.out"]));
        answers.forget(&config, ["/data/logs/a.log"].map(PathBuf::from));
        let file = |path: &str, size| WrittenFile { path: path.to_string(), size };
        let written = Mutex::new(vec![
            (0, file("logs/a.log", 11)),
            (0, file("logs/b.out", 5)),
            (0, file("logs/b.log", 20)),
            // No listing of `other` is kept: nothing to add to.
            (0, file("other/x", 1)),
        ]);
        answers.learn(&written);
        assert!(written.lock().unwrap().is_empty(), "taken");
        // The job may have made other names: the mount still tells what the listing lacks.
        let learned = [("a.log", 11), ("b.log", 20), ("b.out", 5), ("c.log", 30)];
        assert_eq!(answers.get(&logs), incomplete(&learned));
        assert_eq!(answers.get(&(0, Question::List("other".into()))), None);
    }

    #[test]
    fn an_answer_lapses() {
        let answers = Answers::default();
        let key = (0, Question::List(String::new()));
        answers.keep(key.clone(), None);
        assert_eq!(answers.get(&key), Some(None), "a question the proxy could not answer is not asked again at once");
        answers.0.lock().unwrap().get_mut(&key).unwrap().at -= LIFETIME;
        assert_eq!(answers.get(&key), None);
    }
}
