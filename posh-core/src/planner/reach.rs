//! Where a command can really run. A proxy runs the words bash expanded, unchanged (a `grep`
//! prefix or an error message names a file as the script did), so a command may run at a mount's
//! proxy only when every file it names lies on that mount and the proxy sees each word as the
//! client does: a relative word from a working directory on the mount or above it, an absolute
//! word only when the mount's `export` is its `path`. These rules are the planner's, so that
//! `--explain`, the editor and the runtime agree; the runtime only translates the plan.

use std::path::Path;

use crate::config::Mount;
use crate::fs::normalize_path;
use crate::planner::PlanContext;

/// The places a command may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// It names no file: any proxy can run it (as any machine can).
    Anywhere,
    /// The client, or the proxy of this mount.
    ClientOr(String),
    /// Only the client, for this reason (the plan's `Why::ClientOnly`).
    ClientOnly(String),
    /// Only the client: its files lie on several mounts.
    SeveralMounts,
}

impl Reach {
    /// Whether `mount`'s proxy may run it.
    pub(crate) fn allows(&self, mount: &str) -> bool {
        match self {
            Reach::Anywhere => true,
            Reach::ClientOr(name) => name == mount,
            Reach::ClientOnly(_) | Reach::SeveralMounts => false,
        }
    }
}

/// Where a command that names `words` (its file arguments and redirection targets, as bash
/// expands them; `-` left out) may run.
pub(crate) fn reach<'w>(ctx: &PlanContext<'_>, words: impl IntoIterator<Item = &'w str>) -> Reach {
    let cwd = normalize_path(&ctx.cwd);
    let mut on: Option<&Mount> = None;
    for word in words {
        // Every machine has a /dev/null; writing there leaves nothing to compare.
        if word == "/dev/null" {
            continue;
        }
        let path = normalize_path(&cwd.join(word));
        let Some(mount) = ctx.config.mount_for(&path) else {
            return Reach::ClientOnly(format!("`{word}` is on no mount"));
        };
        match on {
            Some(first) if first.name != mount.name => return Reach::SeveralMounts,
            _ => on = Some(mount),
        }
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
    }
    on.map_or(Reach::Anywhere, |mount| Reach::ClientOr(mount.name.clone()))
}
