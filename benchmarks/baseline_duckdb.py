"""Hand-written DuckDB baseline for the hostile retail feed: what a strong engineer writes.

It exists so sluicegate is measured against the fastest honest way to do the same
job by hand, not against a straw man. Same semantics as the generator's ground
truth (``sluicegate.datagen.retail``):

* every line is read as text with its file and 1-based line number (``read_text``
  split on LF, CRLF tolerated: exact lineage, no reliance on scan order); blank lines
  are not records;
* a line is corrupt when it is not a JSON object, or when quantity / unit_price hold
  something that is not a number (an integer for quantity), as Spark's typed PERMISSIVE
  read does; one difference, chosen for speed: a number written as a JSON string
  (``"quantity": "3"``) is accepted here, Spark marks it corrupt (the generator writes
  none). Corrupt lines are kept, counted and written out with their raw text;
* the two order_ts formats are tried in order; dedupe keeps, per sale_id, the first
  row of ``ingested_at DESC NULLS LAST, order_ts, customer_id, product_id, store_id,
  channel, quantity, unit_price`` (ASC NULLS LAST), then file and line: a total order.
  Rows whose sale_id is NULL are never duplicates of each other. Only the ~1% of
  sale_ids seen more than once are ranked;
* the eight rules are one projection of booleans (NULL fails); a row failing any of
  them goes to the quarantine with the list of failed rules;
* SCD2 customer dimension from the change log (exact duplicate events removed, LEAD
  for valid_to); the fact takes the version valid at order time with a range join,
  and is written as Parquet partitioned by year/month.

Usage: ``python benchmarks/baseline_duckdb.py --src FEED --out OUT [--threads N]``;
prints the run metrics as JSON on stdout (keys as in the feed's expected.json).
SQL is built with f-strings here on purpose: this is the hand-written baseline.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import duckdb  # noqa: E402

TS_FORMATS = ("%Y-%m-%dT%H:%M:%SZ", "%d/%m/%Y %H:%M:%S")
TEXT_FIELDS = (
    "sale_id",
    "order_ts",
    "customer_id",
    "product_id",
    "store_id",
    "channel",
    "ingested_at",
)
RULES = (
    ("non_null_customer", "customer_id IS NOT NULL"),
    ("non_null_product", "product_id IS NOT NULL"),
    ("non_null_store", "store_id IS NOT NULL"),
    ("positive_quantity", "quantity IS NOT NULL AND quantity > 0"),
    ("valid_price", "unit_price IS NOT NULL AND unit_price >= 0"),
    ("known_product", "product_id IS NULL OR product_id IN (SELECT product_id FROM products)"),
    ("known_store", "store_id IS NULL OR store_id IN (SELECT store_id FROM stores)"),
    ("parseable_order_ts", "order_ts_parsed IS NOT NULL"),
)
DEDUPE_ORDER = (
    "ingested_at DESC NULLS LAST, order_ts ASC NULLS LAST, customer_id ASC NULLS LAST, "
    "product_id ASC NULLS LAST, store_id ASC NULLS LAST, channel ASC NULLS LAST, "
    "quantity ASC NULLS LAST, unit_price ASC NULLS LAST, source_file, source_line"
)
INTEGER_TEXT = "-?[0-9]+"
NUMBER_TEXT = r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?"


def lit(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def run(src: Path, out: Path, threads: int) -> dict[str, Any]:
    """Run the whole pipeline; return the metrics (stage timings included)."""
    for sub in ("fact_sales", "quarantine", "dim_customer", "corrupt"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    stages: dict[str, float] = {"imports": time.perf_counter() - T0}
    mark = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        stages[name] = round(now - mark, 3)
        mark = now

    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {threads}")
    con.execute("SET preserve_insertion_order = false")
    sql: Callable[[str], duckdb.DuckDBPyConnection] = con.execute
    glob = lit(str(src / "sales" / "*" / "*.json"))

    # ---- read: every line with its lineage; corrupt lines captured, the rest parsed once ----
    struct = json.dumps({f: "VARCHAR" for f in (*TEXT_FIELDS, "quantity", "unit_price")})
    sql(f"""
        CREATE TEMP TABLE parsed AS
        WITH lines AS (
            SELECT filename AS source_file, unnest(l) AS line, generate_subscripts(l, 1) AS source_line
            FROM (SELECT filename, string_split(replace(content, E'\\r\\n', E'\\n'), E'\\n') AS l
                  FROM read_text({glob}))),
        records AS (
            SELECT * FROM (
                SELECT *, CASE WHEN json_valid(line) THEN json_type(line) = 'OBJECT' ELSE false END
                          AS is_object
                FROM lines)
            WHERE is_object OR trim(line) <> ''),
        typed AS (
            SELECT *, CASE WHEN is_object THEN json_transform(line, {lit(struct)}) END AS s
            FROM records),
        numbers AS (
            SELECT *,
                   CASE WHEN regexp_full_match(s.quantity, '{INTEGER_TEXT}')
                        THEN TRY_CAST(s.quantity AS INTEGER) END AS quantity,
                   CASE WHEN regexp_full_match(s.unit_price, '{NUMBER_TEXT}')
                        THEN TRY_CAST(s.unit_price AS DECIMAL(10, 2)) END AS unit_price
            FROM typed)
        SELECT source_file, source_line,
               is_object AND (s.quantity IS NULL OR quantity IS NOT NULL)
                         AND (s.unit_price IS NULL OR unit_price IS NOT NULL) AS ok,
               CASE WHEN NOT ok THEN line END AS corrupt_text,
               {", ".join(f"s.{f} AS {f}" for f in TEXT_FIELDS)}, quantity, unit_price
        FROM numbers""")
    raw_lines, corrupt_lines = sql("SELECT count(*), count_if(NOT ok) FROM parsed").fetchone()
    sale_files = sql(f"SELECT count(*) FROM glob({glob})").fetchone()[0]
    corrupt_file = lit(str(out / "corrupt" / "corrupt.parquet"))
    sql(f"""COPY (SELECT source_file, source_line, corrupt_text AS line FROM parsed WHERE NOT ok)
            TO {corrupt_file} (FORMAT parquet)""")
    stage("read_parse")

    # ---- dedupe: singletons pass straight through; repeated ids are ranked by the total order ----
    columns = ", ".join(("source_file", "source_line", *TEXT_FIELDS, "quantity", "unit_price"))
    sql(f"""
        CREATE TEMP TABLE kept AS
        WITH v AS (SELECT {columns} FROM parsed WHERE ok),
        repeated AS (SELECT sale_id FROM v WHERE sale_id IS NOT NULL
                     GROUP BY sale_id HAVING count(*) > 1)
        SELECT * FROM v ANTI JOIN repeated USING (sale_id)
        UNION ALL
        SELECT * FROM (SELECT * FROM v SEMI JOIN repeated USING (sale_id)
                       QUALIFY row_number() OVER (PARTITION BY sale_id ORDER BY {DEDUPE_ORDER}) = 1)
        """)
    parsed_rows = raw_lines - corrupt_lines
    sql("DROP TABLE parsed")
    stage("dedupe")

    # ---- the eight rules in one projection, then quarantine ----
    for name, key, extra in (
        ("products", "product_id", "category"),
        ("stores", "store_id", "region"),
    ):
        sql(f"""CREATE TEMP TABLE {name} AS
                SELECT DISTINCT ON ({key}) {key}, {extra}
                FROM read_json({lit(str(src / f"{name}.json"))}, format='newline_delimited',
                               columns={{'{key}': 'VARCHAR', '{extra}': 'VARCHAR'}})
                WHERE {key} IS NOT NULL""")
    formats = "[" + ", ".join(lit(f) for f in TS_FORMATS) + "]"
    flags = ",\n".join(f"NOT coalesce(({cond}), false) AS f_{name}" for name, cond in RULES)
    sql(f"""
        CREATE TEMP TABLE checked AS
        SELECT *, {" OR ".join(f"f_{name}" for name, _ in RULES)} AS failed
        FROM (SELECT *, {flags}
              FROM (SELECT *, try_strptime(order_ts, {formats}) AS order_ts_parsed FROM kept))""")
    counts = sql(
        "SELECT count(*), count_if(failed), "
        + ", ".join(f"count_if(f_{name})" for name, _ in RULES)
        + " FROM checked"
    ).fetchone()
    deduplicated_rows, quarantined = counts[0], counts[1]
    rule_failures = {name: int(n) for (name, _), n in zip(RULES, counts[2:], strict=True)}
    failed_names = ", ".join(f"CASE WHEN f_{name} THEN {lit(name)} END" for name, _ in RULES)
    sql(f"""COPY (SELECT * EXCLUDE ({", ".join(f"f_{name}" for name, _ in RULES)}, failed),
                   list_filter([{failed_names}], lambda r: r IS NOT NULL) AS failed_rules
                  FROM checked WHERE failed)
            TO {lit(str(out / "quarantine" / "quarantine.parquet"))} (FORMAT parquet)""")
    stage("rules_quarantine")

    # ---- SCD2 customer dimension ----
    sql(f"""
        CREATE TEMP TABLE dim_customer AS
        SELECT customer_id, segment, region AS customer_region, valid_from,
               coalesce(lead(valid_from) OVER w, TIMESTAMP '9999-12-31') AS valid_to,
               row_number() OVER w AS version,
               lead(valid_from) OVER w IS NULL AS is_current
        FROM (SELECT DISTINCT customer_id, strptime(effective_ts, {lit(TS_FORMATS[0])}) AS valid_from,
                     segment, region
              FROM read_json({lit(str(src / "customers_cdc.json"))}, format='newline_delimited',
                             columns={{'customer_id': 'VARCHAR', 'effective_ts': 'VARCHAR',
                                       'segment': 'VARCHAR', 'region': 'VARCHAR'}}))
        WINDOW w AS (PARTITION BY customer_id ORDER BY valid_from)""")
    dim_rows = sql("SELECT count(*) FROM dim_customer").fetchone()[0]
    sql(
        f"COPY dim_customer TO {lit(str(out / 'dim_customer' / 'dim_customer.parquet'))} "
        "(FORMAT parquet)"
    )
    stage("scd2_dim")

    # ---- fact: the version valid at order time (range join), partitioned by year/month ----
    sql("""
        CREATE TEMP TABLE fact AS
        SELECT c.sale_id, c.order_ts_parsed AS order_ts, c.customer_id, d.version, d.segment,
               d.customer_region, c.product_id, p.category, c.store_id, s.region AS store_region,
               c.channel, c.quantity, c.unit_price, c.quantity * c.unit_price AS amount,
               year(c.order_ts_parsed) AS year, month(c.order_ts_parsed) AS month
        FROM (SELECT * FROM checked WHERE NOT failed) c
        LEFT JOIN dim_customer d
               ON c.customer_id = d.customer_id
              AND c.order_ts_parsed >= d.valid_from AND c.order_ts_parsed < d.valid_to
        LEFT JOIN products p ON c.product_id = p.product_id
        LEFT JOIN stores s ON c.store_id = s.store_id""")
    fact = sql("""SELECT count(*), sum(quantity), sum(amount), sum(version),
                         count_if(version IS NULL) FROM fact""").fetchone()
    sql(
        f"COPY fact TO {lit(str(out / 'fact_sales'))} "
        "(FORMAT parquet, PARTITION_BY (year, month), OVERWRITE_OR_IGNORE)"
    )
    stage("fact_join_write")

    total = time.perf_counter() - T0
    return {
        "pipeline": "duckdb-baseline",
        "engine_version": duckdb.__version__,
        "raw_lines": int(raw_lines),
        "corrupt_lines": int(corrupt_lines),
        "duplicates_dropped": int(parsed_rows - deduplicated_rows),
        "deduplicated_rows": int(deduplicated_rows),
        "rule_failures": rule_failures,
        "quarantined": int(quarantined),
        "clean": int(deduplicated_rows - quarantined),
        "fact_rows": int(fact[0]),
        "fact_rows_without_customer_version": int(fact[4]),
        "customer_dim_rows": int(dim_rows),
        "fact_checksum": {
            "sum_quantity": int(fact[1] or 0),
            "sum_amount": round(float(fact[2] or 0), 2),
            "sum_customer_version": int(fact[3] or 0),
        },
        "sale_files": int(sale_files),
        "stage_seconds": stages,
        "total_seconds": round(total, 3),
        "rows_per_second": round(raw_lines / total, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Hand-written DuckDB baseline of the retail feed.")
    ap.add_argument(
        "--src", type=Path, required=True, help="feed folder (sales/, products.json, …)"
    )
    ap.add_argument("--out", type=Path, required=True, help="output folder (replaced subfolders)")
    ap.add_argument("--threads", type=int, default=0, help="0 = DuckDB's default (all cores)")
    args = ap.parse_args(argv)
    metrics = run(args.src, args.out, args.threads)
    (args.out / "run_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
