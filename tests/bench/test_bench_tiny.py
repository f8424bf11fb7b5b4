"""The benchmark's foundations at a tiny size: the generator and the DuckDB baseline.

The generator's ground truth is what every benchmark run is judged against, so it
is checked here against an independent recount: plain Python reads every line the
generator wrote, parses it with ``json``, dedupes and applies the eight rules
itself. The DuckDB baseline must then reproduce that truth exactly. Timings are
never asserted.
"""

from __future__ import annotations

import bisect
import datetime as dt
import importlib.util
import json
import subprocess
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sluicegate.datagen.retail import generate

REPO = Path(__file__).resolve().parents[2]
LINES = 3_000
FORMATS = ("%Y-%m-%dT%H:%M:%SZ", "%d/%m/%Y %H:%M:%S")
ASC_COLUMNS = (
    "order_ts",
    "customer_id",
    "product_id",
    "store_id",
    "channel",
    "quantity",
    "unit_price",
)
DECLARED = ("sale_id", "ingested_at", *ASC_COLUMNS)
TRUTH_KEYS = (
    "raw_lines",
    "corrupt_lines",
    "duplicates_dropped",
    "deduplicated_rows",
    "rule_failures",
    "quarantined",
    "clean",
    "fact_rows",
    "customer_dim_rows",
    "fact_checksum",
    "sale_files",
)


@pytest.fixture(scope="module")
def feed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("feed")
    return out, generate(out, LINES, seed=42)


def load_run_bench() -> ModuleType:
    """benchmarks/ is scripts, not a package: load the harness by path."""
    spec = importlib.util.spec_from_file_location("run_bench", REPO / "benchmarks" / "run_bench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the independent recount


def parse_ts(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    for fmt in FORMATS:
        try:
            return dt.datetime.strptime(value, fmt)
        except ValueError:
            continue
    return None


def survivor(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """First row by ingested_at DESC NULLS LAST, then ASC_COLUMNS ASC NULLS LAST, file, line."""

    def asc(v: Any) -> tuple[bool, Any]:
        return (v is None, 0 if v is None else v)

    ordered = sorted(
        rows, key=lambda r: (*(asc(r.get(c)) for c in ASC_COLUMNS), r["_file"], r["_line"])
    )
    # A stable sort with reverse=True keeps the order above among equal ingested_at values.
    ordered.sort(
        key=lambda r: (r.get("ingested_at") is not None, r.get("ingested_at") or ""), reverse=True
    )
    return ordered[0]


def recount(feed_dir: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The ground truth recomputed from the written files, and hostility statistics."""
    stats: dict[str, int] = defaultdict(int)
    files = sorted((feed_dir / "sales").glob("month=*/part-*.json"))
    raw = corrupt = 0
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for path in files:
        file_month = path.parent.name.removeprefix("month=")
        text = path.read_bytes().decode("utf-8")
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            raw += 1
            try:
                obj = json.loads(line, parse_float=Decimal)
            except ValueError:
                obj = None
            if not isinstance(obj, dict):
                corrupt += 1
                stats["corrupt_object_like" if line.startswith("{") else "corrupt_garbage"] += 1
                continue
            obj.update(_file=str(path), _line=number)
            groups[obj.get("sale_id") or object()].append(obj)
            ts = parse_ts(obj.get("order_ts"))
            stats["ts_iso"] += isinstance(obj.get("order_ts"), str) and "T" in obj["order_ts"]
            stats["ts_dmy"] += isinstance(obj.get("order_ts"), str) and "/" in obj["order_ts"]
            stats["promo_code"] += "promo_code" in obj
            stats["shuffled_keys"] += next(iter(obj)) != "sale_id"
            stats["absent_keys"] += any(k not in obj for k in DECLARED)
            stats["null_values"] += any(obj.get(k, 0) is None for k in DECLARED)
            stats["ingested_null"] += obj.get("ingested_at") is None
            if ts is not None and ts.strftime("%Y-%m") < file_month:
                stats["late_lines"] += 1

    products = {
        json.loads(x)["product_id"] for x in (feed_dir / "products.json").read_text().splitlines()
    }
    stores = {
        json.loads(x)["store_id"] for x in (feed_dir / "stores.json").read_text().splitlines()
    }
    cdc_lines = (feed_dir / "customers_cdc.json").read_text().splitlines()
    events = {tuple(sorted(json.loads(x).items())) for x in cdc_lines}
    versions: dict[str, list[dt.datetime]] = defaultdict(list)
    for event in events:
        e = dict(event)
        versions[e["customer_id"]].append(dt.datetime.strptime(e["effective_ts"], FORMATS[0]))
    for effs in versions.values():
        effs.sort()
    stats["cdc_exact_duplicates"] = len(cdc_lines) - len(events)
    keys = [(json.loads(x)["customer_id"], json.loads(x)["effective_ts"]) for x in cdc_lines]
    stats["cdc_unsorted"] = int(keys != sorted(keys))

    failures = dict.fromkeys(
        (
            "non_null_customer",
            "non_null_product",
            "non_null_store",
            "positive_quantity",
            "valid_price",
            "known_product",
            "known_store",
            "parseable_order_ts",
        ),
        0,
    )
    quarantined = clean = sum_quantity = sum_version = 0
    sum_amount = Decimal(0)
    for rows in groups.values():
        if len(rows) > 1:
            stats["duplicates_across_files"] += len({r["_file"] for r in rows}) > 1
            ingested = [r.get("ingested_at") for r in rows if r.get("ingested_at") is not None]
            payloads = {tuple(str(r.get(c)) for c in ASC_COLUMNS) for r in rows}
            stats["tie_resends"] += len(ingested) != len(set(ingested)) and len(payloads) > 1
        s = survivor(rows)
        q, p, ts = s.get("quantity"), s.get("unit_price"), parse_ts(s.get("order_ts"))
        failed = {
            "non_null_customer": s.get("customer_id") is None,
            "non_null_product": s.get("product_id") is None,
            "non_null_store": s.get("store_id") is None,
            "positive_quantity": q is None or q <= 0,
            "valid_price": p is None or p < 0,
            "known_product": s.get("product_id") is not None and s["product_id"] not in products,
            "known_store": s.get("store_id") is not None and s["store_id"] not in stores,
            "parseable_order_ts": ts is None,
        }
        for name, bad in failed.items():
            failures[name] += bad
        if any(failed.values()):
            quarantined += 1
            continue
        clean += 1
        effs = versions[s["customer_id"]]
        version = bisect.bisect_right(effs, ts)
        assert version >= 1, f"{s['customer_id']} has no version at {ts}"
        stats["boundary_sales"] += ts in effs[1:]
        sum_quantity += q
        sum_amount += q * p
        sum_version += version

    truth = {
        "raw_lines": raw,
        "corrupt_lines": corrupt,
        "duplicates_dropped": raw - corrupt - len(groups),
        "deduplicated_rows": len(groups),
        "rule_failures": failures,
        "quarantined": quarantined,
        "clean": clean,
        "fact_rows": clean,
        "customer_dim_rows": len(events),
        "fact_checksum": {
            "sum_quantity": sum_quantity,
            "sum_amount": float(round(sum_amount, 2)),
            "sum_customer_version": sum_version,
        },
        "sale_files": len(files),
    }
    return truth, dict(stats)


# ---------------------------------------------------------------- the tests


def test_ground_truth_matches_an_independent_recount(feed: tuple[Path, dict[str, Any]]) -> None:
    out, expected = feed
    truth, _ = recount(out)
    assert {k: expected[k] for k in TRUTH_KEYS} == truth
    assert json.loads((out / "expected.json").read_text()) == expected


def test_feed_is_hostile_even_when_tiny(feed: tuple[Path, dict[str, Any]]) -> None:
    out, expected = feed
    _, stats = recount(out)
    for kind in (
        "corrupt_object_like",
        "corrupt_garbage",
        "ts_iso",
        "ts_dmy",
        "promo_code",
        "shuffled_keys",
        "absent_keys",
        "null_values",
        "ingested_null",
        "late_lines",
        "duplicates_across_files",
        "tie_resends",
        "cdc_exact_duplicates",
        "cdc_unsorted",
        "boundary_sales",
    ):
        assert stats.get(kind, 0) > 0, f"no {kind} in a {LINES}-line feed: {stats}"
    assert all(n > 0 for n in expected["rule_failures"].values()), expected["rule_failures"]
    assert 0 < expected["quarantined"] <= sum(expected["rule_failures"].values())


def test_generator_is_deterministic(tmp_path: Path, feed: tuple[Path, dict[str, Any]]) -> None:
    first, _ = feed

    def snapshot(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    again = tmp_path / "again"
    generate(again, LINES, seed=42)
    assert snapshot(again) == snapshot(first)
    other = tmp_path / "other"
    generate(other, LINES, seed=43)
    assert snapshot(other) != snapshot(first)


def test_small_part_files_split_the_months(tmp_path: Path) -> None:
    truth = generate(tmp_path, 2_000, seed=1, part_lines=50)
    parts = sorted((tmp_path / "sales").glob("month=*/part-*.json"))
    assert truth["sale_files"] == len(parts) > 18
    assert sum(len(p.read_text().splitlines()) for p in parts) == 2_000


@pytest.mark.duckdb
def test_duckdb_baseline_reproduces_the_ground_truth(
    tmp_path: Path, feed: tuple[Path, dict[str, Any]]
) -> None:
    src, expected = feed
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "baseline_duckdb.py"),
            "--src",
            str(src),
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reported = json.loads(done.stdout)
    assert {k: reported[k] for k in TRUTH_KEYS} == {k: expected[k] for k in TRUTH_KEYS}
    assert load_run_bench().truth_mismatches(reported, expected) == []
    assert list((tmp_path / "fact_sales").glob("year=*/month=*/*.parquet"))


def test_truth_check_catches_a_wrong_count(feed: tuple[Path, dict[str, Any]]) -> None:
    _, expected = feed
    check = load_run_bench().truth_mismatches
    wrong = json.loads(json.dumps(expected))
    wrong["rule_failures"]["known_store"] += 1
    wrong["fact_checksum"]["sum_amount"] += 1
    assert check(wrong, expected) == [
        f"rule known_store: {wrong['rule_failures']['known_store']} != "
        f"{expected['rule_failures']['known_store']}",
        f"fact_checksum.sum_amount: {wrong['fact_checksum']['sum_amount']} != "
        f"{expected['fact_checksum']['sum_amount']}",
    ]
    assert check({}, expected) == ["no counts reported"]


def test_sluicegate_metrics_map_to_the_generator_keys(feed: tuple[Path, dict[str, Any]]) -> None:
    """sluicegate quarantines corrupt lines too; the mapping takes them back out."""
    _, e = feed
    doc = {
        "ledger": {
            "raw": e["raw_lines"],
            "clean": e["clean"],
            "quarantined": e["quarantined"] + e["corrupt_lines"],
            "duplicates": e["duplicates_dropped"],
            "corrupt": e["corrupt_lines"],
        },
        "rules": {name: {"failed": n, "share": 0.0} for name, n in e["rule_failures"].items()},
    }
    bench = load_run_bench()
    counts = bench.sluicegate_counts(doc)
    assert counts["deduplicated_rows"] == e["deduplicated_rows"]
    assert bench.truth_mismatches(counts, e) == []


@pytest.mark.duckdb
def test_harness_runs_the_duckdb_baseline_at_tiny_scale(tmp_path: Path) -> None:
    record = _run_harness(tmp_path, "duckdb-baseline")
    assert record["correct"] is True
    assert record["runs"][0]["peak_rss_mib"] > 0
    # the saved table (make bench-compare's input) says the same
    saved = json.loads((tmp_path / "table.json").read_text())
    row = next(r for r in saved["rows"] if r["pipeline"] == "duckdb-baseline")
    assert row["truth"] == "ok" and row["median_s"] == record["median_s"]


def test_a_failed_day_before_fails_the_row_not_the_harness(
    tmp_path: Path, feed: tuple[Path, dict[str, Any]]
) -> None:
    """A daily row whose untimed run of the day before fails is a wrong row with the reason,
    and the timed run's own success does not hide it."""
    src, expected = feed
    bench = load_run_bench()
    ok = [sys.executable, "-c", "print('{}')"]
    p = bench.Pipeline(
        "daily-probe",
        lambda _feed, _tmp: ok,
        lambda _doc: {},
        before=lambda _feed, _tmp: [sys.executable, "-c", "raise SystemExit(3)"],
    )
    res = bench.run_pipeline(p, src, expected, runs=1, wait_quiet=0, timeout=60)
    assert not res.correct
    assert res.runs[0]["problems"][0].startswith("the day before's run failed: exit code 3")


def _load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_compare_flags_a_slowdown_and_a_truth_miss(tmp_path: Path) -> None:
    """bench-compare reads the committed RESULTS.md table and flags (``!``) a pipeline whose
    CPU seconds grew past the tolerance, or whose truth check failed; the rest pass."""
    compare = _load_script("bench_compare")
    base = compare.committed_table(REPO / "benchmarks" / "RESULTS.md")
    assert {"sluicegate", "duckdb-baseline"} <= set(base)
    ref = base["sluicegate"]

    def row(name: str, cpu_factor: float, truth: str = "ok") -> dict[str, Any]:
        was = base[name]
        return {
            "pipeline": name,
            "lines": was["lines"],
            "median_s": was["median_s"],
            "median_cpu_s": was["median_cpu_s"] * cpu_factor,
            "peak_rss_mib": was["peak_rss_mib"],
            "truth": truth,
            "skipped": None,
        }

    last = {
        "at": "now",
        "scale": "1m",
        "runs": 3,
        "rows": [row("sluicegate", 1.0), row("duckdb-baseline", 1.5)],
    }
    lines = compare.compare(last, base, 0.15)
    flagged = [ln.split()[1] for ln in lines if ln.startswith("!")]
    assert flagged == ["duckdb-baseline"]
    last["rows"] = [row("sluicegate", 0.9, truth="WRONG")]
    assert [ln.split()[1] for ln in compare.compare(last, base, 0.15) if ln[0] == "!"] == [
        "sluicegate"
    ]
    assert ref["lines"] > 1_000_000


def _run_harness(tmp_path: Path, only: str, timeout: int = 300) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "run_bench.py"),
            "--scale",
            "tiny",
            "--runs",
            "1",
            "--only",
            only,
            "--no-compile-check",
            "--cache",
            str(tmp_path / "cache"),
            "--results",
            str(tmp_path / "results.jsonl"),
            "--table-json",
            str(tmp_path / "table.json"),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    return next(r for r in records if r["pipeline"] == only)


@pytest.mark.duckdb
@pytest.mark.parametrize(
    "row",
    [
        "sluicegate",
        "sluicegate-daily",
        "sluicegate-delta",
        "sluicegate-iceberg",
        "sluicegate-delta-daily",
        "sluicegate-iceberg-daily",
    ],
)
def test_harness_checks_what_sluicegate_published(tmp_path: Path, row: str) -> None:
    """The sluicegate rows (DuckDB file; DuckDB + Delta; DuckDB + Iceberg) are judged on
    their metrics *and* on what they published, read back after the run: the DuckDB file's
    fact export and dimension table; Delta's and Iceberg's fact and dimension tables
    themselves (through delta-rs's file list, through pyiceberg), which the export must
    equal: fact rows and checksums, dimension rows. The daily row's timed run is the
    second date into one warehouse: its day's facts alone equal the truth."""
    record = _run_harness(tmp_path, row)
    assert record["correct"] is True, record["runs"]
    reported = record["runs"][0]["reported"]
    expected = json.loads(
        next((tmp_path / "cache").glob("retail-5000-*/expected.json")).read_text()
    )
    assert reported["fact_checksum"] == expected["fact_checksum"]
    assert reported["fact_rows"] == expected["fact_rows"]
    assert reported["customer_dim_rows"] == expected["customer_dim_rows"]


def _sluicegate_run(src: Path, wh: Path, export: Path, day: str | None = None) -> None:
    """``sluicegate run`` of the retail contract into ``wh`` and ``export`` (for ``day``)."""
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "sluicegate"),
            "run",
            str(REPO / "examples/retail/contract.yml"),
            "--var",
            f"root={src}",
            "--var",
            f"warehouse={wh}",
            "--var",
            f"export={export}",
            *(["--logical-date", day] if day else []),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]


@pytest.mark.duckdb
def test_published_outputs_are_read_back_not_taken_from_the_metrics(
    tmp_path: Path, feed: tuple[Path, dict[str, Any]]
) -> None:
    """A run whose export lost a partition fails the truth check, whatever its metrics say."""
    src, expected = feed
    wh, export = tmp_path / "w.duckdb", tmp_path / "export"
    _sluicegate_run(src, wh, export)
    bench = load_run_bench()
    whole = bench.published_counts(wh, export)
    assert bench.truth_mismatches({"raw_lines": expected["raw_lines"], **whole}, expected) == []
    next(export.glob("fct_sales/*/*/*.parquet")).unlink()
    lost = bench.published_counts(wh, export)
    problems = bench.truth_mismatches({"raw_lines": expected["raw_lines"], **lost}, expected)
    assert any(p.startswith("fact_rows:") for p in problems)
    assert any(p.startswith("fact_checksum.sum_quantity:") for p in problems)


@pytest.mark.duckdb
def test_a_daily_row_counts_its_day_and_needs_the_day_before(
    tmp_path: Path, feed: tuple[Path, dict[str, Any]]
) -> None:
    """A daily row reads back only its day's facts (two dates in the outputs would double
    them), and a warehouse holding no earlier date fails it: the timed run was a first run."""
    src, expected = feed
    bench = load_run_bench()
    wh, export = tmp_path / "w.duckdb", tmp_path / "export"
    _sluicegate_run(src, wh, export, bench.DAY)
    first_only = bench.published_counts(wh, export, logical_date=bench.DAY)
    assert "not a daily run" in first_only["output_error"]
    _sluicegate_run(src, wh, export, bench.DAY_BEFORE)
    daily = bench.published_counts(wh, export, logical_date=bench.DAY)
    assert bench.truth_mismatches({"raw_lines": expected["raw_lines"], **daily}, expected) == []
    both = bench.published_counts(wh, export)
    assert both["fact_rows"] == 2 * expected["fact_rows"]


@pytest.mark.spark
@pytest.mark.parametrize("row", ["sluicegate-spark", "sluicegate-spark-daily"])
def test_harness_runs_sluicegate_on_spark_at_tiny_scale(tmp_path: Path, row: str) -> None:
    """The ``sluicegate-spark`` rows: the product on the Spark engine meets the same truth,
    its published outputs (Delta tables) read back like DuckDB's; the daily row's timed run
    changes the tables the day before's run published."""
    record = _run_harness(tmp_path, row, timeout=900)
    assert record["correct"] is True, record["runs"]
    reported = record["runs"][0]["reported"]
    assert reported["raw_lines"] == 5_000
    assert "fact_checksum" in reported and "customer_dim_rows" in reported


@pytest.mark.duckdb
def test_watch_latency_row_at_tiny_scale(tmp_path: Path) -> None:
    """The ``watch-latency-duckdb`` row (benchmarks/watch_latency.py) at two files of 1,000
    lines: every landed file seen committed, its rows reconciled line by line; and the
    reconciliation bites — a line count one off, a file left out, a wrong corrupt total."""
    bench = _load_script("watch_latency")
    root = tmp_path / "run"
    root.mkdir()
    record = bench.measure(2, 1_000, 0.05, 42, root, tmp_path / "cache")
    assert record["correct"] is True, record["problems"]
    assert record["p50_s"] > 0 and record["max_s"] >= record["p95_s"] >= record["p50_s"]
    db = root / "wh.duckdb"
    landed = [
        (str(p), len(p.read_text().splitlines()))
        for p in sorted((root / "land" / "sales").glob("month=*/land-*.json"))
    ]
    assert [n for _, n in landed] == [1_000] * 3  # the warm-up file and the two measured
    expected = json.loads(
        next((tmp_path / "cache").glob("retail-3000-*/expected.json")).read_text()
    )
    assert bench.reconcile(db, landed, expected) == []
    off = [landed[0], (landed[1][0], landed[1][1] + 1), landed[2]]
    assert any(landed[1][0] in p for p in bench.reconcile(db, off, expected))
    assert any("never landed" in p for p in bench.reconcile(db, landed[:2], expected))
    wrong = {**expected, "corrupt_lines": expected["corrupt_lines"] + 1}
    assert any(p.startswith("corrupt lines") for p in bench.reconcile(db, landed, wrong))


def test_watch_latency_reads_a_spark_warehouse_of_delta_tables(tmp_path: Path) -> None:
    """``--engine spark``: the reader sees a folder of Delta tables (written here by
    delta-rs, as a stand-in for the Spark engine's) through the same queries; before the
    file ledger exists, and before the run record names the file's run, nothing is seen."""
    import pyarrow as pa
    from deltalake import write_deltalake

    bench = _load_script("watch_latency")
    wh = tmp_path / "warehouse"
    wh.mkdir()
    path = "/land/sales/month=2026-12/land-001.json"
    files = pa.table(
        {"contract": [bench.CONTRACT_NAME], "path": [path], "run_id": ["r1"], "records": [3]}
    )
    published = dt.datetime(2026, 12, 5, 13, 45, 12)
    assert bench.seen(wh, path) is None  # no table yet
    write_deltalake(str(wh / "_sluicegate_files"), files)
    assert bench.seen(wh, path) is None  # the run record is not there yet
    runs = pa.table({"run_id": ["r0"], "published_at": [published], "raw_records": [3]})
    write_deltalake(str(wh / "_sluicegate_runs"), runs)
    assert bench.seen(wh, path) is None  # another run's record
    runs = pa.table({"run_id": ["r1"], "published_at": [published], "raw_records": [3]})
    write_deltalake(str(wh / "_sluicegate_runs"), runs, mode="append")
    run_id, at = bench.seen(wh, path)
    assert run_id == "r1"
    assert at == published.replace(tzinfo=dt.UTC).timestamp()


def test_a_spawning_child_is_not_counted_as_more_memory():
    """The peak of a Spark run, as sampled at 2026-12-05 03:42: the JVM mid-spawn of a
    helper (the child still named after the JVM's thread, sharing its address space).
    Counted twice it read 6.4 GiB; the JVM and its Python workers hold 3.3 GiB."""
    mib = 1 << 20
    peak = [
        (31742, 30056, 187 * mib, 710 * mib),  # sluicegate
        (31745, 31742, 3056 * mib, 7393 * mib),  # java
        (749, 31745, 3056 * mib, 7393 * mib),  # "Executor task l": spawned, not exec'd
        (31754, 31745, 0, 0),  # bash, exiting
        (32187, 31745, 41 * mib, 45 * mib),  # python3 worker daemon
        (32230, 32187, 51 * mib, 58 * mib),  # its forked workers (own memory)
        (32232, 32187, 51 * mib, 58 * mib),
    ]
    assert load_run_bench().summed_rss(peak) == (187 + 3056 + 41 + 51 + 51) * mib
    # a child that has exec'd (its own RSS and VMS) is counted
    spawned = [(1, 0, 100 * mib, 200 * mib), (2, 1, 5 * mib, 9 * mib)]
    assert load_run_bench().summed_rss(spawned) == 105 * mib
