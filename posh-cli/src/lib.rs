//! What posh's binaries (posh-exec, posh-proxy, posh-lsp) share at their command line: the
//! version line with build information (`build.rs`), and two hidden flags that print a binary's
//! shell completions and write its man pages, both generated from its clap definition
//! (`packaging/build-deb.sh` uses them). Also what posh-exec and posh-lsp ask bash alike:
//! `bash_syntax`, bash's verdict on a script's syntax.

pub mod bash_syntax;

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Command, FromArgMatches, Parser};
use clap_mangen::roff::{Roff, bold, roman};

pub use clap_complete::Shell;

/// What `--version` prints after the program's name: the workspace's version, then the commit
/// built (12 digits, or `unknown`), the target triple and cargo's profile, as in
/// `0.1.0 (f2e0c9e1a2b3 x86_64-unknown-linux-gnu release)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("POSH_BUILD_COMMIT"),
    " ",
    env!("POSH_BUILD_TARGET"),
    " ",
    env!("POSH_BUILD_PROFILE"),
    ")"
);

/// posh's programs that have man pages, with their sections: posh-proxy is a daemon an
/// administrator runs (section 8, as sshd), the others are user commands.
const MAN_PAGES: &[(&str, &str)] = &[("posh-exec", "1"), ("posh-lsp", "1"), ("posh-proxy", "8")];

/// The hidden flags `parse` adds to a program's own.
#[derive(Args, Debug)]
struct Generate {
    /// Print the program's completion script for SHELL and exit.
    #[arg(long, value_name = "SHELL", hide = true, exclusive = true)]
    generate_completions: Option<Shell>,
    /// Write the program's man pages (its own and one per subcommand) into DIR and exit.
    #[arg(long, value_name = "DIR", hide = true, exclusive = true)]
    generate_man: Option<PathBuf>,
}

/// As clap's `Parser::parse`, with two hidden flags that do their work and exit, as `--help`
/// does: `--generate-completions SHELL` prints the program's completion script for SHELL (bash,
/// zsh, fish, elvish, powershell) and `--generate-man DIR` writes its man pages into DIR. Each
/// must be the only argument, so the program's required arguments are not asked for.
pub fn parse<P: Parser>() -> P {
    parse_from(std::env::args_os())
}

/// [`parse`] of the given command line (its first word the program's name).
pub fn parse_from<P: Parser>(args: impl IntoIterator<Item = std::ffi::OsString>) -> P {
    let mut command = Generate::augment_args(P::command());
    let mut matches = command.try_get_matches_from_mut(args).unwrap_or_else(|e| e.exit());
    let generate = Generate::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.format(&mut command).exit());
    let done = match (generate.generate_completions, generate.generate_man) {
        (Some(shell), _) => Some(completions(P::command(), shell, &mut std::io::stdout().lock())),
        (None, Some(dir)) => Some(man_pages(P::command(), &dir).map(drop)),
        (None, None) => None,
    };
    match done {
        Some(Ok(())) => std::process::exit(0),
        Some(Err(error)) => {
            eprintln!("{}: {error}", command.get_name());
            std::process::exit(2)
        }
        None => P::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.format(&mut command).exit()),
    }
}

/// Writes the completion script of `command` for `shell`.
pub fn completions(mut command: Command, shell: Shell, out: &mut dyn Write) -> std::io::Result<()> {
    let name = command.get_name().to_owned();
    // clap_complete panics on a write error (a closed pipe); render first, then write.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    out.write_all(&script)?;
    out.flush()
}

/// Writes the man pages of `command` into `dir`: its own (`posh-lsp.1`) and one per subcommand
/// (`posh-lsp-check.1`), which its page lists. Returns the files written.
pub fn man_pages(command: Command, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let root = command.get_name().to_owned();
    let section = MAN_PAGES.iter().find(|(name, _)| *name == root).map_or("1", |(_, section)| *section);
    let mut written = Vec::new();
    write_pages(&command, &root, section, dir, &mut written)?;
    Ok(written)
}

fn write_pages(
    command: &Command,
    root: &str,
    section: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    let name = command.get_display_name().unwrap_or_else(|| command.get_name());
    // No date: the same sources make the same page.
    let man = clap_mangen::Man::new(command.clone()).section(section);
    let mut rendered = Vec::new();
    man.render(&mut rendered)?;
    let rendered = String::from_utf8(rendered).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    // clap_mangen writes the empty date as no argument at all, which shifts the title line's
    // fields (the source would show as the date); it is written here with the date quoted.
    let title = format!(
        ".TH {} {section} \"\" \"posh {}\" \"{}\"",
        name.to_uppercase(),
        env!("CARGO_PKG_VERSION"),
        manual(section)
    );
    let mut page = String::with_capacity(rendered.len() + 256);
    for line in rendered.lines() {
        page.push_str(if line.starts_with(".TH ") { &title } else { line });
        page.push('\n');
    }
    page.push_str(&see_also(name, root, section).to_roff());
    let path = dir.join(man.get_filename());
    std::fs::write(&path, page).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    written.push(path);
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        write_pages(sub, root, section, dir, written)?;
    }
    Ok(())
}

/// The title of the manual a section's pages belong to.
fn manual(section: &str) -> &'static str {
    if section == "8" { "System Administration" } else { "User Commands" }
}

/// The SEE ALSO section: a subcommand's page points to its program's, a program's to the other
/// posh programs.
fn see_also(name: &str, root: &str, section: &str) -> Roff {
    let pages: Vec<(&str, &str)> = if name == root {
        MAN_PAGES.iter().copied().filter(|(other, _)| *other != root).collect()
    } else {
        vec![(root, section)]
    };
    let mut roff = Roff::default();
    roff.control("SH", ["SEE ALSO"]);
    let mut text = Vec::new();
    for (i, (page, section)) in pages.iter().enumerate() {
        let separator = if i + 1 == pages.len() { "" } else { ", " };
        text.push(bold(*page));
        text.push(roman(format!("({section}){separator}")));
    }
    roff.text(text);
    roff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program() -> Command {
        Command::new("posh-lsp")
            .version(VERSION)
            .about("A program")
            .arg(clap::Arg::new("stdio").long("stdio").action(clap::ArgAction::SetTrue).help("Speak on stdio"))
            .subcommand(
                Command::new("check")
                    .about("Check files")
                    .arg(clap::Arg::new("deny-warnings").long("deny-warnings").action(clap::ArgAction::SetTrue)),
            )
            .subcommand(Command::new("secret").hide(true))
    }

    fn title_line(page: &str) -> &str {
        let mut titles = page.lines().filter(|line| line.starts_with(".TH "));
        let title = titles.next().unwrap_or_else(|| panic!("no title line in\n{page}"));
        assert_eq!(titles.next(), None, "{page}");
        title
    }

    #[test]
    fn the_version_names_a_commit_a_target_and_a_profile() {
        let (version, rest) = VERSION.split_once(' ').expect("a space after the version");
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).expect("parenthesised");
        let words: Vec<&str> = inner.split(' ').collect();
        assert_eq!(words.len(), 3, "{VERSION}");
        assert!(
            words[0] == "unknown" || (words[0].len() >= 7 && words[0].chars().all(|c| c.is_ascii_hexdigit())),
            "{VERSION}"
        );
        assert!(words[1].split('-').count() >= 3, "a target triple: {VERSION}");
        assert!(["debug", "release"].contains(&words[2]), "{VERSION}");
    }

    #[test]
    fn a_program_and_each_visible_subcommand_get_a_page_that_lists_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let written = man_pages(program(), dir.path()).unwrap();
        let names: Vec<String> =
            written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["posh-lsp.1", "posh-lsp-check.1"]);
        let main = std::fs::read_to_string(&written[0]).unwrap();
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(title_line(&main), format!(".TH POSH-LSP 1 \"\" \"posh {version}\" \"User Commands\""));
        for expected in [
            "\\-\\-stdio",
            "posh\\-lsp\\-check(1)",
            ".SH \"SEE ALSO\"",
            "\\fBposh\\-exec\\fR(1), ",
            "\\fBposh\\-proxy\\fR(8)",
        ] {
            assert!(main.contains(expected), "missing {expected:?} in\n{main}");
        }
        assert!(!main.contains("secret") && !main.contains("posh\\-lsp\\-help"), "{main}");
        let check = std::fs::read_to_string(&written[1]).unwrap();
        assert_eq!(title_line(&check), format!(".TH POSH-LSP-CHECK 1 \"\" \"posh {version}\" \"User Commands\""));
        assert!(check.contains("\\-\\-deny\\-warnings") && check.contains("\\fBposh\\-lsp\\fR(1)"), "{check}");
    }

    #[test]
    fn a_daemon_goes_in_section_8() {
        let dir = tempfile::tempdir().unwrap();
        let written = man_pages(Command::new("posh-proxy").about("A daemon"), dir.path()).unwrap();
        assert_eq!(written, [dir.path().join("posh-proxy.8")]);
        let page = std::fs::read_to_string(&written[0]).unwrap();
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(title_line(&page), format!(".TH POSH-PROXY 8 \"\" \"posh {version}\" \"System Administration\""));
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let error = man_pages(program(), &missing).unwrap_err();
        assert!(error.to_string().contains(&missing.join("posh-lsp.1").display().to_string()), "{error}");
    }

    #[test]
    fn completions_name_the_flags_and_subcommands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            completions(program(), shell, &mut out).unwrap();
            let script = String::from_utf8(out).unwrap();
            for expected in ["stdio", "check", "deny-warnings"] {
                assert!(script.contains(expected), "{shell}: missing {expected} in\n{script}");
            }
        }
    }
}
