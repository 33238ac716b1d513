#!/usr/bin/env python3
"""A line typed at posh's prompt (`posh-exec -i`) against the same line typed at `bash -i`: the
time from Enter to the next prompt, read on a pseudo-terminal as a person's terminal would show
it (docs/interactive.md, "Measured").

    bench/prompt-latency.py --posh target/release/posh-exec --config posh.toml --cwd /mnt/rig \\
        --line 'grep -c 7777 logs/big.log' [--rounds 5] [--netns rig-client] [--remount 'CMD'] \
        [--stats FILE] [--home DIR]

Each round, in an order that alternates: `--remount` (a fresh sshfs mount: cold client caches),
then bash -i started and the line typed twice (cold, then warm); `--remount` again, then
posh-exec -i started and the line typed twice (cold: the session's first line, after a remount;
warm: the same session's next line). Each shell runs in `--netns` (nsenter --net, so it sees
the mount), with a home of its own whose ~/.bashrc sets the prompt and Debian's
`alias grep='grep --color=auto'`. The two shells' outputs must agree; the medians are printed
as a table, every run as JSON on stderr.
"""

import argparse
import json
import os
import re
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time

PROMPT = b"__P__$ "


class Shell:
    def __init__(self, argv, env, cwd):
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self.read_until_prompt(60)

    def read_until_prompt(self, timeout):
        out = b""
        deadline = time.monotonic() + timeout
        while not out.endswith(PROMPT):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no prompt within {timeout} s; got {out[-300:]!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    raise EOFError(f"the shell ended; got {out[-300:]!r}")
                out += chunk
        return out

    def line(self, text, timeout):
        """Types `text`, then Enter; returns (seconds from Enter to the prompt, output)."""
        os.write(self.fd, text.encode())
        # Let readline echo the line before Enter, so that only Enter's work is timed.
        echoed = b""
        while not echoed.endswith(text.encode()[-8:]):
            echoed += os.read(self.fd, 65536)
        start = time.perf_counter()
        os.write(self.fd, b"\r")
        out = self.read_until_prompt(timeout)
        took = time.perf_counter() - start
        text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.replace(b"\r", b"").decode(errors="replace"))
        lines = text.split("\n")
        # What the line printed: after the echoed Enter, before the prompt.
        return took, "\n".join(line for line in lines[1:-1] if line)

    def close(self):
        os.write(self.fd, b"exit\r")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            try:
                if select.select([self.fd], [], [], 0.1)[0]:
                    os.read(self.fd, 65536)
            except OSError:
                pass
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posh", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--line", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--netns")
    parser.add_argument("--remount")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--stats", help="posh-exec's --stats file, to check where the line ran")
    parser.add_argument("--home", help="the shells' home (default: a new temporary directory)")
    args = parser.parse_args()

    home = args.home or tempfile.mkdtemp(prefix="prompt-latency-")
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write("PS1='__P__$ '\nunset HISTFILE\nalias grep='grep --color=auto'\n")
    env = {
        "HOME": home,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_DATA_HOME": os.path.join(home, ".local/share"),
        "XDG_STATE_HOME": os.path.join(home, ".local/state"),
        "POSH_CONFIG": os.path.abspath(args.config),
    }
    wrap = ["nsenter", f"--net=/run/netns/{args.netns}"] if args.netns else []
    shells = {"bash": wrap + ["bash", "-i"], "posh": wrap + [os.path.abspath(args.posh), "-i"]}
    if args.stats:
        shells["posh"] += ["--stats", os.path.abspath(args.stats)]
    times = {f"{s} {w}": [] for s in shells for w in ("cold", "warm")}
    outputs = set()
    for r in range(args.rounds):
        order = ["bash", "posh"] if r % 2 == 0 else ["posh", "bash"]
        for name in order:
            if args.remount:
                subprocess.run(args.remount, shell=True, check=True, stdout=subprocess.DEVNULL)
            shell = Shell(shells[name], env, args.cwd)
            try:
                for when in ("cold", "warm"):
                    took, out = shell.line(args.line, args.timeout)
                    times[f"{name} {when}"].append(took)
                    outputs.add(out)
                    print(json.dumps({"round": r, "shell": name, "when": when, "seconds": round(took, 4),
                                      "output": out}), file=sys.stderr, flush=True)
            finally:
                shell.close()
    if len(outputs) != 1:
        sys.exit(f"the shells printed different outputs: {outputs}")
    print(f"line: {args.line}   rounds: {args.rounds}   output: {outputs.pop()!r}")
    for key, values in times.items():
        print(f"{key:10} median {statistics.median(values) * 1000:9.1f} ms   "
              f"min {min(values) * 1000:9.1f}   max {max(values) * 1000:9.1f}")


if __name__ == "__main__":
    main()
