"""Side-by-side benchmark: sluicegate vs a hand-written DuckDB job vs the seed's PySpark job.

Every pipeline runs as a whole process, N times, on the same generated hostile
feed. Each run is timed (wall clock, process start to exit) and its peak memory is
the summed RSS of the whole process tree (Spark's JVM included), sampled every
50 ms. Each run's reported counts are checked against the generator's
``expected.json``: a fast wrong answer is a failure, and makes the exit code 1.

Usage::

    .venv/bin/python benchmarks/run_bench.py --scale 1m --runs 3 [--skip-spark]

Results are appended to ``benchmarks/results.jsonl`` and printed as a table.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verify_outputs import published_counts  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCALES = {"tiny": 5_000, "1m": 1_009_989, "5m": 5_000_000, "10m": 10_000_000}
SAMPLE_SECONDS = 0.05
DEFAULT_CONTRACT = REPO / "examples" / "retail" / "contract.yml"
SPARK_MASTER = "local[2]"  # both Spark rows: what baseline_spark.py runs on


def _import_generator() -> Callable[..., dict[str, Any]]:
    """The project's generator; from the source tree when sluicegate is not installed."""
    try:
        from sluicegate.datagen.retail import generate
    except ImportError:
        sys.path.insert(0, str(REPO / "src"))
        from sluicegate.datagen.retail import generate
    return generate


def _generator_version() -> int:
    _import_generator()
    from sluicegate.datagen.retail import GENERATOR_VERSION

    return GENERATOR_VERSION


# ---------------------------------------------------------------- the feed


def ensure_feed(cache: Path, lines: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """Reuse a cached feed when its expected.json says it has this size, seed and generator
    version; otherwise (re)generate it. Generating 1M lines takes ~5 s, 10M ~1 min."""
    feed = cache / f"retail-{lines}-seed{seed}"
    expected_file = feed / "expected.json"
    if expected_file.exists():
        expected = json.loads(expected_file.read_text())
        if (expected.get("raw_lines"), expected.get("seed"), expected.get("generator_version")) == (
            lines,
            seed,
            _generator_version(),
        ):
            print(f"feed: reusing {feed}", flush=True)
            return feed, expected
    print(f"feed: generating {lines:,} lines (seed {seed}) into {feed} …", flush=True)
    t0 = time.perf_counter()
    expected = _import_generator()(feed, lines, seed)
    print(f"feed: written in {time.perf_counter() - t0:.1f} s", flush=True)
    return feed, expected


# ---------------------------------------------------------------- what each pipeline reports

TRUTH_KEYS = (
    "raw_lines",
    "corrupt_lines",
    "duplicates_dropped",
    "deduplicated_rows",
    "quarantined",
    "clean",
    "fact_rows",
    "customer_dim_rows",
)


def baseline_counts(doc: dict[str, Any]) -> dict[str, Any]:
    """The baselines print the generator's own key names."""
    return doc


def sluicegate_counts(doc: dict[str, Any]) -> dict[str, Any]:
    """Map sluicegate's run metrics (``run --json``) to the generator's key names.

    sluicegate's ledger is raw = clean + quarantined + duplicates, where corrupt
    lines are quarantined too (reason ``corrupt_record``); the generator counts
    rule-quarantined rows only, so corrupt lines are subtracted. Adapt here when
    the metrics document changes.
    """
    ledger = doc.get("ledger") or {}
    out: dict[str, Any] = {}
    if "raw" in ledger:
        out["raw_lines"] = ledger["raw"]
    corrupt = ledger.get("corrupt")
    if corrupt is None and isinstance(ledger.get("quarantined_by_reason"), dict):
        corrupt = ledger["quarantined_by_reason"].get("corrupt_record")
    if corrupt is not None:
        out["corrupt_lines"] = corrupt
    if "duplicates" in ledger:
        out["duplicates_dropped"] = ledger["duplicates"]
    if "clean" in ledger:
        out["clean"] = ledger["clean"]
    quarantined = ledger.get("quarantined")
    if isinstance(quarantined, dict):
        quarantined = sum(quarantined.values())
    if quarantined is not None and corrupt is not None:
        out["quarantined"] = quarantined - corrupt
        if "clean" in out:
            out["deduplicated_rows"] = out["clean"] + out["quarantined"]
    rules = doc.get("rules") or {}
    out["rule_failures"] = {
        name: r["failed"] for name, r in rules.items() if isinstance(r, dict) and "failed" in r
    }
    return out


def truth_mismatches(reported: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """Every count the pipeline reported that differs from the ground truth.

    Only keys the pipeline reports are compared (sluicegate has no fact checksums in
    its run metrics), but a report with none of the core counts is itself a mismatch.
    """
    problems = []
    if not any(k in reported for k in ("raw_lines", "clean", "quarantined")):
        return ["no counts reported"]
    if "output_error" in reported:
        problems.append(f"outputs: {reported['output_error']}")
    for key in TRUTH_KEYS:
        if key in reported and reported[key] != expected[key]:
            problems.append(f"{key}: {reported[key]} != {expected[key]}")
    for rule, n in (reported.get("rule_failures") or {}).items():
        want = expected["rule_failures"].get(rule)
        if want is not None and n != want:
            problems.append(f"rule {rule}: {n} != {want}")
    for key, value in (reported.get("fact_checksum") or {}).items():
        want = expected["fact_checksum"].get(key)
        if want is None:
            continue
        close = abs(value - want) < 0.01 if key == "sum_amount" else value == want
        if not close:
            problems.append(f"fact_checksum.{key}: {value} != {want}")
    return problems


# ---------------------------------------------------------------- running and measuring


@dataclass
class Measured:
    rc: int
    wall_s: float
    peak_rss_bytes: int
    other_cpu_share: float  # CPU used by other processes during the run, share of all cores
    stdout: str
    stderr: str
    # user + system CPU seconds of the process tree (sampled, so it may miss the last
    # 50 ms): on a shared machine this moves far less with the load than wall time does
    cpu_s: float = 0.0


def tree_rss(proc: psutil.Process, cpu_seen: dict[int, float]) -> int:
    """Summed RSS of a process and all its descendants (0 for the ones that just ended);
    also keeps each one's CPU seconds, so the CPU taken by *other* processes can be told."""
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    rows: list[tuple[int, int, int, int]] = []
    for p in procs:
        try:
            with p.oneshot():
                m = p.memory_info()
                rows.append((p.pid, p.ppid(), m.rss, m.vms))
                t = p.cpu_times()
                cpu_seen[p.pid] = max(cpu_seen.get(p.pid, 0.0), t.user + t.system)
        except psutil.Error:
            pass
    return summed_rss(rows)


def summed_rss(rows: list[tuple[int, int, int, int]]) -> int:
    """The RSS of ``(pid, ppid, rss, vms)`` rows, each memory counted once.

    A child caught between its spawn and its ``exec`` shares its parent's address space
    (``vfork``/``posix_spawn``): it reports the parent's very RSS and VMS. Spark's JVM
    spawns such helpers (Hadoop runs ``chmod``, ``readlink`` and ``bash`` for local
    files), and counting that instant twice read 6.4 GiB for a 3.1 GiB JVM: a child whose
    RSS and VMS equal its parent's exactly is its parent's memory, not more."""
    seen = {pid: (rss, vms) for pid, _ppid, rss, vms in rows}
    return sum(rss for _pid, ppid, rss, vms in rows if not (vms and seen.get(ppid) == (rss, vms)))


def _busy_seconds() -> float:
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def wait_until_quiet(max_wait: float, threshold: float = 10.0) -> float:
    """Wait (at most max_wait s) until the machine's CPU use drops below threshold percent:
    other work on a 2-core machine distorts timings. Returns the last reading."""
    deadline = time.monotonic() + max_wait
    busy = psutil.cpu_percent(interval=1.0)
    while busy >= threshold and time.monotonic() < deadline:
        busy = psutil.cpu_percent(interval=1.0)
    return busy


def _kill_tree(proc: psutil.Process) -> None:
    """Kill a run that overran: its descendants first (Spark's JVM), then itself."""
    try:
        family = [*proc.children(recursive=True), proc]
    except psutil.Error:
        family = [proc]
    for p in family:
        try:
            p.kill()
        except psutil.Error:
            pass


def measure(argv: list[str], cwd: Path, timeout: float | None = None) -> Measured:
    """Run argv to completion (or kill it after timeout s); wall time and the process
    tree's peak RSS."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        busy0 = _busy_seconds()
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, text=True)
        peak = 0
        cpu_seen: dict[int, float] = {}
        ps = psutil.Process(proc.pid)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, tree_rss(ps, cpu_seen))
                done.wait(SAMPLE_SECONDS)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(ps)
            rc = proc.wait()
            err.write(f"\n[run_bench] killed after {timeout:.0f} s\n")
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        busy = _busy_seconds() - busy0
        others = max(0.0, busy - sum(cpu_seen.values())) / (wall * (os.cpu_count() or 1))
        out.seek(0)
        err.seek(0)
        cpu = sum(cpu_seen.values())
        return Measured(rc, wall, peak, round(others, 3), out.read(), err.read(), round(cpu, 3))


def parse_json_stdout(text: str) -> dict[str, Any] | None:
    """The one JSON document a pipeline prints (tolerating lines before it)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


@dataclass
class Pipeline:
    name: str
    argv: Callable[[Path, Path], list[str]]  # (feed, scratch dir) -> command line
    counts: Callable[[dict[str, Any]], dict[str, Any]]
    ok_codes: tuple[int, ...] = (0,)
    # scratch dir -> fact rows, checksums and dimension rows read back from the outputs
    published: Callable[[Path], dict[str, Any]] | None = None
    # (feed, scratch dir) -> an untimed run into the same scratch dir before the timed one
    # (a daily row: the day before's run, so the timed run changes tables that exist)
    before: Callable[[Path, Path], list[str]] | None = None


@dataclass
class Result:
    pipeline: str
    lines: int
    runs: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None

    @property
    def median_s(self) -> float | None:
        walls = [r["wall_s"] for r in self.runs]
        return statistics.median(walls) if walls else None

    @property
    def median_cpu_s(self) -> float | None:
        cpus = [r["cpu_s"] for r in self.runs if r.get("cpu_s") is not None]
        return statistics.median(cpus) if cpus else None

    @property
    def peak_rss_mib(self) -> float | None:
        peaks = [r["peak_rss_mib"] for r in self.runs]
        return max(peaks) if peaks else None

    @property
    def others_cpu(self) -> float | None:
        shares = [r["other_cpu_share"] for r in self.runs]
        return statistics.median(shares) if shares else None

    @property
    def correct(self) -> bool:
        return bool(self.runs) and all(r["ok"] for r in self.runs)


def run_pipeline(
    p: Pipeline,
    feed: Path,
    expected: dict[str, Any],
    runs: int,
    wait_quiet: float,
    timeout: float | None,
) -> Result:
    res = Result(p.name, expected["raw_lines"])
    for i in range(runs):
        scratch = Path(tempfile.mkdtemp(prefix=f"bench-{p.name}-"))
        try:
            if wait_quiet > 0:
                wait_until_quiet(wait_quiet)
            first = run_before(p, feed, scratch, timeout)
            load = os.getloadavg()[0]
            m = measure(p.argv(feed, scratch), REPO, timeout)
            doc = parse_json_stdout(m.stdout)
            ok_exit = m.rc in p.ok_codes and doc is not None and first is None
            # what the run published, read back after it exited (outside the timing)
            published = p.published(scratch) if p.published is not None and ok_exit else {}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        reported: dict[str, Any] = {}
        if first is not None:
            problems = [first]
        elif not ok_exit:
            problems = [f"exit code {m.rc}" + ("" if doc else ", no JSON on stdout")]
        else:
            reported = {**p.counts(doc), **published}
            problems = truth_mismatches(reported, expected)
        run = {
            "run": i + 1,
            "rc": m.rc,
            "wall_s": round(m.wall_s, 3),
            "cpu_s": m.cpu_s,
            "peak_rss_mib": round(m.peak_rss_bytes / 2**20, 1),
            "load_before": round(load, 2),
            "other_cpu_share": m.other_cpu_share,
            "ok": not problems,
            "problems": problems,
            "reported": reported,
        }
        failed_to_report = m.rc not in p.ok_codes or doc is None
        if failed_to_report:
            run["stderr_tail"] = m.stderr[-2000:]
        res.runs.append(run)
        status = "ok" if not problems else "WRONG: " + "; ".join(problems[:4])
        print(
            f"  {p.name} run {i + 1}/{runs}: {m.wall_s:.2f} s ({m.cpu_s:.1f} CPU s), "
            f"{m.peak_rss_bytes / 2**20:.0f} MiB, others used {m.other_cpu_share:.0%} of the CPUs, "
            f"{status}",
            flush=True,
        )
        if failed_to_report:
            print("    " + m.stderr[-800:].strip().replace("\n", "\n    "), flush=True)
    return res


def run_before(p: Pipeline, feed: Path, scratch: Path, timeout: float | None) -> str | None:
    """Run ``p.before`` (untimed) into ``scratch``; what went wrong, or None."""
    if p.before is None:
        return None
    m = measure(p.before(feed, scratch), REPO, timeout)
    if m.rc in p.ok_codes:
        return None
    return f"the day before's run failed: exit code {m.rc}: " + m.stderr[-300:].strip()


#: A daily row's two logical dates: the untimed run of the day before publishes into the
#: scratch warehouse, the timed run is the next day's — every table it changes already
#: exists (the DLQ inbox, the ledger, the facts, the clean rows of another date), which is
#: what a scheduled run pays; a first run into a fresh warehouse creates them instead.
DAY_BEFORE, DAY = "2026-01-01", "2026-01-02"

#: the Iceberg rows' catalog (a SQLite file in the run's scratch dir) and namespace
ICEBERG_NAMESPACE = "bench"


def as_format(contract: Path, table_format: str, tmp: Path) -> Path:
    """A copy of ``contract`` in ``tmp`` with ``outputs.format`` set (its paths are all
    ``--var``s, so the copy reads the same feed). Iceberg adds a SQLite catalog in ``tmp``
    and publishes into its namespace ``bench``."""
    text = contract.read_text(encoding="utf-8")
    out = tmp / f"contract-{table_format}.yml"
    keys = f"  format: {table_format}\n"
    if table_format == "iceberg":
        keys += f"  catalog: lake\n  namespace: {ICEBERG_NAMESPACE}\n"
        catalog = (
            f'catalogs:\n  lake: {{type: sql, uri: "sqlite:///{tmp / "catalog.db"}", '
            f'warehouse: "{tmp / "iceberg"}"}}\n'
        )
        text = text.replace("\noutputs:\n", f"\n{catalog}outputs:\n", 1)
    out.write_text(text.replace("\noutputs:\n", f"\noutputs:\n{keys}", 1))
    return out


def sluicegate_pipeline(
    name: str,
    exe: Path,
    contract: Path,
    warehouse: str,
    engine_args: list[str],
    table_format: str | None = None,
    *,
    daily: bool = False,
) -> Pipeline:
    """``sluicegate run`` of the contract on the feed, writing into the run's scratch dir;
    its published outputs are read back and checked as well as its metrics.
    ``table_format`` runs a copy of the contract with that ``outputs.format``. ``daily``
    times the run of :data:`DAY` after an untimed run of :data:`DAY_BEFORE` into the same
    warehouse, and reads back only that day's facts (the day before's must be there)."""

    def command(feed: Path, tmp: Path, day: str | None) -> list[str]:
        path = as_format(contract, table_format, tmp) if table_format else contract
        return [
            str(exe),
            "run",
            str(path),
            *engine_args,
            "--var",
            f"root={feed}",
            "--var",
            f"warehouse={tmp / warehouse}",
            "--var",  # the fact export too, or it lands beside the example contract
            f"export={tmp / 'export'}",
            *(["--logical-date", day] if day else []),
            "--json",
        ]

    return Pipeline(
        name,
        lambda feed, tmp: command(feed, tmp, DAY if daily else None),
        sluicegate_counts,
        ok_codes=(0, 1),  # 1 = the gate failed: still a finished, countable run
        published=lambda tmp: published_counts(
            tmp / warehouse,
            tmp / "export",
            table_format=table_format,
            root=tmp,
            logical_date=DAY if daily else None,
        ),
        before=(lambda feed, tmp: command(feed, tmp, DAY_BEFORE)) if daily else None,
    )


def pipelines(args: argparse.Namespace) -> tuple[list[Pipeline], list[Result]]:
    """The pipelines to run, and the ones skipped (with why)."""
    py = sys.executable
    chosen: list[Pipeline] = []
    skipped: list[Result] = []
    lines = SCALES[args.scale]
    contract = args.contract
    exe = args.sluicegate_bin
    if not contract.exists():
        skipped.append(Result("sluicegate", lines, skipped=f"no contract at {contract}"))
    elif exe is None:
        skipped.append(Result("sluicegate", lines, skipped="no sluicegate executable found"))
    else:
        chosen.append(sluicegate_pipeline("sluicegate", exe, contract, "warehouse.duckdb", []))
        # the next day's run into the same warehouse file: what a scheduled run pays
        chosen.append(
            sluicegate_pipeline(
                "sluicegate-daily", exe, contract, "warehouse.duckdb", [], daily=True
            )
        )
        # the same run with outputs.format: delta (DuckDB computes, delta-rs publishes)
        chosen.append(
            sluicegate_pipeline("sluicegate-delta", exe, contract, "warehouse", [], "delta")
        )
        # outputs.format: iceberg (DuckDB computes, pyiceberg publishes into a SQL catalog)
        chosen.append(
            sluicegate_pipeline("sluicegate-iceberg", exe, contract, "warehouse", [], "iceberg")
        )
        # the next day's run into the same lake tables: the date tables exist, so the run
        # finds which dates changed against them (it once compared every earlier date)
        for fmt in ("delta", "iceberg"):
            chosen.append(
                sluicegate_pipeline(
                    f"sluicegate-{fmt}-daily", exe, contract, "warehouse", [], fmt, daily=True
                )
            )
    spark_skip = None  # why the Spark rows are skipped
    if args.skip_spark:
        spark_skip = "--skip-spark"
    elif not _importable("pyspark"):
        spark_skip = "pyspark is not installed"
    if not contract.exists() or exe is None:
        pass  # the sluicegate row above already says why
    elif spark_skip:
        skipped.append(Result("sluicegate-spark", lines, skipped=spark_skip))
        skipped.append(Result("sluicegate-spark-daily", lines, skipped=spark_skip))
    else:
        # Spark + Delta (the Spark default format); local[2] as baseline_spark.py
        spark = ["--engine", "spark", "--spark-master", SPARK_MASTER]
        chosen.append(sluicegate_pipeline("sluicegate-spark", exe, contract, "warehouse", spark))
        # the next day's run on Spark: each Delta table it changes is staged (cloned) first
        chosen.append(
            sluicegate_pipeline(
                "sluicegate-spark-daily", exe, contract, "warehouse", spark, daily=True
            )
        )
    chosen.append(
        Pipeline(
            "duckdb-baseline",
            lambda feed, tmp: [
                py,
                str(HERE / "baseline_duckdb.py"),
                "--src",
                str(feed),
                "--out",
                str(tmp),
            ],
            baseline_counts,
        )
    )
    if spark_skip:
        skipped.append(Result("spark-baseline", lines, skipped=spark_skip))
    else:
        chosen.append(
            Pipeline(
                "spark-baseline",
                lambda feed, tmp: [
                    py,
                    str(HERE / "baseline_spark.py"),
                    "--src",
                    str(feed),
                    "--out",
                    str(tmp),
                ],
                baseline_counts,
            )
        )
    wanted = set(args.only or [])
    if wanted:
        chosen = [p for p in chosen if p.name in wanted]
    return chosen, skipped


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _default_sluicegate_bin() -> Path | None:
    beside = Path(sys.executable).parent / "sluicegate"
    if beside.exists():
        return beside
    found = shutil.which("sluicegate")
    return Path(found) if found else None


# ---------------------------------------------------------------- compile speed


def compile_check(exe: Path | None, n_rules: int = 500) -> dict[str, Any]:
    """Time ``sluicegate compile`` on a generated contract with n_rules rules: contract
    loading and SQL generation must stay fast when a feed has hundreds of rules."""
    if exe is None:
        return {"check": "compile", "skipped": "no sluicegate executable found"}
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        root = Path(tmp)
        (root / "data.json").write_text('{"c0": 1}\n')
        columns = "".join(f"    c{i}: INTEGER\n" for i in range(10))
        rules = "".join(
            f"  - name: rule_{i:03d}\n    expect: c{i % 10} IS NOT NULL AND c{i % 10} > {i}\n"
            for i in range(n_rules)
        )
        contract = root / "many_rules.yml"
        contract.write_text(
            "name: many_rules\n"
            "source:\n  name: wide\n  path: ${root}/data.json\n  format: ndjson\n"
            f"  columns:\n{columns}"
            f"rules:\n{rules}"
            "outputs:\n  warehouse: ${root}/warehouse.duckdb\n  clean: wide_clean\n"
            "  quarantine: wide_dlq\n  duplicates: wide_duplicates\n  facts: quality_facts\n"
        )
        argv = [str(exe), "compile", str(contract), "--dialect", "duckdb", "--var", f"root={root}"]
        m = measure(argv, REPO)
    rec: dict[str, Any] = {"check": "compile", "rules": n_rules, "rc": m.rc}
    if m.rc != 0:
        rec["skipped"] = f"sluicegate compile failed (exit {m.rc}): {m.stderr.strip()[-300:]}"
    else:
        rec.update(wall_s=round(m.wall_s, 3), sql_chars=len(m.stdout))
    return rec


# ---------------------------------------------------------------- report


def table(results: list[Result]) -> str:
    by_name = {r.pipeline: r for r in results}

    def ratio(r: Result, ref: str) -> str:
        base = by_name.get(ref)
        if r.median_s is None or base is None or not base.median_s:
            return "—"
        return f"{r.median_s / base.median_s:.2f}x"

    def cpu_ratio(r: Result, ref: str) -> str:
        base = by_name.get(ref)
        if r.median_cpu_s is None or base is None or not base.median_cpu_s:
            return "—"
        return f"{r.median_cpu_s / base.median_cpu_s:.2f}x"

    head = (
        "pipeline",
        "lines",
        "median s",
        "rows/s",
        "peak RSS MiB",
        "vs duckdb",
        "vs spark",
        "CPU s",
        "CPU vs duckdb",
        "CPU vs spark",
        "others' CPU",
        "truth",
    )
    rows = [head]
    for r in results:
        if r.skipped:
            rows.append((r.pipeline, f"{r.lines:,}", *["—"] * 9, f"skipped: {r.skipped}"))
            continue
        med = r.median_s or 0.0
        truth = "ok" if r.correct else "WRONG"
        rows.append(
            (
                r.pipeline,
                f"{r.lines:,}",
                f"{med:.2f}",
                f"{r.lines / med:,.0f}" if med else "—",
                f"{r.peak_rss_mib:,.0f}",
                ratio(r, "duckdb-baseline"),
                ratio(r, "spark-baseline"),
                f"{r.median_cpu_s:.1f}" if r.median_cpu_s is not None else "—",
                cpu_ratio(r, "duckdb-baseline"),
                cpu_ratio(r, "spark-baseline"),
                f"{r.others_cpu or 0:.0%}",
                truth,
            )
        )
    return aligned(rows)


def aligned(rows: list[tuple[str, ...]]) -> str:
    """Rows as a plain-text table: the first row is the header, underlined; the first and
    last columns (names, verdicts) left-aligned, the figures between them right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    last = len(widths) - 1
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                c.ljust(w) if i in (0, last) else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def table_doc(stamp: str, args: argparse.Namespace, results: list[Result]) -> dict[str, Any]:
    """The printed table as data, so a later run can be compared with it (bench_compare.py)."""
    return {
        "at": stamp,
        "scale": args.scale,
        "seed": args.seed,
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "rows": [
            {
                "pipeline": r.pipeline,
                "lines": r.lines,
                "median_s": r.median_s,
                "median_cpu_s": r.median_cpu_s,
                "peak_rss_mib": r.peak_rss_mib,
                "others_cpu": r.others_cpu,
                "walls_s": [run["wall_s"] for run in r.runs],
                "truth": None if r.skipped else ("ok" if r.correct else "WRONG"),
                "skipped": r.skipped,
            }
            for r in results
        ],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", choices=list(SCALES), default="1m")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cache", type=Path, default=REPO / ".bench-cache", help="generated feeds")
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument(
        "--only", action="append", metavar="PIPELINE", help="run only these (repeatable)"
    )
    ap.add_argument("--contract", type=Path, default=DEFAULT_CONTRACT)
    ap.add_argument("--sluicegate-bin", type=Path, default=_default_sluicegate_bin())
    ap.add_argument("--results", type=Path, default=HERE / "results.jsonl")
    ap.add_argument(
        "--table-json",
        type=Path,
        default=HERE / "last_run.json",
        help="this run's table as JSON (read by bench_compare.py; `make bench-compare`)",
    )
    ap.add_argument("--no-compile-check", action="store_true")
    ap.add_argument("--no-serve-check", action="store_true", help="skip the PostgreSQL serve row")
    ap.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="kill a run (and its process tree) after this long; it counts as failed (0 = never)",
    )
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each run, wait up to this long for the machine's CPU use to drop below 10%%",
    )
    args = ap.parse_args(argv)

    feed, expected = ensure_feed(args.cache.resolve(), SCALES[args.scale], args.seed)
    # sluicegate's bytecode, as an installed wheel has it: an editable install run with
    # PYTHONDONTWRITEBYTECODE=1 would compile every module from source in every timed
    # process (0.2-0.3 CPU s; benchmarks/startup_bench.py)
    compileall.compile_dir(str(REPO / "src" / "sluicegate"), quiet=1)
    chosen, skipped = pipelines(args)
    for s in skipped:
        print(f"{s.pipeline}: skipped — {s.skipped}", flush=True)
    results = []
    for p in chosen:
        print(f"{p.name}: {args.runs} run(s) on {expected['raw_lines']:,} lines", flush=True)
        results.append(
            run_pipeline(p, feed, expected, args.runs, args.wait_quiet, args.timeout or None)
        )
    compile_rec = None if args.no_compile_check else compile_check(args.sluicegate_bin)
    serve_rec = None
    if not args.no_serve_check:  # the retail run with a serve: target (serve_bench.py)
        from serve_bench import serve_check

        print("serve check: one run that serves into PostgreSQL", flush=True)
        serve_rec = serve_check(args.sluicegate_bin, args.contract, feed, expected)

    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as f:
        for r in results + skipped:
            f.write(
                json.dumps(
                    {
                        "at": stamp,
                        "scale": args.scale,
                        "seed": args.seed,
                        "pipeline": r.pipeline,
                        "lines": r.lines,
                        "median_s": r.median_s,
                        "median_cpu_s": r.median_cpu_s,
                        "peak_rss_mib": r.peak_rss_mib,
                        "correct": r.correct if not r.skipped else None,
                        "skipped": r.skipped,
                        "runs": r.runs,
                        "cpus": os.cpu_count(),
                    }
                )
                + "\n"
            )
        if compile_rec is not None:
            f.write(json.dumps({"at": stamp, **compile_rec}) + "\n")
        if serve_rec is not None:
            f.write(json.dumps({"at": stamp, "scale": args.scale, **serve_rec}) + "\n")

    args.table_json.write_text(json.dumps(table_doc(stamp, args, results + skipped), indent=2))
    print()
    print(table(results + skipped))
    if compile_rec is not None:
        if "skipped" in compile_rec:
            print(f"\ncompile check: skipped — {compile_rec['skipped']}")
        else:
            print(
                f"\ncompile check: sluicegate compile, {compile_rec['rules']} rules, duckdb: "
                f"{compile_rec['wall_s']:.2f} s (whole process)"
            )
    if serve_rec is not None:
        from serve_bench import describe

        print("\n" + describe(serve_rec))
    print(f"\nresults appended to {args.results}")
    wrong = [r.pipeline for r in results if not r.correct]
    if serve_rec is not None and "skipped" not in serve_rec and not serve_rec["correct"]:
        wrong.append("serve")
    if wrong:
        print(f"GROUND TRUTH NOT MET by: {', '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
