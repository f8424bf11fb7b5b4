"""Delta tables through delta-rs (``deltalake``): the embedded engine's table store.

The warehouse is a local folder or an ``s3://`` prefix (``warehouse_files.Files``;
delta-rs gets the S3 settings as ``storage_options``, pyarrow as an ``S3FileSystem``).

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
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import CommitProperties, DeltaTable, write_deltalake

from .delta_adopt import adopt
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
from .object_store import S3Settings
from .storage import CommitResult
from .warehouse_files import Files


class DeltaRsStore:
    """Delta tables under a warehouse folder or ``s3://`` prefix, written by delta-rs."""

    #: :meth:`publish` stages each table's rows once, in order: they may come as a stream
    streams_rows = True
    #: a keyed table is MERGEd whole (its change data feed records what changed)
    writes_key_changes = False

    def __init__(self, root: str, s3: S3Settings | None = None) -> None:
        self.files = Files(root, s3)
        self.root = self.files.root
        self.options = self.files.storage_options()
        self.internal = self.files.join(INTERNAL, "delta")

    def path(self, name: str) -> str:
        return self.files.join(name)

    def sub(self, *parts: str) -> str:
        """A location under the store's hidden folder (journal, staging)."""
        return "/".join([self.internal, *parts])

    def table(self, path: str, version: int | None = None) -> DeltaTable:
        return DeltaTable(path, version=version, storage_options=self.options)

    def write(self, path: str, data: Any, **kwargs: Any) -> None:
        write_deltalake(path, data, storage_options=self.options, **kwargs)

    def is_table(self, name: str) -> bool:
        return self.files.is_dir(f"{self.path(name)}/_delta_log")

    def tables(self) -> list[str]:
        return [
            n for n in self.files.children(self.root) if not n.startswith(".") and self.is_table(n)
        ]

    def version(self, name: str) -> int | None:
        return self.table(self.path(name)).version() if self.is_table(name) else None

    def dataset(self, name: str, version: int | None = None) -> tuple[ds.Dataset, int]:
        """The table's files (as of ``version``) as one dataset, partition values from the log."""
        return self.dataset_at(self.path(name), version)

    def dataset_at(self, where: str, version: int | None = None) -> tuple[ds.Dataset, int]:
        """The Delta table at location ``where`` as one dataset (see :meth:`dataset`)."""
        table = self.table(where, version=version)
        schema = pa.schema(table.schema().to_arrow())
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        part_cols = list(table.metadata().partition_columns)
        paths, partitions = [], []
        for a in actions:
            rel = unquote(a["path"])
            full = rel if "://" in rel or os.path.isabs(rel) else f"{where}/{rel}"
            paths.append(self.files.fs_path(full.removeprefix("file://")))
            expr = ds.scalar(True)
            for c in part_cols:
                v = a.get(f"partition.{c}")
                field = ds.field(c)
                expr = expr & (
                    field.is_null() if v is None else field == pa.scalar(v, schema.field(c).type)
                )
            partitions.append(expr)
        if paths:
            files = ds.FileSystemDataset.from_paths(
                paths,
                schema=schema,
                format=ds.ParquetFileFormat(),
                filesystem=self.files.fs,
                partitions=partitions,
            )
        else:
            files = ds.dataset(pa.table({f.name: pa.array([], f.type) for f in schema}))
        if KEY in schema.names and paths:
            # a DLQ table, MERGEd by delta-rs: its files mix string and string_view
            # (see plain_types); read whole, in plain types, so filters can be pushed down
            files = ds.dataset(plain_types(files.to_table()))
        return files, table.version()

    def change_feed(self, name: str) -> list[dict[str, Any]]:
        """The table's change data feed from version 0 (delta-rs ``load_cdf``)."""
        reader = self.table(self.path(name)).load_cdf(starting_version=0)
        rows = pa.table(reader).to_pylist()
        rows.sort(key=lambda r: r["_commit_version"])  # stable: a commit keeps its order
        return rows

    # -- publishing ---------------------------------------------------------------------
    def publish(
        self,
        entries: list[Entry],
        payloads: Mapping[str, pa.Table | pa.RecordBatchReader],
        *,
        fault: Callable[[str], None] | None = None,
    ) -> CommitResult:
        """Stage, journal (the commit point), publish each table once, clean up. Each
        payload is read once, in the order of ``entries``."""
        result = CommitResult()
        if not entries:
            return result
        tx = new_tx_id()
        ACTIVE.add(tx)
        folder = self.sub("staging", tx)
        try:
            for e in entries:
                if e.how == "drop":
                    continue
                e.shadow = f"{folder}/{e.name}"
                data = payloads[e.name]
                parts = [PARTITION] if PARTITION in data.schema.names else None
                self.write(e.shadow, data, mode="overwrite", partition_by=parts)
            marker = MARKER + tx
            doc = {"tx": tx, "marker": marker, "entries": [asdict(e) for e in entries]}
            journal = self.sub("journal", f"{tx}.json")
            self.files.write_text(journal, json.dumps(doc, indent=1, default=str))
            if fault:
                fault("delta:journaled")
            for i, e in enumerate(entries):
                version = _publish(self, e, marker)
                if version is not None:
                    result.versions[e.name] = version
                if fault and i == 0:
                    fault("delta:published_first")
            self.files.delete(journal)
        finally:
            ACTIVE.discard(tx)
        self.files.delete(folder)
        return result

    def recover(self) -> list[str]:
        done: list[str] = []
        journals = self.sub("journal")
        for file in self.files.children(journals):
            if not file.endswith(".json"):
                continue
            doc = json.loads(self.files.read_text(f"{journals}/{file}"))
            entries = [Entry(**e) for e in doc["entries"]]
            published = []
            for e in entries:
                if not _published(self, e, doc["marker"]):
                    _publish(self, e, doc["marker"])
                    published.append(e.name)
            self.files.delete(f"{journals}/{file}")
            self.files.delete(self.sub("staging", doc["tx"]))
            done.append(
                f"completed an interrupted publish of {', '.join(e.name for e in entries)} "
                f"(transaction {doc['tx']}; published now: {', '.join(published) or 'none'})"
            )
        staging = self.sub("staging")
        for tx in self.files.children(staging):
            if orphan(tx):
                self.files.delete(f"{staging}/{tx}")
                done.append(f"removed the staging of an interrupted run ({tx})")
        return done


def _plain(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    return t


def plain_stream(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """``reader``'s batches without Arrow view types (see :func:`plain_types`)."""
    schema = pa.schema([f.with_type(_plain(f.type)) for f in reader.schema])
    if schema == reader.schema:
        return reader
    return pa.RecordBatchReader.from_batches(schema, (b.cast(schema) for b in reader))


def plain_types(table: pa.Table) -> pa.Table:
    """``table`` without Arrow view types (``string_view`` …). delta-rs's MERGE writes
    Parquet files whose stored Arrow schema says ``string_view``; in a dataset beside
    files that say ``string``, pyarrow cannot evaluate the filters DuckDB pushes down
    (``equal`` has no kernel for string and string_view)."""
    schema = pa.schema([f.with_type(_plain(f.type)) for f in table.schema])
    return table if schema == table.schema else table.cast(schema)


def _props(marker: str) -> CommitProperties:
    return CommitProperties(custom_metadata={"userMetadata": marker})


def _read(store: DeltaRsStore, path: str) -> pa.Table:
    """A staged table, read through its file list (see the module docstring)."""
    dataset, _v = store.dataset_at(path)
    return dataset.to_table()


def _publish(store: DeltaRsStore, e: Entry, marker: str) -> int | None:
    """One delta-rs commit for one table; its new version."""
    path = store.path(e.name)
    if e.how == "drop":
        store.files.delete(path)
        return None
    adopted = adopt(store, e, _props(marker))  # the staged files themselves, where it can
    if adopted is not None:
        return adopted
    data = _read(store, e.shadow)
    parts = [PARTITION] if PARTITION in data.column_names else None
    if e.how == "replace" or not store.is_table(e.name):
        store.write(
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
        store.write(
            path, data, mode="overwrite", predicate=predicate, commit_properties=_props(marker)
        )
    elif e.how == "key" and _unique_keys(data):
        names = data.column_names
        # parenthesised: DataFusion binds AND tighter than IS NOT DISTINCT FROM
        same = " AND ".join(f'(t."{c}" IS NOT DISTINCT FROM s."{c}")' for c in names)
        (
            store.table(path)
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
        store.write(path, data, mode="overwrite", commit_properties=_props(marker))
    return store.table(path).version()


def _unique_keys(data: pa.Table) -> bool:
    """A keyed MERGE is right only where ``_dlq_sk`` names one row (the inbox, the outbox);
    the audit trail holds a row per change of a key: a MERGE would keep one of them (delta-rs
    does not refuse several source rows matching one target row), so it is published whole,
    as on Spark (``delta_spark._unique_keys``)."""
    import pyarrow.compute as pc

    return pc.count_distinct(data[KEY], mode="all").as_py() == data.num_rows


def _published(store: DeltaRsStore, e: Entry, marker: str) -> bool:
    if e.how == "drop":
        return not store.files.exists(store.path(e.name))
    if not store.is_table(e.name):
        return False
    after = e.before if e.before is not None else -1
    for h in store.table(store.path(e.name)).history():
        if h.get("version", -1) > after and _marker_of(h) == marker:
            return True
    return False


def _marker_of(commit: dict[str, Any]) -> str | None:
    return commit.get("userMetadata")
