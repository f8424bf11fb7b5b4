"""Spark Structured Streaming's Kafka source: the same micro-batches, exactly once.

Each step is a real ``sluicegate`` process on Spark (``local[2]``) reading the session's
broker through ``spark-sql-kafka-0-10``: a backlog in several bounded batches, a watcher
SIGKILLed inside the publish transaction (nothing of its batch may show), another
SIGKILLed after sluicegate's COMMIT but before Spark's commit log (Spark replays that
batch after the restart: the offsets ledger makes the replay a no-op), then a restart
that finishes the topic. The warehouse's Delta tables are read by delta-rs and queried with DuckDB and judged
by the plain-Python oracle over the topic as a plain consumer reads it.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.conftest import SLUICEGATE
from tests.delta_read import delta_dicts, is_delta
from tests.kafka.conftest import kafka_contract
from tests.kafka.helpers import DAY, assert_contiguous, produce, rec, topic_records
from tests.kafka.oracle import oracle

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow, pytest.mark.timeout(5400)]

ENGINE = "spark"
HOSTILE = [b"not json", b"", None, b"\xff\xfe", b'{"id": 1, "a"', b"[1]", rec(2, a=-1)]


def sluicegate(*args: str, fault: str | None = None, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLUICEGATE_SPARK_MASTER": "local[2]"}
    if fault:
        env["SLUICEGATE_FAULT"] = fault
    return subprocess.run(
        [*SLUICEGATE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=1800
    )


def parquet(wh: Path, table: str, sql: str) -> list[tuple]:
    """``sql`` over view ``t``: the table's current rows. Spark stores Delta tables, read
    here by delta-rs from the log (a glob of the folder would also count removed files)."""
    folder = wh / table
    con = duckdb.connect()
    try:
        if is_delta(folder):
            import pyarrow as pa

            rows = delta_dicts(folder)
            if not rows:
                return []
            con.register("t", pa.Table.from_pylist(rows))
        else:
            files = glob.glob(str(folder / "**" / "*.parquet"), recursive=True)
            if not files:
                return []
            con.execute(
                "CREATE VIEW t AS SELECT * FROM read_parquet(?, hive_partitioning = true, "
                "union_by_name = true)",
                [files],
            )
        return con.execute(sql).fetchall()
    finally:
        con.close()


def ranges(wh: Path) -> list[tuple]:
    return parquet(
        wh,
        "_sluicegate_offsets",
        "SELECT topic, partition_id, from_offset, to_offset, records, run_id FROM t "
        "ORDER BY 1, 2, 3",
    )


def observed(wh: Path) -> dict[str, set]:
    lineage = "SELECT id, _source_file, _source_line FROM t"
    return {
        "clean": set(parquet(wh, "clean", lineage)),
        "dlq": set(parquet(wh, "dlq", lineage)),
        "dups": set(
            parquet(
                wh,
                "dups",
                "SELECT _source_file, _source_line, _kept_source_file, _kept_source_line FROM t",
            )
        ),
    }


def batch_of(wh: Path):  # noqa: ANN201
    rows = parquet(
        wh,
        "_sluicegate_offsets",
        "SELECT topic, partition_id, from_offset, to_offset, "
        "dense_rank() OVER (ORDER BY first_at, run_id) FROM ("
        "SELECT *, min(processed_at) OVER (PARTITION BY run_id) AS first_at FROM t)",
    )

    def find(topic: str, part: int, off: int) -> int:
        for t, p, lo, hi, n in rows:
            if (t, p) == (topic, part) and lo <= off < hi:
                return int(n)
        raise AssertionError(f"{topic}/{part} offset {off} is in no ledger range")

    return find


def test_spark_kafka_stream_killed_twice_then_restarted_is_exactly_once(
    tmp_path, kafka_broker, topic
):
    c = kafka_contract(
        tmp_path,
        kafka_broker,
        [topic],
        warehouse="wh",
        engine=ENGINE,
        kafka={"max_records_per_batch": 20},
    )
    wh = tmp_path / "wh"
    produce(kafka_broker, topic, HOSTILE + [rec(i, a=1 if i % 5 else 0) for i in range(3, 23)])
    p = sluicegate("run", str(c), "--incremental", "--logical-date", DAY, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    first = ranges(wh)
    assert len({r[5] for r in first}) == 2  # bounded: 27 records in batches of at most 20
    assert sum(r[4] for r in first) == 27
    produce(kafka_broker, topic, [rec(i) for i in range(15, 45)] + [b"{broken"])
    # killed inside the publish transaction: nothing of that batch shows
    p = sluicegate("watch", str(c), "--logical-date", DAY, fault="publish:written", cwd=tmp_path)
    assert p.returncode == -signal.SIGKILL, p.stdout + p.stderr
    assert ranges(wh) == first
    # killed after sluicegate's COMMIT, before Spark's commit log: Spark will replay it
    p = sluicegate("watch", str(c), "--logical-date", DAY, fault="metrics_written", cwd=tmp_path)
    assert p.returncode == -signal.SIGKILL, p.stdout + p.stderr
    second = ranges(wh)
    assert len(second) > len(first)
    # the restart: Spark replays the committed batch (a no-op), then reads the rest
    p = sluicegate(
        "watch",
        str(c),
        "--logical-date",
        DAY,
        "--max-batches",
        "1",
        "--interval",
        "0.5",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "already published (a replay after a restart)" in p.stdout + p.stderr
    final = ranges(wh)
    assert_contiguous(final)
    assert sum(r[4] for r in final) == 27 + 31
    truth = oracle(topic_records(kafka_broker, topic), batch_of(wh))
    got = observed(wh)
    assert got == truth
    n = sum(len(v) for v in got.values())
    assert n == 58  # every offset once, across clean, quarantine and duplicates
