"""Iceberg tables through pyiceberg: the embedded engine's Iceberg table store.

Write-audit-publish with Iceberg's own branches. A publish of one transaction:

1. **write**: each changed table is written on a branch ``sg-<tx>`` created at the
   table's current ``main`` snapshot (a date table: overwrite by the filter
   ``_logical_date IN (…)``; the DLQ inbox: upsert on ``_dlq_sk`` and delete the keys the
   run removed; other tables: overwrite). ``main`` does not move: readers see nothing.
2. **journal** (the commit point): ``<warehouse>/.sluicegate/iceberg/journal/<tx>.json``
   names every table, the ``main`` snapshot it had and the branch snapshot to publish.
3. **publish**: ``main`` of each table is fast-forwarded to its branch snapshot (one
   metadata commit, asserting ``main`` is still where it was), and the branch removed.

``recover`` completes a journaled publish (tables whose ``main`` is not yet the target)
and removes branches of dead transactions; running it twice changes nothing.
Each snapshot carries ``sluicegate-tx`` in its summary.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, MutableMapping
from typing import Any

import pyarrow as pa

from .delta_journal import ACTIVE, INTERNAL, KEY, PARTITION, Entry, new_tx_id, orphan
from .iceberg_catalog import CatalogSpec, open_catalog
from .storage import SNAPSHOTS_TABLE, CommitResult, ParquetRows

BRANCH = "sg-"
FACT_DATE = "logical_date"


class IcebergStore:
    """The tables of one namespace of an Iceberg SQL catalog."""

    #: pyiceberg takes Arrow tables, not streams
    streams_rows = False
    #: a keyed table (the DLQ inbox) gets its changes: the published keys to delete
    #: (``Entry.keys``) and the rows to append. pyiceberg's ``upsert`` and a ``NotIn`` of
    #: every key compared the whole table in Python sets: at 1M lines a day, 6 s of the
    #: third day's run and growing with the quarantine's history.
    writes_key_changes = True

    def __init__(self, spec: CatalogSpec, namespace: str, root: str) -> None:
        self.spec = spec
        self.namespace = namespace
        self.catalog = open_catalog(spec)
        self.catalog.create_namespace_if_not_exists(namespace)
        self.internal = os.path.join(root, INTERNAL, "iceberg")
        #: called with (snapshot ids so far, payloads) before the last table is written
        self.finalize: Callable[[dict[str, int], dict[str, pa.Table]], None] | None = None

    def ident(self, name: str) -> str:
        return f"{self.namespace}.{name}"

    def is_table(self, name: str) -> bool:
        return self.catalog.table_exists(self.ident(name))

    def tables(self) -> list[str]:
        return sorted(t[-1] for t in self.catalog.list_tables(self.namespace))

    def load(self, name: str) -> Any:
        return self.catalog.load_table(self.ident(name))

    def version(self, name: str) -> int | None:
        if not self.is_table(name):
            return None
        snap = self.load(name).current_snapshot()
        return snap.snapshot_id if snap is not None else 0

    def dataset(self, name: str, version: int | None = None) -> tuple[Any, int]:
        """The table's rows (as of snapshot ``version``) and its current snapshot id.

        The rows are a lazy dataset over the snapshot's data files where those alone are
        the rows (:func:`_plain_files`), so the engine reads only what its statements ask
        for. Read eagerly with ``to_arrow``, every table was held whole in memory at open
        and after each publish: a daily 1M-line run grew by ~0.65 GiB and ~1 s a day of
        the tables' history."""
        table = self.load(name)
        snap = table.current_snapshot()
        if snap is None and version is None:
            return table.schema().as_arrow().empty_table(), 0
        scan = table.scan(snapshot_id=version)
        at = version if version is not None else snap.snapshot_id
        files = _plain_files(table, scan)
        if files is None:
            return scan.to_arrow(), at
        schema = table.schema().as_arrow()
        if not files:
            return schema.empty_table(), at
        from pyarrow import dataset as ds
        from pyarrow import fs

        return ds.FileSystemDataset.from_paths(
            files, schema=schema, format=ds.ParquetFileFormat(), filesystem=fs.LocalFileSystem()
        ), at

    # -- publishing ---------------------------------------------------------------------
    def publish(
        self,
        entries: list[Entry],
        payloads: MutableMapping[str, pa.Table],
        *,
        fault: Callable[[str], None] | None = None,
    ) -> CommitResult:
        """Write every table on the transaction's branch, journal, fast-forward ``main``.

        The run's snapshot rows are written last, after ``finalize(snapshot ids so far,
        payloads)`` let the engine put the others' real snapshot ids in them.
        """
        result = CommitResult()
        if not entries:
            return result
        entries = [e for e in entries if e.name != SNAPSHOTS_TABLE] + [
            e for e in entries if e.name == SNAPSHOTS_TABLE
        ]
        finalize = self.finalize
        tx = new_tx_id()
        ACTIVE.add(tx)
        branch = BRANCH + tx.replace("~", "-")
        marker = {"sluicegate-tx": tx}
        plan: list[dict[str, Any]] = []
        try:
            for i, e in enumerate(entries):
                if e.how == "drop":
                    plan.append({"name": e.name, "how": "drop"})
                    continue
                if finalize is not None and i == len(entries) - 1:
                    finalize(result.versions, payloads)
                before, target = self._write(e, payloads, branch, marker)
                result.versions[e.name] = target
                plan.append({"name": e.name, "how": e.how, "before": before, "target": target})
            journal = os.path.join(self.internal, "journal", f"{tx}.json")
            _write_durably(journal, json.dumps({"tx": tx, "branch": branch, "tables": plan}))
            if fault:
                fault("iceberg:journaled")
            for i, p in enumerate(plan):
                self._fast_forward(p, branch)
                if fault and i == 0:
                    fault("iceberg:published_first")
            os.unlink(journal)
        except BaseException:
            if not os.path.exists(os.path.join(self.internal, "journal", f"{tx}.json")):
                self._drop_branches(branch)
            raise
        finally:
            ACTIVE.discard(tx)
        return result

    def _write(
        self, e: Entry, payloads: MutableMapping[str, Any], branch: str, marker: dict[str, str]
    ) -> tuple[int | None, int]:
        """Write ``e``'s rows on ``branch``; (main's snapshot before, branch head).

        Rows the engine can write as Parquet itself (``ParquetRows``) are committed as
        that file (:meth:`_write_file`) where the plain case allows; otherwise, and for
        the DLQ inbox's key changes, pyiceberg writes the Arrow rows."""
        if e.how in ("dates", "whole", "replace") and isinstance(payloads, ParquetRows):
            written = self._write_file(e, payloads, branch, marker)
            if written is not None:
                return written
        return self._write_rows(e, payloads[e.name], branch, marker)

    def _write_file(
        self, e: Entry, rows: ParquetRows, branch: str, marker: dict[str, str]
    ) -> tuple[int | None, int] | None:
        """Have the engine write ``e``'s rows as one Parquet file in the table's data
        folder and commit that file on ``branch`` (pyiceberg's ``add_files`` steps: the
        file's statistics and partition read from its footer; the table's name mapping
        set, since the file has no field ids), after deleting what the rows replace.

        At 1M lines pyiceberg's own write of the clean and fact rows — Arrow rows out of
        DuckDB, partition values computed in Python, Parquet written by pyarrow — took
        ~3 s of a ~13 s first run. None (nothing committed, the file removed) outside
        the plain case: a table on an object store, a table whose column types differ
        from the rows' (a new shape is the rows path's to handle), rows that are only in
        memory or none, a file pyiceberg refuses (types it would not read back as the
        table's, rows of more than one partition, statistics it cannot serialize)."""
        from pyiceberg.exceptions import NoSuchTableError
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import parquet_file_to_data_file
        from pyiceberg.table import TableProperties

        schema = _iceberg_schema(rows.schema(e.name))
        try:
            table = self.load(e.name)
        except NoSuchTableError:
            table = None
        exists = table is not None
        if table is None:
            # a new table's location follows the warehouse's: an object store's is the
            # rows path's, which creates the table itself
            if _local_path(self.spec.warehouse) is None:
                return None
            table = self._create(e.name, schema)
        elif not _same_types(table, schema):
            return None
        folder = _local_path(table.location())
        if folder is None:
            return None
        name = f"sg-{uuid.uuid4().hex}.parquet"
        local = os.path.join(folder, "data", name)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        if not rows.write_parquet(e.name, local):
            _unlink(local)
            return None
        location = table.location().rstrip("/") + "/data/" + name
        try:
            data_file = parquet_file_to_data_file(table.io, table.metadata, location)
        except (ValueError, NotImplementedError, TypeError, AttributeError):
            # AttributeError: pyiceberg 0.10 cannot serialize the statistics of a column
            # Parquet types as JSON (the quarantine's rescued fields): its rows path
            _unlink(local)
            return None
        table, before = self._branch(e.name, table, schema, branch)
        filt = _dates_filter(e.dates) if e.how == "dates" and exists else AlwaysTrue()
        with table.transaction() as t:
            t.delete(filt, snapshot_properties=marker, branch=branch)
            if t.table_metadata.name_mapping() is None:
                mapping = t.table_metadata.schema().name_mapping.model_dump_json()
                t.set_properties(**{TableProperties.DEFAULT_NAME_MAPPING: mapping})
            with t.update_snapshot(snapshot_properties=marker, branch=branch).fast_append() as add:
                add.append_data_file(data_file)
        # the transaction's commit left the table object at the metadata it committed
        return before, table.metadata.refs[branch].snapshot_id

    def _branch(
        self, name: str, table: Any, schema: pa.Schema, branch: str
    ) -> tuple[Any, int | None]:
        """``branch`` created at the table's ``main`` snapshot; (the table, that snapshot).

        A branch needs a snapshot to start from: a new table's first is empty, so a
        reader of main sees the table with no rows until the publish."""
        if table.current_snapshot() is None:
            table.append(schema.empty_table().cast(table.schema().as_arrow()))
            table = self.load(name)
        head = table.current_snapshot()
        before = head.snapshot_id if head is not None else None
        if head is not None:
            with table.manage_snapshots() as ms:
                ms.create_branch(snapshot_id=head.snapshot_id, branch_name=branch)
            table = self.load(name)
        return table, before

    def _write_rows(
        self, e: Entry, data: pa.Table, branch: str, marker: dict[str, str]
    ) -> tuple[int | None, int]:
        """Write the Arrow rows ``data`` for ``e`` on ``branch`` with pyiceberg."""
        data = _iceberg_types(data)
        if e.how == "replace" and self.is_table(e.name):
            old = self.load(e.name)
            if not _same_shape(old, data):
                self.catalog.drop_table(self.ident(e.name))  # a new shape: a new table
        if not self.is_table(e.name):
            self._create(e.name, data.schema)
            e = Entry(name=e.name, shadow="", before=None, how="whole")
        table, before = self._branch(e.name, self.load(e.name), data.schema, branch)
        data = data.cast(table.schema().as_arrow())
        if e.how == "dates":
            table.overwrite(
                data,
                overwrite_filter=_dates_filter(e.dates),
                snapshot_properties=marker,
                branch=branch,
            )
        elif e.how == "key" and before is not None and e.keys is not None:
            with table.transaction() as t:
                if e.keys:
                    t.delete(_in(KEY, e.keys), snapshot_properties=marker, branch=branch)
                if data.num_rows:
                    t.append(data, snapshot_properties=marker, branch=branch)
        else:
            table.overwrite(data, snapshot_properties=marker, branch=branch)
        table = self.load(e.name)
        ref = table.metadata.refs.get(branch)
        if ref is None:  # nothing written on the branch (e.g. an empty upsert)
            return before, before if before is not None else 0
        return before, ref.snapshot_id

    def _create(self, name: str, schema: pa.Schema) -> Any:
        """A new table, partitioned by the year/month (Iceberg's ``month`` transform) of
        ``_logical_date`` (clean, quarantine …) or ``logical_date`` (the quality facts,
        the run record)."""
        from pyiceberg.transforms import MonthTransform

        table = self.catalog.create_table(self.ident(name), schema=schema)
        for column in (PARTITION, FACT_DATE):
            if column in schema.names:
                with table.update_spec() as u:
                    u.add_field(column, MonthTransform(), f"{column}_month")
                break
        return table

    def _fast_forward(self, p: dict[str, Any], branch: str) -> None:
        """Point ``main`` at the branch snapshot (asserting main is unmoved), drop the branch."""
        if p["how"] == "drop":
            if self.is_table(p["name"]):
                self.catalog.drop_table(self.ident(p["name"]))
            return
        table = self.load(p["name"])
        main = table.metadata.refs.get("main")
        with table.manage_snapshots() as ms:
            if main is None or main.snapshot_id != p["target"]:
                ms.create_branch(snapshot_id=p["target"], branch_name="main")
            if branch in table.metadata.refs:
                ms.remove_branch(branch)

    def _drop_branches(self, branch: str) -> None:
        for name in self.tables():
            table = self.load(name)
            if branch in table.metadata.refs:
                table.manage_snapshots().remove_branch(branch).commit()

    def recover(self) -> list[str]:
        done: list[str] = []
        journals = os.path.join(self.internal, "journal")
        for file in sorted(os.listdir(journals)) if os.path.isdir(journals) else []:
            if not file.endswith(".json"):
                continue
            path = os.path.join(journals, file)
            doc = json.loads(open(path, encoding="utf-8").read())
            for p in doc["tables"]:
                self._fast_forward(p, doc["branch"])
            os.unlink(path)
            names = ", ".join(p["name"] for p in doc["tables"])
            done.append(f"completed an interrupted publish of {names} (transaction {doc['tx']})")
        for name in self.tables():
            table = self.load(name)
            for ref in list(table.metadata.refs):
                if ref.startswith(BRANCH) and orphan(_tx_of(ref)):
                    table.manage_snapshots().remove_branch(ref).commit()
                    done.append(f"removed the branch {ref} of an interrupted run from {name}")
        return done


def _tx_of(branch: str) -> str:
    host_pid_token = branch[len(BRANCH) :]
    host, pid, token = host_pid_token.rsplit("-", 2)
    return f"{host}~{pid}~{token}"


def _dates_filter(dates: list | None) -> Any:
    """The rows of ``dates`` (``_logical_date``; a None among them: its NULL rows)."""
    from pyiceberg.expressions import IsNull, Or

    values = [d for d in (dates or []) if d is not None]
    filt: Any = _in(PARTITION, values) if values else None
    if len(values) < len(dates or []):
        filt = Or(filt, IsNull(PARTITION)) if filt is not None else IsNull(PARTITION)
    return filt


def _local_path(location: str) -> str | None:
    """The local folder of a table ``location`` (``file:///a`` or ``/a``); None for an
    object store's."""
    if location.startswith("file:"):
        location = "/" + location[len("file:") :].lstrip("/")
    return location if os.path.isabs(location) else None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _in(column: str, values: list) -> Any:
    from pyiceberg.expressions import In

    return In(column, {str(v) for v in values})


def _plain_files(table: Any, scan: Any) -> list[str] | None:
    """The local paths of the data files of ``scan`` when they alone are its rows: the
    table has had one schema (every file has its columns, by name), no file has delete
    files (row-level deletes), and every file is a local file that exists. None
    otherwise: then pyiceberg reads the rows (field ids, deletes, object stores)."""
    if len(table.metadata.schemas) != 1:
        return None
    paths = []
    for task in scan.plan_files():
        if task.delete_files:
            return None
        path = task.file.file_path
        if path.startswith("file:"):  # file:///a (pyiceberg), file:/a (Spark's Hadoop paths)
            path = "/" + path[len("file:") :].lstrip("/")
        if not (os.path.isabs(path) and os.path.isfile(path)):
            return None
        paths.append(path)
    return paths


def _same_shape(table: Any, data: pa.Table) -> bool:
    """True when ``data`` has the table's column names, in order, and casts to its types."""
    target = table.schema().as_arrow()
    if [f.name for f in target] != data.column_names:
        return False
    try:
        data.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError):
        return False
    return True


def _same_types(table: Any, schema: pa.Schema) -> bool:
    """True when ``schema`` has the table's column names, in order, and their types
    (pyiceberg reads strings and binaries as Arrow's ``large_`` types)."""
    target = _iceberg_schema(table.schema().as_arrow())
    return [(f.name, f.type) for f in target] == [(f.name, f.type) for f in schema]


def _iceberg_types(data: pa.Table) -> pa.Table:
    """Types Iceberg stores (:func:`_iceberg_schema`)."""
    schema = _iceberg_schema(data.schema)
    return data.cast(schema) if schema != data.schema else data


def _iceberg_schema(schema: pa.Schema) -> pa.Schema:
    """Types Iceberg stores: unsigned and huge integers widened, nanoseconds to micro."""
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_unsigned_integer(t):
            t = pa.int64()
        elif pa.types.is_timestamp(t) and t.unit == "ns":
            t = pa.timestamp("us", tz=t.tz)
        elif pa.types.is_large_string(t):
            t = pa.string()
        elif pa.types.is_large_binary(t):
            t = pa.binary()
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.schema(fields)


def _write_durably(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
