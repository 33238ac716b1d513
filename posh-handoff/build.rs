// The builtin reads bash's own symbols: bound when bash loads it (`-z now`), so that a bash
// without them refuses `enable -f` (and the script keeps posh-run) instead of dying at a call.
fn main() {
    println!("cargo::rustc-cdylib-link-arg=-Wl,-z,now");
}
