"""Delta tables through delta-rs (``deltalake``): the embedded engine's table store.

Same layout, journal and markers as the Spark store (``delta_journal.py``); the publish
of one table is one delta-rs commit whose commit info carries ``userMetadata`` = the
transaction's marker (Spark's ``DESCRIBE HISTORY`` shows it too).

Reads never call ``to_pyarrow_table()`` / ``to_pyarrow_dataset()``: with deltalake 1.6.6
and pyarrow 26 they can abort the interpreter at exit (about 1 process in 6). A table is
read as a pyarrow dataset of the files its log lists, with each file's partition values
from the log.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import CommitProperties, DeltaTable, write_deltalake

from .delta_journal import (
    ACTIVE,
    CDF,
    INTERNAL,
    KEY,
    MARKER,
    PARTITION,
    Entry,
    in_dates,
    new_tx_id,
    orphan,
)
from .storage import CommitResult


class DeltaRsStore:
    """Delta tables under a local warehouse folder, written by delta-rs."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.internal = os.path.join(root, INTERNAL, "delta")

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def is_table(self, name: str) -> bool:
        return os.path.isdir(os.path.join(self.path(name), "_delta_log"))

    def tables(self) -> list[str]:
        return sorted(
            n for n in os.listdir(self.root) if not n.startswith(".") and self.is_table(n)
        )

    def version(self, name: str) -> int | None:
        return DeltaTable(self.path(name)).version() if self.is_table(name) else None

    def dataset(self, name: str, version: int | None = None) -> tuple[ds.Dataset, int]:
        """The table's files (as of ``version``) as one dataset, partition values from the log."""
        table = DeltaTable(self.path(name), version=version)
        schema = pa.schema(table.schema().to_arrow())
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        part_cols = list(table.metadata().partition_columns)
        paths, partitions = [], []
        for a in actions:
            rel = unquote(a["path"])
            paths.append(rel if os.path.isabs(rel) else os.path.join(self.path(name), rel))
            expr = ds.scalar(True)
            for c in part_cols:
                v = a.get(f"partition.{c}")
                field = ds.field(c)
                expr = expr & (
                    field.is_null() if v is None else field == pa.scalar(v, schema.field(c).type)
                )
            partitions.append(expr)
        plain = [i for i, p in enumerate(paths) if not _has_view_types(p)]
        viewed = [i for i in range(len(paths)) if i not in set(plain)]
        if paths:
            files = ds.FileSystemDataset.from_paths(
                [paths[i] for i in plain],
                schema=schema,
                format=ds.ParquetFileFormat(),
                filesystem=pa.fs.LocalFileSystem(),
                partitions=[partitions[i] for i in plain],
            )
        else:
            files = ds.dataset(pa.table({f.name: pa.array([], f.type) for f in schema}))
        if viewed:  # see _has_view_types: read now, as the table's own types
            rows = [
                _as_schema(paths[i], actions[i], part_cols, schema).to_batches() for i in viewed
            ]
            batches = [b for part in rows for b in part]
            files = ds.dataset([files, ds.dataset(batches or schema.empty_table(), schema=schema)])
        return files, table.version()

    def change_feed(self, name: str) -> list[dict[str, Any]]:
        """The table's change data feed from version 0 (delta-rs ``load_cdf``)."""
        reader = DeltaTable(self.path(name)).load_cdf(starting_version=0)
        rows = pa.table(reader).to_pylist()
        rows.sort(key=lambda r: r["_commit_version"])  # stable: a commit keeps its order
        return rows

    # -- publishing ---------------------------------------------------------------------
    def publish(
        self,
        entries: list[Entry],
        payloads: dict[str, pa.Table],
        *,
        fault: Callable[[str], None] | None = None,
    ) -> CommitResult:
        """Stage, journal (the commit point), publish each table once, clean up."""
        result = CommitResult()
        if not entries:
            return result
        tx = new_tx_id()
        ACTIVE.add(tx)
        folder = os.path.join(self.internal, "staging", tx)
        try:
            for e in entries:
                if e.how == "drop":
                    continue
                e.shadow = os.path.join(folder, e.name)
                data = payloads[e.name]
                parts = [PARTITION] if PARTITION in data.column_names else None
                write_deltalake(e.shadow, data, mode="overwrite", partition_by=parts)
            marker = MARKER + tx
            doc = {"tx": tx, "marker": marker, "entries": [asdict(e) for e in entries]}
            journal = os.path.join(self.internal, "journal", f"{tx}.json")
            _write_durably(journal, json.dumps(doc, indent=1, default=str))
            if fault:
                fault("delta:journaled")
            for i, e in enumerate(entries):
                version = _publish(self, e, marker)
                if version is not None:
                    result.versions[e.name] = version
                if fault and i == 0:
                    fault("delta:published_first")
            os.unlink(journal)
        finally:
            ACTIVE.discard(tx)
        shutil.rmtree(folder, ignore_errors=True)
        return result

    def recover(self) -> list[str]:
        done: list[str] = []
        journals = os.path.join(self.internal, "journal")
        for file in sorted(os.listdir(journals)) if os.path.isdir(journals) else []:
            if not file.endswith(".json"):
                continue
            doc = json.loads(open(os.path.join(journals, file), encoding="utf-8").read())
            entries = [Entry(**e) for e in doc["entries"]]
            published = []
            for e in entries:
                if not _published(self, e, doc["marker"]):
                    _publish(self, e, doc["marker"])
                    published.append(e.name)
            os.unlink(os.path.join(journals, file))
            shutil.rmtree(os.path.join(self.internal, "staging", doc["tx"]), ignore_errors=True)
            done.append(
                f"completed an interrupted publish of {', '.join(e.name for e in entries)} "
                f"(transaction {doc['tx']}; published now: {', '.join(published) or 'none'})"
            )
        staging = os.path.join(self.internal, "staging")
        for tx in sorted(os.listdir(staging)) if os.path.isdir(staging) else []:
            if orphan(tx):
                shutil.rmtree(os.path.join(staging, tx), ignore_errors=True)
                done.append(f"removed the staging of an interrupted run ({tx})")
        return done


def _has_view_types(path: str) -> bool:
    """Files written by a delta-rs MERGE store Arrow ``string_view`` types (DataFusion's);
    pyarrow 26 cannot evaluate a pushed-down filter comparing them with the table's
    ``string`` columns ("no kernel matching (string, string_view)"), so such files (the
    DLQ tables' merged rows, few) are read eagerly and cast instead of scanned lazily."""
    import pyarrow.parquet as pq

    return any(_is_view(t) for t in pq.read_schema(path).types)


def _is_view(t: pa.DataType) -> bool:
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _is_view(t.value_type)
    if pa.types.is_struct(t):
        return any(_is_view(t.field(i).type) for i in range(t.num_fields))
    return False


def _as_schema(path: str, action: dict, part_cols: list[str], schema: pa.Schema) -> pa.Table:
    import pyarrow.parquet as pq

    data = pq.read_table(path)
    for c in part_cols:
        v = action.get(f"partition.{c}")
        data = data.append_column(c, pa.array([v] * data.num_rows).cast(schema.field(c).type))
    return data.select(schema.names).cast(schema)


def _props(marker: str) -> CommitProperties:
    return CommitProperties(custom_metadata={"userMetadata": marker})


def _read(path: str) -> pa.Table:
    """A staged table, read through its file list (see the module docstring)."""
    store = DeltaRsStore(os.path.dirname(path))
    dataset, _v = store.dataset(os.path.basename(path))
    return dataset.to_table()


def _publish(store: DeltaRsStore, e: Entry, marker: str) -> int | None:
    """One delta-rs commit for one table; its new version."""
    path = store.path(e.name)
    if e.how == "drop":
        shutil.rmtree(path, ignore_errors=True)
        return None
    data = _read(e.shadow)
    parts = [PARTITION] if PARTITION in data.column_names else None
    if e.how == "replace" or not store.is_table(e.name):
        write_deltalake(
            path,
            data,
            mode="overwrite",
            schema_mode="overwrite",
            partition_by=parts,
            configuration=CDF if KEY in data.column_names else None,
            commit_properties=_props(marker),
        )
    elif e.how == "dates":
        from ..compile.render import render

        predicate = render(in_dates(e.dates or []), "duckdb")
        write_deltalake(
            path, data, mode="overwrite", predicate=predicate, commit_properties=_props(marker)
        )
    elif e.how == "key":
        names = data.column_names
        # parenthesised: DataFusion binds AND tighter than IS NOT DISTINCT FROM
        same = " AND ".join(f'(t."{c}" IS NOT DISTINCT FROM s."{c}")' for c in names)
        (
            DeltaTable(path)
            .merge(
                data,
                predicate=f't."{KEY}" = s."{KEY}"',
                source_alias="s",
                target_alias="t",
                commit_properties=_props(marker),
            )
            .when_matched_update_all(predicate=f"NOT ({same})")
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete()
            .execute()
        )
    else:
        write_deltalake(path, data, mode="overwrite", commit_properties=_props(marker))
    return DeltaTable(path).version()


def _published(store: DeltaRsStore, e: Entry, marker: str) -> bool:
    if e.how == "drop":
        return not os.path.exists(store.path(e.name))
    if not store.is_table(e.name):
        return False
    after = e.before if e.before is not None else -1
    for h in DeltaTable(store.path(e.name)).history():
        if h.get("version", -1) > after and _marker_of(h) == marker:
            return True
    return False


def _marker_of(commit: dict[str, Any]) -> str | None:
    return commit.get("userMetadata")


def _write_durably(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
