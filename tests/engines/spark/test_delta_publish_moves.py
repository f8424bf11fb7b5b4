"""Spark + Delta: a table the transaction creates is published by moving its shadow.

What a reader sees does not change (one Delta commit, with the transaction's marker, the
rows read back by delta-rs); what changes is that the rows are not written twice. The
proof is in the files: the published table's data files are the very files the shadow
held inside the transaction (a copy would write new ones). A table created empty
(``… WHERE FALSE``), cleaned with DELETE and then filled with INSERT — the shape of every
output on a first run — keeps one commit and moves too, and so does one created empty and
then merged into (the MERGE runs as the INSERT it amounts to); an existing table, a shadow of
several commits and a crash's recovery copy as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot
from deltalake import DeltaTable

from sluicegate.compile.outputs import delete_run, insert_into
from sluicegate.engines import delta_spark, open_engine
from sluicegate.engines.delta_journal import MARKER
from tests.engines.conformance.test_storage import D1, D2, Crash, CrashAt, day, read, rows

pytestmark = pytest.mark.spark


def _files(folder: Path) -> set[str]:
    """Names of the Parquet data files under a Delta table's folder."""
    return {p.name for p in folder.rglob("*.parquet") if "_delta_log" not in p.parts}


def _staged(warehouse: Path, name: str) -> Path:
    staging = warehouse / ".sluicegate" / "delta" / "staging"
    (shadow,) = [p for p in staging.glob(f"*/{name}.*") if (p / "_delta_log").exists()]
    return shadow


def _history(table: Path) -> list[dict]:
    return DeltaTable(str(table)).history()


@pytest.fixture
def engine(spark, tmp_path):  # noqa: ARG001 - the run's one SparkSession
    opened = []

    def _open(**options):  # noqa: ANN202
        eng = open_engine("spark", str(tmp_path / "wh"), **options)
        opened.append(eng)
        return eng

    yield _open
    for eng in opened:
        eng.close()


def test_a_first_run_shaped_table_is_moved_with_one_commit(engine, tmp_path):
    eng = engine()
    wh = tmp_path / "wh"
    eng.begin()
    empty = sqlglot.parse_one("SELECT * FROM (VALUES (1, 'a', 1)) AS v(k, s, n) WHERE FALSE")
    eng.create_table_as("t", rows((0, "x", D1, 0)).where("FALSE"))
    eng.create_table_as("e", empty)  # created empty and left empty
    eng.execute(delete_run("t", D1))  # a rerun's cleanup on a table still empty
    eng.execute(insert_into("t", rows((1, "a", D1, 10), (2, "b", D2, 20))))
    eng.create_table_as("m", rows((0, "x", D1, 0)).where("FALSE"))
    merge = "MERGE INTO m AS x USING t AS y ON x.k = y.k WHEN MATCHED THEN UPDATE SET n = 0 "
    merge += "WHEN NOT MATCHED AND y.n > 10 THEN INSERT (k, s, _logical_date, n) "
    merge += "VALUES (y.k, y.s, y._logical_date, y.n + 1)"
    eng.execute(sqlglot.parse_one(merge, read="spark"))  # into an empty table: an INSERT
    assert read(eng) == [(1, "a", day(D1), 10), (2, "b", day(D2), 20)]  # reads its writes
    staged, staged_m = _files(_staged(wh, "t")), _files(_staged(wh, "m"))
    assert staged and staged_m and not (wh / "t").exists()
    eng.commit()

    assert eng.last_commit.versions == {"t": 0, "e": 0, "m": 0}
    assert _files(wh / "t") == staged  # moved, not copied
    assert _files(wh / "m") == staged_m and [h["version"] for h in _history(wh / "m")] == [0]
    assert read(eng, "m") == [(2, "b", day(D2), 21)]
    history = _history(wh / "t")
    assert [h["version"] for h in history] == [0]
    assert history[0]["userMetadata"].startswith(MARKER)
    got = sorted(DeltaTable(str(wh / "t")).to_pyarrow_table().to_pylist(), key=lambda r: r["k"])
    assert [(r["k"], r["s"], r["_logical_date"], r["n"]) for r in got] == [
        (1, "a", day(D1), 10),
        (2, "b", day(D2), 20),
    ]
    assert DeltaTable(str(wh / "e")).to_pyarrow_table().num_rows == 0
    assert [h["version"] for h in _history(wh / "e")] == [0]
    assert not any((wh / ".sluicegate" / "delta" / "staging").iterdir())


def test_existing_tables_and_multi_commit_shadows_are_copied(engine, tmp_path):
    eng = engine()
    wh = tmp_path / "wh"
    eng.create_table_as("t", rows((1, "a", D1, 10)))  # new, one commit: moved
    eng.begin()
    eng.create_table_as("t", rows((2, "b", D1, 20)))  # replaces an existing table
    eng.create_table_as("u", rows((3, "c", D1, 30)))
    eng.execute(sqlglot.parse_one("UPDATE u SET n = n + 1", read="duckdb"))  # 2 commits
    staged = _files(_staged(wh, "t")) | _files(_staged(wh, "u"))
    eng.commit()
    assert eng.last_commit.versions == {"t": 1, "u": 0}
    assert not (_files(wh / "t") | _files(wh / "u")) & staged  # both copied
    assert [h["version"] for h in _history(wh / "u")] == [0]  # still one commit
    assert read(eng, "u") == [(3, "c", day(D1), 31)]


def test_a_crash_between_two_moves_is_completed_by_a_copy(engine, tmp_path):
    fault = CrashAt("delta:published_first")
    eng = engine(fault=fault)
    wh = tmp_path / "wh"
    fault.armed = True
    eng.begin()
    eng.create_table_as("a", rows((1, "a", D1, 10)))
    eng.create_table_as("b", rows((2, "b", D1, 20)))
    staged_b = _files(_staged(wh, "b"))
    with pytest.raises(Crash):
        eng.commit()
    assert (wh / "a").exists() and not (wh / "b").exists()  # one moved, then the crash
    delta_spark._ACTIVE.clear()  # the crashed process's transactions died with it

    reopened = engine()
    assert any("completed an interrupted publish of a, b" in n for n in reopened.notices)
    assert any("published now: b" in n for n in reopened.notices)
    assert read(reopened, "a") == [(1, "a", day(D1), 10)]
    assert read(reopened, "b") == [(2, "b", day(D1), 20)]
    assert not _files(wh / "b") & staged_b  # recovery copies
    for name in ("a", "b"):
        history = _history(wh / name)
        assert [h["version"] for h in history] == [0]
        assert history[0]["userMetadata"].startswith(MARKER)
    assert engine().notices == []  # nothing left to repair


def test_views_follow_a_commit_when_next_read(engine, tmp_path, monkeypatch):
    """After a commit the views of its tables are pointed at the published tables only when
    something next reads (each costs a read of the table's log): a one-shot run reads
    nothing after its commit. Every later read sees what was published, a dropped table
    is gone."""
    eng = engine()
    wh = tmp_path / "wh"
    eng.create_table_as("gone", rows((9, "z", D1, 90)))
    eng.begin()  # (the view of "gone", created outside a transaction, is made here)
    reads: list[str] = []
    real = eng.store.read
    monkeypatch.setattr(eng.store, "read", lambda name: reads.append(name) or real(name))
    eng.create_table_as("t", rows((1, "a", D1, 10)))
    eng.execute(insert_into("t", rows((2, "b", D2, 20))))  # two commits: copied
    eng.create_table_as("u", rows((3, "c", D1, 30)))  # one commit: moved
    eng.execute(sqlglot.parse_one("DROP TABLE gone"))
    eng.commit()
    assert reads == []  # nothing read at the commit
    assert not (wh / "gone").exists() and not any(
        (wh / ".sluicegate" / "delta" / "staging").iterdir()
    )

    assert read(eng) == [(1, "a", day(D1), 10), (2, "b", day(D2), 20)]
    assert sorted(reads) == ["gone", "t", "u"]  # all three, once, before that read
    assert read(eng, "u") == [(3, "c", day(D1), 30)]
    assert not eng.table_exists("gone")
    assert len(reads) == 3

    eng.begin()  # a new transaction starts from the published tables
    eng.execute(insert_into("u", rows((4, "d", D2, 40))))
    eng.commit()
    assert eng.table_exists("u") and read(eng, "u") == [
        (3, "c", day(D1), 30),
        (4, "d", day(D2), 40),
    ]
