"""pointblank (Polars) on the typed retail input: the eight rules as validation steps,
then the split into passing and failing rows (``get_sundered_data``), both written as Parquet.

Runs in its own virtualenv (``.venv-peers/pointblank``,
benchmarks/peers/requirements-pointblank.txt), never imports sluicegate. One step per
rule of examples/retail/contract.yml, in the contract's order, so step i's failed
test units are rule i's failures; NULL fails the value rules (``na_pass=False``: the
contract says ``x IS NOT NULL AND ...``) and passes the reference rules (``x IS NULL
OR x IN (...)``: the set holds ``None``). ``unit_price`` is a DECIMAL(10,2) in the input;
its step compares a Float64 copy (see ``as_float``); the rows written keep the Decimal.

Usage: ``peer_pointblank.py --input typed.parquet --feed FEED --out DIR``; prints JSON.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

from pathlib import Path  # noqa: E402

import pointblank as pb  # noqa: E402
import polars as pl  # noqa: E402
from peer_common import StageClock, parse_args, report  # noqa: E402 - beside this script

RULES = (
    "non_null_customer",
    "non_null_product",
    "non_null_store",
    "positive_quantity",
    "valid_price",
    "known_product",
    "known_store",
    "parseable_order_ts",
)


def reference_ids(path: Path, key: str) -> list[str | None]:
    """The non-NULL ids of a reference NDJSON file, plus None (NULL passes the rule)."""
    ids = pl.read_ndjson(path, schema={key: pl.String}).get_column(key).drop_nulls().unique()
    return [*ids.to_list(), None]


def as_float(df: pl.DataFrame) -> pl.DataFrame:
    """pointblank 1.1's comparison steps call ``is_nan`` on the column, which Polars refuses
    for a Decimal: ``unit_price`` is compared as a Float64 (exact for >= 0 on cents)."""
    return df.with_columns(pl.col("unit_price").cast(pl.Float64))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stage = StageClock(T0)

    products = reference_ids(args.feed / "products.json", "product_id")
    stores = reference_ids(args.feed / "stores.json", "store_id")
    df = pl.read_parquet(args.input)
    stage("read")
    v = (
        pb.Validate(data=df, tbl_name="sales", label="retail eight rules")
        .col_vals_not_null("customer_id", brief=RULES[0])
        .col_vals_not_null("product_id", brief=RULES[1])
        .col_vals_not_null("store_id", brief=RULES[2])
        .col_vals_gt("quantity", 0, na_pass=False, brief=RULES[3])
        .col_vals_ge("unit_price", 0, na_pass=False, pre=as_float, brief=RULES[4])
        .col_vals_in_set("product_id", set=products, brief=RULES[5])
        .col_vals_in_set("store_id", set=stores, brief=RULES[6])
        .col_vals_not_null("order_ts", brief=RULES[7])
        .interrogate(collect_extracts=False)
    )
    failed_per_step = v.n_failed()
    stage("validate")
    rule_failures = {rule: int(failed_per_step[i + 1]) for i, rule in enumerate(RULES)}
    args.out.mkdir(parents=True, exist_ok=True)
    clean = v.get_sundered_data(type="pass")
    failed = v.get_sundered_data(type="fail")
    clean.write_parquet(args.out / "clean.parquet")
    failed.write_parquet(args.out / "quarantine.parquet")
    stage("split_write")
    report(
        stage, "pointblank", pb.__version__, df.height, rule_failures, failed.height, clean.height
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
