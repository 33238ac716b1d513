//! What a command read and wrote, from the kernel's accounting (`/proc/PID/io`): every byte it and
//! the children it waited for passed through read(2) and write(2), files and pipes alike, at no
//! cost to the command. Read while the command is a zombie, before it is reaped (`WNOWAIT`), since
//! the figures go with the process.

use serde::{Deserialize, Serialize};

/// Bytes a command read and wrote (`rchar`, `wchar`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCount {
    pub read: u64,
    pub written: u64,
}

impl IoCount {
    /// The sum of `counts` (a split command's copies); `None` if one of them is unknown.
    pub fn total(counts: impl IntoIterator<Item = Option<IoCount>>) -> Option<IoCount> {
        counts.into_iter().try_fold(IoCount::default(), |sum, count| {
            let count = count?;
            Some(IoCount { read: sum.read + count.read, written: sum.written + count.written })
        })
    }
}

/// The figures of process `pid`, which must have exited and not been reaped.
pub fn read_counts(pid: u32) -> Option<IoCount> {
    parse_counts(&std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?)
}

fn parse_counts(text: &str) -> Option<IoCount> {
    let field = |name: &str| {
        text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(": ")?.trim().parse::<u64>().ok())
    };
    Some(IoCount { read: field("rchar")?, written: field("wchar")? })
}

/// `/proc/PID/io` of a running process, opened while it runs. The kernel gives a zombie's
/// entries to root (it has no memory left to say whose it is), so a process that is not root (a
/// proxy that became its `--user`) cannot open them once its command has ended; a descriptor
/// opened before still reads the final figures, until the process is reaped.
#[derive(Debug)]
pub struct CountsFile(std::fs::File);

impl CountsFile {
    /// `None` when it cannot be opened (the process already ended, or is not dumpable).
    pub fn open(pid: u32) -> Option<CountsFile> {
        std::fs::File::open(format!("/proc/{pid}/io")).ok().map(CountsFile)
    }

    /// The figures as they are now (final once the process has ended, before it is reaped).
    pub fn counts(&self) -> Option<IoCount> {
        use std::os::unix::fs::FileExt as _;
        let mut text = [0u8; 512];
        let read = self.0.read_at(&mut text, 0).ok()?;
        parse_counts(std::str::from_utf8(&text[..read]).ok()?)
    }
}

/// Waits until process `pid` (our child) has exited, leaving it to be reaped; false when that
/// cannot be watched.
fn exited(pid: u32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else { return false };
    let options = rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT;
    rustix::process::waitid(rustix::process::WaitId::Pid(pid), options).is_ok()
}

/// Waits for `child` to end and returns its status and counts (`None` when the kernel would
/// not tell).
pub fn wait_blocking(child: &mut std::process::Child) -> std::io::Result<(std::process::ExitStatus, Option<IoCount>)> {
    let pid = child.id();
    // Opened while it may still run: a user who is not root cannot open a zombie's.
    let open = CountsFile::open(pid);
    let counts = exited(pid).then(|| open.as_ref().and_then(CountsFile::counts).or_else(|| read_counts(pid))).flatten();
    Ok((child.wait()?, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_a_command_read_and_wrote_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("input");
        std::fs::write(&input, "kept\n".repeat(200_000)).unwrap();
        // Not to /dev/null: GNU grep then stops at the first match.
        let mut child = std::process::Command::new("grep")
            .args(["-c", "kept"])
            .arg(&input)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        let (status, counts) = wait_blocking(&mut child).unwrap();
        assert!(status.success());
        let counts = counts.expect("/proc/PID/io is readable for our own children");
        // The file, plus what the program reads to start (a few KB).
        assert!((1_000_000..1_100_000).contains(&counts.read), "{counts:?}");
        assert_eq!(counts.written, "200000\n".len() as u64);
    }
}
