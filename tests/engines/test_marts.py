"""Marts (model.marts): checked before running, built in dependency order, same on every engine.

The retail marts (LAG month over month, DENSE_RANK top products per month, a cumulative
running revenue per customer) run on a small fact table on DuckDB and on Spark SQL and
are reconciled with a plain-Python computation of the same numbers.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from decimal import Decimal

import duckdb
import pytest
from sqlglot import exp

from sluicegate.compile.model.marts import MartError, compile_marts
from sluicegate.compile.render import render

pytestmark = pytest.mark.duckdb

SCHEMA = {
    "fct_sales": {
        "sale_id": "VARCHAR",
        "order_ts": "TIMESTAMP",
        "customer_id": "VARCHAR",
        "product_id": "VARCHAR",
        "amount": "DECIMAL(18,2)",
        "segment": "VARCHAR",
    },
    "dim_customer": {"customer_id": "VARCHAR", "segment": "VARCHAR", "is_current": "BOOLEAN"},
}

RETAIL_MARTS = {
    "mart_monthly_revenue": """
        WITH m AS (
          SELECT date_trunc('month', order_ts) AS month, sum(amount) AS revenue, count(*) AS orders
          FROM fct_sales GROUP BY 1
        )
        SELECT month, revenue, orders,
               LAG(revenue) OVER (ORDER BY month) AS prev_revenue,
               revenue - LAG(revenue) OVER (ORDER BY month) AS mom_change
        FROM m
    """,
    "mart_top_products": """
        WITH p AS (
          SELECT date_trunc('month', order_ts) AS month, product_id, sum(amount) AS revenue
          FROM fct_sales GROUP BY 1, 2
        ), r AS (
          SELECT month, product_id, revenue,
                 DENSE_RANK() OVER (PARTITION BY month ORDER BY revenue DESC) AS revenue_rank
          FROM p
        )
        SELECT month, product_id, revenue, revenue_rank FROM r WHERE revenue_rank <= 3
    """,
    "mart_customer_running_revenue": """
        WITH cm AS (
          SELECT customer_id, date_trunc('month', order_ts) AS month, sum(amount) AS revenue
          FROM fct_sales GROUP BY 1, 2
        )
        SELECT customer_id, month, revenue,
               SUM(revenue) OVER (PARTITION BY customer_id ORDER BY month
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_revenue
        FROM cm
    """,
}


def sales(n: int = 400, seed: int = 5) -> list[tuple]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ts = dt.datetime(2024, 1, 1) + dt.timedelta(hours=rng.randint(0, 24 * 150))
        amount = Decimal(rng.randint(1, 5000)) / 100
        out.append(
            (f"S{i:05d}", ts, f"C{rng.randint(1, 12)}", f"P{rng.randint(1, 6)}", amount, "vip")
        )
    return out


def load_sales(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    con.execute(
        "CREATE TABLE fct_sales (sale_id VARCHAR, order_ts TIMESTAMP, customer_id VARCHAR, "
        "product_id VARCHAR, amount DECIMAL(18,2), segment VARCHAR)"
    )
    con.executemany("INSERT INTO fct_sales VALUES (?, ?, ?, ?, ?, ?)", rows)


def month(ts: dt.datetime) -> dt.datetime:
    return dt.datetime(ts.year, ts.month, 1)


def expected(rows: list[tuple]) -> dict[str, list[tuple]]:
    """The three marts computed in plain Python."""
    by_month: dict[dt.datetime, list] = defaultdict(list)
    for r in rows:
        by_month[month(r[1])].append(r)
    monthly, prev = [], None
    for m in sorted(by_month):
        rev = sum(r[4] for r in by_month[m])
        monthly.append((m, rev, len(by_month[m]), prev, None if prev is None else rev - prev))
        prev = rev
    top = []
    for m in sorted(by_month):
        per: dict[str, Decimal] = defaultdict(Decimal)
        for r in by_month[m]:
            per[r[3]] += r[4]
        ranks = {v: i + 1 for i, v in enumerate(sorted(set(per.values()), reverse=True))}
        top += [(m, p, v, ranks[v]) for p, v in per.items() if ranks[v] <= 3]
    running = []
    cm: dict[tuple, Decimal] = defaultdict(Decimal)
    for r in rows:
        cm[(r[2], month(r[1]))] += r[4]
    for c in sorted({k[0] for k in cm}):
        total = Decimal(0)
        for m in sorted(k[1] for k in cm if k[0] == c):
            total += cm[(c, m)]
            running.append((c, m, cm[(c, m)], total))
    return {
        "mart_monthly_revenue": monthly,
        "mart_top_products": sorted(top),
        "mart_customer_running_revenue": running,
    }


ORDER_BY = {
    "mart_monthly_revenue": "month",
    "mart_top_products": "month, product_id",
    "mart_customer_running_revenue": "customer_id, month",
}


def test_retail_marts_reconcile_on_duckdb():
    rows = sales()
    con = duckdb.connect()
    load_sales(con, rows)
    marts = compile_marts(RETAIL_MARTS, SCHEMA)
    assert {m.name for m in marts} == set(RETAIL_MARTS)
    want = expected(rows)
    for m in marts:
        con.execute(f"CREATE TABLE {m.name} AS {render(m.query, 'duckdb')}")
        got = con.execute(f"SELECT * FROM {m.name} ORDER BY {ORDER_BY[m.name]}").fetchall()
        assert got == want[m.name], m.name
        assert [d[0] for d in con.execute(f"SELECT * FROM {m.name}").description] == m.columns


@pytest.mark.spark
def test_retail_marts_run_on_spark_identically(spark):
    rows = sales()
    spark.createDataFrame(
        rows,
        "sale_id STRING, order_ts TIMESTAMP, customer_id STRING, product_id STRING, "
        "amount DECIMAL(18,2), segment STRING",
    ).createOrReplaceTempView("fct_sales")
    want = expected(rows)
    for m in compile_marts(RETAIL_MARTS, SCHEMA):
        sql = render(m.query, "spark")
        got = [tuple(r) for r in spark.sql(f"{sql} ORDER BY {ORDER_BY[m.name]}").collect()]
        assert got == want[m.name], m.name


def test_dependency_order_and_mart_on_mart():
    marts = {
        "c": "SELECT best_month FROM b",
        "b": "SELECT max(revenue) AS best_month FROM a",
        "a": "SELECT sum(amount) AS revenue FROM fct_sales",
    }
    compiled = compile_marts(marts, SCHEMA)
    assert [m.name for m in compiled] == ["a", "b", "c"]
    assert compiled[1].reads == ["a"] and compiled[1].columns == ["best_month"]
    con = duckdb.connect()
    load_sales(con, sales(50))
    for m in compiled:
        con.execute(f"CREATE TABLE {m.name} AS {render(m.query, 'duckdb')}")
    assert (
        con.execute("SELECT best_month FROM c").fetchone()[0]
        == con.execute("SELECT sum(amount) FROM fct_sales").fetchone()[0]
    )


@pytest.mark.parametrize(
    ("marts", "message", "suggestion"),
    [
        ({"a": "SELECT x FROM b", "b": "SELECT y FROM a"}, "cycle", None),
        ({"a": "SELECT 1 AS one FROM a"}, "reads itself", None),
        ({"a": "SELECT amount FROM fct_sale"}, "unknown table 'fct_sale'", "fct_sales"),
        ({"a": "SELECT amout AS x FROM fct_sales"}, "unknown column 'amout'", "amount"),
        (
            {"a": "SELECT f.custmer_id FROM fct_sales f"},
            "unknown column 'custmer_id'",
            "customer_id",
        ),
        ({"a": "SELECT sum(amount) FROM fct_sales"}, "needs a name", None),
        ({"a": "SELECT amount AS x, amount AS x FROM fct_sales"}, "unique", None),
        ({"a": "SELECT random() AS r FROM fct_sales"}, "non-deterministic", None),
        ({"a": "DELETE FROM fct_sales"}, "must be a SELECT", None),
        ({"a": "SELECT 1 AS x; SELECT 2 AS y"}, "exactly one SELECT", None),
        ({"a": "SELECT * FROM read_parquet('x.parquet')"}, "model tables", None),
        ({"a": "SELECT * FROM main.fct_sales"}, "must not be qualified", None),
        ({"a": "SELEC amount FROM fct_sales"}, "not valid SQL", None),
        ({"a": "SELECT x FROM sales_clean"}, "unknown table", None),
    ],
)
def test_mart_errors(marts: dict, message: str, suggestion: str | None):
    problems: list[tuple[str, MartError]] = []
    compile_marts(marts, SCHEMA, on_error=lambda name, err: problems.append((name, err)))
    assert problems, "the mart should have been refused"
    _name, err = problems[0]
    assert message in err.message
    assert err.suggestion == suggestion
    with pytest.raises(MartError):
        compile_marts(marts, SCHEMA)


def test_a_broken_mart_does_not_cascade():
    problems: list = []
    compiled = compile_marts(
        {
            "a": "SELECT nope AS x FROM fct_sales",
            "b": "SELECT x FROM a",
            "c": "SELECT amount AS y FROM fct_sales",
        },
        SCHEMA,
        on_error=lambda name, err: problems.append(name),
    )
    assert problems == ["a"]
    assert [m.name for m in compiled] == ["c"]


def test_compiled_marts_are_remembered_by_their_sql_and_the_model_schema(monkeypatch):
    """A watch compiles the same marts every batch: the second compile is the first's
    result (nothing parsed again), each caller gets trees of its own (rendering may change
    a tree), and a model schema that changed is compiled (and refused) again."""
    from sluicegate.compile.model import marts as marts_module

    first = compile_marts(RETAIL_MARTS, SCHEMA)
    parsed: list[str] = []
    real_parse = marts_module.parse_mart
    monkeypatch.setattr(
        marts_module, "parse_mart", lambda sql: parsed.append(sql) or real_parse(sql)
    )
    second = compile_marts(dict(RETAIL_MARTS), {k: dict(v) for k, v in SCHEMA.items()})
    assert not parsed, "the same marts and schema must not be compiled again"
    assert [(m.name, m.query.sql()) for m in second] == [(m.name, m.query.sql()) for m in first]
    before = first[0].query.sql()
    second[0].query.set("where", exp.false())  # one caller changing its tree ...
    third = compile_marts(RETAIL_MARTS, SCHEMA)
    assert first[0].query.sql() == third[0].query.sql() == before  # ... changes no other's
    narrower = {k: {c: t for c, t in v.items() if c != "amount"} for k, v in SCHEMA.items()}
    problems: list = []
    compile_marts(RETAIL_MARTS, narrower, on_error=lambda name, err: problems.append(name))
    assert problems, "a schema without 'amount' must be compiled again and refused"
