"""examples/retail builds dim_customer, fct_sales (partitioned Parquet) and three marts.

The example contract is run as shipped (only ``root``, ``warehouse`` and ``export`` point
into a temp folder) on a small generated feed, and its model is reconciled with the
generator's ground truth. On Spark, the example's marts are rendered for Spark SQL and
run over the exported Parquet, and must equal the marts DuckDB materialized.
"""

from __future__ import annotations

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.compile.model.checks import compiled_marts
from sluicegate.compile.render import render
from sluicegate.datagen.retail import generate
from sluicegate.run.pipeline import run_contract
from tests.conftest import REPO

pytestmark = pytest.mark.duckdb

EXAMPLE = REPO / "examples" / "retail" / "contract.yml"
MARTS = {"mart_monthly_revenue", "mart_top_products", "mart_customer_running_revenue"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("example")
    truth = generate(tmp / "data", lines=4000, seed=21)
    loaded = load_contract(
        EXAMPLE,
        variables={
            "root": str(tmp / "data"),
            "warehouse": str(tmp / "wh.duckdb"),
            "export": str(tmp / "export"),
        },
        logical_date="2024-12-31",
    )
    result = run_contract(loaded)
    return tmp, truth, result, loaded


def test_example_builds_the_star_schema(built):
    tmp, truth, result, _loaded = built
    assert result.exit_code == 0 and result.metrics["ledger"]["balanced"]
    wh = duckdb.connect(str(tmp / "wh.duckdb"), read_only=True)
    tables = {
        r[0] for r in wh.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert {"dim_customer", "fct_sales", *MARTS} <= tables
    assert (
        wh.execute("SELECT count(*) FROM dim_customer").fetchone()[0] == truth["customer_dim_rows"]
    )
    n, qty, amount, versions = wh.execute(
        "SELECT count(*), sum(quantity), sum(amount), sum(dim_customer_version) FROM fct_sales"
    ).fetchone()
    cs = truth["fact_checksum"]
    assert (n, qty, float(amount), versions) == (
        truth["fact_rows"],
        cs["sum_quantity"],
        cs["sum_amount"],
        cs["sum_customer_version"],
    )
    for mart in MARTS:
        assert wh.execute(f"SELECT count(*) FROM {mart}").fetchone()[0] > 0
    months = wh.execute("SELECT count(*) FROM mart_monthly_revenue").fetchone()[0]
    assert months == 18
    exported = duckdb.execute(
        f"SELECT count(*), sum(amount) FROM read_parquet('{tmp}/export/fct_sales/**/*.parquet', "
        "hive_partitioning = true)"
    ).fetchone()
    assert exported == (n, amount)
    assert sorted(p.name for p in (tmp / "export" / "fct_sales").iterdir()) == [
        "year=2023",
        "year=2024",
    ]


@pytest.mark.spark
def test_example_marts_on_spark_over_the_export(built, spark):
    tmp, _truth, result, loaded = built
    assert result.exit_code == 0
    spark.read.parquet(str(tmp / "export" / "fct_sales")).createOrReplaceTempView("fct_sales")
    wh = duckdb.connect(str(tmp / "wh.duckdb"), read_only=True)
    marts = compiled_marts(loaded.contract)
    assert {m.name for m in marts} == MARTS
    for m in marts:
        cols = ", ".join(m.columns)
        got = sorted(tuple(r) for r in spark.sql(render(m.query, "spark")).collect())
        want = sorted(wh.execute(f"SELECT {cols} FROM {m.name}").fetchall())
        assert got == want, m.name
