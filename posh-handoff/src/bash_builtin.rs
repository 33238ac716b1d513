//! `__posh_run`, a bash loadable builtin (`enable -f libposh_handoff.so __posh_run`): the
//! hand-over of `posh-run __run`, made inside bash. A `posh-run` process costs each pipeline a
//! fork of bash and an exec (about 0.9 ms of the 1.8 ms a handed-over pipeline adds on
//! loopback); the builtin costs a connect and a few system calls.
//!
//! What it hands over is what the process would have had: bash's descriptors 0-2 as bash set
//! them up for the call (its redirections applied), bash's working directory, and the
//! environment bash builds for a command (`maybe_make_export_env`, the call's temporary
//! assignments included). It reads bash's own state through symbols bash exports for its
//! loadable builtins; where they are missing, `enable -f` fails and the rewritten script keeps
//! `posh-run` (see `posh_core::rewrite::Prologue::builtin`).
//!
//! Signals: bash catches SIGINT and a trapped signal's handler only notes it, so the wait for
//! the runtime's answer is cut short (EINTR) and goes on unless SIGINT (or a signal that ends
//! the shell) came: then the builtin closes its stream, which ends the pipeline's remote jobs as
//! a `posh-run` killed by the same Ctrl-C does, and returns 130; bash acts on the signal as it
//! acts on a command killed by it (runs the trap, or ends). A subshell that runs only the
//! builtin (an element of a pipeline bash runs) would exit with that status before it checks
//! for signals, where the program the call stands for would have been killed by SIGINT; bash
//! waiting for the pipeline tells "a child was killed by SIGINT" (end the script) from "a child
//! caught it" (go on) by the last child it reaps. So in a subshell the builtin has bash's reaction
//! to a signal that ends the shell (`termsig_handler`) at once.

#![allow(unsafe_code)] // bash's ABI: the builtin's descriptor, its word list, its exported state

use std::ffi::{CStr, OsString, c_char, c_int};
use std::os::unix::ffi::OsStringExt as _;
use std::ptr::null;

use super::{Caller, SOCKET_VAR};

mod job;
mod pipestatus;
mod prompt;
mod script;

/// `WORD_DESC` of bash's `command.h`.
#[repr(C)]
struct WordDesc {
    word: *const c_char,
    flags: c_int,
}

/// `WORD_LIST` of bash's `command.h`.
#[repr(C)]
struct WordList {
    next: *const WordList,
    word: *const WordDesc,
}

/// `struct builtin` of bash's `builtins.h`.
#[derive(Debug)]
#[repr(C)]
pub struct Builtin {
    name: *const c_char,
    function: unsafe extern "C" fn(*const WordList) -> c_int,
    flags: c_int,
    long_doc: *const *const c_char,
    short_doc: *const c_char,
    handle: *const c_char,
}

/// `BUILTIN_ENABLED` of `builtins.h`.
const BUILTIN_ENABLED: c_int = 0x01;
const SIGINT: usize = 2;

unsafe extern "C" {
    /// Builds `export_env` from bash's variables and the command's temporary assignments.
    fn maybe_make_export_env();
    static export_env: *const *const c_char;
    /// Set by bash's SIGINT handler when SIGINT is not trapped.
    static interrupt_state: c_int;
    /// Per signal, how many times a trapped signal came and its trap has yet to run.
    static pending_traps: [c_int; 65];
    /// A signal that ends the shell came (bash acts on it when the builtin returns).
    static terminating_signal: c_int;
    /// `$$`: the script's shell, which a subshell does not change.
    static dollar_dollar_pid: c_int;
    /// Runs the EXIT trap and kills the shell with `signal` (bash's `CHECK_TERMSIG`).
    fn termsig_handler(signal: c_int);
}

/// `help __posh_run`.
struct Doc([*const c_char; 3]);
// SAFETY: pointers to static C strings, never written.
unsafe impl Sync for Doc {}
static LONG_DOC: Doc = Doc([
    c"Hand a pipeline of a script posh-exec rewrote to the runtime of its run.".as_ptr(),
    c"Written by posh-exec; not for use by hand.".as_ptr(),
    null(),
]);

/// What `enable -f` looks up (`NAME_struct`). Mutable: bash writes its flags and handle.
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static mut __posh_run_struct: Builtin = Builtin {
    name: c"__posh_run".as_ptr(),
    function: run,
    flags: BUILTIN_ENABLED,
    long_doc: LONG_DOC.0.as_ptr(),
    short_doc: c"__posh_run __run ARGS".as_ptr(),
    handle: null(),
};

unsafe extern "C" fn run(list: *const WordList) -> c_int {
    // SAFETY: bash hands a NULL-terminated list of NUL-terminated words.
    let args = unsafe { words(list) };
    // SAFETY: bash's own variables, read on bash's only thread.
    let env = unsafe { exported_environment() };
    // Nothing may unwind into bash.
    let status = std::panic::catch_unwind(|| hand_over(args, env)).unwrap_or(1);
    end_subshell_as_bash_would();
    status
}

fn hand_over(args: Vec<OsString>, env: Vec<Vec<u8>>) -> c_int {
    match args.first().and_then(|first| first.to_str()) {
        Some("__start") => return script::start(&args[1..]),
        Some("__call") => return script::call(&args[1..], env),
        Some("__prompt") => return prompt::start(&args[1..]),
        Some("__line") => return prompt::line(),
        Some("__preview") => return prompt::preview(),
        Some("__on") => return prompt::on(),
        _ => {}
    }
    let Some(args) = args.get(1..).filter(|_| args[0] == "__run") else {
        eprintln!("__posh_run: __run ARGS (written by posh-exec, not for use by hand)");
        return 2;
    };
    let prefix = format!("{SOCKET_VAR}=");
    let socket = env.iter().find_map(|pair| pair.strip_prefix(prefix.as_bytes())).map(|s| OsString::from_vec(s.into()));
    let Some(socket) = socket.filter(|s| !s.is_empty()) else {
        eprintln!("__posh_run: no runtime to hand the pipeline to ({SOCKET_VAR} is not set)");
        return 1;
    };
    hand_over_to(&socket, args, env)
}

/// Hands the call's words `args` (from `__run`'s on) to the runtime at `socket`.
/// `PIPESTATUS` is left as bash's run of the pipeline would leave it, when the runtime gave each
/// command's status.
fn hand_over_to(socket: &std::ffi::OsStr, args: &[OsString], env: Vec<Vec<u8>>) -> c_int {
    let (answer, statuses) = super::hand_over_with_statuses(socket, &Caller::with_env(env), args, interrupted);
    if let super::Answer::Status(_) = answer {
        pipestatus::set_after_call(&statuses);
    }
    answer.status().into()
}

/// What a subshell that is about to exit does with a signal that ends the shell: bash's own
/// reaction, which it has at its next check of signals, and a subshell that runs only the builtin
/// exits first. Never returns when a signal came: `termsig_handler` runs the subshell's EXIT trap
/// and kills the process with the signal.
fn end_subshell_as_bash_would() {
    // SAFETY: bash's own variables and function, on bash's only thread; no Rust frame with
    // anything to drop is left between bash and this call.
    unsafe {
        // The signal first: the pid is a system call, on every call's way back.
        if terminating_signal != 0 && rustix::process::getpid().as_raw_nonzero().get() != dollar_dollar_pid {
            termsig_handler(terminating_signal);
        }
    }
}

/// Whether the signal that cut the wait short was SIGINT or one that ends the shell.
fn interrupted() -> bool {
    // SAFETY: bash's own variables, written by its signal handlers on this thread.
    unsafe { interrupt_state != 0 || pending_traps[SIGINT] != 0 || terminating_signal != 0 }
}

/// # Safety
/// `list` is a bash word list.
unsafe fn words(mut list: *const WordList) -> Vec<OsString> {
    let mut words = Vec::new();
    while !list.is_null() {
        // SAFETY: per the caller.
        let word = unsafe { CStr::from_ptr((*(*list).word).word) };
        words.push(OsString::from_vec(word.to_bytes().to_vec()));
        list = unsafe { (*list).next };
    }
    words
}

/// The environment bash would give a command run now.
///
/// # Safety
/// Called by bash, on its thread.
unsafe fn exported_environment() -> Vec<Vec<u8>> {
    unsafe {
        maybe_make_export_env();
        let mut pairs = Vec::new();
        let mut at = export_env;
        while !at.is_null() && !(*at).is_null() {
            pairs.push(CStr::from_ptr(*at).to_bytes().to_vec());
            at = at.add(1);
        }
        pairs
    }
}
