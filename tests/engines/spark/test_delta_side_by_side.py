"""Spark + Delta: a transaction stages and publishes its tables side by side.

Each table a transaction changes costs a few small Delta operations of its own (a shallow
clone when first changed; a change-feed read, a write and a history read when published),
mostly the driver's waiting. ``Engine.will_change`` lets the publish clone the tables it is
about to change all at once, and ``commit`` publishes the outputs on several threads — but
the first table alone (the crash tests stop right after it) and sluicegate's record tables
(``_sluicegate_*``) last, one by one, so a reader who sees the run record finds every output
published. Every commit still carries the transaction's marker (recovery's test of what
is already published), also two keyed MERGEs published at once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlglot
from deltalake import DeltaTable

from sluicegate.compile.facts import rows_select
from sluicegate.compile.outputs import insert_into
from sluicegate.engines import delta_spark, open_engine
from sluicegate.engines.delta_journal import MARKER
from tests.engines.conformance.test_storage import D1, D2, day, read, rows

pytestmark = pytest.mark.spark

KEYED = (("_dlq_sk", "VARCHAR"), ("n", "BIGINT"))


def keyed(*items: tuple) -> sqlglot.exp.Query:
    return rows_select(KEYED, [dict(zip(("_dlq_sk", "n"), it, strict=True)) for it in items])


@pytest.fixture
def eng(spark, tmp_path):  # noqa: ARG001 - the run's one SparkSession
    engine = open_engine("spark", str(tmp_path / "wh"))
    yield engine
    engine.close()


def _shadows(warehouse: Path) -> set[str]:
    staging = warehouse / ".sluicegate" / "delta" / "staging"
    return {p.name.rsplit(".", 1)[0] for p in staging.glob("*/*") if (p / "_delta_log").exists()}


def test_tables_about_to_change_are_staged_together(eng, tmp_path):
    wh = tmp_path / "wh"
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D2, 20)))
    eng.create_table_as("u", rows((7, "u", D1, 70)))
    eng.begin()
    eng.will_change(["t", "u", "not_there"])
    assert _shadows(wh) == {"t", "u"}  # cloned before any statement; no table conjured
    eng.execute(sqlglot.parse_one("UPDATE t SET n = n + 1 WHERE k = 1", read="duckdb"))
    assert read(eng) == [(1, "a", day(D1), 11), (2, "b", day(D2), 20)]  # the clone is read
    eng.commit()
    assert eng.last_commit.versions == {"t": 1}  # u was staged, not changed: not published
    assert read(eng) == [(1, "a", day(D1), 11), (2, "b", day(D2), 20)]
    assert [h["version"] for h in DeltaTable(str(wh / "u")).history()] == [0]
    assert not (wh / "not_there").exists()


def test_outputs_are_published_side_by_side_and_the_records_after_them(eng, tmp_path, monkeypatch):
    wh = tmp_path / "wh"
    for name in ("a", "_sluicegate_runs", "_sluicegate_snapshots"):
        eng.create_table_as(name, rows((1, name, D1, 10)))
    for name in ("b", "c"):  # keyed: each is published by a MERGE
        eng.create_table_as(name, keyed(("k1", 1), ("k2", 2)))
    spans: dict[str, tuple[float, float]] = {}
    lock = threading.Lock()
    real = delta_spark._publish

    def timed(store, e, marker, **kw):  # noqa: ANN001, ANN202
        start = time.monotonic()
        try:
            return real(store, e, marker, **kw)
        finally:
            with lock:
                spans[e.name] = (start, time.monotonic())

    monkeypatch.setattr(delta_spark, "_publish", timed)
    eng.begin()
    for name in ("a", "_sluicegate_runs", "b", "c", "_sluicegate_snapshots"):  # change order
        if name in ("b", "c"):
            eng.execute(sqlglot.parse_one(f"UPDATE {name} SET n = n + 1", read="duckdb"))
        else:
            eng.execute(insert_into(name, rows((2, name, D2, 20))))
    eng.commit()

    assert set(spans) == {"a", "b", "c", "_sluicegate_runs", "_sluicegate_snapshots"}
    assert all(spans["a"][1] <= spans[n][0] for n in spans if n != "a")  # the first alone
    b, c = spans["b"], spans["c"]
    assert b[0] < c[1] and c[0] < b[1], "the two outputs were published one after the other"
    runs, snaps = spans["_sluicegate_runs"], spans["_sluicegate_snapshots"]
    assert max(b[1], c[1]) <= runs[0] and runs[1] <= snaps[0]  # records last, in order
    # every table's new commit carries the transaction's marker, the MERGEs' too
    for name in spans:
        latest = DeltaTable(str(wh / name)).history(1)[0]
        assert latest["version"] == 1 and str(latest.get("userMetadata", "")).startswith(MARKER), (
            name
        )
    assert sorted(tuple(r) for r in eng.fetch(sqlglot.parse_one("SELECT * FROM b"))) == [
        ("k1", 2),
        ("k2", 3),
    ]
