"""Iceberg tables read back with pyiceberg directly (not through sluicegate's store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def catalog(db: Path, warehouse: Path, name: str = "lake") -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse.mkdir(parents=True, exist_ok=True)
    return SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")


def iceberg_dicts(cat: Any, ident: str, snapshot_id: int | None = None) -> list[dict]:
    if not cat.table_exists(ident):
        return []
    return cat.load_table(ident).scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
