"""Unit tests of the harness's own logic: inputs, checks, placement, verdicts and reports.

Run by `cargo test` (tests/integration/bench.rs) as `python3 -m unittest discover bench/paper/tests`.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest
from unittest import mock
from xml.etree import ElementTree
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from poshbench import measure, report, settings, workloads  # noqa: E402
from poshbench.settings import Layout  # noqa: E402


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git/" not in str(p.relative_to(root)) + "/"}


def run(seconds=1.0, status="exit 0", stdout="s", stderr="e", outputs=None, crossed=1000):
    return measure.Run(seconds=seconds, status=status, stdout=stdout, stderr=stderr, outputs=outputs or {},
                       bytes=crossed, cold="fresh sshfs mount", kept={"stdout": "out\n", "stderr": ""})


LAYOUT = Layout(client_dir=Path("/mnt/x"), storage_dir=Path("/srv/x"), site_paths={".": "."}, mounts=[])


class Inputs(unittest.TestCase):
    def test_every_generator_is_deterministic(self):
        for w in workloads.ALL:
            with self.subTest(w.name), tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
                w.generate(Path(one), "tiny")
                w.generate(Path(two), "tiny")
                first = tree_digest(Path(one))
                self.assertTrue(first, f"{w.name} generated nothing")
                self.assertEqual(first, tree_digest(Path(two)))

    def test_git_inputs_make_the_same_commit_every_time(self):
        heads = []
        for _ in range(2):
            with tempfile.TemporaryDirectory() as d:
                workloads.GIT_WORKFLOW.generate(Path(d), "tiny")
                heads.append((Path(d) / "repo/.git/refs/tags/base").read_text())
        self.assertEqual(heads[0], heads[1])

    def test_scripts_name_every_site_and_nothing_else(self):
        names = [w.name for w in workloads.ALL]
        self.assertEqual(len(names), len(set(names)))
        for w in workloads.ALL:
            rendered = w.render({s: f"/m/{s}" for s in w.sites})
            self.assertNotRegex(rendered, r"@[a-z0-9]+@", w.name)
            for site in w.sites:
                if site != ".":
                    self.assertIn(f"/m/{site}/", rendered, w.name)


def command(index: int, argv: list, mount, why: str) -> dict:
    """A command node as `--explain --format json` prints it."""
    location = {"kind": "mount", "mount": mount} if mount else {"kind": "client"}
    return {"kind": {"type": "command", "command": index, "argv": argv, "copy": None}, "location": location,
            "why": {"reason": why}}


class Checks(unittest.TestCase):
    def summarize(self, runs, explain=None, stats=None):
        systems = list(runs)
        return measure.summarize(workloads.ONE_LARGE_LOG, "wan", LAYOUT, systems, runs, explain or {}, stats or [])

    def test_identical_runs_pass_and_ratios_use_medians(self):
        result = self.summarize({"a": [run(10), run(12), run(30)], "b": [run(1), run(2), run(9)], "c": [run(0.5)] * 3})
        self.assertTrue(result["check"]["identical"])
        self.assertEqual(result["systems"]["a"]["median"], 12)
        self.assertEqual(result["systems"]["a"]["min"], 10)
        self.assertEqual(result["ratios"], {"a/b": 6.0, "b/c": 4.0})

    def test_warm_runs_have_ratios_of_their_own(self):
        result = self.summarize({"a": [run(10)], "b": [run(2)], "b_warm": [run(1)], "c": [run(0.5)]})
        self.assertEqual(result["ratios"], {"a/b": 5.0, "b/c": 4.0, "a/b warm": 10.0, "b warm/c": 2.0})

    def test_targets_say_which_are_met(self):
        result = self.summarize({"a": [run(10)], "a_readahead": [run(3)], "b": [run(4)], "c": [run(0.5)]})
        [harm, near_storage] = measure.targets(result, {"rate_mbit": 600})
        self.assertEqual((harm["figure"], harm["met"]), ("a (4 MiB)/b = 0.75", False))
        # A log analysis is also held against bash at the storage.
        self.assertEqual((near_storage["figure"], near_storage["met"]), ("b/c = 8.00", False))
        result = self.summarize({"a": [run(10)], "b": [run(0.7)], "c": [run(0.5)]})
        self.assertEqual([t["met"] for t in measure.targets(result, {})], [True, True])
        result = self.summarize({"a": [run(10)], "b": [run(4)]})
        self.assertEqual([t["met"] for t in measure.targets(result, {})], [True], "no c, no b/c target")
        runs = {"a": [run(10)], "b": [run(4)], "c": [run(0.5)]}
        result = measure.summarize(workloads.STREAM, "wan", LAYOUT, list(runs), runs, {}, [])
        self.assertFalse(any("storage" in t["target"] for t in measure.targets(result, {})), "not a log analysis")

    def test_a_stream_is_measured_against_the_slower_of_the_link_and_the_mount(self):
        mib100 = 100_000_000
        runs = {"a": [run(4, crossed=mib100)], "a_readahead": [run(2, crossed=mib100)], "b": [run(2, crossed=mib100)]}
        result = measure.summarize(workloads.STREAM, "wan", LAYOUT, list(runs), runs, {}, [])
        # b moves 400 Mbit/s; the mount with read-ahead too; the link would allow 600.
        rate = [t for t in measure.targets(result, {"rate_mbit": 600}) if "stream" in t["target"]]
        self.assertEqual(rate[0]["figure"], "400 Mbit/s, 100% of the mount (400 Mbit/s)")
        self.assertTrue(rate[0]["met"])
        runs["b"] = [run(4, crossed=mib100)]
        result = measure.summarize(workloads.STREAM, "dc", LAYOUT, list(runs), runs, {}, [])
        rate = [t for t in measure.targets(result, {"rate_mbit": 5000}) if "stream" in t["target"]]
        self.assertEqual((rate[0]["figure"], rate[0]["met"]), ("200 Mbit/s, 50% of the mount (400 Mbit/s)", False))

    def test_a_hundred_proxies_are_measured_against_ten(self):
        def spread(workload, seconds):
            runs = {"a": [run(10)], "b": [run(seconds)]}
            return measure.summarize(workload, "wan", LAYOUT, list(runs), runs, {}, [])
        [target] = measure.spread_targets([spread(workloads.SPREAD_10, 1.0), spread(workloads.SPREAD_100, 2.5)])
        self.assertEqual((target["figure"], target["met"]), ("2.50x", False))
        self.assertEqual(measure.spread_targets([spread(workloads.SPREAD_100, 2.5)]), [], "no spread-10 to compare")

    def test_a_different_stdout_or_file_is_a_failure(self):
        result = self.summarize({"a": [run(outputs={"out.txt": "y"})], "b": [run(stdout="other", outputs={"out.txt": "x"})],
                                 "c": [run(outputs={"out.txt": "y"})]})
        self.assertFalse(result["check"]["identical"])
        [mismatch] = result["check"]["mismatches"]
        self.assertEqual(mismatch["system"], "b")
        self.assertEqual([d["part"] for d in mismatch["differences"]], ["stdout", "out.txt"])

    def test_a_timeout_is_a_failure_even_with_equal_outputs(self):
        result = self.summarize({"a": [run()], "b": [run(status="timeout after 5 s")], "c": [run()]})
        self.assertFalse(result["check"]["identical"])
        self.assertEqual(result["check"]["failed_runs"], ["b run 1: timeout after 5 s"])

    def test_a_loss_is_explained_by_the_placement(self):
        explain = {"pipelines": [
            {"line": 1, "source": "cat a | grep x > o", "rendered": "[@d]cat a | [@d]grep x > o", "nodes": [
                command(0, ["cat", "a"], "d", "cheapest"), command(1, ["grep", "x"], "d", "cheapest")]},
            {"line": 2, "source": "mkdir -p t", "rendered": "[@client]mkdir -p t", "nodes": [
                command(0, ["mkdir", "-p", "t"], None, "no_annotation")]},
            {"line": 3, "source": "cd t", "rendered": "[@client]cd t", "nodes": [
                command(0, ["cd", "t"], None, "runs_in_shell")]},
            {"line": 4, "source": "grep -c x \"$f\"", "rendered": "[@client]grep -c x \"$f\"", "nodes": [
                command(0, ["grep", "-c", "x", "s/n1.txt"], None, "does_not_pay")]},
        ]}
        stats = [{"line": 1, "commands": [
            {"command": "cat", "location": "d", "status": 0},
            {"command": "grep", "location": "client", "status": 0}],
            "proxies": {"d": {"bytes_to_proxy": 100, "bytes_from_proxy": 5000}}}]
        result = self.summarize({"a": [run(1)], "b": [run(2)], "c": [run(0.1)]}, explain, stats)
        self.assertIn("posh gains nothing (0.50x)", result["verdict"])
        self.assertIn("line 1: `grep` ran at the client, for which --stats gives no reason", result["verdict"])
        self.assertIn("line 2 (`mkdir -p t`) stayed with bash: posh did not hand it to the runtime (no annotation for `mkdir`)",
                      result["verdict"])
        self.assertIn("line 3 (`cd t`) stayed with bash: `cd` runs inside bash", result["verdict"])
        self.assertIn("line 4 (`grep -c x \"$f\"`) stayed with bash: a call of the runtime would cost more than it "
                      "saves for `grep` (does_not_pay)", result["verdict"])
        self.assertEqual(result["placement"][0]["stream_bytes"], 5100)
        self.assertEqual(result["plan_disagreements"], ["line 1: `grep` planned at d (cheapest), ran at client"])

    def test_split_copies_and_loops_are_counted(self):
        explain = {"pipelines": [{"line": 1, "source": "grep x $f", "rendered": "[@client]grep x \"$f\"", "nodes": [
            command(0, ["grep", "x", "$f"], None, "depends_on_shell")]}]}
        stats = [{"line": 1, "commands": [{"command": "grep", "location": ["d0", "d1"], "status": 0}]}] * 3
        result = self.summarize({"a": [run(5)], "b": [run(1)]}, explain, stats)
        self.assertEqual(result["placement"][0]["ran"], [{"command": "grep", "location": "d0+d1", "times": 3}])
        self.assertEqual(result["verdict"], "posh 5.0x faster than bash over the mount")
        self.assertEqual(result["plan_disagreements"], [], "placed when bash knows $f")


class Settings(unittest.TestCase):
    def test_a_terminated_run_leaves_through_its_finally(self):
        """SIGTERM (a `kill`, a CI job's timeout) ends the harness through its `finally`s, as
        Ctrl-C does, so its proxies are stopped and the rig taken down."""
        with tempfile.TemporaryDirectory() as tmp:
            left = Path(tmp) / "left"
            code = (f"import sys, time\nsys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
                    "from poshbench import cli\ncli.leave_on_signals()\n"
                    "try:\n    print('ready', flush=True)\n    time.sleep(30)\n"
                    f"finally:\n    open({str(left)!r}, 'w').write('left')\n")
            child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            self.assertEqual(child.stdout.readline().strip(), "ready")
            child.send_signal(signal.SIGTERM)
            self.assertEqual(child.wait(timeout=10), 128 + signal.SIGTERM)
            self.assertEqual(left.read_text(), "left")

    def test_the_emulated_link_says_it_needs_root(self):
        with mock.patch("os.geteuid", return_value=1000), tempfile.TemporaryDirectory() as d:
            with self.assertRaisesRegex(settings.SettingError, "needs root .* run it with sudo"):
                settings.EmulatedLink(Path(d), Path(d), Path(d), Path(d))

    def test_a_real_deployment_needs_its_mounts(self):
        with tempfile.TemporaryDirectory() as d:
            config = Path(d) / "posh.toml"
            config.write_text('[[mount]]\npath = "gone"\nproxy = "embedded"\n')
            with self.assertRaisesRegex(settings.SettingError, r"mount\[1\]\.path .*gone is not a directory"):
                settings.RealDeployment(config, None, Path(d))
            config.write_text("[client]\n")
            with self.assertRaisesRegex(settings.SettingError, "names no \\[\\[mount\\]\\]"):
                settings.RealDeployment(config, None, Path(d))


    def test_a_failed_mount_is_tried_again_and_its_log_is_quoted(self):
        """A fake rig whose remount fails as many times as told (counted in a file)."""
        with tempfile.TemporaryDirectory() as d, mock.patch("os.geteuid", return_value=0), \
                mock.patch("time.sleep"):
            rig, work = Path(d) / "rig", Path(d) / "work"
            (work / "rig-state").mkdir(parents=True)
            rig.mkdir()
            (rig / "netrig.sh").write_text(
                '#!/bin/sh\necho x >> "$NETRIG_STATE/tries"\n'
                '[ "$(wc -l < "$NETRIG_STATE/tries")" -gt "$FAILS" ] && exit 0\n'
                'echo "read: Connection reset by peer" >> "$NETRIG_STATE/sshfs.log"\n'
                'echo "netrig: error: sshfs mount failed" >&2; exit 1\n')
            (rig / "netrig.sh").chmod(0o755)
            link = settings.EmulatedLink(rig, work, Path(d), Path(d))
            tries = work / "rig-state" / "tries"
            with mock.patch.dict(link.env, {"FAILS": "1"}):
                self.assertEqual(link.cold(128), "fresh sshfs mount")
                self.assertEqual(len(tries.read_text().splitlines()), 2)
            tries.unlink()
            with mock.patch.dict(link.env, {"FAILS": "9"}):
                with self.assertRaisesRegex(settings.SettingError,
                                            "sshfs mount failed; sshfs.log ends: read: Connection reset"):
                    link.settle()
                self.assertEqual(len(tries.read_text().splitlines()), 3)


    def test_a_cold_mount_is_timed_once_it_answers(self):
        """The session wait asks the mount for a name that is not there: a mount that answers
        with anything but "no such file" stops the run, as a failed mount does."""
        with tempfile.TemporaryDirectory() as d, mock.patch("os.geteuid", return_value=0):
            rig, work, mnt = Path(d) / "rig", Path(d) / "work", Path(d) / "mnt"
            (work / "rig-state").mkdir(parents=True)
            rig.mkdir()
            (rig / "netrig.sh").write_text("#!/bin/sh\nexit 0\n")
            (rig / "netrig.sh").chmod(0o755)
            mnt.mkdir()
            link = settings.EmulatedLink(rig, work, Path(d), mnt)
            self.assertEqual(link.cold(128), "fresh sshfs mount")
            (mnt / ".poshbench-session-probe").touch()
            with self.assertRaisesRegex(settings.SettingError, "must not"):
                link.cold(128)
            (mnt / ".poshbench-session-probe").unlink()
            mnt.rmdir()
            mnt.write_text("not a directory")
            with self.assertRaisesRegex(settings.SettingError, "does not answer"):
                link.cold(128)


    def test_a_run_that_enters_its_directory_first_is_the_same_run(self):
        """With `settle`, the run's process enters the directory before it is timed and becomes
        the run when told: the same directory, `PWD`, standard input, and no descriptor of the
        harness's left open in it."""
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            (d / "in").write_text("input\n")
            (d / "sub").mkdir()
            said = []
            for settle in (0.0, 0.1):
                _, status = measure.timed(["sh", "-c", 'pwd; echo "$PWD"; cat; ls /proc/$$/fd'], d / "sub",
                                          {"PATH": os.environ["PATH"]}, d / "out", d / "err", 60, d / "in", settle)
                self.assertEqual(status, "exit 0", (d / "err").read_text())
                said.append((d / "out").read_text())
            sub = str(d / "sub")
            self.assertEqual(said, [f"{sub}\n{sub}\ninput\n0\n1\n2\n"] * 2)
            # A run that cannot start is a failed run, not the harness's crash.
            _, status = measure.timed([str(d / "missing")], d, {"PATH": os.environ["PATH"]}, d / "out", d / "err",
                                      60, None, 0.1)
            self.assertEqual(status, "exit 1")


class Reports(unittest.TestCase):
    fixture = json.loads((Path(__file__).parent / "fixture-report.json").read_text())

    def test_the_figure_is_svg_with_a_bar_per_system(self):
        svg = report.svg(self.fixture)
        self.assertEqual(ElementTree.fromstring(svg).tag, "{http://www.w3.org/2000/svg}svg")
        bars = sum(len(r["systems"]) for r in self.fixture["results"] if "systems" in r)
        # One rectangle per bar, one per legend entry and the background.
        self.assertEqual(svg.count("<rect") - len(report.ORDER) - 1, bars)

    def test_the_targets_not_met_are_counted(self):
        md = report.markdown(self.fixture)
        self.assertIn("## Targets", md)
        self.assertIn("of 4 met.", md)

    def test_a_mismatch_is_loud_in_markdown(self):
        md = report.markdown(self.fixture)
        self.assertIn("**MISMATCH**", md)
        self.assertIn("b run 2 differs from c", md)


if __name__ == "__main__":
    unittest.main()
