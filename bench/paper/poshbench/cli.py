"""The command line: `bench/paper/run [--scale S] [--runs N] [--links wan,dc] [--real CONFIG]`."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from . import measure, report, settings, workloads

ROOT = Path(__file__).resolve().parents[3]


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/paper/run",
        description="Reproduces the POSH paper's evaluation: each workload under bash over the mount (a, and a "
        "with 4 MiB read-ahead), posh-exec with proxies next to the data (b on a cold mount, b warm as a second run) "
        "and bash at the storage (c), "
        "interleaved, with the bytes that crossed the link, where posh ran each command, and a check that "
        "every output is identical. Writes report.md, report.json and figure.svg to a folder named by date "
        "and commit. Exit status 1 if any output differs or a run failed.")
    p.add_argument("--scale", choices=workloads.SCALES, default="small", help="input size (default: small)")
    p.add_argument("--runs", type=int, default=3, help="interleaved rounds (default: 3)")
    p.add_argument("--links", default="wan,dc", help="emulated links to measure: wan (20 ms, 600 Mbit/s), dc "
                   "(0.5 ms, 5 Gbit/s); each workload runs on those of its own links (default: wan,dc)")
    p.add_argument("--workloads", default=",".join(w.name for w in workloads.ALL), help="comma-separated names (default: all)")
    p.add_argument("--real", metavar="CONFIG", type=Path,
                   help="measure a real deployment: the mounts and proxies of this posh.toml (proxies already running)")
    p.add_argument("--storage-shell", metavar="CMD", help="with --real: a command that runs a shell at the storage "
                   "(say 'ssh storage1'), for c")
    p.add_argument("--bin-dir", type=Path, help="use posh-exec and posh-proxy from here instead of building them "
                   "(`cargo build --release`)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results", help="where the results folder goes")
    p.add_argument("--work", type=Path, default=Path("/var/tmp/posh-bench-work"), help="scratch directory")
    p.add_argument("--data", type=Path, default=Path("/var/tmp/posh-bench-data"),
                   help="the emulated storage's directory; generated inputs are kept here between runs")
    p.add_argument("--mnt", type=Path, default=Path("/mnt/posh-bench"), help="the emulated client's sshfs mount point")
    p.add_argument("--rig-prefix", default="pbench", help="the emulated link's namespace prefix: two runs at once need "
                   "two (default: pbench)")
    p.add_argument("--rig-net", default="10.79", help="the emulated link's first two address octets (default: 10.79)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds one run may take (default: 1800)")
    p.add_argument("--cold-wait", type=float, default=0.0, metavar="SECONDS",
                   help="for the cold runs (a, a (4 MiB), b): the run's process enters the workload's directory "
                   "after the remount, untimed, and the run starts SECONDS later; past sshfs's cache timeout (20 s) "
                   "this is a user's first run after the caches expired, the shell already in the directory "
                   "(default: 0, entering the directory is part of the run)")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--render", metavar="REPORT_JSON", type=Path, help="write report.md and figure.svg again from a report.json")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.cold_wait < 0:
        p.error("--cold-wait must be 0 or more seconds")
    if args.storage_shell and not args.real:
        p.error("--storage-shell goes with --real")
    return args


def binaries(args) -> tuple[Path, Path]:
    if args.bin_dir is None:
        measure.log("building posh-exec and posh-proxy (cargo build --release)")
        if shutil.which("cargo") is None:
            raise settings.SettingError("cargo is not on PATH (under sudo, try `sudo env PATH=\"$PATH\" bench/paper/run`), "
                                        "or pass --bin-dir with posh-exec and posh-proxy built elsewhere")
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "posh-exec", "--manifest-path",
                        str(ROOT / "Cargo.toml")], check=True)
        bin_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release"
    else:
        bin_dir = args.bin_dir
    found = bin_dir / "posh-exec", bin_dir / "posh-proxy"
    for binary in found:
        if not os.access(binary, os.X_OK):
            raise settings.SettingError(f"{binary} is missing or not executable")
    return found[0].resolve(), found[1].resolve()


def meta() -> dict:
    def git(*a):
        done = subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": git("rev-parse", "--short", "HEAD") or "unknown",
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "command": " ".join(["bench/paper/run", *sys.argv[1:]])}


def leave_on_signals() -> None:
    """SIGTERM and SIGHUP end a run as Ctrl-C does: through the `finally`s that stop its proxies
    and take the emulated link down. Their default action ended the process on the spot, and left
    the rig's namespaces, its sshfs mount and the proxies up for the next run to trip over."""
    def leave(signum, _frame) -> None:
        raise SystemExit(128 + signum)

    for ending in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(ending, leave)


def main(argv: list[str]) -> int:
    leave_on_signals()
    args = parse(argv)
    if args.list:
        for w in workloads.ALL:
            print(f"{w.name:26} {'/'.join(w.links):7} {w.title}")
        return 0
    if args.render:
        data = json.loads(args.render.read_text())
        report.write(data, args.render.parent)
        return 0
    chosen = workloads.by_name([n for n in args.workloads.split(",") if n])
    missing = sorted({t for w in chosen for t in w.tools if shutil.which(t) is None})
    if missing:
        print(f"bench: missing programs: {', '.join(missing)} (apt-get install "
              f"{' '.join({'convert': 'imagemagick'}.get(t, t) for t in missing)}), or leave their workloads out "
              f"with --workloads", file=sys.stderr)
        return 2
    try:
        args.work.mkdir(parents=True, exist_ok=True)
        if args.real:
            setting = settings.RealDeployment(args.real, args.storage_shell, args.work.resolve())
        else:
            setting = settings.EmulatedLink(ROOT.parent / "shared" / "rig", args.work, args.data, args.mnt,
                                            prefix=args.rig_prefix, net=args.rig_net)
            links = setting.links([link for link in args.links.split(",") if link])
        posh_exec, posh_proxy = binaries(args)
        options = measure.Options(scale=args.scale, runs=args.runs, timeout=args.timeout, posh_exec=posh_exec,
                                  posh_proxy=posh_proxy, work=args.work.resolve(), out=args.out,
                                  cold_wait=args.cold_wait)
        info = meta()
        data = measure.run_all(setting, chosen, [] if args.real else links, options)
    except settings.SettingError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as e:
        command = e.cmd if isinstance(e.cmd, str) else shlex.join(map(str, e.cmd))
        detail = (e.stderr or b"").decode(errors="replace").strip() if isinstance(e.stderr, bytes) else (e.stderr or "")
        print(f"bench: `{command}` failed with exit status {e.returncode}{': ' + detail if detail else ''}", file=sys.stderr)
        return 2
    data["meta"] = info
    stamp = info["date"].replace(" UTC", "Z").replace(" ", "T").replace(":", "")
    folder = args.out / f"{stamp}-{info['commit']}-{args.scale}-{setting.name}"
    report.write(data, folder)
    print(report.markdown(data))
    measure.log(f"report: {folder}/report.md, report.json, figure.svg")
    bad = [r for r in data["results"] if "error" in r or not r["check"]["identical"]]
    for r in bad:
        measure.log(f"FAILED: {r['workload']} on {r['link']}: {r.get('error') or 'outputs differ or a run failed'}")
    return 1 if bad else 0
