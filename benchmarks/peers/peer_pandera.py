"""pandera (polars backend, lazy validation) on the typed retail input: the eight rules,
the split into clean and failing rows, both written as Parquet.

Runs in its own virtualenv (``.venv-peers/pandera``, benchmarks/peers/requirements-pandera.txt),
never imports sluicegate. The rules are those of examples/retail/contract.yml, as a
pandera schema: NOT NULL as ``nullable=False``, the value rules as checks (pandera skips
NULLs in checks, as the contract's ``x IS NULL OR ...`` rules do), the reference rules
as ``isin`` against the product / store ids of the feed's reference files.
Per-rule failures are the distinct failing row indices of each rule's (column, check)
pairs in ``SchemaErrors.failure_cases``.

Usage: ``peer_pandera.py --input typed.parquet --feed FEED --out DIR``; prints JSON.
"""

from __future__ import annotations

import os
import time

T0 = time.perf_counter()
# a LazyFrame gets schema checks only by default; ask for the data checks explicitly
os.environ.setdefault("PANDERA_VALIDATION_DEPTH", "SCHEMA_AND_DATA")

from pathlib import Path  # noqa: E402

import pandera  # noqa: E402
import pandera.polars as pa  # noqa: E402
import polars as pl  # noqa: E402
from peer_common import StageClock, parse_args, report  # noqa: E402 - beside this script

#: rule -> the (column, start of pandera's check name) pairs whose failures are that rule's
RULES = {
    "non_null_customer": [("customer_id", "not_nullable")],
    "non_null_product": [("product_id", "not_nullable")],
    "non_null_store": [("store_id", "not_nullable")],
    "positive_quantity": [("quantity", "not_nullable"), ("quantity", "greater_than(0)")],
    "valid_price": [("unit_price", "not_nullable"), ("unit_price", "greater_than_or_equal_to(0)")],
    "known_product": [("product_id", "isin(")],
    "known_store": [("store_id", "isin(")],
    "parseable_order_ts": [("order_ts", "not_nullable")],
}


def reference_ids(path: Path, key: str) -> list[str]:
    """The non-NULL ids of a reference NDJSON file."""
    ids = pl.read_ndjson(path, schema={key: pl.String}).get_column(key).drop_nulls().unique()
    return ids.to_list()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stage = StageClock(T0)

    products = reference_ids(args.feed / "products.json", "product_id")
    stores = reference_ids(args.feed / "stores.json", "store_id")
    schema = pa.DataFrameSchema(
        {
            "customer_id": pa.Column(pl.String, nullable=False),
            "product_id": pa.Column(pl.String, pa.Check.isin(products), nullable=False),
            "store_id": pa.Column(pl.String, pa.Check.isin(stores), nullable=False),
            "quantity": pa.Column(pl.Int32, pa.Check.gt(0), nullable=False),
            "unit_price": pa.Column(pl.Decimal(10, 2), pa.Check.ge(0), nullable=False),
            "order_ts": pa.Column(nullable=False),
        },
        strict=False,
    )
    frame = pl.scan_parquet(args.input).with_row_index("_row")
    df = frame.collect()
    stage("read")
    try:
        schema.validate(df, lazy=True)  # a DataFrame: pandera runs the data checks too
        cases = pl.DataFrame(schema={"column": pl.String, "check": pl.String, "index": pl.Int64})
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases
    stage("validate")
    rows_of: dict[str, pl.Series] = {}
    for rule, pairs in RULES.items():
        hit = pl.lit(False)
        for column, check in pairs:
            hit = hit | ((pl.col("column") == column) & pl.col("check").str.starts_with(check))
        rows_of[rule] = cases.filter(hit).get_column("index").drop_nulls().unique()
    rule_failures = {rule: len(rows) for rule, rows in rows_of.items()}
    failing = pl.concat(list(rows_of.values())).unique().cast(pl.UInt32)
    is_failing = pl.col("_row").is_in(failing.implode())
    args.out.mkdir(parents=True, exist_ok=True)
    failed = df.filter(is_failing)
    failed.drop("_row").write_parquet(args.out / "quarantine.parquet")
    clean = df.filter(~is_failing)
    clean.drop("_row").write_parquet(args.out / "clean.parquet")
    stage("split_write")
    report(
        stage, "pandera", pandera.__version__, df.height, rule_failures, failed.height, clean.height
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
