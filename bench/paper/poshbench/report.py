"""A run's report: report.json (everything measured), report.md (the tables a person reads) and
figure.svg (median times per workload and system on a log scale, after the paper's Figure 3)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from . import measure

ORDER = ("a", "a_readahead", "b", "b_warm", "c")
SHORT = {"a": "a", "a_readahead": "a (4 MiB)", "b": "b", "b_warm": "b (warm)", "c": "c"}
LEGEND = {"a": "a: bash over the mount", "a_readahead": "a (4 MiB): the same, 4 MiB read-ahead",
          "b": "b: posh-exec with proxies, cold mount", "b_warm": "b (warm): the same, warm mount",
          "c": "c: bash at the storage"}
COLOURS = {"a": "#9e9e9e", "a_readahead": "#616161", "b": "#1565c0", "b_warm": "#64b5f6", "c": "#2e7d32"}


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f} s" if value < 1 else f"{value:.2f} s"


def megabytes(value: int | None) -> str:
    if value is None:
        return "-"
    if value < 1e5:
        return f"{value / 1e3:.1f} kB"
    return f"{value / 1e6:.1f} MB"


def ratio(value: float | None) -> str:
    return "-" if value is None else (f"{value:.1f}" if value >= 10 else f"{value:.2f}")


def table_cell(text: str) -> str:
    """Text for one cell of a Markdown table: a `|` would end the cell, even in code."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: dict) -> str:
    lines = [f"# posh benchmark: {report['scale']} scale, {report['setting']['setting']} setting", ""]
    meta = report.get("meta", {})
    m = report["machine"]
    lines.append(
        f"{meta.get('date', '?')}, commit {meta.get('commit', '?')}{' (with uncommitted changes)' if meta.get('dirty') else ''}; "
        f"{m.get('cpus')} CPUs ({m.get('cpu', '?')}), {m.get('memory_gib', '?')} GiB, Linux {m.get('kernel')}; "
        f"load {' '.join(m.get('load_at_start', []))} at the start, {' '.join(m.get('load_at_end', []))} at the end. "
        f"{report['runs']} interleaved rounds; times are medians (min in brackets).")
    lines.append("")
    for name, link in report["links"].items():
        if "rtt_ms" in link:
            lines.append(f"- link `{name}`: {link['rtt_ms']} ms RTT, {link['rate_mbit']} Mbit/s (../shared/rig)")
        else:
            lines.append(f"- `{name}`: the mounts of {link.get('config')}")
    lines.append("")
    for system, text in report["systems"].items():
        lines.append(f"- **{SHORT[system]}**: {text}")
    lines += ["", "| workload | link | a | a (4 MiB) | b | b (warm) | c | a/b | a (4 MiB)/b | a/b (warm) | b/c "
              "| b/c (warm) | bytes a | bytes b | outputs |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['link']} | {table_cell(r['error'])} |" + " |" * 12)
            continue
        s = r["systems"]

        def cell(system):
            if system not in s:
                return "-"
            return f"{seconds(s[system]['median'])} ({seconds(s[system]['min'])})"

        check = "identical" if r["check"]["identical"] else "**MISMATCH**"
        lines.append(
            f"| {r['title']} | {r['link']} | {cell('a')} | {cell('a_readahead')} | {cell('b')} | {cell('b_warm')} "
            f"| {cell('c')} | {ratio(r['ratios'].get('a/b'))} | {ratio(r['ratios'].get('a_readahead/b'))} "
            f"| {ratio(r['ratios'].get('a/b warm'))} | {ratio(r['ratios'].get('b/c'))} | {ratio(r['ratios'].get('b warm/c'))} "
            f"| {megabytes(s.get('a', {}).get('bytes'))} | {megabytes(s.get('b', {}).get('bytes'))} | {check} |")
    lines += targets_section(report)
    lines += ["", "## Per workload", ""]
    for r in report["results"]:
        if "error" in r:
            continue
        lines.append(f"### {r['title']} ({r['link']})")
        lines.append("")
        lines.append(f"Models: {r['paper']}. {r['verdict']}.")
        if "c_not_run" in r:
            lines.append(f"c was not run: {r['c_not_run']}.")
        lines += ["", "```sh", r["script"].rstrip(), "```", "", "| line | `--explain` plan | where `--stats` says it ran |", "|---|---|---|"]
        for p in r["placement"]:
            if p.get("explain_error"):
                lines.append(f"| - | --explain failed: {p['explain_error']} | |")
                continue
            if p["runtime_runs"] == 0:
                ran = "bash ran it: " + measure.kept_by_bash(p)
            else:
                ran = ", ".join(
                    f"{c['command']}@{c['location']}" + (f" ×{c['times']}" if c["times"] > 1 else "") for c in p["ran"])
                whys = "; ".join(f"{cmd}: {why}" for cmd, why in p["why_client"].items())
                if whys:
                    ran += f" (why: {whys})"
            lines.append(f"| {p['line']} | {table_cell('`' + p['explain'] + '`')} | {table_cell(ran)} |")
        if r.get("plan_disagreements"):
            lines += ["", "**`--explain` and `--stats` disagree (one plan is broken):**", ""]
            lines += [f"- {d}" for d in r["plan_disagreements"]]
        for mm in r["check"]["mismatches"]:
            lines.append("")
            lines.append(f"**{mm['system']} run {mm['run']} differs from {mm['against']}:**")
            for d in mm["differences"]:
                expected, got = str(d["expected"]), str(d["got"])
                if "\n" in expected + got:
                    lines += [f"- {d['part']}, expected:", "", "```", expected.rstrip(), "```", "", "  got:", "", "```",
                              got.rstrip(), "```"]
                else:
                    lines.append(f"- {d['part']}: expected `{expected}`, got `{got}`")
        for failed in r["check"]["failed_runs"]:
            lines.append(f"- failed run: {failed}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def targets_section(report: dict) -> list[str]:
    """Which of issue 40's targets this run met, workload by workload (measure.targets)."""
    rows = []
    for r in report["results"]:
        if "error" in r:
            continue
        for t in measure.targets(r, report["links"].get(r["link"], {})):
            rows.append(target_row(r["title"], r["link"], t))
    rows += [target_row(t["title"], t["link"], t) for t in measure.spread_targets(report["results"])]
    if not rows:
        return []
    missed = sum("**not met**" in row for row in rows)
    return ["", "## Targets", "",
            f"{len(rows) - missed} of {len(rows)} met." if missed else f"All {len(rows)} met.", "",
            "| workload | link | target | figure | |", "|---|---|---|---|---|", *rows]


def target_row(title: str, link: str, target: dict) -> str:
    return f"| {title} | {link} | {target['target']} | {target['figure']} | {'met' if target['met'] else '**not met**'} |"


def svg(report: dict) -> str:
    """Grouped bars, one group per workload and link, log-scaled seconds."""
    groups = [r for r in report["results"] if "systems" in r]
    width_per_group, bar, left, top, height = 96, 18, 64, 40, 360
    width = left + max(1, len(groups)) * width_per_group + 240
    values = [v["median"] for r in groups for v in r["systems"].values() if v["median"] > 0]
    lo = 10 ** math.floor(math.log10(min(values))) if values else 0.01
    hi = 10 ** math.ceil(math.log10(max(values))) if values else 10
    if hi <= lo:
        hi = lo * 10

    def y(value: float) -> float:
        value = max(value, lo)
        return top + height - (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * height

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 120}" '
           f'font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="13">Median wall time per workload (log scale), '
           f'{report["scale"]} scale, {report.get("meta", {}).get("commit", "")}</text>']
    decade = lo
    while decade <= hi * 1.0001:
        out.append(f'<line x1="{left}" x2="{left + len(groups) * width_per_group}" y1="{y(decade):.1f}" '
                   f'y2="{y(decade):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(decade) + 4:.1f}" text-anchor="end">{decade:g} s</text>')
        decade *= 10
    for g, r in enumerate(groups):
        x0 = left + g * width_per_group + 8
        systems = [s for s in ORDER if s in r["systems"]]
        for i, system in enumerate(systems):
            value = r["systems"][system]["median"]
            x = x0 + i * bar
            out.append(f'<rect x="{x}" y="{y(value):.1f}" width="{bar - 2}" height="{top + height - y(value):.1f}" '
                       f'fill="{COLOURS[system]}"><title>{SHORT[system]}: {value:.3f} s</title></rect>')
        label = f"{r['workload']} ({r['link']})"
        ratio_text = r["ratios"].get("a/b")
        cx = x0 + len(systems) * bar / 2
        out.append(f'<text transform="translate({cx:.1f},{top + height + 12}) rotate(35)">{label}</text>')
        if ratio_text is not None:
            out.append(f'<text x="{cx:.1f}" y="{top - 6}" text-anchor="middle">{ratio(ratio_text)}x</text>')
    lx = left + len(groups) * width_per_group + 16
    for i, system in enumerate(ORDER):
        out.append(f'<rect x="{lx}" y="{top + i * 18}" width="12" height="12" fill="{COLOURS[system]}"/>')
        out.append(f'<text x="{lx + 18}" y="{top + i * 18 + 10}">{LEGEND[system]}</text>')
    out.append(f'<text x="{lx}" y="{top + (len(ORDER) + 1) * 18}">numbers above: a/b</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(report: dict, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (folder / "report.md").write_text(markdown(report))
    (folder / "figure.svg").write_text(svg(report))
