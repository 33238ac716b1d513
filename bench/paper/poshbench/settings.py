"""Where the workloads run: an emulated link on this machine (../shared/rig) or a real deployment.

Both answer the same questions for the runner: where a workload's files are for the client and
for the storage, how to make the client's view cold, how many bytes crossed the network, how to
run a command at the client and at the storage, and which proxies serve which directory.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import queue
import re
import shlex
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

from .workloads import Workload

# The paper's two links (section 6): a WAN and a datacenter network.
PROFILES = {"wan": {"rtt_ms": 20.0, "rate_mbit": 600}, "dc": {"rtt_ms": 0.5, "rate_mbit": 5000}}

# The stronger sshfs baseline: 4 MiB of FUSE read-ahead instead of the kernel's 128 KiB.
READAHEAD_TUNED_KB = 4096
READAHEAD_DEFAULT_KB = 128


class SettingError(Exception):
    """Something the setting needs is missing; the message says what to do."""


@dataclasses.dataclass
class Layout:
    """One workload's files as each side names them."""

    # The script's working directory at the client, and the same directory at the storage.
    client_dir: Path
    storage_dir: Path | None
    # What the script's `@site@` placeholders become.
    site_paths: dict[str, str]
    # posh.toml's mounts: (name, client path, proxy export path) per site; None: the user's config.
    mounts: list[tuple[str, Path, Path]] | None
    # Why bash cannot run at the storage for this workload (None: it can).
    no_storage_run: str | None = None


def run(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, **kw)


class Proxies:
    """posh-proxy processes started for one workload, stopped by `stop`."""

    def __init__(self):
        self.children: list[subprocess.Popen] = []
        self.addresses: dict[str, str] = {}

    def start(self, name: str, argv: list[str], log: Path) -> str:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.children.append(child)
        lines: queue.Queue = queue.Queue()

        def drain():
            with open(log, "a") as out:
                for line in child.stderr:
                    out.write(line)
                    out.flush()
                    lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=30)
            except queue.Empty:
                raise SettingError(f"posh-proxy for {name} printed no address within 30 s (log: {log})")
            if line is None:
                raise SettingError(f"posh-proxy for {name} ended at start (log: {log})")
            found = re.search(r"listening on (\S+),", line)
            if found:
                self.addresses[name] = found.group(1)
                return found.group(1)

    def stop(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.terminate()
        for child in self.children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self.children.clear()


# The user the emulated storage's proxies run as: a posh-proxy started as root refuses to serve
# without `--user` (SECURITY.md), and in a deployment the export is that user's.
PROXY_USER = "nobody"


def hand_over(path: Path, uid: int, gid: int) -> None:
    """What root owns under `path` made the proxy user's (links themselves, not followed), and
    the directories above it searchable, as an export belongs to the proxy's user in a deployment.
    The bash baselines run as root, which may still change it all."""
    def chown_if_root(p: Path) -> None:
        if p.lstat().st_uid == 0:
            os.chown(p, uid, gid, follow_symlinks=False)
    if not path.exists():
        return
    chown_if_root(path)
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                chown_if_root(Path(dirpath) / name)
    for above in path.resolve().parents:
        if above == Path("/"):
            break
        mode = above.stat().st_mode
        if not mode & 0o001:
            os.chmod(above, mode | 0o001)


class EmulatedLink:
    """Client and storage network namespaces joined by ../shared/rig's delayed, rate-limited link,
    with the storage directory mounted over sshfs at the client; proxies run in the storage
    namespace. Needs root."""

    name = "emulated"
    # The storage's directory is on this machine's disk: inputs are made, and outputs read, there.
    storage_is_local = True

    def __init__(self, rig: Path, work: Path, data: Path, mnt: Path, prefix: str = "pbench", net: str = "10.79"):
        if os.geteuid() != 0:
            raise SettingError(
                "the emulated link needs root (it makes network namespaces, sets iptables rules and "
                "mounts sshfs): run it with sudo, or measure a real deployment with --real CONFIG")
        if not (rig / "netrig.sh").is_file():
            raise SettingError(f"{rig}/netrig.sh is missing (the rig is ../shared/rig beside the project)")
        self.rig = rig / "netrig.sh"
        self.data = data
        self.mnt = mnt
        self.prefix = prefix
        self.env = {
            **os.environ,
            "NETRIG_PREFIX": prefix,
            "NETRIG_NET": net,
            "NETRIG_DATA": str(data),
            "NETRIG_MNT": str(mnt),
            "NETRIG_STATE": str(work / "rig-state"),
        }
        self.storage_ip = f"{net}.2.2"
        self.link: str | None = None

    def netrig(self, *args: str, env: dict | None = None) -> str:
        done = subprocess.run([str(self.rig), *args], env={**self.env, **(env or {})}, capture_output=True, text=True)
        if done.returncode != 0:
            raise SettingError(f"netrig.sh {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def links(self, wanted: list[str]) -> list[str]:
        unknown = [w for w in wanted if w not in PROFILES]
        if unknown:
            raise SettingError(f"unknown link(s) {unknown}: the emulated setting has {sorted(PROFILES)}")
        return wanted

    def runs_on(self, link: str, workload: Workload) -> bool:
        return link in workload.links

    def enter(self, link: str) -> dict:
        profile = PROFILES[link]
        self.data.mkdir(parents=True, exist_ok=True)
        self.mounting("up", "--rtt", str(profile["rtt_ms"]), "--rate", str(profile["rate_mbit"]))
        self.link = link
        status = self.netrig("status")
        return {**profile, "rig_status": status.strip().splitlines()}

    def leave(self) -> None:
        self.netrig("down")

    def layout(self, workload: Workload, scale: str) -> Layout:
        rel = Path(scale) / workload.name
        client, storage = self.mnt / rel, self.data / rel
        mounts = [(site_name(site), Path(os.path.normpath(client / site)), Path(os.path.normpath(storage / site)))
                  for site in workload.sites]
        return Layout(client_dir=client, storage_dir=storage, site_paths={s: s for s in workload.sites}, mounts=mounts)

    def tunes_readahead(self) -> bool:
        return True

    def client(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", f"{self.prefix}-client", *argv]

    def bash_at_storage(self, layout: Layout, script: Path, env: dict) -> tuple[Path, list[str], Path | None]:
        """c's working directory, command and standard input (the environment is the runner's)."""
        return layout.storage_dir, self.storage(["bash", str(script)]), None

    def storage(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", f"{self.prefix}-storage", *argv]

    def hand_over(self, path: Path) -> None:
        """`path` (the storage's files, before posh-exec runs on them) made the proxies' user's."""
        user = pwd.getpwnam(PROXY_USER)
        hand_over(path, user.pw_uid, user.pw_gid)

    def cold(self, readahead_kb: int, as_proxies_user: bool = False) -> str:
        self.remount(readahead_kb, as_proxies_user=as_proxies_user)
        self.wait_for_session()
        return "fresh sshfs mount"

    def wait_for_session(self) -> None:
        """Returns once the fresh mount answers. netrig's remount returns when the mount is in the
        mount table, and sshfs sets up its SSH session after that: whoever touched the mount in
        the next ~0.5 s (on the 20 ms link) waited for the session, and a timed run paid it in
        the `chdir` before its first command. A user's mount whose caches expired has its session
        up, as a real deployment's `cold` (caches dropped) has. The question is a name that is not
        there: sshfs caches no absence, so it leaves every cache as cold as the remount did."""
        probe = self.mnt / ".poshbench-session-probe"
        try:
            os.stat(probe)
        except FileNotFoundError:
            return
        except OSError as e:
            raise SettingError(f"the fresh mount {self.mnt} does not answer: {e}") from e
        raise SettingError(f"{probe} exists: it must not, for the cold mount's session to be waited for")

    def settle(self, as_proxies_user: bool = False) -> None:
        """Unmounts and mounts again, so that every write the client made has reached the storage.
        After posh's run the mount stays the proxies' user's: b warm runs on it."""
        self.remount(READAHEAD_DEFAULT_KB, as_proxies_user=as_proxies_user)

    def remount(self, readahead_kb: int, attempts: int = 3, as_proxies_user: bool = False) -> None:
        """A fresh sshfs mount, tried again when it fails (`mounting`).

        `as_proxies_user`: the mount's file operations are made as the proxies' user, as a
        deployment's are (a user's mount and proxies are one user's): the rig logs sshfs in as
        root, and a directory bash made through that mount was root's, so a job at a proxy could
        not write into it (posh's run of `mkdir -p thumbs` at the client, then the loop's
        `convert` at the proxy, on the datacenter link)."""
        env = {"NETRIG_READAHEAD_KB": str(readahead_kb)}
        # Named either way: netrig's remount keeps the last mount's options unless given others,
        # and an empty value is not one. A mount as root after b's as the proxies' user stayed
        # theirs, and on freshly made inputs bash's `> matches.csv` in a directory still root's
        # was refused (distributed-logs, system a, on the first run of a machine).
        server = "/usr/lib/openssh/sftp-server"
        env["NETRIG_SSHFS_OPTS"] = f"sftp_server={server}"
        if as_proxies_user:
            user = pwd.getpwnam(PROXY_USER)
            env["NETRIG_SSHFS_OPTS"] = (f"sftp_server=/usr/bin/setpriv --reuid={user.pw_uid} --regid={user.pw_gid} "
                                        f"--clear-groups {server}")
        self.mounting("remount", env=env, attempts=attempts)

    def mounting(self, *args: str, env: dict | None = None, attempts: int = 3) -> None:
        """`netrig.sh ARGS`, which mounts sshfs: a failed mount (a fault of the rig, not of either
        system measured; once in CI at a remount, once here at `up` right after another run's
        `down`) is tried again after a pause, each failure quoting the end of sshfs's log.
        netrig's `up` and `remount` both start over where they failed."""
        log = Path(self.env["NETRIG_STATE"]) / "sshfs.log"
        for attempt in range(1, attempts + 1):
            try:
                self.netrig(*args, env=env)
                return
            except SettingError as e:
                said = log.read_text(errors="replace").strip().splitlines()[-5:] if log.is_file() else []
                detail = f"{e}; sshfs.log ends: {' | '.join(said) or '(empty)'}"
                if attempt == attempts:
                    raise SettingError(detail) from e
                print(f"bench: mount attempt {attempt} of {attempts} failed, trying again: {detail}",
                      file=sys.stderr, flush=True)
                time.sleep(2 * attempt)

    def zero_counters(self) -> None:
        run(["ip", "netns", "exec", f"{self.prefix}-wan", "iptables", "-t", "mangle", "-Z", "FORWARD"],
            stdout=subprocess.DEVNULL)

    def bytes_crossed(self) -> int | None:
        out = subprocess.run(["ip", "netns", "exec", f"{self.prefix}-wan", "iptables", "-t", "mangle", "-L",
                              "FORWARD", "-v", "-n", "-x"], capture_output=True, text=True, check=True).stdout
        total = [int(line.split()[1]) for line in out.splitlines() if "NFQUEUE" in line]
        return sum(total) if total else None

    def start_proxies(self, layout: Layout, proxy_bin: Path, authorized: Path, work: Path, link: str) -> tuple[Proxies, Path]:
        """Starts a proxy per site; returns them and the posh.toml naming them."""
        proxies = Proxies()
        profile = PROFILES[link]
        toml = []
        try:
            for name, client_path, export in layout.mounts:
                state = work / "proxy-state" / name
                state.mkdir(parents=True, exist_ok=True)
                for path in (state, export, authorized):
                    self.hand_over(path)
                addr = proxies.start(name, self.storage([
                    str(proxy_bin), "--export", str(export), "--listen", f"{self.storage_ip}:0",
                    "--state-dir", str(state), "--authorized-clients", str(authorized),
                    "--user", PROXY_USER]), work / f"proxy-{name}.log")
                toml.append(
                    f'[[mount]]\nname = "{name}"\npath = "{client_path}"\nproxy = "{addr}"\nexport = "{export}"\n'
                    f'rtt = "{profile["rtt_ms"]}ms"\nbandwidth = "{profile["rate_mbit"]}Mbit"\n')
        except BaseException:
            proxies.stop()
            raise
        config = work / "posh.toml"
        # The client sits on the same link: without [client], posh assumes 10 ms on its side.
        client = f'[client]\nrtt = "{profile["rtt_ms"]}ms"\nbandwidth = "{profile["rate_mbit"]}Mbit"\n'
        config.write_text("\n".join([client, *toml]))
        return proxies, config

    def describe(self) -> dict:
        return {"setting": "emulated", "rig": str(self.rig), "data": str(self.data), "mount": str(self.mnt),
                "filesystem": "sshfs over ssh (aes128-gcm) through the rig's router namespace"}


def site_name(site: str) -> str:
    return "data" if site == "." else site


class RealDeployment:
    """The user's own mounts and proxies, named by a posh.toml: each workload's files live in
    `posh-bench/SCALE/WORKLOAD/` under the mounts, site i on the config's mount i. Bash at the
    storage (c) runs through `--storage-shell` (say `ssh storage1`), for workloads on one mount."""

    name = "real"
    storage_is_local = False

    def __init__(self, config: Path, storage_shell: str | None, work: Path):
        try:
            parsed = tomllib.loads(config.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SettingError(f"{config}: {e}")
        self.config = config.resolve()
        base = self.config.parent
        self.mounts = []
        for i, mount in enumerate(parsed.get("mount", [])):
            path = Path(mount["path"]) if Path(mount["path"]).is_absolute() else base / mount["path"]
            path = Path(os.path.normpath(path))
            export = Path(mount.get("export", path))
            self.mounts.append({"name": mount.get("name", path.name), "path": path, "export": export,
                                "proxy": mount["proxy"]})
            if not path.is_dir():
                raise SettingError(f"{config}: mount[{i + 1}].path {path} is not a directory here")
        if not self.mounts:
            raise SettingError(f"{config}: names no [[mount]]; the real setting measures your mounts")
        self.storage_shell = shlex.split(storage_shell) if storage_shell else None
        self.work = work
        self.root = os.geteuid() == 0
        # Each mount's read-ahead as found, put back after the tuned baseline and at the end.
        self.readahead = {}
        for mount in self.mounts:
            knob = readahead_knob(mount["path"]) if networked(mount["path"]) else None
            if knob is not None:
                self.readahead[knob] = knob.read_text()

    def links(self, wanted: list[str]) -> list[str]:
        return ["real"]

    def runs_on(self, link: str, workload: Workload) -> bool:
        if len(workload.sites) > len(self.mounts):
            print(f"bench: {workload.name} left out: it needs {len(workload.sites)} mounts and {self.config} names "
                  f"{len(self.mounts)}", file=sys.stderr, flush=True)
            return False
        return True

    def enter(self, link: str) -> dict:
        return {"config": str(self.config), "mounts": [{k: str(v) for k, v in m.items()} for m in self.mounts]}

    def leave(self) -> None:
        for knob, value in self.readahead.items():
            knob.write_text(value)

    def layout(self, workload: Workload, scale: str) -> Layout:
        rel = Path("posh-bench") / scale / workload.name
        if len(workload.sites) > len(self.mounts):
            raise SettingError(f"{workload.name} needs {len(workload.sites)} mounts; {self.config} names {len(self.mounts)}")
        first = self.mounts[0]
        if workload.sites == (".",):
            return Layout(client_dir=first["path"] / rel, storage_dir=first["export"] / rel,
                          site_paths={".": "."}, mounts=None,
                          no_storage_run=None if self.storage_shell else "no --storage-shell given")
        # Several sites: the working directory stays at the client (in the scratch directory);
        # each site on its own mount, named by its absolute path (which runs at a proxy only when
        # the mount's export equals its path).
        sites = {site: str(self.mounts[i]["path"] / rel / site) for i, site in enumerate(workload.sites)}
        return Layout(client_dir=self.work / "client" / scale / workload.name, storage_dir=None,
                      site_paths=sites, mounts=None, no_storage_run="its sites are on several hosts")

    def client(self, argv: list[str]) -> list[str]:
        return argv

    def bash_at_storage(self, layout: Layout, script: Path, env: dict) -> tuple[Path, list[str], Path | None]:
        """Through the storage shell, which gets neither our environment nor our files: the
        script goes on its standard input."""
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        remote = f"cd {shlex.quote(str(layout.storage_dir))} && LC_ALL=C {assigns} bash -s"
        return Path.cwd(), [*self.storage_shell, remote], script

    def tunes_readahead(self) -> bool:
        return len(self.readahead) == len(self.mounts)

    def cold(self, readahead_kb: int, as_proxies_user: bool = False) -> str:
        # (A deployment's mount is its user's already.)
        for knob, value in self.readahead.items():
            knob.write_text(f"{readahead_kb}\n" if readahead_kb == READAHEAD_TUNED_KB else value)
        if not self.root:
            return "warm (not root: cannot drop the client's caches)"
        subprocess.run(["sync"], check=False)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return "client caches dropped"

    def hand_over(self, path: Path) -> None:
        """Nothing: a real deployment's proxies already own their exports."""

    def settle(self, as_proxies_user: bool = False) -> None:
        subprocess.run(["sync"], check=False)

    def zero_counters(self) -> None:
        self.counter_start = interface_bytes()

    def bytes_crossed(self) -> int | None:
        return interface_bytes() - self.counter_start

    def start_proxies(self, layout, proxy_bin, authorized, work, link) -> tuple[Proxies, Path]:
        return Proxies(), self.config

    def describe(self) -> dict:
        return {"setting": "real", "config": str(self.config),
                "bytes": "all traffic of the client's network interfaces (lo excluded) during the run"}


def interface_bytes() -> int:
    total = 0
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, fields = line.split(":", 1)
        if name.strip() != "lo":
            values = fields.split()
            total += int(values[0]) + int(values[8])
    return total


def networked(path: Path) -> bool:
    """Whether `path` is on a networked filesystem (only those get the tuned read-ahead: a local
    disk's setting is left alone)."""
    kind = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True).stdout.strip()
    return kind.startswith(("fuse", "nfs", "smb", "cifs", "ceph", "9p", "afs", "lustre", "gluster"))


def readahead_knob(path: Path) -> Path | None:
    """The read-ahead setting of the filesystem holding `path` (FUSE and NFS have a bdi of their
    own), if this process may change it."""
    dev = os.stat(path).st_dev
    knob = Path(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb")
    return knob if knob.exists() and os.access(knob, os.W_OK) else None

