//! The job's supervisor: one process per job that starts the job's commands as its children, is
//! the subreaper of everything they start (what a command leaves running, `setsid` or not, becomes
//! its child when its parent ends), and, when the job ends (it completed, was aborted, or the
//! proxy went), kills all of that and reaps it before it exits itself. So nothing a job started
//! outlives it: not a completed job's background child, not an aborted job's `setsid` one, not
//! what runs when the proxy is killed outright (its death signal reaches the supervisor, which
//! is not part of the proxy's thread group and so outlives it just long enough).
//!
//! Chosen over the other ways: a cgroup per job needs a delegated cgroup v2 subtree (not this
//! machine's hybrid hierarchy, nor a container's, nor an unprivileged proxy's); process groups and
//! sessions are left by `setsid`; a PID namespace makes each command its namespace's init (see
//! SECURITY.md); a supervisor program exec'd per job costs an exec, and a forked one a copy of the
//! proxy's page tables per job (and one of each page the proxy writes while the job runs).
//!
//! The supervisor is started as the commands are (`sandbox::Ready::start`): a clone sharing the
//! proxy's memory and descriptor table (`CLONE_VM | CLONE_FILES | CLONE_VFORK`), on its own
//! stack, by a thread of the proxy that stays suspended until the supervisor has exited. So the
//! supervisor runs, as a vfork child does, on memory nothing else of the proxy touches (that
//! thread's, and what the thread owns: the commands made ready, the stacks), uses system calls
//! only and allocates nothing. It is not confined (a job's commands cannot signal it: Landlock's
//! signal scope) and it reports over a pipe, as fixed records: each command started or not, then
//! each command's end with its counts (`/proc/PID/io`, opened as it starts: only root may open
//! a zombie's; read once it ended). The proxy asks
//! it to end the job by closing the control pipe; the proxy's death reaches it as SIGTERM
//! (`PR_SET_PDEATHSIG`, sent when that suspended thread dies, which is only with the process).
//! Once the commands started, it keeps a descriptor table of its own with only its own three
//! (reports, control, signals): nothing of the proxy's (a socket, a lock) outlives the proxy in
//! it. The thread reaps it and only then releases the job's [`JobLife`] and closes the report
//! pipe: the proxy reading the reports' end knows that nothing of the job lives.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use super::jobs_dir::JobLife;
use super::sandbox::{ChildStack, Confinement, Launch, Ready};

/// One record of the report pipe, in the machine's byte order (both ends are this program).
pub(super) const REPORT_LEN: usize = 40;

/// What the supervisor tells the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Report {
    /// Command `index` runs as process `pid`.
    Started { index: usize, pid: u32 },
    /// Command `index` could not start: `errno` says why.
    NotStarted { index: usize, errno: i32 },
    /// Command `index` ended: with `code`, or killed by `signal`; what it read and wrote, when
    /// its `/proc/PID/io` could be read.
    Ended { index: usize, code: Option<i32>, signal: Option<i32>, io: Option<(u64, u64)> },
}

const STARTED: u32 = 1;
const NOT_STARTED: u32 = 2;
const ENDED: u32 = 3;

impl Report {
    /// `kind, index, pid or errno or code, signal, io known, read, written`: four bytes each but
    /// the last two, eight. Absent values are -1 (a signal, a code) or 0 with "io known" 0.
    fn encode(self) -> [u8; REPORT_LEN] {
        let (kind, index, first, signal, io) = match self {
            Report::Started { index, pid } => (STARTED, index, pid as i32, -1, None),
            Report::NotStarted { index, errno } => (NOT_STARTED, index, errno, -1, None),
            Report::Ended { index, code, signal, io } => (ENDED, index, code.unwrap_or(-1), signal.unwrap_or(-1), io),
        };
        let mut bytes = [0u8; REPORT_LEN];
        bytes[0..4].copy_from_slice(&kind.to_ne_bytes());
        bytes[4..8].copy_from_slice(&(index as u32).to_ne_bytes());
        bytes[8..12].copy_from_slice(&first.to_ne_bytes());
        bytes[12..16].copy_from_slice(&signal.to_ne_bytes());
        bytes[16..20].copy_from_slice(&u32::from(io.is_some()).to_ne_bytes());
        let (read, written) = io.unwrap_or_default();
        bytes[24..32].copy_from_slice(&read.to_ne_bytes());
        bytes[32..40].copy_from_slice(&written.to_ne_bytes());
        bytes
    }

    /// The record `bytes` holds; `None` for one no supervisor writes.
    pub(super) fn decode(bytes: &[u8; REPORT_LEN]) -> Option<Report> {
        let u32_at = |at: usize| u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let i32_at = |at: usize| u32_at(at) as i32;
        let u64_at = |at: usize| u64::from(u32_at(at)) | (u64::from(u32_at(at + 4)) << 32);
        let index = u32_at(4) as usize;
        let present = |value: i32| (value >= 0).then_some(value);
        match u32_at(0) {
            STARTED => Some(Report::Started { index, pid: u32_at(8) }),
            NOT_STARTED => Some(Report::NotStarted { index, errno: i32_at(8) }),
            ENDED => Some(Report::Ended {
                index,
                code: present(i32_at(8)),
                signal: present(i32_at(12)),
                io: (u32_at(16) == 1).then(|| (u64_at(24), u64_at(32))),
            }),
            _ => None,
        }
    }
}

/// Starts a supervisor for one job and, through it, `launches` confined by `confinement`, in
/// order. It writes its [`Report`]s to `reports` and ends the job (kills and reaps whatever of it
/// lives, then exits) when `control`'s other end is closed or the proxy dies. `life` is released,
/// and `reports` closed, once the supervisor is gone.
pub(super) fn start(
    confinement: Arc<Confinement>,
    launches: Vec<Launch>,
    pipes: Pipes,
    life: JobLife,
) -> std::io::Result<()> {
    // A small stack: the thread only starts the supervisor and waits for it.
    std::thread::Builder::new()
        .name("posh-job-supervisor".into())
        .stack_size(64 * 1024)
        .spawn(move || hold(&confinement, launches, pipes, life))?;
    Ok(())
}

/// The supervisor's ends of its pipes with the proxy.
pub(super) struct Pipes {
    /// Where it writes its [`Report`]s.
    pub(super) reports: OwnedFd,
    /// Closed by the proxy to end the job.
    pub(super) control: OwnedFd,
    /// Where the proxy asks it to stop ([`STOP`]) or continue ([`CONTINUE`]) the whole job.
    pub(super) suspend: OwnedFd,
}

/// On the suspend pipe: SIGSTOP to every process of the job.
pub(super) const STOP: u8 = b'S';
/// On the suspend pipe: SIGCONT to every process of the job.
pub(super) const CONTINUE: u8 = b'C';

/// The thread's part: starts the supervisor and stays suspended until it exited. What it owns is
/// dropped in the order the proxy relies on: the commands' descriptors (closed by the
/// supervisor already, unless it never ran), then `life`, then `reports`.
fn hold(confinement: &Confinement, launches: Vec<Launch>, pipes: Pipes, life: JobLife) {
    let Pipes { reports, control, suspend } = pipes;
    supervise_job(confinement, launches, reports.as_raw_fd(), control, suspend);
    drop(life);
    drop(reports);
}

/// Makes everything the supervisor needs, starts it, waits for its end and reaps it.
fn supervise_job(confinement: &Confinement, launches: Vec<Launch>, reports: RawFd, control: OwnedFd, suspend: OwnedFd) {
    let ready: Vec<Ready<'_>> = launches.into_iter().map(|launch| confinement.ready(launch)).collect();
    let not_started = |errno: i32| {
        for index in 0..ready.len() {
            write_report(reports, Report::NotStarted { index, errno });
        }
    };
    let signals = match child_signals() {
        Ok(signals) => signals,
        Err(e) => return not_started(e.raw_os_error().unwrap_or(libc::EINVAL)),
    };
    let pids: Vec<AtomicI32> = ready.iter().map(|_| AtomicI32::new(0)).collect();
    let counts: Vec<AtomicI32> = ready.iter().map(|_| AtomicI32::new(-1)).collect();
    let opened: Vec<AtomicI32> = ready.iter().map(|_| AtomicI32::new(-1)).collect();
    let own_table = AtomicBool::new(false);
    let mut own_stack = ChildStack::new();
    let supervisor = Supervisor {
        ready: &ready,
        pids: &pids,
        counts: &counts,
        opened: &opened,
        own_table: &own_table,
        command_stack: RefCell::new(ChildStack::new()),
        reports,
        control: control.as_raw_fd(),
        suspend: suspend.as_raw_fd(),
        signals: signals.as_raw_fd(),
        proxy: rustix::process::getpid(),
    };
    // SAFETY: every signal blocked in this thread, which does nothing else from here on: the
    // supervisor inherits the mask, so that no handler of the proxy runs on the shared memory.
    // It runs `supervise` on `own_stack` with `supervisor`, both alive until clone returns,
    // which is after it exited (CLONE_VFORK): this thread is suspended until then.
    let pid = unsafe {
        let mut all = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), ptr::null_mut());
        libc::clone(
            supervise,
            own_stack.top(),
            libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_VFORK | libc::SIGCHLD,
            ptr::from_ref(&supervisor).cast_mut().cast::<libc::c_void>(),
        )
    };
    match pid {
        ..0 => not_started(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EAGAIN)),
        pid => {
            if let Some(pid) = Pid::from_raw(pid) {
                let _ = rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED);
            }
            // The counts descriptors it opened before it left the shared table are still the
            // proxy's: closed here (had it not left, it closed them itself).
            if own_table.load(Ordering::Relaxed) {
                for fd in opened.iter().map(|fd| fd.load(Ordering::Relaxed)).filter(|fd| *fd >= 0) {
                    // SAFETY: a descriptor of this process's table that nothing else owns.
                    unsafe { libc::close(fd) };
                }
            }
        }
    }
}

/// A signalfd for SIGCHLD (a child ended) and SIGTERM (the proxy died, see `PR_SET_PDEATHSIG`),
/// read by the supervisor, in which both are blocked.
fn child_signals() -> std::io::Result<OwnedFd> {
    // SAFETY: the set is initialised by sigemptyset before use; signalfd(2) reads it and returns
    // a new descriptor, owned from here on.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGCHLD);
        libc::sigaddset(set.as_mut_ptr(), libc::SIGTERM);
        let fd = libc::signalfd(-1, set.as_ptr(), libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(<OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd))
    }
}

/// What the supervisor reads: owned by the suspended thread (see `hold`).
struct Supervisor<'a> {
    ready: &'a [Ready<'a>],
    /// The commands' pids as they start; 0 once reaped (or never started).
    pids: &'a [AtomicI32],
    /// Each command's `/proc/PID/io`, opened as it started (-1: not open): once it has ended,
    /// only root may open it, and the proxy is root only until it becomes its `--user`.
    counts: &'a [AtomicI32],
    /// Each command's counts descriptor as opened, kept after `counts` lets it go: it was opened
    /// in the table shared with the proxy, which closes its copy once the supervisor is gone.
    opened: &'a [AtomicI32],
    /// Whether the supervisor left the shared descriptor table (`keep_only_own_descriptors`).
    own_table: &'a AtomicBool,
    /// Where each command starts, in turn (each is done with it once it exec'd).
    command_stack: RefCell<ChildStack>,
    reports: RawFd,
    control: RawFd,
    /// Read for [`STOP`] and [`CONTINUE`] (non-blocking).
    suspend: RawFd,
    signals: RawFd,
    /// The proxy's pid: the supervisor's parent while the proxy lives.
    proxy: Pid,
}

/// The supervisor's first and last function: it never returns but by `_exit`.
extern "C" fn supervise(supervisor: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `hold` passes its `Supervisor`, alive until this process has exited.
    let supervisor = unsafe { &*supervisor.cast_const().cast::<Supervisor>() };
    supervisor.run();
    // SAFETY: ends this process (not the proxy: the supervisor is a process of its own).
    unsafe { libc::_exit(0) }
}

impl Supervisor<'_> {
    /// Starts the commands, reports on them as they end, and when asked (or orphaned) ends the
    /// job. System calls only, no allocation.
    fn run(&self) {
        // Orphans of the job come here rather than to init. Neither call fails on Linux 3.4+.
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
        // The proxy may have died before the death signal was asked for.
        let mut ending = rustix::process::getppid() != Some(self.proxy);
        let mut stack = self.command_stack.borrow_mut();
        for (index, ready) in self.ready.iter().enumerate() {
            let report = match ending {
                true => Report::NotStarted { index, errno: libc::ESRCH },
                false => match ready.start(&mut stack) {
                    Ok(pid) => {
                        self.pids[index].store(pid.as_raw_nonzero().get(), Ordering::Relaxed);
                        // It has exec'd (the start returns only then): its entries are its user's.
                        let counts = open_io(pid).unwrap_or(-1);
                        self.counts[index].store(counts, Ordering::Relaxed);
                        self.opened[index].store(counts, Ordering::Relaxed);
                        Report::Started { index, pid: pid.as_raw_nonzero().get().unsigned_abs() }
                    }
                    Err(errno) => Report::NotStarted { index, errno },
                },
            };
            write_report(self.reports, report);
        }
        self.open_missing_counts();
        self.keep_only_own_descriptors();
        // The suspend pipe, until its writing end is gone (poll skips a negative descriptor).
        let mut suspend = self.suspend;
        while !ending {
            let mut fds = [
                libc::pollfd { fd: self.signals, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: self.control, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: suspend, events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: poll(2) on three descriptors of this process, described by `fds`. It fails
            // only without memory: the job ends rather than this loop spin.
            let failed = unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) } < 0;
            ending = self.take_signals() || fds[1].revents != 0 || failed;
            if !ending && fds[2].revents != 0 && !self.take_suspensions() {
                suspend = -1;
            }
            self.reap_ended();
        }
        self.end_job();
    }

    /// Acts on what the suspend pipe holds: the last request wins. False once the proxy's end
    /// of it is closed.
    fn take_suspensions(&self) -> bool {
        let mut buf = [0u8; 64];
        let mut last = None;
        let open = loop {
            // SAFETY: read(2) into `buf`, of its length, from the non-blocking suspend pipe.
            match unsafe { libc::read(self.suspend, buf.as_mut_ptr().cast(), buf.len()) } {
                0 => break false,
                n @ 1.. => {
                    last = buf[..n as usize].iter().rev().find(|b| **b == STOP || **b == CONTINUE).copied().or(last);
                }
                _ => break std::io::Error::last_os_error().raw_os_error() != Some(libc::EBADF),
            }
        };
        match last {
            Some(STOP) => signal_job(Signal::STOP),
            Some(_) => signal_job(Signal::CONT),
            None => {}
        }
        open
    }

    /// Opens again the counts that could not be opened as their command started: the supervisor
    /// wakes when the command's exec has replaced its memory, which for a moment still carries
    /// the proxy's "not dumpable" mark (refusing the open) until the exec clears it. A few
    /// yields let it, then short sleeps (on a loaded machine the command may wait for a CPU to
    /// finish its exec), for at most about 100 ms; a command that ended meanwhile keeps no counts.
    fn open_missing_counts(&self) {
        for attempt in 0..164 {
            let mut missing = false;
            for (index, pid) in self.pids.iter().enumerate() {
                let Some(pid) = Pid::from_raw(pid.load(Ordering::Relaxed)) else { continue };
                if self.counts[index].load(Ordering::Relaxed) >= 0 {
                    continue;
                }
                match open_io(pid) {
                    Some(counts) => {
                        self.counts[index].store(counts, Ordering::Relaxed);
                        self.opened[index].store(counts, Ordering::Relaxed);
                    }
                    // A command that has ended already (a `grep -c` of a small file often has)
                    // is a zombie until reaped, its counts read then if they can be
                    // (`reap_ended`): sleeping on, for an entry that mostly stays shut, held
                    // about one short job in six 100 ms more.
                    None if has_ended(pid) => {}
                    None => missing = true,
                }
            }
            if !missing {
                return;
            }
            if attempt < 64 {
                rustix::thread::sched_yield();
            } else {
                let millisecond = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 };
                // SAFETY: nanosleep(2) with a valid request and no remainder wanted.
                unsafe { libc::nanosleep(&millisecond, std::ptr::null_mut()) };
            }
        }
    }

    /// Leaves the descriptor table it shares with the proxy for a copy of its own, holding only
    /// the supervisor's three and the commands' counts: it keeps none of the proxy's sockets, locks or pipes (a restarted
    /// proxy binds its address and takes its locks at once; another job's pipe ends when that
    /// job's commands are done), and the proxy's death closes the control pipe's writing end.
    fn keep_only_own_descriptors(&self) {
        // SAFETY: unshare(2) gives this process a copy of its descriptor table, in which
        // close_range(2) closes what lies between the three kept.
        unsafe {
            if libc::unshare(libc::CLONE_FILES) != 0 {
                return;
            }
            self.own_table.store(true, Ordering::Relaxed);
            let own = [self.reports, self.control, self.suspend, self.signals];
            let counts = self.counts.iter().map(|fd| fd.load(Ordering::Relaxed)).filter(|fd| *fd >= 0);
            // The kept descriptors in ascending order, without a list to sort (nothing is
            // allocated here): each time the least one above the last.
            let next_kept = |above: Option<libc::c_int>| {
                own.into_iter().chain(counts.clone()).filter(|fd| above.is_none_or(|a| *fd > a)).min()
            };
            let mut first = 0;
            let mut kept = next_kept(None);
            loop {
                let fd = kept.map_or(libc::c_uint::MAX, |fd| fd as libc::c_uint);
                if fd > first {
                    let last = fd - 1;
                    if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                        // Linux before 5.9: one by one, up to the highest a descriptor may be.
                        let mut limit = MaybeUninit::<libc::rlimit>::zeroed();
                        libc::getrlimit(libc::RLIMIT_NOFILE, limit.as_mut_ptr());
                        let highest = limit.assume_init().rlim_cur.min(u64::from(last));
                        (u64::from(first)..=highest).for_each(|fd| _ = libc::close(fd as libc::c_int));
                    }
                }
                first = fd.saturating_add(1);
                let Some(this) = kept else { break };
                kept = next_kept(Some(this));
            }
        }
    }

    /// Reads what the signalfd holds; true when the proxy died (SIGTERM).
    fn take_signals(&self) -> bool {
        let mut proxy_died = false;
        let mut buf = [0u8; 8 * SIGNALFD_INFO_LEN];
        // SAFETY: read(2) into `buf`, of its length, from the signalfd.
        while let n @ 1.. = unsafe { libc::read(self.signals, buf.as_mut_ptr().cast(), buf.len()) } {
            for info in buf[..n as usize].chunks_exact(SIGNALFD_INFO_LEN) {
                let signal = u32::from_ne_bytes([info[0], info[1], info[2], info[3]]);
                proxy_died |= signal == libc::SIGTERM as u32;
            }
        }
        proxy_died
    }

    /// Reaps every child that has ended; a command's end is reported, with its counts.
    fn reap_ended(&self) {
        loop {
            // SAFETY: waitid(2) writes the zeroed `siginfo_t`; with WNOWAIT the child stays a
            // zombie, its counts readable, until reaped below.
            let pid = unsafe {
                let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
                let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
                if libc::waitid(libc::P_ALL, 0, info.as_mut_ptr(), options) != 0 {
                    return;
                }
                info.assume_init_ref().si_pid()
            };
            let Some(pid) = Pid::from_raw(pid) else { return };
            let command = self.pids.iter().position(|p| p.load(Ordering::Relaxed) == pid.as_raw_nonzero().get());
            let io = command.and_then(|index| {
                let counts = self.counts[index].swap(-1, Ordering::Relaxed);
                let io = if counts >= 0 { read_counts(counts) } else { None };
                // SAFETY: the descriptor `open_io` opened for this command, closed once.
                if counts >= 0 {
                    unsafe { libc::close(counts) };
                }
                io.or_else(|| read_io(pid))
            });
            let Ok(Some(status)) = rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED) else { return };
            if let Some(index) = command {
                self.pids[index].store(0, Ordering::Relaxed);
                let (code, signal) = (status.exit_status(), status.terminating_signal());
                write_report(self.reports, Report::Ended { index, code, signal, io });
            }
        }
    }

    /// Kills every process of the job and reaps it: its children, then those orphaned by their
    /// death (they come here), until it has no child left. Each round waits a little for a
    /// child's end: the list of children may miss one that was being started.
    fn end_job(&self) {
        loop {
            if !kill_children() {
                // No list of children (/proc without it): the commands' groups at least.
                for pid in self.pids {
                    if let Some(pid) = Pid::from_raw(pid.load(Ordering::Relaxed)) {
                        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
                    }
                }
            }
            self.reap_ended();
            // SAFETY: as in `reap_ended`: ECHILD when no child is left at all.
            let none_left = unsafe {
                let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
                let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
                libc::waitid(libc::P_ALL, 0, info.as_mut_ptr(), options) != 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD)
            };
            if none_left {
                return;
            }
            let mut fds = [libc::pollfd { fd: self.signals, events: libc::POLLIN, revents: 0 }];
            // SAFETY: poll(2) on the signalfd, described by `fds`.
            unsafe { libc::poll(fds.as_mut_ptr(), 1, 10) };
            self.take_signals();
        }
    }
}

/// `struct signalfd_siginfo`'s size; its first field is the signal's number.
const SIGNALFD_INFO_LEN: usize = 128;

/// Sends SIGKILL to each of the calling process's children, as `/proc/thread-self/children`
/// lists them (a child's pid is not reused before it is reaped, by the caller alone), up to
/// [`MOST_PROCESSES`] (the caller comes again for the rest); false when that list cannot be read.
fn kill_children() -> bool {
    let mut found = [0i32; MOST_PROCESSES];
    let Some(count) = read_pids(ProcPath::new().push(b"/proc/thread-self/children"), &mut found, 0) else {
        return false;
    };
    for pid in found[..count].iter().filter_map(|pid| Pid::from_raw(*pid)) {
        let _ = rustix::process::kill_process(pid, Signal::KILL);
    }
    true
}

/// `rchar` and `wchar` of process `pid`'s `/proc/PID/io`, read into the stack (root may open a
/// zombie's; see `Supervisor::counts` for everyone else).
fn read_io(pid: Pid) -> Option<(u64, u64)> {
    let fd = open_io(pid)?;
    let io = read_counts(fd);
    // SAFETY: closes the descriptor just opened.
    unsafe { libc::close(fd) };
    io
}

/// Whether the child `pid` has ended (a zombie not yet reaped: it stays one).
fn has_ended(pid: Pid) -> bool {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    matches!(rustix::process::waitid(WaitId::Pid(pid), options), Ok(Some(_)))
}

/// Opens process `pid`'s `/proc/PID/io` (close-on-exec), as a raw descriptor the caller closes.
fn open_io(pid: Pid) -> Option<RawFd> {
    let mut path = ProcPath::new();
    path.push(b"/proc/").number(pid.as_raw_nonzero().get().unsigned_abs()).push(b"/io");
    path.open(rustix::fs::OFlags::empty()).map(std::os::fd::IntoRawFd::into_raw_fd)
}

/// A `/proc` name built on the stack (the supervisor allocates nothing).
struct ProcPath {
    bytes: [u8; 64],
    len: usize,
}

impl ProcPath {
    fn new() -> ProcPath {
        ProcPath { bytes: [0; 64], len: 0 }
    }

    /// Appends `bytes` (what does not fit is left out: the name then opens nothing).
    fn push(&mut self, bytes: &[u8]) -> &mut ProcPath {
        let end = (self.len + bytes.len()).min(self.bytes.len() - 1);
        self.bytes[self.len..end].copy_from_slice(&bytes[..end - self.len]);
        self.len = end;
        self
    }

    /// Appends `number` in decimal.
    fn number(&mut self, number: u32) -> &mut ProcPath {
        let mut digits = [0u8; 10];
        let (mut rest, mut count) = (number, 0);
        while rest > 0 || count == 0 {
            digits[digits.len() - 1 - count] = b'0' + (rest % 10) as u8;
            rest /= 10;
            count += 1;
        }
        self.push(&digits[digits.len() - count..])
    }

    /// Opens the name read-only and close-on-exec, with `flags` besides.
    #[expect(clippy::disallowed_methods, reason = "fixed /proc names of the supervisor's own job's processes")]
    fn open(&self, flags: rustix::fs::OFlags) -> Option<OwnedFd> {
        let mut terminated = [0u8; 65];
        terminated[..self.len].copy_from_slice(&self.bytes[..self.len]);
        let name = std::ffi::CStr::from_bytes_with_nul(&terminated[..=self.len]).ok()?;
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC | flags;
        rustix::fs::open(name, flags, rustix::fs::Mode::empty()).ok()
    }
}

/// The most processes one walk of a job reaches (see [`signal_job`]).
const MOST_PROCESSES: usize = 2048;

/// Sends `signal` (SIGSTOP or SIGCONT) to every process of the job: the supervisor's
/// descendants, `setsid` or not (what a command leaves running when its parent ends becomes the
/// supervisor's child). Top-down, each process signalled before its children are listed: a
/// stopped process forks no more and reaps no child (so no pid listed is reused meanwhile), and
/// a fork that meets the signal is not completed, so its children are all listed. A process whose parent ended during the walk comes to the supervisor
/// after its list was read: the walk is made again until it finds the same processes twice (at
/// most eight times). Up to [`MOST_PROCESSES`] processes a walk; system calls only, on the stack.
fn signal_job(signal: Signal) {
    let mut last_walk = (usize::MAX, 0u64);
    for _ in 0..8 {
        let mut found = [0i32; MOST_PROCESSES];
        let mut count = children_of(None, &mut found, 0);
        let mut at = 0;
        while at < count {
            if let Some(pid) = Pid::from_raw(found[at]) {
                let _ = rustix::process::kill_process(pid, signal);
                count = children_of(Some(pid), &mut found, count);
            }
            at += 1;
        }
        let digest = found[..count].iter().fold(0u64, |h, pid| h.wrapping_mul(1_000_003).wrapping_add(*pid as u64));
        if (count, digest) == last_walk {
            return;
        }
        last_walk = (count, digest);
    }
}

/// Adds the children of `pid` (of every thread of it; the supervisor's own with `None`) to
/// `found` after its first `count`; returns the new count.
fn children_of(pid: Option<Pid>, found: &mut [i32], mut count: usize) -> usize {
    let Some(pid) = pid else {
        return read_pids(ProcPath::new().push(b"/proc/thread-self/children"), found, count).unwrap_or(count);
    };
    let pid = pid.as_raw_nonzero().get().unsigned_abs();
    let mut tasks_path = ProcPath::new();
    tasks_path.push(b"/proc/").number(pid).push(b"/task");
    let Some(tasks) = tasks_path.open(rustix::fs::OFlags::DIRECTORY) else { return count };
    let mut entries = [0u8; 1024];
    loop {
        // SAFETY: getdents64(2) into `entries`, of its length, from a directory just opened.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, tasks.as_raw_fd(), entries.as_mut_ptr(), entries.len()) };
        if n <= 0 {
            return count;
        }
        // `struct linux_dirent64`: inode (8), offset (8), record length (2), type (1), name.
        let mut at = 0;
        while at + 19 < n as usize {
            let length = usize::from(u16::from_ne_bytes([entries[at + 16], entries[at + 17]]));
            let name = &entries[at + 19..(at + length).min(n as usize)];
            let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
            if !name.is_empty() && name.iter().all(u8::is_ascii_digit) {
                let mut path = ProcPath::new();
                path.push(b"/proc/").number(pid).push(b"/task/").push(name).push(b"/children");
                count = read_pids(&path, found, count).unwrap_or(count);
            }
            if length == 0 {
                break;
            }
            at += length;
        }
    }
}

/// Adds the pids listed in the file at `path` (decimal, separated by spaces) to `found` after
/// its first `count`, as far as it holds them; returns the new count, `None` when the file
/// cannot be opened.
fn read_pids(path: &ProcPath, found: &mut [i32], mut count: usize) -> Option<usize> {
    let list = path.open(rustix::fs::OFlags::empty())?;
    let mut buf = [0u8; 512];
    // A pid may span two reads.
    let mut pid: Option<i32> = None;
    let mut add = |pid: Option<i32>| {
        if let (Some(pid), Some(slot)) = (pid, found.get_mut(count)) {
            *slot = pid;
            count += 1;
        }
    };
    while let Ok(n @ 1..) = rustix::io::read(&list, &mut buf) {
        for byte in &buf[..n] {
            match byte {
                b'0'..=b'9' => pid = Some(pid.unwrap_or(0).saturating_mul(10).saturating_add(i32::from(byte - b'0'))),
                _ => add(pid.take()),
            }
        }
    }
    add(pid);
    Some(count)
}

/// `rchar` and `wchar` from an open `/proc/PID/io`, read from its start into the stack.
fn read_counts(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: `fd` is open for the duration of the call (its owner closes it after).
    let file = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let mut text = [0u8; 512];
    let mut filled = 0;
    while let Ok(n @ 1..) = rustix::io::pread(file, &mut text[filled..], filled as u64) {
        filled += n;
    }
    Some((field(&text[..filled], b"rchar: ")?, field(&text[..filled], b"wchar: ")?))
}

/// The number after `name` at the start of one of `text`'s lines.
fn field(text: &[u8], name: &[u8]) -> Option<u64> {
    let line = text.split(|b| *b == b'\n').find(|line| line.starts_with(name))?;
    let digits = &line[name.len()..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

/// Writes one record (atomic: shorter than `PIPE_BUF`); a proxy that stopped reading is no
/// reason to stop.
fn write_report(reports: RawFd, report: Report) {
    let bytes = report.encode();
    // SAFETY: write(2) of `bytes` to the report pipe, whose descriptor `hold` keeps open.
    let _ = unsafe { libc::write(reports, bytes.as_ptr().cast(), bytes.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_read_back_as_written() {
        let reports = [
            Report::Started { index: 0, pid: 4242 },
            Report::NotStarted { index: 3, errno: libc::ENOENT },
            Report::Ended { index: 1, code: Some(3), signal: None, io: Some((1 << 40, 7)) },
            Report::Ended { index: 2, code: None, signal: Some(9), io: None },
        ];
        for report in reports {
            assert_eq!(Report::decode(&report.encode()), Some(report));
        }
        assert_eq!(Report::decode(&[0; REPORT_LEN]), None);
    }

    #[test]
    fn the_counts_are_read_from_proc_io() {
        let text = b"rchar: 1234\nwchar: 56\nsyscr: 1\n";
        assert_eq!((field(text, b"rchar: "), field(text, b"wchar: ")), (Some(1234), Some(56)));
        assert_eq!(field(b"rchar: 12x\n", b"rchar: "), None);
        let own = read_io(rustix::process::getpid()).expect("our own /proc/PID/io");
        assert!(own.0 > 0, "{own:?}");
    }

    #[test]
    fn an_ended_child_is_seen_ended_and_left_to_be_reaped() {
        // Reaped below by waitid, as the supervisor reaps its commands.
        #[allow(clippy::zombie_processes)]
        let child = std::process::Command::new("true").spawn().expect("true starts");
        let pid = Pid::from_raw(child.id() as i32).expect("a pid");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !has_ended(pid) {
            assert!(std::time::Instant::now() < deadline, "true ended");
            std::thread::yield_now();
        }
        // Still a zombie: its status is the reaper's, as `reap_ended` expects.
        assert!(has_ended(pid));
        let status = rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED).expect("reaped");
        assert_eq!(status.and_then(|s| s.exit_status()), Some(0));
        let mut running = std::process::Command::new("sleep").arg("5").spawn().expect("sleep starts");
        assert!(!has_ended(Pid::from_raw(running.id() as i32).expect("a pid")));
        running.kill().and_then(|()| running.wait()).expect("sleep killed");
    }
}
