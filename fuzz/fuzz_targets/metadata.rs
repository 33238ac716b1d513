//! The proxy's answers about its export (`metadata::answer`), asked anything a hostile client
//! may ask, against a real export planted with the ways out a job could leave: symbolic links
//! to a directory outside, to `/`, to a file outside and to themselves, `..`, absolute paths,
//! and a FIFO (whose open would block). Nothing outside may show: its file's name, its size
//! (1 GiB, sparse, where everything inside is a few bytes) or its last byte (a newline, where
//! no file inside ends with one). A hang fails too (libFuzzer's timeout).
#![no_main]
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use posh_proxy::metadata;
use posh_wire::protocol::{Answer, Question};

const OUTSIDE_NAME: &str = "SECRET-NAME";
const OUTSIDE_SIZE: u64 = 1 << 30;

/// The export, made once per process under a directory of its own.
fn export() -> &'static Path {
    static EXPORT: OnceLock<PathBuf> = OnceLock::new();
    EXPORT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("posh-fuzz-metadata-{}", std::process::id()));
        let (export, outside) = (root.join("export"), root.join("outside"));
        std::fs::create_dir_all(export.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let secret = std::fs::File::create(outside.join(OUTSIDE_NAME)).unwrap();
        std::os::unix::fs::FileExt::write_at(&secret, b"\n", OUTSIDE_SIZE - 1).unwrap();
        std::fs::write(export.join("a.txt"), "no newline").unwrap();
        std::fs::write(export.join("sub/b.txt"), "b").unwrap();
        std::fs::write(export.join("sub/deeper/c.txt"), "").unwrap();
        let links = [
            ("out", "../outside"),
            ("sub/up", "../../outside"),
            ("abs", "/"),
            ("file", "../outside/SECRET-NAME"),
            ("loop", "loop"),
            ("sub/deeper/tmp", "/tmp"),
        ];
        for (link, target) in links {
            std::os::unix::fs::symlink(target, export.join(link)).unwrap();
        }
        rustix::fs::mknodat(rustix::fs::CWD, &export.join("fifo"), rustix::fs::FileType::Fifo, 0o600.into(), 0)
            .unwrap();
        export
    })
}

/// The first byte chooses the question, the rest is its path (its paths, one per line).
fn question(data: &[u8]) -> Option<Question> {
    let (&kind, rest) = data.split_first()?;
    let text = String::from_utf8_lossy(rest).into_owned();
    Some(match kind % 3 {
        0 => Question::List(text),
        1 => Question::SizeBelow(text),
        _ => Question::EndsWithNewline(text.split('\n').map(str::to_string).collect()),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(question) = question(data) else { return };
    match metadata::answer(export(), &question) {
        Err(_) => {}
        Ok(Answer::Listing { files, dirs, others, .. }) => {
            let names = files.iter().map(|(name, _)| name).chain(&dirs).chain(&others);
            assert!(!names.into_iter().any(|name| name.contains(OUTSIDE_NAME)), "{question:?} listed outside");
            assert!(files.iter().all(|(_, size)| *size < OUTSIDE_SIZE), "{question:?} sized outside");
        }
        Ok(Answer::SizeBelow(bytes)) => assert!(bytes < OUTSIDE_SIZE, "{question:?} walked outside: {bytes}"),
        Ok(Answer::EndsWithNewline(ends)) => {
            assert!(!ends.contains(&Some(true)), "{question:?} read outside: {ends:?}")
        }
    }
});
