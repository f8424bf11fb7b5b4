"""A Parquet source already of its declared types is read through a view, not copied.

The typed relation of such a source computes nothing per row, so a one-shot DuckDB run
keeps it a view over the files (run/pipeline.py ``_load_typed``) and each stage reads the
files again. These tests pin the three things that must hold: the choice itself (a cast,
a DOUBLE, an undeclared column or a partition folder keep the copy), the same rows in the
same places either way (reconciled with pyarrow, not with sluicegate), and a file
rewritten while the run holds only a view is refused before anything is published.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluicegate.compile.read.parquet import taken_as_stored
from sluicegate.contract.coltypes import parse_type
from tests.conftest import run_cli, run_cli_paused

pytestmark = pytest.mark.duckdb

CONTRACT = """\
name: orders
source:
  path: land
  format: parquet
  columns:
    id: {type: BIGINT, nullable: false}
    amount: INTEGER
    price: DECIMAL(10,2)
    name: VARCHAR
rules:
  - {name: positive_amount, expect: amount > 0}
gate: {warn_above: 0.9, fail_above: 0.95}
outputs: {warehouse: wh.duckdb, clean: ok_rows, quarantine: bad_rows}
"""

ROWS = {
    "id": [1, 2, 3, 4, 5, None],
    "amount": [5, -1, None, 7, 0, 3],
    "price": [Decimal("1.25"), None, Decimal("0.10"), Decimal("9.99"), None, Decimal("2.00")],
    "name": ["a", "b", None, "", "e", "f"],
}


def _write(root: Path, amount_type: pa.DataType | None = None) -> Path:
    land = root / "land"
    land.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "id": pa.array(ROWS["id"], pa.int64()),
            "amount": pa.array(ROWS["amount"], amount_type or pa.int32()),
            "price": pa.array(ROWS["price"], pa.decimal128(10, 2)),
            "name": pa.array(ROWS["name"], pa.string()),
        }
    )
    pq.write_table(table, land / "a.parquet")
    (root / "c.yml").write_text(CONTRACT)
    return root / "c.yml"


def _typed_statement(stdout: str) -> str:
    profile = json.loads(stdout)["profile"]
    made = [
        r["sql"]
        for r in profile
        if r["sql"].startswith("CREATE OR REPLACE TEMPORARY") and '"_sg_typed" AS' in r["sql"][:60]
    ]
    assert len(made) == 1, made
    return made[0]


def _placed(root: Path) -> dict[str, list]:
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    try:
        return {
            "clean": con.execute(
                "SELECT id, amount, price, name, _source_line FROM ok_rows ORDER BY _source_line"
            ).fetchall(),
            "dlq": con.execute(
                "SELECT _source_line, _reason FROM bad_rows ORDER BY _source_line"
            ).fetchall(),
        }
    finally:
        con.close()


def _expected() -> dict[str, list]:
    """Where each row belongs, computed here from the rows (not by sluicegate)."""
    clean, dlq = [], []
    for i in range(len(ROWS["id"])):
        line = i + 1
        row = {k: v[i] for k, v in ROWS.items()}
        if row["id"] is None:
            dlq.append((line, "missing_required"))
        elif row["amount"] is None or row["amount"] <= 0:
            dlq.append((line, "positive_amount"))
        else:
            clean.append((row["id"], row["amount"], row["price"], row["name"], line))
    return {"clean": clean, "dlq": dlq}


def test_a_parquet_of_the_declared_types_is_read_through_a_view(tmp_path):
    c = _write(tmp_path)
    r = run_cli("run", str(c), "--profile", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _typed_statement(r.stdout).startswith('CREATE OR REPLACE TEMPORARY VIEW "_sg_typed"')
    assert _placed(tmp_path) == _expected()
    ledger = json.loads(r.stdout)["ledger"]
    assert (ledger["raw"], ledger["clean"], ledger["quarantined"]) == (6, 2, 4)


def test_a_column_that_needs_a_cast_keeps_the_copy_and_the_same_rows(tmp_path):
    c = _write(tmp_path, amount_type=pa.int64())  # BIGINT into INTEGER: cast, may mismatch
    r = run_cli("run", str(c), "--profile", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _typed_statement(r.stdout).startswith('CREATE OR REPLACE TEMPORARY TABLE "_sg_typed"')
    assert _placed(tmp_path) == _expected()


def _spec(declared: str) -> SimpleNamespace:
    return SimpleNamespace(parsed=parse_type(declared))


def test_which_loaded_parquet_is_taken_as_stored():
    source = SimpleNamespace(
        columns={"id": _spec("BIGINT"), "amount": _spec("INTEGER"), "score": _spec("DOUBLE")}
    )
    lineage = {"_source_file": "VARCHAR", "_source_line": "BIGINT"}
    typed = {**lineage, "id": "BIGINT", "amount": "INTEGER"}
    assert taken_as_stored(source, [], typed, "duckdb")  # `score` absent: NULL, no work
    assert not taken_as_stored(source, ["month"], typed, "duckdb")  # path parsed per row
    assert not taken_as_stored(source, [], {**typed, "extra": "VARCHAR"}, "duckdb")  # JSON
    assert not taken_as_stored(source, [], {**typed, "amount": "BIGINT"}, "duckdb")  # cast
    assert not taken_as_stored(source, [], {**typed, "score": "DOUBLE"}, "duckdb")  # finite
    assert not taken_as_stored(source, [], None, "duckdb")  # types unknown


def test_a_parquet_rewritten_while_only_a_view_holds_it_is_refused(tmp_path):
    """The view reads the file again at publish: a rewrite after the read stage must not
    publish the new rows under the old binding (exit 3, ``input_changed``, nothing written)."""
    c = _write(tmp_path)

    def rewrite() -> None:
        table = pq.read_table(tmp_path / "land" / "a.parquet")
        ids = pa.array([100 + i for i in range(table.num_rows)], pa.int64())
        pq.write_table(table.set_column(0, "id", ids), tmp_path / "land" / "a.parquet")

    r = run_cli_paused(["run", str(c), "--json"], "publish:attached", rewrite, cwd=tmp_path)
    out, err = r.stdout, r.stderr
    assert r.returncode == 3, (out, err)
    assert "input_changed" in err and "Traceback" not in err
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert (
            "ok_rows" not in tables
            or con.execute("SELECT count(*) FROM ok_rows").fetchone()[0] == 0
        )
    finally:
        con.close()
