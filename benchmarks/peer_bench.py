"""Peers on the same typed input: pandera, pointblank, Soda Core and sluicegate side by side.

The peers validate a typed table; none parses hostile NDJSON or deduplicates. So every
tool gets the same typed, deduplicated Parquet of the retail feed
(``benchmarks/peers/make_input.py``) and applies the eight rules of
examples/retail/contract.yml:

* pandera (polars backend, lazy validation) validates, splits and writes clean and
  failing rows (``benchmarks/peers/peer_pandera.py``);
* pointblank (Polars) the same (``peer_pointblank.py``);
* Soda Core 4 on DuckDB counts only (``peer_soda.py``);
* sluicegate runs ``benchmarks/peers/contract_parquet.yml`` (a ``format: parquet``
  source) and writes its clean, quarantine, duplicates and facts tables.

Each peer runs in its own virtualenv (``.venv-peers/<tool>``, built by ``make peer-venvs``);
a missing venv makes its row say why instead of failing the bench. Every run is a whole
process, timed from start to exit; the pipelines are interleaved (run 1 of each, then
run 2 ...) and the median is reported. Each run's counts (rows, per-rule failures,
quarantined, clean) must equal the feed's ``expected.json``, and the rows a tool wrote are
counted back: otherwise its row says WRONG and the exit code is 1. The "validate s"
column is the tool's own validation step (its stage timer; sluicegate's ``route`` stage).

Usage::

    .venv/bin/python benchmarks/peer_bench.py --scale 1m --runs 3
    .venv/bin/python benchmarks/peer_bench.py --scale tiny --runs 1   # a quick check
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PEERS_DIR = HERE / "peers"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(PEERS_DIR))
from make_input import ensure_input  # noqa: E402
from run_bench import (  # noqa: E402
    SCALES,
    Result,
    _default_sluicegate_bin,
    aligned,
    ensure_feed,
    measure,
    wait_until_quiet,
)

TOOLS = ("pandera", "pointblank", "soda")
#: tools that write the split rows (clean.parquet, quarantine.parquet) into their out dir
WRITES_ROWS = {"pandera", "pointblank"}
CONTRACT = PEERS_DIR / "contract_parquet.yml"
RULES = (
    "non_null_customer",
    "non_null_product",
    "non_null_store",
    "positive_quantity",
    "valid_price",
    "known_product",
    "known_store",
    "parseable_order_ts",
)


@dataclass
class Peer:
    name: str
    argv: Callable[[Path], list[str]]  # scratch dir -> command line
    counts: Callable[[dict[str, Any]], dict[str, Any]]  # its JSON -> the truth's keys
    written: Callable[[Path], dict[str, int]]  # scratch dir -> rows it wrote, read back
    ok_codes: tuple[int, ...] = (0,)


def last_json(text: str) -> dict[str, Any] | None:
    """The JSON document a tool prints: its last line for the peers (a library may log
    before it), the whole of stdout for ``sluicegate run --json``."""
    for candidate in (text.strip().rsplit("\n", 1)[-1], text[text.find("{") :]):
        try:
            doc = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            return doc
    return None


def parquet_rows(scratch: Path) -> dict[str, int]:
    """Rows of the clean and quarantine Parquet files a peer wrote."""
    con = duckdb.connect()
    try:
        return {
            f"written_{part}": con.execute(
                "SELECT count(*) FROM read_parquet($p)", {"p": str(scratch / f"{part}.parquet")}
            ).fetchone()[0]
            for part in ("clean", "quarantine")
        }
    except duckdb.Error as err:
        return {"output_error": str(err).splitlines()[0]}
    finally:
        con.close()


def warehouse_rows(scratch: Path) -> dict[str, int]:
    """Rows of sluicegate's published clean and quarantine tables, read back."""
    try:
        con = duckdb.connect(str(scratch / "warehouse.duckdb"), read_only=True)
    except duckdb.Error as err:
        return {"output_error": str(err).splitlines()[0]}
    try:
        return {
            "written_clean": con.execute("SELECT count(*) FROM sales_clean").fetchone()[0],
            "written_quarantine": con.execute("SELECT count(*) FROM sales_dlq").fetchone()[0],
        }
    except duckdb.Error as err:
        return {"output_error": str(err).splitlines()[0]}
    finally:
        con.close()


def peer_counts(doc: dict[str, Any]) -> dict[str, Any]:
    stages = doc.get("stage_seconds") or {}
    return {**doc, "validate_s": stages.get("validate")}


def sluicegate_counts(doc: dict[str, Any]) -> dict[str, Any]:
    """sluicegate's run metrics in the truth's key names: with a deduplicated Parquet
    source, raw = the deduplicated rows (no corrupt lines, no duplicates)."""
    ledger = doc.get("ledger") or {}
    timings = doc.get("timings") or {}
    quarantined = ledger.get("quarantined")
    if isinstance(quarantined, dict):
        quarantined = sum(quarantined.values())
    rules = doc.get("rules") or {}
    return {
        "deduplicated_rows": ledger.get("raw"),
        "quarantined": quarantined,
        "clean": ledger.get("clean"),
        "duplicates": ledger.get("duplicates"),
        "rule_failures": {n: r.get("failed") for n, r in rules.items() if isinstance(r, dict)},
        "validate_s": timings.get("route"),
        "in_process_s": timings.get("total"),
        "version": doc.get("sluicegate_version"),
    }


def mismatches(reported: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """Every count that differs from the ground truth; every rule must be reported."""
    problems = []
    if "output_error" in reported:
        problems.append(f"outputs: {reported['output_error']}")
    for key in ("deduplicated_rows", "quarantined", "clean"):
        if reported.get(key) != expected[key]:
            problems.append(f"{key}: {reported.get(key)} != {expected[key]}")
    failures = reported.get("rule_failures") or {}
    for rule in RULES:
        if failures.get(rule) != expected["rule_failures"][rule]:
            problems.append(
                f"rule {rule}: {failures.get(rule)} != {expected['rule_failures'][rule]}"
            )
    if reported.get("duplicates") not in (None, 0):
        problems.append(f"duplicates: {reported['duplicates']} != 0 (the input is deduplicated)")
    for part in ("clean", "quarantine"):
        want = expected["quarantined" if part == "quarantine" else "clean"]
        got = reported.get(f"written_{part}")
        if got is not None and got != want:
            problems.append(f"{part} rows written: {got} != {want}")
    return problems


def peers(
    args: argparse.Namespace, data: Path, feed: Path, lines: int
) -> tuple[list[Peer], list[Result]]:
    """The tools to run, and the ones skipped with why (a venv that is missing or failed)."""
    chosen: list[Peer] = []
    skipped: list[Result] = []
    for tool in TOOLS:
        python = args.venvs / tool / "bin" / "python"
        error = args.venvs / f"{tool}.error"
        if error.exists():
            reason = " ".join(error.read_text().split())[:200]
            skipped.append(Result(tool, lines, skipped=reason))
            continue
        if not (args.venvs / tool / ".installed").exists():
            skipped.append(
                Result(tool, lines, skipped=f"no venv at {args.venvs / tool}: make peer-venvs")
            )
            continue
        script = PEERS_DIR / f"peer_{tool}.py"
        chosen.append(
            Peer(
                tool,
                lambda tmp, python=python, script=script: [
                    str(python),
                    str(script),
                    "--input",
                    str(data),
                    "--feed",
                    str(feed),
                    "--out",
                    str(tmp),
                ],
                peer_counts,
                parquet_rows if tool in WRITES_ROWS else (lambda _tmp: {}),
            )
        )
    exe = args.sluicegate_bin
    if exe is None:
        skipped.append(Result("sluicegate", lines, skipped="no sluicegate executable found"))
    else:
        chosen.append(
            Peer(
                "sluicegate",
                lambda tmp: [
                    str(exe),
                    "run",
                    str(CONTRACT),
                    "--var",
                    f"input={data}",
                    "--var",
                    f"root={feed}",
                    "--var",
                    f"warehouse={tmp / 'warehouse.duckdb'}",
                    "--json",
                ],
                sluicegate_counts,
                warehouse_rows,
                ok_codes=(0, 1),  # 1 = the gate failed: still a finished, countable run
            )
        )
    wanted = set(args.only or [])
    if wanted:
        chosen = [p for p in chosen if p.name in wanted]
    return chosen, skipped


def run_interleaved(
    chosen: list[Peer], expected: dict[str, Any], args: argparse.Namespace
) -> list[Result]:
    """Run 1 of every tool, then run 2 of every tool ...: a load that comes and goes on a
    shared machine falls on all of them alike."""
    results = {p.name: Result(p.name, expected["deduplicated_rows"]) for p in chosen}
    for i in range(args.runs):
        for p in chosen:
            scratch = Path(tempfile.mkdtemp(prefix=f"peer-{p.name}-"))
            try:
                if args.wait_quiet > 0:
                    wait_until_quiet(args.wait_quiet)
                load = os.getloadavg()[0]
                m = measure(p.argv(scratch), REPO, args.timeout or None)
                doc = last_json(m.stdout)
                finished = m.rc in p.ok_codes and doc is not None
                reported = {**p.counts(doc), **p.written(scratch)} if finished else {}
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            if finished:
                problems = mismatches(reported, expected)
            else:
                problems = [f"exit code {m.rc}" + ("" if doc else ", no JSON on stdout")]
            run = {
                "run": i + 1,
                "rc": m.rc,
                "wall_s": round(m.wall_s, 3),
                "cpu_s": m.cpu_s,
                "peak_rss_mib": round(m.peak_rss_bytes / 2**20, 1),
                "load_before": round(load, 2),
                "other_cpu_share": m.other_cpu_share,
                "validate_s": reported.get("validate_s"),
                "version": reported.get("version"),
                "ok": not problems,
                "problems": problems,
                "reported": reported,
            }
            if not finished:
                run["stderr_tail"] = m.stderr[-2000:]
            results[p.name].runs.append(run)
            status = "ok" if not problems else "WRONG: " + "; ".join(problems[:4])
            validate = run["validate_s"]
            print(
                f"  {p.name} run {i + 1}/{args.runs}: {m.wall_s:.2f} s ({m.cpu_s:.1f} CPU s)"
                + (f", validate {validate:.3f} s" if validate is not None else "")
                + f", {m.peak_rss_bytes / 2**20:.0f} MiB, {status}",
                flush=True,
            )
            if not finished:
                print("    " + m.stderr[-800:].strip().replace("\n", "\n    "), flush=True)
    return list(results.values())


def median_validate(r: Result) -> float | None:
    values = [run["validate_s"] for run in r.runs if run.get("validate_s") is not None]
    return statistics.median(values) if values else None


def table(results: list[Result]) -> str:
    """The rows in run_bench.py's style, ratios against pandera's whole process (wall and
    CPU seconds: on a shared machine the CPU ratio moves far less with the load)."""
    by_name = {r.pipeline: r for r in results}
    pandera = by_name.get("pandera")
    head = (
        "tool (typed Parquet)",
        "rows",
        "median s",
        "rows/s",
        "peak RSS MiB",
        "vs pandera",
        "CPU s",
        "CPU vs pandera",
        "validate s",
        "others' CPU",
        "truth",
    )
    rows = [head]
    for r in results:
        if r.skipped:
            rows.append((r.pipeline, f"{r.lines:,}", *["—"] * 8, f"skipped: {r.skipped}"))
            continue
        med = r.median_s or 0.0
        ratio = "—"
        if pandera is not None and pandera.median_s and med:
            ratio = f"{med / pandera.median_s:.2f}x"
        cpu_ratio = "—"
        if pandera is not None and pandera.median_cpu_s and r.median_cpu_s is not None:
            cpu_ratio = f"{r.median_cpu_s / pandera.median_cpu_s:.2f}x"
        validate = median_validate(r)
        rows.append(
            (
                r.pipeline,
                f"{r.lines:,}",
                f"{med:.2f}",
                f"{r.lines / med:,.0f}" if med else "—",
                f"{r.peak_rss_mib or 0:,.0f}",
                ratio,
                f"{r.median_cpu_s:.1f}" if r.median_cpu_s is not None else "—",
                cpu_ratio,
                f"{validate:.3f}" if validate is not None else "—",
                f"{r.others_cpu or 0:.0%}",
                "ok" if r.correct else "WRONG",
            )
        )
    return aligned(rows)


def verdicts(results: list[Result]) -> list[str]:
    """Issue 22's two goals, answered from the table (only from rows whose truth is ok)."""
    ok = {r.pipeline: r for r in results if not r.skipped and r.correct}
    sg = ok.get("sluicegate")
    if sg is None:
        return ["goals: no correct sluicegate row, nothing to compare"]
    lines = []
    peer_validate = {n: median_validate(r) for n, r in ok.items() if n != "sluicegate"}
    peer_validate = {n: v for n, v in peer_validate.items() if v is not None}
    route = median_validate(sg)
    if peer_validate and route is not None:
        fastest, best = min(peer_validate.items(), key=lambda kv: kv[1])
        met = "met" if route <= best else "NOT met"
        lines.append(
            f"route stage {route:.3f} s vs the fastest peer's validation ({fastest}) "
            f"{best:.3f} s: {route / best:.2f}x — goal (no slower) {met}"
        )
    pandera = ok.get("pandera")
    if pandera is not None and pandera.median_s and sg.median_s:
        bound = 1.5 * pandera.median_s
        met = "met" if sg.median_s <= bound else "NOT met"
        lines.append(
            f"sluicegate whole run {sg.median_s:.2f} s vs pandera's whole process "
            f"{pandera.median_s:.2f} s: {sg.median_s / pandera.median_s:.2f}x — "
            f"goal (within 1.5x = {bound:.2f} s) {met}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", choices=list(SCALES), default="1m")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cache", type=Path, default=REPO / ".bench-cache", help="generated feeds")
    ap.add_argument("--venvs", type=Path, default=REPO / ".venv-peers", help="peer virtualenvs")
    ap.add_argument("--sluicegate-bin", type=Path, default=_default_sluicegate_bin())
    ap.add_argument("--only", action="append", metavar="TOOL", help="run only these")
    ap.add_argument("--results", type=Path, default=HERE / "results.jsonl")
    ap.add_argument("--table-json", type=Path, default=HERE / "peers_last_run.json")
    ap.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS")
    args = ap.parse_args(argv)
    args.venvs = args.venvs.resolve()

    feed, expected = ensure_feed(args.cache.resolve(), SCALES[args.scale], args.seed)
    try:
        data = ensure_input(feed)
    except (subprocess.CalledProcessError, SystemExit, duckdb.Error) as err:
        print(f"peers: could not build the typed input of {feed}: {err}", file=sys.stderr)
        return 1
    print(f"peers: typed input {data} ({expected['deduplicated_rows']:,} rows)", flush=True)
    chosen, skipped = peers(args, data, feed, expected["deduplicated_rows"])
    for s in skipped:
        print(f"{s.pipeline}: skipped — {s.skipped}", flush=True)
    print(f"peers: {args.runs} interleaved run(s) of {', '.join(p.name for p in chosen)}")
    results = run_interleaved(chosen, expected, args) + skipped

    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows = [
        {
            "pipeline": r.pipeline,
            "rows": r.lines,
            "median_s": r.median_s,
            "median_cpu_s": r.median_cpu_s,
            "median_validate_s": None if r.skipped else median_validate(r),
            "peak_rss_mib": r.peak_rss_mib,
            "walls_s": [run["wall_s"] for run in r.runs],
            "version": next((run["version"] for run in r.runs if run.get("version")), None),
            "truth": None if r.skipped else ("ok" if r.correct else "WRONG"),
            "skipped": r.skipped,
        }
        for r in results
    ]
    doc = {"at": stamp, "check": "peers", "scale": args.scale, "runs": args.runs, "rows": rows}
    args.table_json.write_text(json.dumps(doc, indent=2))
    with args.results.open("a") as f:
        f.write(json.dumps({**doc, "runs_detail": [r.runs for r in results]}) + "\n")
    print()
    print(table(results))
    for line in verdicts(results):
        print(line)
    versions = ", ".join(f"{row['pipeline']} {row['version']}" for row in rows if row["version"])
    print(f"versions: {versions}")
    wrong = [r.pipeline for r in results if not r.skipped and not r.correct]
    if wrong:
        print(f"GROUND TRUTH NOT MET by: {', '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
