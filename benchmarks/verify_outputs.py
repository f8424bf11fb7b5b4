"""Check what a sluicegate run *published* against the generator's ground truth.

The run metrics say what sluicegate counted; this module reads the outputs back on its
own — the Hive-partitioned fact export (Parquet, the same layout on both engines) and the
customer dimension (a table in the DuckDB warehouse file, or a Parquet dataset in the
Spark engine's warehouse folder) — and computes the fact checksums the generator writes
in ``expected.json``: fact rows, sum of quantity, sum of amount, sum of the customer
version each fact row joined. A run whose ledger is right but whose star schema is wrong
fails the benchmark's truth column.

Runs outside the timed region: the harness calls it after the process has exited.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

FACT = "fct_sales"
DIMENSION = "dim_customer"


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def published_counts(warehouse: Path, export: Path) -> dict[str, Any]:
    """Fact rows and checksums from the export, dimension rows from the warehouse.

    Keys as in the generator's ``expected.json``; a missing output is reported as an
    ``output_error`` (the truth check then fails) rather than raised.
    """
    out: dict[str, Any] = {}
    con = duckdb.connect()
    try:
        files = sorted((export / FACT).glob("*/*/*.parquet"))
        if not files:
            return {"output_error": f"no fact export under {export / FACT}"}
        listed = "[" + ", ".join(_lit(str(f)) for f in files) + "]"
        rows, qty, amount, version = con.execute(
            "SELECT count(*), sum(quantity), sum(amount), sum(dim_customer_version) "
            f"FROM read_parquet({listed}, hive_partitioning = false)"
        ).fetchone()
        out["fact_rows"] = int(rows)
        out["fact_checksum"] = {
            "sum_quantity": int(qty or 0),
            "sum_amount": round(float(amount or 0), 2),
            "sum_customer_version": int(version or 0),
        }
        if warehouse.is_dir():  # a Delta warehouse: the files the table's log lists
            dim_files = delta_files(warehouse / DIMENSION)
            if not dim_files:
                out["output_error"] = f"no {DIMENSION} dataset under {warehouse}"
                return out
            dim_list = "[" + ", ".join(_lit(f) for f in dim_files) + "]"
            query = f"SELECT count(*) FROM read_parquet({dim_list})"
        else:
            con.execute(f"ATTACH {_lit(str(warehouse))} AS wh (READ_ONLY)")
            query = f"SELECT count(*) FROM wh.{DIMENSION}"
        out["customer_dim_rows"] = int(con.execute(query).fetchone()[0])
    except duckdb.Error as exc:
        out["output_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        con.close()
    return out


def delta_files(table: Path) -> list[str]:
    """The data files of a Delta table's current version, listed by delta-rs (a folder's
    Parquet files also hold removed versions)."""
    if not (table / "_delta_log").is_dir():
        return []
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(table)).file_uris())
