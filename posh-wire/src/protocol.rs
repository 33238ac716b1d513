//! The wire format (see `docs/proxy.md`): one request line, one header line, then tagged frames.

use std::collections::BTreeMap;
use std::io;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The ALPN protocol name both sides require.
pub const ALPN: &[u8] = b"posh/1";
/// The request version this code speaks (3: streams between proxies).
pub const VERSION: u32 = 4;
/// The version of a request whose job runs only if its globs expand as the client expects
/// (`Request::expect_globs`): a proxy that speaks only [`VERSION`] refuses it rather than run
/// the job unconditioned.
pub const VERSION_EXPECTING: u32 = 5;
/// The most globs one job may expect (each is a bash run at the proxy before the job starts).
pub const MAX_EXPECTED_GLOBS: usize = 16;
/// The reason a proxy refuses a job whose expected globs expand otherwise
/// (`Request::expect_globs`).
pub const GLOBS_DIFFER: &str = "the globs expand to other names than the job was planned with";
/// The longest request or header line accepted, newline included.
pub const MAX_LINE: usize = 1 << 20;
/// The most a command's home (`JobCommand::home`) holds, in bytes: a user's configuration, not
/// data. The client takes no more along; the proxy accepts no more.
pub const MAX_HOME_BYTES: usize = 256 * 1024;
/// The largest frame payload either side sends or accepts.
pub const MAX_FRAME: usize = 1 << 20;
/// The name the client asks for in TLS; the certificate's names are not checked, its pinned
/// fingerprint is.
pub const SERVER_NAME: &str = "posh-proxy";

/// The error code of a client that resets its side of a job's stream: it dropped the job (its
/// caller was interrupted), which must not run on.
pub const CANCELLED: quinn::VarInt = quinn::VarInt::from_u32(1);

// The application error codes a proxy closes a connection with, its reason in words beside.

/// The client presented no certificate.
pub const CLOSE_NO_CERTIFICATE: u32 = 1;
/// The client's fingerprint is not in the proxy's authorized-clients file.
pub const CLOSE_NOT_AUTHORIZED: u32 = 2;
/// The client holds `--max-connections-per-client` connections already.
pub const CLOSE_TOO_MANY_CONNECTIONS: u32 = 3;

/// How far a remote command's output may run ahead of its reader in one stream. quinn's
/// default (1.25 MB) caps a stream near 500 Mbit/s at a 20 ms round trip whatever the link; this
/// is twice the bandwidth-delay product of 600 Mbit/s at 20 ms. Not more: what a command wrote
/// before its reader left is not met with SIGPIPE (under bash, a pipe holds 64 KiB), so a
/// larger window makes more `cmd | head` pipelines end with status 0 where bash's end with 141.
const STREAM_WINDOW: u32 = 3 << 20;

/// What one proxy may have sent the connecting side that it has not read yet, all streams of
/// the connection together: the memory a connection's buffers may hold, per mount.
pub const CLIENT_RECEIVE_WINDOW: u32 = 32 << 20;

/// The connecting side's settings (the client, and a proxy fetching another's output): a
/// stream's window of [`STREAM_WINDOW`], and the connection's total bounded (quinn's default
/// has no bound) by [`CLIENT_RECEIVE_WINDOW`].
pub fn transport() -> std::sync::Arc<quinn::TransportConfig> {
    let mut transport = common_transport();
    transport.stream_receive_window(quinn::VarInt::from_u32(STREAM_WINDOW));
    transport.receive_window(quinn::VarInt::from_u32(CLIENT_RECEIVE_WINDOW));
    std::sync::Arc::new(transport)
}

/// The proxy's side: what a client may make it buffer is bounded. quinn's default lets each of
/// a connection's 100 streams hold 1.25 MB of unread data with no bound on their sum; a proxy
/// holds at most this much per connection (a bandwidth-delay product of 20 ms at 6 Gbit/s, far
/// more than one client's uploads need), and one upload may use the link as an output may.
pub fn server_transport() -> std::sync::Arc<quinn::TransportConfig> {
    let mut transport = common_transport();
    transport.stream_receive_window(quinn::VarInt::from_u32(STREAM_WINDOW));
    transport.receive_window(quinn::VarInt::from_u32(16 << 20));
    std::sync::Arc::new(transport)
}

/// How much either side may send before its first acknowledgement. quinn's default (ten
/// datagrams, 12 KB) is meant for the open internet; posh's connections are new for every run and
/// join a client to the proxies of its own storage, and their first messages are the large ones: a
/// directory's listing asked ahead, a glob's 2,000 names (40 KB), the request that carries them
/// back. In slow start from 12 KB each took three or four round trips where one suffices (traced
/// on the 20 ms link: 0.1 s of a 2,000-file log analysis). Still below the bandwidth-delay
/// product of either link posh is measured on (1.5 MB at 600 Mbit/s and 20 ms, 312 KB at
/// 5 Gbit/s and 0.5 ms), and quinn paces the window over the measured round trip.
pub const INITIAL_WINDOW: u64 = 128 << 10;

fn common_transport() -> quinn::TransportConfig {
    let mut transport = quinn::TransportConfig::default();
    let mut cubic = quinn::congestion::CubicConfig::default();
    cubic.initial_window(INITIAL_WINDOW);
    transport.congestion_controller_factory(std::sync::Arc::new(cubic));
    transport.keep_alive_interval(Some(std::time::Duration::from_secs(2)));
    // A proxy (or client) that vanished is given up on after this long without a packet.
    transport.max_idle_timeout(Some(std::time::Duration::from_secs(10).try_into().expect("a valid timeout")));
    transport
}

/// One job: a pipeline of commands to run at the proxy, the first reading the stream's input, the
/// last writing the stream's output, every command's stderr going back as stderr frames.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub version: u32,
    /// The working directory, relative to the proxy's export root (`""` is the root).
    #[serde(default)]
    pub cwd: String,
    /// The client's working directory lies above the mount, which is at this relative path from
    /// it (`examples/data`): the job then runs in a directory of its own holding only those
    /// directories and a link to the export root at the path, so relative words
    /// (`examples/data/a.log`) reach the command as they were written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    pub commands: Vec<JobCommand>,
    /// bash's `noclobber`: `>` refuses to replace an existing regular file.
    #[serde(default)]
    pub noclobber: bool,
    /// The client's stdout and stderr are one destination (`> log 2>&1`): every command's stderr
    /// goes into the job's output stream, so the two interleave as the commands wrote them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stderr_with_stdout: bool,
    /// The last command's stdout goes to another proxy, which comes for it with this token,
    /// instead of back on this stream (stderr and the statuses still come back here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_output: Option<PeerOutput>,
    /// Files the commands read that lie on another proxy's export: each is a pipe in the job's
    /// view, under the word the commands name it by, fed by that proxy's job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_inputs: Vec<PeerInput>,
    /// The first command's stdin is other proxies' job outputs (`PeerOutput::pipe`), fetched
    /// from there and joined in this order (the copies of a split command), instead of what the
    /// client sends on this stream.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_stdin: Vec<PeerSource>,
    /// How the outputs of `peer_stdin` reach the first command.
    #[serde(default, skip_serializing_if = "Joined::is_concat")]
    pub peer_stdin_joined: Joined,
    /// The client shows progress: the proxy sends [`TAG_PROGRESS`] frames while the job runs
    /// and one before its exit frame. Asked for, never sent unasked: a client that does not know
    /// the frame refuses it, and a proxy that does not know the field ignores it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub progress: bool,
    /// Instead of `commands`: the proxy's bash expands these globs in `cwd` and writes what
    /// they matched (`crate::glob`). A proxy that does not know the field refuses the request
    /// (it has no commands), and the client expands them itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<crate::glob::GlobRequest>,
    /// With `commands` (and [`VERSION_EXPECTING`]): the job runs only if each of these globs
    /// expands at the proxy, now, to the names the client planned it with; otherwise the proxy
    /// refuses it with [`GLOBS_DIFFER`] (see [`crate::glob::ExpectedGlob`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_globs: Vec<crate::glob::ExpectedGlob>,
}

/// How a job joins the outputs it fetches as its first command's input (`Request::peer_stdin`):
/// the merge step of a split command's copies (`merge:` in its annotation), done at the proxy
/// that writes the result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Joined {
    /// One after the other, as its stdin (`concat`, `rerun`).
    #[default]
    Concat,
    /// Each one a pipe of its own, named by further words `/dev/fd/3`, `/dev/fd/4`, ... after
    /// the command's own, in order (`sort_merge`: `sort -m`).
    Apart,
    /// Added up number by number, as its stdin (`sum`: `wc`, `grep -c`).
    Sum,
    /// `uniq -c` lines whose line a seam cut counted once, as its stdin (`uniq_count`).
    UniqCount,
}

impl Joined {
    fn is_concat(&self) -> bool {
        *self == Joined::Concat
    }
}

/// Where a job's output goes when another proxy reads it (see `Request::peer_output`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerOutput {
    /// Random, chosen by the client; the reading proxy presents it.
    pub token: String,
    /// The fingerprint of the proxy that will come for it: the client introduces it, and this
    /// proxy accepts that certificate for this one fetch.
    pub peer: String,
    /// The output is a pipe into the other proxy's next command, not a file: it ends when the
    /// output ends, whatever the job's status (a file ends only when the job succeeded).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipe: bool,
}

/// The first line of a stream that asks the proxy to send files of its export to other
/// proxies' jobs (the plan's streamed inputs, see `peer`): no command runs; the proxy opens each
/// file beneath the export itself (a regular file, never a FIFO or a device) and streams it to
/// the proxy the client introduced, as it streams a job's output. One request serves every file
/// a group reads from this mount, and takes one of the client's job slots. The answer is a
/// [`Header`], then one [`TAG_EXIT`] frame whose [`Ended`] holds an [`Exit`] per file: 0 when it
/// was sent whole, SIGPIPE when its reader stopped reading, 1 with the reason otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendFiles {
    pub version: u32,
    pub send: Vec<SentFile>,
}

/// One file of [`SendFiles`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SentFile {
    /// Relative to the export root, resolved beneath it.
    pub path: String,
    pub to: PeerOutput,
}

/// The first line of a stream that runs jobs one after another, in order (the iterations of a
/// loop handed over whole: see `posh_core::planner::LoopPlan`). Every job is checked before any
/// runs; the answer is one [`Header`], then each job's output frames and its [`TAG_EXIT`] frame,
/// as for a job of its own. After a job whose pipeline failed (its last command's status, or
/// under `pipefail` its last failing one's) under `errexit`, or a job that did not complete, no
/// other runs and the stream finishes. The client's side carries no input: the jobs' first
/// commands meet end of file (`TAG_STDIN_END` at once), and a `TAG_STDOUT_CLOSED` holds for the
/// job running and every later one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sequence {
    pub version: u32,
    /// Jobs without streams from or to other proxies.
    pub sequence: Vec<Request>,
    #[serde(default)]
    pub errexit: bool,
    #[serde(default)]
    pub pipefail: bool,
}

/// The most jobs one [`Sequence`] may hold.
pub const JOBS_PER_SEQUENCE: usize = 4096;

impl Sequence {
    /// Whether the job that ended so ends the sequence too.
    pub fn stops_after(&self, ended: &Ended) -> bool {
        let mut statuses = ended.commands.iter().rev().map(Exit::status);
        let status = if self.pipefail { statuses.find(|&s| s != 0) } else { statuses.next() };
        self.errexit && status.unwrap_or(0) != 0
    }
}

/// A file that another proxy streams into a job (see `Request::peer_inputs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInput {
    /// The word the job's commands read it by, relative to the view: plain names only.
    pub path: String,
    #[serde(flatten)]
    pub source: PeerSource,
}

/// Another proxy's job output, to fetch: where that proxy listens, the fingerprint it must
/// present, and the token the client gave the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerSource {
    pub addr: String,
    pub fingerprint: String,
    pub token: String,
}

/// The first line of a stream that a proxy opens to another to read a job's output that the
/// client sent its way (`PeerOutput`). The answer is a [`Header`], then the output's bytes,
/// unframed: the stream finishes when the job completed, and is reset when it did not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fetch {
    /// The token the client gave both jobs.
    pub fetch: String,
    /// The fingerprint of the client whose job fetches (the fetching proxy knows it from that
    /// client's own connection): tokens are the client's to choose, so each client's are apart
    /// from every other's, and no answer tells one client about another's.
    #[serde(rename = "for")]
    pub client: String,
}

/// The longest first line a proxy reads from another proxy it let in: a [`Fetch`] (a token and
/// a fingerprint) and nothing else.
pub const MAX_FETCH_LINE: usize = 1024;

/// The first line of a stream that asks the proxy what the planner needs to know of its export
/// (see `posh_proxy::metadata`): one question, answered by a [`Header`] and one [`Answer`] line.
/// Over a networked mount each `stat` of a plan is a round trip once the mount's attribute cache
/// has lapsed; one question to the proxy answers for a whole directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    pub ask: Question,
}

/// A path relative to the export root (`""` is the root), resolved beneath it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Question {
    /// The regular files (with their sizes) and directories in a directory.
    List(String),
    /// The bytes of everything below a directory, walked as the client's planner walks one.
    SizeBelow(String),
    /// For each file, whether its last byte is a newline (where a split may cut `cat`'s output).
    EndsWithNewline(Vec<String>),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Names that are not UTF-8, symbolic links and special files are left out of `files` and
    /// `dirs` (the client asks its mount of those), and so is what lies past the proxy's bound on
    /// one answer.
    Listing {
        /// (name, size).
        files: Vec<(String, u64)>,
        dirs: Vec<String>,
        /// The names of the directory's other entries (symbolic links, FIFOs, sockets,
        /// devices), which a glob matches too.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        others: Vec<String>,
        /// Every entry of the directory is named above (none was cut by the bound, none had a
        /// name that is not UTF-8): the client may take the listing for the directory's names,
        /// and list nothing through its mount. An older proxy does not say so.
        #[serde(default)]
        complete: bool,
    },
    SizeBelow(u64),
    /// In the question's order; `None` for what is not a non-empty regular file beneath the
    /// export.
    EndsWithNewline(Vec<Option<bool>>),
}

/// One command of a job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCommand {
    pub argv: Vec<String>,
    /// Locale variables, `TZ` and what the command's annotation says it reads
    /// (`planner::reaches_proxy`); the proxy refuses anything else.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Indices of argv words the client knows to be file paths (checked like the proxy's own).
    #[serde(default)]
    pub files: Vec<usize>,
    /// Applied in order over the command's pipes, as bash applies them.
    #[serde(default)]
    pub redirects: Vec<Redirect>,
    /// The command runs with a home of its own (`HOME`), holding these files (path relative to
    /// the home, text): the user's configuration its annotation names (`reads_home`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<BTreeMap<String, String>>,
}

/// `fd op target`: `<`, `>`, `>|`, `>>` with a path under the export (or `/dev/null`), `>&` with
/// a descriptor number (0 to 2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    pub fd: u32,
    pub op: String,
    pub target: String,
}

impl Request {
    /// A job of one command.
    pub fn new(argv: &[&str]) -> Request {
        Request {
            version: VERSION,
            commands: vec![JobCommand { argv: argv.iter().map(|s| s.to_string()).collect(), ..JobCommand::default() }],
            ..Request::default()
        }
    }
}

/// The proxy's answer to a request, before any output.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The proxy takes [`TAG_STOP`] and [`TAG_CONTINUE`] frames on this job's stream. A proxy of
    /// an earlier build leaves it out, and a client sends it no such frame (it would end the job
    /// as a frame it does not know).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspends: bool,
}

impl Header {
    /// A request accepted.
    pub fn accepted() -> Header {
        Header { ok: true, ..Header::default() }
    }

    /// A request refused, for `error`.
    pub fn refused(error: String) -> Header {
        Header { ok: false, error: Some(error), ..Header::default() }
    }
}

/// How one command ended: `code` or `signal`, or `error` when it could not start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StartError>,
    /// What it read and wrote, when the proxy's kernel told (for measured ratios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<crate::measure::IoCount>,
}

/// Why a command did not start, for the client to report in bash's words with its own paths.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartError {
    /// The redirection that failed (index into the command's list); `None`: the program itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<usize>,
    pub message: String,
    pub status: i32,
}

impl Exit {
    /// The status a shell would report: the exit code, or 128 + the signal.
    pub fn status(&self) -> i32 {
        match (self.code, self.signal, &self.error) {
            (_, _, Some(error)) => error.status,
            (Some(code), _, _) => code,
            (None, Some(signal), _) => 128 + signal,
            (None, None, None) => 255,
        }
    }
}

/// The last frame of a job: how each command ended, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    pub commands: Vec<Exit>,
    /// The regular files the job's outputs left written, as the proxy settled them: the
    /// client's plans after it take their sizes from here rather than asking the mount (through
    /// a networked filesystem, a round trip per name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<WrittenFile>,
}

/// A file a job wrote: its path below the export root, and its size once the job's outputs
/// were settled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrittenFile {
    pub path: String,
    pub size: u64,
}

/// Frame tags, proxy to client.
pub const TAG_STDOUT: u8 = 1;
pub const TAG_STDERR: u8 = 2;
/// The payload is [`Ended`] as JSON; nothing follows.
pub const TAG_EXIT: u8 = 3;
/// The payload is [`Progress`] as JSON; sent only for a request that asks (`Request::progress`).
pub const TAG_PROGRESS: u8 = 7;
/// Frame tags, client to proxy (after the request line).
pub const TAG_STDIN: u8 = 4;
/// The job's input is complete.
pub const TAG_STDIN_END: u8 = 5;
/// Nobody reads the job's output any more: the proxy closes the last command's stdout (which
/// then meets SIGPIPE, as under bash) and sends no more stdout frames; stderr still flows.
pub const TAG_STDOUT_CLOSED: u8 = 6;
/// The client's job was suspended (Ctrl-Z at posh's prompt): the proxy stops every process of
/// the job (SIGSTOP), as the terminal stops a local job's. Sent only to a proxy whose header said
/// it `suspends`; empty payload.
pub const TAG_STOP: u8 = 8;
/// The suspended job goes on (`fg`, `bg`): every process of it gets SIGCONT. Empty payload.
pub const TAG_CONTINUE: u8 = 9;

/// How far a job has got (a [`TAG_PROGRESS`] frame): its figures so far, each only growing
/// within one job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Bytes the job's commands have read first-hand: every command's reads (`rchar`) except
    /// those of its input from the command before it, from the client or from another proxy.
    pub read: u64,
}

/// How often a job that reports progress says how far it got (and not at all when it ends
/// sooner, but for its last report).
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// The bytes a frame adds to its payload: the tag and the length.
pub const FRAME_HEADER: usize = 5;

/// Writes one JSON value and a newline; returns the bytes written.
pub async fn write_line<W: AsyncWrite + Unpin, T: Serialize>(w: &mut W, value: &T) -> io::Result<usize> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line).await?;
    Ok(line.len())
}

/// Reads one line (at most [`MAX_LINE`] bytes) and parses it as JSON; returns it with the bytes
/// read.
pub async fn read_line<R: AsyncBufRead + Unpin, T: for<'de> Deserialize<'de>>(r: &mut R) -> io::Result<(T, usize)> {
    read_line_within(r, MAX_LINE).await
}

/// [`read_line`] of a line of at most `max` bytes: no more is read.
pub async fn read_line_within<R: AsyncBufRead + Unpin, T: for<'de> Deserialize<'de>>(
    r: &mut R,
    max: usize,
) -> io::Result<(T, usize)> {
    let mut line = Vec::new();
    let n = r.take(max as u64).read_until(b'\n', &mut line).await?;
    if n == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the stream ended before a line"));
    }
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long or unterminated"));
    }
    let value = serde_json::from_slice(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok((value, n))
}

/// Writes one frame: a tag byte, the payload length as a big-endian u32, the payload; returns
/// the bytes written.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, tag: u8, payload: &[u8]) -> io::Result<usize> {
    let len = u32::try_from(payload.len()).map_err(io::Error::other)?;
    let mut head = [0u8; FRAME_HEADER];
    head[0] = tag;
    head[1..].copy_from_slice(&len.to_be_bytes());
    w.write_all(&head).await?;
    w.write_all(payload).await?;
    Ok(FRAME_HEADER + payload.len())
}

/// Reads one frame; `None` at a clean end of stream before a frame starts.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; FRAME_HEADER];
    match r.read_exact(&mut head[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut head[1..]).await?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes is too large")));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await?;
    Ok(Some((head[0], payload)))
}

/// The text a shell uses for an OS error: strerror without Rust's " (os error N)".
pub fn os_message(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod sequence_tests {
    use super::*;

    /// A sequence stops after a failing pipeline only under `errexit`, by bash's pipeline status.
    #[test]
    fn a_sequence_stops_where_bash_would() {
        let ended = |codes: &[i32]| Ended {
            commands: codes.iter().map(|&c| Exit { code: Some(c), ..Exit::default() }).collect(),
            ..Ended::default()
        };
        let sequence = |errexit, pipefail| Sequence { version: VERSION, sequence: Vec::new(), errexit, pipefail };
        assert!(!sequence(false, true).stops_after(&ended(&[1, 1])));
        assert!(sequence(true, false).stops_after(&ended(&[0, 2])));
        assert!(!sequence(true, false).stops_after(&ended(&[1, 0])));
        assert!(sequence(true, true).stops_after(&ended(&[1, 0])));
        assert!(!sequence(true, true).stops_after(&ended(&[0, 0])));
    }
}

#[cfg(test)]
mod compatibility_tests {
    use super::*;

    /// A request that does not ask for progress is the line it was before there were reports,
    /// and a proxy that knows no such field still reads one that asks (unknown fields are
    /// ignored): within version 4 the two sides need not be of one build.
    #[test]
    fn progress_is_asked_for_without_breaking_either_side() {
        let plain = serde_json::to_string(&Request::new(&["cat", "a.txt"])).unwrap();
        assert_eq!(
            plain,
            r#"{"version":4,"cwd":"","commands":[{"argv":["cat","a.txt"],"env":{},"files":[],"redirects":[]}],"noclobber":false}"#
        );
        let asking = Request { progress: true, ..Request::new(&["cat", "a.txt"]) };
        let line = serde_json::to_string(&asking).unwrap();
        assert_eq!(line, plain.replace(r#""noclobber":false"#, r#""noclobber":false,"progress":true"#));
        assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), asking);
        let unknown = plain.replace(r#""noclobber":false"#, r#""noclobber":false,"asked_in_a_later_build":1"#);
        assert_eq!(serde_json::from_str::<Request>(&unknown).unwrap(), Request::new(&["cat", "a.txt"]));
        let report = serde_json::to_string(&Progress { read: 1234 }).unwrap();
        assert_eq!(report, r#"{"read":1234}"#);
    }

    /// A proxy says in its header that it takes stop frames; one that does not (an earlier build)
    /// sends the header it always sent, which reads as taking none.
    #[test]
    fn a_header_says_whether_the_proxy_takes_stop_frames() {
        assert_eq!(serde_json::to_string(&Header::accepted()).unwrap(), r#"{"ok":true}"#);
        let suspends = Header { suspends: true, ..Header::accepted() };
        assert_eq!(serde_json::to_string(&suspends).unwrap(), r#"{"ok":true,"suspends":true}"#);
        assert_eq!(serde_json::from_str::<Header>(r#"{"ok":true}"#).unwrap(), Header::accepted());
        let refused = serde_json::from_str::<Header>(r#"{"ok":false,"error":"busy"}"#).unwrap();
        assert_eq!(refused, Header::refused("busy".to_string()));
    }
}
