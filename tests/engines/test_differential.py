"""Differential: the example contracts give the same outcomes on DuckDB and on Spark.

Each contract runs on DuckDB-file, DuckDB + Delta and Spark + Delta on the same input
(same run id: only the warehouse location and format differ, set after loading so the
contract digest is the same). Then every output is read back *independently of the
engines* — DuckDB's file with DuckDB, the Delta tables with delta-rs — and compared row
for row: clean, quarantine (the DLQ
inbox and outbox), duplicates, quality facts and run record (minus wall-clock columns),
and for retail the model (dimension, fact table, marts, the Parquet export). The run
metrics must agree on every count.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.datagen.retail import generate
from sluicegate.run.pipeline import run_contract
from tests.conftest import REPO, copy_orders_example

pytestmark = pytest.mark.spark

#: wall-clock columns: the only ones two runs of the same input may differ in
VOLATILE = {
    "_dlq_timestamp",
    "run_started_at",
    "evaluated_at",
    "started_at",
    "published_at",
    "metrics",
    "engine",
    "_dlq_recycled_at",
}
METRIC_KEYS = ("ledger", "rules", "builtin", "drift", "partitions", "schema_fingerprint", "run_id")


def _norm(v: Any) -> Any:
    """One Python shape for values read by DuckDB and by pyarrow."""
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    if isinstance(v, list | tuple):
        return tuple(_norm(x) for x in v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, Decimal):
        return v.normalize()
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=None)
    return v


def _rows(rows: list[dict[str, Any]]) -> list[tuple]:
    return sorted(
        (tuple(sorted((k, _norm(v)) for k, v in r.items() if k not in VOLATILE)) for r in rows),
        key=repr,
    )


def duckdb_table(warehouse: Path, table: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cur = con.execute(f'SELECT * FROM "{table}"')
        names = [d[0] for d in cur.description]
        return _rows([dict(zip(names, r, strict=True)) for r in cur.fetchall()])
    finally:
        con.close()


def parquet_table(folder: Path) -> list[tuple]:
    """A Spark output (a Delta table) read by delta-rs, not by sluicegate or Spark."""
    from tests.delta_read import delta_dicts, is_delta

    if not is_delta(folder):
        return []
    return _rows(delta_dicts(folder))


#: (engine, outputs.format, warehouse name): DuckDB-file, DuckDB + Delta, Spark + Delta
VARIANTS = {
    "duckdb": ("duckdb", None, "wh.duckdb"),
    "duckdb-delta": ("duckdb", "delta", "wh-delta"),
    "spark": ("spark", "delta", "wh-spark"),
    # Iceberg: one SQLite catalog (<tmp>/catalog.db), a namespace per variant
    "duckdb-iceberg": ("duckdb", "iceberg", "wh-duckdb-iceberg"),
    "spark-iceberg": ("spark", "iceberg", "wh-spark-iceberg"),
}


def use_iceberg(loaded: Any, tmp: Path, variant: str) -> None:
    """Point ``loaded``'s outputs at the shared test catalog, namespace = the variant."""
    from sluicegate.contract.iceberg_spec import IcebergCatalog

    loaded.contract.catalogs = {
        "lake": IcebergCatalog(
            uri=f"sqlite:///{tmp / 'catalog.db'}", warehouse=str(tmp / "iceberg")
        )
    }
    loaded.contract.outputs.catalog = "lake"
    loaded.contract.outputs.namespace = variant.replace("-", "_")


def output_rows(runs: dict[str, Any], variant: str, table: str) -> list[tuple]:
    """A variant's output table read by a reader sluicegate did not write with."""
    run = runs[variant]
    if VARIANTS[variant][1] == "iceberg":
        from tests.iceberg_read import catalog, iceberg_dicts

        tmp = run["warehouse"].parent
        cat = catalog(tmp / "catalog.db", tmp / "iceberg")
        return _rows(iceberg_dicts(cat, f"{variant.replace('-', '_')}.{table}"))
    return parquet_table(run["warehouse"] / table)


def run_both(
    contract: Path,
    tmp: Path,
    variables: dict[str, str],
    day: str,
    variants: tuple[str, ...] = ("duckdb", "duckdb-delta", "spark"),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for variant in variants:
        engine, fmt, wh_name = VARIANTS[variant]
        loaded = load_contract(contract, variables=variables, logical_date=day)
        wh = tmp / wh_name
        loaded.contract.outputs.warehouse = str(wh)
        loaded.contract.outputs.format = fmt
        if fmt == "iceberg":
            use_iceberg(loaded, tmp, variant)
        if loaded.contract.outputs.export:
            loaded.contract.outputs.export = str(tmp / f"export-{variant}")
        result = run_contract(loaded, engine_name=engine)
        out[variant] = {"result": result, "warehouse": wh, "loaded": loaded}
    return out


def assert_same_outcome(runs: dict[str, Any], tables: list[str]) -> None:
    duck = runs["duckdb"]
    for variant in [v for v in VARIANTS if v != "duckdb" and v in runs]:
        other = runs[variant]
        assert duck["result"].status == other["result"].status, variant
        assert duck["result"].exit_code == other["result"].exit_code, variant
        for key in METRIC_KEYS:
            assert duck["result"].metrics.get(key) == other["result"].metrics.get(key), key
        assert duck["result"].metrics["gate"]["status"] == other["result"].metrics["gate"]["status"]
        for table in tables:
            want = duckdb_table(duck["warehouse"], table)
            got = output_rows(runs, variant, table)
            assert got == want, f"{variant}: {table}"
            assert want or table.endswith(("_outbox", "duplicates")), f"{table} is empty"


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("diff-orders")
    contract = copy_orders_example(tmp / "orders") / "contract.yml"
    return run_both(contract, tmp, {}, "2024-01-01")


def test_orders_same_outcome_on_both_engines(orders):
    o = orders["duckdb"]["loaded"].contract.outputs
    assert_same_outcome(
        orders,
        [o.clean, o.quarantine, o.outbox, o.duplicates, o.facts, "_sluicegate_runs"],
    )
    assert orders["spark"]["result"].metrics["engine"] == "spark"


@pytest.fixture(scope="module")
def retail(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("diff-retail")
    data = tmp / "data"
    truth = generate(data, lines=3_000, seed=11)
    runs = run_both(REPO / "examples/retail/contract.yml", tmp, {"root": str(data)}, "2024-06-30")
    runs["truth"] = truth
    return runs


def test_retail_same_outcome_on_both_engines(retail):
    c = retail["duckdb"]["loaded"].contract
    o = c.outputs
    model = c.model
    tables = [o.clean, o.quarantine, o.outbox, o.duplicates, o.facts, "_sluicegate_runs"]
    if model is not None:
        tables += [*model.dimensions, *model.facts, *model.marts]
    assert_same_outcome(retail, tables)
    # the model's and the DLQ's counts (fact rows, unknown members, mart rows, inbox
    # inserts) agree too; only the export's folder differs per variant
    want = _without_paths(retail["duckdb"]["result"].metrics)
    assert "dim_customer" in want["model"]["facts"]["fct_sales"]["unknown_member"]
    assert all(want["model"]["marts"].values())
    for variant in ("duckdb-delta", "spark"):
        got = _without_paths(retail[variant]["result"].metrics)
        assert (got["model"], got["dlq"]) == (want["model"], want["dlq"]), variant
    truth = retail["truth"]
    led = retail["spark"]["result"].metrics["ledger"]
    assert retail["spark"]["result"].metrics["table_versions"][o.clean] == 0
    assert led["raw"] == truth["raw_lines"]
    assert led["duplicates"] == truth["duplicates_dropped"]
    assert led["clean"] == truth["clean"]
    assert led["corrupt"] == truth["corrupt_lines"]


def _without_paths(v: Any) -> Any:
    """``v`` without its ``path`` entries (each variant exports to its own folder)."""
    if isinstance(v, dict):
        return {k: _without_paths(x) for k, x in v.items() if k != "path"}
    return v


def test_retail_export_same_on_both_engines(retail):
    c = retail["duckdb"]["loaded"].contract
    if c.model is None or not c.outputs.export:
        pytest.skip("the retail example has no fact export")
    for fact in c.model.facts:
        duck = Path(retail["duckdb"]["loaded"].contract.outputs.export) / fact
        sprk = Path(retail["spark"]["loaded"].contract.outputs.export) / fact
        names = sorted(str(p.relative_to(duck)) for p in duck.rglob("*.parquet"))
        assert names == sorted(str(p.relative_to(sprk)) for p in sprk.rglob("*.parquet"))
        assert parquet_table(sprk) == parquet_table(duck)
