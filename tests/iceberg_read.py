"""Iceberg tables read back with pyiceberg directly (not through sluicegate's store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def catalog(db: Path, warehouse: Path, name: str = "lake") -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse.mkdir(parents=True, exist_ok=True)
    return SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")


def embedded_engine(tmp_path: Path, namespace: str) -> Any:
    """The embedded engine over a fresh SQL catalog in ``tmp_path`` (``catalog.db``, the
    warehouse ``iceberg/``), its tables in ``namespace``; the caller closes it."""
    from sluicegate.engines.duckdb_iceberg import DuckDBIcebergEngine
    from sluicegate.engines.iceberg_catalog import CatalogSpec

    catalog(tmp_path / "catalog.db", tmp_path / "iceberg")  # makes the warehouse folder
    spec = CatalogSpec(
        "lake", f"sqlite:///{tmp_path / 'catalog.db'}", f"file://{tmp_path / 'iceberg'}"
    )
    return DuckDBIcebergEngine(str(tmp_path / "wh"), iceberg=(spec, namespace))


def iceberg_dicts(cat: Any, ident: str, snapshot_id: int | None = None) -> list[dict]:
    if not cat.table_exists(ident):
        return []
    return cat.load_table(ident).scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
