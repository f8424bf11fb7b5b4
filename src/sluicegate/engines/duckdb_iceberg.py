"""DuckDB computing over Iceberg tables in a SQL catalog (``outputs.format: iceberg``).

The same engine as DuckDB + Delta (``duckdb_delta.py``: published tables are views,
changes go to in-memory shadows, the ledger is proven there, a rollback drops them);
only the store differs: :class:`~.iceberg_store.IcebergStore` writes each changed table
on a per-run Iceberg branch and fast-forwards ``main`` after the journal.

Snapshot ids are chosen by the writer, so the versions a run records
(``staged_versions``) are placeholders until the branch writes: the run record's
snapshot rows are written last and their placeholders replaced by the real ids
(:meth:`_name_snapshots`) before that table is written.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pyarrow as pa

from .duckdb_delta import DuckDBDeltaEngine
from .iceberg_catalog import CatalogSpec
from .iceberg_store import IcebergStore
from .storage import ICEBERG, SNAPSHOTS_TABLE


class DuckDBIcebergEngine(DuckDBDeltaEngine):
    """The embedded engine with an Iceberg catalog namespace as its warehouse."""

    storage = ICEBERG

    def __init__(self, warehouse: str, *, iceberg: tuple[CatalogSpec, str], **options: Any) -> None:
        self._iceberg = iceberg
        self._placeholders: dict[int, str] = {}
        super().__init__(warehouse, **options)

    def _open_store(self, root: str) -> Any:
        spec, namespace = self._iceberg
        store = IcebergStore(spec, namespace, root)
        store.finalize = self._name_snapshots
        return store

    def staged_versions(self) -> dict[str, int]:
        """Negative placeholders, one per changed table (replaced at publish)."""
        if self._tx is None:
            return {}
        out: dict[str, int] = {}
        self._placeholders = {}
        for i, e in enumerate(sorted(self._tx.values(), key=lambda e: e.name)):
            if not e.dirty or e.how == "drop":
                continue
            if e.how == "dates" and e.dates is None:
                e.dates = self._changed_dates(e.name)
            if e.how == "dates" and not e.dates and e.before is not None:
                out[e.name] = e.before  # unchanged: keeps its snapshot
                continue
            out[e.name] = -(i + 1)
            self._placeholders[-(i + 1)] = e.name
        return out

    def _name_snapshots(
        self, versions: dict[str, int], payloads: MutableMapping[str, pa.Table]
    ) -> None:
        """Replace the placeholders in the snapshot rows by the ids the branches got."""
        data = payloads.get(SNAPSHOTS_TABLE)
        if data is None or not self._placeholders:
            return
        col = data.column("version")
        real = {p: versions.get(name) for p, name in self._placeholders.items()}
        values = [real.get(v, v) if v is not None and v < 0 else v for v in col.to_pylist()]
        payloads[SNAPSHOTS_TABLE] = data.set_column(
            data.schema.get_field_index("version"), "version", pa.array(values, col.type)
        )
