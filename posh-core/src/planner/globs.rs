//! Globs the proxy of a mount expands (issue 40). A handed-over pipeline's word such as
//! `logs/*.log` would have bash list `logs/` at the client, through the networked mount: a
//! readdir and a lookup per name over the link, then every name sent up again. When the
//! directory the glob lists lies on a mount, the rewrite passes the word to the runtime
//! unexpanded (with the shell's glob options) and the runtime has the mount's proxy expand it:
//! bash itself, next to the data, so the names are bash's. This module is the rule for which
//! words go, so that `--explain` says it and the rewrite does it.
//!
//! The words covered are plain patterns: unquoted literal characters only (no quotes,
//! backslashes, expansions, braces or tilde), with a `*`, `?` or an extended pattern
//! (`@(...)`), a literal directory before its first pattern component that lies on a mount with
//! no other mount below it (a glob that could reach two mounts is bash's), and no `..` after it
//! (it could leave the export). Anything else is globbed by bash, as before.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::fs::normalize_path;
use crate::rewrite::TextScope;
use crate::shell::{Pipeline, Word};
use crate::text::Span;

/// A word of a handed-over pipeline the proxy of `mount` expands.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GlobAtProxy {
    #[serde(skip)]
    pub span: Span,
    /// The word as written.
    pub word: String,
    pub mount: String,
}

/// The globs of `pipeline` (handed over whole, starting in `cwd`) that the proxies expand.
/// `text` is made for `source` (see [`TextScope`]).
pub fn at_proxies(
    config: &Config,
    source: &str,
    text: &TextScope,
    pipeline: &Pipeline,
    cwd: &Path,
) -> Vec<GlobAtProxy> {
    let mut found = Vec::new();
    for (c, command) in pipeline.commands.iter().enumerate() {
        for (w, word) in command.words.iter().enumerate() {
            if !word.glob
                || word.literal.is_some()
                || crate::rewrite::why_glob_stays(source, text, pipeline, c, w).is_some()
            {
                continue;
            }
            if let Some(mount) = mount_of(config, word, cwd) {
                found.push(GlobAtProxy {
                    span: word.span,
                    word: word.raw.to_string(),
                    mount: config.mounts[mount].name.clone(),
                });
            }
        }
    }
    found
}

/// The mount (index) whose proxy expands `word` in `cwd`, if it is a plain pattern over one.
pub fn mount_of(config: &Config, word: &Word, cwd: &Path) -> Option<usize> {
    let (prefix, _) = split_pattern(&word.raw)?;
    let dir = listed_dir(prefix, cwd);
    let mount = config.mount_index_for(&dir)?;
    // A mount below the listed directory is another proxy's: a name there may not be what
    // this proxy sees.
    let nested = config.mounts.iter().any(|m| m.path != config.mounts[mount].path && m.path.starts_with(&dir));
    (!nested).then_some(mount)
}

/// The directory a pattern's literal `prefix` names from `cwd`.
pub fn listed_dir(prefix: &str, cwd: &Path) -> PathBuf {
    normalize_path(&cwd.join(prefix))
}

/// A plain pattern (see the module) split before its first pattern component: the literal
/// directory as written, ending in `/` (empty: the working directory), and the rest.
pub fn split_pattern(raw: &str) -> Option<(&str, &str)> {
    let plain = |c: char| !c.is_ascii() || c.is_ascii_alphanumeric() || "/._-+@,:=%*?[]!^()|".contains(c);
    if raw.is_empty() || raw.starts_with('-') || !raw.chars().all(plain) || raw.contains("//") {
        return None;
    }
    let extended = ["@(", "!(", "+(", "?(", "*("].iter().any(|open| raw.contains(open));
    if !raw.contains(['*', '?']) && !extended {
        return None;
    }
    let special = |c: char| "*?[]()|".contains(c) || (c == '@' || c == '!' || c == '+');
    let first = raw.find(special)?;
    let cut = raw[..first].rfind('/').map_or(0, |slash| slash + 1);
    let (prefix, rest) = raw.split_at(cut);
    if rest.split('/').any(|component| component == "..") {
        return None;
    }
    Some((prefix, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_patterns_split_before_their_first_pattern_component() {
        assert_eq!(split_pattern("logs/*.log"), Some(("logs/", "*.log")));
        assert_eq!(split_pattern("*.log"), Some(("", "*.log")));
        assert_eq!(split_pattern("/mnt/d/a/*/x?.txt"), Some(("/mnt/d/a/", "*/x?.txt")));
        assert_eq!(split_pattern("../d/**/*.log"), Some(("../d/", "**/*.log")));
        assert_eq!(split_pattern("d/@(a|b).txt"), Some(("d/", "@(a|b).txt")));
        assert_eq!(split_pattern("a+b/*.txt"), Some(("", "a+b/*.txt")), "a literal `+` starts a pattern: bash's too");
        for not_plain in ["\"$d\"/*.log", "$d/*", "~/x*", "{a,b}*", "a\\*b*", "d/[ab].txt", "d/*/../x*", "a//b*", "-x*"]
        {
            assert_eq!(split_pattern(not_plain), None, "{not_plain}");
        }
    }
}
