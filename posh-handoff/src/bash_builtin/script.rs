//! The builtin's side of a rewritten script bash runs as a file (`posh_core::rewrite::ScriptFile`):
//! `__start` on its first line, `__call` in place of each handed-over pipeline.
//!
//! bash was started as `bash FILE ARGS` on the rewritten text, so the script is bash's in every
//! way but its name, which `__start` gives back where bash keeps it: `$0`, `BASH_SOURCE`'s
//! outermost entry (the name bash's messages begin with) and the parser's input name. It also
//! takes the run's socket and statistics file, which no shell variable then holds.
//!
//! A call is a simple command bash expands and, under `set -x`, traces: `__start` wraps bash's
//! trace stream in a filter that drops the call's own line, and each call traces its commands
//! as bash would have (`xtrace_print_assignment`, `xtrace_print_word_list`: bash's own code, so
//! `PS4`, its depth and the quoting are bash's). A call of one command enters it in bash's hash
//! table, as bash's own search for it would have (a pipeline's commands are searched in
//! subshells, so theirs never are).

use std::ffi::{CStr, CString, OsStr, OsString, c_char, c_int, c_void};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use posh_core::rewrite::{LOOP_VARS, MARK_ASSIGN, MARK_COMMAND, MARK_LAST_ARG, MARK_LOOP, MARK_TEXT, MARK_WORDS};

use super::{WordDesc, WordList};

/// What `__start` was told: the run's socket and `--stats` file (empty for none).
pub(super) struct Run {
    pub(super) socket: OsString,
    stats: OsString,
}

pub(super) static RUN: OnceLock<Run> = OnceLock::new();

/// Keeps the run's socket and statistics file (once: a second start is refused).
pub(super) fn set_run(socket: OsString, stats: OsString) -> c_int {
    if RUN.set(Run { socket, stats }).is_err() {
        eprintln!("__posh_run: the script was started already");
        return 2;
    }
    0
}

/// `SHELL_VAR` of bash's `variables.h`, as far as it is read here.
#[repr(C)]
pub(super) struct ShellVar {
    pub(super) name: *const c_char,
    pub(super) value: *mut c_void,
    pub(super) exportstr: *const c_char,
    pub(super) dynamic_value: *const c_void,
    pub(super) assign_func: *const c_void,
    pub(super) attributes: c_int,
    pub(super) context: c_int,
}

/// `att_array` of `variables.h`.
const ATT_ARRAY: c_int = 0x4;
/// `CMDSRCH_HASH` of `findcmd.h`.
const CMDSRCH_HASH: c_int = 0x1;

/// `BASH_INPUT` of bash's `input.h`, up to the field written here.
#[repr(C)]
struct BashInput {
    stream_type: c_int,
    name: *mut c_char,
}

unsafe extern "C" {
    /// `$0` to `$9`.
    static mut dollar_vars: [*mut c_char; 10];
    /// The input bash parses; its name begins the messages of syntax errors.
    static mut bash_input: BashInput;
    fn find_variable(name: *const c_char) -> *mut ShellVar;
    fn array_insert(array: *mut c_void, index: i64, value: *const c_char) -> c_int;
    fn get_string_value(name: *const c_char) -> *const c_char;
    fn unbind_variable_noref(name: *const c_char) -> c_int;
    /// `set -x`.
    static echo_command_at_execute: c_int;
    /// Where bash writes its trace (`stderr` when NULL).
    static mut xtrace_fp: *mut libc::FILE;
    fn xtrace_print_word_list(list: *const WordList, flags: c_int);
    fn xtrace_print_assignment(name: *const c_char, value: *const c_char, assign_list: c_int, flags: c_int);
    /// bash's search of `$PATH` for a command, entering it in the hash table with `CMDSRCH_HASH`.
    fn search_for_command(name: *const c_char, flags: c_int) -> *mut c_char;
    /// The C library's `stderr` stream.
    static stderr: *mut libc::FILE;
}

/// `__posh_run __start NAME SOCKET STATS LAST`: see the module's documentation. `LAST`, bash's
/// `$_` before the first line, is the call's last word only so that bash sets `$_` back to it.
pub(super) fn start(args: &[OsString]) -> c_int {
    let [name, socket, stats, _last] = args else {
        eprintln!("__posh_run: __start NAME SOCKET STATS LAST (written by posh-exec, not for use by hand)");
        return 2;
    };
    if set_run(socket.clone(), stats.clone()) != 0 {
        return 2;
    }
    let Ok(name) = CString::new(name.as_bytes()) else { return 2 };
    // SAFETY: bash's own variables, on bash's only thread; the strings are bash's to keep and
    // free (malloc'd), as those they replace were.
    unsafe {
        dollar_vars[0] = libc::strdup(name.as_ptr());
        bash_input.name = libc::strdup(name.as_ptr());
        let source = find_variable(c"BASH_SOURCE".as_ptr());
        if !source.is_null() && (*source).attributes & ATT_ARRAY != 0 && !(*source).value.is_null() {
            array_insert((*source).value, 0, name.as_ptr());
        }
        unbind_variable_noref(c"__posh_l".as_ptr());
    }
    trace_filter::install();
    0
}

/// `__posh_run __call ␟C ...`: the pipeline handed to the runtime with what `__run` carries
/// before its marks (the script's name, `$SHELLOPTS`, the statistics file).
pub(super) fn call(marked: &[OsString], env: Vec<Vec<u8>>) -> c_int {
    // A line rewritten at the prompt runs its first call: its history and display are back.
    super::prompt::restore();
    let Some(run) = RUN.get() else {
        eprintln!("__posh_run: __call before __start (written by posh-exec, not for use by hand)");
        return 2;
    };
    // SAFETY: bash's own variables, on bash's only thread.
    let (name, options) = unsafe {
        let options = get_string_value(c"SHELLOPTS".as_ptr());
        (c_text(dollar_vars[0]), c_text(options))
    };
    // A call at the prompt starts with the pipeline as typed, which names its job.
    let (typed, marked) = match marked {
        [mark, typed, rest @ ..] if mark == MARK_TEXT => (Some(typed), rest),
        _ => (None, marked),
    };
    // The words end with bash's `$_` as it was, for bash to keep (see `MARK_LAST_ARG`).
    let marked = match marked {
        [rest @ .., mark, _] if mark == MARK_LAST_ARG => rest,
        _ => marked,
    };
    // A loop's variables, expanded into these words, leave the script's view.
    for variable in LOOP_VARS {
        let Ok(variable) = CString::new(variable) else { continue };
        // SAFETY: bash's function, on its thread.
        unsafe { unbind_variable_noref(variable.as_ptr()) };
    }
    let commands = commands(marked);
    // SAFETY: read on bash's only thread.
    if unsafe { echo_command_at_execute } != 0 {
        commands.iter().for_each(Command::trace);
    }
    if let [command] = &commands[..] {
        command.hash();
    }
    let mut args = vec![name, options, run.stats.clone()];
    args.extend_from_slice(marked);
    let status = match typed.filter(|_| super::job::possible()) {
        Some(typed) => super::job::run(typed, &run.socket, &args, env),
        None => super::hand_over_to(&run.socket, &args, env),
    };
    // A `BASH_XTRACEFD` the script set meanwhile replaced the filter.
    trace_filter::install();
    status
}

/// A C string of bash's as bytes (empty for NULL).
///
/// # Safety
/// `text` is NULL or NUL-terminated.
unsafe fn c_text(text: *const c_char) -> OsString {
    if text.is_null() {
        return OsString::new();
    }
    // SAFETY: per the caller.
    OsString::from_vec(unsafe { CStr::from_ptr(text) }.to_bytes().to_vec())
}

/// What bash would have traced and searched of one command of a call.
#[derive(Debug, Default)]
struct Command<'a> {
    assignments: Vec<&'a OsStr>,
    words: Vec<&'a OsStr>,
}

/// The commands of a pipeline call's words (none for a loop's, whose tracing is bash's: a loop
/// goes over whole only in a script that never traces, see `posh_core::rewrite::LoopScope`).
fn commands(marked: &[OsString]) -> Vec<Command<'_>> {
    if marked.first().is_some_and(|m| m == MARK_LOOP) {
        return Vec::new();
    }
    let mut commands: Vec<Command<'_>> = Vec::new();
    let mut words = marked.iter().map(OsString::as_os_str).peekable();
    while let Some(word) = words.next() {
        if word == MARK_COMMAND {
            commands.push(Command::default());
        } else if word == MARK_ASSIGN {
            let (Some(command), Some(assignment)) = (commands.last_mut(), words.next()) else { break };
            command.assignments.push(assignment);
        } else if word == MARK_WORDS {
            let Some(command) = commands.last_mut() else { break };
            while let Some(word) = words.next_if(|w| !w.as_bytes().starts_with(b"\x1f")) {
                command.words.push(word);
            }
        }
        // Redirections (`␟R`, `␟S`) are not traced.
    }
    commands
}

impl Command<'_> {
    /// bash's trace of the command: its assignments, then its words.
    fn trace(&self) {
        for assignment in &self.assignments {
            let bytes = assignment.as_bytes();
            let equals = bytes.iter().position(|&b| b == b'=').unwrap_or(bytes.len());
            let (Ok(name), Ok(value)) =
                (CString::new(&bytes[..equals]), CString::new(bytes.get(equals + 1..).unwrap_or_default()))
            else {
                continue;
            };
            // SAFETY: bash's function, on its thread, with NUL-terminated strings it only reads.
            unsafe { xtrace_print_assignment(name.as_ptr(), value.as_ptr(), 0, 1) };
        }
        if self.words.is_empty() {
            return;
        }
        let texts: Vec<CString> = self.words.iter().filter_map(|w| CString::new(w.as_bytes()).ok()).collect();
        let descs: Vec<WordDesc> = texts.iter().map(|t| WordDesc { word: t.as_ptr(), flags: 0 }).collect();
        let mut list: Vec<WordList> = descs.iter().map(|d| WordList { next: std::ptr::null(), word: d }).collect();
        for i in (0..list.len().saturating_sub(1)).rev() {
            let next: *const WordList = &list[i + 1];
            list[i].next = next;
        }
        // SAFETY: a well-formed word list bash only reads, alive for the call.
        unsafe { xtrace_print_word_list(list.as_ptr(), 1) };
    }

    /// bash's search for the command, which enters it in the hash table (not for a name with
    /// a slash, which bash never hashes, nor under an assignment to `PATH`, whose search bash
    /// makes in the command's own environment without hashing).
    fn hash(&self) {
        let Some(name) = self.words.first() else { return };
        let path_assigned = self.assignments.iter().any(|a| a.as_bytes().starts_with(b"PATH="));
        if name.is_empty() || name.as_bytes().contains(&b'/') || path_assigned {
            return;
        }
        let Ok(name) = CString::new(name.as_bytes()) else { return };
        // SAFETY: bash's function on its thread; what it returns is malloc'd and ours to free.
        unsafe {
            let found = search_for_command(name.as_ptr(), CMDSRCH_HASH);
            if !found.is_null() {
                libc::free(found.cast());
            }
        }
    }
}

/// A `FILE` in front of bash's trace stream that drops the lines tracing a call.
mod trace_filter {
    use super::*;

    /// What the trace of a call starts with, after `PS4`: the builtin's name, `__call`, and the
    /// first mark as bash quotes it.
    const CALL_TRACE: &[u8] = b"__posh_run __call $'\\037";

    /// The filter's stream, once made (a fork keeps it, as it keeps bash's).
    static FILTER: AtomicPtr<libc::FILE> = AtomicPtr::new(null_mut());

    /// glibc's `cookie_io_functions_t`.
    #[repr(C)]
    struct CookieFunctions {
        read: Option<unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> isize>,
        write: Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize) -> isize>,
        seek: Option<unsafe extern "C" fn(*mut c_void, *mut i64, c_int) -> c_int>,
        close: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
    }

    unsafe extern "C" {
        /// glibc's stream over functions of our own.
        fn fopencookie(cookie: *mut c_void, mode: *const c_char, functions: CookieFunctions) -> *mut libc::FILE;
    }

    struct Filter {
        /// The stream bash wrote its trace to.
        inner: *mut libc::FILE,
        /// The current line, until its newline.
        line: Vec<u8>,
    }

    /// Puts the filter in front of bash's trace stream, unless it is there already.
    pub(super) fn install() {
        // SAFETY: bash's variable and the C library's streams, on bash's only thread.
        unsafe {
            let current = xtrace_fp;
            if !current.is_null() && current == FILTER.load(Ordering::Relaxed) {
                return;
            }
            let inner = if current.is_null() { stderr } else { current };
            let cookie = Box::into_raw(Box::new(Filter { inner, line: Vec::new() }));
            let functions = CookieFunctions { read: None, write: Some(write), seek: None, close: Some(close) };
            let filter = fopencookie(cookie.cast(), c"w".as_ptr(), functions);
            if filter.is_null() {
                drop(Box::from_raw(cookie));
                return;
            }
            // One write per line: bash flushes after each.
            libc::setvbuf(filter, null_mut(), libc::_IOFBF, 1 << 16);
            FILTER.store(filter, Ordering::Relaxed);
            xtrace_fp = filter;
        }
    }

    /// Passes whole lines on, but those tracing a call.
    unsafe extern "C" fn write(cookie: *mut c_void, data: *const c_char, size: usize) -> isize {
        // SAFETY: the cookie is the filter's, and `data` holds `size` bytes.
        let (filter, data) =
            unsafe { (&mut *cookie.cast::<Filter>(), std::slice::from_raw_parts(data.cast::<u8>(), size)) };
        for &byte in data {
            filter.line.push(byte);
            if byte == b'\n' {
                filter.pass_line();
            }
        }
        size as isize
    }

    unsafe extern "C" fn close(cookie: *mut c_void) -> c_int {
        // SAFETY: the cookie is the filter's, closed once.
        let mut filter = unsafe { Box::from_raw(cookie.cast::<Filter>()) };
        filter.pass_line();
        // bash closes its trace stream only when it opened it (`BASH_XTRACEFD`), never stderr.
        // SAFETY: the C library's streams.
        unsafe {
            if filter.inner != stderr {
                libc::fclose(filter.inner);
            }
        }
        FILTER.store(null_mut(), Ordering::Relaxed);
        0
    }

    impl Filter {
        fn pass_line(&mut self) {
            let line = std::mem::take(&mut self.line);
            if line.is_empty() || line.windows(CALL_TRACE.len()).any(|w| w == CALL_TRACE) {
                return;
            }
            // SAFETY: the stream bash wrote to before the filter.
            unsafe {
                libc::fwrite(line.as_ptr().cast(), 1, line.len(), self.inner);
                libc::fflush(self.inner);
            }
        }
    }
}
