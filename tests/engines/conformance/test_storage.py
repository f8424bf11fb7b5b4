"""Durable tables and transactions through the Engine interface, on every engine.

``run/publish.py`` only calls ``begin`` / ``execute`` / ``fetch`` / ``commit`` /
``rollback``; these tests hold each engine to the same visible behaviour: a reader inside
the transaction sees its writes, a rollback leaves the published tables as they were, a
commit publishes everything, another engine instance sees the commit, and DELETE /
UPDATE / MERGE / INSERT mean the same. The expected rows are written out here.

Spark + Delta only: every table is a Delta table that delta-rs reads; a transaction is one
Delta commit per table (time travel to the version before works); and a crash at any
point of a commit is repaired on the next open, exactly once.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from sluicegate.compile.facts import rows_select
from sluicegate.compile.outputs import delete_run, insert_into

from .conftest import STORAGE_ENGINES

COLS = (("k", "INTEGER"), ("s", "VARCHAR"), ("_logical_date", "DATE"), ("n", "BIGINT"))
D1, D2, D3 = "2024-01-01", "2024-01-02", "2024-01-03"


def rows(*items: tuple) -> exp.Query:
    return rows_select(COLS, [dict(zip([c for c, _ in COLS], it, strict=True)) for it in items])


def read(eng, table: str = "t") -> list[tuple]:  # noqa: ANN001
    q = exp.select("k", "s", "_logical_date", "n").from_(table).order_by("k")
    return [tuple(r) for r in eng.fetch(q)]


def day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


INITIAL = [(1, "a", day(D1), 10), (2, "b", day(D1), 20), (3, "c", day(D2), 30)]
CHANGED = [(3, "c", day(D2), 30), (4, "d", day(D1), 40)]

every_store = pytest.mark.parametrize("engine_name", STORAGE_ENGINES, indirect=True)


def _replace_d1(eng) -> None:  # noqa: ANN001
    eng.execute(delete_run("t", D1))
    eng.execute(insert_into("t", rows((4, "d", D1, 40))))


@every_store
def test_commit_and_rollback(open_test_engine, engine_name, tmp_path):
    eng = open_test_engine()
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    assert eng.table_exists("t")
    assert read(eng) == INITIAL

    eng.begin()
    _replace_d1(eng)
    assert read(eng) == CHANGED  # the transaction reads its own writes
    eng.rollback()
    assert read(eng) == INITIAL

    with eng.transaction():
        _replace_d1(eng)
    assert read(eng) == CHANGED
    eng.close()
    again = open_test_engine()
    assert read(again) == CHANGED  # published: another instance sees it


@every_store
def test_an_error_inside_the_transaction_publishes_nothing(open_test_engine):
    eng = open_test_engine()
    eng.create_table_as("t", rows((1, "a", D1, 10)))
    with pytest.raises(RuntimeError), eng.transaction():
        eng.execute(insert_into("t", rows((2, "b", D2, 20))))
        eng.create_table_as("u", rows((9, "z", D3, 90)))
        raise RuntimeError("the ledger does not balance")
    assert read(eng) == [(1, "a", day(D1), 10)]
    assert not eng.table_exists("u")


DML = [
    (
        "UPDATE t SET n = n + 1, s = 'x' WHERE k >= 2",
        [(1, "a", D1, 10), (2, "x", D1, 21), (3, "x", D2, 31)],
    ),
    ("DELETE FROM t WHERE n > 15", [(1, "a", D1, 10)]),
    (
        "MERGE INTO t AS tt USING (SELECT 2 AS k, 'B' AS s, CAST('2024-01-01' AS DATE) AS d, 22 AS n "
        "UNION ALL SELECT 5, 'e', CAST('2024-01-03' AS DATE), 50) AS ss ON tt.k = ss.k "
        "WHEN MATCHED THEN UPDATE SET s = ss.s, n = ss.n "
        "WHEN NOT MATCHED THEN INSERT (k, s, _logical_date, n) VALUES (ss.k, ss.s, ss.d, ss.n) "
        "WHEN NOT MATCHED BY SOURCE AND tt.k = 3 THEN DELETE",
        [(1, "a", D1, 10), (2, "B", D1, 22), (5, "e", D3, 50)],
    ),
]


@every_store
@pytest.mark.parametrize(("sql", "want"), DML, ids=["update", "delete", "merge"])
def test_dml_means_the_same(open_test_engine, engine_name, sql, want):
    eng = open_test_engine()
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    eng.execute(sqlglot.parse_one(sql, read="duckdb"))  # outside begin: its own transaction
    assert read(eng) == [(k, s, day(d), n) for k, s, d, n in want]


@every_store
def test_a_created_table_reports_the_rows_it_holds(open_test_engine, engine_name, monkeypatch):
    """``create_table_counted``: the count a later COUNT(*) reads, inside a transaction and
    alone, for rows and for a plan that is empty. On Spark + Delta the write counts its
    own rows: no COUNT query runs (``fetch`` is made to fail)."""
    eng = open_test_engine()
    if engine_name == "spark":
        monkeypatch.setattr(eng, "fetch", lambda *_a: pytest.fail("a COUNT query ran"))
    three = rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30))
    empty = three.copy().where(exp.false())
    with eng.transaction():
        assert eng.create_table_counted("t", three) == 3
        assert eng.create_table_counted("u", empty) == 0
        assert eng.create_table_counted("t", three.copy().limit(2)) == 2  # a replace
    assert eng.create_table_counted("v", three) == 3  # its own transaction
    monkeypatch.undo()
    for table, want in {"t": 2, "u": 0, "v": 3}.items():  # what the counts claimed
        assert eng.fetch(exp.select("COUNT(*)").from_(table))[0][0] == want


# -- Delta (DuckDB + delta-rs, Spark + delta-spark): one commit per table, crash repair --------------

delta_engines = pytest.mark.parametrize(
    "engine_name", ["duckdb-delta", pytest.param("spark", marks=pytest.mark.spark)], indirect=True
)


def delta_rows(path: Path, version: int | None = None) -> list[tuple]:
    """A Delta table read by delta-rs (not sluicegate, not Spark), through its file list."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    dt_ = DeltaTable(str(path), version=version)
    got = []
    for uri in dt_.file_uris():  # Spark writes the partition value into the folder name
        date = uri.split("_logical_date=")[1].split("/")[0]
        for r in ds.dataset(uri).to_table().to_pylist():
            got.append((r["k"], r["s"], day(date), r["n"]))
    return sorted(got)


@delta_engines
def test_delta_tables_one_commit_each_read_by_delta_rs(open_test_engine):
    eng = open_test_engine()
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    assert eng.storage.format == "delta" and eng.last_commit.versions == {"t": 0}
    table = Path(eng.warehouse) / "t"
    with eng.transaction():
        _replace_d1(eng)
        eng.execute(insert_into("t", rows((9, "z", D3, 90))))
        assert eng.staged_versions() == {"t": 1}
        assert delta_rows(table) == INITIAL  # nothing published inside the transaction
    assert eng.last_commit.versions == {"t": 1}  # three statements, one Delta commit
    assert delta_rows(table) == [*CHANGED, (9, "z", day(D3), 90)]
    assert delta_rows(table, version=0) == INITIAL  # time travel
    from deltalake import DeltaTable

    history = DeltaTable(str(table)).history()
    assert [h["version"] for h in history] == [1, 0]
    assert history[0]["operation"] == "WRITE" and "_logical_date" in str(history[0])
    assert not list((Path(eng.warehouse) / ".sluicegate" / "delta" / "staging").iterdir())


class Crash(BaseException):
    """Stands for the process dying at a fault point (nothing after it runs)."""


class CrashAt:
    """A fault hook that, once armed, dies at ``point``."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.armed = False

    def __call__(self, p: str) -> None:
        if self.armed and p == self.point:
            raise Crash(p)


@delta_engines
@pytest.mark.parametrize("point", ["delta:journaled", "delta:published_first"])
def test_a_crash_after_the_journal_is_completed_on_the_next_open(open_test_engine, point):
    from sluicegate.engines import delta_spark

    fault = CrashAt(point)
    eng = open_test_engine(fault=fault)
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    eng.create_table_as("u", rows((7, "u", D1, 70)))
    fault.armed = True
    eng.begin()
    _replace_d1(eng)
    eng.execute(insert_into("t", rows((9, "z", D3, 90))))
    eng.execute(sqlglot.parse_one("UPDATE u SET n = n + 1", read="duckdb"))
    with pytest.raises(Crash):
        eng.commit()
    internal = Path(eng.warehouse) / ".sluicegate" / "delta"
    assert list((internal / "journal").glob("*.json")), "the journal must be on disk"
    published_t = point == "delta:published_first"
    assert delta_rows(Path(eng.warehouse) / "t") == (
        [*CHANGED, (9, "z", day(D3), 90)] if published_t else INITIAL
    )
    delta_spark._ACTIVE.clear()  # the crashed process's transactions died with it
    reopened = open_test_engine()
    assert any("completed an interrupted publish of t, u" in n for n in reopened.notices)
    assert read(reopened) == [*CHANGED, (9, "z", day(D3), 90)]
    assert read(reopened, "u") == [(7, "u", day(D1), 71)]
    # each table got exactly one commit for the transaction, however it was finished
    assert reopened.store.version("t") == 1 and reopened.store.version("u") == 1
    assert not list((internal / "journal").glob("*.json"))
    assert not any((internal / "staging").iterdir())
    again = open_test_engine()  # recovery is idempotent: nothing left to do
    assert again.notices == [] and again.store.version("t") == 1


@delta_engines
def test_a_crash_before_the_journal_leaves_the_tables_and_drops_the_staging(
    open_test_engine, engine_name
):
    from sluicegate.engines import delta_journal

    eng = open_test_engine()
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    eng.begin()
    _replace_d1(eng)  # staged, never journaled: the process dies here
    staging = Path(eng.warehouse) / ".sluicegate" / "delta" / "staging"
    if engine_name == "spark":  # Spark stages on disk (shallow clones); DuckDB in memory
        assert any(staging.iterdir())
    delta_journal.ACTIVE.clear()
    reopened = open_test_engine()
    if engine_name == "spark":
        assert any("removed the staging of an interrupted run" in n for n in reopened.notices)
    assert read(reopened) == INITIAL and reopened.store.version("t") == 0
    assert not staging.exists() or not any(staging.iterdir())
