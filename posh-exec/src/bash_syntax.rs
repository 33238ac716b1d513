//! bash's own word on a script's syntax (`posh_cli::bash_syntax`) where posh-core asks for it
//! (`shell::parse_as_bash`, `Plan::confirm_with_bash`): a script bash rejects is never
//! rewritten (bash runs the original and reports its own error, with its own message and
//! status), and one bash runs but brush-parser does not read whole is planned statement by
//! statement.

use posh_core::shell::{BashSyntax, Script};

/// What `bash -n` says of `text`.
pub fn check(text: &str) -> BashSyntax {
    posh_cli::bash_syntax::check(text).into()
}

/// Whether bash rejects `source`, parsed as `script`, asked before it is rewritten and only then
/// (a script brush-parser could not read whole was asked about while parsing, and accepted):
/// `Plan::confirm_with_bash`'s rule.
pub fn rejects(source: &str, script: &Script) -> bool {
    Asked::start(source, script).rejects()
}

/// [`rejects`] asked ahead: bash checks the script while posh plans it (and waits for the
/// proxies' answers), and its verdict is waited for where it is needed. Dropped unasked, bash
/// is killed and reaped.
#[derive(Debug)]
pub struct Asked(Option<posh_cli::bash_syntax::Check>);

impl Asked {
    pub fn start(source: &str, script: &Script) -> Asked {
        Asked(script.left_to_bash.is_empty().then(|| posh_cli::bash_syntax::Check::start(source)))
    }

    pub fn rejects(self) -> bool {
        self.0.is_some_and(|check| BashSyntax::from(check.verdict()) != BashSyntax::Accepted)
    }
}
