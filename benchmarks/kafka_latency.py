"""Kafka latency: records produced → published, p50/p95, at a steady rate, on both engines.

A real KRaft broker (tests/kafka/broker.py, jars from ``make kafka-jars``) on loopback;
a producer thread writes ``--rate`` records a second for ``--seconds`` into a
three-partition topic, each record carrying its send time (``produced_at``, epoch
seconds). Meanwhile ``sluicegate watch CONTRACT --interval I`` runs as its own process on
the engine under test. When every record is published the watcher is stopped (SIGTERM:
it finishes its batch) and the warehouse is read back: a record's latency is its run's
``published_at`` (written inside the publish transaction, just before the COMMIT) minus
its ``produced_at``. Every produced record must be published exactly once, else the
row is marked wrong and the exit code is 1.

Usage::

    .venv/bin/python benchmarks/kafka_latency.py [--rate 200] [--seconds 30] [--skip-spark]

Results are appended to ``benchmarks/results.jsonl`` (``pipeline: kafka-latency-<engine>``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import duckdb

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
from tests.kafka.broker import Broker, jars_ready  # noqa: E402

SLUICEGATE = [sys.executable, "-m", "sluicegate.cli.main"]
DAY = "2026-12-01"


def contract(root: Path, bootstrap: str, topic: str, engine: str, batch: int) -> Path:
    doc = {
        "name": f"latency_{engine}",
        "engine": {"name": engine, "master": "local[2]"} if engine == "spark" else engine,
        "source": {
            "format": "kafka",
            "kafka": {
                "bootstrap_servers": bootstrap,
                "topics": [topic],
                "max_records_per_batch": batch,
            },
            "columns": {"id": "BIGINT", "a": "INTEGER", "produced_at": "DOUBLE"},
        },
        "dedupe": {"key": ["id"]},
        "rules": [{"name": "a_positive", "expect": "a > 0"}],
        "gate": {"warn_above": 0.5, "fail_above": 1.0, "on_stream_fail": "continue"},
        "outputs": {
            "warehouse": "wh" if engine == "spark" else "wh.duckdb",
            "clean": "clean",
            "quarantine": "dlq",
            "duplicates": "dups",
        },
    }
    path = root / "contract.yml"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def produce(broker: Broker, topic: str, rate: float, seconds: float, sent: list[float]) -> None:
    """Steady: record i is sent at start + i / rate (a 1-in-50 record has a <= 0)."""
    p = broker.producer(**{"linger.ms": 5})
    start = time.time()
    for i in range(int(rate * seconds)):
        due = start + i / rate
        delay = due - time.time()
        if delay > 0:
            time.sleep(delay)
        now = time.time()
        sent.append(now)
        value = json.dumps({"id": i, "a": 0 if i % 50 == 0 else 1, "produced_at": now})
        p.produce(topic, value=value.encode(), partition=i % 3)
        p.poll(0)
    p.flush(60)


def delta_files(folder: Path) -> list[str]:
    """The data files of the Delta table at ``folder`` at its current version, from its log
    (Spark stores Delta tables: a glob of the folder would also count removed files);
    empty before the first commit. Read by delta-rs, not by Spark."""
    from deltalake import DeltaTable

    if not (folder / "_delta_log").is_dir():
        return []
    try:
        return list(DeltaTable(str(folder)).file_uris())
    except Exception:  # noqa: BLE001 - a commit in progress: ask again
        return []


def published(engine: str, root: Path) -> list[tuple[float, float]]:
    """(produced_at, published_at) of every published record, read from the warehouse."""
    con = duckdb.connect()
    try:
        if engine == "spark":
            wh = root / "wh"
            parts = []
            for t in ("clean", "dlq", "dups", "_sluicegate_runs"):
                files = delta_files(wh / t)
                if files:
                    # a relation, not CREATE VIEW … ?: a view cannot hold a prepared parameter
                    con.read_parquet(files, union_by_name=True).create_view(f"t_{t}")
                    if t != "_sluicegate_runs":
                        parts.append(f"SELECT produced_at, _run_id FROM t_{t}")
            if not parts or not delta_files(wh / "_sluicegate_runs"):
                return []
            con.execute("CREATE VIEW r AS SELECT * FROM t__sluicegate_runs")
        else:
            db = root / "wh.duckdb"
            if not db.exists():
                return []
            con.execute(f"ATTACH '{db}' AS w (READ_ONLY)")
            parts = [f"SELECT produced_at, _run_id FROM w.{t}" for t in ("clean", "dlq", "dups")]
            con.execute("CREATE VIEW r AS SELECT * FROM w._sluicegate_runs")
        rows = con.execute(
            "SELECT o.produced_at, epoch(r.published_at) FROM ("
            + " UNION ALL ".join(parts)
            + ") o JOIN r ON r.run_id = o._run_id"
        ).fetchall()
        return [(float(a), float(b)) for a, b in rows]
    except duckdb.Error:
        return []  # a publish in progress: ask again
    finally:
        con.close()


def measure(
    broker: Broker,
    engine: str,
    rate: float,
    seconds: float,
    interval: float,
    batch: int,
    root: Path,
) -> dict[str, Any]:
    topic = broker.create_topic(f"latency-{engine}-{int(time.time())}", partitions=3)
    c = contract(root, broker.bootstrap, topic, engine, batch)
    env = {**os.environ, "SLUICEGATE_SPARK_MASTER": "local[2]"}
    log = open(root / "watch.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [*SLUICEGATE, "watch", str(c), "--interval", str(interval), "--logical-date", DAY, "-q"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    # warm up: one record published before the clock starts (Spark's JVM start is not latency)
    broker.produce(
        topic, [(0, json.dumps({"id": -1, "a": 1, "produced_at": time.time()}).encode())]
    )
    deadline = time.monotonic() + 600
    while not published(engine, root):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(
                f"the watcher did not publish its warm-up record: {root / 'watch.log'}"
            )
        time.sleep(0.5)
    sent: list[float] = []
    t = threading.Thread(target=produce, args=(broker, topic, rate, seconds, sent))
    t.start()
    t.join()
    total = len(sent) + 1
    deadline = time.monotonic() + 600
    rows: list[tuple[float, float]] = []
    while time.monotonic() < deadline:
        rows = published(engine, root)
        if len(rows) >= total:
            break
        time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()
    rows = published(engine, root)
    measured = sorted(pub - prod for prod, pub in rows if prod >= sent[0])
    q = statistics.quantiles(measured, n=100) if len(measured) > 1 else [float("nan")] * 99
    return {
        "engine": engine,
        "records": len(sent),
        "published": len(rows) - 1,
        "correct": len(rows) == total,
        "rate": rate,
        "seconds": seconds,
        "interval": interval,
        "p50_s": round(q[49], 3),
        "p95_s": round(q[94], 3),
        "max_s": round(max(measured), 3) if measured else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=200.0, help="records a second")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=0.5, help="watch --interval")
    ap.add_argument("--batch", type=int, default=100_000, help="max_records_per_batch")
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--results", type=Path, default=HERE / "results.jsonl")
    args = ap.parse_args(argv)
    if not jars_ready():
        print("kafka-latency: skipped — run `make kafka-jars` first", flush=True)
        return 0
    engines = ["duckdb"] + ([] if args.skip_spark else ["spark"])
    out = []
    broker = Broker().start()
    try:
        for engine in engines:
            with tempfile.TemporaryDirectory(prefix=f"sg-latency-{engine}-") as tmp:
                print(
                    f"kafka-latency-{engine}: {args.rate:g} records/s for {args.seconds:g} s",
                    flush=True,
                )
                out.append(
                    measure(
                        broker,
                        engine,
                        args.rate,
                        args.seconds,
                        args.interval,
                        args.batch,
                        Path(tmp),
                    )
                )
    finally:
        broker.close()
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with args.results.open("a") as f:
        for r in out:
            f.write(
                json.dumps(
                    {
                        "at": stamp,
                        "pipeline": f"kafka-latency-{r['engine']}",
                        **r,
                        "cpus": os.cpu_count(),
                    }
                )
                + "\n"
            )
    print(
        f"{'pipeline':<22} {'records':>8} {'rate/s':>7} {'p50 s':>7} {'p95 s':>7} {'max s':>7}  ok"
    )
    for r in out:
        print(
            f"kafka-latency-{r['engine']:<8} {r['records']:>8} {r['rate']:>7g} {r['p50_s']:>7} "
            f"{r['p95_s']:>7} {r['max_s']:>7}  {'yes' if r['correct'] else 'NO'}"
        )
    return 0 if all(r["correct"] for r in out) else 1


if __name__ == "__main__":
    raise SystemExit(main())
