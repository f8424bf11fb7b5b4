"""An Iceberg table as a run's source, bound by snapshot (``source.format: iceberg``).

Binding resolves the snapshot (``snapshot_id``, the one current at ``as_of``, or the
current one) and returns what the run record keeps: snapshot id, commit timestamp,
schema id and fingerprint, the snapshot summary's ``total-records`` (the ledger's
independent raw count) and the Parquet data files. The run then reads exactly those
files; a later append makes a new snapshot and never changes them, so a rerun of the
same snapshot reads the same rows.

A snapshot with delete files (row-level deletes) is refused: its rows are not the union
of its data files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .iceberg_catalog import CatalogSpec, open_catalog


class SnapshotProblem(Exception):
    """The table or snapshot cannot be bound; ``key`` is the contract key to blame."""

    def __init__(self, key: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.hint = hint


@dataclass
class BoundSnapshot:
    """One Iceberg snapshot as a run binds it."""

    table: str
    snapshot_id: int
    committed_at: str
    schema_id: int
    schema_fingerprint: str
    record_count: int
    data_files: list[str] = field(default_factory=list)


def bind_snapshot(
    spec: CatalogSpec, table_name: str, snapshot_id: int | None, as_of: str | None
) -> BoundSnapshot:
    """Resolve the snapshot of ``table_name`` a run reads (see the module docstring)."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    catalog = open_catalog(spec)
    try:
        table = catalog.load_table(table_name)
    except (NoSuchTableError, NoSuchNamespaceError):
        raise SnapshotProblem(
            "table",
            f"Iceberg table '{table_name}' does not exist in catalog '{spec.name}'",
            "check source.table (namespace.name) and the catalog's uri",
        ) from None
    snap = _choose(table, table_name, snapshot_id, as_of)
    schema = table.schemas().get(snap.schema_id) if snap.schema_id is not None else None
    schema = schema or table.schema()
    files, deletes = [], 0
    for task in table.scan(snapshot_id=snap.snapshot_id).plan_files():
        files.append(_local(task.file.file_path))
        deletes += len(task.delete_files)
    if deletes:
        raise SnapshotProblem(
            "snapshot_id",
            f"snapshot {snap.snapshot_id} of '{table_name}' has {deletes} delete file(s); "
            "sluicegate binds snapshots whose rows are their data files",
            "compact the table (rewrite_data_files) and bind the new snapshot",
        )
    summary = snap.summary.additional_properties if snap.summary else {}
    schema_doc = json.dumps(json.loads(schema.model_dump_json()), sort_keys=True)
    return BoundSnapshot(
        table=table_name,
        snapshot_id=snap.snapshot_id,
        committed_at=dt.datetime.fromtimestamp(snap.timestamp_ms / 1000, dt.UTC).isoformat(),
        schema_id=schema.schema_id,
        schema_fingerprint=hashlib.sha256(schema_doc.encode()).hexdigest(),
        record_count=int(summary.get("total-records", 0)),
        data_files=sorted(files),
    )


def _choose(table: Any, name: str, snapshot_id: int | None, as_of: str | None) -> Any:
    if snapshot_id is not None:
        snap = table.snapshot_by_id(snapshot_id)
        if snap is None:
            known = [s.snapshot_id for s in table.snapshots()]
            raise SnapshotProblem(
                "snapshot_id",
                f"snapshot {snapshot_id} of '{name}' is not in the table (expired, or never "
                f"existed); it has {len(known)} snapshot(s)",
                "bind an existing snapshot (sluicegate snapshot lists runs; pyiceberg "
                "table.snapshots() the table's), or restore the table's metadata",
            )
        return snap
    if as_of is not None:
        try:
            when = dt.datetime.fromisoformat(as_of)
        except ValueError:
            raise SnapshotProblem(
                "as_of", f"as_of '{as_of}' is not an ISO timestamp", "e.g. 2024-01-31T23:59:59Z"
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        snap = table.snapshot_as_of_timestamp(int(when.timestamp() * 1000))
        if snap is None:
            raise SnapshotProblem("as_of", _none_before(table, name, as_of), _AS_OF_HINT)
        return snap
    snap = table.current_snapshot()
    if snap is None:
        raise SnapshotProblem(
            "table", f"Iceberg table '{name}' has no snapshot yet", "write to it first"
        )
    return snap


_AS_OF_HINT = "give a later as_of, or a snapshot_id"


def _none_before(table: Any, name: str, as_of: str) -> str:
    """Why nothing was current at ``as_of``: expiring a snapshot removes it from the
    snapshot log too, so the message names where the table's history now starts."""
    log = table.history()
    if not log:
        return f"'{name}' has no snapshot at or before {as_of}"
    oldest = log[0]
    at = dt.datetime.fromtimestamp(oldest.timestamp_ms / 1000, dt.UTC).isoformat()
    return (
        f"'{name}' has no snapshot at or before {as_of}: its oldest snapshot is "
        f"{oldest.snapshot_id} of {at} (older snapshots were expired, or the table is newer)"
    )


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path
