//! A split's fan-in at the client: the copies' outputs, read in input order, combined as the
//! split command's annotation says (`merge:`), so that what comes out is what the unsplit
//! command would have written.

use std::os::fd::OwnedFd;

use posh_core::annotation::MergeKind;
use posh_wire::merge;
use tokio::io::AsyncWriteExt as _;

use super::execute::{pipe, pipe_reader};
use super::local::{self, Caller};
use super::output::async_writer;
use super::placement::FanIn;
use super::{CommandCall, PipelineCall};

/// The status a write into a pipe nobody reads gives a command: killed by SIGPIPE.
const SIGPIPE_STATUS: i32 = 128 + 13;

/// The merge's share of the split command's status: 0, or why the merge itself failed (a merging
/// command's status, SIGPIPE).
pub type MergeStatus = i32;

/// Where a fan-in runs and writes: the split command's descriptors after its redirections.
pub struct Destination<'a> {
    pub caller: &'a Caller,
    pub call: &'a PipelineCall,
    /// The split command (the segment's last), whose redirections `output` and `stderr` carry.
    pub command: &'a CommandCall,
    pub output: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// Starts the fan-in of `readers` (one per copy, in order) into `to`; the future ends when
/// everything is written.
pub fn start(
    fan_in: &FanIn,
    readers: Vec<OwnedFd>,
    to: Destination<'_>,
) -> impl std::future::Future<Output = MergeStatus> + Send + 'static {
    let Destination { caller, call, command, output, stderr } = to;
    // A merging command writes its output itself.
    let direct = match fan_in.kind {
        MergeKind::SortMerge | MergeKind::Rerun => super::progress::writes_directly(output.as_ref()),
        _ => None,
    };
    match fan_in.kind {
        MergeKind::SortMerge => {
            // `sort -m ... /dev/fd/3 /dev/fd/4 ...`: each copy's output is one sorted input.
            let mut argv = fan_in.argv.clone();
            argv.extend((3..3 + readers.len()).map(|fd| format!("/dev/fd/{fd}").into()));
            let started = local::start(caller, call, command, &argv, [None, output, stderr], readers);
            boxed(run_merging(started, None, direct))
        }
        MergeKind::Rerun => {
            // The command again, over the copies' outputs concatenated.
            let (writer, reader) = pipe();
            let started = local::start(caller, call, command, &fan_in.argv, [reader, output, stderr], Vec::new());
            boxed(run_merging(started, Some((readers, writer)), direct))
        }
        kind @ (MergeKind::Concat | MergeKind::Sum | MergeKind::UniqCount) => boxed(async move {
            let mut out = async_writer(output);
            let written = match kind {
                MergeKind::Sum => merge::sum(readers_of(readers), &mut out, u64::MAX).await,
                MergeKind::UniqCount => merge::uniq_count(readers_of(readers), &mut out, u64::MAX).await,
                _ => concatenate(readers, &mut out).await,
            };
            let closed = out.shutdown().await;
            match written.and(closed) {
                Ok(()) => 0,
                // As the unsplit command would end, writing into a pipe nobody reads.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => SIGPIPE_STATUS,
                Err(_) => 1,
            }
        }),
    }
}

/// Waits for a merging command, first feeding it `feed`'s readers concatenated, if any.
async fn run_merging(
    started: Result<std::process::Child, i32>,
    feed: Option<(Vec<OwnedFd>, Option<OwnedFd>)>,
    _direct: Option<super::progress::Working>,
) -> MergeStatus {
    let mut child = match started {
        Ok(child) => child,
        Err(status) => return status,
    };
    let mut kill_on_drop = local::KillOnDrop::default();
    kill_on_drop.add(&child);
    if let Some((readers, writer)) = feed {
        // The pipe into its stdin is ours alone: written directly, without a relay thread.
        let sender = writer.and_then(|w| tokio::net::unix::pipe::Sender::from_owned_fd(w).ok());
        let mut out: Writer = match sender {
            Some(sender) => Box::new(sender),
            None => Box::new(tokio::io::sink()),
        };
        let _ = concatenate(readers, &mut out).await;
    }
    let status = tokio::task::spawn_blocking(move || child.wait().map_or(1, local::shell_status)).await.unwrap_or(1);
    kill_on_drop.disarm();
    status
}

fn boxed(
    future: impl std::future::Future<Output = MergeStatus> + Send + 'static,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = MergeStatus> + Send>> {
    Box::pin(future)
}

type Writer = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// Copies each reader to `out` in order. When `out` fails, the rest are dropped unread: the
/// copies get SIGPIPE, as the unsplit command would.
async fn concatenate(readers: Vec<OwnedFd>, out: &mut Writer) -> std::io::Result<()> {
    for fd in readers {
        let Ok(mut input) = pipe_reader(fd) else { continue };
        tokio::io::copy(&mut input, out).await?;
        out.flush().await?;
    }
    Ok(())
}

/// The copies' pipes as async readers (one that cannot be is left out, as `concatenate` does).
fn readers_of(fds: Vec<OwnedFd>) -> Vec<tokio::net::unix::pipe::Receiver> {
    fds.into_iter().filter_map(|fd| pipe_reader(fd).ok()).collect()
}
