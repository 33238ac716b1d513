//! What the proxy agrees to run: annotated commands whose files and working directory stay
//! under the export root, with an environment it builds itself.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use posh_core::annotation::model::ArgType;
use posh_core::library::Library;

use super::glob::GlobRequest;
use super::protocol::{JobCommand, MAX_EXPECTED_GLOBS, MAX_HOME_BYTES, Redirect, Request, VERSION, VERSION_EXPECTING};

/// The only `PATH` a command run by the proxy sees.
pub const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A command that passed every check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    pub argv: Vec<String>,
    /// The complete environment of the command.
    pub env: Vec<(String, String)>,
    /// The command's redirections, targets resolved.
    pub redirects: Vec<CheckedRedirect>,
    /// Output files named by argv words, resolved, with what the command does to them.
    pub outputs: Vec<(PathBuf, WordChange)>,
    /// Every file word (inputs and outputs), resolved.
    pub files: Vec<PathBuf>,
    /// The files of the command's own home (relative path, content), when it has one.
    pub home: Option<Vec<(PathBuf, String)>>,
}

/// What a command does to a file one of its words names, as its annotation says: what a proxy
/// keeps to undo it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordChange {
    /// It may rewrite the file (`sort -o`, `cp`).
    Written,
    /// It never rewrites what the file held (`tee -a`, `>>`; `touch`): it appends, makes it, or
    /// changes only its times.
    Appended,
    /// It removes or replaces the name (`rm`, `rmdir`, `ln -f`).
    Removed,
}

/// A redirection the proxy applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckedRedirect {
    /// `fd < path`.
    Read { fd: u32, path: PathBuf },
    /// `fd > path` (`append` for `>>`); `clobber` for `>|`.
    Write { fd: u32, path: PathBuf, append: bool, clobber: bool },
    /// `fd >& source`.
    Dup { fd: u32, source: u32 },
}

/// Whether this proxy speaks the request's protocol `version`.
pub fn check_version(version: u32) -> Result<(), String> {
    match version {
        VERSION => Ok(()),
        other => Err(format!("unsupported request version {other} (this proxy speaks {VERSION})")),
    }
}

/// Checks a request's version and working directory (against the canonical export root) and
/// returns the directory, canonical.
#[expect(
    clippy::disallowed_methods,
    reason = "check-time resolution of the canonical path, which must follow links that stay in the export; every use of what it returns goes through confined_fs, which refuses a link met later"
)]
pub fn check_request(root: &Path, request: &Request) -> Result<PathBuf, String> {
    match (request.version, request.expect_globs.len()) {
        (VERSION_EXPECTING, 1..=MAX_EXPECTED_GLOBS) => {
            for expected in &request.expect_globs {
                expected.glob.check()?;
            }
        }
        (VERSION_EXPECTING, 0) => return Err(format!("a request of version {VERSION_EXPECTING} expects no glob")),
        (VERSION_EXPECTING, n) => {
            return Err(format!("a request expecting {n} globs (at most {MAX_EXPECTED_GLOBS})"));
        }
        (version, 0) => check_version(version)?,
        (version, _) => return Err(format!("a request of version {version} expecting globs")),
    }
    match (&request.glob, request.commands.is_empty()) {
        (None, true) => return Err("a job without commands".to_string()),
        (Some(_), false) => return Err("a glob request with commands".to_string()),
        (Some(_), true) if request.view.is_some() || request.peer_output.is_some() => {
            return Err("a glob request with a view or a peer".to_string());
        }
        _ => {}
    }
    let cwd = resolve(root, root, &request.cwd).map_err(|e| format!("working directory `{}`: {e}", request.cwd))?;
    if !cwd.is_dir() {
        return Err(format!("working directory `{}` is not a directory under the export", request.cwd));
    }
    if let Some(view) = &request.view {
        let normal = Path::new(view).components().all(|c| matches!(c, Component::Normal(_)));
        if view.is_empty() || !normal {
            return Err(format!("`{view}` cannot place the export in a view"));
        }
    }
    Ok(cwd)
}

/// Checks one command against the library and the export root (which must be canonical);
/// `cwd` comes from [`check_request`]. `fed` are the words that name pipes the proxy makes in
/// the job's view, fed by other proxies (`Request::peer_inputs`): the command may read them. The
/// error is the message sent back to the client.
pub fn check(
    library: &Library,
    root: &Path,
    cwd: &Path,
    command: &JobCommand,
    fed: &[&str],
) -> Result<Checked, String> {
    let Some(program) = command.argv.first() else {
        return Err("empty command".to_string());
    };
    if program.is_empty() || program.contains('/') {
        return Err(format!("`{program}`: the command must be a bare name, found in the proxy's PATH"));
    }
    let invocation = library.match_argv(&command.argv).map_err(|e| format!("refused: {e}; nothing was run"))?;
    // Names read from input are names no check here sees; the sandbox would let them reach the
    // proxy's own /etc and /usr, where under bash they would name the client's files.
    if let Some(from) = invocation.file_lists_in_words() {
        return Err(format!(
            "refused: `{program}` opens files named in {from}, which the proxy cannot check; nothing was run"
        ));
    }

    let mut files: Vec<String> = Vec::new();
    let mut outputs = Vec::new();
    for value in &invocation.values {
        let text = invocation.value_text(value);
        if value.ty.is_file() {
            files.push(text.to_string());
        }
        if value.ty.is_output() && text != "-" {
            let path = resolve(root, cwd, text).map_err(|e| format!("`{text}`: {e}"))?;
            let change = match value.ty {
                ArgType::RemovedFile => WordChange::Removed,
                _ if invocation.appends_to(value) => WordChange::Appended,
                _ => WordChange::Written,
            };
            outputs.push((path, change));
        }
    }
    for default in &invocation.defaults {
        if default.ty.is_file() {
            files.push(default.value.clone());
        }
        if default.ty.is_output() {
            let path = resolve(root, cwd, &default.value).map_err(|e| format!("`{}`: {e}", default.value))?;
            let change = if default.ty == ArgType::RemovedFile { WordChange::Removed } else { WordChange::Written };
            outputs.push((path, change));
        }
    }
    for &index in &command.files {
        match command.argv.get(index) {
            Some(word) => files.push(word.clone()),
            None => return Err(format!("file index {index} is out of range")),
        }
    }
    let mut paths = Vec::with_capacity(files.len());
    for file in &files {
        if file == "-" || fed.contains(&file.as_str()) {
            continue; // standard input or output, or a pipe the proxy made
        }
        paths.push(resolve(root, cwd, file).map_err(|e| format!("`{file}`: {e}"))?);
    }
    let redirects =
        command.redirects.iter().map(|r| check_redirect(root, cwd, r)).collect::<Result<Vec<_>, String>>()?;

    let mut env = vec![("PATH".to_string(), PATH.to_string())];
    for (name, value) in &command.env {
        check_env_name(name, &invocation.entry.options.reads_env)?;
        env.push((name.clone(), value.clone()));
    }
    let home = command.home.as_ref().map(check_home).transpose()?;
    Ok(Checked { argv: command.argv.clone(), env, redirects, outputs, files: paths, home })
}

/// The one command of a glob request (`Request::glob`): the proxy's own bash script, which
/// matches the client's patterns in the job's working directory under the job's sandbox, with
/// the client's glob options and locale. Nothing it runs comes from the client but the patterns,
/// which bash only matches (never evaluates).
pub fn check_glob(glob: &GlobRequest) -> Result<Checked, String> {
    glob.check()?;
    let mut env = vec![("PATH".to_string(), PATH.to_string())];
    env.extend(glob.locale.iter().map(|(name, value)| (name.clone(), value.clone())));
    Ok(Checked { argv: glob.argv(), env, redirects: Vec::new(), outputs: Vec::new(), files: Vec::new(), home: None })
}

fn check_redirect(root: &Path, cwd: &Path, redirect: &Redirect) -> Result<CheckedRedirect, String> {
    let fd = redirect.fd;
    if fd > 2 {
        return Err(format!("redirection of descriptor {fd}: only 0, 1 and 2 are supported"));
    }
    let path = || -> Result<PathBuf, String> {
        if redirect.target == "/dev/null" {
            return Ok(PathBuf::from("/dev/null"));
        }
        resolve(root, cwd, &redirect.target).map_err(|e| format!("`{}`: {e}", redirect.target))
    };
    Ok(match redirect.op.as_str() {
        "<" => CheckedRedirect::Read { fd, path: path()? },
        ">" | ">|" | ">>" => {
            CheckedRedirect::Write { fd, path: path()?, append: redirect.op == ">>", clobber: redirect.op == ">|" }
        }
        ">&" => match redirect.target.parse::<u32>() {
            Ok(source) if source <= 2 => CheckedRedirect::Dup { fd, source },
            _ => return Err(format!("`{fd}>&{}`: only descriptors 0 to 2 can be duplicated", redirect.target)),
        },
        other => return Err(format!("redirection `{other}` is not supported by the proxy")),
    })
}

/// The files of a command's own home: relative paths without `.` or `..`, a few hundred KiB in
/// all. They are written into the job's private directory, never under the export.
fn check_home(files: &BTreeMap<String, String>) -> Result<Vec<(PathBuf, String)>, String> {
    let total: usize = files.values().map(String::len).sum();
    if total > MAX_HOME_BYTES || files.len() > 64 {
        return Err(format!(
            "the command's home files hold {total} bytes in {} files, more than a job takes",
            files.len()
        ));
    }
    files
        .iter()
        .map(|(path, text)| {
            let relative = Path::new(path);
            let normal = !path.is_empty() && relative.components().all(|c| matches!(c, Component::Normal(_)));
            if normal {
                Ok((relative.to_path_buf(), text.clone()))
            } else {
                Err(format!("`{path}` cannot be a file of a home"))
            }
        })
        .collect()
}

/// Whether a request may set `name` for a command whose annotation reads `reads_env`: only what
/// `reaches_proxy` allows, and never what would change which program runs or what it loads.
fn check_env_name(name: &str, reads_env: &[String]) -> Result<(), String> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("`{name}` is not a valid environment variable name"));
    }
    const DENIED: &[&str] = &[
        "PATH",
        "IFS",
        "ENV",
        "BASH_ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "GCONV_PATH",
        "LOCPATH",
        "NLSPATH",
        "HOSTALIASES",
        "GLIBC_TUNABLES",
        "TMPDIR",
        "HOME",
    ];
    let prefixed = ["LD_", "MALLOC_", "BASH_FUNC_"].iter().any(|p| name.starts_with(p));
    if DENIED.contains(&name) || prefixed {
        return Err(format!("the proxy does not let a request set `{name}`"));
    }
    if !posh_core::planner::reaches_proxy(name, reads_env) {
        return Err(format!(
            "the proxy does not let a request set `{name}`: only the locale, `TZ` and what the command's \
             annotation says it reads"
        ));
    }
    Ok(())
}

/// Resolves `path` (relative) against `base` (canonical, under `root`), following every symlink
/// of the part that exists, and checks that each step stays under `root`. A path that does not
/// exist yet (an output) is allowed as long as its existing prefix is under `root` and no `..`
/// follows a missing component.
#[expect(
    clippy::disallowed_methods,
    reason = "check-time resolution of the canonical path, which must follow links that stay in the export; every use of what it returns goes through confined_fs, which refuses a link met later"
)]
pub fn resolve(root: &Path, base: &Path, path: &str) -> Result<PathBuf, String> {
    let mut rel = Path::new(path);
    let mut base = base;
    // A base outside the root is a job's view (see `Request::view`): its own directories may be
    // crossed on the way to the export, but the path must end under the root.
    if rel.is_absolute() {
        // An absolute path is the proxy's own: it must name something under the export root.
        rel = rel.strip_prefix(root).map_err(|_| "the absolute path is not under the export root".to_string())?;
        base = root;
    }
    let in_view = !base.starts_with(root);
    let escapes = || "the path leads outside the export".to_string();
    let mut current = base.to_path_buf();
    let mut missing = false;
    for component in rel.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if missing {
                    return Err("`..` after a component that does not exist".to_string());
                }
                current.pop();
            }
            Component::Normal(name) => {
                current.push(name);
                if !missing {
                    match std::fs::symlink_metadata(&current) {
                        // A name that is no link, pushed onto a canonical path, leaves it
                        // canonical: only links are resolved (a glob of 2,000 files was 2,000
                        // walks from `/` before a job could start).
                        Ok(meta) if !meta.file_type().is_symlink() => {}
                        Ok(_) => {
                            current = std::fs::canonicalize(&current).map_err(|e| match e.kind() {
                                io::ErrorKind::NotFound => "a symlink to a missing target is refused: it could lead \
                                                            outside the export"
                                    .to_string(),
                                _ => format!("cannot resolve `{}`: {e}", current.display()),
                            })?;
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotFound => missing = true,
                        Err(e) => return Err(format!("cannot inspect `{}`: {e}", current.display())),
                    }
                }
            }
            Component::RootDir | Component::Prefix(_) => return Err(escapes()),
        }
        let within = current.starts_with(root) || (in_view && current.starts_with(base));
        if !within {
            return Err(escapes());
        }
    }
    if !current.starts_with(root) {
        return Err(escapes());
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job whose globs must expand as expected says so by its version: one that says it
    /// without expecting any, or expects some under the plain version (which an older proxy
    /// would run unconditioned), is refused, and so is an expected glob a glob request would be.
    #[test]
    fn a_job_expecting_globs_says_so_by_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let glob = GlobRequest { patterns: vec!["*.log".into()], ..GlobRequest::default() };
        let expected = crate::glob::ExpectedGlob::new(String::new(), glob.clone(), &[vec![]]);
        let job = |version, expect_globs| Request { version, expect_globs, ..Request::new(&["cat", "a.log"]) };
        assert!(check_request(&root, &job(VERSION, Vec::new())).is_ok());
        assert!(check_request(&root, &job(VERSION_EXPECTING, vec![expected.clone()])).is_ok());
        assert!(check_request(&root, &job(VERSION_EXPECTING, Vec::new())).unwrap_err().contains("expects no glob"));
        assert!(check_request(&root, &job(VERSION, vec![expected.clone()])).unwrap_err().contains("expecting globs"));
        let many = vec![expected.clone(); MAX_EXPECTED_GLOBS + 1];
        assert!(check_request(&root, &job(VERSION_EXPECTING, many)).unwrap_err().contains("at most"));
        let bad = GlobRequest { options: vec!["xpg_echo".into()], ..glob };
        let bad = crate::glob::ExpectedGlob { glob: bad, ..expected };
        assert!(check_request(&root, &job(VERSION_EXPECTING, vec![bad])).unwrap_err().contains("xpg_echo"));
    }

    #[test]
    fn commands_that_read_file_names_from_input_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("list.txt"), "/etc/passwd\n").unwrap();
        let library = Library::builtin();
        let job =
            |argv: &[&str]| JobCommand { argv: argv.iter().map(|w| w.to_string()).collect(), ..JobCommand::default() };
        let refused = |argv: &[&str]| check(&library, &root, &root, &job(argv), &[]).unwrap_err();
        assert_eq!(
            refused(&["xargs", "cat"]),
            "refused: `xargs` opens files named in standard input, which the proxy cannot check; nothing was run"
        );
        assert!(refused(&["tar", "-cf", "out.tar", "-T", "list.txt"]).contains("opens files named in `list.txt`"));
        assert!(
            check(&library, &root, &root, &job(&["cat", "list.txt"]), &[]).is_ok(),
            "a named file is checked and run"
        );
    }

    #[test]
    fn a_home_holds_only_a_few_files_below_it() {
        let home = |files: &[(&str, usize)]| {
            let files = files.iter().map(|(path, len)| (path.to_string(), "x".repeat(*len))).collect();
            check_home(&files).map(|files| files.len())
        };
        assert_eq!(home(&[(".gitconfig", 10), (".config/git/ignore", 10)]), Ok(2));
        for bad in ["../.ssh/authorized_keys", "/etc/passwd", "a/../../b", "./x", ""] {
            assert_eq!(home(&[(bad, 1)]), Err(format!("`{bad}` cannot be a file of a home")), "{bad}");
        }
        assert!(home(&[(".gitconfig", MAX_HOME_BYTES + 1)]).unwrap_err().contains("more than a job takes"));
    }

    #[test]
    fn output_words_say_what_the_command_does_to_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let library = Library::builtin();
        let changes = |argv: &[&str]| {
            let command = JobCommand { argv: argv.iter().map(|w| w.to_string()).collect(), ..JobCommand::default() };
            let checked = check(&library, &root, &root, &command, &[]).unwrap();
            checked
                .outputs
                .into_iter()
                .map(|(path, change)| (path.strip_prefix(&root).unwrap().to_owned(), change))
                .map(|(path, change)| format!("{} {change:?}", path.display()))
                .collect::<Vec<_>>()
        };
        assert_eq!(changes(&["tee", "-a", "log.txt"]), ["log.txt Appended"]);
        assert_eq!(
            changes(&["tee", "--append", "-i", "log.txt", "other.txt"]),
            ["log.txt Appended", "other.txt Appended"]
        );
        assert_eq!(changes(&["tee", "log.txt"]), ["log.txt Written"]);
        assert_eq!(changes(&["sort", "-o", "out.txt", "in.txt"]), ["out.txt Written"]);
        assert_eq!(changes(&["touch", "a", "b"]), ["a Appended", "b Appended"]);
        assert_eq!(changes(&["rm", "-f", "a", "sub/b"]), ["a Removed", "sub/b Removed"]);
        assert_eq!(changes(&["ln", "-sf", "target", "name"]), ["name Removed"]);
    }

    #[test]
    fn removed_names_are_checked_like_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let command = JobCommand { argv: ["rm", "-f", "../x"].map(String::from).to_vec(), ..JobCommand::default() };
        let refused = check(&Library::builtin(), &root, &root, &command, &[]).unwrap_err();
        assert!(refused.contains("`../x`"), "{refused}");
    }

    #[test]
    fn resolve_keeps_paths_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("export");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), root.join("dangling")).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        assert_eq!(resolve(&root, &root, "sub/../a.txt").unwrap(), root.join("a.txt"));
        assert_eq!(resolve(&root, &root, "").unwrap(), root);
        assert!(resolve(&root, &root, "../secret").is_err());
        assert!(resolve(&root, &root, "/etc/passwd").is_err());
        assert_eq!(
            resolve(&root, &root.join("sub"), root.join("a.txt").to_str().unwrap()).unwrap(),
            root.join("a.txt")
        );
        assert!(resolve(&root, &root, root.join("../secret").to_str().unwrap()).is_err());
        // Through a view: its directories lead to the export, nowhere else.
        let view = dir.path().join("view");
        std::fs::create_dir_all(view.join("a")).unwrap();
        std::os::unix::fs::symlink(&root, view.join("a/export")).unwrap();
        assert_eq!(resolve(&root, &view, "a/export/sub/x").unwrap(), root.join("sub/x"));
        assert_eq!(resolve(&root, &view, "a/../a/export").unwrap(), root);
        assert!(resolve(&root, &view, "a").is_err(), "the view itself is not the export");
        assert!(resolve(&root, &view, "../secret").is_err());
        assert!(resolve(&root, &root, "out").is_err());
        assert!(resolve(&root, &root, "dangling").is_err());
        assert!(resolve(&root, &root, "new/../../x").is_err());
        // Below directories that are no links, a link is still followed, and still checked.
        std::fs::create_dir_all(root.join("sub2")).unwrap();
        std::os::unix::fs::symlink("../sub2", root.join("sub/across")).unwrap();
        std::os::unix::fs::symlink("../../secret", root.join("sub/up")).unwrap();
        assert_eq!(resolve(&root, &root, "sub/across/f").unwrap(), root.join("sub2/f"));
        assert_eq!(resolve(&root, &root, "sub/across/../sub/x").unwrap(), root.join("sub/x"));
        assert!(resolve(&root, &root, "sub/up").is_err());
        assert!(resolve(&root, &root, "sub/./up/x").is_err());
    }
}
