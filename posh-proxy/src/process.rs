//! A job's processes at the proxy, as the proxy sees them: started, watched and ended through the
//! job's supervisor (see `supervisor`), which is their parent and the subreaper of everything
//! they start. No thread of the proxy waits for a command: the supervisor reports each one's
//! end, with its counts, read when it had ended and before it was reaped; and when the job ends
//! (or is aborted) it kills whatever of the job still lives, `setsid` or not, before it exits.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use tokio::io::AsyncReadExt as _;

use super::jobs_dir::JobLife;
use super::sandbox::{Confinement, Launch};
use super::supervisor::{REPORT_LEN, Report};
use crate::measure::IoCount;

/// How a command ended.
#[derive(Clone, Copy, Debug)]
pub struct Ending {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub io: Option<IoCount>,
}

/// The processes of one job. Dropped (or [`JobProcesses::abort`]ed), it asks the supervisor to
/// kill them all; [`JobProcesses::end`] does that and waits until nothing of the job lives.
#[derive(Debug)]
pub struct JobProcesses {
    reports: tokio::net::unix::pipe::Receiver,
    /// A record read in part (a read may be cancelled, see `next`).
    record: [u8; REPORT_LEN],
    filled: usize,
    /// Closing it asks the supervisor to end the job.
    control: Option<OwnedFd>,
    /// Where the supervisor is asked to stop or continue the job (see [`Suspender`]).
    suspend: OwnedFd,
    /// Ends reported and not yet asked for, by command.
    endings: Vec<Option<Ending>>,
}

impl JobProcesses {
    /// Starts the job's supervisor and, through it, `launches` confined by `confinement`, in
    /// order (within a tokio runtime). Returns, for each launch, its process id (also its process
    /// group's) or why it could not start. `life` is held until nothing of the job lives.
    pub async fn start(
        confinement: Arc<Confinement>,
        launches: Vec<Launch>,
        life: JobLife,
    ) -> std::io::Result<(JobProcesses, Vec<std::io::Result<u32>>)> {
        let count = launches.len();
        let (reports_read, reports_write) = std::io::pipe()?;
        let (control_read, control_write) = std::io::pipe()?;
        let (suspend_read, suspend_write) = std::io::pipe()?;
        rustix::io::ioctl_fionbio(&suspend_read, true)?;
        rustix::io::ioctl_fionbio(&suspend_write, true)?;
        let reports = tokio::net::unix::pipe::Receiver::from_owned_fd(reports_read.into())?;
        let pipes = super::supervisor::Pipes {
            reports: reports_write.into(),
            control: control_read.into(),
            suspend: suspend_read.into(),
        };
        super::supervisor::start(confinement, launches, pipes, life)?;
        let mut processes = JobProcesses {
            reports,
            record: [0; REPORT_LEN],
            filled: 0,
            control: Some(control_write.into()),
            suspend: suspend_write.into(),
            endings: vec![None; count],
        };
        let mut started: Vec<Option<std::io::Result<u32>>> = (0..count).map(|_| None).collect();
        while started.iter().any(Option::is_none) {
            let (index, outcome) = match processes.next().await? {
                Some(Report::Started { index, pid }) => (index, Ok(pid)),
                Some(Report::NotStarted { index, errno }) => (index, Err(std::io::Error::from_raw_os_error(errno))),
                Some(report @ Report::Ended { .. }) => return Err(unexpected(report)),
                None => return Err(std::io::Error::other("the job's supervisor ended before its commands started")),
            };
            match started.get_mut(index) {
                Some(slot @ None) => *slot = Some(outcome),
                _ => return Err(std::io::Error::other(format!("the job's supervisor started command {index} twice"))),
            }
        }
        Ok((processes, started.into_iter().flatten().collect()))
    }

    /// Waits for command `index` to end (it was reaped then).
    pub async fn wait(&mut self, index: usize) -> std::io::Result<Ending> {
        loop {
            if let Some(ending) = self.endings.get_mut(index).and_then(Option::take) {
                return Ok(ending);
            }
            match self.next().await? {
                Some(Report::Ended { index: ended, code, signal, io }) if ended < self.endings.len() => {
                    let io = io.map(|(read, written)| IoCount { read, written });
                    self.endings[ended] = Some(Ending { code, signal, io });
                }
                Some(report) => return Err(unexpected(report)),
                None => {
                    let why = format!("the job's supervisor ended before command {index} did");
                    return Err(std::io::Error::other(why));
                }
            }
        }
    }

    /// What stops and continues the job's processes, for as long as the job lives.
    pub fn suspender(&self) -> std::io::Result<Suspender> {
        Ok(Suspender(self.suspend.try_clone()?))
    }

    /// Kills every process of the job now, `setsid` ones included: their ends are still
    /// reported, as killed.
    pub fn abort(&mut self) {
        self.control = None;
    }

    /// Ends the job: kills what of it still lives (what its commands left running) and waits
    /// until the supervisor has reaped all of it and exited.
    pub async fn end(mut self) -> std::io::Result<()> {
        self.control = None;
        while self.next().await?.is_some() {}
        Ok(())
    }

    /// The next report; `None` once the supervisor is gone (the pipe's end, which comes only
    /// after it was reaped). Cancel-safe: a record read in part is kept.
    async fn next(&mut self) -> std::io::Result<Option<Report>> {
        while self.filled < REPORT_LEN {
            match self.reports.read(&mut self.record[self.filled..]).await? {
                0 if self.filled == 0 => return Ok(None),
                0 => return Err(std::io::Error::other("the job's supervisor ended within a report")),
                n => self.filled += n,
            }
        }
        self.filled = 0;
        Report::decode(&self.record)
            .map(Some)
            .ok_or_else(|| std::io::Error::other("the job's supervisor sent a report of no known kind"))
    }
}

/// Stops and continues every process of a job, `setsid` ones included, through its supervisor
/// (see `supervisor::signal_job`): the client's job was suspended (Ctrl-Z at posh's prompt),
/// then resumed (`fg`, `bg`). A stopped job keeps its slot, its memory and its directory; it
/// still ends as any job does (killed when aborted, its client gone, or the proxy stopping).
#[derive(Debug)]
pub struct Suspender(OwnedFd);

impl Suspender {
    /// SIGSTOP to every process of the job.
    pub fn stop(&self) {
        self.ask(super::supervisor::STOP);
    }

    /// SIGCONT to every process of the job.
    pub fn resume(&self) {
        self.ask(super::supervisor::CONTINUE);
    }

    /// One byte to the supervisor, which reads them as they come (a full pipe, thousands of
    /// requests it has not read yet, drops this one: the last one read wins).
    fn ask(&self, request: u8) {
        let _ = rustix::io::write(&self.0, &[request]);
    }
}

fn unexpected(report: Report) -> std::io::Error {
    std::io::Error::other(format!("the job's supervisor reported out of turn: {report:?}"))
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::path::Path;

    use super::*;

    /// Starts `argv` confined to `export`, in it, with `stdin` as its input, under a supervisor;
    /// returns the job's processes, the command's pid (or why it did not start) and the read end
    /// of its stdout and stderr (one pipe).
    async fn start(
        export: &Path,
        argv: &[&str],
        stdin: OwnedFd,
        life: JobLife,
    ) -> (JobProcesses, std::io::Result<u32>, std::io::PipeReader) {
        let confinement = Arc::new(Confinement::new(export, export).unwrap());
        let (output, writer) = std::io::pipe().unwrap();
        let stdio = [stdin, writer.try_clone().unwrap().into(), writer.into()];
        let argv: Vec<String> = argv.iter().map(|w| w.to_string()).collect();
        let program = super::super::job::find_program(&argv[0]).unwrap_or_else(|| argv[0].clone().into());
        let env = [("PATH", std::ffi::OsStr::new("/usr/bin:/bin")), ("GREETING", std::ffi::OsStr::new("hi there"))];
        let launch = Launch::new(&program, &argv, env, export, stdio, Vec::new()).unwrap();
        let (processes, mut started) = JobProcesses::start(confinement, vec![launch], life).await.unwrap();
        (processes, started.remove(0), output)
    }

    fn empty_input() -> OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    fn read_all(mut output: std::io::PipeReader) -> String {
        let mut text = String::new();
        output.read_to_string(&mut text).unwrap();
        text
    }

    /// The processes whose command line is `words`.
    fn running(words: &[&str]) -> Vec<u32> {
        let wanted: Vec<u8> = words.iter().flat_map(|w| [w.as_bytes(), b"\0"].concat()).collect();
        let entries = std::fs::read_dir("/proc").unwrap().flatten();
        let pids = entries.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
        pids.filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted)).collect()
    }

    /// Waits (bounded) until a process runs `words`.
    fn until_running(words: &[&str]) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while running(words).is_empty() {
            assert!(std::time::Instant::now() < deadline, "{words:?} never ran");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[tokio::test]
    async fn a_command_starts_with_its_words_environment_directory_and_streams() {
        let export = tempfile::tempdir().unwrap();
        std::fs::write(export.path().join("input"), "from a file\n").unwrap();
        // Its argv as given (argv[0] too, not the path found), its environment only, its directory.
        let script =
            r#"tr '\0' ' ' < /proc/$$/cmdline; echo "$GREETING $(pwd)"; env | sort | tr '\n' ' '; echo; cat; exit 3"#;
        let stdin = std::fs::File::open(export.path().join("input")).unwrap().into();
        let (mut processes, pid, output) =
            start(export.path(), &["sh", "-c", script, "one"], stdin, JobLife::default()).await;
        pid.unwrap();
        let text = read_all(output);
        let end = processes.wait(0).await.unwrap();
        processes.end().await.unwrap();
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
        let (mut processes, pid, output) =
            start(export.path(), &["cut", "-d ", "-f1,5,6", "/proc/self/stat"], empty_input(), JobLife::default())
                .await;
        let ids = read_all(output);
        processes.wait(0).await.unwrap();
        let id = pid.unwrap().to_string();
        assert_eq!(ids.split_whitespace().collect::<Vec<_>>(), [&id, &id, &id], "{ids}");

        // The proxy ignores SIGPIPE (Rust does); its commands must not.
        let (mut processes, _, output) = start(export.path(), &["yes"], empty_input(), JobLife::default()).await;
        drop(output);
        let end = processes.wait(0).await.unwrap();
        assert_eq!((end.code, end.signal), (None, Some(libc::SIGPIPE)));
    }

    #[tokio::test]
    async fn what_cannot_start_is_an_error_and_dropped_processes_are_killed() {
        let export = tempfile::tempdir().unwrap();
        std::fs::write(export.path().join("data.txt"), "not a program\n").unwrap();
        let not_executable = export.path().join("data.txt");
        let (_, error, _) =
            start(export.path(), &[not_executable.to_str().unwrap()], empty_input(), JobLife::default()).await;
        assert_eq!(error.unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
        let (_, error, _) = start(export.path(), &["/nonexistent/program"], empty_input(), JobLife::default()).await;
        assert_eq!(error.unwrap_err().kind(), std::io::ErrorKind::NotFound);

        let (processes, pid, _output) =
            start(export.path(), &["sleep", "300"], empty_input(), JobLife::default()).await;
        let proc_entry = format!("/proc/{}", pid.unwrap());
        drop(processes);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while Path::new(&proc_entry).exists() {
            assert!(std::time::Instant::now() < deadline, "a dropped job's command is killed and reaped");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Issue 37, E3: what a command leaves running (in the background, in a session of its own)
    /// ends with the job, and the job's life is released only once nothing of it lives.
    #[tokio::test]
    async fn what_a_job_leaves_running_ends_with_it() {
        let export = tempfile::tempdir().unwrap();
        let script = "sleep 301.25 >/dev/null 2>&1 & setsid sleep 301.5 >/dev/null 2>&1 & echo started";
        let life = JobLife::default();
        let (mut processes, _, output) = start(export.path(), &["sh", "-c", script], empty_input(), life.clone()).await;
        assert_eq!(read_all(output), "started\n");
        assert_eq!(processes.wait(0).await.unwrap().code, Some(0));
        until_running(&["sleep", "301.25"]);
        until_running(&["sleep", "301.5"]);
        assert!(life.held_elsewhere(), "the supervisor holds the job's life while its processes live");
        processes.end().await.unwrap();
        // Nothing to wait for: the end comes once everything is reaped.
        assert_eq!(running(&["sleep", "301.25"]), [] as [u32; 0], "the background child ended with its job");
        assert_eq!(running(&["sleep", "301.5"]), [] as [u32; 0], "the setsid child ended with its job");
        assert!(!life.held_elsewhere(), "released once nothing of the job lives");
    }

    /// The state of process `pid` (`/proc/PID/stat`'s field after the name): `T` when stopped.
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()).unwrap_or('?')
    }

    /// Waits (bounded) until each of `pids` is in a state `wanted` accepts.
    fn until_all(pids: &[u32], what: &str, wanted: impl Fn(char) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !pids.iter().all(|pid| wanted(state(*pid))) {
            let states: Vec<char> = pids.iter().map(|pid| state(*pid)).collect();
            assert!(std::time::Instant::now() < deadline, "never all {what}: {pids:?} are {states:?}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Issue 39: a suspended job is stopped whole, a child in a session of its own (whose parent
    /// lives, so it is no child of the supervisor) included; it goes on when resumed, and a job
    /// still stopped is killed whole when it is aborted.
    #[tokio::test]
    async fn a_suspended_job_stops_whole_and_goes_on_when_resumed() {
        let export = tempfile::tempdir().unwrap();
        let script = "sleep 302.25 >/dev/null 2>&1 & setsid sleep 302.5 >/dev/null 2>&1 & wait";
        let (mut processes, pid, _output) =
            start(export.path(), &["sh", "-c", script], empty_input(), JobLife::default()).await;
        until_running(&["sleep", "302.25"]);
        until_running(&["sleep", "302.5"]);
        let setsid_child = running(&["sleep", "302.5"])[0];
        let stat = std::fs::read_to_string(format!("/proc/{setsid_child}/stat")).unwrap();
        let parent: u32 = stat.rsplit_once(')').unwrap().1.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert_eq!(parent, pid.as_ref().copied().unwrap(), "the setsid child's parent is the job's shell");
        let job = [pid.unwrap(), running(&["sleep", "302.25"])[0], setsid_child];
        let suspender = processes.suspender().unwrap();
        suspender.stop();
        until_all(&job, "stopped", |state| state == 'T');
        suspender.resume();
        until_all(&job, "running again", |state| state == 'S');
        suspender.stop();
        until_all(&job, "stopped again", |state| state == 'T');
        processes.abort();
        let end = processes.wait(0).await.unwrap();
        assert_eq!((end.code, end.signal), (None, Some(libc::SIGKILL)));
        processes.end().await.unwrap();
        assert_eq!(running(&["sleep", "302.25"]), [] as [u32; 0]);
        assert_eq!(running(&["sleep", "302.5"]), [] as [u32; 0]);
    }

    #[tokio::test]
    async fn an_aborted_job_is_killed_with_all_it_started() {
        let export = tempfile::tempdir().unwrap();
        // A double fork into a session of its own: the sleep's parent is gone before the abort.
        let script = "(setsid sleep 301.75 >/dev/null 2>&1 &); exec sleep 301.875";
        let (mut processes, _, _output) =
            start(export.path(), &["sh", "-c", script], empty_input(), JobLife::default()).await;
        until_running(&["sleep", "301.75"]);
        until_running(&["sleep", "301.875"]);
        processes.abort();
        let end = processes.wait(0).await.unwrap();
        assert_eq!((end.code, end.signal), (None, Some(libc::SIGKILL)));
        processes.end().await.unwrap();
        assert_eq!(running(&["sleep", "301.75"]), [] as [u32; 0]);
    }
}
