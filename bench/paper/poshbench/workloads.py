"""The workloads of the POSH paper's evaluation (USENIX ATC 2020, section 6), as posh runs them.

Each workload is a script, the directories ("sites") it reads on networked storage, a
deterministic input generator with three scales, the files it writes (checked identical across
bash over the mount, posh-exec and bash at the storage), and how to put those back before a run.

A site is a directory that posh sees as one mount served by its own proxy. A workload whose only
site is "." is served whole by one proxy (the script's working directory is on the mount); the
others keep their working directory outside every mount, which is where their output goes.
Scripts name sites as `@site@` placeholders: the setting fills in the paths its layout uses.
"""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
from pathlib import Path
from typing import Callable

SCALES = ("tiny", "small", "full")

# Commit dates and identity for the git workload, so that every system makes the same commit.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench Author",
    "GIT_AUTHOR_EMAIL": "author@bench.invalid",
    "GIT_AUTHOR_DATE": "2020-07-15T12:00:00Z",
    "GIT_COMMITTER_NAME": "Bench Committer",
    "GIT_COMMITTER_EMAIL": "committer@bench.invalid",
    "GIT_COMMITTER_DATE": "2020-07-15T12:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    title: str
    # What the paper measured that this models.
    paper: str
    # The script, with an `@site@` placeholder for each site's path.
    script: str
    # Writes the inputs under a directory (the workload's directory at the storage) at a scale.
    generate: Callable[[Path, str], None]
    sites: tuple[str, ...] = (".",)
    # The emulated links it runs on ("wan", "dc").
    links: tuple[str, ...] = ("wan", "dc")
    # Programs it needs besides coreutils and bash.
    tools: tuple[str, ...] = ()
    # Paths (relative to the workload's directory) the script writes, removed before each run.
    outputs: tuple[str, ...] = ()
    # Shell commands (run in the workload's directory at the storage) that put the inputs back
    # as the generator left them, before each run.
    reset: str = ""
    # Shell commands whose output stands for the state the script leaves, beside its outputs.
    state: str = ""
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    # Whether it measures a stream's rate (its report checks the rate against the link's).
    throughput: bool = False
    # Issue 40's target for the log analyses: posh after a remount within this factor of bash
    # at the storage (b/c); None where the report checks no such target.
    at_storage_within: float | None = None

    def render(self, site_paths: dict[str, str]) -> str:
        text = self.script
        for site, path in site_paths.items():
            text = text.replace(f"@{site}@", path)
        return text


def pick(scale: str, tiny, small, full):
    return {"tiny": tiny, "small": small, "full": full}[scale]


def write_lines(path: Path, lines) -> None:
    with open(path, "w", encoding="ascii", newline="\n") as out:
        out.writelines(lines)


# --- ray-tracing logs ---------------------------------------------------------------------------

def gen_ray_logs(root: Path, scale: str) -> None:
    files, lines = pick(scale, (20, 100), (200, 1000), (2000, 1000))
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for worker in range(files):
        rng = random.Random(worker)
        out = []
        for n in range(lines):
            ms = rng.randrange(1, 90_000) / 1000
            level = "SLOW" if rng.random() < 0.002 else "INFO"
            out.append(
                f"2020-07-15T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.{rng.randrange(1000):03d} "
                f"worker-{worker:04d} {level} ray {rng.randrange(10**9):09d} "
                f"pixel {rng.randrange(1920)},{rng.randrange(1080)} depth {rng.randrange(1, 9)} "
                f"bounces {rng.randrange(0, 33)} time {ms:.3f}ms\n"
            )
        write_lines(logs / f"worker-{worker:04d}.log", out)


RAY_TRACING = Workload(
    name="ray-tracing-logs",
    title="Ray-tracing log analysis",
    paper="log analysis of a distributed ray tracer's worker logs (thousands of files)",
    script="""\
cat logs/*.log | grep SLOW | head -n 100000 | cut -d ' ' -f 2,5,13 > slow-rays.txt
sed -n 's/^worker-\\([0-9]*\\) \\([0-9]*\\) \\([0-9.]*\\)ms$/\\3 \\1 \\2/p' slow-rays.txt | sort -rn | head -n 5
""",
    generate=gen_ray_logs,
    outputs=("slow-rays.txt",),
    at_storage_within=1.5,
)


# --- one large log ------------------------------------------------------------------------------

def gen_big_log(root: Path, scale: str) -> None:
    lines = pick(scale, 10_000, 310_000, 3_100_000)
    rng = random.Random(42)
    levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN"]
    paths = ["/", "/index.html", "/api/v1/items", "/login", "/static/app.js", "/search?q=posh"]
    with open(root / "big.log", "w", encoding="ascii", newline="\n") as out:
        for n in range(lines):
            event = "rare-event" if n % 9973 == 17 else rng.choice(levels)
            out.write(
                f"2020-07-15 {n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d} 10.0.{rng.randrange(256)}.{rng.randrange(256)} "
                f"{event} GET {rng.choice(paths)} {rng.choice((200, 200, 200, 304, 404, 500))} {rng.randrange(100, 90000)}B\n"
            )


ONE_LARGE_LOG = Workload(
    name="one-large-log",
    title="One large log, a rare pattern",
    paper="grep for a rare pattern in one large log",
    script="cat big.log | grep rare-event | wc -l\n",
    generate=gen_big_log,
    at_storage_within=1.5,
)


# --- distributed logs over five proxies -----------------------------------------------------------

DIST_SITES = ("d0", "d1", "d2", "d3", "d4")


def gen_distributed(root: Path, scale: str) -> None:
    files, lines = pick(scale, (2, 500), (10, 5000), (20, 10_000))
    for s, site in enumerate(DIST_SITES):
        d = root / site
        d.mkdir(parents=True, exist_ok=True)
        for f in range(files):
            rng = random.Random(s * 1000 + f)
            out = ["time,src,dst,port,bytes\n"]
            for n in range(lines):
                src = "10.0.3.7" if rng.random() < 0.001 else f"10.{rng.randrange(4)}.{rng.randrange(256)}.{rng.randrange(256)}"
                out.append(
                    f"{1594814400 + n},{src},192.168.{rng.randrange(256)}.{rng.randrange(256)},"
                    f"{rng.choice((22, 80, 443, 8080, 5432))},{rng.randrange(40, 150_000)}\n"
                )
            write_lines(d / f"flows-{f:03d}.csv", out)


DIST_SCRIPT = "cat @d0@/*.csv @d1@/*.csv @d2@/*.csv @d3@/*.csv @d4@/*.csv | grep 10.0.3.7"

DISTRIBUTED_TO_FILE = Workload(
    name="distributed-logs",
    title="Logs on 5 proxies, result to a file",
    paper="distributed log analysis over 5 storage servers",
    sites=DIST_SITES,
    script=DIST_SCRIPT + " > matches.csv\n",
    generate=gen_distributed,
    outputs=("matches.csv",),
)

DISTRIBUTED_TO_STDOUT = dataclasses.replace(
    DISTRIBUTED_TO_FILE,
    name="distributed-logs-stdout",
    title="Logs on 5 proxies, result to stdout",
    paper="the same, printed (not in the paper: tells the redirection's cost apart)",
    script=DIST_SCRIPT + "\n",
    outputs=(),
)


# --- thumbnails -----------------------------------------------------------------------------------

def gen_photos(root: Path, scale: str) -> None:
    count, size = pick(scale, (3, "640x480"), (20, "1600x1200"), (100, "1600x1200"))
    photos = root / "photos"
    photos.mkdir(parents=True, exist_ok=True)
    base = root / ".plasma.miff"
    subprocess.run(["convert", "-size", size, "-seed", "7", "plasma:fractal", str(base)], check=True)
    for i in range(count):
        subprocess.run(
            ["convert", str(base), "-roll", f"+{i * 37}+{i * 53}", "-modulate", f"100,{80 + i % 40},{90 + i % 20}",
             "-quality", "90", str(photos / f"img-{i:04d}.jpg")],
            check=True,
        )
    base.unlink()


THUMBNAILS = Workload(
    name="thumbnails",
    title="Thumbnails with ImageMagick, written back",
    paper="image thumbnail generation (ImageMagick) over a photo directory",
    tools=("convert",),
    script="""\
mkdir -p thumbs
for f in photos/*.jpg; do convert "$f" -resize 160x120 -strip "thumbs/${f#photos/}"; done
""",
    generate=gen_photos,
    outputs=("thumbs",),
)


# --- port scan ------------------------------------------------------------------------------------

def gen_port_scans(root: Path, scale: str) -> None:
    files, hosts = pick(scale, (5, 100), (40, 1000), (200, 2500))
    scans = root / "scans"
    scans.mkdir(parents=True, exist_ok=True)
    ports = [(22, "ssh"), (80, "http"), (443, "https"), (3306, "mysql"), (5432, "postgresql"),
             (6379, "redis"), (8080, "http-proxy"), (25, "smtp"), (53, "domain"), (3389, "ms-wbt-server")]
    for f in range(files):
        rng = random.Random(7000 + f)
        out = ["[\n"]
        for h in range(hosts):
            open_ports = rng.sample(ports, rng.randrange(1, 4))
            entries = ", ".join(
                f'{{"port": {p}, "proto": "tcp", "status": "open", "reason": "syn-ack", "ttl": {rng.choice((52, 54, 64, 128))},'
                f' "service": {{"name": "{name}", "banner": ""}}}}'
                for p, name in open_ports
            )
            sep = "," if h + 1 < hosts else ""
            out.append(
                f'{{ "ip": "172.{16 + f % 16}.{h // 256 % 256}.{h % 256}", "timestamp": "{1594814400 + f * 3600 + h}",'
                f' "ports": [{entries}] }}{sep}\n'
            )
        out.append("]\n")
        write_lines(scans / f"masscan-{f:04d}.json", out)


PORT_SCAN = Workload(
    name="port-scan",
    title="Port-scan JSON through jq, awk and pr",
    paper="analysis of port-scan results (masscan JSON) with jq",
    tools=("jq",),
    script="""\
cat scans/*.json | jq -r '.[] | .ip as $ip | .ports[] | "\\($ip) \\(.port)/\\(.service.name)"' | awk '{ print $2 }' | sort | uniq -c | sort -rn | pr -2 -t -w 60
""",
    generate=gen_port_scans,
)


# --- git ------------------------------------------------------------------------------------------

def gen_git_repo(root: Path, scale: str) -> None:
    files = pick(scale, 200, 2000, 20_000)
    repo = root / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        d = repo / f"src{i // 100:03d}"
        if i % 100 == 0:
            d.mkdir(exist_ok=True)
        (d / f"mod{i:05d}.c").write_text(f"/* module {i} */\nint f{i}(int x) {{ return x * {i % 97} + {i}; }}\n")
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "base"], ["tag", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)


GIT_WORKFLOW = Workload(
    name="git-workflow",
    title="git status, add and commit",
    paper="git status/add/commit on a large repository (datacenter)",
    links=("dc",),
    tools=("git",),
    script="""\
cd repo
git status --short | wc -l
git add .
git commit -q -m 'bench: update modules'
git log --oneline | head -n 2
""",
    generate=gen_git_repo,
    # Back to the base commit, then the same edits before every run: every 50th file changed and
    # ten new files.
    reset="""\
cd repo && git reset -q --hard base && git clean -qfdx &&
for f in $(git ls-files | awk 'NR % 50 == 1'); do echo '/* edited */' >> "$f"; done &&
mkdir -p new && for i in 0 1 2 3 4 5 6 7 8 9; do echo "int g$i;" > "new/g$i.c"; done
""",
    state="cd repo && git rev-parse HEAD && git status --porcelain && git ls-files -s | sha256sum",
    env=GIT_ENV,
)


# --- comm across two mounts -----------------------------------------------------------------------

def gen_comm(root: Path, scale: str) -> None:
    count = pick(scale, 10_000, 340_000, 3_400_000)
    for s, site in enumerate(("left", "right")):
        d = root / site
        d.mkdir(parents=True, exist_ok=True)
        # Left holds the even user ids and every third odd one, right every id not divisible by 3:
        # about half are common. Zero-padded so that byte order is numeric order.
        keep = (lambda n: n % 2 == 0 or n % 6 == 1) if s == 0 else (lambda n: n % 3 != 0)
        with open(d / "users.txt", "w", encoding="ascii", newline="\n") as out:
            out.writelines(f"user{n:09d}\n" for n in range(count * 2) if keep(n))


COMM = Workload(
    name="comm-two-mounts",
    title="comm of two files on two mounts",
    paper="comm across two storage servers",
    sites=("left", "right"),
    script="comm -12 @left@/users.txt @right@/users.txt | wc -l\n",
    generate=gen_comm,
)


# --- a split whose merge feeds the rest of the pipeline ---------------------------------------------

def gen_top_paths(root: Path, scale: str) -> None:
    files, lines = pick(scale, (2, 2_000), (4, 30_000), (8, 60_000))
    paths = [f"/p{i}" for i in range(3000)]
    for s, site in enumerate(("east", "west")):
        d = root / site
        d.mkdir(parents=True, exist_ok=True)
        for f in range(files):
            rng = random.Random(1000 * s + f)
            write_lines(d / f"access-{f}.log", (
                f"10.0.{rng.randrange(256)}.{rng.randrange(256)} {rng.choice(('GET', 'PUT', 'GET', 'HEAD'))} "
                f"{rng.choice(paths)} {rng.choice((200, 200, 404, 500))}\n" for _ in range(lines)))


TOP_PATHS = Workload(
    name="top-paths-two-mounts",
    title="Top clients and paths of access logs on two mounts",
    paper="a split reducer whose merge feeds further commands (sort -m, then uniq -c, sort, head)",
    sites=("east", "west"),
    script='cat @east@/*.log @west@/*.log | grep GET | cut -d " " -f 1,3 | sort | uniq -c | sort -rn | head -n 5\n',
    generate=gen_top_paths,
)


# --- many small pipelines ------------------------------------------------------------------------

def gen_notes(root: Path, scale: str) -> None:
    files = pick(scale, 20, 200, 1000)
    notes = root / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    words = ["alpha", "beta", "gamma", "delta", "TODO", "note", "fixme", "done", "later"]
    for i in range(files):
        rng = random.Random(100 + i)
        write_lines(notes / f"note-{i:04d}.txt",
                    (" ".join(rng.choice(words) for _ in range(8)) + "\n" for _ in range(40)))


SMALL_PIPELINES = Workload(
    name="small-pipelines",
    title="A loop of small pipelines over small files",
    paper="many short pipelines, one per file (per-pipeline overhead against per-file round trips)",
    script='for f in notes/*.txt; do grep -c TODO "$f"; done\n',
    generate=gen_notes,
)


SMALL_PIPELINES_EACH = Workload(
    name="small-pipelines-each",
    title="The same loop, handed over one iteration at a time",
    paper="the per-iteration path: a builtin in the body keeps the loop with bash, each pipeline a call",
    script='for f in notes/*.txt; do grep -c TODO "$f"; :; done\n',
    generate=gen_notes,
)


SUBSTITUTION_LOOP = Workload(
    name="substitution-loop",
    title="A loop with a command substitution per file",
    paper="a call per file whose result the script keeps (the per-call cost against the round trips it saves)",
    script='for f in notes/*.txt; do n=$(grep -c TODO "$f"); echo "$f $n"; done\n',
    generate=gen_notes,
)


# --- the same data spread over 10 and over 100 proxies ----------------------------------------------

def spread_sites(count: int) -> tuple[str, ...]:
    return tuple(f"s{i:03d}" for i in range(count))


def gen_spread(sites: int):
    """The same files for every spread: file k (of 100, 1,000 or 10,000 logs of 50 lines) on site
    k mod `sites`, so a run over 100 proxies and one over 10 read the same bytes."""
    def generate(root: Path, scale: str) -> None:
        files = pick(scale, 100, 1000, 10000)
        names = spread_sites(sites)
        for site in names:
            (root / site).mkdir(parents=True, exist_ok=True)
        for k in range(files):
            rng = random.Random(7000 + k)
            write_lines(root / names[k % sites] / f"f{k:05d}.log",
                        (f"{n:04d} {'ERROR' if rng.random() < 0.02 else 'INFO'} request {rng.randrange(10**6)}\n"
                         for n in range(50)))
    return generate


def spread(sites: int) -> Workload:
    names = spread_sites(sites)
    return Workload(
        name=f"spread-{sites}",
        title=f"The same logs on {sites} proxies",
        paper="scale: one split pipeline across many storage servers (issue 40: 100 proxies within 2x of 10)",
        sites=names,
        script=" ".join(["cat"] + [f"@{site}@/*.log" for site in names]) + " | grep ERROR | wc -l\n",
        generate=gen_spread(sites),
    )


SPREAD_10 = spread(10)
SPREAD_100 = spread(100)


# --- stream throughput ----------------------------------------------------------------------------

def gen_stream(root: Path, scale: str) -> None:
    mib = pick(scale, 1, 20, 200)
    rng = random.Random(5)
    block = "".join(f"{rng.randrange(10**12):012d} stream line {n:06d}\n" for n in range(32_768))
    data = block.encode()
    with open(root / "stream.txt", "wb") as out:
        written = 0
        while written < mib << 20:
            out.write(data)
            written += len(data)


STREAM = Workload(
    name="stream",
    title="A stream to stdout",
    paper="throughput: a large output streamed from the proxy to the client",
    # `tail -c +1` rather than `cat`: the planner keeps a plain cat with the client (reading the
    # file there costs it the same as streaming its output), so only a filter measures the stream.
    script="tail -c +1 stream.txt\n",
    generate=gen_stream,
    throughput=True,
)


ALL = (
    RAY_TRACING,
    ONE_LARGE_LOG,
    DISTRIBUTED_TO_FILE,
    DISTRIBUTED_TO_STDOUT,
    THUMBNAILS,
    PORT_SCAN,
    GIT_WORKFLOW,
    COMM,
    TOP_PATHS,
    SMALL_PIPELINES,
    SMALL_PIPELINES_EACH,
    SUBSTITUTION_LOOP,
    STREAM,
    SPREAD_10,
    SPREAD_100,
)


def by_name(names: list[str]) -> list[Workload]:
    known = {w.name: w for w in ALL}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(unknown)} (known: {', '.join(known)})")
    return [known[n] for n in names]
