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

On an object store (``source.path: s3://bucket/table``) the same binding runs through
delta-rs's own S3 client (``S3Settings.delta_options``) and pyarrow's (the probe for
``_delta_log`` and the commit file's timestamp); the data files are ``s3://`` URIs. A
store that refuses the request (bad keys, no permission, no such bucket) is blamed on
``object_store`` with the store's first line, never on the table — so "no such table"
and "the credentials are wrong" are two different errors.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from .object_store import is_s3, key_path

if TYPE_CHECKING:
    from .object_store import S3Settings

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


def bind_version(
    path: str, version: int | None, as_of: str | None, s3: S3Settings | None = None
) -> BoundVersion:
    """Resolve the version of the Delta table at ``path`` (a folder, or an ``s3://`` URI
    read with ``s3``) a run reads (module docstring)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    remote = is_s3(path)
    if remote:
        path = path.rstrip("/")
    if not _has_log(path, s3):
        raise DeltaSourceProblem(
            "path",
            f"{path} is not a Delta table (it has no _delta_log folder)",
            "point source.path at the table's folder, or use format: parquet for plain files",
        )
    options = (s3 or _default_s3()).delta_options() if remote else None
    try:
        table = DeltaTable(path, version=version, storage_options=options)
        if as_of is not None:
            table.load_as_version(_when(as_of))
    except DeltaSourceProblem:
        raise
    except TableNotFoundError:
        raise DeltaSourceProblem(
            "path", f"{path} is not a readable Delta table", "check source.path"
        ) from None
    except OSError as exc:  # delta-rs: the store refused a request (keys, permission)
        raise _refused(path, s3, exc) from None
    except Exception as exc:  # noqa: BLE001 - delta-rs raises plain exceptions for bad versions
        key = "version" if version is not None else "as_of" if as_of is not None else "path"
        raise DeltaSourceProblem(
            key,
            f"cannot load {_what(version, as_of)} of the Delta table {path}: {_first(exc)}",
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
        files.append((_data_file(path, unquote(a["path"])), a["num_records"]))
    files.sort()
    schema_doc = json.dumps(json.loads(table.schema().to_json()), sort_keys=True)
    return BoundVersion(
        table=path,
        version=table.version(),
        committed_at=_committed_at(path, table.version(), s3),
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


def _committed_at(path: str, version: int, s3: S3Settings | None = None) -> str:
    """The bound version's commit timestamp: its commit file's ``inCommitTimestamp`` or
    ``commitInfo.timestamp``, else the file's modification time (the protocol's fallback).
    Read from the file: delta-rs's ``history()`` of a table loaded at an old version
    numbers its entries from the latest one."""
    commit = f"{path}/_delta_log/{version:020d}.json"
    try:
        if is_s3(path):
            fs = (s3 or _default_s3()).arrow_fs()
            with fs.open_input_stream(key_path(commit)) as fh:
                lines = fh.read().decode("utf-8").splitlines()
            mtime = fs.get_file_info(key_path(commit)).mtime
            ms = mtime.timestamp() * 1000 if mtime is not None else None
        else:
            with open(commit, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
            ms = os.stat(commit).st_mtime * 1000
    except OSError:  # the commit file was cleaned up after a checkpoint
        return ""
    for line in lines:
        info = json.loads(line).get("commitInfo") if line.strip() else None
        if info and info.get("inCommitTimestamp", info.get("timestamp")) is not None:
            ms = info.get("inCommitTimestamp", info.get("timestamp"))
            break
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat() if ms is not None else ""


def _data_file(table: str, rel: str) -> str:
    """An add action's path (relative to the table, or absolute) as the file to read."""
    if "://" in rel or os.path.isabs(rel):
        return "s3://" + rel.split("://", 1)[1] if is_s3(rel) else rel
    return f"{table}/{rel}" if is_s3(table) else os.path.join(table, rel)


def _default_s3() -> S3Settings:
    from .object_store import S3Settings

    return S3Settings.resolve()


def _has_log(path: str, s3: S3Settings | None) -> bool:
    """Is there a ``_delta_log`` below ``path``? On S3 a refused probe is the store's
    problem (:func:`_refused`), not a missing table."""
    if not is_s3(path):
        return os.path.isdir(os.path.join(path, "_delta_log"))
    import pyarrow.fs as pafs

    try:
        info = (s3 or _default_s3()).arrow_fs().get_file_info(key_path(path) + "/_delta_log")
    except OSError as exc:
        raise _refused(path, s3, exc) from None
    return info.type == pafs.FileType.Directory


def _first(exc: BaseException) -> str:
    """An error's first line without ANSI colours (delta-rs's S3 errors are multi-line,
    coloured, and end with the store's XML body)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]


def _refused(path: str, s3: S3Settings | None, exc: BaseException) -> DeltaSourceProblem:
    """The store's refusal in one line (ANSI colours and the XML body cut off). Its
    clients name the endpoint, bucket and key, never the secret key."""
    first = _first(exc)
    where = (s3.endpoint if s3 is not None else None) or "AWS S3"
    return DeltaSourceProblem(
        "object_store",
        f"the object store at {where} refused to read the Delta table {path}: {first}",
        "check object_store: (endpoint, region, path_style) and the credentials "
        "(${secret:…} tokens or AWS_* variables) and their read permission on the bucket",
    )
