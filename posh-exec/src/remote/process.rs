//! A command's process at the proxy, watched through its pidfd: no thread waits for it, its
//! counts are read when it has ended and before it is reaped, and its whole process group is
//! killed when the job is aborted.

use std::os::fd::{AsFd as _, OwnedFd};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tokio::io::unix::AsyncFd;

use super::sandbox::Started;
use crate::measure::{CountsFile, IoCount, read_counts};

/// How a command ended.
#[derive(Clone, Copy, Debug)]
pub struct Ending {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub io: Option<IoCount>,
}

/// A started command, killed (and reaped) if dropped before it was waited for.
#[derive(Debug)]
pub struct Process {
    pid: Pid,
    /// `None` once reaped.
    pidfd: Option<AsyncFd<OwnedFd>>,
    /// Its counts, opened as it starts: once it has ended, only root could open them.
    counts: Option<CountsFile>,
}

impl Process {
    /// Watches `started` (within a tokio runtime); if it cannot, the command is killed.
    pub fn watch(started: Started) -> std::io::Result<Process> {
        let Started { pid, pidfd } = started;
        // It has exec'd (the start returns only then): its entries are its user's.
        let counts = CountsFile::open(pid.as_raw_nonzero().get().unsigned_abs());
        match super::sandbox::watch_exit(pidfd) {
            Ok(pidfd) => Ok(Process { pid, pidfd: Some(pidfd), counts }),
            Err((pidfd, e)) => {
                let _ = rustix::process::pidfd_send_signal(&pidfd, Signal::KILL);
                let _ = rustix::process::waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED);
                Err(e)
            }
        }
    }

    /// Its pid, which is also its process group's id.
    pub fn id(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// Kills it and everything it started in its process group (`awk 'BEGIN{system("sleep
    /// 300")}'` leaves `sleep` behind when only awk is killed). Each command leads its own group
    /// (see `Confinement::enter`).
    pub fn kill_group(&self) {
        let _ = rustix::process::kill_process_group(self.pid, Signal::KILL);
        if let Some(pidfd) = &self.pidfd {
            let _ = rustix::process::pidfd_send_signal(pidfd.get_ref(), Signal::KILL);
        }
    }

    /// Waits for it to end and reaps it.
    pub async fn wait(&mut self) -> std::io::Result<Ending> {
        let Some(pidfd) = &self.pidfd else {
            return Err(std::io::Error::other("the command was already waited for"));
        };
        loop {
            let mut ready = pidfd.readable().await?;
            let fd = pidfd.get_ref().as_fd();
            // Ended but not reaped yet: the counts go with the process.
            let ended = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
            if rustix::process::waitid(WaitId::PidFd(fd), ended)?.is_some() {
                let io = self.counts.as_ref().and_then(CountsFile::counts).or_else(|| read_counts(self.id()));
                let status = rustix::process::waitid(WaitId::PidFd(fd), WaitIdOptions::EXITED)?
                    .ok_or_else(|| std::io::Error::other("the command's end went missing"))?;
                self.pidfd = None;
                return Ok(Ending { code: status.exit_status(), signal: status.terminating_signal(), io });
            }
            ready.clear_ready();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let Some(pidfd) = self.pidfd.take() else { return };
        let _ = rustix::process::pidfd_send_signal(pidfd.get_ref(), Signal::KILL);
        let pidfd = pidfd.into_inner();
        // Reaped off the caller's thread: a killed process may take a moment to end (a read of a
        // slow mount finishing in the kernel).
        std::thread::spawn(move || rustix::process::waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED));
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::path::Path;

    use super::super::sandbox::{Confinement, Launch};
    use super::*;

    /// Starts `argv` confined to `export`, in it, with `stdin` as its input; returns the process
    /// and the read end of its stdout and stderr (one pipe).
    fn start(export: &Path, argv: &[&str], stdin: OwnedFd) -> std::io::Result<(Process, std::io::PipeReader)> {
        let confinement = Confinement::new(export, export).unwrap();
        let (output, writer) = std::io::pipe().unwrap();
        let stdio = [stdin, writer.try_clone().unwrap().into(), writer.into()];
        let argv: Vec<String> = argv.iter().map(|w| w.to_string()).collect();
        let program = super::super::job::find_program(&argv[0]).unwrap_or_else(|| argv[0].clone().into());
        let env = [("PATH", std::ffi::OsStr::new("/usr/bin:/bin")), ("GREETING", std::ffi::OsStr::new("hi there"))];
        let launch = Launch::new(&program, &argv, env, export, stdio, Vec::new())?;
        Ok((Process::watch(confinement.spawn(&launch)?)?, output))
    }

    fn empty_input() -> OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    fn read_all(mut output: std::io::PipeReader) -> String {
        let mut text = String::new();
        output.read_to_string(&mut text).unwrap();
        text
    }

    #[tokio::test]
    async fn a_command_starts_with_its_words_environment_directory_and_streams() {
        let export = tempfile::tempdir().unwrap();
        std::fs::write(export.path().join("input"), "from a file\n").unwrap();
        // Its argv as given (argv[0] too, not the path found), its environment only, its directory.
        let script =
            r#"tr '\0' ' ' < /proc/$$/cmdline; echo "$GREETING $(pwd)"; env | sort | tr '\n' ' '; echo; cat; exit 3"#;
        let stdin = std::fs::File::open(export.path().join("input")).unwrap().into();
        let (mut process, output) = start(export.path(), &["sh", "-c", script, "one"], stdin).unwrap();
        let text = read_all(output);
        let end = process.wait().await.unwrap();
        let pwd = export.path().display();
        // `PWD` comes from sh itself, as it would under bash.
        assert_eq!(
            text,
            format!(
                "sh -c {script} one hi there {pwd}\nGREETING=hi there PATH=/usr/bin:/bin PWD={pwd} \nfrom a file\n"
            )
        );
        assert_eq!((end.code, end.signal), (Some(3), None));
        assert!(end.io.is_some_and(|io| io.written >= text.len() as u64), "{end:?}");
    }

    #[tokio::test]
    async fn a_command_leads_its_own_session_and_dies_of_a_closed_pipe() {
        let export = tempfile::tempdir().unwrap();
        // Fields 1, 5 and 6 of /proc/self/stat: pid, process group, session.
        let (mut process, output) =
            start(export.path(), &["cut", "-d ", "-f1,5,6", "/proc/self/stat"], empty_input()).unwrap();
        let ids = read_all(output);
        process.wait().await.unwrap();
        let id = process.id().to_string();
        assert_eq!(ids.split_whitespace().collect::<Vec<_>>(), [&id, &id, &id], "{ids}");

        // The proxy ignores SIGPIPE (Rust does); its commands must not.
        let (mut process, output) = start(export.path(), &["yes"], empty_input()).unwrap();
        drop(output);
        let end = process.wait().await.unwrap();
        assert_eq!((end.code, end.signal), (None, Some(libc::SIGPIPE)));
    }

    #[tokio::test]
    async fn what_cannot_start_is_an_error_and_a_dropped_command_is_killed() {
        let export = tempfile::tempdir().unwrap();
        std::fs::write(export.path().join("data.txt"), "not a program\n").unwrap();
        let not_executable = export.path().join("data.txt");
        let error = start(export.path(), &[not_executable.to_str().unwrap()], empty_input()).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied, "{error}");
        let error = start(export.path(), &["/nonexistent/program"], empty_input()).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{error}");

        let (process, _output) = start(export.path(), &["sleep", "300"], empty_input()).unwrap();
        let proc_entry = format!("/proc/{}", process.id());
        drop(process);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while Path::new(&proc_entry).exists() {
            assert!(std::time::Instant::now() < deadline, "a dropped command is killed and reaped");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
