"""Publish a staged Delta table by committing its own data files into the target table.

The embedded engine's Delta publish stages every changed table under
``.sluicegate/delta/staging/<tx>`` (the journal's commit point names them) and then
publishes each into its table. Rewriting the staged rows — read the shadow whole, write
them again — wrote every row twice and held it in memory twice: at 1M lines the clean,
fact and mart tables cost ~3 s of a ~11 s run and most of its 2.3 GiB peak.

The staged Parquet files are placed into the table's folder — hard-linked on a local
warehouse, copied by the object store itself (S3 ``CopyObject``: no bytes pass through
this process) on an ``s3://`` one — and committed there with the shadow's own ``add``
actions (size, partition values, statistics) in one delta-rs transaction carrying the
marker: the same files, the same commit, no rows touched. The shadow stays whole, so a
publish interrupted after some files were placed can be completed by either engine from
the journal exactly as before; a file already placed is kept, and files nobody committed
are unreferenced files a ``VACUUM`` removes.

Anything outside the plain case returns ``None`` and the caller rewrites the rows as
before: the DLQ tables (keyed, MERGEd), a shadow whose log is not one plain first commit,
a schema or partitioning that differs from the table's, a date replace on a table not
partitioned by ``_logical_date`` or of the NULL date, a file system that refuses links.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow.fs as pafs
from deltalake import CommitProperties, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions

from .delta_journal import KEY, PARTITION, Entry
from .warehouse_files import Files

_FIRST_COMMIT = "00000000000000000000.json"
_PLAIN_ACTIONS = {"add", "metaData", "protocol", "commitInfo"}


@dataclass
class StagedFiles:
    """A shadow table's first (and only) commit: its data files and how they are laid out."""

    adds: list[dict[str, Any]]
    partition_columns: list[str]
    schema_string: str


def staged_files(shadow: str, files: Files | None = None) -> StagedFiles | None:
    """The ``add`` actions of a shadow written by one overwrite; None for anything else.
    ``files``: the warehouse's file system (None: a local folder)."""
    files = files or Files(shadow)
    log = _join(files, shadow, "_delta_log")
    try:
        names = [n for n in files.children(log) if n.endswith(".json")]
        text = files.read_text(_join(files, log, _FIRST_COMMIT)) if names else ""
    except OSError:
        return None
    if names != [_FIRST_COMMIT]:
        return None
    adds: list[dict[str, Any]] = []
    meta: dict[str, Any] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        kind = next(iter(action))
        if kind not in _PLAIN_ACTIONS:
            return None
        if kind == "add":
            adds.append(action["add"])
        elif kind == "metaData":
            meta = action["metaData"]
    if meta is None:
        return None
    for a in adds:  # relative, plain names only: nothing to encode or resolve
        path = a["path"]
        if unquote(path) != path or os.path.isabs(path) or ".." in path.split("/"):
            return None
    return StagedFiles(adds, list(meta.get("partitionColumns") or []), meta["schemaString"])


def adopt(store: Any, e: Entry, props: CommitProperties) -> int | None:
    """Commit the shadow's files into the table ``e.name`` of ``store`` (a
    ``delta_rs.DeltaRsStore``, which calls this); its new version, or None when this entry
    must be published by rewriting its rows (see the module docstring)."""
    if e.how not in ("replace", "whole", "dates"):
        return None
    staged = staged_files(e.shadow, store.files)
    if staged is None:
        return None
    if KEY in [f["name"] for f in json.loads(staged.schema_string)["fields"]]:
        return None  # the DLQ tables: MERGEd on their key, with the change data feed
    path = store.path(e.name)
    exists = store.is_table(e.name)
    table = store.table(path) if exists else None
    if table is not None:
        same_shape = (
            json.loads(table.schema().to_json()) == json.loads(staged.schema_string)
            and list(table.metadata().partition_columns) == staged.partition_columns
        )
        if not same_shape:
            return None  # a changed table: the rewrite replaces its schema too
        if e.how == "dates" and (
            staged.partition_columns != [PARTITION]
            or not e.dates
            or any(d is None for d in e.dates)  # no partition filter names the NULL date
        ):
            return None
    if not _place_all(store.files, e.shadow, path, staged.adds):
        return None
    actions = [
        AddAction(
            path=a["path"],
            size=int(a["size"]),
            partition_values=a.get("partitionValues") or {},
            modification_time=int(a["modificationTime"]),
            data_change=True,
            stats=a.get("stats") or "",
        )
        for a in staged.adds
    ]
    if table is None:
        create_table_with_add_actions(
            path,
            Schema.from_json(staged.schema_string),
            actions,
            mode="error",
            partition_by=staged.partition_columns or None,
            storage_options=store.options,
            commit_properties=props,
        )
    else:
        filters = None
        if e.how == "dates":  # replace those dates' partitions, keep the others
            filters = [(PARTITION, "in", [str(d) for d in e.dates or []])]
        table.create_write_transaction(
            actions,
            mode="overwrite",
            schema=table.schema(),
            partition_by=staged.partition_columns or None,
            partition_filters=filters,
            commit_properties=props,
        )
    return store.table(path).version()


def _place_all(files: Files, shadow: str, table: str, adds: list[dict[str, Any]]) -> bool:
    """Place every staged file into the table's folder: a hard link on a local warehouse,
    the object store's own copy on S3. A file already there from an interrupted attempt is
    kept (locally: the same file; on S3: the same size). False when a file cannot be
    placed (links refused, a different file in the way)."""
    for a in adds:
        src = _join(files, shadow, *a["path"].split("/"))
        dst = _join(files, table, *a["path"].split("/"))
        if files.remote:
            there = files.fs.get_file_info(files.fs_path(dst))
            if there.type == pafs.FileType.NotFound:
                files.fs.copy_file(files.fs_path(src), files.fs_path(dst))
            elif there.size != files.fs.get_file_info(files.fs_path(src)).size:
                return False
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        try:
            os.link(src, dst)
        except FileExistsError:
            if not os.path.samefile(src, dst):
                return False
        except OSError:
            return False
    return True


def _join(files: Files, *parts: str) -> str:
    return "/".join(parts) if files.remote else os.path.join(*parts)
