"""Both engines serve the same rows: the retail run on DuckDB and on Spark, each served
into its own database of one real PostgreSQL server, read back with ``psql``.

Spark hands its rows to the same loader as Arrow batches (``DataFrame.toArrow``), so one
transaction, one COPY path and one type mapping serve both engines (docs/serving.md has
the measurement against Spark's JDBC writer).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import run_contract
from tests.engines.test_serve import SECRET_ENV, TABLES, pg_url, project, rows, served_counts

pytestmark = pytest.mark.spark

DAY = "2024-12-31"
#: Columns compared per table (None: every column). The run id differs between the two
#: runs (it digests the contract, whose warehouse path differs), so the fact is compared
#: without it, and the quality facts by what they say, not by when or under which run.
COMPARED: dict[str, list[str] | None] = {
    "quality_facts": ["check_id", "kind", "status", "severity", "metric", "failed", "evaluated"],
}
RUN_ID = {"_run_id", "run_id"}


def columns(pg, db: str, table: str) -> list[tuple[str, str]]:
    out = rows(
        pg,
        db,
        "SELECT ordinal_position::text || '|' || column_name || '|' || data_type "
        f"FROM information_schema.columns WHERE table_schema = 'serving' AND table_name = '{table}'",
    )
    return [tuple(r.split("|")[1:]) for r in sorted(out, key=lambda r: int(r.split("|")[0]))]


def content(pg, db: str, table: str) -> list[str]:
    names = COMPARED.get(table) or [n for n, _ in columns(pg, db, table) if n not in RUN_ID]
    select = ", ".join(f'"{n}"' for n in names)
    return rows(pg, db, f"SELECT {select} FROM serving.{table}")


def test_duckdb_and_spark_serve_the_same_rows(tmp_path: Path, pg_server, monkeypatch):
    from sluicegate.datagen.retail import generate

    data = tmp_path / "data"
    generate(data, lines=3000, seed=3)
    monkeypatch.setenv(SECRET_ENV, pg_server.password)
    root = project(tmp_path)
    statuses = {}
    for engine in ("duckdb", "spark"):
        pg_server.create_database(f"serve_{engine}")
        loaded = load_contract(
            root / "contract.yml",
            variables={"root": str(data), "pg_url": pg_url(pg_server, f"serve_{engine}")},
            logical_date=DAY,
        )
        loaded.contract.outputs.warehouse = str(
            tmp_path / ("wh.duckdb" if engine == "duckdb" else "wh-spark")
        )
        loaded.contract.outputs.export = str(tmp_path / f"export-{engine}")
        result = run_contract(loaded, engine_name=engine)
        facts = {f["check_id"]: f for f in result.metrics["facts"]}
        assert facts["serve:app_db"]["status"] == "pass", facts["serve:app_db"]
        statuses[engine] = result.status
    assert statuses["duckdb"] == statuses["spark"]
    duck, spark = "serve_duckdb", "serve_spark"
    assert served_counts(pg_server, duck) == served_counts(pg_server, spark)
    for table in TABLES:
        assert columns(pg_server, duck, table) == columns(pg_server, spark, table), table
        assert content(pg_server, duck, table) == content(pg_server, spark, table), table
