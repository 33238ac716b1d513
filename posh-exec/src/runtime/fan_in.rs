//! A split's fan-in at the client: the copies' outputs, read in input order, combined as the
//! split command's annotation says (`merge:`), so that what comes out is what the unsplit
//! command would have written.

use std::os::fd::OwnedFd;

use posh_core::annotation::MergeKind;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};

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
    match fan_in.kind {
        MergeKind::SortMerge => {
            // `sort -m ... /dev/fd/3 /dev/fd/4 ...`: each copy's output is one sorted input.
            let mut argv = fan_in.argv.clone();
            argv.extend((3..3 + readers.len()).map(|fd| format!("/dev/fd/{fd}").into()));
            let started = local::start(caller, call, command, &argv, [None, output, stderr], readers);
            boxed(run_merging(started, None))
        }
        MergeKind::Rerun => {
            // The command again, over the copies' outputs concatenated.
            let (writer, reader) = pipe();
            let started = local::start(caller, call, command, &fan_in.argv, [reader, output, stderr], Vec::new());
            boxed(run_merging(started, Some((readers, writer))))
        }
        kind @ (MergeKind::Concat | MergeKind::Sum | MergeKind::UniqCount) => boxed(async move {
            let mut out = async_writer(output);
            let written = match kind {
                MergeKind::Sum => sum(readers, &mut out).await,
                MergeKind::UniqCount => uniq_count(readers, &mut out).await,
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
) -> MergeStatus {
    let mut child = match started {
        Ok(child) => child,
        Err(status) => return status,
    };
    if let Some((readers, writer)) = feed {
        // The pipe into its stdin is ours alone: written directly, without a relay thread.
        let sender = writer.and_then(|w| tokio::net::unix::pipe::Sender::from_owned_fd(w).ok());
        let mut out: Writer = match sender {
            Some(sender) => Box::new(sender),
            None => Box::new(tokio::io::sink()),
        };
        let _ = concatenate(readers, &mut out).await;
    }
    tokio::task::spawn_blocking(move || child.wait().map_or(1, local::shell_status)).await.unwrap_or(1)
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

/// `merge:sum`: the copies print the same lines of numbers (`wc`, `grep -c`); the merged output
/// is the first copy's text with every number replaced by the sum of that number across copies,
/// right-aligned in the first copy's field width as printf's `%7d` would be. Copies whose output
/// differs in shape are not summed: everything is written as it came, in order.
async fn sum(readers: Vec<OwnedFd>, out: &mut Writer) -> std::io::Result<()> {
    let mut outputs = Vec::new();
    for fd in readers {
        let mut text = Vec::new();
        if let Ok(mut input) = pipe_reader(fd) {
            input.read_to_end(&mut text).await?;
        }
        outputs.push(text);
    }
    out.write_all(&sum_texts(&outputs)).await?;
    out.flush().await
}

/// A line as runs of blanks, each followed by a word (the last word may be empty).
type Fields<'a> = Vec<(&'a [u8], &'a [u8])>;

fn fields(line: &[u8]) -> Fields<'_> {
    let mut fields = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let blanks = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let word = rest[blanks..].iter().take_while(|b| !b.is_ascii_whitespace()).count();
        fields.push((&rest[..blanks], &rest[blanks..blanks + word]));
        rest = &rest[blanks + word..];
    }
    fields
}

fn number(word: &[u8]) -> Option<u128> {
    std::str::from_utf8(word).ok().filter(|w| w.bytes().all(|b| b.is_ascii_digit()))?.parse().ok()
}

fn sum_texts(outputs: &[Vec<u8>]) -> Vec<u8> {
    let present: Vec<&Vec<u8>> = outputs.iter().filter(|o| !o.is_empty()).collect();
    let Some(first) = present.first() else { return Vec::new() };
    let parsed: Vec<Vec<Fields<'_>>> =
        present.iter().map(|o| o.split_inclusive(|&b| b == b'\n').map(fields).collect()).collect();
    let template = &parsed[0];
    let same_shape = parsed.iter().all(|lines| {
        lines.len() == template.len()
            && lines.iter().zip(template).all(|(line, model)| {
                line.len() == model.len()
                    && line.iter().zip(model).all(|((_, word), (_, model))| {
                        word == model || (number(word).is_some() && number(model).is_some())
                    })
            })
    });
    if !same_shape {
        return outputs.concat();
    }
    let mut merged = Vec::with_capacity(first.len());
    for (l, line) in template.iter().enumerate() {
        for (f, (blanks, word)) in line.iter().enumerate() {
            let Some(_) = number(word) else {
                merged.extend_from_slice(blanks);
                merged.extend_from_slice(word);
                continue;
            };
            let total: u128 = parsed.iter().filter_map(|lines| number(lines[l][f].1)).sum();
            let digits = total.to_string();
            let width = blanks.len() + word.len();
            let pad = width.saturating_sub(digits.len()).max(usize::from(!blanks.is_empty()));
            merged.extend(std::iter::repeat_n(b' ', pad));
            merged.extend_from_slice(digits.as_bytes());
        }
    }
    merged
}

/// `merge:uniq_count`: the copies' `uniq -c` lines in order, where a line that ends one copy's
/// output and starts the next one's (a run cut by a seam) becomes one line with the counts added.
async fn uniq_count(readers: Vec<OwnedFd>, out: &mut Writer) -> std::io::Result<()> {
    let mut pending: Option<(u128, Vec<u8>)> = None;
    let mut line = Vec::new();
    for fd in readers {
        let Ok(input) = pipe_reader(fd) else { continue };
        let mut input = tokio::io::BufReader::with_capacity(256 * 1024, input);
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line).await? == 0 {
                break;
            }
            match counted(&line) {
                Some((count, text)) => match &mut pending {
                    Some((total, seen)) if seen == text => *total += count,
                    _ => {
                        if let Some((total, seen)) = pending.replace((count, text.to_vec())) {
                            write_counted(out, total, &seen).await?;
                        }
                    }
                },
                None => {
                    if let Some((total, seen)) = pending.take() {
                        write_counted(out, total, &seen).await?;
                    }
                    out.write_all(&line).await?;
                }
            }
        }
    }
    if let Some((total, seen)) = pending {
        write_counted(out, total, &seen).await?;
    }
    out.flush().await
}

/// `   12 text\n` as (12, `text\n`): GNU uniq's `%7d ` and the line.
fn counted(line: &[u8]) -> Option<(u128, &[u8])> {
    let blanks = line.iter().take_while(|&&b| b == b' ').count();
    let digits = line[blanks..].iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = line[blanks + digits..].strip_prefix(b" ")?;
    Some((number(&line[blanks..blanks + digits])?, rest))
}

async fn write_counted(out: &mut Writer, count: u128, text: &[u8]) -> std::io::Result<()> {
    out.write_all(format!("{count:>7} ").as_bytes()).await?;
    out.write_all(text).await
}

#[cfg(test)]
mod tests {
    use super::sum_texts;

    fn sum(outputs: &[&str]) -> String {
        let outputs: Vec<Vec<u8>> = outputs.iter().map(|o| o.as_bytes().to_vec()).collect();
        String::from_utf8(sum_texts(&outputs)).unwrap()
    }

    #[test]
    fn sums_keep_printfs_field_widths() {
        assert_eq!(sum(&["3\n", "4\n"]), "7\n");
        assert_eq!(sum(&["      2       2       4\n", "      1       3       9\n"]), "      3       5      13\n");
        assert_eq!(sum(&["9999999 9999999 9999999\n", "      1       1       1\n"]), "10000000 10000000 10000000\n");
        assert_eq!(sum(&["", "5\n", ""]), "5\n");
    }

    #[test]
    fn outputs_of_another_shape_are_written_as_they_came() {
        assert_eq!(sum(&["3\n", "wc: x: No such file\n"]), "3\nwc: x: No such file\n");
        assert_eq!(sum(&["1 2\n", "3\n"]), "1 2\n3\n");
    }
}
