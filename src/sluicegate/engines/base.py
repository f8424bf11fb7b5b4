"""The engine interface: execute expressions, load inputs, hold transactions.

Kept deliberately narrow (SQLMesh's engine adapter is the model): engines never decide
what to compute, only how to run it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from ..errors import SluiceError
from .capabilities import EngineCapabilities
from .storage import DUCKDB_FILE, CommitResult, StorageCapabilities


@dataclass
class StatementTiming:
    """One statement as run: the pipeline stage it belonged to, wall and process CPU
    seconds (CPU summed over the engine's threads), and the start of its SQL text."""

    stage: str
    wall_s: float
    cpu_s: float
    sql: str


class Engine(ABC):
    """An execution engine bound to one warehouse."""

    name: str
    dialect: str
    #: what this engine can do (engines/capabilities.py): the layers above read these
    #: instead of comparing engine names
    capabilities: EngineCapabilities
    #: statement timings when the engine was opened with ``profile=True`` (else None);
    #: ``profile_stage`` is the stage the pipeline is in (run/pipeline.py sets it). Only
    #: engines with ``capabilities.statement_profile`` fill it.
    profile: list[StatementTiming] | None = None
    profile_stage: str = ""
    #: what opening the warehouse repaired (an interrupted publish), for the run's log
    notices: Sequence[str] = ()
    #: the table formats this engine can store its durable tables in; the first is its
    #: default (``outputs.format`` chooses, see engines/storage.py)
    formats: tuple[str, ...] = ("duckdb",)
    #: what the opened warehouse's format promises (atomicity, versions, time travel ...)
    storage: StorageCapabilities = DUCKDB_FILE
    #: what the last ``commit`` published (table versions where the format has them)
    last_commit: CommitResult | None = None

    def size_for_input(self, input_bytes: int) -> str | None:
        """Size what the engine buffers in memory to the run's bound input
        (``input_bytes``, known after the bind and before the first heavy statement).
        Returns the memory limit now in force, for the run's metrics; None where the
        engine sizes nothing itself (a Spark session's memory is set when it starts)."""
        return None

    def change_feed(self, table: str) -> list[dict[str, Any]]:
        """Every row-level change of durable ``table`` since its creation, oldest first:
        the row's columns plus ``_change_type`` (insert, update_preimage,
        update_postimage, delete), ``_commit_version`` and ``_commit_timestamp``. Only
        formats with ``storage.change_feed`` have one (``sluicegate dlq history``)."""
        raise NotImplementedError(f"the {self.storage.format} format keeps no change feed")

    def staged_versions(self) -> dict[str, int]:
        """The version each table changed by the open transaction will have once
        committed (empty for formats without versions). Lets the run record, written in
        the same transaction and published last, name every table's version."""
        return {}

    @abstractmethod
    def execute(self, statement: exp.Expression | str) -> None:
        """Run one statement (an expression is rendered in the engine's dialect)."""

    @abstractmethod
    def fetch(self, query: exp.Expression | str) -> list[tuple]:
        """Run a query and return all rows (for small results: counts, metrics)."""

    def fetch_dicts(self, query: exp.Expression | str) -> list[dict[str, Any]]:
        """Rows as dicts keyed by column name."""
        raise NotImplementedError

    @abstractmethod
    def load_lines(self, files: Sequence[str], table: str) -> None:
        """Create ``table(_source_file, _source_line, _line, _bad_utf8)``: one row per
        non-blank line (lines end at LF; blank = only spaces, tabs and CRs).

        ``_source_line`` is the 1-based physical line number; a UTF-8 BOM at the start of a
        file and trailing CRs are removed; bytes that are not UTF-8 are replaced by U+FFFD
        and flag the line (``_bad_utf8``: the reader makes it a ``corrupt_record``), never
        fatal. The DuckDB implementation is engines/duckdb_inputs.py.
        """

    def load_line_rows(self, rows: Any, table: str) -> None:
        """Create ``table`` from a pyarrow Table already shaped like :meth:`load_lines`'
        relation (a Kafka batch: engines/kafka_consumer.py), row for row."""
        raise NotImplementedError(f"the {self.name} engine cannot load record rows yet")

    @abstractmethod
    def load_parquet(self, files: Sequence[str], table: str) -> None:
        """Create ``table`` from Parquet files with ``_source_file`` and 1-based ``_source_line``."""

    @abstractmethod
    def create_table_as(
        self, table: str, query: exp.Expression, *, temporary: bool = False
    ) -> None:
        """(Re)create ``table`` from ``query``."""

    def create_table_counted(self, table: str, query: exp.Expression) -> int:
        """(Re)create ``table`` from ``query`` and return how many rows it holds.

        A table's row count is the first read of a table just written; an engine whose
        write counts its rows as it writes them (Spark: an observed write) saves that
        read, the rest count the new table."""
        self.create_table_as(table, query)
        return self.count_rows(table)

    def count_rows(self, table: str) -> int:
        """``SELECT COUNT(*) FROM table``."""
        return int(
            self.fetch(exp.select(exp.func("COUNT", exp.Star())).from_(exp.to_table(table)))[0][0]
        )

    @abstractmethod
    def table_exists(self, table: str) -> bool: ...

    def create_temp_view(self, name: str, query: exp.Expression) -> None:
        """CREATE OR REPLACE TEMPORARY VIEW ``name`` (DuckDB and Spark SQL alike)."""
        self.execute(
            exp.Create(
                this=exp.Table(this=exp.to_identifier(name, quoted=True)),
                kind="VIEW",
                replace=True,
                expression=query,
                properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
            )
        )

    def drop_view(self, name: str) -> None:
        """DROP VIEW IF EXISTS ``name`` (before a table of the same name replaces it)."""
        self.execute(exp.Drop(tables=[exp.to_table(name)], kind="VIEW", exists=True))

    def drop_loaded(self, table: str) -> None:
        """Free the relation ``load_lines``/``load_parquet`` made (an engine that loads
        into views drops those)."""
        self.drop_table(table)

    def loaded_as_view(self, table: str) -> bool:
        """Whether ``load_parquet`` made ``table`` a view over files that stay in place (so
        a relation over it reads the files again, rather than a copy)."""
        return False

    def drop_table(self, table: str) -> None:
        """DROP TABLE IF EXISTS ``table`` (a run frees its large TEMP tables early)."""
        self.execute(exp.Drop(tables=[exp.to_table(table)], kind="TABLE", exists=True))

    @abstractmethod
    def columns(self, table: str) -> list[tuple[str, str]]:
        """(name, type) of each column of ``table``."""

    @abstractmethod
    def begin(self) -> None: ...

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None: ...

    def will_change(self, tables: Sequence[str]) -> None:  # noqa: B027 - a hint
        """A hint after :meth:`begin`: the open transaction is about to change these
        tables (those that exist). An engine whose store stages each changed table in an
        operation of its own (Delta on Spark: a shallow clone per table, seconds each) may
        stage them all now, side by side; the default does nothing. Naming a table that
        is then left alone costs that staging, never a change."""
        return None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Commit on success, roll back on any exception."""
        self.begin()
        try:
            yield
        except BaseException:
            self.rollback()
            raise
        self.commit()

    @abstractmethod
    def close(self) -> None: ...

    def explain_failure(self, exc: BaseException) -> SluiceError | None:
        """The one-line error for a failure the engine itself can name (its JVM gone, out
        of memory), or None to let ``exc`` stand. The pipeline asks before it gives up."""
        return None

    # -- short write windows (DuckDB staging mode; a no-op where the engine holds nothing) --
    def attach_warehouse(self) -> None:
        """Make the warehouse's durable tables visible and writable (see ``attached``)."""
        return None

    def detach_warehouse(self) -> None:
        """Release the warehouse again so other processes can open it."""
        return None

    @contextmanager
    def attached(self) -> Iterator[None]:
        """Hold the warehouse only for the block: publish opens it, readers keep working.

        Engines that work directly on the warehouse (the default) make this a no-op; the
        DuckDB engine in staging mode attaches the file here and detaches it afterwards, so
        the per-process file lock is held for the publish transaction only.
        """
        self.attach_warehouse()
        try:
            yield
        finally:
            self.detach_warehouse()

    # -- model export (run/model.py) ----------------------------------------------------
    def write_parquet_partitioned(
        self, query: exp.Expression, directory: str, partition_by: Sequence[str], file_prefix: str
    ) -> None:
        """Write ``query`` as Parquet under ``directory`` in Hive layout (``year=2024/month=3/``).

        Files are named ``<file_prefix>-<i>.parquet``; the partition columns live in the
        folder names only. ``directory`` is a fresh staging folder: the caller swaps it in.
        """
        raise NotImplementedError(f"the {self.name} engine cannot export Parquet yet")

    # -- relations kept across runs of one process (run/reuse.py) -------------------------
    def snapshot_table(self, table: str) -> Any:
        """A copy of TEMP ``table`` (rows and column types) held by the process, opaque to
        the caller; only engines with ``capabilities.relation_snapshots`` have one."""
        raise NotImplementedError(f"the {self.name} engine cannot snapshot a table")

    def restore_table(self, table: str, snapshot: Any) -> None:
        """Make TEMP relation ``table`` (a table or a view) hold a :meth:`snapshot_table` of
        an engine of this process. Raises ``ValueError`` when it would not have the
        snapshot's column types."""
        raise NotImplementedError(f"the {self.name} engine cannot restore a table")

    def table_mark(self, table: str) -> str | None:
        """The mark :meth:`mark_table` left on published ``table`` (None: none, or no such
        table). Asked only by engines with ``capabilities.relation_snapshots``."""
        raise NotImplementedError(f"the {self.name} engine keeps no table marks")

    def mark_table(self, table: str, mark: str) -> None:
        """Leave ``mark`` on published ``table``, in the open transaction: a later run
        reads it back to know what the table was built from (run/model.py)."""
        raise NotImplementedError(f"the {self.name} engine keeps no table marks")

    # -- serving (serve/load.py) ------------------------------------------------------------
    def arrow_batches(self, query: exp.Expression, batch_rows: int = 122_880) -> Any:
        """The rows of ``query`` as a ``pyarrow.RecordBatchReader`` (what serving streams
        into PostgreSQL's COPY: every engine hands the same loader the same Arrow batches)."""
        raise NotImplementedError(f"the {self.name} engine cannot hand out Arrow batches")

    def render(self, statement: exp.Expression) -> str:
        from ..compile.render import render

        return render(statement, self.dialect)
