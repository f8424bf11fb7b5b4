"""The embedded engine publishes an Iceberg table's rows as one Parquet file DuckDB wrote,
committed by pyiceberg's ``add_files`` steps, where the plain case allows; otherwise
pyiceberg writes the Arrow rows (engines/iceberg_store.py ``_write_file``).

Which path a write took is seen in the table's data files (``sg-<uuid>.parquet`` are
DuckDB's); what was published is read back by pyiceberg (tests/iceberg_read.py), and by
pyarrow from the files the snapshot lists — not by sluicegate.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sqlglot

from sluicegate.engines.iceberg_store import _local_path
from tests.iceberg_read import catalog, embedded_engine

NS = "files"
D1, D2, D3 = dt.date(2026, 3, 1), dt.date(2026, 3, 2), dt.date(2026, 4, 1)


def _sql(text: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(text, read="duckdb")


def _day(day: dt.date, *values: int) -> sqlglot.exp.Expression:
    rows = ", ".join(f"({v}, 'v{v}', DATE '{day}')" for v in values)
    return _sql(f"SELECT * FROM (VALUES {rows}) AS t(k, s, _logical_date)")


@pytest.fixture
def eng(tmp_path: Path):  # noqa: ANN201
    e = embedded_engine(tmp_path, NS)
    yield e
    e.close()


def _table(tmp_path: Path, name: str = "t"):  # noqa: ANN202
    return catalog(tmp_path / "catalog.db", tmp_path / "iceberg").load_table(f"{NS}.{name}")


def published(tmp_path: Path, name: str = "t") -> list[tuple]:
    rows = _table(tmp_path, name).scan().to_arrow().to_pylist()
    return sorted(tuple(r.values()) for r in rows)


def live_files(tmp_path: Path, name: str = "t") -> list[str]:
    """The file names the current snapshot lists (pyiceberg's plan)."""
    return sorted(
        t.file.file_path.rsplit("/", 1)[-1] for t in _table(tmp_path, name).scan().plan_files()
    )


def _ours(files: list[str]) -> list[str]:
    return [f for f in files if f.startswith("sg-")]


def test_a_first_write_commits_the_file_duckdb_wrote(eng, tmp_path: Path):
    with eng.transaction():
        eng.create_table_as("t", _day(D1, 1, 2, 3))
    assert published(tmp_path) == [(1, "v1", D1), (2, "v2", D1), (3, "v3", D1)]
    files = live_files(tmp_path)
    assert len(files) == 1 and _ours(files) == files
    table = _table(tmp_path)
    # no field ids in the file: the table maps its columns by name
    assert "schema.name-mapping.default" in table.properties
    (task,) = table.scan().plan_files()
    assert task.file.record_count == 3
    assert task.file.partition[0] == (2026 - 1970) * 12 + 2  # month(_logical_date), March
    path = _local_path(task.file.file_path)
    assert pq.read_table(path).num_rows == 3
    assert pq.read_schema(path).field("k").metadata is None  # no PARQUET:field_id
    assert table.current_snapshot().summary["sluicegate-tx"]


def test_a_date_replace_deletes_only_that_date(eng, tmp_path: Path):
    with eng.transaction():
        eng.create_table_as("t", _day(D1, 1, 2))
    with eng.transaction():
        eng.execute(sqlglot.exp.insert(_day(D2, 5), "t"))
    with eng.transaction():  # a rerun of D1 with other rows
        eng.execute(_sql(f"DELETE FROM t WHERE _logical_date = DATE '{D1}'"))
        eng.execute(sqlglot.exp.insert(_day(D1, 7), "t"))
    assert published(tmp_path) == [(5, "v5", D2), (7, "v7", D1)]
    assert len(_ours(live_files(tmp_path))) == 2  # D2's file and D1's new one
    assert eng.fetch(_sql("SELECT k FROM t ORDER BY k")) == [(5,), (7,)]


def test_rows_of_two_months_are_written_by_pyiceberg(eng, tmp_path: Path):
    with eng.transaction():
        eng.create_table_as("t", _day(D1, 1))
    with eng.transaction():  # one file would hold two partitions: pyiceberg splits them
        eng.execute(sqlglot.exp.insert(_day(D2, 2), "t"))
        eng.execute(sqlglot.exp.insert(_day(D3, 3), "t"))
    assert published(tmp_path) == [(1, "v1", D1), (2, "v2", D2), (3, "v3", D3)]
    files = live_files(tmp_path)
    assert len(_ours(files)) == 1 and len(files) == 3


def test_a_json_column_is_written_by_pyiceberg(eng, tmp_path: Path):
    with eng.transaction():
        eng.create_table_as("j", _sql("""SELECT 1 AS k, '{"a": 1}'::JSON AS doc"""))
    assert published(tmp_path, "j") == [(1, '{"a": 1}')]
    assert _ours(live_files(tmp_path, "j")) == []


def test_a_new_shape_replaces_the_table(eng, tmp_path: Path):
    with eng.transaction():
        eng.create_table_as("t", _day(D1, 1))
    with eng.transaction():
        eng.create_table_as("t", _sql("SELECT 'x' AS k, 2.5 AS w"))
    assert published(tmp_path) == [("x", 2.5)]
    with eng.transaction():  # the same shape again: DuckDB's file
        eng.create_table_as("t", _sql("SELECT 'y' AS k, 3.5 AS w"))
    assert published(tmp_path) == [("y", 3.5)]
    assert len(_ours(live_files(tmp_path))) == 1
    with eng.transaction():  # the same columns in another order: a new shape too
        eng.create_table_as("t", _sql("SELECT 4.5 AS w, 'z' AS k"))
    assert published(tmp_path) == [(4.5, "z")]


def test_local_path():
    assert _local_path("file:///a/b") == "/a/b"
    assert _local_path("/a/b") == "/a/b"
    assert _local_path("s3://bucket/a") is None
