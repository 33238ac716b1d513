//! The builtin's side of posh's prompt (`posh-exec -i`): bash's own interactive shell, whose
//! typed lines are planned by the session before bash runs them.
//!
//! `__prompt SOCKET STATS` (from the prompt's init file) gives the builtin the session, as
//! `__start` does for a script. `__line LAST` is bound to Enter (`bind -x`, before
//! `accept-line`): on the first line of a command it asks the session about the typed line
//! (`READLINE_LINE`), with bash's live state: its working directory, its scalar variables, the
//! names of its functions, its aliases (names and values, when bash expands them). When the session answers with the line rewritten (its
//! pipelines that may touch a mount made calls, as a script's are), the line is put in bash's
//! history as typed, with bash's own rules (`maybe_add_history`: `HISTCONTROL`, `HISTIGNORE`),
//! and bash gets the rewritten text to run in its place, without adding it to the history
//! (given with a space before it, and `ignorespace` on until the line runs its first call, or
//! the next prompt) and without
//! showing it (readline's display is left as bash left it: the typed line and a new line).
//! A line the session leaves alone is bash's, untouched.
//!
//! `__on` (run before each prompt, from `PROMPT_COMMAND`) puts back what `__line` turned off, if
//! the line ran no call. `__preview` (bound to a key) prints the session's plan of the line in
//! words below it, and leaves the line as it was.

use std::ffi::{CStr, CString, OsString, c_char, c_int, c_void};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::sync::atomic::{AtomicBool, Ordering};

use super::script::{RUN, ShellVar};

/// `alias_t` of bash's `alias.h`.
#[repr(C)]
struct Alias {
    name: *const c_char,
    value: *const c_char,
    flags: c_char,
}

/// `att_*` of bash's `variables.h`: what a variable the plan may use is not.
const ATT_ARRAY: c_int = 0x4;
const ATT_ASSOC: c_int = 0x40;
const ATT_NAMEREF: c_int = 0x800;
const ATT_INVISIBLE: c_int = 0x1000;

unsafe extern "C" {
    /// Lines bash read of the command being parsed: 0 or 1 at its first line.
    static current_command_line_count: c_int;
    /// `set -o history` (`remember_on_history` is off while a `bind -x` command runs).
    static enable_history_list: c_int;
    /// `HISTCONTROL`, as bash reads it.
    static mut history_control: c_int;
    /// `set -H`: `!` starts a history expansion.
    static history_expansion: c_int;
    /// The history entry bash makes for a line it reads, with its rules.
    fn maybe_add_history(line: *const c_char);
    static mut rl_point: c_int;
    static rl_end: c_int;
    static mut rl_redisplay_function: Option<unsafe extern "C" fn()>;
    fn rl_redraw_prompt_last_line() -> c_int;
    fn rl_crlf() -> c_int;
    fn all_shell_variables() -> *mut *mut ShellVar;
    fn all_shell_functions() -> *mut *mut ShellVar;
    fn all_aliases() -> *mut *mut Alias;
    /// `shopt expand_aliases`.
    static expand_aliases: c_int;
    fn get_string_value(name: *const c_char) -> *const c_char;
    fn bind_variable(name: *const c_char, value: *const c_char, flags: c_int) -> *mut ShellVar;
    /// `$?`.
    static last_command_exit_value: c_int;
}

/// `HC_IGNSPACE` of bash's `bashhist.h`.
const HC_IGNSPACE: c_int = 0x01;

/// What `__line` turned off for the line it rewrote: the history (which it kept itself) and
/// readline's display.
static HISTORY_OFF: AtomicBool = AtomicBool::new(false);
/// `history_control` while `HISTORY_OFF` holds.
static mut HISTORY_CONTROL: c_int = 0;
static DISPLAY_OFF: AtomicBool = AtomicBool::new(false);
/// readline's display function, while `DISPLAY_OFF` holds.
static mut DISPLAY: Option<unsafe extern "C" fn()> = None;

/// A display that draws nothing: readline's redraw of the rewritten line, and its final update
/// when the line is accepted.
unsafe extern "C" fn no_display() {}

/// `__prompt SOCKET STATS`.
pub(super) fn start(args: &[OsString]) -> c_int {
    let [socket, stats] = args else {
        eprintln!("__posh_run: __prompt SOCKET STATS (written by posh-exec, not for use by hand)");
        return 2;
    };
    super::script::set_run(socket.clone(), stats.clone())
}

/// Puts back what `__line` turned off; called by each call and before each prompt (`__on`).
pub(super) fn restore() {
    // SAFETY: bash's and readline's variables, on bash's only thread.
    unsafe {
        if HISTORY_OFF.swap(false, Ordering::Relaxed) {
            history_control = HISTORY_CONTROL;
        }
        if DISPLAY_OFF.swap(false, Ordering::Relaxed) {
            rl_redisplay_function = DISPLAY;
        }
    }
}

/// `__on`: the status is `$?` as it was.
pub(super) fn on() -> c_int {
    restore();
    // SAFETY: bash's variable, on its thread.
    unsafe { last_command_exit_value }
}

/// The typed line, when it is the first line of a command that the session may plan.
fn typed_line() -> Option<OsString> {
    // SAFETY: bash's variables, on its thread.
    let (continued, bang) = unsafe { (current_command_line_count > 1, history_expansion != 0) };
    if continued {
        return None;
    }
    let line = string_value(c"READLINE_LINE")?;
    let bytes = line.as_bytes();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // History expansion is bash's to make on the line it reads (`!!`, `^a^b`).
    let trimmed = bytes.trim_ascii_start();
    if bang && (bytes.contains(&b'!') || trimmed.starts_with(b"^")) {
        return None;
    }
    Some(line)
}

/// `__line LAST`: see the module's documentation. The status is `$?` as it was.
pub(super) fn line() -> c_int {
    // SAFETY: bash's variable, on its thread.
    let status = unsafe { last_command_exit_value };
    let (Some(run), Some(typed)) = (RUN.get(), typed_line()) else { return status };
    let mut args = vec![OsString::from(super::super::ASK_LINE), typed.clone()];
    args.extend(defined_names());
    let caller = super::super::Caller::with_env(variables());
    let rewritten = match super::super::ask(&run.socket, &caller, &args) {
        Ok(text) if !text.is_empty() => text,
        Ok(_) => return status,
        Err(e) => {
            eprintln!("\nposh-exec: the session did not answer ({e}); the line runs as bash runs it");
            return status;
        }
    };
    let mut spaced = b" ".to_vec();
    spaced.extend_from_slice(&rewritten);
    let (Ok(typed), Ok(rewritten)) = (CString::new(typed.into_vec()), CString::new(spaced)) else { return status };
    // SAFETY: bash's and readline's variables and functions, on bash's only thread, with
    // NUL-terminated strings they copy.
    unsafe {
        // The typed line goes in the history as bash would put it there; the rewritten one,
        // which bash is given with a space before it, is not kept, as `ignorespace` keeps none
        // (`bind -x` commands run with the history off, and bash puts that back after them).
        if enable_history_list != 0 {
            maybe_add_history(typed.as_ptr());
            if !HISTORY_OFF.swap(true, Ordering::Relaxed) {
                HISTORY_CONTROL = history_control;
            }
            history_control |= HC_IGNSPACE;
        }
        // bash cleared the typed line before running this; it is drawn again as bash would
        // after a `bind -x` command, with the cursor at its end, and the new line accept-line
        // would print. What readline then draws of the rewritten line is nothing.
        rl_point = rl_end;
        rl_redraw_prompt_last_line();
        rl_crlf();
        libc::fflush(std::ptr::null_mut());
        if !DISPLAY_OFF.swap(true, Ordering::Relaxed) {
            DISPLAY = rl_redisplay_function;
        }
        rl_redisplay_function = Some(no_display);
        bind_variable(c"READLINE_LINE".as_ptr(), rewritten.as_ptr(), 0);
        let end = CString::new(rewritten.as_bytes().len().to_string()).unwrap_or_default();
        bind_variable(c"READLINE_POINT".as_ptr(), end.as_ptr(), 0);
    }
    status
}

/// `__preview`: the session's plan of the line, in words, printed below it; the line stays.
pub(super) fn preview() -> c_int {
    // SAFETY: bash's variable, on its thread.
    let status = unsafe { last_command_exit_value };
    let Some(run) = RUN.get() else { return status };
    let Some(typed) = string_value(c"READLINE_LINE") else { return status };
    let mut args = vec![OsString::from(super::super::ASK_PREVIEW), typed];
    args.extend(defined_names());
    let caller = super::super::Caller::with_env(variables());
    let text = match super::super::ask(&run.socket, &caller, &args) {
        Ok(text) => String::from_utf8_lossy(&text).into_owned(),
        Err(e) => format!("the session did not answer: {e}"),
    };
    // bash cleared the line before this and draws it again after: the plan goes above it.
    eprintln!("{}", text.trim_end());
    status
}

/// A shell variable's value as bash would expand it (`None` when unset).
fn string_value(name: &CStr) -> Option<OsString> {
    // SAFETY: bash's function, on its thread; the value is bash's, copied at once.
    unsafe {
        let value = get_string_value(name.as_ptr());
        (!value.is_null()).then(|| OsString::from_vec(CStr::from_ptr(value).to_bytes().to_vec()))
    }
}

/// bash's scalar variables, set and not dynamic (`RANDOM`, `SECONDS`...), as `NAME=value`.
fn variables() -> Vec<Vec<u8>> {
    let mut pairs = Vec::new();
    // SAFETY: bash's function and the variables it lists, on bash's only thread; the list is
    // malloc'd and ours to free, its entries bash's.
    unsafe {
        let list = all_shell_variables();
        if list.is_null() {
            return pairs;
        }
        let mut at = list;
        while !(*at).is_null() {
            let var = &**at;
            let skip = ATT_ARRAY | ATT_ASSOC | ATT_NAMEREF | ATT_INVISIBLE;
            if var.attributes & skip == 0 && var.dynamic_value.is_null() && !var.value.is_null() {
                let mut pair = CStr::from_ptr(var.name).to_bytes().to_vec();
                pair.push(b'=');
                pair.extend_from_slice(CStr::from_ptr(var.value.cast::<c_char>()).to_bytes());
                pairs.push(pair);
            }
            at = at.add(1);
        }
        libc::free(list.cast::<c_void>());
    }
    pairs
}

/// The names of bash's functions (a command naming one is bash's to run), then, when bash
/// expands aliases, [`ALIASES`](super::super::ALIASES) and each alias's name and value (the
/// session expands them as bash will).
fn defined_names() -> Vec<OsString> {
    let mut names = Vec::new();
    // SAFETY: as in `variables`.
    unsafe {
        let functions = all_shell_functions();
        if !functions.is_null() {
            let mut at = functions;
            while !(*at).is_null() {
                names.push(OsString::from_vec(CStr::from_ptr((**at).name).to_bytes().to_vec()));
                at = at.add(1);
            }
            libc::free(functions.cast::<c_void>());
        }
        let aliases = if expand_aliases != 0 { all_aliases() } else { std::ptr::null_mut() };
        if !aliases.is_null() {
            names.push(OsString::from(super::super::ALIASES));
            let mut at = aliases;
            while !(*at).is_null() {
                names.push(OsString::from_vec(CStr::from_ptr((**at).name).to_bytes().to_vec()));
                names.push(OsString::from_vec(CStr::from_ptr((**at).value).to_bytes().to_vec()));
                at = at.add(1);
            }
            libc::free(aliases.cast::<c_void>());
        }
    }
    names
}
