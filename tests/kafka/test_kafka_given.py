"""The path Spark's Kafka stream takes, on DuckDB and without a broker: a micro-batch handed
in (``KafkaIncremental(given=…)``, what engines/spark_kafka.py builds from Spark's batch).

A batch replayed after a restart is a no-op, a batch overlapping the ledger (Spark
restarted without its checkpoint) is trimmed to the new offsets, and a batch starting
after the ledger's next offset records the gap (``on_offsets_lost: skip``).
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.engines.spark_kafka import batch_rows
from sluicegate.run.offsets import KafkaIncremental
from sluicegate.run.pipeline import run_contract

pytestmark = pytest.mark.duckdb

DAY = "2024-01-01"


def contract(root: Path, **kafka) -> Path:  # noqa: ANN003
    doc = {
        "name": "given",
        "source": {
            "format": "kafka",
            "kafka": {"bootstrap_servers": "127.0.0.1:9", "topics": ["t"], **kafka},
            "columns": {"id": "BIGINT", "a": "INTEGER"},
        },
        "dedupe": {"key": ["id"]},
        "rules": [{"name": "a_positive", "expect": "a > 0"}],
        "gate": {"warn_above": 0.9, "fail_above": 1.0},
        "outputs": {"warehouse": "w.duckdb", "clean": "clean", "quarantine": "dlq"},
    }
    p = root / "c.yml"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def records(part: int, start: int, end: int) -> list[tuple]:
    return [
        ("t", part, o, json.dumps({"id": part * 1000 + o, "a": 1}).encode())
        for o in range(start, end)
    ]


def run(c: Path, recs: list[tuple]):  # noqa: ANN201
    return run_contract(
        load_contract(c, logical_date=DAY), incremental=KafkaIncremental(given=batch_rows(recs))
    )


def lineage(root: Path) -> list[tuple]:
    con = duckdb.connect(str(root / "w.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT _source_file, _source_line FROM clean UNION ALL "
            "SELECT _source_file, _source_line FROM dlq ORDER BY 1, 2"
        ).fetchall()
    finally:
        con.close()


def test_replay_is_a_noop_and_an_overlap_is_trimmed(tmp_path):
    c = contract(tmp_path)
    first = records(0, 0, 5) + records(1, 0, 3)
    assert run(c, first).metrics["ledger"]["raw"] == 8
    assert run(c, first).status == "empty"  # Spark replays the batch: already published
    overlap = records(0, 3, 8) + records(1, 3, 4)  # offsets 3, 4 of partition 0 again
    r = run(c, overlap)
    assert r.metrics["ledger"]["raw"] == 4
    assert r.metrics["incremental"]["replayed_records"] == 2
    got = lineage(tmp_path)
    assert got == sorted(
        [("kafka:t/0", o) for o in range(8)] + [("kafka:t/1", o) for o in range(4)]
    )


def test_a_gap_after_the_ledger_is_recorded(tmp_path):
    c = contract(tmp_path, on_offsets_lost="skip")
    run(c, records(0, 0, 3))
    r = run(c, records(0, 6, 9))  # offsets 3..5 never reached the stream
    assert r.status == "warn"
    fact = next(f for f in r.metrics["facts"] if f["check_id"] == "kafka_offsets_contiguous")
    assert (fact["status"], str(fact["metric"])) == ("warn", "3")
