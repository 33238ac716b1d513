//! Where a command can really run. A proxy runs the words bash expanded, unchanged (a `grep`
//! prefix or an error message names a file as the script did), so a command may run at a mount's
//! proxy only when every file it names lies on that mount and the proxy sees each word as the
//! client does: a relative word from a working directory on the mount or above it, an absolute
//! word only when the mount's `export` is its `path`. The one exception is a `streamable` input
//! on another mount: its own proxy streams it to the command's, where a pipe stands in for it
//! under the same word. These rules are the planner's, so that `--explain`, the editor and the
//! runtime agree; the runtime only translates the plan.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use crate::config::Mount;
use crate::fs::{FileKind, normalize_path};
use crate::planner::PlanContext;

/// The places a command may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// It names no file: any proxy can run it (as any machine can).
    Anywhere,
    /// The client, or the proxy of one of these mounts (the first holds its first file). With
    /// several, each holds some of its files and the files on the others are streamed to it.
    ClientOr(Vec<String>),
    /// Only the client, for this reason (the plan's `Why::ClientOnly`).
    ClientOnly(String),
    /// Only the client: its files lie on several mounts and none can be streamed to the others.
    SeveralMounts,
}

/// A file a command names, as bash expands it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileWord<'w> {
    pub word: &'w str,
    /// An input its annotation calls `streamable`: read once, for its bytes alone.
    pub streamable: bool,
}

impl<'w> FileWord<'w> {
    /// A word that nothing may stand in for (an output, a redirection target).
    pub(crate) fn fixed(word: &'w str) -> FileWord<'w> {
        FileWord { word, streamable: false }
    }
}

/// Where a command that names `words` (its file arguments and redirection targets, as bash
/// expands them; `-` left out) may run. Its files may lie on several mounts when every file off
/// one of them can be streamed to that mount's proxy: see [`Streaming`].
pub(crate) fn reach<'w>(ctx: &PlanContext<'_>, words: impl IntoIterator<Item = FileWord<'w>>) -> Reach {
    let named = match Named::of(ctx, words) {
        Ok(named) => named,
        Err(reach) => return reach,
    };
    if named.held.is_empty() {
        return Reach::Anywhere;
    }
    let streaming = Streaming::of(ctx, &named.cwd, &named.files);
    let mut runners: Vec<String> = match &named.held[..] {
        [one] => vec![one.name.clone()],
        several => several.iter().filter(|runner| streaming.allows(runner)).map(|runner| runner.name.clone()).collect(),
    };
    // A mount that holds none of its files may run it too, every file streamed to it: where its
    // standard input comes from a command at that proxy (`sort a/x | comm -12 - b/y`), the
    // files may be the smaller part to move. The cost decides.
    let others = ctx.config.mounts.iter().filter(|m| !named.holds(m));
    runners.extend(others.filter(|runner| streaming.allows(runner)).map(|m| m.name.clone()));
    if runners.is_empty() { Reach::SeveralMounts } else { Reach::ClientOr(runners) }
}

/// Whether mount `name`'s proxy may run a command that names `words`: [`reach`] asked of one
/// mount, without listing every other (a split asks it of each of its copies' mounts).
pub(crate) fn reaches<'w>(ctx: &PlanContext<'_>, words: impl IntoIterator<Item = FileWord<'w>>, name: &str) -> bool {
    let Ok(named) = Named::of(ctx, words) else { return false };
    let Some(runner) = ctx.config.mount_named(name) else { return false };
    match &named.held[..] {
        [] => true,
        [one] if one.name == name => true,
        _ => Streaming::of(ctx, &named.cwd, &named.files).allows(runner),
    }
}

/// The files a command names, each with its mount, and the mounts that hold them, in order.
struct Named<'w, 'c> {
    cwd: std::path::PathBuf,
    files: Vec<(FileWord<'w>, &'c Mount)>,
    held: Vec<&'c Mount>,
    held_names: HashSet<&'c str>,
}

impl<'w, 'c> Named<'w, 'c> {
    /// The files `words` name; `Err` with where the command may run when a word alone decides
    /// (a file on no mount, one a proxy would see as another).
    fn of(ctx: &PlanContext<'c>, words: impl IntoIterator<Item = FileWord<'w>>) -> Result<Named<'w, 'c>, Reach> {
        let cwd = normalize_path(&ctx.cwd);
        let mut files: Vec<(FileWord<'w>, &Mount)> = Vec::new();
        for file in words {
            let word = file.word;
            // Every machine has a /dev/null; writing there leaves nothing to compare.
            if word == "/dev/null" {
                continue;
            }
            let joined = cwd.join(word);
            let path = crate::fs::normalized(&joined);
            let Some(mount) = ctx.config.mount_for(&path) else {
                return Err(Reach::ClientOnly(format!("`{word}` is on no mount")));
            };
            if Path::new(word).is_absolute() {
                if *crate::fs::normalized(&mount.export) != *mount.path {
                    return Err(Reach::ClientOnly(format!(
                        "the proxy of {} would see `{word}` as another file (the mount's export is not its path)",
                        mount.name
                    )));
                }
            } else if !cwd.starts_with(&mount.path) && !mount.path.starts_with(&cwd) {
                return Err(Reach::ClientOnly(format!(
                    "`{word}` is relative and the working directory is neither on {} nor above it",
                    mount.name
                )));
            } else if *path == *mount.path && cwd != mount.path {
                // From above the mount, the proxy shows the export through a symbolic link (a
                // job's view), which `find`, `ls -l` or `tar` would see as a link.
                return Err(Reach::ClientOnly(format!(
                    "the proxy of {} would show `{word}` as a symbolic link",
                    mount.name
                )));
            }
            files.push((file, mount));
        }
        let mut held = Vec::new();
        let mut held_names = HashSet::new();
        for (_, mount) in &files {
            if held_names.insert(mount.name.as_str()) {
                held.push(*mount);
            }
        }
        Ok(Named { cwd, files, held, held_names })
    }

    fn holds(&self, mount: &Mount) -> bool {
        self.held_names.contains(mount.name.as_str())
    }
}

/// Which proxies can run a command whose files are `files` with every file on another mount
/// streamed to it from that mount's proxy. The job then runs in a view (the working directory
/// lies above the runner's mount), where a pipe takes the streamed word's place under the very
/// name bash gave it; so the word must be relative and plain (no `.` or `..`), named once,
/// outside the runner's own mount (a nested mount's files lie under the link to its parent's
/// export), and a file with content (an empty pipe gives no sign that its reader came). A file
/// that does not exist yet is planned as the file the script will have written by then (at run
/// time, a missing or empty one leaves the command to the client, whose message about it is
/// bash's).
///
/// What each file allows is found once, so that asking of every mount costs one look-up each
/// (a command over a thousand mounts' files asked it of each mount, for each file, counting
/// each word among all of them: the cube of the mounts).
struct Streaming<'c> {
    cwd: &'c Path,
    /// The mounts holding a file that cannot be streamed (none, one, or more than one).
    unstreamable: Vec<&'c str>,
    /// Mounts that lie under a file's path or above it on another mount: none of their proxies
    /// may have it streamed.
    below_another: HashSet<&'c str>,
}

impl<'c> Streaming<'c> {
    fn of(ctx: &PlanContext<'c>, cwd: &'c Path, files: &[(FileWord<'_>, &'c Mount)]) -> Streaming<'c> {
        let mut named: HashMap<&str, usize> = HashMap::new();
        for (file, _) in files {
            *named.entry(file.word).or_default() += 1;
        }
        let mut unstreamable: Vec<&str> = Vec::new();
        let mut below_another = HashSet::new();
        let mount_at =
            |path: &Path| ctx.config.mount_index_for(path).map(|i| &ctx.config.mounts[i]).filter(|m| m.path == path);
        // The mounts at the last file's directory and above it: a command's files mostly share
        // their directory (2,000 logs: one walk up, not 2,000).
        let mut above: Option<(PathBuf, Vec<&'c Mount>)> = None;
        for (file, mount) in files {
            let path = cwd.join(file.word);
            let plain = Path::new(file.word).components().all(|c| matches!(c, Component::Normal(_)));
            let streamable = file.streamable
                && plain
                && named[file.word] == 1
                && ctx.fs.metadata(&path).is_none_or(|m| m.kind == FileKind::File && m.size > 0);
            if !streamable {
                if !unstreamable.contains(&mount.name.as_str()) {
                    unstreamable.push(mount.name.as_str());
                }
                continue;
            }
            // The mounts whose paths lie at the file's or above it, besides its own (its path is
            // plain and relative to a normalized directory: normalized too).
            let dir = path.parent().unwrap_or(Path::new(""));
            if above.as_ref().is_none_or(|(known, _)| known != dir) {
                above = Some((dir.to_path_buf(), dir.ancestors().filter_map(mount_at).collect()));
            }
            let at_or_above =
                mount_at(&path).into_iter().chain(above.as_ref().into_iter().flat_map(|(_, m)| m.iter().copied()));
            for other in at_or_above.filter(|other| other.name != mount.name) {
                below_another.insert(other.name.as_str());
            }
        }
        Streaming { cwd, unstreamable, below_another }
    }

    /// Whether `runner`'s proxy may run the command, the files on other mounts streamed to it.
    fn allows(&self, runner: &Mount) -> bool {
        let in_view = runner.path.starts_with(self.cwd) && runner.path != self.cwd;
        let others_streamable = match &self.unstreamable[..] {
            [] => true,
            [only] => *only == runner.name,
            _ => false,
        };
        in_view && others_streamable && !self.below_another.contains(runner.name.as_str())
    }
}
