"""The embedded engine: one DuckDB file is the warehouse."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import xxhash
from sqlglot import exp

from ..errors import ENVIRONMENT_FAULTS, EnvironmentFailure, LockedError, SluiceError
from .base import Engine, StatementTiming
from .capabilities import DUCKDB
from .duckdb_memory import buffer_for_input


def _create(table: str, query: exp.Expression, *, temporary: bool) -> exp.Create:
    """``CREATE OR REPLACE [TEMP] TABLE table AS query`` — for rendering only.

    ``query`` is not copied: rendering copies the whole statement anyway (sqlglot's
    generator works on a copy), and a second copy of a 1,000-rule routing query cost a
    second of CPU. Only ``query``'s parent pointer changes, which nothing reads.
    """
    props = exp.Properties(expressions=[exp.TemporaryProperty()]) if temporary else None
    create = exp.Create(
        this=exp.Table(this=exp.to_identifier(table, quoted=True)),
        kind="TABLE",
        replace=True,
        properties=props,
    )
    create.args["expression"] = query  # no set(): the caller's tree keeps its parent
    return create


def _quoted(table: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(table, quoted=True))


class DuckDBEngine(Engine):
    """DuckDB in process. Intermediate tables are TEMP (spill to ``temp_directory``)."""

    name = "duckdb"
    dialect = "duckdb"
    capabilities = DUCKDB
    formats = ("duckdb", "delta", "iceberg")  # duckdb_delta.py, duckdb_iceberg.py

    def __init__(
        self,
        warehouse: str,
        *,
        read_only: bool = False,
        memory_limit: str | None = None,
        sized_by_input: bool = False,
        threads: int | None = None,
        temp_directory: str | None = None,
        staging: bool = False,
        wait_seconds: float = 0.0,
        profile: bool = False,
        s3: Any = None,
    ) -> None:
        """Open ``warehouse``.

        ``staging=True`` (what a run uses) works in an in-memory database and attaches the
        warehouse file only inside :meth:`attached` — DuckDB locks a file per process, so
        holding it for the whole run would lock every reader out. ``wait_seconds`` retries
        a lock conflict (another process holds the file) with backoff before giving up.
        ``profile=True`` times every statement into :attr:`profile` (``run --profile``).
        ``s3``: the ``object_store.S3Settings`` ``s3://`` sources are read with.
        ``sized_by_input=True``: ``memory_limit`` is a default that :meth:`size_for_input`
        may raise for a large input (engines/duckdb_memory.py); False keeps it as given.
        """
        self.warehouse = warehouse
        self.memory_limit = memory_limit
        self._sized_by_input = sized_by_input
        self.s3 = s3
        self.staging = staging and warehouse != ":memory:"
        self.wait_seconds = wait_seconds
        self._attached = False
        self._loaded_views: set[str] = set()  # load_parquet's views (drop_loaded)
        if warehouse != ":memory:":
            Path(warehouse).parent.mkdir(parents=True, exist_ok=True)
        # Lineage is explicit (_source_file, _source_line) and every published order is an
        # ORDER BY, so DuckDB need not keep insertion order: parallel, streaming inserts
        # and partitioned COPY without a reordering buffer (less time and memory).
        config: dict[str, Any] = {"preserve_insertion_order": False}
        if memory_limit:
            config["memory_limit"] = memory_limit
        if threads:
            config["threads"] = threads
        if self.staging:
            # an in-memory database spills to ./.tmp by default: keep spills by the warehouse
            temp_directory = temp_directory or warehouse + ".tmp"
        if temp_directory:
            config["temp_directory"] = temp_directory
        target = ":memory:" if self.staging else warehouse
        self.con = _retry_locked(
            lambda: duckdb.connect(target, read_only=read_only, config=config),
            warehouse,
            wait_seconds,
        )
        # DuckDB's own progress bar draws on stdout once a statement runs past 2 s: on a
        # slow host that broke `run --json` (a bar in front of the JSON). Progress is the
        # CLI's job, on stderr. A per-connection setting, not a database one.
        self.con.execute("SET enable_progress_bar = false")
        register_xxhash64(self.con)
        if profile:
            self.profile = []
            self.con = _TimedConnection(self.con, self)  # type: ignore[assignment]

    def size_for_input(self, input_bytes: int) -> str | None:
        """Raise the default buffer for a large input (engines/duckdb_memory.py)."""
        if self._sized_by_input:
            limit = buffer_for_input(input_bytes)
            if limit != self.memory_limit:
                setting = exp.EQ(
                    this=exp.column("memory_limit"), expression=exp.Literal.string(limit)
                )
                self.execute(exp.Set(expressions=[exp.SetItem(this=setting)]))
                self.memory_limit = limit
        return self.memory_limit

    # -- execution -------------------------------------------------------------
    def _sql(self, statement: exp.Expression | str) -> str:
        return statement if isinstance(statement, str) else self.render(statement)

    def execute(self, statement: exp.Expression | str) -> None:
        self.con.execute(self._sql(statement))

    def fetch(self, query: exp.Expression | str) -> list[tuple]:
        return self.con.execute(self._sql(query)).fetchall()

    def fetch_dicts(self, query: exp.Expression | str) -> list[dict[str, Any]]:
        cur = self.con.execute(self._sql(query))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def arrow_batches(self, query: exp.Expression, batch_rows: int = 122_880) -> Any:
        """Stream ``query`` as Arrow record batches (nothing is materialized twice)."""
        return self.con.sql(self._sql(query)).to_arrow_reader(batch_rows)

    # -- inputs ----------------------------------------------------------------
    def load_lines(self, files: Sequence[str], table: str) -> None:
        """The lines relation of ``files`` (engines/duckdb_inputs.py: fast path + UTF-8 rescue)."""
        from .duckdb_inputs import load_lines

        cursors = self._threads() if self.staging and not self._attached else 1
        load = partial(load_lines, self.con, self.render, table=table, cursors=cursors)
        # local copies of s3:// files get their URL as _source_file afterwards (an UPDATE
        # that an ENUM of the local paths could not hold)
        if self._remote(files, table, partial(load, enum_files=False)):
            return
        wall, cpu = time.perf_counter(), time.process_time()
        load(files)
        if self.profile is not None and cursors > 1:  # its cursors are not the timed one
            self.profile.append(
                StatementTiming(
                    self.profile_stage,
                    round(time.perf_counter() - wall, 4),
                    round(time.process_time() - cpu, 4),
                    f"(lines of {len(files)} files into {table}, {cursors} cursors at once)",
                )
            )

    def _threads(self) -> int:
        """DuckDB's worker threads (the ``threads`` setting, all cores by default)."""
        return int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0])

    def load_line_rows(self, rows: Any, table: str) -> None:
        """A Kafka batch's lines relation (pyarrow) as a TEMP table."""
        from .duckdb_inputs import load_line_rows

        load_line_rows(self.con, self.render, rows, table)

    def load_parquet(self, files: Sequence[str], table: str) -> None:
        """Parquet rows by column name (union of the files' schemas) with 1-based row lineage."""
        from .duckdb_inputs import load_parquet

        if self._remote(
            files, table, lambda local: load_parquet(self.con, self.render, local, table)
        ):
            return
        if load_parquet(self.con, self.render, files, table, view=True):
            self._loaded_views.add(table)

    def loaded_as_view(self, table: str) -> bool:
        return table in self._loaded_views

    def drop_loaded(self, table: str) -> None:
        """Free what ``load_lines``/``load_parquet`` made: a view over local Parquet files
        or a table."""
        if table in self._loaded_views:
            self._loaded_views.discard(table)
            self.drop_view(table)
        else:
            self.drop_table(table)

    def _remote(self, files: Sequence[str], table: str, load: Any) -> bool:
        """Read ``s3://`` files through local copies (engines/s3_inputs.py); False: none."""
        from .object_store import is_s3

        if not any(is_s3(f) for f in files):
            return False
        from .s3_inputs import read_via_copies

        read_via_copies(files, table, self.s3, load, self.execute)
        return True

    # -- tables ----------------------------------------------------------------
    def create_table_as(
        self, table: str, query: exp.Expression, *, temporary: bool = False
    ) -> None:
        self.con.execute(self.render(_create(table, query, temporary=temporary)))

    def table_exists(self, table: str) -> bool:
        return bool(
            self.con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]
            ).fetchall()[0][0]  # fetchall: a half-read result blocks the next sql()
        )

    def columns(self, table: str) -> list[tuple[str, str]]:
        return [
            (r[0], r[1])
            for r in self.con.execute(
                # duckdb_columns(): the rows of information_schema.columns (tables and
                # views of every catalog) in ~1 ms instead of ~3; a watch batch asks 8 times
                "SELECT column_name, data_type FROM duckdb_columns() "
                "WHERE table_name = ? ORDER BY column_index",
                [table],
            ).fetchall()
        ]

    # -- snapshots: a TEMP table kept by the process between runs (run/reuse.py) ----------
    def table_mark(self, table: str) -> str | None:
        """The table's COMMENT in the default catalog (the attached warehouse)."""
        q = (
            exp.select("comment")
            .from_(exp.Table(this=exp.Anonymous(this="duckdb_tables")))
            .where(
                exp.and_(
                    exp.EQ(this=exp.column("table_name"), expression=exp.Literal.string(table)),
                    exp.EQ(
                        this=exp.column("database_name"),
                        expression=exp.func("current_database"),
                    ),
                    exp.EQ(this=exp.column("schema_name"), expression=exp.Literal.string("main")),
                )
            )
        )
        rows = self.fetch(q)
        return rows[0][0] if rows else None

    def mark_table(self, table: str, mark: str) -> None:
        """``COMMENT ON TABLE``: transactional, and dropped with the table it is on."""
        self.execute(
            exp.Comment(
                this=exp.Table(this=exp.to_identifier(table, quoted=True)),
                kind="TABLE",
                expression=exp.Literal.string(mark),
            )
        )

    def snapshot_table(self, table: str) -> Any:
        """``(columns, pyarrow.Table)`` of ``table``: the rows as Arrow, and the column
        types :meth:`restore_table` casts them back to (Arrow has no JSON type)."""
        columns = self.columns(table)
        query = self.render(exp.select(exp.Star()).from_(_quoted(table)))
        return columns, self.con.sql(query).to_arrow_table()

    def restore_table(self, table: str, snapshot: Any) -> None:
        """``CREATE TEMP VIEW table AS SELECT CAST(c AS <its type>) … FROM <the Arrow
        table>``: a view, not a copy — the Arrow rows are immutable and stay registered
        with this connection until it closes (copying the 93k-row customer change log
        back cost ~0.1 s a batch). ValueError (nothing left behind) when a type cannot be
        spelled back or the view's columns are not the snapshot's."""
        columns, rows = snapshot
        try:
            select = exp.select(
                *[
                    exp.alias_(
                        exp.cast(
                            exp.column(exp.to_identifier(n, quoted=True)),
                            exp.DataType.build(t, dialect="duckdb"),
                        ),
                        exp.to_identifier(n, quoted=True),
                        copy=False,
                    )
                    for n, t in columns
                ]
            )
        except Exception as exc:  # noqa: BLE001 - a type sqlglot cannot parse: rebuild instead
            raise ValueError(f"{table}: a column type cannot be restored ({exc})") from None
        arrow = f"_sg_snapshot_{table}"
        self.con.register(arrow, rows)
        self.create_temp_view(table, select.from_(_quoted(arrow), copy=False))
        if self.columns(table) != columns:
            self.execute(exp.Drop(this=_quoted(table), kind="VIEW", exists=True))
            self.con.unregister(arrow)
            raise ValueError(f"{table}: the restored column types differ from the snapshot's")

    # -- transactions ------------------------------------------------------------
    def begin(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:
            pass

    def close(self) -> None:
        try:
            self.con.close()
        except duckdb.Error:
            pass

    # -- staging mode: hold the warehouse file only while publishing -----------------------
    def attach_warehouse(self) -> None:
        """ATTACH the warehouse read-write and make it the default catalog.

        Unqualified names then create and find durable tables in the warehouse, while the
        run's TEMP tables stay visible. Retries while another process holds the file.
        """
        if not self.staging or self._attached:
            return
        attach = exp.Attach(this=exp.alias_(exp.Literal.string(self.warehouse), _WH))
        _retry_locked(
            lambda: self.con.execute(self.render(attach)), self.warehouse, self.wait_seconds
        )
        self.con.execute(self.render(exp.Use(this=exp.to_identifier(_WH))))
        self._attached = True

    def detach_warehouse(self) -> None:
        """Switch back to the in-memory catalog and DETACH (checkpoints and frees the lock)."""
        if not self._attached:
            return
        self._attached = False
        self.con.execute(self.render(exp.Use(this=exp.to_identifier("memory"))))
        self.con.execute(self.render(exp.Detach(this=exp.to_identifier(_WH))))

    # -- model export ----------------------------------------------------------------------
    def write_parquet_partitioned(
        self, query: exp.Expression, directory: str, partition_by: Sequence[str], file_prefix: str
    ) -> None:
        """``COPY (query) TO directory (FORMAT PARQUET, PARTITION_BY (...))``.

        DuckDB writes one file per partition (``{i}`` is 0 unless a file is split) and a
        NULL partition value as ``__HIVE_DEFAULT_PARTITION__``, which Spark and pyarrow
        read back as NULL. A COPY inside a transaction that rolls back leaves its files:
        hence the staging folder.
        """
        copy = exp.Copy(
            this=exp.Subquery(this=query.copy()),
            kind=False,
            files=[exp.Literal.string(directory)],
            params=[
                exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET")),
                exp.CopyParameter(
                    this=exp.var("PARTITION_BY"),
                    expression=exp.Tuple(
                        expressions=[
                            exp.column(exp.to_identifier(p, quoted=True)) for p in partition_by
                        ]
                    ),
                ),
                exp.CopyParameter(
                    this=exp.var("FILENAME_PATTERN"),
                    expression=exp.Literal.string(file_prefix + "-{i}"),
                ),
            ],
        )
        self.con.execute(self.render(copy))

    def peak_memory_bytes(self) -> int | None:
        try:
            return int(
                self.con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()[
                    0
                ]
            )
        except duckdb.Error:
            return None


_WH = "_sg_warehouse"
SQL_HEAD = 240  # characters of each statement kept in a profile


class _TimedConnection:
    """A DuckDB connection that records each ``execute`` (wall and process CPU seconds).

    Process CPU time counts every DuckDB worker thread, so CPU/wall shows how parallel a
    statement ran. Results are materialized by ``execute`` for everything sluicegate
    runs (DDL, DML, small aggregate fetches), so the time lands on the right statement.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, engine: DuckDBEngine) -> None:
        self._con = con
        self._engine = engine

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        from .base import StatementTiming

        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return self._con.execute(sql, *args, **kwargs)
        finally:
            if self._engine.profile is not None:
                self._engine.profile.append(
                    StatementTiming(
                        self._engine.profile_stage,
                        round(time.perf_counter() - wall, 4),
                        round(time.process_time() - cpu, 4),
                        " ".join(str(sql).split())[:SQL_HEAD],
                    )
                )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _retry_locked(action: Any, warehouse: str, wait_seconds: float) -> Any:
    """Run ``action``; on DuckDB's file-lock conflict retry with backoff up to ``wait_seconds``.

    Raises :class:`LockedError` (exit 5) when the wait runs out: naming the file, not a
    traceback, because an operator can act on it (a long-lived reader, a stuck job).
    """
    deadline = time.monotonic() + max(wait_seconds, 0.0)
    # a reader's connection lasts milliseconds (a dashboard, a poller): the first retries
    # come soon so a watch's short ATTACH does not wait 20 ms+ behind one; the doubling
    # keeps a long wait cheap
    delay = 0.005
    while True:
        try:
            return action()
        except duckdb.IOException as exc:
            if any(fault in str(exc) for fault in ENVIRONMENT_FAULTS):
                raise EnvironmentFailure(  # one line, like every exit 70
                    f"internal error: cannot open warehouse {warehouse}: {exc} — nothing was "
                    "published; free space or make the filesystem writable, then rerun"
                ) from None
            if "lock" not in str(exc).lower():
                raise SluiceError(f"cannot open warehouse {warehouse}: {exc}") from None
            if time.monotonic() + delay > deadline:
                raise LockedError(
                    f"the warehouse {warehouse} is in use by another process",
                    hint="DuckDB lets one process at a time open a file for writing; wait for "
                    "the other process (a publish, or a long-lived reader) and retry",
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


#: The DLQ key hash (``dlq/keys.py``): Spark's ``xxhash64(string)``, which DuckDB lacks.
XXHASH64_FUNCTION = "sg_xxhash64"
XXHASH64_SEED = 42
_U64, _I64_MAX = 1 << 64, (1 << 63) - 1


def _xxhash64(text: str | None) -> int:
    """Signed 64-bit xxhash64 (seed 42) of the UTF-8 bytes: Spark's ``xxhash64`` on strings.

    NULL hashes to the seed, as in Spark.
    """
    if text is None:
        return XXHASH64_SEED
    u = xxhash.xxh64_intdigest(text.encode("utf-8"), seed=XXHASH64_SEED)
    return u - _U64 if u > _I64_MAX else u


def register_xxhash64(con: duckdb.DuckDBPyConnection) -> None:
    """Register ``sg_xxhash64(VARCHAR) -> BIGINT`` on ``con`` (connection-local, idempotent).

    A *native* (row-at-a-time) UDF, not an Arrow one: measured on DuckDB 2.0.1, the first
    call of an Arrow UDF in a process imports pandas (~0.5 s, paid by every run that
    quarantines anything), while the native one hashes ~1.3M rows/s with no import. The
    DLQ hashes quarantined rows only, so the native UDF is faster below ~1M of them.
    """
    try:
        con.create_function(
            XXHASH64_FUNCTION,
            _xxhash64,
            [duckdb.sqltype("VARCHAR")],
            duckdb.sqltype("BIGINT"),
            type="native",
            null_handling="special",
            side_effects=False,
        )
    except duckdb.CatalogException:
        pass  # already registered on this connection


def file_size(path: str) -> int:
    return os.path.getsize(path)
