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
ICEBERG_NAMESPACE = "bench"  # run_bench.py's Iceberg rows publish there


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def published_counts(
    warehouse: Path,
    export: Path,
    *,
    table_format: str | None = None,
    root: Path | None = None,
    logical_date: str | None = None,
) -> dict[str, Any]:
    """Fact rows and checksums, and dimension rows, read back from what the run published.

    The DuckDB file (``table_format`` None): the facts from the export, the dimension from
    the warehouse file. Delta and Iceberg: both from the published tables themselves — the
    files a Delta table's current version lists (delta-rs), the current snapshot of an
    Iceberg table in the catalog ``<root>/catalog.db`` (pyiceberg) — and the export must
    agree with the fact table. Keys as in the generator's ``expected.json``; a missing
    output is reported as an ``output_error`` (the truth check then fails), never raised.

    ``logical_date`` (a daily row: the run of that date followed one of an earlier date
    into the same outputs) counts only that date's facts, and requires facts of an earlier
    date beside them — without them the timed run was a first run, not a daily one.
    """
    out: dict[str, Any] = {}
    con = duckdb.connect()
    try:
        files = sorted((export / FACT).glob("*/*/*.parquet"))
        if not files:
            return {"output_error": f"no fact export under {export / FACT}"}
        listed = "[" + ", ".join(_lit(str(f)) for f in files) + "]"
        con.execute(
            f"CREATE VIEW export_facts AS SELECT * FROM read_parquet({listed}, "
            "hive_partitioning = false)"
        )
        day = f"_logical_date = DATE {_lit(logical_date)}" if logical_date else "TRUE"
        exported = _fact_sums(con, "export_facts", day)
        if logical_date:
            ((earlier,),) = con.execute(
                f"SELECT count(*) FROM export_facts WHERE _logical_date < DATE {_lit(logical_date)}"
            ).fetchall()  # to the end: registering a table needs no result open
            if not earlier:
                return {
                    "output_error": f"no facts of a date before {logical_date}: not a daily run"
                }
        if table_format in ("delta", "iceberg"):
            for name in (FACT, DIMENSION):
                problem = _register_table(con, name, table_format, warehouse, root)
                if problem:
                    out["output_error"] = problem
                    return out
            out.update(_fact_sums(con, FACT, day))
            if exported != _fact_sums(con, FACT, day):
                out["output_error"] = f"the export disagrees with the {FACT} table: {exported}"
            query = f"SELECT count(*) FROM {DIMENSION}"
        elif warehouse.is_dir():  # a Delta warehouse: the files the table's log lists
            out.update(exported)
            dim_files = delta_files(warehouse / DIMENSION)
            if not dim_files:
                out["output_error"] = f"no {DIMENSION} dataset under {warehouse}"
                return out
            dim_list = "[" + ", ".join(_lit(f) for f in dim_files) + "]"
            query = f"SELECT count(*) FROM read_parquet({dim_list})"
        else:
            out.update(exported)
            con.execute(f"ATTACH {_lit(str(warehouse))} AS wh (READ_ONLY)")
            query = f"SELECT count(*) FROM wh.{DIMENSION}"
        out["customer_dim_rows"] = int(con.execute(query).fetchone()[0])
    except duckdb.Error as exc:
        out["output_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        con.close()
    return out


def _fact_sums(con: Any, relation: str, where: str = "TRUE") -> dict[str, Any]:
    rows, qty, amount, version = con.execute(
        "SELECT count(*), sum(quantity), sum(amount), sum(dim_customer_version) "
        f"FROM {relation} WHERE {where}"
    ).fetchall()[0]  # fetched to the end: the connection is used again
    return {
        "fact_rows": int(rows),
        "fact_checksum": {
            "sum_quantity": int(qty or 0),
            "sum_amount": round(float(amount or 0), 2),
            "sum_customer_version": int(version or 0),
        },
    }


def _register_table(
    con: Any, name: str, table_format: str, warehouse: Path, root: Path | None
) -> str | None:
    """Make the published table ``name`` a DuckDB view ``name``; a problem as text."""
    if table_format == "delta":
        found = delta_files(warehouse / name)
        if not found:
            return f"no Delta table {name} under {warehouse}"
        listed = "[" + ", ".join(_lit(f) for f in found) + "]"
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({listed})")
        return None
    data = iceberg_table(root or warehouse.parent, name)
    if data is None:
        return f"no Iceberg table {ICEBERG_NAMESPACE}.{name} in {root}/catalog.db"
    con.register(name, data)
    return None


def iceberg_table(root: Path, name: str) -> Any:
    """The current snapshot of ``bench.<name>`` in the SQLite catalog ``<root>/catalog.db``,
    read by pyiceberg as Arrow (None when the table is missing)."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "lake", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root / 'iceberg'}"
    )
    ident = f"{ICEBERG_NAMESPACE}.{name}"
    if not catalog.table_exists(ident):
        return None
    return catalog.load_table(ident).scan().to_arrow()


def delta_files(table: Path) -> list[str]:
    """The data files of a Delta table's current version, listed by delta-rs (a folder's
    Parquet files also hold removed versions)."""
    if not (table / "_delta_log").is_dir():
        return []
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(table)).file_uris())
