"""Soda Core 4 on DuckDB on the typed retail input: the eight rules as a Soda contract,
verified locally; counts only (Soda reports how many rows fail each check, it does not
split or write the rows).

Runs in its own virtualenv (``.venv-peers/soda``, benchmarks/peers/requirements-soda.txt),
never imports sluicegate. An in-memory DuckDB connection holds three views (the input
Parquet as ``sales``, the feed's product and store files) and is handed to Soda
(``DuckDBDataSourceImpl.from_existing_cursor``). Each rule is Soda's own check type:
``missing`` for NOT NULL; ``missing`` + ``invalid`` (``valid_min``) for the value rules,
whose failures are the sum of the two (Soda never counts a missing value as invalid);
``invalid`` with ``valid_reference_data`` for the reference rules (NULL is missing, not
invalid, so it passes, as ``x IS NULL OR x IN (...)`` does). Rows failing any rule need
one more check: a ``failed_rows`` check whose expression is the OR of the eight
conditions, as a Soda user would count a quarantine.

Usage: ``peer_soda.py --input typed.parquet --feed FEED --out DIR``; prints JSON.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

from importlib.metadata import version  # noqa: E402

import duckdb  # noqa: E402
from peer_common import StageClock, parse_args, report  # noqa: E402 - beside this script
from soda_core.contracts import verify_contract_locally  # noqa: E402
from soda_duckdb.common.data_sources.duckdb_data_source import DuckDBDataSourceImpl  # noqa: E402

ANY_RULE = " OR ".join(
    (
        "customer_id IS NULL",
        "product_id IS NULL",
        "store_id IS NULL",
        "quantity IS NULL OR quantity <= 0",
        "unit_price IS NULL OR unit_price < 0",
        "product_id NOT IN (SELECT product_id FROM products WHERE product_id IS NOT NULL)",
        "store_id NOT IN (SELECT store_id FROM stores WHERE store_id IS NOT NULL)",
        "order_ts IS NULL",
    )
)

CONTRACT = f"""\
dataset: peers/main/sales
checks:
  - row_count:
      name: rows
  - failed_rows:
      name: any_rule
      expression: "{ANY_RULE}"
columns:
  - name: customer_id
    checks:
      - missing:
          name: non_null_customer
  - name: product_id
    checks:
      - missing:
          name: non_null_product
      - invalid:
          name: known_product
          valid_reference_data:
            dataset: peers/main/products
            column: product_id
  - name: store_id
    checks:
      - missing:
          name: non_null_store
      - invalid:
          name: known_store
          valid_reference_data:
            dataset: peers/main/stores
            column: store_id
  - name: quantity
    checks:
      - missing:
          name: positive_quantity.missing
      - invalid:
          name: positive_quantity.invalid
          valid_min: 1
  - name: unit_price
    checks:
      - missing:
          name: valid_price.missing
      - invalid:
          name: valid_price.invalid
          valid_min: 0
  - name: order_ts
    checks:
      - missing:
          name: parseable_order_ts
"""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stage = StageClock(T0)

    con = duckdb.connect()
    con.execute(f"CREATE VIEW sales AS SELECT * FROM read_parquet('{args.input.as_posix()}')")
    for name, key in (("products", "product_id"), ("stores", "store_id")):
        path = (args.feed / f"{name}.json").as_posix()
        con.execute(
            f"CREATE VIEW {name} AS SELECT {key} FROM read_json('{path}', "
            f"format = 'newline_delimited', columns = {{'{key}': 'VARCHAR'}})"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    contract = args.out / "sales.contract.yml"
    contract.write_text(CONTRACT)
    source = DuckDBDataSourceImpl.from_existing_cursor(con, name="peers")
    stage("read")
    result = verify_contract_locally(data_sources=[source], contract_file_path=str(contract))
    stage("validate")
    values: dict[str, int] = {}
    for verification in result.contract_verification_results:
        for check_result in verification.check_results:
            values[check_result.check.name] = int(check_result.threshold_value)
    rule_failures = {
        "non_null_customer": values["non_null_customer"],
        "non_null_product": values["non_null_product"],
        "non_null_store": values["non_null_store"],
        "positive_quantity": values["positive_quantity.missing"]
        + values["positive_quantity.invalid"],
        "valid_price": values["valid_price.missing"] + values["valid_price.invalid"],
        "known_product": values["known_product"],
        "known_store": values["known_store"],
        "parseable_order_ts": values["parseable_order_ts"],
    }
    report(
        stage,
        "soda",
        version("soda-core"),
        values["rows"],
        rule_failures,
        values["any_rule"],
        values["rows"] - values["any_rule"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
