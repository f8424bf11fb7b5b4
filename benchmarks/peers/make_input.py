"""Build the peers' input: the feed's typed, deduplicated sales as one Parquet file.

The peers (pandera, pointblank, Soda) validate a typed table; none of them parses
hostile NDJSON or deduplicates. So every tool, sluicegate included, is given the
same already-typed, already-deduplicated rows and only applies the eight rules.

How it is derived (reproducible, and independent of sluicegate): the hand-written
DuckDB baseline (``benchmarks/baseline_duckdb.py``) runs once on the feed; its
clean rows (``fact_sales/``) and its rule-failing rows (``quarantine/``) together
are the deduplicated rows, typed (``order_ts`` TIMESTAMP, NULL when neither format
parses; ``quantity`` INTEGER; ``unit_price`` DECIMAL(10,2)). They are unioned,
ordered by ``sale_id`` and written with DuckDB to ``<feed>/peers/sales_typed.parquet``.
The row count is checked against ``deduplicated_rows`` of the feed's ``expected.json``.

Usage: ``python benchmarks/peers/make_input.py --feed FEED [--force]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
BASELINE = HERE.parent / "baseline_duckdb.py"
COLUMNS = (
    "sale_id",
    "order_ts",
    "customer_id",
    "product_id",
    "store_id",
    "channel",
    "quantity",
    "unit_price",
)
INPUT_NAME = "sales_typed.parquet"


def input_path(feed: Path) -> Path:
    """Where the typed input of ``feed`` lives."""
    return feed / "peers" / INPUT_NAME


def ensure_input(feed: Path, force: bool = False) -> Path:
    """The typed Parquet of ``feed``, built when missing (or older than expected.json)."""
    target = input_path(feed)
    truth = feed / "expected.json"
    if (
        not force
        and target.exists()
        and target.stat().st_mtime >= truth.stat().st_mtime
        and _rows(target) == json.loads(truth.read_text())["deduplicated_rows"]
    ):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="peers-input-") as tmp:
        out = Path(tmp)
        argv = [sys.executable, str(BASELINE), "--src", str(feed), "--out", str(out)]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        clean = ", ".join(COLUMNS)
        failed = clean.replace("order_ts", "order_ts_parsed AS order_ts", 1)
        fact = (out / "fact_sales" / "**" / "*.parquet").as_posix()
        quarantine = (out / "quarantine" / "quarantine.parquet").as_posix()
        partial = target.with_suffix(".partial")
        con = duckdb.connect()
        con.execute(
            "COPY (SELECT * FROM ("
            f"SELECT {clean} FROM read_parquet($fact, hive_partitioning = false) "
            f"UNION ALL SELECT {failed} FROM read_parquet($quarantine)) "
            f"ORDER BY sale_id) TO '{partial.as_posix()}' (FORMAT parquet)",
            {"fact": fact, "quarantine": quarantine},
        )
        con.close()
        partial.replace(target)
    want = json.loads(truth.read_text())["deduplicated_rows"]
    got = _rows(target)
    if got != want:
        raise SystemExit(f"{target}: {got} rows, expected.json says {want} deduplicated rows")
    return target


def _rows(path: Path) -> int:
    con = duckdb.connect()
    try:
        return con.execute("SELECT count(*) FROM read_parquet($p)", {"p": str(path)}).fetchone()[0]
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--feed", type=Path, required=True, help="a generated feed folder")
    ap.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = ap.parse_args(argv)
    print(ensure_input(args.feed.resolve(), args.force))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
