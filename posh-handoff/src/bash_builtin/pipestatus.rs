//! bash's `PIPESTATUS` after a call: one status per command of the pipeline the call stands for,
//! as bash's own run of that pipeline would have left it.
//!
//! bash sets `PIPESTATUS` from a builtin's status as soon as the builtin returns
//! (`execute_simple_command`'s `set_pipestatus_from_exit`), which would leave the call's one
//! status. So the call sets the array itself (`set_pipestatus_array`, bash's own setter), and
//! bash's next look-up of the variable, the one that setting makes, is answered with a stand-in
//! that is no array, which bash's setter leaves alone ("do nothing if not an array variable").
//! The look-up goes through the variable's `dynamic_value` hook, which bash calls on every
//! look-up (`find_variable_internal`); the hook is set for that one look-up, and only while bash
//! is still at the call's command (`this_shell_builtin` is the builtin's).

use std::ffi::{c_char, c_int, c_void};
use std::ptr::null;

use super::script::ShellVar;

/// `att_array` of bash's `variables.h`.
const ATT_ARRAY: c_int = 0x4;

unsafe extern "C" {
    fn find_variable(name: *const c_char) -> *mut ShellVar;
    fn set_pipestatus_array(statuses: *mut c_int, count: c_int);
    /// The builtin of the simple command bash runs (or last ran).
    static this_shell_builtin: *const c_void;
}

/// What bash's setter is given in place of `PIPESTATUS`, once: a variable with no attributes.
static mut STAND_IN: ShellVar = ShellVar {
    name: c"PIPESTATUS".as_ptr(),
    value: std::ptr::null_mut(),
    exportstr: null(),
    dynamic_value: null(),
    assign_func: null(),
    attributes: 0,
    context: 0,
};

/// Sets `PIPESTATUS` to `statuses` for bash to keep after the call returns (see the module).
pub(super) fn set_after_call(statuses: &[u8]) {
    let mut statuses: Vec<c_int> = statuses.iter().map(|&s| c_int::from(s)).collect();
    let Ok(count) = c_int::try_from(statuses.len()) else { return };
    if count == 0 {
        return;
    }
    // SAFETY: bash's functions and variables, on bash's only thread; bash copies the statuses.
    unsafe {
        set_pipestatus_array(statuses.as_mut_ptr(), count);
        let var = find_variable(c"PIPESTATUS".as_ptr());
        // The array bash made, with no hook of its own (bash's `PIPESTATUS` has none).
        if var.is_null() || !(*var).dynamic_value.is_null() || (*var).attributes & ATT_ARRAY == 0 {
            return;
        }
        let hook: unsafe extern "C" fn(*mut ShellVar) -> *mut ShellVar = once;
        (*var).dynamic_value = hook as *const c_void;
    }
}

/// The hook, for one look-up: bash's setting of `PIPESTATUS` from the call's status gets the
/// stand-in, if bash is still at the call's command.
unsafe extern "C" fn once(var: *mut ShellVar) -> *mut ShellVar {
    // SAFETY: bash calls this with the variable whose hook it is, on its only thread.
    unsafe {
        (*var).dynamic_value = null();
        let ours: unsafe extern "C" fn(*const super::WordList) -> c_int = super::run;
        if this_shell_builtin == ours as *const c_void { &raw mut STAND_IN } else { var }
    }
}
