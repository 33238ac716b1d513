//! The command line's side of `--suggest-config` and `--check` (the work is
//! `posh_exec::setup`'s): the mount table, or the configuration and the client's state read,
//! each mount's proxy reached as a run reaches it (an embedded one started in this process),
//! the result printed and the exit status given.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use posh_core::config::{Config, ProxyAddress};
use posh_exec::remote::ssh;
use posh_exec::remote::{Identity, KnownProxies};
use posh_exec::setup::check::{self, Failure, Report, Who};
use posh_exec::setup::probe::Isolation;
use posh_exec::setup::suggest;
use posh_proxy::jobs_dir::JobsDir;
use posh_proxy::journal::Journal;

/// How long a proxy started through ssh for the check may take to end once its channel closed.
const SSH_PROXY_GRACE: Duration = Duration::from_secs(2);

/// Prints the posh.toml suggested for the mount table at `mountinfo` (the process's own by
/// default).
pub fn suggest_config(mountinfo: Option<&Path>) -> Result<u8> {
    let path = mountinfo.unwrap_or(Path::new("/proc/self/mountinfo"));
    let table = std::fs::read(path).with_context(|| format!("{}: cannot read the mount table", path.display()))?;
    let (text, mounts) = suggest::suggest(&table, path, &suggest::Limits::default(), &probes()?)?;
    print!("{text}");
    if mounts == 0 {
        eprintln!("posh-exec: no networked filesystem is mounted (in {}): nothing to suggest", path.display());
    }
    Ok(0)
}

/// Checks every mount of `config`, prints the table, and returns 0 when all are good, 1 when
/// one is not.
pub fn check(config: Config, annotations: &[PathBuf]) -> Result<u8> {
    let Some(origin) = config.origin.clone() else {
        bail!(
            "nothing to check: no posh.toml found (--config, $POSH_CONFIG, the working directory and its parents, \
             ~/.config/posh/posh.toml)"
        );
    };
    if config.mounts.is_empty() {
        bail!("nothing to check: {} declares no mount", origin.display());
    }
    let state = crate::client_state()?;
    let identity = Identity::load_or_create(&state.identity_dir, "posh-exec")?;
    let known = KnownProxies::new(&state.known_proxies);
    let embedded = config.mounts.iter().any(|m| m.proxy == ProxyAddress::Embedded);
    // An embedded proxy runs the commands the client's library annotates, as in a run.
    let library =
        Arc::new(if embedded { crate::load_library(annotations)?.0 } else { posh_core::library::Library::empty() });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let limits = check::Limits::default();
    let isolation = probes()?;
    let mut jobs: Option<Arc<JobsDir>> = None;
    let reports: Vec<Report> = runtime.block_on(async {
        let mut reports = Vec::with_capacity(config.mounts.len());
        for mount in &config.mounts {
            // A proxy started through ssh for the check, ended after it.
            let mut over_ssh = None;
            let connected = match &mount.proxy {
                ProxyAddress::Remote { .. } => {
                    check::connect_remote(&mount.proxy.to_string(), &identity, &known, &limits).await
                }
                ProxyAddress::Ssh { user, host, port } => {
                    match ssh::target_for_mount(mount, user.as_deref(), host, *port) {
                        Err(e) => Err(Failure::Ssh(e)),
                        // The check leaves nothing behind: its proxy ends with it, linger or not.
                        Ok(target) => {
                            check::connect_over_ssh(&ssh::SshTarget { linger: None, ..target }, &identity, &limits)
                                .await
                                .map(|(connection, who, started)| {
                                    over_ssh = Some(started);
                                    (connection, who)
                                })
                        }
                    }
                }
                ProxyAddress::Embedded => {
                    let started = match embedded_jobs(&mut jobs, &state.identity_dir) {
                        Ok(jobs) => {
                            let journal = Arc::new(Journal::none());
                            let start =
                                crate::runtime::session::start_embedded(mount, &identity, &library, jobs, journal);
                            tokio::time::timeout(limits.connect, start).await.unwrap_or_else(|_| {
                                Err(anyhow::anyhow!(
                                    "it did not answer within {}",
                                    posh_core::config::format_rtt(limits.connect)
                                ))
                            })
                        }
                        Err(e) => Err(e),
                    };
                    started
                        .map(|connection| {
                            let who = Who::Embedded { fingerprint: connection.fingerprint().to_string() };
                            (connection, who)
                        })
                        .map_err(|e| Failure::Embedded { why: format!("{e:#}") })
                }
            };
            let report = match connected {
                Ok((connection, who)) => {
                    let report = check::check_connected(&connection, mount, who, &limits, &isolation).await;
                    connection.close().await;
                    report
                }
                Err(failure) => Report::unreached(mount, failure),
            };
            if let Some(started) = over_ssh {
                started.shutdown(SSH_PROXY_GRACE).await;
            }
            reports.push(report);
        }
        reports
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Some(jobs) = jobs {
        jobs.remove();
    }
    print!("{}", check::render(&reports, &origin, identity.fingerprint()));
    Ok(u8::from(reports.iter().any(|r| r.failure.is_some())))
}

/// What touches a mount runs in a child process, this program again (`__probe`), so that a dead
/// mount holds that child and not posh-exec.
fn probes() -> Result<Isolation> {
    Ok(Isolation::Process(std::env::current_exe().context("cannot find posh-exec's own program")?))
}

/// Answers `posh-exec __probe ...`, a measurement asked by `--suggest-config` or `--check`.
pub fn probe_child(args: &[std::ffi::OsString]) -> u8 {
    posh_exec::setup::probe::serve(args)
}

/// The embedded proxies' jobs directory, where a run keeps it (beside the client's identity),
/// opened on first use.
fn embedded_jobs(jobs: &mut Option<Arc<JobsDir>>, identity_dir: &Path) -> Result<Arc<JobsDir>> {
    if let Some(jobs) = jobs {
        return Ok(jobs.clone());
    }
    let parent = identity_dir.parent().unwrap_or(identity_dir);
    let dir = parent.join("embedded-jobs");
    let opened = Arc::new(
        JobsDir::open(&dir)
            .with_context(|| format!("cannot make the embedded proxy's directory in {}", dir.display()))?,
    );
    *jobs = Some(opened.clone());
    Ok(opened)
}
