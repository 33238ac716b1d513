//! A xorshift generator for the tests that try many generated inputs: posh-core's unit tests,
//! and posh-lsp's (which include this file by path).

/// A generator from `seed` (not 0): each call gives a number below its argument.
pub fn random_below(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}
