"""Print the last ``make bench`` run beside the committed RESULTS.md table.

Why: a slowdown should be seen before it lands. ``run_bench.py`` saves its table as JSON
(``benchmarks/last_run.json``); this script reads the first side-by-side table of
``benchmarks/RESULTS.md`` (the committed figures) and prints, per pipeline, both wall and
CPU medians, the ratio, and a flag when this run is more than ``--tolerance`` slower in
CPU seconds (CPU rather than wall: the machine is often shared, and CPU seconds move less
with other processes' load). A ground-truth miss is always flagged. Exit 1 on any flag.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: width of the pipeline name column (the longest name, sluicegate-spark-daily, and room)
NAME = 22


def committed_table(results_md: Path) -> dict[str, dict[str, Any]]:
    """Rows of the first fenced table in RESULTS.md that has a ``pipeline`` header."""
    text = results_md.read_text()
    for block in re.findall(r"```\n(.*?)```", text, flags=re.S):
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if not lines or not lines[0].startswith("pipeline"):
            continue
        head = re.split(r"\s{2,}", lines[0].strip())
        rows: dict[str, dict[str, Any]] = {}
        for ln in lines[2:]:
            cells = re.split(r"\s{2,}", ln.strip())
            if len(cells) != len(head):
                continue
            row = dict(zip(head, cells, strict=True))
            rows[row["pipeline"]] = {
                "lines": int(row["lines"].replace(",", "")),
                "median_s": _num(row.get("median s")),
                "median_cpu_s": _num(row.get("CPU s")),
                "peak_rss_mib": _num(row.get("peak RSS MiB")),
                "truth": row.get("truth"),
            }
        return rows
    return {}


def _num(cell: str | None) -> float | None:
    try:
        return float(cell.replace(",", "")) if cell else None
    except ValueError:
        return None


def compare(last: dict[str, Any], base: dict[str, dict[str, Any]], tolerance: float) -> list[str]:
    """The comparison table's lines; a line starting with ``!`` is a flagged regression."""
    out = [
        f"this run {last['at']} (scale {last['scale']}, {last['runs']} run(s)) "
        "vs the committed RESULTS.md table",
        f"  {'pipeline':<{NAME}} {'wall s':>8} {'was':>8} {'ratio':>6} "
        f"{'CPU s':>7} {'was':>7} {'ratio':>6} {'RSS MiB':>8} {'was':>7}  truth",
    ]
    for row in last["rows"]:
        name = row["pipeline"]
        if row.get("skipped"):
            out.append(f"  {name:<{NAME}} skipped: {row['skipped']}")
            continue
        was = base.get(name)
        if was is None or was["lines"] != row["lines"]:
            out.append(f"  {name:<{NAME}} no committed row at {row['lines']:,} lines")
            continue
        wall_r = row["median_s"] / was["median_s"] if was["median_s"] else None
        cpu_r = (
            row["median_cpu_s"] / was["median_cpu_s"]
            if was["median_cpu_s"] and row["median_cpu_s"]
            else None
        )
        flag = row["truth"] != "ok" or (cpu_r is not None and cpu_r > 1 + tolerance)
        out.append(
            f"{'!' if flag else ' '} {name:<{NAME}} {row['median_s']:>8.2f} {was['median_s']:>8.2f} "
            f"{_ratio(wall_r)} {row['median_cpu_s'] or 0:>7.1f} {was['median_cpu_s'] or 0:>7.1f} "
            f"{_ratio(cpu_r)} {row['peak_rss_mib']:>8,.0f} {was['peak_rss_mib'] or 0:>7,.0f}  "
            f"{row['truth']}"
        )
    return out


def _ratio(r: float | None) -> str:
    return f"{r:>5.2f}x" if r is not None else f"{'—':>6}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--last", type=Path, default=HERE / "last_run.json")
    ap.add_argument("--results-md", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument(
        "--tolerance",
        type=float,
        default=0.15,
        help="flag a pipeline whose CPU seconds exceed the committed ones by more than this",
    )
    args = ap.parse_args(argv)
    if not args.last.exists():
        print(f"{args.last}: no saved run; run `make bench` first", file=sys.stderr)
        return 2
    lines = compare(
        json.loads(args.last.read_text()), committed_table(args.results_md), args.tolerance
    )
    print("\n".join(lines))
    flagged = [ln for ln in lines if ln.startswith("!")]
    if flagged:
        print(f"{len(flagged)} pipeline(s) slower than committed or wrong", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
