"""The model stage end to end on the generated retail feed (seed 002's warehouse half).

A small seeded feed is generated with its ground truth; a run builds ``dim_customer``
(SCD2 from the unsorted changelog with duplicate events), ``fct_sales`` (as-of facts,
exported as Hive-partitioned Parquet) and the marts inside the publish transaction. The
results are reconciled with

* the generator's truth: dimension rows, fact rows and ``fact_checksum``
  (sum_quantity, sum_amount, sum_customer_version);
* an independent DuckDB computation over the raw files: the SCD2 dimension hand-written
  over ``read_json`` and each clean sale's version by ``ASOF JOIN``.

Then: on_missing (unknown member / quarantine with the ledger balanced), rerun
idempotence of the export, partitions of other dates untouched, a failed gate, and the
export's crash semantics (before the commit, during the swap).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import duckdb
import pyarrow.dataset as pads
import pytest
import sqlglot
from sqlglot import exp

from sluicegate.compile.contract_check import load_contract
from sluicegate.compile.model import asof
from sluicegate.datagen.retail import generate
from sluicegate.run import model as run_model
from sluicegate.run.pipeline import run_contract

pytestmark = pytest.mark.duckdb

DAY = "2024-12-31"

CONTRACT = """
name: retail_sales
vars: {root: ./data, on_missing: unknown_member}
source:
  name: sales
  path: ${root}/sales
  format: ndjson
  columns:
    sale_id: {type: VARCHAR, nullable: false}
    order_ts: {type: TIMESTAMP, formats: ["%Y-%m-%dT%H:%M:%SZ", "%d/%m/%Y %H:%M:%S"]}
    customer_id: VARCHAR
    product_id: VARCHAR
    store_id: VARCHAR
    channel: VARCHAR
    quantity: INTEGER
    unit_price: DECIMAL(10,2)
    ingested_at: {type: TIMESTAMP, formats: ["%Y-%m-%dT%H:%M:%SZ"]}
dedupe:
  key: [sale_id]
  order_by: ["ingested_at DESC NULLS LAST", order_ts, customer_id, product_id, store_id, channel, quantity, unit_price]
references:
  products: {path: "${root}/products.json", columns: {product_id: VARCHAR}}
  stores: {path: "${root}/stores.json", columns: {store_id: VARCHAR}}
  customers_cdc:
    path: ${root}/customers_cdc.json
    columns:
      customer_id: VARCHAR
      effective_ts: {type: TIMESTAMP, formats: ["%Y-%m-%dT%H:%M:%SZ"]}
      segment: VARCHAR
      region: VARCHAR
rules:
  - {name: non_null_customer, expect: customer_id IS NOT NULL}
  - {name: non_null_product, expect: product_id IS NOT NULL}
  - {name: non_null_store, expect: store_id IS NOT NULL}
  - {name: positive_quantity, expect: quantity IS NOT NULL AND quantity > 0}
  - {name: valid_price, expect: unit_price IS NOT NULL AND unit_price >= 0}
  - {name: known_product, expect: "product_id IS NULL OR product_id IN (SELECT product_id FROM products)"}
  - {name: known_store, expect: "store_id IS NULL OR store_id IN (SELECT store_id FROM stores)"}
  - {name: parseable_order_ts, expect: order_ts IS NOT NULL}
gate: {warn_above: 0.5, fail_above: 0.9}
outputs:
  warehouse: ./wh.duckdb
  clean: sales_clean
  quarantine: sales_dlq
  duplicates: sales_duplicates
  facts: quality_facts
  export: ./export
model:
  dimensions:
    dim_customer:
      reference: customers_cdc
      key: customer_id
      effective: effective_ts
      attributes: [segment, region]
  facts:
    fct_sales:
      derive: {amount: quantity * unit_price}
      joins:
        - {dimension: dim_customer, on: customer_id, as_of: order_ts, on_missing: "${on_missing}"}
  marts:
    mart_monthly_revenue: |
      WITH m AS (
        SELECT date_trunc('month', order_ts) AS month, sum(amount) AS revenue, count(*) AS orders
        FROM fct_sales GROUP BY 1
      )
      SELECT month, revenue, orders,
             LAG(revenue) OVER (ORDER BY month) AS prev_revenue,
             revenue - LAG(revenue) OVER (ORDER BY month) AS mom_change
      FROM m
    mart_top_products: |
      WITH p AS (
        SELECT date_trunc('month', order_ts) AS month, product_id, sum(amount) AS revenue
        FROM fct_sales GROUP BY 1, 2
      )
      SELECT month, product_id, revenue,
             DENSE_RANK() OVER (PARTITION BY month ORDER BY revenue DESC) AS revenue_rank
      FROM p
      QUALIFY revenue_rank <= 5
    mart_customer_running_revenue: |
      WITH cm AS (
        SELECT customer_id, date_trunc('month', order_ts) AS month, sum(amount) AS revenue
        FROM fct_sales GROUP BY 1, 2
      )
      SELECT customer_id, month, revenue,
             SUM(revenue) OVER (PARTITION BY customer_id ORDER BY month
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_revenue
      FROM cm
"""

ORACLE_DIM = """
WITH cdc AS (
  SELECT customer_id, strptime(effective_ts, '%Y-%m-%dT%H:%M:%SZ') AS eff, segment, region
  FROM read_json(?, columns = {customer_id: 'VARCHAR', effective_ts: 'VARCHAR',
                               segment: 'VARCHAR', region: 'VARCHAR'})
), distinct_events AS (SELECT DISTINCT * FROM cdc)
SELECT customer_id, segment, region,
       row_number() OVER w AS version, eff AS valid_from,
       lead(eff, 1, TIMESTAMP '9999-12-31 23:59:59') OVER w AS valid_to,
       lead(eff) OVER w IS NULL AS is_current
FROM distinct_events
WINDOW w AS (PARTITION BY customer_id ORDER BY eff)
"""


@pytest.fixture(scope="module")
def feed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    data = tmp_path_factory.mktemp("retail") / "data"
    truth = generate(data, lines=3000, seed=3)
    return data, truth


def project(tmp_path: Path, data: Path, name: str = "p") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "contract.yml").write_text(textwrap.dedent(CONTRACT).lstrip())
    return root


def run(root: Path, data: Path, day: str = DAY, **variables: str):
    loaded = load_contract(
        root / "contract.yml", variables={"root": str(data), **variables}, logical_date=day
    )
    return run_contract(loaded)


def warehouse(root: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(root / "wh.duckdb"), read_only=True)


def partitions_of(root: Path, day: str) -> set[str]:
    """The Hive partitions a logical date's fact rows fall in, from the warehouse."""
    rows = (
        warehouse(root)
        .execute(
            "SELECT DISTINCT year(order_ts), month(order_ts) FROM fct_sales "
            f"WHERE _logical_date = DATE '{day}'"
        )
        .fetchall()
    )
    return {f"year={y}/month={m}" for y, m in rows}


def export_files(root: Path) -> dict[str, bytes]:
    base = root / "export" / "fct_sales"
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*.parquet"))}


def test_retail_model_reconciles_with_truth_and_oracles(tmp_path: Path, feed):
    data, truth = feed
    root = project(tmp_path, data)
    result = run(root, data)
    assert result.exit_code == 0, result.metrics.get("error")
    led = result.metrics["ledger"]
    assert led["balanced"] and led["clean"] == truth["clean"]
    wh = warehouse(root)

    # the dimension: generator truth and an independent SCD2 over the raw changelog
    dim = wh.execute(
        "SELECT customer_id, segment, region, version, valid_from, valid_to, is_current "
        "FROM dim_customer ORDER BY customer_id, valid_from"
    ).fetchall()
    assert len(dim) == truth["customer_dim_rows"]
    oracle = duckdb.connect()
    want_dim = oracle.execute(
        ORACLE_DIM + " ORDER BY customer_id, valid_from", [str(data / "customers_cdc.json")]
    ).fetchall()
    assert dim == want_dim
    assert sum(r[6] for r in dim) == truth["details"]["customers"]

    # the facts: one per clean row, the generator's checksums
    n, qty, amount, versions, unknown = wh.execute(
        "SELECT count(*), sum(quantity), sum(amount), sum(dim_customer_version), "
        "count(*) FILTER (WHERE dim_customer_unknown) FROM fct_sales"
    ).fetchone()
    cs = truth["fact_checksum"]
    assert n == truth["fact_rows"]
    assert (qty, float(amount), versions) == (
        cs["sum_quantity"],
        cs["sum_amount"],
        cs["sum_customer_version"],
    )
    assert unknown == 0

    # each sale's version by DuckDB's ASOF JOIN over the oracle dimension
    oracle.execute(f"ATTACH '{root / 'wh.duckdb'}' AS wh (READ_ONLY)")
    oracle.execute("CREATE TABLE od AS " + ORACLE_DIM, [str(data / "customers_cdc.json")])
    mismatched = oracle.execute(
        """
        SELECT count(*) FROM wh.sales_clean c
        ASOF LEFT JOIN od ON c.customer_id = od.customer_id AND c.order_ts >= od.valid_from
        JOIN wh.fct_sales f ON f._source_file = c._source_file AND f._source_line = c._source_line
        WHERE f.dim_customer_version IS DISTINCT FROM od.version
           OR f.segment IS DISTINCT FROM od.segment OR f.region IS DISTINCT FROM od.region
        """
    ).fetchone()[0]
    assert mismatched == 0
    boundary = oracle.execute(
        "SELECT count(*) FROM wh.fct_sales f JOIN od ON f.customer_id = od.customer_id "
        "AND f.order_ts = od.valid_from AND od.version > 1 AND f.dim_customer_version = od.version"
    ).fetchone()[0]
    assert boundary == truth["details"]["boundary_sales"] > 0  # boundary sales take the new version

    # the marts
    total = wh.execute("SELECT sum(revenue), sum(orders) FROM mart_monthly_revenue").fetchone()
    assert (float(total[0]), total[1]) == (cs["sum_amount"], truth["fact_rows"])
    assert wh.execute("SELECT max(revenue_rank) FROM mart_top_products").fetchone()[0] <= 5
    last = wh.execute(
        "SELECT sum(running_revenue) FROM (SELECT customer_id, arg_max(running_revenue, month) "
        "AS running_revenue FROM mart_customer_running_revenue GROUP BY 1)"
    ).fetchone()[0]
    assert float(last) == cs["sum_amount"]

    model = result.metrics["model"]
    assert model["dimensions"]["dim_customer"]["rows"] == truth["customer_dim_rows"]
    assert model["facts"]["fct_sales"]["rows"] == truth["fact_rows"]
    assert set(model["marts"]) == {
        "mart_monthly_revenue",
        "mart_top_products",
        "mart_customer_running_revenue",
    }
    for mart, rows in model["marts"].items():  # each mart's rows, counted apart
        assert rows == wh.execute(f"SELECT count(*) FROM {mart}").fetchone()[0] > 0

    # the export: Hive layout, read in place by DuckDB and pyarrow, equal to the table
    base = root / "export" / "fct_sales"
    assert (base / "year=2024" / "month=3").is_dir()
    assert not (root / "export" / ".fct_sales.staging").exists()
    by_duck = duckdb.execute(
        f"SELECT count(*), sum(amount), sum(dim_customer_version), "
        f"count(*) FILTER (WHERE year <> year(order_ts) OR month <> month(order_ts)) "
        f"FROM read_parquet('{base}/**/*.parquet', hive_partitioning = true)"
    ).fetchone()
    assert by_duck[:3] == (n, amount, versions) and by_duck[3] == 0
    table = pads.dataset(base, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == n
    assert sorted(set(table.column("month").to_pylist())) == list(range(1, 13))
    assert set(table.column("year").to_pylist()) == {2023, 2024}


def test_rerun_is_idempotent_and_replaces_only_its_partitions(tmp_path: Path, feed):
    data, _truth = feed
    root = project(tmp_path, data)
    assert run(root, data).exit_code == 0
    first = export_files(root)
    assert run(root, data).exit_code == 0
    assert export_files(root) == first  # same input, same run id: the same bytes

    # another logical date over a feed of two months adds its own files only
    other = tmp_path / "other"
    shutil.copytree(data, other, ignore=shutil.ignore_patterns("month=*"))
    for m in ("month=2024-03", "month=2024-04"):
        shutil.copytree(data / "sales" / m, other / "sales" / m)
    assert run(root, other, day="2025-01-01").exit_code == 0
    after = export_files(root)
    assert {k: v for k, v in after.items() if "2024-12-31" in k} == first
    mine = {k for k in after if "2025-01-01" in k}
    assert {k.rsplit("/", 1)[0] for k in mine} == partitions_of(root, "2025-01-01")

    # rerun that date with one month: its stale partitions go, the other date's stay
    shutil.rmtree(other / "sales" / "month=2024-04")
    assert run(root, other, day="2025-01-01").exit_code == 0
    final = export_files(root)
    assert {k: v for k, v in final.items() if "2024-12-31" in k} == first
    assert {k for k in final if "2025-01-01" in k} < mine
    assert {k.rsplit("/", 1)[0] for k in final if "2025-01-01" in k} == partitions_of(
        root, "2025-01-01"
    )
    wh = warehouse(root)
    for day in ("2024-12-31", "2025-01-01"):
        want = wh.execute(
            f"SELECT count(*) FROM fct_sales WHERE _logical_date = DATE '{day}'"
        ).fetchone()[0]
        got = duckdb.execute(
            f"SELECT count(*) FROM read_parquet('{root}/export/fct_sales/*/*/part-{day}-*.parquet')"
        ).fetchone()[0]
        assert got == want
    # the facts are the union of both dates; each date's rows equal its clean rows
    assert (
        wh.execute(
            "SELECT count(*) FROM fct_sales f FULL JOIN sales_clean c USING (_source_file, _source_line, _logical_date) "
            "WHERE f._run_id IS NULL OR c._run_id IS NULL"
        ).fetchone()[0]
        == 0
    )


@pytest.fixture(scope="module")
def gappy(feed, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The feed with the first version of every tenth customer removed: their early sales
    have no version. Returns the folder and the independent count of such clean sales."""
    data, _truth = feed
    out = tmp_path_factory.mktemp("gappy") / "data"
    shutil.copytree(data, out)
    events = [json.loads(line) for line in (data / "customers_cdc.json").read_text().splitlines()]
    first: dict[str, str] = {}
    for e in events:
        c = e["customer_id"]
        first[c] = min(first.get(c, e["effective_ts"]), e["effective_ts"])
    kept = [
        e
        for e in events
        if not (
            int(e["customer_id"][1:]) % 10 == 0 and e["effective_ts"] == first[e["customer_id"]]
        )
    ]
    (out / "customers_cdc.json").write_text("".join(json.dumps(e) + "\n" for e in kept))
    return out, len(events) - len(kept)


def _missing_by_oracle(root: Path, data: Path) -> set[tuple[str, int]]:
    """Lineage of clean sales with no version, by ASOF JOIN over the changelog itself."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{root / 'wh.duckdb'}' AS wh (READ_ONLY)")
    con.execute("CREATE TABLE od AS " + ORACLE_DIM, [str(data / "customers_cdc.json")])
    rows = con.execute(
        """
        SELECT c._source_file, c._source_line FROM (
          SELECT customer_id, order_ts, _source_file, _source_line FROM wh.sales_clean
          UNION ALL
          SELECT customer_id, order_ts, _source_file, _source_line
          FROM wh.sales_dlq WHERE _reason LIKE 'no_dimension_version:%'
        ) c ASOF LEFT JOIN od ON c.customer_id = od.customer_id AND c.order_ts >= od.valid_from
        WHERE od.version IS NULL
        """
    ).fetchall()
    return set(rows)


def test_unknown_member_keeps_every_row(tmp_path: Path, gappy):
    data, removed = gappy
    assert removed > 0
    root = project(tmp_path, data)
    result = run(root, data)
    assert result.exit_code == 0 and result.metrics["ledger"]["balanced"]
    wh = warehouse(root)
    unknown = set(
        wh.execute(
            "SELECT _source_file, _source_line FROM fct_sales WHERE dim_customer_unknown"
        ).fetchall()
    )
    assert unknown and unknown == _missing_by_oracle(root, data)
    assert (
        wh.execute(
            "SELECT count(*) FROM fct_sales WHERE dim_customer_unknown AND "
            "(segment IS NOT NULL OR region IS NOT NULL OR dim_customer_version IS NOT NULL)"
        ).fetchone()[0]
        == 0
    )
    assert (
        wh.execute("SELECT count(*) FROM fct_sales").fetchone()[0]
        == result.metrics["ledger"]["clean"]
    )
    assert result.metrics["model"]["facts"]["fct_sales"]["unknown_member"] == {
        "dim_customer": len(unknown)
    }


def test_quarantine_moves_rows_to_the_dlq_and_the_ledger_balances(tmp_path: Path, gappy):
    data, _removed = gappy
    base = project(tmp_path, data, "base")
    run(base, data)
    baseline = warehouse(base).execute("SELECT count(*) FROM sales_clean").fetchone()[0]

    root = project(tmp_path, data)
    result = run(root, data, on_missing="quarantine")
    led = result.metrics["ledger"]
    assert result.exit_code == 0 and led["balanced"]
    assert led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"]
    wh = warehouse(root)
    moved = set(
        wh.execute(
            "SELECT _source_file, _source_line FROM sales_dlq "
            "WHERE _reason = 'no_dimension_version:dim_customer'"
        ).fetchall()
    )
    assert moved and moved == _missing_by_oracle(root, data)
    assert led["clean"] == baseline - len(moved)
    assert led["quarantined_by_reason"]["no_dimension_version:dim_customer"] == len(moved)
    failed = wh.execute(
        "SELECT _failed_rules FROM sales_dlq WHERE _reason = 'no_dimension_version:dim_customer' LIMIT 1"
    ).fetchone()[0]
    assert [f["name"] for f in failed] == ["no_dimension_version:dim_customer"]
    # no fact row without a version, and facts = clean
    assert (
        wh.execute("SELECT count(*) FROM fct_sales WHERE dim_customer_version IS NULL").fetchone()[
            0
        ]
        == 0
    )
    assert wh.execute("SELECT count(*) FROM fct_sales").fetchone()[0] == led["clean"]
    assert "dim_customer_unknown" not in [r[0] for r in wh.execute("DESCRIBE fct_sales").fetchall()]


def test_failed_gate_withholds_facts_and_their_export(tmp_path: Path, feed):
    data, _truth = feed
    root = project(tmp_path, data)
    assert run(root, data).exit_code == 0
    assert export_files(root)
    text = (
        (root / "contract.yml")
        .read_text()
        .replace(
            "gate: {warn_above: 0.5, fail_above: 0.9}", "gate: {warn_above: 0.0, fail_above: 0.0}"
        )
    )
    (root / "contract.yml").write_text(text)
    result = run(root, data)
    assert result.status == "fail"
    wh = warehouse(root)
    assert wh.execute("SELECT count(*) FROM sales_clean").fetchone()[0] == 0
    assert wh.execute("SELECT count(*) FROM fct_sales").fetchone()[0] == 0
    assert wh.execute("SELECT count(*) FROM mart_monthly_revenue").fetchone()[0] == 0
    assert export_files(root) == {}  # the export follows the warehouse


class Boom(RuntimeError):
    pass


def test_crash_before_commit_leaves_warehouse_and_export(tmp_path: Path, feed, monkeypatch):
    data, _truth = feed
    root = project(tmp_path, data)
    assert run(root, data).exit_code == 0
    before_files = export_files(root)
    before_rows = warehouse(root).execute("SELECT count(*), max(_run_id) FROM fct_sales").fetchone()

    # fail after the export is staged, before the commit: on a different input
    smaller = tmp_path / "smaller"
    shutil.copytree(data, smaller, ignore=shutil.ignore_patterns("month=2024-*"))

    def explode(_contract):  # noqa: ANN001, ANN202
        raise Boom("crash after staging")

    monkeypatch.setattr(run_model.checks, "compiled_marts", explode)
    with pytest.raises(Boom):
        run(root, smaller)
    assert export_files(root) == before_files  # nothing swapped in
    assert (root / "export" / ".fct_sales.staging" / DAY).is_dir()  # the stale staging folder
    assert (
        warehouse(root).execute("SELECT count(*), max(_run_id) FROM fct_sales").fetchone()
        == before_rows
    )
    monkeypatch.undo()

    # the next run of the date clears the staging folder and publishes normally
    assert run(root, smaller).exit_code == 0
    assert not (root / "export" / ".fct_sales.staging").exists()
    assert all(not k.startswith("year=2024") for k in export_files(root))


def test_crash_during_swap_is_repaired_by_a_rerun(tmp_path: Path, feed, monkeypatch):
    data, _truth = feed
    root = project(tmp_path, data)
    real_replace = run_model.os.replace
    moved = []

    def flaky(src, dst):  # noqa: ANN001, ANN202
        if "fct_sales" not in str(dst):  # os.replace is global: leave other writers alone
            return real_replace(src, dst)
        if len(moved) == 3:
            raise Boom("crash during the swap")
        moved.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(run_model.os, "replace", flaky)
    with pytest.raises(Boom):
        run(root, data)
    # committed, and the export holds only whole files: 3 partitions swapped so far
    assert len(export_files(root)) == 3
    n = warehouse(root).execute("SELECT count(*) FROM fct_sales").fetchone()[0]
    assert n > 0
    monkeypatch.undo()
    assert run(root, data).exit_code == 0
    got = duckdb.execute(
        f"SELECT count(*) FROM read_parquet('{root}/export/fct_sales/**/*.parquet')"
    ).fetchone()[0]
    assert got == n


def test_silent_drop_is_a_ledger_violation(tmp_path: Path, gappy, monkeypatch):
    """Mutant: an INNER as-of join drops the rows with no version; the read-back refuses it."""
    data, _removed = gappy
    root = project(tmp_path, data)
    original = asof.fact_select

    def inner(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        q = original(*args, **kwargs)
        for j in q.args.get("joins", []):
            j.set("side", None)
        return q

    monkeypatch.setattr(asof, "fact_select", inner)
    result = run(root, data)
    assert result.status == "ledger_violation" and result.exit_code == 3
    assert "model:fct_sales" in result.metrics["error"]
    assert not (root / "export" / "fct_sales").exists() or export_files(root) == {}


def test_fact_lineage_twice_is_a_ledger_violation(tmp_path: Path, feed, monkeypatch):
    """Mutant: the fact keeps its row count but writes lines 2k and 2k+1 both as 2k (a
    join that doubles some rows and loses as many); only the lineage read-back sees it."""
    data, _truth = feed
    root = project(tmp_path, data)
    original = asof.fact_select

    def doubled(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        q = original(*args, **kwargs)
        mutant = sqlglot.parse_one(
            "SELECT * REPLACE (_source_line - _source_line % 2 AS _source_line) FROM _q",
            read="duckdb",
        )
        mutant.find(exp.Table).replace(
            exp.Subquery(this=q, alias=exp.TableAlias(this=exp.to_identifier("_q")))
        )
        return mutant

    monkeypatch.setattr(asof, "fact_select", doubled)
    result = run(root, data)
    assert result.status == "ledger_violation" and result.exit_code == 3
    assert "distinct lineage" in result.metrics["error"]


@pytest.mark.spark
def test_export_is_readable_by_spark(tmp_path: Path, feed, spark):
    data, truth = feed
    root = project(tmp_path, data)
    assert run(root, data).exit_code == 0
    df = spark.read.parquet(str(root / "export" / "fct_sales"))
    row = df.selectExpr(
        "count(*)",
        "sum(quantity)",
        "sum(amount)",
        "sum(dim_customer_version)",
        "sum(CASE WHEN year <> year(order_ts) OR month <> month(order_ts) THEN 1 ELSE 0 END)",
    ).collect()[0]
    cs = truth["fact_checksum"]
    assert row[0] == truth["fact_rows"]
    assert (row[1], float(row[2]), row[3], row[4]) == (
        cs["sum_quantity"],
        cs["sum_amount"],
        cs["sum_customer_version"],
        0,
    )
    assert dict(df.dtypes)["year"] == "int" and dict(df.dtypes)["month"] == "int"


def test_export_keeps_rows_with_no_time_and_swaps_per_date(tmp_path: Path):
    """A NULL time goes to the Hive default partition (read back as NULL, not lost); a swap
    touches only its own date's files."""
    from sqlglot import exp as sg

    from sluicegate.compile.model.export import export_select
    from sluicegate.engines.duckdb_engine import DuckDBEngine

    eng = DuckDBEngine(":memory:")
    eng.execute(
        "CREATE TABLE f AS SELECT * FROM (VALUES (1, TIMESTAMP '2024-03-05 10:00:00'), "
        "(2, NULL), (3, TIMESTAMP '2023-12-31 23:59:59')) t(id, ts)"
    )
    eng.execute("ALTER TABLE f ADD COLUMN _logical_date DATE DEFAULT DATE '2024-01-01'")
    eng.execute("ALTER TABLE f ADD COLUMN _source_file VARCHAR DEFAULT 'x'")
    eng.execute("ALTER TABLE f ADD COLUMN _source_line BIGINT DEFAULT 1")
    final = tmp_path / "export" / "f"
    other = final / "year=2024" / "month=3" / "part-2023-06-30-0.parquet"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"another date's file")
    stale = final / "year=2022" / "month=1" / "part-2024-01-01-0.parquet"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"this date's old partition")

    staging = run_model.staging_dir(final, "2024-01-01")
    staging.mkdir(parents=True)
    q = export_select("f", ["id", "ts", "_logical_date"], "ts", "2024-01-01")
    assert isinstance(q, sg.Select)
    eng.write_parquet_partitioned(q, str(staging), ["year", "month"], "part-2024-01-01")
    done = run_model.swap_partitions(staging, final, "part-2024-01-01")
    assert done == {"partitions": 3, "files": 3, "stale_removed": 1}
    assert other.read_bytes() == b"another date's file"
    assert not stale.exists() and not stale.parent.exists()
    assert not staging.parent.exists()
    rows = duckdb.execute(
        f"SELECT id, year, month FROM read_parquet('{final}/*/*/part-2024-01-01-*.parquet', "
        "hive_partitioning = true) ORDER BY id"
    ).fetchall()
    assert rows == [(1, 2024, 3), (2, None, None), (3, 2023, 12)]
    table = pads.dataset(
        final, format="parquet", partitioning="hive", exclude_invalid_files=True
    ).to_table(filter=pads.field("id") == 2)
    assert table.column("year").to_pylist() == [None]
