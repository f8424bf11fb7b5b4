"""A Delta table as a run's source, bound by version (``source.format: delta``).

Binding resolves the version (``version``, the one current at ``as_of``, or the latest)
and returns what the run record keeps: the version, its commit timestamp, a schema
fingerprint, the log's record count (the sum of the add actions' ``numRecords`` stats:
the ledger's independent raw count) and the Parquet data files with each file's count.
The run then reads exactly those files; a later commit writes new files and never
changes them (Delta files are immutable), so a rerun bound to the same version reads
the same rows, and a commit landing between the bind and the read is not seen.

Refused, because reading the data files as plain Parquet would be wrong:

* deletion vectors present on a bound file (its rows are not the file's rows);
* column mapping (the files' column names are physical ids, not the schema's names);
* partition columns (their values live in the log, not in the files);
* any other reader feature this module does not know;
* a file without ``numRecords`` stats (there would be no independent count).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from urllib.parse import unquote

#: Reader features whose tables are still "the union of their Parquet files".
_HARMLESS = frozenset({"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})


class DeltaSourceProblem(Exception):
    """The table or version cannot be bound; ``key`` is the source key to blame."""

    def __init__(self, key: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.hint = hint


@dataclass
class BoundVersion:
    """One Delta table version as a run binds it."""

    table: str
    version: int
    committed_at: str
    schema_fingerprint: str
    record_count: int
    #: (absolute data file path, numRecords from its add action), sorted by path
    data_files: list[tuple[str, int]] = field(default_factory=list)


def bind_version(path: str, version: int | None, as_of: str | None) -> BoundVersion:
    """Resolve the version of the Delta table at ``path`` a run reads (module docstring)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    if not os.path.isdir(os.path.join(path, "_delta_log")):
        raise DeltaSourceProblem(
            "path",
            f"{path} is not a Delta table (it has no _delta_log folder)",
            "point source.path at the table's folder, or use format: parquet for plain files",
        )
    try:
        table = DeltaTable(path, version=version) if version is not None else DeltaTable(path)
        if as_of is not None:
            table.load_as_version(_when(as_of))
    except DeltaSourceProblem:
        raise
    except TableNotFoundError:
        raise DeltaSourceProblem(
            "path", f"{path} is not a readable Delta table", "check source.path"
        ) from None
    except Exception as exc:  # noqa: BLE001 - delta-rs raises plain exceptions for bad versions
        key = "version" if version is not None else "as_of" if as_of is not None else "path"
        raise DeltaSourceProblem(
            key,
            f"cannot load {_what(version, as_of)} of the Delta table {path}: {exc}",
            "bind a version the table still has (its history: DESCRIBE HISTORY, or "
            "deltalake's DeltaTable.history())",
        ) from None
    _refuse_unreadable(table, path)
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    files: list[tuple[str, int]] = []
    for a in actions:
        if a.get("num_records") is None:
            raise DeltaSourceProblem(
                "path",
                f"version {table.version()} of {path}: data file {a['path']} has no numRecords "
                "statistics in the log, so its raw count cannot be taken independently",
                "rewrite the table with statistics (Spark and delta-rs write them by default)",
            )
        rel = unquote(a["path"])
        files.append((rel if os.path.isabs(rel) else os.path.join(path, rel), a["num_records"]))
    files.sort()
    schema_doc = json.dumps(json.loads(table.schema().to_json()), sort_keys=True)
    return BoundVersion(
        table=path,
        version=table.version(),
        committed_at=_committed_at(path, table.version()),
        schema_fingerprint=hashlib.sha256(schema_doc.encode()).hexdigest(),
        record_count=sum(n for _p, n in files),
        data_files=files,
    )


def _refuse_unreadable(table: object, path: str) -> None:
    version = table.version()  # type: ignore[attr-defined]
    meta = table.metadata()  # type: ignore[attr-defined]
    features = set(table.protocol().reader_features or [])  # type: ignore[attr-defined]
    mode = (meta.configuration or {}).get("delta.columnMapping.mode", "none")
    if mode != "none" or "columnMapping" in features:
        raise DeltaSourceProblem(
            "path",
            f"version {version} of {path} uses column mapping (mode {mode}): its Parquet "
            "files name columns by physical ids, which sluicegate does not translate",
            "read it from a copy without column mapping (CREATE TABLE … AS SELECT, or "
            "write_deltalake of the rows)",
        )
    if meta.partition_columns:
        raise DeltaSourceProblem(
            "path",
            f"version {version} of {path} is partitioned by "
            f"{', '.join(meta.partition_columns)}: partition values live in the log, not in "
            "the data files sluicegate reads",
            "bind an unpartitioned copy of the table",
        )
    if "deletionVectors" in features:
        marked = table.deletion_vectors().read_all().num_rows  # type: ignore[attr-defined]
        if marked:
            raise DeltaSourceProblem(
                "path",
                f"version {version} of {path} has deletion vectors on {marked} data "
                "file(s): their rows are not the files' rows",
                "purge them first (Spark: REORG TABLE … APPLY (PURGE)) and bind the new version",
            )
    unknown = sorted(features - _HARMLESS - {"deletionVectors"})
    if unknown:
        raise DeltaSourceProblem(
            "path",
            f"version {version} of {path} needs reader feature(s) {', '.join(unknown)}, "
            "which sluicegate's Delta source does not read",
            "bind a copy of the table without them",
        )


def _when(as_of: str) -> dt.datetime:
    try:
        when = dt.datetime.fromisoformat(as_of)
    except ValueError:
        raise DeltaSourceProblem(
            "as_of", f"as_of '{as_of}' is not an ISO timestamp", "e.g. 2024-01-31T23:59:59Z"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _what(version: int | None, as_of: str | None) -> str:
    if version is not None:
        return f"version {version}"
    return f"the version current at {as_of}" if as_of is not None else "the latest version"


def _committed_at(path: str, version: int) -> str:
    """The bound version's commit timestamp: its commit file's ``inCommitTimestamp`` or
    ``commitInfo.timestamp``, else the file's modification time (the protocol's fallback).
    Read from the file: delta-rs's ``history()`` of a table loaded at an old version
    numbers its entries from the latest one."""
    commit = os.path.join(path, "_delta_log", f"{version:020d}.json")
    try:
        with open(commit, encoding="utf-8") as fh:
            for line in fh:
                info = json.loads(line).get("commitInfo") if line.strip() else None
                if info:
                    ms = info.get("inCommitTimestamp", info.get("timestamp"))
                    if ms is not None:
                        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat()
        ms = os.stat(commit).st_mtime * 1000
    except OSError:  # the commit file was cleaned up after a checkpoint
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat()
