//! What ships for deployment: the systemd unit under `packaging/systemd/` loads
//! (`systemd-analyze verify`) and keeps its exposure low (`systemd-analyze security`), with the
//! proxy binary cargo built put in place of the installed one.

use std::path::Path;
use std::process::Command;

/// The exposure `systemd-analyze security` may give the unit at most (its scale: 0 is least
/// exposed, below 2 reads "OK"; the shipped unit scores 1.4).
const MAX_EXPOSURE: f64 = 2.0;

#[test]
fn the_systemd_unit_loads_and_scores_ok() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/systemd/posh-proxy.service");
    let text = std::fs::read_to_string(&shipped).expect("the shipped unit");
    let proxy = crate::oracle::posh_exec().with_file_name("posh-proxy");
    assert!(proxy.is_file(), "{} is not built", proxy.display());
    let dir = tempfile::tempdir().unwrap();
    let unit = dir.path().join("posh-proxy.service");
    std::fs::write(&unit, text.replace("/usr/local/bin/posh-proxy", proxy.to_str().unwrap())).unwrap();

    let verify = Command::new("systemd-analyze").arg("verify").arg(&unit).output().expect("systemd-analyze runs");
    let said = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");

    let security = Command::new("systemd-analyze").args(["security", "--offline=yes"]).arg(&unit).output().unwrap();
    let report = String::from_utf8_lossy(&security.stdout);
    let exposure: f64 = report
        .lines()
        .find_map(|line| line.split("Overall exposure level for posh-proxy.service: ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|score| score.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in: {report}"));
    assert!(exposure <= MAX_EXPOSURE, "exposure {exposure} above {MAX_EXPOSURE}:\n{report}");
}
