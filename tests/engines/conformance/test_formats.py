"""CSV and Parquet sources through a full run, on every engine.

The expected outcome of each row is written here from docs/contract-reference.md §6–§8.
Both readers run on Spark too (compile/csv_spark.py; parquet.py with read_spark's JSON
text for undeclared columns): a hostile CSV corpus must give the same typed rows there.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import run_contract
from tests.conftest import write

CONTRACT = """
name: fmt
source:
  path: data
  format: {fmt}
  columns:
    id: {{type: INTEGER, nullable: false}}
    qty: INTEGER
    price: DECIMAL(10,2)
rules:
  - {{name: positive_qty, expect: qty > 0}}
gate: {{warn_above: 1, fail_above: 1}}
outputs: {{warehouse: {wh}, clean: ok_rows, quarantine: bad_rows}}
"""

UNDECLARED_GAP = (
    "Parquet's undeclared columns are rescued with DuckDB's json_object + json_merge_patch"
)


def _outcome(eng) -> tuple[dict, dict]:  # noqa: ANN001
    clean = {r[0]: None for r in eng.fetch(exp.select("id").from_("ok_rows"))}
    bad = {r[1]: r[0] for r in eng.fetch(exp.select("_reason", "_source_line").from_("bad_rows"))}
    return clean, bad


def _run(tmp_path, engine_name, fmt):  # noqa: ANN001, ANN202
    wh = "wh.duckdb" if engine_name == "duckdb" else "wh"
    contract = write(tmp_path / "contract.yml", CONTRACT.format(fmt=fmt, wh=wh))
    loaded = load_contract(contract, logical_date="2024-01-01")
    result = run_contract(loaded, engine_name=engine_name)
    return result, tmp_path / wh


def test_csv_source(engine_name, open_test_engine, tmp_path):
    write(tmp_path / "data" / "a.csv", "id,qty,price\n1,2,1.50\n2,0,3\n3,x,1\n,5,2\n")
    result, wh = _run(tmp_path, engine_name, "csv")
    assert result.metrics["ledger"]["balanced"]
    clean, bad = _outcome(open_test_engine(wh))
    assert set(clean) == {1}
    # source lines: the header is line 1
    assert bad == {3: "positive_qty", 4: "type_mismatch", 5: "missing_required"}


def _parquet(tmp_path, **extra) -> None:  # noqa: ANN001, ANN003
    (tmp_path / "data").mkdir()
    columns = {
        "id": pa.array([1, 2, 3, None], pa.int64()),
        "qty": pa.array(["2", "0", "x", "5"]),
        "price": pa.array([1.5, 3.0, 1.0, 2.0]),
        **extra,
    }
    pq.write_table(pa.table(columns), tmp_path / "data" / "a.parquet")


def test_parquet_source(engine_name, open_test_engine, tmp_path):
    _parquet(tmp_path)
    result, wh = _run(tmp_path, engine_name, "parquet")
    assert result.metrics["ledger"]["balanced"]
    clean, bad = _outcome(open_test_engine(wh))
    assert set(clean) == {1}
    assert bad == {2: "positive_qty", 3: "type_mismatch", 4: "missing_required"}
    rescued = open_test_engine(wh).fetch(
        exp.select("_rescued_data").from_("bad_rows").where(exp.condition("_source_line = 3"))
    )
    assert rescued == [('{"qty":"x"}',)]


def test_parquet_undeclared_column_is_rescued(engine_name, open_test_engine, tmp_path):
    _parquet(
        tmp_path,
        note=pa.array(["a", None, "c", None]),
        score=pa.array([None, None, 1e-7, None], pa.float64()),
        seen=pa.array([None, None, dt.datetime(2024, 1, 2, 3, 4, 5), None], pa.timestamp("us")),
    )
    result, wh = _run(tmp_path, engine_name, "parquet")
    assert result.metrics["ledger"]["balanced"]
    drift = result.metrics["drift"]
    assert {"kind": "undeclared_field", "field": "note", "records": 2} in drift
    eng = open_test_engine(wh)
    rescued = eng.fetch(exp.select("_source_line", "_rescued_data").from_("bad_rows"))
    # undeclared first (its non-NULL value), then the mismatched column's value (§9)
    want = '{"note":"c","score":1e-7,"seen":"2024-01-02 03:04:05","qty":"x"}'
    assert sorted(rescued) == [(2, None), (3, want), (4, None)]


CSV_FILES = {
    "a.csv": [
        b"\xef\xbb\xbfid, name ,amt,extra",  # header: names trimmed; extra is undeclared
        b'1,"Smith, J",1.50,x',  # a quoted delimiter
        b'2,"say ""hi""",,',  # doubled quotes; empty -> NULL
        b"",  # blank
        b'3,bad"quote,1,y',  # a quote inside an unquoted field
        b'4,"",2',  # too few fields
        b"5,x,abc,q",  # amt does not cast
        b"6,x,1,q,extra-field",  # too many fields
        b',"no id",1,q',  # missing required
        b'7,"unterminated,1,q',  # an unbalanced quote
        b"8,\xff,1,q",  # invalid UTF-8
        b'9,"",  1.5 ,""',  # a quoted empty string; spaces around a number
    ],
    "b.csv": [b"amt,id", b"3,9"],  # another column order, name absent
    "c.csv": [b"id,id,amt", b"1,2,3"],  # a header repeating a name
    "d.csv": [b"id,name,amt"],  # header only
}


@pytest.mark.spark
@pytest.mark.parametrize("engine_name", ["spark"], indirect=True)
def test_spark_csv_rows_equal_duckdb(engine_name, tmp_path):
    from sluicegate.compile.read.table import typed_select
    from sluicegate.contract.models import TableSource
    from sluicegate.engines import open_engine

    data = tmp_path / "data"
    data.mkdir()
    for name, lines in CSV_FILES.items():
        (data / name).write_bytes(b"\r\n".join(lines) + b"\r\n")
    source = TableSource(
        path="data",
        format="csv",
        columns={
            "id": {"type": "BIGINT", "nullable": False},
            "name": "VARCHAR",
            "amt": "DECIMAL(10,2)",
        },
    )
    files = sorted(str(p) for p in data.iterdir())
    rows = {}
    for name in ("duckdb", "spark"):
        eng = open_engine(name, str(tmp_path / f"wh-{name}"))
        try:
            eng.load_lines(files, "_sg_lines")
            eng.create_table_as(
                "_sg_typed",
                typed_select("_sg_lines", source, [], eng.dialect),
                temporary=True,
            )
            got = eng.fetch_dicts(exp.select("*").from_("_sg_typed"))
        finally:
            eng.close()
        rows[name] = sorted(got, key=lambda r: (r["_source_file"], r["_source_line"]))
    assert len(rows["duckdb"]) == 12  # non-blank lines minus one header per file
    assert rows["spark"] == rows["duckdb"]
