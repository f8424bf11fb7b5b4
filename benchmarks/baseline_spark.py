"""Seed-style PySpark baseline for the hostile retail feed (seed 002, ``local[2]``).

Written the way seed 002 describes its job, so sluicegate is compared with what a
user runs today: an explicit StructType read in PERMISSIVE mode with a
``_corrupt_record`` column, ``row_number()`` dedupe over a total order, a RULES
list evaluated as one filter per rule whose failures are unioned (the per-rule
breakdown), SCD2 customer dimension with LEAD, a range join to the version valid
at order time, and a fact Parquet-partitioned by year/month.

Where the seed's way is wrong, this baseline keeps the style but counts honestly,
and says so:

* the seed joins rule failures back to the rows **on sale_id**; a row whose sale_id
  is NULL never matches that join, so it skips the quarantine and reaches the fact.
  Here every deduplicated row gets a row id first and failures join back on it;
* ``row_number() OVER (PARTITION BY sale_id …)`` puts every NULL sale_id in one
  partition and keeps one of them: rows without a key are set aside and kept;
* Spark's JSON reader accepts single-quoted JSON by default; it is turned off, so a
  corrupt line is exactly a line that is not a JSON object of the declared types
  (a number given as a string, ``"quantity": "3"``, is corrupt here);
* the JSON reader gives no line number: the dedupe tie-break after the values is
  the file only, so two value-identical lines of one file are interchangeable.

Usage: ``python benchmarks/baseline_spark.py --src FEED --out OUT``; prints the run
metrics as JSON on stdout (keys as in the feed's expected.json).
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
from functools import reduce  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from pyspark.sql import Column, DataFrame, SparkSession, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import (  # noqa: E402
    DecimalType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

TS_FORMATS = ("yyyy-MM-dd'T'HH:mm:ss'Z'", "dd/MM/yyyy HH:mm:ss")
SALES_SCHEMA = StructType(
    [
        StructField("sale_id", StringType()),
        StructField("order_ts", StringType()),
        StructField("customer_id", StringType()),
        StructField("product_id", StringType()),
        StructField("store_id", StringType()),
        StructField("channel", StringType()),
        StructField("quantity", IntegerType()),
        StructField("unit_price", DecimalType(10, 2)),
        StructField("ingested_at", StringType()),
        StructField("_corrupt_record", StringType()),
    ]
)
CDC_SCHEMA = StructType(
    [
        StructField("customer_id", StringType()),
        StructField("effective_ts", StringType()),
        StructField("segment", StringType()),
        StructField("region", StringType()),
    ]
)
DEDUPE_ASC = (
    "order_ts",
    "customer_id",
    "product_id",
    "store_id",
    "channel",
    "quantity",
    "unit_price",
)


def parse_order_ts(col: Column) -> Column:
    """The first format that parses wins; NULL when none does."""
    return F.coalesce(*[F.try_to_timestamp(col, F.lit(fmt)) for fmt in TS_FORMATS])


def rules(known_products: list[str], known_stores: list[str]) -> list[tuple[str, Column]]:
    """The eight rules as (name, condition); a row fails when the condition is not TRUE."""
    c = F.col
    return [
        ("non_null_customer", c("customer_id").isNotNull()),
        ("non_null_product", c("product_id").isNotNull()),
        ("non_null_store", c("store_id").isNotNull()),
        ("positive_quantity", c("quantity").isNotNull() & (c("quantity") > 0)),
        ("valid_price", c("unit_price").isNotNull() & (c("unit_price") >= 0)),
        ("known_product", c("product_id").isNull() | c("product_id").isin(known_products)),
        ("known_store", c("store_id").isNull() | c("store_id").isin(known_stores)),
        ("parseable_order_ts", c("order_ts_parsed").isNotNull()),
    ]


def session() -> SparkSession:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("retail-dq-baseline")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(spark: SparkSession, src: Path, out: Path, stages: dict[str, float]) -> dict[str, Any]:
    mark = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        stages[name] = round(now - mark, 3)
        mark = now

    # ---- read: explicit schema, PERMISSIVE, corrupt lines captured ----
    raw = (
        spark.read.schema(SALES_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .option("allowSingleQuotes", "false")
        .json(str(src / "sales"))
        .withColumn("_source_file", F.col("_metadata.file_path"))
        .drop("month")
        .cache()
    )
    raw_lines = raw.count()
    corrupt = raw.filter(F.col("_corrupt_record").isNotNull())
    corrupt_lines = corrupt.count()
    corrupt.select("_source_file", F.col("_corrupt_record").alias("line")).write.mode(
        "overwrite"
    ).parquet(str(out / "corrupt"))
    valid = raw.filter(F.col("_corrupt_record").isNull()).drop("_corrupt_record")
    stage("read_parse")

    # ---- dedupe: row_number over the total order; NULL keys are never duplicates ----
    order = [F.col("ingested_at").desc_nulls_last()]
    order += [F.col(c).asc_nulls_last() for c in DEDUPE_ASC] + [F.col("_source_file")]
    w = Window.partitionBy("sale_id").orderBy(*order)
    keyed = valid.filter(F.col("sale_id").isNotNull())
    kept = (
        keyed.withColumn("_rn", F.row_number().over(w))
        .filter("_rn = 1")
        .drop("_rn")
        .unionByName(valid.filter(F.col("sale_id").isNull()))
        .withColumn("order_ts_parsed", parse_order_ts(F.col("order_ts")))
        .withColumn("_row_id", F.monotonically_increasing_id())
        .cache()
    )
    deduplicated_rows = kept.count()
    raw.unpersist()
    stage("dedupe")

    # ---- rules: one filter per rule, failures unioned; quarantine joined back on the row id ----
    products = spark.read.json(str(src / "products.json"))
    stores = spark.read.json(str(src / "stores.json"))
    known_products = [r[0] for r in products.select("product_id").distinct().collect()]
    known_stores = [r[0] for r in stores.select("store_id").distinct().collect()]
    rule_list = rules(known_products, known_stores)
    failures = reduce(
        DataFrame.unionByName,
        [
            kept.filter(~F.coalesce(cond, F.lit(False))).select(
                "_row_id", F.lit(name).alias("rule"), F.lit(i).alias("rule_idx")
            )
            for i, (name, cond) in enumerate(rule_list)
        ],
    ).cache()
    per_rule = {r["rule"]: r["count"] for r in failures.groupBy("rule").count().collect()}
    rule_failures = {name: int(per_rule.get(name, 0)) for name, _ in rule_list}
    failed = failures.groupBy("_row_id").agg(
        F.sort_array(F.collect_list(F.struct("rule_idx", "rule"))).alias("_r")
    )
    quarantine = kept.join(failed, "_row_id", "inner").withColumn("failed_rules", F.col("_r.rule"))
    quarantine.drop("_r").write.mode("overwrite").parquet(str(out / "quarantine"))
    quarantined = spark.read.parquet(str(out / "quarantine")).count()
    clean = kept.join(failed, "_row_id", "left_anti")
    stage("rules_quarantine")

    # ---- SCD2 customer dimension (LEAD over validity) ----
    cdc = (
        spark.read.schema(CDC_SCHEMA)
        .json(str(src / "customers_cdc.json"))
        .dropDuplicates()
        .withColumn("valid_from", F.to_timestamp("effective_ts", TS_FORMATS[0]))
    )
    wc = Window.partitionBy("customer_id").orderBy("valid_from")
    nxt = F.lead("valid_from").over(wc)
    dim = cdc.select(
        "customer_id",
        "segment",
        F.col("region").alias("customer_region"),
        "valid_from",
        F.coalesce(nxt, F.to_timestamp(F.lit("9999-12-31 00:00:00"))).alias("valid_to"),
        F.row_number().over(wc).alias("version"),
        nxt.isNull().alias("is_current"),
    ).cache()
    dim.write.mode("overwrite").parquet(str(out / "dim_customer"))
    dim_rows = dim.count()
    stage("scd2_dim")

    # ---- fact: range join to the version valid at order time, Hive-partitioned ----
    c, d = clean.alias("c"), dim.alias("d")
    on = (
        (F.col("c.customer_id") == F.col("d.customer_id"))
        & (F.col("c.order_ts_parsed") >= F.col("d.valid_from"))
        & (F.col("c.order_ts_parsed") < F.col("d.valid_to"))
    )
    fact = (
        c.join(d, on, "left")
        .select(
            "c.sale_id",
            F.col("c.order_ts_parsed").alias("order_ts"),
            "c.customer_id",
            "d.version",
            "d.segment",
            "d.customer_region",
            "c.product_id",
            "c.store_id",
            "c.channel",
            "c.quantity",
            "c.unit_price",
            (F.col("c.quantity") * F.col("c.unit_price")).alias("amount"),
        )
        .withColumn("year", F.year("order_ts"))
        .withColumn("month", F.month("order_ts"))
        .cache()
    )
    agg = fact.agg(
        F.count("*").alias("n"),
        F.sum("quantity").alias("q"),
        F.sum("amount").alias("a"),
        F.sum("version").alias("v"),
        F.count_if(F.col("version").isNull()).alias("unmatched"),
    ).collect()[0]
    fact.write.mode("overwrite").partitionBy("year", "month").parquet(str(out / "fact_sales"))
    stage("fact_join_write")

    parsed_rows = raw_lines - corrupt_lines
    total = time.perf_counter() - T0
    return {
        "pipeline": "spark-baseline",
        "engine_version": spark.version,
        "raw_lines": int(raw_lines),
        "corrupt_lines": int(corrupt_lines),
        "duplicates_dropped": int(parsed_rows - deduplicated_rows),
        "deduplicated_rows": int(deduplicated_rows),
        "rule_failures": rule_failures,
        "quarantined": int(quarantined),
        "clean": int(deduplicated_rows - quarantined),
        "fact_rows": int(agg["n"]),
        "fact_rows_without_customer_version": int(agg["unmatched"]),
        "customer_dim_rows": int(dim_rows),
        "fact_checksum": {
            "sum_quantity": int(agg["q"] or 0),
            "sum_amount": round(float(agg["a"] or 0), 2),
            "sum_customer_version": int(agg["v"] or 0),
        },
        "sale_files": len(list((src / "sales").glob("*/*.json"))),
        "stage_seconds": stages,
        "total_seconds": round(total, 3),
        "rows_per_second": round(raw_lines / total, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Seed-style PySpark baseline of the retail feed.")
    ap.add_argument(
        "--src", type=Path, required=True, help="feed folder (sales/, products.json, …)"
    )
    ap.add_argument("--out", type=Path, required=True, help="output folder (replaced subfolders)")
    args = ap.parse_args(argv)
    stages = {"imports": round(time.perf_counter() - T0, 3)}
    mark = time.perf_counter()
    spark = session()
    stages["spark_startup"] = round(time.perf_counter() - mark, 3)
    try:
        metrics = run(spark, args.src.resolve(), args.out.resolve(), stages)
    finally:
        spark.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "run_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
