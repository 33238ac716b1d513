//! Where a command can really run. A proxy runs the words bash expanded, unchanged (a `grep`
//! prefix or an error message names a file as the script did), so a command may run at a mount's
//! proxy only when every file it names lies on that mount and the proxy sees each word as the
//! client does: a relative word from a working directory on the mount or above it, an absolute
//! word only when the mount's `export` is its `path`. The one exception is a `streamable` input
//! on another mount: its own proxy streams it to the command's, where a pipe stands in for it
//! under the same word. These rules are the planner's, so that `--explain`, the editor and the
//! runtime agree; the runtime only translates the plan.

use std::path::{Component, Path};

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

impl Reach {
    /// Whether `mount`'s proxy may run it.
    pub(crate) fn allows(&self, mount: &str) -> bool {
        match self {
            Reach::Anywhere => true,
            Reach::ClientOr(names) => names.iter().any(|n| n == mount),
            Reach::ClientOnly(_) | Reach::SeveralMounts => false,
        }
    }
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
/// one of them can be streamed to that mount's proxy: see [`streamed_here`].
pub(crate) fn reach<'w>(ctx: &PlanContext<'_>, words: impl IntoIterator<Item = FileWord<'w>>) -> Reach {
    let cwd = normalize_path(&ctx.cwd);
    let mut files: Vec<(FileWord<'w>, &Mount)> = Vec::new();
    for file in words {
        let word = file.word;
        // Every machine has a /dev/null; writing there leaves nothing to compare.
        if word == "/dev/null" {
            continue;
        }
        let path = normalize_path(&cwd.join(word));
        let Some(mount) = ctx.config.mount_for(&path) else {
            return Reach::ClientOnly(format!("`{word}` is on no mount"));
        };
        if Path::new(word).is_absolute() {
            if normalize_path(&mount.export) != mount.path {
                return Reach::ClientOnly(format!(
                    "the proxy of {} would see `{word}` as another file (the mount's export is not its path)",
                    mount.name
                ));
            }
        } else if !cwd.starts_with(&mount.path) && !mount.path.starts_with(&cwd) {
            return Reach::ClientOnly(format!(
                "`{word}` is relative and the working directory is neither on {} nor above it",
                mount.name
            ));
        } else if path == mount.path && cwd != mount.path {
            // From above the mount, the proxy shows the export through a symbolic link (a job's
            // view), which `find`, `ls -l` or `tar` would see as a link.
            return Reach::ClientOnly(format!("the proxy of {} would show `{word}` as a symbolic link", mount.name));
        }
        files.push((file, mount));
    }
    let mut mounts: Vec<&Mount> = Vec::new();
    for (_, mount) in &files {
        if !mounts.iter().any(|m| m.name == mount.name) {
            mounts.push(mount);
        }
    }
    let mut runners: Vec<String> = match &mounts[..] {
        [] => return Reach::Anywhere,
        [one] => vec![one.name.clone()],
        several => {
            let holders = several.iter().filter(|runner| streamed_here(ctx, &cwd, runner, &files));
            holders.map(|runner| runner.name.clone()).collect()
        }
    };
    // A mount that holds none of its files may run it too, every file streamed to it: where its
    // standard input comes from a command at that proxy (`sort a/x | comm -12 - b/y`), the
    // files may be the smaller part to move. The cost decides.
    let others = ctx.config.mounts.iter().filter(|m| !mounts.iter().any(|held| held.name == m.name));
    runners.extend(others.filter(|runner| streamed_here(ctx, &cwd, runner, &files)).map(|m| m.name.clone()));
    if runners.is_empty() { Reach::SeveralMounts } else { Reach::ClientOr(runners) }
}

/// Whether the proxy of `runner` can run a command whose files are `files` with every file on
/// another mount streamed to it from that mount's proxy. The job then runs in a view (the
/// working directory lies above `runner`'s mount), where a pipe takes the streamed word's place
/// under the very name bash gave it; so the word must be relative and plain (no `.` or `..`),
/// named once, outside `runner`'s own mount (a nested mount's files lie under the link to its
/// parent's export), and a file with content (an empty pipe gives no sign that its reader came).
/// A file that does not exist yet is planned as the file the script will have written by then
/// (at run time, a missing or empty one leaves the command to the client, whose message about it
/// is bash's).
fn streamed_here(ctx: &PlanContext<'_>, cwd: &Path, runner: &Mount, files: &[(FileWord<'_>, &Mount)]) -> bool {
    let in_view = runner.path.starts_with(cwd) && runner.path != cwd;
    let elsewhere = files.iter().filter(|(_, mount)| mount.name != runner.name);
    in_view
        && elsewhere.clone().all(|(file, _)| {
            let path = cwd.join(file.word);
            let plain = Path::new(file.word).components().all(|c| matches!(c, Component::Normal(_)));
            let once = files.iter().filter(|(other, _)| other.word == file.word).count() == 1;
            let content = ctx.fs.metadata(&path).is_none_or(|m| m.kind == FileKind::File && m.size > 0);
            file.streamable && plain && once && !path.starts_with(&runner.path) && content
        })
}
