//! The shipped annotation library: it loads whole, covers the commands people use, and is true:
//! every example, run under `strace -f` on real temporary files, touches only the files its
//! annotation predicts.

use std::path::{Path, PathBuf};

use posh_core::annotation;
use posh_core::library::{Library, LibraryEntry, builtin_sources};

use crate::trace::{self, AccessMode, FileAccess};

#[test]
fn library_loads_without_diagnostics() {
    let mut problems = Vec::new();
    for (name, text) in builtin_sources() {
        let index = posh_core::LineIndex::new(text);
        for d in annotation::parse(text).diagnostics {
            let (line, col) = index.line_col(text, d.span.start);
            problems.push(format!(
                "annotations/{name}:{line}:{col}: {}[{}]: {}",
                d.severity.as_str(),
                d.code.as_str(),
                d.message
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn library_covers_the_commands_of_data_pipelines() {
    let library = Library::builtin();
    let names = library.command_names();
    assert!(names.len() >= 60, "only {} commands: {names:?}", names.len());
    for needed in [
        "cat",
        "tac",
        "grep",
        "sed",
        "awk",
        "sort",
        "uniq",
        "cut",
        "tr",
        "head",
        "tail",
        "wc",
        "comm",
        "join",
        "paste",
        "tee",
        "gzip",
        "zcat",
        "tar",
        "find",
        "xargs",
        "md5sum",
        "sha256sum",
        "jq",
        "git status",
        "git add",
        "git commit",
        "git diff",
        "git log",
        "convert",
        "mogrify",
        "ffmpeg",
    ] {
        assert!(names.iter().any(|n| n == needed), "no annotation for `{needed}`");
    }
    let without_example: Vec<String> = library
        .entries()
        .filter(|e| e.entry.examples.is_empty())
        .map(|e| format!("{} ({})", e.entry.display_name(), e.source))
        .collect();
    assert!(without_example.is_empty(), "entries without an example: {without_example:?}");
}

#[test]
fn user_files_override_and_extend_the_library() {
    let mut library = Library::builtin();
    let grep_entries = library.candidates("grep").len();
    assert!(grep_entries > 0);
    let diagnostics = library
        .add_source("mine.posh", "grep: PARAMS:[(type:str,size:1)]\nmytool: PARAMS:[(type:input_file,size:list)]\n");
    assert!(diagnostics.is_empty());
    assert_eq!(library.candidates("grep").len(), 1, "a user file that names grep replaces the shipped entries");
    assert!(library.match_argv(&words("grep -v x a.txt")).is_err());
    assert_eq!(library.match_argv(&words("/opt/bin/mytool a b")).unwrap().input_files(), ["a", "b"]);
    assert!(!library.candidates("cat").is_empty(), "commands the user file does not name stay");
}

#[test]
fn paper_invocations_against_the_library() {
    let library = Library::builtin();
    let mut out = String::new();
    for line in [
        "cat A B C D",
        "grep foo",
        "tar -cvf out.tar.gz input/",
        "tar -xvf in.tar.gz",
        "git status",
        "mogrify -format gif -path thumbs -thumbnail 100x100 a.jpg b.jpg",
        "comm -12 a b",
    ] {
        out.push_str(&format!("$ {line}\n"));
        match library.match_argv(&words(line)) {
            Ok(invocation) => {
                let header = annotation::format::format_header(invocation.entry);
                out.push_str(&format!("entry {header}:\n{}", invocation.describe()));
            }
            Err(why) => out.push_str(&format!("{why}\n")),
        }
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}

fn words(line: &str) -> Vec<String> {
    shell_words::split(line).expect("a valid command line")
}

/// What a traced example did that its annotation did not predict.
struct Violation {
    example: String,
    source: String,
    message: String,
}

/// Each example run under strace touches only the files its annotation predicts, and one that
/// reads a list on its standard input through an `output_lines_of_input` entry prints only lines
/// of it.
#[test]
fn examples_touch_only_the_files_their_annotation_predicts() {
    let library = Library::builtin();
    let cases: Vec<(&LibraryEntry, &str)> =
        library.entries().flat_map(|e| e.entry.examples.iter().map(move |x| (e, x.text.as_str()))).collect();
    assert!(!cases.is_empty());
    // Two workers: the machines have two cores, and most of the time goes to strace.
    let (left, right) = cases.split_at(cases.len() / 2);
    let violations: Vec<Violation> = std::thread::scope(|scope| {
        let workers: Vec<_> = [left, right]
            .into_iter()
            .map(|chunk| {
                scope.spawn(|| {
                    chunk
                        .iter()
                        .flat_map(|(entry, example)| check_example(&library, entry, example))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a worker panicked")).collect()
    });
    let report: Vec<String> =
        violations.iter().map(|v| format!("annotations/{}: `{}`: {}", v.source, v.example, v.message)).collect();
    assert!(
        report.is_empty(),
        "{} of {} examples disagree with their annotations:\n{}",
        violations.len(),
        cases.len(),
        report.join("\n")
    );
}

fn check_example(library: &Library, entry: &LibraryEntry, example: &str) -> Vec<Violation> {
    let violation = |message: String| Violation { example: example.to_string(), source: entry.source.clone(), message };
    let argv = words(example);
    let invocation = match library.match_argv(&argv) {
        Ok(invocation) if std::ptr::eq(invocation.entry, &entry.entry) => invocation,
        Ok(other) => {
            return vec![violation(format!("another entry of `{}` takes the example", other.entry.display_name()))];
        }
        Err(why) => return vec![violation(why.to_string())],
    };
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let root = scratch.path().canonicalize().expect("the temporary directory exists");
    let (cwd, home) = (root.join("work"), root.join("home"));
    for dir in [&cwd, &home] {
        std::fs::create_dir(dir).expect("creating test directories");
    }
    let setup = || -> std::io::Result<()> {
        if entry.entry.name[0] == "git" {
            trace::init_git_repo(&cwd)?;
        }
        for input in invocation.input_files().iter().filter(|w| *w != "-") {
            let path = cwd.join(input);
            if !path.exists() {
                // The fixture maker reads the word's form (a trailing `/` means a directory).
                trace::make_input_fixture(&cwd.join(input.as_str()))?;
            }
        }
        for output in invocation.output_files().iter().filter(|w| *w != "-") {
            trace::make_output_parent(&cwd.join(output.as_str()))?;
        }
        // What a command removes or replaces exists first: a file, or with a trailing `/` an
        // empty directory (`rmdir gone/`).
        for removed in invocation.removed_files() {
            match removed.strip_suffix('/') {
                Some(dir) => std::fs::create_dir_all(cwd.join(dir))?,
                None => trace::make_input_fixture(&cwd.join(removed.as_str()))?,
            }
        }
        let mut stdin = trace::FIXTURE_TEXT.to_string();
        let lists = invocation.file_lists();
        if !lists.is_empty() {
            // Every list names one fixture; a single name without a terminator reads the same
            // as lines (`tar -T`) and as NUL-terminated names (`--files0-from`).
            trace::make_input_fixture(&cwd.join(LISTED))?;
            for list in lists {
                match list.as_str() {
                    "-" => stdin = LISTED.to_string(),
                    file => std::fs::write(cwd.join(file), LISTED)?,
                }
            }
        }
        std::fs::write(root.join("stdin.txt"), stdin)
    };
    if let Err(e) = setup() {
        return vec![violation(format!("could not make the example's files: {e}"))];
    }
    let env = [
        ("PATH", "/usr/bin:/bin:/usr/sbin:/sbin"),
        ("LC_ALL", "C"),
        ("TZ", "UTC"),
        ("HOME", home.to_str().expect("a UTF-8 temporary path")),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let traced = match trace::trace(&argv, &cwd, &root.join("stdin.txt"), &env) {
        Ok(traced) => traced,
        Err(e) => return vec![violation(format!("could not trace: {e}"))],
    };
    // 0, or 1 for "no match" or "files differ" (grep, diff, cmp); anything else is a failed run,
    // which proves nothing about the files a successful one touches.
    if !matches!(traced.status.code(), Some(0 | 1)) {
        let stderr = String::from_utf8_lossy(&traced.stderr);
        return vec![violation(format!("the example failed ({}): {}", traced.status, stderr.trim()))];
    }
    let mut violations = Vec::new();
    // `output_lines_of_input`: every line printed is a whole line of what standard input held.
    if invocation.prints_lines_of_input() {
        let input = std::fs::read_to_string(root.join("stdin.txt")).unwrap_or_default();
        let output = String::from_utf8_lossy(&traced.stdout);
        for line in output.lines().filter(|line| !input.lines().any(|l| l == *line)) {
            violations.push(violation(format!("prints `{line}`, no line of its input (`output_lines_of_input`)")));
        }
    }
    let predicted = Predicted::new(&invocation, &cwd);
    // A file made beside a predicted output and renamed onto it is that output in the making
    // (`ln -f` makes the new link under a temporary name first).
    let accesses: Vec<&FileAccess> = traced.user_accesses().collect();
    let made_beside: Vec<&Path> = accesses
        .windows(2)
        .filter(|w| {
            let (source, target) = (w[0], w[1]);
            source.raw == target.raw
                && source.syscall.starts_with("rename")
                && source.mode == AccessMode::Delete
                && source.path.parent() == target.path.parent()
                && predicted.allows(target)
        })
        .map(|w| w[0].path.as_path())
        .collect();
    violations.extend(
        accesses
            .into_iter()
            .filter(|access| !predicted.allows(access) && !made_beside.contains(&access.path.as_path()))
            .map(|access| {
                violation(format!(
                    "{:?} of {} is not predicted ({})",
                    access.mode,
                    access.path.display(),
                    access.raw.trim()
                ))
            }),
    );
    violations
}

/// The one file every list of file names names (`file_list`, `stdin_file_list`).
const LISTED: &str = "listed.txt";

/// The files an annotation says an invocation may touch: its file words, and the files named in
/// the lists it reads names from.
struct Predicted {
    inputs: Vec<PathBuf>,
    outputs: Vec<PathBuf>,
    /// `needs_current_dir`: anything under the working directory.
    anywhere_under: Option<PathBuf>,
    cwd: PathBuf,
}

impl Predicted {
    fn new(invocation: &posh_core::matcher::Invocation<'_>, cwd: &Path) -> Predicted {
        let absolute =
            |words: Vec<String>| words.iter().filter(|w| *w != "-").map(|w| normalize(&cwd.join(w))).collect();
        let mut inputs: Vec<PathBuf> = absolute(invocation.input_files());
        if !invocation.file_lists().is_empty() {
            inputs.push(cwd.join(LISTED));
        }
        Predicted {
            inputs,
            outputs: absolute(invocation.output_files()),
            anywhere_under: invocation.entry.options.needs_current_dir.then(|| cwd.to_path_buf()),
            cwd: cwd.to_path_buf(),
        }
    }

    fn allows(&self, access: &FileAccess) -> bool {
        let within = |roots: &[PathBuf]| roots.iter().any(|root| access.path.starts_with(root));
        if self.anywhere_under.as_ref().is_some_and(|cwd| access.path.starts_with(cwd)) {
            return true;
        }
        // Opening a directory on the way to a predicted file (gzip holds its directory open to
        // use openat safely; xargs opens `/`) resolves a path, it reads no file's data.
        let ancestor =
            |roots: &[PathBuf]| roots.iter().any(|root| root.starts_with(&access.path) && *root != access.path);
        if access.mode == AccessMode::Read
            && (ancestor(&self.inputs) || ancestor(&self.outputs) || ancestor(std::slice::from_ref(&self.cwd)))
        {
            return true;
        }
        match access.mode {
            // Reading what one writes (appending, checking) is still only the predicted files.
            AccessMode::Read => within(&self.inputs) || within(&self.outputs),
            AccessMode::Write | AccessMode::Delete => within(&self.outputs),
        }
    }
}

/// `a/./b/../c` → `a/c`, without touching the file system (outputs may not exist yet).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
