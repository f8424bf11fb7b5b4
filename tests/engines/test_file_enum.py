"""The lineage path held as an ``ENUM`` of the bound files while a DuckDB run works
(engines/duckdb_inputs.py ``file_enum``), and as text in everything it publishes.

The type is a speed choice (one small integer per line where a path string was copied
into the lines and typed relations, and compared in every lineage sort): it must order
exactly like the path text, fall back to text when DuckDB names a file otherwise than it
was bound, and never reach a published table, whichever table format stores it — read
back here by DuckDB's catalog, by delta-rs and by pyiceberg.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from sluicegate.datagen.retail import generate
from sluicegate.engines import duckdb_inputs
from sluicegate.engines.duckdb_inputs import load_lines
from tests.conftest import REPO
from tests.engines.test_differential import run_both

pytestmark = pytest.mark.duckdb

# names whose text order is easy to get wrong: case, digits, a multi-byte character,
# glob characters, a quote
NAMES = ["b.json", "B.json", "a-b.json", "a.json", "a[1].json", "é.json", "z*y.json", "q'.json"]


def _render(e: Any) -> str:
    return e.sql("duckdb")


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    out = []
    for i, name in enumerate(NAMES):
        path = tmp_path / name
        path.write_text("".join(f'{{"n": {i * 10 + j}}}\n' for j in range(3)), encoding="utf-8")
        out.append(str(path))
    return out


def _lines(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("SELECT _source_file, _source_line FROM _sg_lines").fetchall()


@pytest.mark.parametrize("cursors", [1, 2])
def test_the_lines_carry_the_path_as_an_enum_that_orders_like_the_text(files, cursors):
    con = duckdb.connect()
    load_lines(con, _render, files, "_sg_lines", cursors=cursors)
    kind = con.execute("SELECT DISTINCT typeof(_source_file) FROM _sg_lines").fetchall()
    assert len(kind) == 1 and kind[0][0].startswith("ENUM(")
    rows = _lines(con)
    assert sorted(rows) == sorted((f, n) for f in files for n in (1, 2, 3))
    by_enum = con.execute(
        "SELECT _source_file, _source_line FROM _sg_lines ORDER BY _source_file, _source_line"
    ).fetchall()
    by_text = con.execute(
        "SELECT _source_file::VARCHAR, _source_line FROM _sg_lines ORDER BY 1, 2"
    ).fetchall()
    assert by_enum == by_text == sorted(rows)  # Python's order: code points = UTF-8 bytes
    # compared with text it is text: a path outside the enum is no error, only unequal
    assert con.execute(
        "SELECT count(*) FROM _sg_lines WHERE _source_file = ? OR _source_file = 'elsewhere'",
        [files[0]],
    ).fetchall() == [(3,)]


def test_a_file_named_otherwise_than_bound_keeps_its_path_as_text(files, monkeypatch):
    """An enum that lacks a name DuckDB reports must not fail the run or lose the line:
    the load starts over with the paths as text."""
    con = duckdb.connect()
    real = duckdb_inputs.file_enum
    monkeypatch.setattr(duckdb_inputs, "file_enum", lambda fs: real(list(fs)[1:]))
    load_lines(con, _render, files, "_sg_lines", cursors=2)
    assert con.execute("SELECT DISTINCT typeof(_source_file) FROM _sg_lines").fetchall() == [
        ("VARCHAR",)
    ]
    assert sorted(_lines(con)) == sorted((f, n) for f in files for n in (1, 2, 3))


@pytest.fixture(scope="module")
def retail(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("file-enum-retail")
    data = tmp / "data"
    generate(data, lines=2_000, seed=7)
    return run_both(
        REPO / "examples/retail/contract.yml",
        tmp,
        {"root": str(data)},
        "2024-06-30",
        ("duckdb", "duckdb-delta", "duckdb-iceberg"),
    )


LINEAGE_PATHS = ("_source_file", "_kept_source_file")


def test_no_published_duckdb_table_holds_the_enum(retail):
    assert retail["duckdb"]["result"].metrics["ledger"]["balanced"]
    con = duckdb.connect(str(retail["duckdb"]["warehouse"]), read_only=True)
    try:
        columns = con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
        ).fetchall()
    finally:
        con.close()
    paths = [(t, c, ty) for t, c, ty in columns if c in LINEAGE_PATHS]
    assert {t for t, _, _ in paths} >= {"sales_clean", "sales_dlq", "sales_duplicates",
                                        "fct_sales", "dim_customer"}  # fmt: skip
    assert [c for c in columns if "ENUM" in c[2].upper()] == []
    assert {ty for _, _, ty in paths} == {"VARCHAR"}


def test_delta_tables_store_the_path_as_a_string(retail):
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    assert retail["duckdb-delta"]["result"].metrics["ledger"]["balanced"]
    seen = 0
    for folder in sorted(Path(retail["duckdb-delta"]["warehouse"]).iterdir()):
        if not (folder / "_delta_log").is_dir():
            continue
        table = DeltaTable(str(folder))
        for field in table.schema().fields:
            if field.name in LINEAGE_PATHS:
                seen += 1
                assert str(field.type) in ('PrimitiveType("string")', "string"), folder.name
        for path in table.file_uris():
            schema = pq.read_schema(path)
            for name in LINEAGE_PATHS:
                if name in schema.names:
                    assert str(schema.field(name).type) in ("string", "large_string"), path
    assert seen >= 5


def test_iceberg_tables_store_the_path_as_a_string(retail):
    from pyiceberg.types import StringType

    from tests.iceberg_read import catalog

    run = retail["duckdb-iceberg"]
    assert run["result"].metrics["ledger"]["balanced"]
    tmp = Path(run["warehouse"]).parent
    cat = catalog(tmp / "catalog.db", tmp / "iceberg")
    seen = 0
    for ident in cat.list_tables("duckdb_iceberg"):
        for field in cat.load_table(ident).schema().fields:
            if field.name in LINEAGE_PATHS:
                seen += 1
                assert isinstance(field.field_type, StringType), ident
    assert seen >= 5
