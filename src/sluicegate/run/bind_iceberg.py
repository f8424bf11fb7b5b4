"""Bind an Iceberg source: the snapshot, and its data files as the run's manifest.

The snapshot summary's ``total-records`` is the ledger's independent raw count; the data
files' Parquet footers must agree with it (they do unless the table has row deletes,
which engines/iceberg_source.py refuses). A missing table or snapshot is a contract
error located at ``source.table`` / ``source.snapshot_id`` (exit 2).
"""

from __future__ import annotations

from dataclasses import asdict

from ..contract.loader import LoadedContract
from ..errors import InputError
from .bind import Binding, bind_files


def bind_iceberg(loaded: LoadedContract) -> Binding:
    from ..engines.iceberg_source import SnapshotProblem, bind_snapshot
    from ..workspace import iceberg_catalog

    spec = loaded.contract.source
    assert spec.catalog is not None and spec.table is not None
    try:
        snap = bind_snapshot(
            iceberg_catalog(loaded, spec.catalog), spec.table, spec.snapshot_id, spec.as_of
        )
    except SnapshotProblem as p:
        err = loaded.error(("source", p.key), p.message)
        err.hint = p.hint
        raise loaded.located(err) from None
    files = bind_files(snap.data_files, spec)
    footers = sum(f.records for f in files)
    if footers != snap.record_count:
        raise InputError(
            f"snapshot {snap.snapshot_id} of '{spec.table}': its summary counts "
            f"{snap.record_count} records, its data files {footers}",
            hint="the table's metadata and files disagree; inspect it with pyiceberg",
        )
    doc = asdict(snap)
    doc.pop("data_files")
    return Binding(files=files, format="iceberg", root="", partitions=[], snapshot=doc)
