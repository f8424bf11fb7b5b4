"""File landing latency: a file renamed into the landing folder → its run committed, seen
by a separate reader, for ``sluicegate watch`` on the embedded (DuckDB) engine, or with
``--engine spark`` on Spark (Structured Streaming, a Delta warehouse).

The hostile retail feed (``sluicegate.datagen.retail``, the one ``run_bench.py`` uses) of
``(files + 1) × lines`` lines is cut, in the generator's file order, into files of
``--lines`` lines each. ``sluicegate watch examples/retail/contract.yml`` runs as its own
process at its **default** ``--interval`` (no flag is passed) on a landing folder that
holds the feed's references and an empty ``sales/``. One file at a time is written under
a staging folder outside the source glob (same filesystem) and landed with ``os.rename``
into ``sales/month=…/``; the clock starts right after the rename. A separate reader —
a DuckDB connection opened read-only on the warehouse, every ``--poll`` seconds — waits
for the file's row in the processed-file ledger (``_sluicegate_files``) joined to its
run's record (``_sluicegate_runs``): both are written in the run's publish transaction
with its rows, so seeing them means "rows published and ledger committed". On Spark the
warehouse is a folder of Delta tables, read by delta-rs (``deltalake``, a reader
sluicegate's Spark engine does not use) into the same DuckDB queries. The latency is
rename → first sight. The first file is a warm-up (tables created, imports paid) and is
not measured; between files the harness waits a seeded random 0 to ``watch``'s default
interval, so landings fall at every phase of the watch's poll (right after a batch the old
loop always had the whole interval still to wait).

``ok`` is yes only when every landed file's rows were published exactly once: for each
file, the rows of clean + quarantine + duplicates carrying its ``_source_file`` all
belong to the file's run, their line numbers are exactly 1..N, N the line count the
harness wrote (an independent count), and the file ledger's ``records`` and the run's
``raw_records`` equal N; over the whole feed the corrupt lines and duplicates equal the
generator's ``expected.json``.

Usage::

    .venv/bin/python benchmarks/watch_latency.py [--files 50] [--lines 10000] [--tiny]
    .venv/bin/python benchmarks/watch_latency.py --engine spark --files 8

Results are appended to ``benchmarks/results.jsonl`` (``pipeline: watch-latency-duckdb``,
``watch-latency-spark``). The bounds (issue 22) are the embedded engine's; on Spark the row
states the floor: every micro-batch is a whole run on a warm JVM.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from run_bench import ensure_feed  # noqa: E402

SLUICEGATE = [sys.executable, "-m", "sluicegate.cli.main"]
CONTRACT = REPO / "examples" / "retail" / "contract.yml"
CONTRACT_NAME = "retail_sales"
DAY = "2026-12-01"
MONTH = "month=2026-12"  # the landing partition folder (source.partitions: [month])
TABLES = ("sales_clean", "sales_dlq", "sales_duplicates")
BOUNDS = {"p50_s": 1.0, "p95_s": 2.0}  # issue 22


def without_model(tmp: Path) -> Path:
    """The retail contract without its star schema (``model:``, ``outputs.export``): the
    same feed, rules and outputs, to show what the model's per-batch rebuild costs."""
    import yaml

    doc = yaml.safe_load(CONTRACT.read_text(encoding="utf-8"))
    doc.pop("model", None)
    doc["outputs"].pop("export", None)
    doc["vars"].pop("export", None)
    out = tmp / "contract-no-model.yml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def cut(feed: Path, lines: int, n: int) -> list[list[str]]:
    """The feed's sale lines in the generator's file order, cut into ``n`` lists of ``lines``."""
    out: list[str] = []
    for part in sorted((feed / "sales").glob("month=*/part-*.json")):
        out.extend(part.read_text(encoding="utf-8").splitlines(keepends=True))
        if len(out) >= lines * n:
            break
    assert len(out) >= lines * n, f"the feed has {len(out)} lines, {lines * n} needed"
    return [out[i * lines : (i + 1) * lines] for i in range(n)]


#: the warehouse tables the harness reads: the file ledger and run record, the outputs
READ_TABLES = ("_sluicegate_files", "_sluicegate_runs", *TABLES)


def open_warehouse(db: Path, tables: tuple[str, ...] = READ_TABLES) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that sees ``tables`` of the warehouse ``db``: the DuckDB file
    opened read-only, or — a Spark warehouse, a folder of Delta tables — each table's
    current snapshot read by delta-rs. Raises ``duckdb.Error`` / ``OSError`` while the
    watcher holds the file or a table does not exist yet."""
    if not db.is_dir():
        return duckdb.connect(str(db), read_only=True)
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    con = duckdb.connect()
    for name in tables:
        try:
            con.register(name, DeltaTable(str(db / name)).to_pyarrow_table())
        except TableNotFoundError as e:
            con.close()
            raise OSError(f"{db / name}: no Delta table yet") from e
    return con


def seen(db: Path, path: str) -> tuple[str, float] | None:
    """(run id, published_at epoch) once ``path``'s run is committed; None before that or
    while the watcher holds the file (DuckDB locks it per process: ask again)."""
    if not db.exists():
        return None
    try:
        con = open_warehouse(db, READ_TABLES[:2])
    except (duckdb.Error, OSError):
        return None
    try:
        row = con.execute(
            "SELECT f.run_id, epoch(r.published_at) FROM _sluicegate_files f "
            "JOIN _sluicegate_runs r ON r.run_id = f.run_id WHERE f.contract = ? AND f.path = ?",
            [CONTRACT_NAME, path],
        ).fetchone()
        return (str(row[0]), float(row[1])) if row else None
    except duckdb.Error:
        return None  # tables not created yet
    finally:
        con.close()


def reconcile(db: Path, landed: list[tuple[str, int]], expected: dict[str, Any]) -> list[str]:
    """Every landed file's rows published exactly once (see the module docstring)."""
    problems: list[str] = []
    con = open_warehouse(db)
    try:
        union = " UNION ALL ".join(
            f"SELECT _source_file, _source_line, _run_id FROM {t}" for t in TABLES
        )
        rows = {
            f: (n, lo, hi, distinct, runs)
            for f, n, lo, hi, distinct, runs in con.execute(
                f"SELECT _source_file, count(*), min(_source_line), max(_source_line), "
                f"count(DISTINCT _source_line), count(DISTINCT _run_id) FROM ({union}) GROUP BY 1"
            ).fetchall()
        }
        ledger = {
            p: (rid, rec, raw)
            for p, rid, rec, raw in con.execute(
                "SELECT f.path, f.run_id, f.records, r.raw_records FROM _sluicegate_files f "
                "JOIN _sluicegate_runs r ON r.run_id = f.run_id WHERE f.contract = ?",
                [CONTRACT_NAME],
            ).fetchall()
        }
        for path, n_lines in landed:
            got = rows.get(path)
            if got != (n_lines, 1, n_lines, n_lines, 1):
                problems.append(f"{path}: (rows, min, max, distinct lines, runs) {got}, {n_lines}")
            led = ledger.get(path)
            if led is None or led[1] != n_lines or led[2] != n_lines:
                problems.append(f"{path}: ledger (run, records, raw) {led}, expected {n_lines}")
        extra = set(rows) - {p for p, _ in landed}
        if extra:
            problems.append(f"rows of files never landed: {sorted(extra)[:3]}")
        corrupt, dups = con.execute(
            "SELECT (SELECT count(*) FROM sales_dlq WHERE _reason = 'corrupt_record'), "
            "(SELECT count(*) FROM sales_duplicates)"
        ).fetchone()
    finally:
        con.close()
    total = sum(n for _, n in landed)
    if total == expected["raw_lines"]:  # the whole feed landed: its truth applies
        if corrupt != expected["corrupt_lines"]:
            problems.append(f"corrupt lines {corrupt} != {expected['corrupt_lines']}")
        if dups != expected["duplicates_dropped"]:
            problems.append(f"duplicates {dups} != {expected['duplicates_dropped']}")
    return problems


def breakdown(db: Path, marks: list[tuple[str, float, float]]) -> dict[str, Any]:
    """Where the latency went, medians over the measured files (``marks``: path, rename,
    first sight): ``detect`` rename → the run's ``started_at`` (the poll noticing the file,
    loading the contract), ``run`` → its ``published_at`` (inside the publish, before the
    COMMIT), ``visible`` → first sight (COMMIT, DETACH, the reader's poll); and the run
    record's stage timings (the stages before publish)."""
    con = open_warehouse(db, READ_TABLES[:2])
    try:
        runs = {
            p: (float(a), float(b), json.loads(m).get("timings", {}))
            for p, a, b, m in con.execute(
                "SELECT f.path, epoch(r.started_at), epoch(r.published_at), r.metrics "
                "FROM _sluicegate_files f JOIN _sluicegate_runs r ON r.run_id = f.run_id"
            ).fetchall()
        }
    finally:
        con.close()
    parts: dict[str, list[float]] = {"detect": [], "run": [], "visible": []}
    stages: dict[str, list[float]] = {}
    for path, t0, t_seen in marks:
        started, published, timings = runs[path]
        parts["detect"].append(started - t0)
        parts["run"].append(published - started)
        parts["visible"].append(t_seen - published)
        for k, v in timings.items():
            stages.setdefault(k, []).append(float(v))
    half = len(marks) // 2
    first, last = parts["run"][:half], parts["run"][half:]
    return {
        **{f"{k}_p50_s": round(statistics.median(v), 3) for k, v in parts.items() if v},
        "run_first_half_p50_s": round(statistics.median(first), 3) if first else None,
        "run_second_half_p50_s": round(statistics.median(last), 3) if last else None,
        "stages_p50_s": {k: round(statistics.median(v), 3) for k, v in stages.items()},
    }


def default_interval() -> float:
    """``watch``'s default ``--interval`` (the benchmark passes none; the gaps between
    landings are drawn from 0 to it, so a file lands at any phase of the poll)."""
    from sluicegate.cli.watch_cmd import watch_cmd

    return float(next(p.default for p in watch_cmd.params if p.name == "interval"))


def measure(
    files: int,
    lines: int,
    poll: float,
    seed: int,
    root: Path,
    cache: Path,
    model: bool = True,
    engine: str = "duckdb",
) -> dict[str, Any]:
    feed, expected = ensure_feed(cache, lines * (files + 1), seed)
    chunks = cut(feed, lines, files + 1)
    land, staging = root / "land", root / "staging"
    (land / "sales" / MONTH).mkdir(parents=True)
    staging.mkdir()
    for ref in ("products.json", "stores.json", "customers_cdc.json"):
        shutil.copy(feed / ref, land / ref)
    db = root / "wh.duckdb" if engine == "duckdb" else root / "warehouse"
    contract = CONTRACT if model else without_model(root)
    # Spark: the master a watch starts without flags (SLUICEGATE_SPARK_MASTER, else local)
    engine_args = [] if engine == "duckdb" else ["--engine", engine]
    log = open(root / "watch.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            *SLUICEGATE,
            "watch",
            str(contract),
            *engine_args,
            "--var",
            f"root={land}",
            "--var",
            f"warehouse={db}",
            "--var",
            f"export={root / 'export'}",
            "--logical-date",
            DAY,
            "-q",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    rng = random.Random(seed)
    interval = default_interval()
    landed: list[tuple[str, int]] = []
    latencies: list[float] = []
    published_after: list[float] = []  # rename → published_at (inside the transaction)
    marks: list[tuple[str, float, float]] = []  # path, rename, first sight
    try:
        for i, chunk in enumerate(chunks):
            tmp = staging / f"part-{i:03d}.json"
            tmp.write_text("".join(chunk), encoding="utf-8")
            final = land / "sales" / MONTH / f"land-{i:03d}.json"
            os.rename(tmp, final)
            t0 = time.time()
            landed.append((str(final), len(chunk)))
            deadline = time.monotonic() + (300 if engine == "duckdb" else 900)
            while (hit := seen(db, str(final))) is None:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"file {i} was not published: see {root / 'watch.log'}\n"
                        + (root / "watch.log").read_text()[-2000:]
                    )
                time.sleep(poll)
            if i > 0:  # file 0 warms the watcher up
                t_seen = time.time()
                latencies.append(t_seen - t0)
                published_after.append(hit[1] - t0)
                marks.append((str(final), t0, t_seen))
            if i + 1 < len(chunks):
                time.sleep(rng.uniform(0, interval))  # land at any phase of the watch's poll
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    problems = reconcile(db, landed, expected)
    split = breakdown(db, marks)
    for p in problems[:10]:
        print(f"watch-latency: {p}", flush=True)
    return {
        "engine": engine,
        "model": model,
        "files": files,
        "lines": lines,
        "interval": interval,
        "correct": not problems,
        "problems": problems[:10],
        **quantiles(latencies, ""),
        **quantiles(published_after, "published_"),
        "breakdown": split,
        "poll": poll,
        "meets_bounds": all(quantiles(latencies, "")[k] <= v for k, v in BOUNDS.items()),
    }


def quantiles(xs: list[float], prefix: str) -> dict[str, float]:
    """p50/p95/max in seconds (rounded); NaN below two samples."""
    q = statistics.quantiles(xs, n=100, method="inclusive") if len(xs) > 1 else [float("nan")] * 99
    return {
        f"{prefix}p50_s": round(q[49], 3),
        f"{prefix}p95_s": round(q[94], 3),
        f"{prefix}max_s": round(max(xs), 3) if xs else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=50, help="files landed and measured")
    ap.add_argument("--lines", type=int, default=10_000, help="lines per file")
    ap.add_argument("--tiny", action="store_true", help="3 files of 2,000 lines (a smoke test)")
    ap.add_argument(
        "--no-model", action="store_true", help="the contract without its star schema (a split)"
    )
    ap.add_argument(
        "--engine", choices=["duckdb", "spark"], default="duckdb", help="the watch's engine"
    )
    ap.add_argument(
        "--poll",
        type=float,
        default=None,
        help="the reader's poll, seconds (default 0.05; 0.5 on Spark, whose batches take tens)",
    )
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cache", type=Path, default=REPO / ".bench-cache", help="generated feeds")
    ap.add_argument("--results", type=Path, default=HERE / "results.jsonl")
    args = ap.parse_args(argv)
    if args.tiny:
        args.files, args.lines = 3, 2_000
    if args.poll is None:
        args.poll = 0.05 if args.engine == "duckdb" else 0.5
    name = f"watch-latency-{args.engine}" + ("-no-model" if args.no_model else "")
    print(f"{name}: {args.files} files of {args.lines:,} lines, default interval", flush=True)
    with tempfile.TemporaryDirectory(prefix="sg-watch-latency-") as tmp:
        r = measure(
            args.files,
            args.lines,
            args.poll,
            args.seed,
            Path(tmp),
            args.cache,
            not args.no_model,
            args.engine,
        )
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with args.results.open("a") as f:
        record = {
            "at": stamp,
            "pipeline": name,
            **r,
            "cpus": os.cpu_count(),
            "load": os.getloadavg(),
        }
        f.write(json.dumps(record) + "\n")
    print(
        f"{'pipeline':<29} {'files':>6} {'lines':>7} {'p50 s':>7} {'p95 s':>7} {'max s':>7}  "
        f"bounds  ok"
    )
    print(
        f"{name:<29} {r['files']:>6} {r['lines']:>7} {r['p50_s']:>7} "
        f"{r['p95_s']:>7} {r['max_s']:>7}  {'met' if r['meets_bounds'] else 'MISSED':<6}  "
        f"{'yes' if r['correct'] else 'NO'}"
    )
    b = r["breakdown"]
    print(
        f"where it went (p50 s): detect {b.get('detect_p50_s')}, run {b.get('run_p50_s')} "
        f"(first half {b['run_first_half_p50_s']}, second {b['run_second_half_p50_s']}), "
        f"visible {b.get('visible_p50_s')}; stages before publish {b['stages_p50_s']}"
    )
    return 0 if r["correct"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
