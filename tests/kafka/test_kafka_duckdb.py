"""A Kafka source on the embedded engine, against the session's real broker.

Every test reads the warehouse back with plain DuckDB and judges it by an oracle that
reads the topic with a plain consumer and parses each value with Python's ``json``
(tests/kafka/oracle.py) — never by sluicegate's own metrics alone.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import InputError
from sluicegate.run.offsets import OffsetsLostError
from sluicegate.run.pipeline import RunResult, run_contract
from tests.conftest import run_cli
from tests.kafka.conftest import kafka_contract
from tests.kafka.helpers import (
    DAY,
    assert_contiguous,
    batch_of,
    connect,
    ledger_ranges,
    lineage_counts,
    observed,
    produce,
    rec,
    topic_records,
)
from tests.kafka.oracle import oracle

pytestmark = [pytest.mark.duckdb, pytest.mark.kafka, pytest.mark.timeout(300)]

HOSTILE: list[bytes | None] = [
    rec(1),
    b"not json at all",
    b'{"id": 2, "a": 1, "k": "trunc',  # truncated
    b"\x00\xff\xfe\x80binary",  # not UTF-8
    b"",  # empty
    None,  # a tombstone
    b"   ",  # blank: a record in Kafka (an offset), not a skipped line
    b'[{"id": 3}]',  # JSON, not an object
    "\ufeff".encode() + rec(4),  # a BOM
    rec(5) + b"\r\n",  # a producer's trailing newline
    b'{"id": 6, "a": 1, "k": "x"}\n{"id": 7, "a": 1, "k": "x"}',  # two documents: corrupt
    rec(8, a=-2),
    rec(1, k="dup"),
    json.dumps({"id": 9, "a": 1, "k": "x" * 3_000_000}).encode(),  # huge (3 MB)
    b'{"id": "ten", "a": 1, "k": "x"}',  # type mismatch
    rec(11),
]


def run(contract: Path, **kw) -> RunResult:
    return run_contract(load_contract(contract, logical_date=DAY), **kw)


def drain(contract: Path, limit: int = 50) -> list[RunResult]:
    """Micro-batches until one finds nothing new."""
    out = []
    for _ in range(limit):
        r = run(contract)
        if r.status == "empty":
            return out
        out.append(r)
    raise AssertionError("the topic never ran dry")


def test_hostile_messages_each_offset_routed_once(tmp_path, kafka_broker, topic):
    produce(kafka_broker, topic, HOSTILE)
    c = kafka_contract(tmp_path, kafka_broker, [topic])
    r = run(c)
    assert r.metrics["ledger"]["balanced"], r.metrics["ledger"]
    assert r.metrics["ledger"]["raw"] == len(HOSTILE)
    truth = oracle(topic_records(kafka_broker, topic))
    got = observed(tmp_path / "k.duckdb")
    assert got == truth
    assert set(lineage_counts(tmp_path / "k.duckdb").values()) == {1}
    con = connect(tmp_path / "k.duckdb")
    try:
        reasons = dict(
            con.execute(
                "SELECT _source_line, CAST(_dlq_failed_rules AS VARCHAR) FROM dlq WHERE _source_file = ?",
                [f"kafka:{topic}/1"],
            ).fetchall()
        )
        huge = con.execute("SELECT length(k) FROM clean WHERE id = 9").fetchone()
    finally:
        con.close()
    # partition 1 holds HOSTILE[1], [4], [7], [10], [13]: not json, empty, array, two docs, huge
    assert huge == (3_000_000,)
    assert all("corrupt_record" in reasons[o] for o in (0, 1, 2, 3)), reasons
    assert run(c).status == "empty"  # nothing new: a no-op


def test_bounded_batches_resume_from_the_ledger(tmp_path, kafka_broker, topic):
    produce(kafka_broker, topic, [rec(i, a=1 if i % 4 else -1) for i in range(20)])
    c = kafka_contract(tmp_path, kafka_broker, [topic], kafka={"max_records_per_batch": 7})
    results = drain(c)
    assert [r.metrics["ledger"]["raw"] for r in results] == [7, 7, 6]
    wh = tmp_path / "k.duckdb"
    ranges = ledger_ranges(wh)
    assert_contiguous(ranges)
    assert sum(r[4] for r in ranges) == 20
    assert observed(wh) == oracle(topic_records(kafka_broker, topic), batch_of(wh))
    # more records later: the next batch starts where the ledger ends, in every partition
    produce(kafka_broker, topic, [rec(i) for i in range(20, 26)] + [rec(3, k="late dup")])
    assert [r.metrics["ledger"]["raw"] for r in drain(c)] == [7]
    assert_contiguous(ledger_ranges(wh))
    assert observed(wh) == oracle(topic_records(kafka_broker, topic), batch_of(wh))


def test_producer_writing_while_the_pipeline_runs(tmp_path, kafka_broker, topic):
    """A steady producer and back-to-back micro-batches: every offset exactly once."""
    c = kafka_contract(tmp_path, kafka_broker, [topic], kafka={"max_records_per_batch": 50})
    total = 400
    done = threading.Event()

    def producer() -> None:
        p = kafka_broker.producer()
        for i in range(total):
            p.produce(topic, value=rec(i % 350, a=1 if i % 9 else 0), partition=i % 3)
            if i % 20 == 0:
                p.flush(10)
                time.sleep(0.02)
        p.flush(30)
        done.set()

    t = threading.Thread(target=producer)
    t.start()
    batches = 0
    while not done.is_set():
        if run(c).status != "empty":
            batches += 1
    t.join()
    batches += len(drain(c))
    assert batches >= 2  # the pipeline really ran while the producer wrote
    wh = tmp_path / "k.duckdb"
    assert_contiguous(ledger_ranges(wh))
    counts = lineage_counts(wh)
    assert len(counts) == total and set(counts.values()) == {1}
    assert observed(wh) == oracle(topic_records(kafka_broker, topic), batch_of(wh))


def test_retention_deleted_expected_offsets_is_an_error_or_a_governed_gap(
    tmp_path, kafka_broker, topic
):
    produce(kafka_broker, topic, [rec(i) for i in range(9)])
    c = kafka_contract(tmp_path, kafka_broker, [topic])
    assert run(c).status == "pass"  # the ledger now expects offset 3 in every partition
    produce(kafka_broker, topic, [rec(i) for i in range(9, 18)])
    kafka_broker.delete_records(topic, 1, 5)  # partition 1 now starts at 5: 3, 4 are gone
    with pytest.raises(OffsetsLostError) as e:
        run(c)
    msg = e.value.render()
    assert f"{topic}/1: offsets 3..4 (2) were deleted by retention" in msg
    assert "on_offsets_lost: skip" in msg
    p = run_cli("run", str(c), "--logical-date", DAY)  # the CLI: one line, exit 2, no traceback
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "were deleted by retention" in p.stderr
    # the documented policy: carry on, the gap governed in the ledger and a fact
    skip = kafka_contract(tmp_path, kafka_broker, [topic], kafka={"on_offsets_lost": "skip"})
    r = run(skip)
    assert r.status == "warn"
    assert r.metrics["ledger"]["raw"] == 9 - 2
    con = connect(tmp_path / "k.duckdb")
    try:
        fact = con.execute(
            "SELECT status, metric FROM quality_facts WHERE check_id = 'kafka_offsets_contiguous' "
            "AND run_id = ?",
            [r.metrics["run_id"]],
        ).fetchone()
        lost = con.execute(
            "SELECT partition_id, from_offset, lost_offsets FROM _sluicegate_offsets "
            "WHERE lost_offsets > 0"
        ).fetchall()
    finally:
        con.close()
    assert (fact[0], str(fact[1])) == ("warn", "2")
    assert lost == [(1, 5, 2)]


def test_two_consumers_of_one_contract_are_refused_by_the_writer_lock(
    tmp_path, kafka_broker, topic
):
    produce(kafka_broker, topic, [rec(i) for i in range(30)])
    c = kafka_contract(tmp_path, kafka_broker, [topic])
    marker = tmp_path / "paused"
    env = {"SLUICEGATE_PAUSE": "after_read:40", "SLUICEGATE_PAUSE_FILE": str(marker)}
    import subprocess
    import sys

    from tests.conftest import SLUICEGATE

    first = subprocess.Popen(
        [*SLUICEGATE, "run", str(c), "--logical-date", DAY, "-q"],
        env={**__import__("os").environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    second = run_cli("run", str(c), "--logical-date", DAY)
    assert second.returncode == 5, second.stderr
    assert "lock" in second.stderr.lower()
    _out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    wh = tmp_path / "k.duckdb"
    assert set(lineage_counts(wh).values()) == {1} and len(lineage_counts(wh)) == 30
    del sys


def test_broker_restart_mid_batch(tmp_path, kafka_broker, topic, monkeypatch):
    """The broker restarts after a batch planned and assigned its offsets and before it
    fetched them (the fault point ``kafka:assigned`` pauses the batch there): the batch
    fetches from the restarted broker; every offset is published exactly once."""
    produce(kafka_broker, topic, [rec(i, k="y" * 500) for i in range(900)])
    c = kafka_contract(tmp_path, kafka_broker, [topic], kafka={"timeout_seconds": 90})
    marker = tmp_path / "assigned"
    monkeypatch.setenv("SLUICEGATE_PAUSE", "kafka:assigned:6")
    monkeypatch.setenv("SLUICEGATE_PAUSE_FILE", str(marker))
    outcome: dict[str, object] = {}

    def batch() -> None:
        try:
            outcome["result"] = run(c)
        except InputError as exc:  # pragma: no cover - reported below
            outcome["error"] = exc

    t = threading.Thread(target=batch)
    t.start()
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert t.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.05)
    paused_at = time.monotonic()
    kafka_broker.stop()
    # the broker is down before the batch's pause ends: its fetches meet a dead broker,
    # then the restarted one (startup takes several seconds more)
    assert time.monotonic() - paused_at < 5.5
    kafka_broker.start()
    t.join(timeout=180)
    assert not t.is_alive()
    monkeypatch.delenv("SLUICEGATE_PAUSE")
    assert "error" not in outcome, outcome
    assert outcome["result"].metrics["ledger"]["raw"] == 900
    assert run(c).status == "empty"
    wh = tmp_path / "k.duckdb"
    counts = lineage_counts(wh)
    assert len(counts) == 900 and set(counts.values()) == {1}
    assert observed(wh) == oracle(topic_records(kafka_broker, topic), batch_of(wh))


def test_missing_topic_and_dead_broker_are_one_line_errors(tmp_path, kafka_broker):
    c = kafka_contract(tmp_path, kafka_broker, ["no-such-topic"])
    p = run_cli("run", str(c), "--logical-date", DAY)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "Kafka topic 'no-such-topic' does not exist" in p.stderr
    dead = kafka_contract(tmp_path, kafka_broker, ["x"], kafka={"timeout_seconds": 2})
    doc = json.loads(dead.read_text())
    doc["source"]["kafka"]["bootstrap_servers"] = "127.0.0.1:1"
    dead.write_text(json.dumps(doc))
    p = run_cli("run", str(dead), "--logical-date", DAY)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "did not answer within 2 s" in p.stderr


def test_cli_run_incremental_watch_and_facts_ledger(tmp_path, kafka_broker, topic):
    """The commands work unchanged for a Kafka source; the ledger shows offsets per batch."""
    produce(kafka_broker, topic, [rec(i) for i in range(12)])
    c = kafka_contract(tmp_path, kafka_broker, [topic], kafka={"max_records_per_batch": 5})
    p = run_cli("run", str(c), "--incremental", "--logical-date", DAY)
    assert p.returncode == 0, p.stderr
    produce(kafka_broker, topic, [rec(i) for i in range(12, 15)])
    p = run_cli("watch", str(c), "--logical-date", DAY, "--interval", "0.2", "--max-batches", "1")
    assert p.returncode == 0, p.stderr
    assert "batch 1: run" in p.stdout and "3 records" in p.stdout, p.stdout
    # A wide terminal: the table wraps long topic names at the default 80 columns.
    p = run_cli("facts", "ledger", str(c), "--logical-date", DAY, env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "offsets" in p.stdout and f"{topic}/0 [0, " in p.stdout, p.stdout
    p = run_cli("facts", "ledger", str(c), "--logical-date", DAY, "--json")
    led = json.loads(p.stdout)
    assert led["balanced"] and led["totals"]["raw"] == 15
    assert led["totals"]["micro_batches"] == 4
    assert all(r["offsets"] for r in led["runs"])


def test_secrets_resolved_and_never_shown(tmp_path, kafka_broker, topic, monkeypatch):
    """A SASL password comes from ${secret:…}; the broker (PLAINTEXT) refuses nothing, but
    the settings reach both clients and no error or metrics file shows the value."""
    from sluicegate.engines.kafka_config import librdkafka_config, spark_options

    monkeypatch.setenv("SLUICEGATE_SECRET_KAFKA_PASSWORD", "s3cr3t-value")
    c = kafka_contract(
        tmp_path,
        kafka_broker,
        [topic],
        kafka={
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "PLAIN",
                "username": "sg",
                "password": "${secret:kafka/password}",
            },
            "timeout_seconds": 3,
        },
    )
    loaded = load_contract(c, logical_date=DAY)
    spec = loaded.contract.source.kafka
    assert librdkafka_config(spec, "stream")["sasl.password"] == "s3cr3t-value"
    assert 'password="s3cr3t-value"' in spark_options(spec)["kafka.sasl.jaas.config"]
    p = run_cli(
        "run",
        str(c),
        "--logical-date",
        DAY,
        env={"SLUICEGATE_SECRET_KAFKA_PASSWORD": "s3cr3t-value"},
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr  # the broker speaks PLAINTEXT
    assert "s3cr3t-value" not in p.stdout + p.stderr
