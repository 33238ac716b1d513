//! What the client's planner needs to know of the export (a directory's files and their sizes,
//! the bytes below a directory), answered by the proxy next to the disk. Through a networked
//! mount each `stat` of a plan is a round trip once the mount's attribute cache has lapsed, and
//! a directory's walk one or more per directory; one question answers for a whole directory.
//!
//! Nothing is looked up by name from outside: the directory asked about is opened beneath the
//! export's descriptor (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so neither
//! `..`, an absolute path nor a symbolic link planted by a job leads out of it), its entries are
//! examined relative to that descriptor without following links, and only directories are
//! opened (`O_DIRECTORY | O_NOFOLLOW`: a FIFO is never opened, nothing blocks). The answers are
//! bounded, and the proxy counts each question as one of the client's jobs.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd as _, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

use super::protocol::{Answer, Question, os_message};

/// How many entries a walk of a directory's size visits before it settles for what it has seen,
/// at the client (`os_fs`) and at a proxy alike, so the two give the same figure.
pub const WALK_LIMIT: usize = 20_000;
/// The most entries one listing names.
const LIST_ENTRIES: usize = 20_000;
/// About the most bytes one listing's answer takes (well under `protocol::MAX_LINE`).
const LIST_BYTES: usize = 512 * 1024;

/// Answers `question` about the export rooted at `export`; the error is the message sent back.
/// Blocking (a walk reads many directories): the proxy calls it off its reactor.
pub fn answer(export: &Path, question: &Question) -> Result<Answer, String> {
    let opened = |path: &str| open_beneath(export, path).map_err(|e| format!("`{path}`: {}", os_message(&e)));
    Ok(match question {
        Question::List(path) => list(opened(path)?, LIST_ENTRIES, LIST_BYTES),
        Question::SizeBelow(path) => {
            let mut budget = WALK_LIMIT;
            Answer::SizeBelow(size_below(opened(path)?, &mut budget))
        }
        Question::EndsWithNewline(files) => {
            if files.len() > LIST_ENTRIES {
                return Err(format!("{} files in one question (at most {LIST_ENTRIES})", files.len()));
            }
            let root = opened("")?;
            Answer::EndsWithNewline(files.iter().map(|file| ends_with_newline(&root, file)).collect())
        }
    })
}

/// The directory `path` (relative, `""` for the root) beneath the export.
#[expect(
    clippy::disallowed_methods,
    reason = "the export's own directory, named by the operator; every name in it is opened beneath it"
)]
fn open_beneath(export: &Path, path: &str) -> std::io::Result<OwnedFd> {
    let root = rustix::fs::open(export, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let path = if path.is_empty() { "." } else { path };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    Ok(rustix::fs::openat2(&root, path, flags, Mode::empty(), resolve)?)
}

/// Whether the regular file `path` beneath `root` ends with a newline; `None` when it is empty,
/// not a regular file or not beneath.
fn ends_with_newline(root: &OwnedFd, path: &str) -> Option<bool> {
    let (file, size) = regular_file_beneath(root, path).ok()?;
    if size == 0 {
        return None;
    }
    let mut byte = [0u8];
    let read = rustix::io::pread(&file, &mut byte, size - 1).ok()?;
    (read == 1).then_some(byte[0] == b'\n')
}

/// The regular file `path` (relative) beneath the export, opened for reading, for a
/// `SendFiles` request; the error is the message sent back. Blocking.
pub fn open_regular_file(export: &Path, path: &str) -> Result<std::fs::File, String> {
    let root = open_beneath(export, "").map_err(|e| format!("the export: {}", os_message(&e)))?;
    match regular_file_beneath(&root, path) {
        Ok((file, _)) => Ok(file.into()),
        Err(e) => Err(format!("`{path}`: {}", os_message(&e))),
    }
}

/// The regular file `path` beneath `root`, opened for reading, and its size. It is looked at
/// through an `O_PATH` descriptor first (which opens nothing: no FIFO waits, no device acts)
/// and opened only once known to be a regular file.
#[expect(
    clippy::disallowed_methods,
    reason = "the export's own directory, named by the operator; every name in it is opened beneath it"
)]
fn regular_file_beneath(root: &OwnedFd, path: &str) -> std::io::Result<(OwnedFd, u64)> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let located = rustix::fs::openat2(root, path, flags, Mode::empty(), resolve)?;
    let stat = rustix::fs::fstat(&located)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    // The same file, opened for reading through the descriptor that holds it.
    let file = rustix::fs::open(
        format!("/proc/self/fd/{}", located.as_raw_fd()),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok((file, stat.st_size as u64))
}

/// The regular files and directories of `dir`, and the names of its other entries, up to
/// `max_entries` entries and about `max_bytes`; `complete` when nothing was left out.
fn list(dir: OwnedFd, max_entries: usize, max_bytes: usize) -> Answer {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut others = Vec::new();
    let mut bytes = 0;
    let mut complete = true;
    let finished = for_each_entry(dir.as_fd(), |name, stat| {
        if files.len() + dirs.len() + others.len() >= max_entries || bytes >= max_bytes {
            complete = false;
            return false;
        }
        let Ok(name) = name.to_str() else {
            complete = false;
            return true;
        };
        // A name, its JSON quotes, a size and separators.
        bytes += name.len() + 24;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => files.push((name.to_string(), stat.st_size as u64)),
            FileType::Directory => dirs.push(name.to_string()),
            _ => others.push(name.to_string()),
        }
        true
    });
    Answer::Listing { files, dirs, others, complete: complete && finished }
}

/// The bytes below `dir`, as `os_fs`'s walk counts them: every entry not a directory adds its
/// own size (a link its own), within a budget of entries.
fn size_below(dir: OwnedFd, budget: &mut usize) -> u64 {
    let mut total = 0;
    let mut subdirs = Vec::new();
    for_each_entry(dir.as_fd(), |name, stat| {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            subdirs.push(name.to_owned());
        } else {
            total += stat.st_size as u64;
        }
        true
    });
    for name in subdirs {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Ok(sub) = rustix::fs::openat(&dir, name.as_c_str(), flags, Mode::empty()) {
            total += size_below(sub, budget);
        }
    }
    total
}

/// Calls `visit` with each entry of `dir` (but `.` and `..`) and its status, not following
/// links, until it returns false. Entries that vanish meanwhile are skipped. Whether every entry
/// was read (the directory could be read to its end, `visit` never said stop).
fn for_each_entry(dir: std::os::fd::BorrowedFd<'_>, mut visit: impl FnMut(&CStr, &rustix::fs::Stat) -> bool) -> bool {
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else { return false };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let Ok(stat) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else { continue };
        if !visit(name, &stat) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt as _;

    use super::*;

    fn export() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "hello\n").unwrap();
        std::fs::create_dir_all(root.join("logs/old")).unwrap();
        std::fs::write(root.join("logs/1.log"), "x".repeat(100)).unwrap();
        std::fs::write(root.join("logs/old/0.log"), "y".repeat(50)).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        std::os::unix::fs::symlink("logs", root.join("inner")).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(root.join("fifo")).status().unwrap().success());
        dir
    }

    fn listing(answer: Answer) -> (Vec<(String, u64)>, Vec<String>) {
        match answer {
            Answer::Listing { mut files, mut dirs, .. } => {
                files.sort();
                dirs.sort();
                (files, dirs)
            }
            other => panic!("not a listing: {other:?}"),
        }
    }

    #[test]
    fn a_listing_names_files_with_their_sizes_and_directories_but_no_links_or_special_files() {
        let export = export();
        let (files, dirs) = listing(answer(export.path(), &Question::List(String::new())).unwrap());
        assert_eq!(files, [("a.txt".to_string(), 6)]);
        assert_eq!(dirs, ["logs"]);
        let (files, dirs) = listing(answer(export.path(), &Question::List("logs".into())).unwrap());
        assert_eq!(files, [("1.log".to_string(), 100)]);
        assert_eq!(dirs, ["old"]);
        // A link that stays beneath the export is followed to the directory asked about.
        let (files, _) = listing(answer(export.path(), &Question::List("inner/old".into())).unwrap());
        assert_eq!(files, [("0.log".to_string(), 50)]);
    }

    #[test]
    fn a_listing_names_the_other_entries_and_says_whether_it_is_whole() {
        let export = export();
        let Answer::Listing { mut others, complete, .. } =
            answer(export.path(), &Question::List(String::new())).unwrap()
        else {
            panic!("not a listing")
        };
        others.sort();
        assert_eq!(others, ["etc", "fifo", "inner"]);
        assert!(complete);
        let root = open_beneath(export.path(), "").unwrap();
        let Answer::Listing { files, dirs, others, complete } = list(root, 2, LIST_BYTES) else {
            panic!("not a listing")
        };
        assert_eq!(files.len() + dirs.len() + others.len(), 2);
        assert!(!complete, "five entries, two named");
        let root = open_beneath(export.path(), "logs").unwrap();
        let Answer::Listing { complete, .. } = list(root, 2, LIST_BYTES) else { panic!("not a listing") };
        assert!(complete, "two entries, two named");
        std::fs::write(export.path().join("logs").join(std::ffi::OsStr::from_bytes(b"\xff.log")), "").unwrap();
        let Answer::Listing { complete, .. } = answer(export.path(), &Question::List("logs".into())).unwrap() else {
            panic!("not a listing")
        };
        assert!(!complete, "a name that is not UTF-8 is left out");
    }

    #[test]
    fn nothing_outside_the_export_is_described_and_a_fifo_is_not_opened() {
        let export = export();
        for path in ["..", "/etc", "etc", "logs/../..", "a.txt", "fifo", "missing"] {
            for question in [Question::List(path.into()), Question::SizeBelow(path.into())] {
                let error = answer(export.path(), &question).unwrap_err();
                assert!(error.starts_with(&format!("`{path}`: ")), "{path}: {error}");
            }
        }
    }

    #[test]
    fn the_size_below_a_directory_is_what_the_clients_walk_counts() {
        let export = export();
        let asked = |path: &str| match answer(export.path(), &Question::SizeBelow(path.into())).unwrap() {
            Answer::SizeBelow(bytes) => bytes,
            other => panic!("{other:?}"),
        };
        assert_eq!(asked("logs"), 150);
        // Links count their own length ("/etc" and "logs"), as `symlink_metadata` does.
        assert_eq!(asked(""), 6 + 150 + 4 + 4);
        let mut budget = 1;
        let root = open_beneath(export.path(), "logs").unwrap();
        assert!(size_below(root, &mut budget) <= 100, "one entry visited at most");
    }

    #[test]
    fn a_files_last_byte_is_read_only_when_it_is_a_regular_file_beneath() {
        let export = export();
        std::fs::write(export.path().join("cut.txt"), "no newline").unwrap();
        std::fs::write(export.path().join("empty.txt"), "").unwrap();
        let files =
            ["a.txt", "logs/1.log", "cut.txt", "empty.txt", "fifo", "logs", "etc/passwd", "../x", "inner/1.log"];
        let question = Question::EndsWithNewline(files.map(String::from).to_vec());
        let expected = [Some(true), Some(false), Some(false), None, None, None, None, None, Some(false)];
        assert_eq!(answer(export.path(), &question).unwrap(), Answer::EndsWithNewline(expected.to_vec()));
    }

    #[test]
    fn a_listing_stops_at_its_bounds() {
        let export = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(export.path().join(format!("f{i:02}")), "").unwrap();
        }
        let open = || open_beneath(export.path(), "").unwrap();
        assert_eq!(listing(list(open(), 10, usize::MAX)).0.len(), 10);
        assert_eq!(listing(list(open(), usize::MAX, 26 * 5)).0.len(), 5);
        assert_eq!(listing(list(open(), usize::MAX, usize::MAX)).0.len(), 50);
    }
}
