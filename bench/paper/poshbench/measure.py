"""Runs every workload on every link under the four systems, interleaved, and checks their outputs.

The systems (the paper's section 6):
  a           bash over the networked filesystem, as mounted by default
  a_readahead the same with 4 MiB of read-ahead (the stronger baseline)
  b           posh-exec, with a posh-proxy next to each site's data
  b_warm      the same on a warm mount: its session up, the workload's directory listed just before
  c           bash run at the storage, on its local disk (the floor)

Each round runs them one after the other (interleaved, so that the machine's noise hits them
alike); a, a_readahead and b start on a cold client (a fresh mount), as a user's first run after
the mount's caches expired. Every run's stdout, stderr,
exit status, written files and workload state are fingerprinted and must equal c's (a's where c
cannot run): a difference is a failure.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import settings as settings_mod
from .workloads import Workload

SYSTEMS = ("a", "a_readahead", "b", "b_warm", "c")
DESCRIPTIONS = {
    "a": "bash over the mount (default read-ahead)",
    "a_readahead": "bash over the mount, 4 MiB read-ahead",
    "b": "posh-exec with posh-proxy next to the data, after a remount (a user's first run)",
    "b_warm": "posh-exec on a warm mount (its session up, the workload's directory listed just before)",
    "c": "bash at the storage (local disk)",
}
# The targets of issue 40 the report checks: posh never slower than bash over the mount (the
# faster of a and a_readahead), cold; the log analyses near bash at the storage, cold
# (`Workload.at_storage_within`); a stream that must cross moves at this share of the link's
# rate or of the mount's own (a_readahead's), whichever is lower.
NO_HARM = 1.0
STREAM_SHARE = 0.9
# ... and the same data over 100 proxies within this factor of its time over 10.
SPREAD_FACTOR = 2.0
# Below this a/b, posh is said to gain nothing, and the report says why.
NO_GAIN = 1.1
# Outputs are kept in full when a mismatch is reported, up to this size.
KEEP = 4096


@dataclasses.dataclass
class Options:
    scale: str
    runs: int
    timeout: float
    posh_exec: Path
    posh_proxy: Path
    work: Path
    out: Path
    # Seconds a cold run's process waits in the workload's directory before the timed run
    # (`timed`'s `settle`); 0: it enters the directory within the timed run.
    cold_wait: float = 0.0


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def generator_version(workload: Workload) -> str:
    """Changes whenever the generator's code does, so that stale inputs are made again."""
    return hashlib.sha256(inspect.getsource(workload.generate).encode()).hexdigest()[:16]


def ensure_inputs(workload: Workload, scale: str, layout: settings_mod.Layout, setting, stage: Path) -> None:
    version = f"{workload.name} {scale} {generator_version(workload)}\n"
    local = setting.storage_is_local
    places = ([layout.storage_dir] if local else
              [layout.client_dir] if workload.sites == (".",) else [Path(p) for p in layout.site_paths.values()])
    markers = [p / ".bench-inputs" for p in places]
    if all(m.is_file() and m.read_text() == version for m in markers):
        return
    log(f"generating the inputs of {workload.name} at scale {scale}")
    started = time.monotonic()
    if local:
        shutil.rmtree(layout.storage_dir, ignore_errors=True)
        layout.storage_dir.mkdir(parents=True)
        workload.generate(layout.storage_dir, scale)
    else:
        # Made on local disk, then copied through the mounts.
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        workload.generate(stage, scale)
        if workload.sites == (".",):
            shutil.rmtree(layout.client_dir, ignore_errors=True)
            shutil.copytree(stage, layout.client_dir)
        else:
            layout.client_dir.mkdir(parents=True, exist_ok=True)
            for site, path in layout.site_paths.items():
                shutil.rmtree(path, ignore_errors=True)
                shutil.copytree(stage / site, path)
        shutil.rmtree(stage)
    for m in markers:
        m.write_text(version)
    log(f"  done in {time.monotonic() - started:.1f} s")


def base_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LC_ALL": "C",
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        # The storage's files belong to the proxies' user (settings.PROXY_USER) while the bash
        # runs and resets are root's: git would refuse their repositories as another user's.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
    }
    env.update(extra)
    return env


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def outputs_of(root: Path, workload: Workload, env: dict) -> dict[str, str]:
    """Each written file's digest, by path, and the workload's state command's output."""
    found: dict[str, str] = {}
    for rel in workload.outputs:
        path = root / rel
        if path.is_dir():
            for sub in sorted(path.rglob("*")):
                if sub.is_file():
                    found[str(sub.relative_to(root))] = file_digest(sub)
        elif path.exists():
            found[rel] = file_digest(path)
        else:
            found[rel] = "(missing)"
    if workload.state:
        done = subprocess.run(["bash", "-c", workload.state], cwd=root, env=env, capture_output=True)
        found["(state)"] = digest(done.stdout + done.stderr) + f" status {done.returncode}"
    return found


def reset(root: Path, workload: Workload, env: dict) -> None:
    for rel in workload.outputs:
        path = root / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    if workload.reset:
        subprocess.run(["bash", "-c", workload.reset], cwd=root, env=env, check=True,
                       stdout=subprocess.DEVNULL)


@dataclasses.dataclass
class Run:
    seconds: float
    status: str
    stdout: str
    stderr: str
    outputs: dict[str, str]
    bytes: int | None
    cold: str | None
    kept: dict[str, str]


# Run by `timed` with `settle`: enters its working directory (the Popen's), waits for a byte on the
# descriptor it is given, then becomes the run. Isolated (`-I`): it reads nothing of the
# directory it is in, and hands the environment on unchanged.
ENTER_THEN_RUN = "import os, sys; fd = int(sys.argv[1]); os.read(fd, 1); os.close(fd); os.execvp(sys.argv[2], sys.argv[2:])"


def timed(argv: list[str], cwd: Path, env: dict, out: Path, err: Path, timeout: float, stdin: Path | None,
          settle: float = 0.0) -> tuple[float, str]:
    """Runs `argv` in `cwd`, timed from its start to its end. With `settle`, the run's process
    enters `cwd` first, untimed, and the run starts `settle` seconds later: a user's shell that is
    already in the directory (its path looked up) when the caches expire. Without it, entering
    the directory (each of its path's names looked up, through the mount) is part of the run."""
    env = {**env, "PWD": str(cwd)}  # as a shell in that directory exports it
    with open(out, "wb") as o, open(err, "wb") as e, open(stdin or os.devnull, "rb") as i:
        if settle > 0:
            go, tell = os.pipe()
            launcher = [sys.executable, "-I", "-c", ENTER_THEN_RUN, str(go), *argv]
            child = subprocess.Popen(launcher, cwd=cwd, env=env, stdin=i, stdout=o, stderr=e, start_new_session=True,
                                     pass_fds=(go,))
            os.close(go)
            try:
                time.sleep(settle)
                started = time.monotonic()
                os.write(tell, b"\n")
            except BrokenPipeError:
                started = time.monotonic()  # the launcher ended already: its status says why
            except BaseException:
                os.killpg(child.pid, signal.SIGKILL)  # Ctrl-C while it waits: not left behind
                child.wait()
                raise
            finally:
                os.close(tell)
        else:
            started = time.monotonic()
            child = subprocess.Popen(argv, cwd=cwd, env=env, stdin=i, stdout=o, stderr=e, start_new_session=True)
        # A timer kills a run that overstays; `wait(timeout=)` would poll, and round every time up
        # to its polling interval.
        expired = threading.Event()

        def kill():
            expired.set()
            os.killpg(child.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            code = child.wait()
        except BaseException:
            # Ctrl-C reaches the harness, not the run (its own session): end the run too.
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
        finally:
            timer.cancel()
        elapsed = time.monotonic() - started
        if expired.is_set():
            return elapsed, f"timeout after {timeout:.0f} s"
        return elapsed, f"exit {code}" if code >= 0 else f"signal {-code}"


def keep_text(path: Path) -> str:
    with open(path, "rb") as f:
        data = f.read(KEEP + 1)
    text = data[:KEEP].decode("utf-8", "replace")
    return text + ("\n[...]" if len(data) > KEEP else "")


class WorkloadRun:
    """One workload on one link: its proxies, its layout, and its runs."""

    def __init__(self, setting, workload: Workload, link: str, options: Options, home: Path, authorized: Path):
        self.setting = setting
        self.workload = workload
        self.link = link
        self.options = options
        self.authorized = authorized
        self.layout = setting.layout(workload, options.scale)
        self.dir = options.work / "runs" / link / workload.name
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.script = self.dir / "script.sh"
        self.script.write_text(workload.render(self.layout.site_paths))
        self.env = base_env(home, workload.env)
        self.config: Path | None = None

    def systems(self) -> list[str]:
        chosen = ["a"]
        if self.setting.tunes_readahead():
            chosen.append("a_readahead")
        chosen += ["b", "b_warm"]
        if self.layout.no_storage_run is None:
            chosen.append("c")
        return chosen

    def truth(self) -> Path:
        """Where written files are read after a run: the storage's own directory where it is
        local, the client's view otherwise."""
        if self.setting.storage_is_local:
            return self.layout.storage_dir
        return self.layout.client_dir

    def one(self, system: str, index: int) -> Run:
        tag = f"{system}-{index}"
        out, err, stats = self.dir / f"{tag}.out", self.dir / f"{tag}.err", self.dir / f"{tag}.stats"
        reset(self.truth(), self.workload, self.env)
        if system.startswith("b"):
            # What the baselines and the reset made, as root, is the proxies' user's again.
            self.setting.hand_over(self.truth())
        cold = None
        settle = 0.0
        stdin = None
        env = dict(self.env)
        if system != "c":
            self.layout.client_dir.mkdir(parents=True, exist_ok=True)
            cwd = self.layout.client_dir
            if system == "b_warm":
                cold = self.warm_up(env, tag)
            else:
                kb = settings_mod.READAHEAD_TUNED_KB if system == "a_readahead" else settings_mod.READAHEAD_DEFAULT_KB
                cold = self.setting.cold(kb, as_proxies_user=system == "b")
                # The run's process may enter the directory ahead and wait for the caches to expire.
                settle = self.options.cold_wait
            if system.startswith("b"):
                env["POSH_CONFIG"] = str(self.config)
                argv = self.setting.client([str(self.options.posh_exec), "--stats", str(stats), str(self.script)])
            else:
                argv = self.setting.client(["bash", str(self.script)])
        else:
            cwd, argv, stdin = self.setting.bash_at_storage(self.layout, self.script, self.workload.env)
        self.setting.zero_counters()
        seconds, status = timed(argv, cwd, env, out, err, self.options.timeout, stdin, settle)
        if settle:
            cold = f"{cold}; in the directory {settle:g} s before the run"
        crossed = self.setting.bytes_crossed() if system != "c" else None
        if system != "c":
            self.setting.settle(as_proxies_user=system.startswith("b"))
        outputs = outputs_of(self.truth(), self.workload, self.env)
        run = Run(seconds=seconds, status=status, stdout=file_digest(out), stderr=file_digest(err),
                  outputs=outputs, bytes=crossed, cold=cold, kept={"stdout": keep_text(out), "stderr": keep_text(err)})
        out.unlink()
        return run

    def warm_up(self, env: dict, tag: str) -> str:
        """A warm mount: its session up and the workload's directory listed through it just
        before (a user who has looked at it), with no remount since b's run. Not a whole untimed
        run of posh-exec: its proxies write behind the networked filesystem's back, and sshfs then
        failed to create the same names again after the reset (ENOENT, EINVAL; issue noted)."""
        out, err = self.dir / f"{tag}.warm-up.out", self.dir / f"{tag}.warm-up.err"
        timed(self.setting.client(["ls", "-la", str(self.layout.client_dir)]), self.layout.client_dir, env, out, err,
              self.options.timeout, None)
        out.unlink()
        err.unlink()
        return "warm: the mount's session up, the workload's directory listed just before"

    def explain(self) -> dict:
        env = {**self.env, "POSH_CONFIG": str(self.config)}
        done = subprocess.run(self.setting.client([str(self.options.posh_exec), "--explain", "--format", "json",
                                                   str(self.script)]),
                              cwd=self.layout.client_dir, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": done.stderr.strip()}
        return json.loads(done.stdout)

    def measure(self) -> dict:
        wl = self.workload
        ensure_inputs(wl, self.options.scale, self.layout, self.setting, self.options.work / "stage")
        # Each workload's proxies are new, with new host keys, on ports the system picks: one may
        # get the address an earlier workload's proxy had, whose pinned key must not refuse it.
        (Path(self.env["XDG_STATE_HOME"]) / "posh" / "known_proxies").unlink(missing_ok=True)
        proxies, self.config = self.setting.start_proxies(self.layout, self.options.posh_proxy, self.authorized,
                                                          self.dir, self.link)
        try:
            self.layout.client_dir.mkdir(parents=True, exist_ok=True)
            systems = self.systems()
            runs: dict[str, list[Run]] = {s: [] for s in systems}
            explain = None
            for index in range(self.options.runs):
                for system in systems:
                    # The plan of the run whose --stats are compared with it, with the ratios
                    # measured by the rounds before (posh plans with what earlier runs measured).
                    if system == "b" and index == self.options.runs - 1:
                        explain = self.explain()
                    run = self.one(system, index)
                    runs[system].append(run)
                    log(f"{self.link} {wl.name} {system} run {index + 1}: {run.seconds:.2f} s, {run.status}"
                        + (f", {run.bytes / 1e6:.2f} MB over the link" if run.bytes is not None else ""))
            if explain is None:
                explain = self.explain()
            stats = stats_records(self.dir / f"b-{self.options.runs - 1}.stats")
        finally:
            proxies.stop()
        return summarize(wl, self.link, self.layout, systems, runs, explain, stats)


def stats_records(path: Path) -> list[dict]:
    """The JSON lines `--stats` wrote (none when no pipeline reached the runtime)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarize(wl: Workload, link: str, layout, systems, runs: dict[str, list[Run]], explain: dict, stats: list) -> dict:
    reference = "c" if "c" in runs else "a"
    ref = runs[reference][0]
    mismatches = []
    for system in systems:
        for i, run in enumerate(runs[system]):
            diffs = []
            for part in ("status", "stdout", "stderr"):
                if getattr(run, part) != getattr(ref, part):
                    diffs.append({"part": part, "expected": shown(ref, part), "got": shown(run, part)})
            for path in sorted(set(run.outputs) | set(ref.outputs)):
                if run.outputs.get(path) != ref.outputs.get(path):
                    diffs.append({"part": path, "expected": ref.outputs.get(path, "(missing)"),
                                  "got": run.outputs.get(path, "(missing)")})
            if diffs:
                mismatches.append({"system": system, "run": i + 1, "against": reference, "differences": diffs})
    failed = [f"{s} run {i + 1}: {r.status}" for s in systems for i, r in enumerate(runs[s])
              if r.status.startswith(("timeout", "signal"))]
    result = {
        "workload": wl.name,
        "title": wl.title,
        "paper": wl.paper,
        "link": link,
        "script": wl.render(layout.site_paths),
        "systems": {},
        "check": {"identical": not mismatches and not failed, "reference": reference,
                  "mismatches": mismatches, "failed_runs": failed},
        "placement": placement(explain, stats),
        "throughput": wl.throughput,
        "at_storage_within": wl.at_storage_within,
    }
    result["plan_disagreements"] = [d for p in result["placement"] for d in p.get("disagreements", [])]
    if layout.no_storage_run is not None:
        result["c_not_run"] = layout.no_storage_run
    for system in systems:
        times = [r.seconds for r in runs[system]]
        crossed = [r.bytes for r in runs[system] if r.bytes is not None]
        result["systems"][system] = {
            "times": [round(t, 4) for t in times],
            "min": round(min(times), 4),
            "median": round(statistics.median(times), 4),
            "bytes": int(statistics.median(crossed)) if crossed else None,
            "status": runs[system][0].status,
            "cold": runs[system][0].cold,
        }
    med = {s: v["median"] for s, v in result["systems"].items()}
    ratios = {}
    for posh in ("b", "b_warm"):
        if posh not in med:
            continue
        suffix = "" if posh == "b" else " warm"
        for base in ("a", "a_readahead"):
            if base in med:
                ratios[f"{base}/b{suffix}"] = round(med[base] / med[posh], 3)
        if "c" in med:
            ratios[f"b{suffix}/c"] = round(med[posh] / med["c"], 3)
    result["ratios"] = ratios
    result["verdict"] = verdict(result)
    return result


def targets(result: dict, link: dict) -> list[dict]:
    """Issue 40's targets for one workload on one link, each with the figure that decides it."""
    found = []
    ratios, systems = result.get("ratios", {}), result.get("systems", {})
    against = [(base, ratios[f"{base}/b"]) for base in ("a", "a_readahead") if f"{base}/b" in ratios]
    if against:
        base, worst = min(against, key=lambda pair: pair[1])
        label = "a (4 MiB)" if base == "a_readahead" else "a"
        found.append({"target": f"no slower than bash over the mount, cold (a/b >= {NO_HARM:g})",
                      "figure": f"{label}/b = {worst:.2f}", "met": worst >= NO_HARM})
    within = result.get("at_storage_within")
    if within and "b/c" in ratios:
        found.append({"target": f"near bash at the storage, cold (b/c <= {within:g})",
                      "figure": f"b/c = {ratios['b/c']:.2f}", "met": ratios["b/c"] <= within})
    if result.get("throughput") and "b" in systems and systems["b"].get("bytes") and link.get("rate_mbit"):
        moved = systems["b"]["bytes"] * 8 / 1e6
        rate = moved / systems["b"]["median"]
        ceiling, what = float(link["rate_mbit"]), "the link"
        mount = systems.get("a_readahead") or systems.get("a")
        if mount and mount.get("bytes"):
            mount_rate = mount["bytes"] * 8 / 1e6 / mount["median"]
            if mount_rate < ceiling:
                ceiling, what = mount_rate, "the mount"
        found.append({"target": f"a stream at >= {STREAM_SHARE:.0%} of the link or the mount's rate",
                      "figure": f"{rate:,.0f} Mbit/s, {rate / ceiling:.0%} of {what} ({ceiling:,.0f} Mbit/s)",
                      "met": rate >= STREAM_SHARE * ceiling})
    return found


def spread_targets(results: list[dict]) -> list[dict]:
    """The scale target across two workloads: the same data on 100 proxies (spread-100) within
    SPREAD_FACTOR of its time on 10 (spread-10), cold, per link."""
    found = []
    by_key = {(r["workload"], r["link"]): r for r in results if "systems" in r}
    for (name, link), many in by_key.items():
        few = by_key.get(("spread-10", link))
        if name != "spread-100" or few is None or "b" not in many["systems"] or "b" not in few["systems"]:
            continue
        factor = many["systems"]["b"]["median"] / few["systems"]["b"]["median"]
        found.append({"title": "The same logs on 100 proxies against 10", "link": link,
                      "target": f"100 proxies within {SPREAD_FACTOR:g}x of 10 (b, cold)",
                      "figure": f"{factor:.2f}x", "met": factor <= SPREAD_FACTOR})
    return found


def shown(run: Run, part: str) -> str:
    if part == "status":
        return run.status
    return run.kept[part]


def placement(explain: dict, stats: list) -> list[dict]:
    """Per pipeline of the script: the plan `--explain` shows, and where `--stats` says its
    commands ran (summed over a loop's iterations), with the planner's reasons for the client."""
    by_line: dict[int, list] = {}
    for record in stats:
        by_line.setdefault(record["line"], []).append(record)
    pipelines = []
    for p in explain.get("pipelines", []):
        line = p["line"]
        planned = planned_commands(p)
        names = [copies[0]["program"] for copies in planned]
        records = [r for r in by_line.get(line, []) if [c["command"] for c in r["commands"]] == names]
        by_line[line] = [r for r in by_line.get(line, []) if r not in records]
        described = describe_pipeline(line, p.get("source", ""), p.get("rendered", ""), records)
        described["disagreements"] = disagreements(planned, records)
        commands = [n for n in p.get("nodes", []) if n["kind"].get("type") == "command" and n["kind"].get("argv")]
        described["unannotated"] = sorted({n["kind"]["argv"][0] for n in commands
                                           if n.get("why", {}).get("reason") == "no_annotation"})
        described["in_shell"] = sorted({n["kind"]["argv"][0] for n in commands
                                        if n.get("why", {}).get("reason") == "runs_in_shell"})
        described["not_paying"] = sorted({n["kind"]["argv"][0] for n in commands
                                          if n.get("why", {}).get("reason") == "does_not_pay"})
        described["all_at_client"] = bool(commands) and all(n["location"].get("kind") == "client" for n in commands)
        pipelines.append(described)
    for line, records in sorted(by_line.items()):
        if records:
            described = describe_pipeline(line, "", "", records)
            described["disagreements"] = [f"line {line}: the runtime ran a pipeline --explain does not plan"]
            pipelines.append(described)
    if "error" in explain:
        pipelines.append({"line": None, "explain_error": explain["error"]})
    return pipelines


def planned_commands(pipeline: dict) -> list[list[dict]]:
    """The command nodes of an --explain pipeline, per command, copies in order."""
    commands: dict[int, list[dict]] = {}
    for node in pipeline.get("nodes", []):
        kind = node["kind"]
        if kind.get("type") != "command":
            continue
        commands.setdefault(kind["command"], []).append({
            "copy": (kind.get("copy") or [0])[0],
            "program": (kind.get("argv") or ["?"])[0],
            "place": node["location"].get("mount", "client"),
            "why": node.get("why", {}).get("reason", ""),
        })
    return [sorted(commands[i], key=lambda c: c["copy"]) for i in sorted(commands)]


def disagreements(planned: list[list[dict]], records: list) -> list[str]:
    """Commands --stats says ran elsewhere than --explain placed them: one plan means none
    (tests/integration/agreement.rs checks the same on the oracle and the peer scripts). A
    command whose words only bash knows is placed when they are known, so it is left out."""
    found = []
    for record in records:
        for copies, ran in zip(planned, record["commands"]):
            places = [c["place"] for c in copies]
            where = ran["location"] if isinstance(ran["location"], list) else [ran["location"]]
            if copies[0]["why"] == "depends_on_shell" or places == where:
                continue
            found.append(f"line {record['line']}: `{ran['command']}` planned at {'+'.join(places)} "
                         f"({copies[0]['why']}), ran at {'+'.join(where)}"
                         + (f" ({ran['why']})" if "why" in ran else ""))
    return found


def describe_pipeline(line: int, source: str, rendered: str, records: list) -> dict:
    counts: dict[tuple[str, str], int] = {}
    whys: dict[str, str] = {}
    crossed = 0
    for record in records:
        for command in record["commands"]:
            where = command["location"]
            where = "+".join(where) if isinstance(where, list) else where
            key = (command["command"], where)
            counts[key] = counts.get(key, 0) + 1
            if "why" in command:
                whys[command["command"]] = command["why"]
        for proxy in record.get("proxies", {}).values():
            crossed += proxy.get("bytes_to_proxy", 0) + proxy.get("bytes_from_proxy", 0) + proxy.get("question_bytes", 0)
    ran = [{"command": c, "location": w, "times": n} for (c, w), n in counts.items()]
    return {"line": line, "source": source, "explain": rendered, "runtime_runs": len(records), "ran": ran,
            "why_client": whys, "stream_bytes": crossed}


def kept_by_bash(pipeline: dict) -> str:
    """Why a pipeline never reached the runtime, as far as --explain tells."""
    def names(key: str) -> str:
        return ", ".join(f"`{c}`" for c in pipeline[key])

    if pipeline.get("unannotated"):
        return f"posh did not hand it to the runtime (no annotation for {names('unannotated')})"
    if pipeline.get("in_shell"):
        return f"{names('in_shell')} runs inside bash"
    if pipeline.get("not_paying"):
        return f"a call of the runtime would cost more than it saves for {names('not_paying')} (does_not_pay)"
    if pipeline.get("all_at_client"):
        return "--explain keeps every command at the client, so bash runs it"
    return "posh did not hand it to the runtime (--explain gives no reason)"


def verdict(result: dict) -> str:
    ratio = result["ratios"].get("a/b")
    if ratio is None:
        return "not measured"
    if ratio >= NO_GAIN:
        return f"posh {ratio:.1f}x faster than bash over the mount"
    reasons = []
    for p in result["placement"]:
        if p.get("explain_error"):
            reasons.append(f"--explain failed: {p['explain_error']}")
            continue
        if p["runtime_runs"] == 0:
            reasons.append(f"line {p['line']} (`{p['source']}`) stayed with bash: {kept_by_bash(p)}")
            continue
        by_why: dict[str | None, list[str]] = {}
        for r in p["ran"]:
            if r["location"] == "client":
                by_why.setdefault(p["why_client"].get(r["command"]), []).append(f"`{r['command']}`")
        for why, commands in by_why.items():
            reasons.append(
                f"line {p['line']}: {', '.join(commands)} ran at the client"
                + (f" ({why})" if why else f", for which --stats gives no reason although --explain planned "
                   f"`{p['explain']}`"))
    if not reasons:
        reasons.append("every command ran at a proxy; the time went to the runtime and the link")
    return f"posh gains nothing ({ratio:.2f}x): " + "; ".join(reasons)


def machine() -> dict:
    info = {"kernel": os.uname().release, "cpus": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().split()
        info["memory_gib"] = round(int(mem[1]) / 2**20, 1)
        info["load_at_start"] = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        pass
    return info


def identity(options: Options, home: Path) -> Path:
    """The client's identity (made on first use) and an authorized-clients file naming it."""
    env = base_env(home, {})
    done = subprocess.run([str(options.posh_exec), "--print-identity"], env=env, capture_output=True, text=True,
                          check=True)
    authorized = home / "authorized-clients"
    authorized.write_text(done.stdout)
    return authorized


def run_all(setting, workloads: list[Workload], links: list[str], options: Options) -> dict:
    home = options.work / "home"
    home.mkdir(parents=True, exist_ok=True)
    authorized = identity(options, home)
    report = {"machine": machine(), "setting": setting.describe(), "scale": options.scale, "runs": options.runs,
              "systems": DESCRIPTIONS, "links": {}, "results": []}
    try:
        for link in setting.links(links):
            chosen = [w for w in workloads if setting.runs_on(link, w)]
            if not chosen:
                continue
            log(f"link {link}: bringing it up")
            report["links"][link] = setting.enter(link)
            for wl in chosen:
                try:
                    report["results"].append(WorkloadRun(setting, wl, link, options, home, authorized).measure())
                except settings_mod.SettingError as e:
                    report["results"].append({"workload": wl.name, "link": link, "error": str(e)})
                    log(f"{wl.name} on {link}: {e}")
    finally:
        setting.leave()
    report["machine"]["load_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    return report
