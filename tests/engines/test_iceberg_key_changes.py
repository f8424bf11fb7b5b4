"""A keyed Iceberg table (the DLQ inbox) is published by its changes: the published keys
whose rows changed or went are deleted, the rows of every key that differs are appended
(engines/duckdb_delta.py ``_key_changes``, engines/iceberg_store.py).

What the store is asked to write is seen through a spy on its one write method; what it
published is read back by pyiceberg (tests/iceberg_read.py), not by sluicegate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from sluicegate.engines import iceberg_store
from sluicegate.engines.base import Engine
from tests.conftest import record_calls
from tests.iceberg_read import catalog, embedded_engine

NS = "keyed"


def _sql(text: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(text, read="duckdb")


def _rows(*pairs: tuple) -> sqlglot.exp.Expression:
    values = ", ".join(f"({'NULL' if k is None else repr(k)}, {v})" for k, v in pairs)
    return _sql(f"SELECT * FROM (VALUES {values}) AS v(_dlq_sk, v)")


@pytest.fixture
def eng(tmp_path: Path):  # noqa: ANN201
    e = embedded_engine(tmp_path, NS)
    e.create_table_as("q", _rows(("a", 1), ("b", 2), ("c", 3)))
    yield e
    e.close()


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list:
    """(keys to delete, rows given) of every keyed write."""

    def note(_self, e, data, _branch, _marker):  # noqa: ANN001, ANN202
        if e.how != "key":
            return None
        keys = None if e.keys is None else sorted(e.keys, key=str)
        rows = sorted(data.to_pylist(), key=lambda r: (str(r["_dlq_sk"]), r["v"]))
        return keys, [(r["_dlq_sk"], r["v"]) for r in rows]

    return record_calls(monkeypatch, iceberg_store.IcebergStore, "_write_rows", note)


def published(tmp_path: Path) -> list[tuple]:
    t = catalog(tmp_path / "catalog.db", tmp_path / "iceberg").load_table(f"{NS}.q")
    rows = t.scan().to_arrow().to_pylist()
    return sorted(((r["_dlq_sk"], r["v"]) for r in rows), key=lambda r: (str(r[0]), r[1]))


def _operation(tmp_path: Path) -> str:
    t = catalog(tmp_path / "catalog.db", tmp_path / "iceberg").load_table(f"{NS}.q")
    return t.current_snapshot().summary.operation.value


def test_only_the_changed_keys_are_written(eng, writes, tmp_path: Path):
    with eng.transaction():
        eng.execute(_sql("DELETE FROM q WHERE _dlq_sk = 'b'"))
        eng.execute(_sql("UPDATE q SET v = 30 WHERE _dlq_sk = 'c'"))
        eng.execute(sqlglot.exp.insert(_rows(("d", 4)), "q"))
    assert writes == [(["b", "c"], [("c", 30), ("d", 4)])]
    assert published(tmp_path) == [("a", 1), ("c", 30), ("d", 4)]


def test_a_day_that_only_adds_keys_appends(eng, writes, tmp_path: Path):
    with eng.transaction():
        eng.execute(sqlglot.exp.insert(_rows(("d", 4), ("e", 5)), "q"))
    assert writes == [([], [("d", 4), ("e", 5)])]  # nothing deleted, nothing rewritten
    assert _operation(tmp_path) == "append"
    assert published(tmp_path) == [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)]


def test_a_key_twice_is_replaced_whole(eng, writes, tmp_path: Path):
    with eng.transaction():
        eng.execute(sqlglot.exp.insert(_rows(("a", 1)), "q"))
    assert writes == [(["a"], [("a", 1), ("a", 1)])]
    assert published(tmp_path) == [("a", 1), ("a", 1), ("b", 2), ("c", 3)]


def test_an_unchanged_table_keeps_its_snapshot(eng, writes, tmp_path: Path):
    before = eng.store.version("q")
    with eng.transaction():
        eng.execute(_sql("DELETE FROM q WHERE _dlq_sk = 'b'"))
        eng.execute(sqlglot.exp.insert(_rows(("b", 2)), "q"))
    assert writes == [([], [])]
    assert eng.store.version("q") == before
    assert published(tmp_path) == [("a", 1), ("b", 2), ("c", 3)]


def test_a_null_key_publishes_the_whole_table(eng, writes, tmp_path: Path):
    with eng.transaction():
        eng.execute(sqlglot.exp.insert(_rows((None, 9)), "q"))
        eng.execute(_sql("DELETE FROM q WHERE _dlq_sk = 'a'"))
    assert writes == [(None, [(None, 9), ("b", 2), ("c", 3)])]  # no IN matches NULL
    assert published(tmp_path) == [(None, 9), ("b", 2), ("c", 3)]


def _temp_tables(eng) -> list[str]:  # noqa: ANN001
    rows = eng.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary AND table_name LIKE '_sg_keys_%'"
    ).fetchall()
    return [r[0] for r in rows]


def test_the_differing_keys_are_grouped_once(eng, monkeypatch, tmp_path: Path):
    """The grouping of both sides' rows (its ``HAVING``) is in one statement a commit,
    however many queries read its keys (the NULL check, the published keys, the rows to
    append)."""

    def grouping(_self, statement):  # noqa: ANN001, ANN202
        return statement.sql("duckdb") if statement.find(sqlglot.exp.Having) else None

    groupings = record_calls(monkeypatch, Engine, "render", grouping)
    with eng.transaction():
        eng.execute(_sql("UPDATE q SET v = 30 WHERE _dlq_sk = 'c'"))
    assert len(groupings) == 1, groupings
    assert published(tmp_path) == [("a", 1), ("b", 2), ("c", 30)]
    assert _temp_tables(eng) == []  # gone once published


def test_the_keys_table_goes_when_the_publish_fails(eng, monkeypatch, tmp_path: Path):
    def refuse(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        raise OSError("the catalog went away")

    monkeypatch.setattr(iceberg_store.IcebergStore, "publish", refuse)
    with pytest.raises(OSError), eng.transaction():
        eng.execute(_sql("UPDATE q SET v = 30 WHERE _dlq_sk = 'c'"))
    assert _temp_tables(eng) == []
    assert published(tmp_path) == [("a", 1), ("b", 2), ("c", 3)]
