//! What every posh binary offers at its command line, from the binaries cargo built: `--version`
//! with the commit, target and profile; shell completions and man pages generated from the same
//! clap definitions as `--help`, so every flag `--help` lists is in them (posh-cli, and
//! `packaging/build-deb.sh`, which ships them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binaries with a clap command line, and the section of their man page.
const PROGRAMS: &[(&str, &str)] = &[("posh-exec", "1"), ("posh-proxy", "8"), ("posh-lsp", "1")];

fn binary(name: &str) -> PathBuf {
    let path = crate::oracle::posh_exec().with_file_name(name);
    assert!(path.is_file(), "{} is not built (cargo build --workspace)", path.display());
    path
}

fn run(name: &str, args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(binary(name));
    crate::isolation::isolate_in(&mut command, home.path());
    command.args(args).output().unwrap_or_else(|e| panic!("{name} runs: {e}"))
}

fn stdout_of(name: &str, args: &[&str]) -> String {
    let out = run(name, args);
    assert!(out.status.success(), "{name} {args:?}: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{name} {args:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The long flags `--help` lists (the first long flag of each option line), and the
/// subcommands, for each of which the same.
fn help_of(name: &str, subcommand: Option<&str>) -> (Vec<String>, Vec<String>) {
    let mut args: Vec<&str> = subcommand.into_iter().collect();
    args.push("--help");
    let help = stdout_of(name, &args);
    let mut flags = Vec::new();
    let mut subcommands = Vec::new();
    let mut section = "";
    for line in help.lines() {
        if !line.starts_with(' ') {
            section = line;
            continue;
        }
        let first = line.split_whitespace().next().unwrap_or("");
        if section == "Commands:" && first != "help" {
            subcommands.push(first.to_owned());
        }
        if section == "Options:"
            && let Some(flag) = line.split_whitespace().find(|w| w.starts_with("--"))
        {
            flags.push(flag.trim_end_matches(',').to_owned());
        }
    }
    assert!(!flags.is_empty(), "no options in {name}'s help:\n{help}");
    (flags, subcommands)
}

#[test]
fn version_names_the_commit_the_target_and_the_profile() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let head = Command::new("git")
        .arg("-C")
        .arg(manifest)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let commit = std::env::var("POSH_BUILD_COMMIT").ok().filter(|c| !c.is_empty()).or(head);
    let commit = commit.as_deref().unwrap_or("unknown");
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    for (name, _) in PROGRAMS {
        let line = stdout_of(name, &["--version"]);
        let build = line
            .strip_prefix(&format!("{name} {} (", env!("CARGO_PKG_VERSION")))
            .and_then(|rest| rest.strip_suffix(")\n"))
            .unwrap_or_else(|| panic!("{line:?}"));
        let [built, target, built_profile] = build.split(' ').collect::<Vec<_>>()[..] else { panic!("{line:?}") };
        assert_eq!(built, commit, "{line:?}");
        let (arch, os) = (std::env::consts::ARCH, std::env::consts::OS);
        assert!(target.starts_with(&format!("{arch}-")) && target.contains(&format!("-{os}")), "{line:?}");
        assert_eq!(built_profile, profile, "{line:?}");
        assert_eq!(stdout_of(name, &["-V"]), line);
    }
}

#[test]
fn completions_offer_every_flag_and_subcommand_of_the_help() {
    for (name, _) in PROGRAMS {
        let (flags, subcommands) = help_of(name, None);
        for shell in ["bash", "zsh", "fish"] {
            let script = stdout_of(name, &["--generate-completions", shell]);
            for flag in &flags {
                let expected = match shell {
                    "fish" => format!("-l {}", &flag[2..]),
                    _ => flag.clone(),
                };
                assert!(script.contains(&expected), "{name}'s {shell} completion lacks {expected}");
            }
            for sub in &subcommands {
                assert!(script.contains(sub.as_str()), "{name}'s {shell} completion lacks {sub}");
            }
            assert!(!script.contains("generate-completions"), "{name}: the hidden flags are offered");
        }
    }
}

/// The completion bash loads completes for real: a flag from its prefix, the values of a flag.
#[test]
fn bash_completes_posh_exec_flags_and_values() {
    let script = stdout_of("posh-exec", &["--generate-completions", "bash"]);
    let complete = |words: &str| -> String {
        let program = format!(
            "{script}\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             $(complete -p posh-exec | sed 's/.* -F \\([^ ]*\\) .*/\\1/') posh-exec \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             echo \"${{COMPREPLY[*]}}\""
        );
        let out = Command::new("bash").arg("-c").arg(program).output().expect("bash runs");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "bash said");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(complete("posh-exec --expl"), "--explain");
    assert_eq!(complete("posh-exec --explain --format ''"), "text json dot svg png");
    assert_eq!(complete("posh-exec --placement g"), "greedy");
}

#[test]
fn man_pages_document_every_flag_and_render() {
    let dir = tempfile::tempdir().unwrap();
    for (name, section) in PROGRAMS {
        stdout_of(name, &["--generate-man", dir.path().to_str().unwrap()]);
        let (flags, subcommands) = help_of(name, None);
        let mut pages = vec![(name.to_string(), flags)];
        for sub in subcommands {
            pages.push((format!("{name}-{sub}"), help_of(name, Some(&sub)).0));
        }
        for (page, flags) in pages {
            let path = dir.path().join(format!("{page}.{section}"));
            let roff = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let title = format!(".TH {} {section} \"\" \"posh {}\"", page.to_uppercase(), env!("CARGO_PKG_VERSION"));
            assert!(roff.lines().any(|l| l.starts_with(&title)), "{page}: no {title:?} in\n{roff}");
            for heading in [".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS", ".SH \"SEE ALSO\""] {
                assert!(roff.contains(heading), "{page}: no {heading}");
            }
            for flag in &flags {
                assert!(roff.contains(&flag.replace('-', "\\-")), "{page}: {flag} is not documented");
            }
            assert!(!roff.contains("generate\\-man"), "{page}: the hidden flags are documented");
            render(&path, &page);
        }
    }
    let mut written: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    written.sort();
    assert_eq!(
        written,
        ["posh-exec.1", "posh-lsp-check.1", "posh-lsp-explain.1", "posh-lsp-serve.1", "posh-lsp.1", "posh-proxy.8"]
    );
}

/// The page as man shows it, with groff's warnings on: no warning, and the name line. Without
/// man-db (CI installs it) only the roff text above is checked.
fn render(path: &Path, page: &str) {
    let Ok(out) = Command::new("man").args(["--warnings", "-l"]).arg(path).env("MANWIDTH", "80").output() else {
        assert!(std::env::var_os("CI").is_none(), "man is not installed, and CI is set: install man-db");
        eprintln!("note: man is not installed; {page} was not rendered");
        return;
    };
    assert!(out.status.success(), "man -l {}: {out:?}", path.display());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "man -l {} warned", path.display());
    // Words as man justified them, one space apart.
    let words = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains(&format!(" NAME {page} - ")), "{page}:\n{words}");
}

#[test]
fn the_generating_flags_stand_alone_and_report_errors() {
    // posh-proxy's required arguments are not asked for.
    let dir = tempfile::tempdir().unwrap();
    stdout_of("posh-proxy", &["--generate-man", dir.path().to_str().unwrap()]);
    let mixed = run("posh-exec", &["--generate-completions", "bash", "script.sh"]);
    assert_eq!(mixed.status.code(), Some(2), "{mixed:?}");
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("cannot be used with"), "{mixed:?}");
    let missing = dir.path().join("missing");
    let out = run("posh-lsp", &["--generate-man", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.starts_with("posh-lsp: ") && said.contains("missing/posh-lsp.1"), "{said}");
    assert!(!stdout_of("posh-exec", &["--help"]).contains("generate"), "the flags are hidden");
}
