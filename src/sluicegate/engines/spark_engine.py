"""The scale-out engine: Apache Spark, with Delta Lake tables (or Iceberg tables in a catalog).

The same sqlglot trees the DuckDB engine runs are rendered for Spark SQL here. What
Spark lacks, the engine supplies without Python UDFs on the row path:

* **inputs with lineage** — ``spark_lines`` numbers physical lines exactly;
* **temporary tables** — a DataFrame persisted (memory, spilling to disk) and registered
  as a temp view of a private session, materialized when created (DuckDB's TEMP tables
  are snapshots too);
* **durable tables and transactions** — a table store of the contract's format
  (``spark_store``; Delta: ``delta_spark``; Iceberg: ``iceberg_spark``) stages each
  changed table, runs DELETE, UPDATE and MERGE natively on the staged copy (an Iceberg
  branch), and publishes at commit.
  ``begin``/``commit``/``rollback`` keep the DuckDB shape, so ``run/publish.py`` does
  not know which engine or format it drives.

Example (what ``sluicegate run CONTRACT --engine spark`` does underneath)::

    eng = SparkEngine("/data/warehouse", master="local[2]")
    eng.load_lines(["/data/in.json"], "_sg_lines")
    eng.fetch(exp.select("COUNT(*)").from_("_sg_lines"))
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JError, Py4JNetworkError
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from sqlglot import exp

from ..compile.render import ident
from ..errors import EnvironmentFailure, SluiceError
from .base import Engine
from .capabilities import SPARK
from .merge_into_empty import insert_for_empty_target
from .object_store import unreachable_store
from .spark_formats import store_class
from .spark_lines import read_lines, read_parquet, spark_path, wholetext_budget
from .spark_profile import StatementClock
from .spark_session import heap_per_task, local_cores, open_session, resolve_spec
from .spark_store import SparkStoreTx
from .spark_subquery_dml import merge_for_subquery_dml
from .storage import is_object_store

BIG_STATEMENT = 100_000
"""SQL longer than this (characters) runs without whole-stage codegen (see ``_sized``).

Above the retail NDJSON reader (~64,000 characters since its plain-line branch, which
whole-stage codegen runs 20 % faster; its general branch stays out of codegen by
``spark.sql.codegen.maxFields``: benchmarks/RESULTS.md, 2026-12-03 16:35–17:30 UTC)."""


def _py(value: Any) -> Any:
    """Spark values as DuckDB's driver returns them: structs as dicts, arrays as lists."""
    if isinstance(value, Row):
        return {k: _py(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_py(v) for v in value]
    if isinstance(value, dict):
        return {k: _py(v) for k, v in value.items()}
    return value


#: Spark's exit code for a JVM that ran out of heap (``SparkExitCode.OOM``)
JVM_OUT_OF_MEMORY = 52
#: how long a failed run waits for a dying JVM to exit, to read why it did
JVM_EXIT_WAIT_SECONDS = 30.0
#: how long a raw Java error waits to see whether the JVM is exiting under it
JVM_GRACE_SECONDS = 2.0


class SparkEngine(Engine):
    """Spark SQL on a private session; durable tables in a table store (Delta by default)."""

    name = "spark"
    dialect = "spark"
    capabilities = SPARK
    formats = ("delta", "iceberg")

    def __init__(
        self,
        warehouse: str,
        *,
        master: str | None = None,
        remote: str | None = None,
        options: Mapping[str, str] | None = None,
        contract_master: str | None = None,
        contract_remote: str | None = None,
        wholetext_max_bytes: int | None = None,
        fault: Callable[[str], None] | None = None,
        table_format: str = "delta",
        s3: Any = None,
        iceberg: Any = None,
        profile: bool = False,
        input_bytes: int | None = None,
    ) -> None:
        if not is_object_store(warehouse):
            warehouse = os.path.abspath(warehouse)
            if os.path.exists(warehouse) and not os.path.isdir(warehouse):
                raise SluiceError(
                    f"the Spark warehouse {warehouse} is a file; it must be a directory",
                    hint="point outputs.warehouse at a folder (e.g. ./warehouse) for --engine spark",
                )
            os.makedirs(warehouse, exist_ok=True)
        self.warehouse = warehouse
        self.spec = resolve_spec(
            master,
            remote,
            options,
            contract_master=contract_master,
            contract_remote=contract_remote,
        )
        self.spark, self._owned = open_session(self.spec, input_bytes=input_bytes)
        #: ``run --profile``: every call that makes Spark work, timed (spark_profile.py)
        self.profile = [] if profile else None
        self._clock = StatementClock(self, self.spark)
        if s3 is not None:  # s3:// warehouse or source: Hadoop's S3A settings (object_store.py)
            from .object_store import apply_to_spark

            apply_to_spark(self.spark, s3)
        with unreachable_store(warehouse, s3):
            # an Iceberg store also takes the contract's (catalog, namespace)
            extra = {"iceberg": iceberg} if iceberg is not None else {}
            self.store = store_class(table_format)(self.spark, warehouse, **extra)
            #: what opening the warehouse repaired (an interrupted publish), for the run's log
            self.notices: list[str] = self.store.recover()
        self.storage = self.store.capabilities
        #: files up to this size are read whole (spark_lines.py); by default sized by
        #: the heap a task may count on, so a big file cannot run the JVM out of heap
        self.wholetext_max_bytes = (
            wholetext_budget(heap_per_task(self.spark, self.spec.master))
            if wholetext_max_bytes is None
            else wholetext_max_bytes
        )
        if fault is None:  # SLUICEGATE_FAULT=delta:journaled … kills the run there (tests)
            from ..faults import checkpoint as fault
        self._fault = fault
        self._temps: dict[str, DataFrame] = {}
        self._tx: SparkStoreTx | None = None
        self._views: set[str] = set()
        #: tables the last commit published whose views still name the staged copies
        self._unviewed: set[str] = set()
        for table in self.store.tables():
            self._publish_view(table)

    def size_for_input(self, input_bytes: int) -> str | None:
        """A local driver's heap is fixed when its JVM starts — sized by the input where
        the run knew it before opening the engine (spark_session.driver_heap); reported
        for the run's metrics (None on a cluster or Spark Connect)."""
        if local_cores(self.spec.master) is None:
            return None
        try:
            return str(self.spark.conf.get("spark.driver.memory"))
        except Exception:  # noqa: BLE001 - not set: Spark's own 1g default
            return None

    # -- execution -------------------------------------------------------------------
    def _text(self, statement: exp.Expression | str) -> str:
        """The statement's Spark SQL. Each public call renders its tree once and hands the
        text on (sizing, planning, the profile's label): a reader's tree renders to
        ~64,000 characters in ~0.2 s, and rendering it three times was ~1 s of a run."""
        return statement if isinstance(statement, str) else self.render(statement)

    def _df(self, statement: exp.Expression | str) -> DataFrame:
        self._views_current()
        return self.spark.sql(self._text(statement))

    @contextmanager
    def _sized(self, sql: str) -> Iterator[None]:
        """Run a very large statement without whole-stage code generation.

        Whole-stage codegen fuses a stage's operators into one Java method, which the JVM
        caps at 64 KB; the reader of a wide contract exceeds it, and Spark then logs a
        compile error and falls back after wasting the compile time. Statements whose SQL
        is longer than ``BIG_STATEMENT`` characters are planned with it off from the
        start (expressions are still compiled, per operator).
        """
        if len(sql) <= BIG_STATEMENT:
            yield
            return
        self.spark.conf.set("spark.sql.codegen.wholeStage", "false")
        try:
            yield
        finally:
            self.spark.conf.set("spark.sql.codegen.wholeStage", "true")

    def execute(self, statement: exp.Expression | str) -> None:
        creates = isinstance(statement, exp.Create) and statement.kind in ("TABLE", "VIEW")
        # what Spark plans: a CREATE's query (the DataFrame API makes the table or view)
        sql = self._text(statement.expression if creates else statement)
        label = (lambda: self._text(statement)) if creates else (lambda: sql)
        with self._clock.timed(label), self._sized(sql):
            self._execute(statement, sql)

    def _execute(self, statement: exp.Expression | str, sql: str) -> None:
        """Run ``statement``; ``sql`` is the text of what Spark plans (a CREATE's query)."""
        if isinstance(statement, exp.Insert | exp.Delete | exp.Update | exp.Merge):
            self._dml(statement)
        elif isinstance(statement, exp.Create) and statement.kind in ("TABLE", "VIEW"):
            if statement.kind == "VIEW":  # a view stays lazy, as in DuckDB
                self._temp_view(statement.this.name, self._df(sql), cache=False)
                return
            temporary = any(
                isinstance(p, exp.TemporaryProperty)
                for p in (statement.args.get("properties") or exp.Properties()).expressions
            )
            self._create_table_as(statement.this.name, sql, temporary=temporary)
        elif isinstance(statement, exp.Drop) and statement.kind in ("TABLE", "VIEW"):
            # sqlglot puts a DROP's table in ``tables`` (``this`` in older trees)
            target = statement.this or (statement.args.get("tables") or [None])[0]
            self._drop(target.name, if_exists=bool(statement.args.get("exists")))
        else:
            self._df(sql).collect()

    def fetch(self, query: exp.Expression | str) -> list[tuple]:
        sql = self._text(query)
        with self._clock.timed(lambda: sql), self._sized(sql):
            return [tuple(_py(v) for v in row) for row in self._df(sql).collect()]

    def fetch_dicts(self, query: exp.Expression | str) -> list[dict[str, Any]]:
        sql = self._text(query)
        with self._clock.timed(lambda: sql), self._sized(sql):
            df = self._df(sql)
            names = df.columns
            return [dict(zip(names, (_py(v) for v in row), strict=True)) for row in df.collect()]

    def arrow_batches(self, query: exp.Expression, batch_rows: int = 122_880) -> Any:
        """The rows of ``query`` collected to the driver as Arrow (``DataFrame.toArrow``:
        executors send Arrow IPC, no per-row Python objects), then handed out as batches."""
        import pyarrow as pa

        sql = self._text(query)
        with self._clock.timed(lambda: sql):
            table = self._df(sql).toArrow()
        return pa.RecordBatchReader.from_batches(
            table.schema, table.to_batches(max_chunksize=batch_rows)
        )

    # -- inputs ----------------------------------------------------------------------
    def load_lines(self, files: Sequence[str], table: str) -> None:
        """Lines with physical line numbers (see ``spark_lines`` for how and what it costs)."""
        df = read_lines(self.spark, files, wholetext_max_bytes=self.wholetext_max_bytes)
        self._temp_view(table, df, cache=False)

    def load_line_rows(self, rows: Any, table: str) -> None:
        """A Kafka batch's lines relation (pyarrow, collected by the stream's driver)."""
        with self._clock.timed(lambda: f"(a batch of {len(rows)} lines into {table})"):
            self._temp_view(table, self.spark.createDataFrame(rows), cache=True)

    def load_parquet(self, files: Sequence[str], table: str) -> None:
        self._temp_view(table, read_parquet(self.spark, files), cache=False)

    # -- tables ----------------------------------------------------------------------
    def create_table_as(
        self, table: str, query: exp.Expression, *, temporary: bool = False
    ) -> None:
        sql = self._text(query)
        with self._clock.timed(lambda: sql), self._sized(sql):
            self._create_table_as(table, sql, temporary=temporary)

    def create_table_counted(self, table: str, query: exp.Expression) -> int:
        sql = self._text(query)
        with self._clock.timed(lambda: sql), self._sized(sql):
            rows = self._create_table_as(table, sql, temporary=False, counted=True)
        return self.count_rows(table) if rows is None else rows

    def _create_table_as(
        self, table: str, query: exp.Expression | str, *, temporary: bool, counted: bool = False
    ) -> int | None:
        """Create ``table``; when ``counted``, the rows written if the store's write
        counted them (None: it did not, or was not asked to)."""
        df = self._df(query)
        if temporary:
            self._temp_view(table, df, cache=True)
            return None
        with self._autocommit():
            if counted:
                rows = self._tx.create_counted(table, df)
            else:
                rows = None
                self._tx.create(table, df)
            self._stage_view(table)
        return rows

    def table_exists(self, table: str) -> bool:
        self._views_current()
        if table in self._temps:
            return True
        if self._tx is not None and table in self._tx.tables():
            return self._tx.exists(table)
        return table in self._views

    def change_feed(self, table: str) -> list[dict[str, Any]]:
        return self.store.change_feed(table)

    def columns(self, table: str) -> list[tuple[str, str]]:
        df = self._frame(table)
        return [(f.name, f.dataType.simpleString().upper()) for f in df.schema.fields]

    def _frame(self, table: str) -> DataFrame:
        self._views_current()
        if table in self._temps:
            return self._temps[table]
        df = self._tx.frame(table) if self._tx is not None else self.store.read(table)
        if df is None:
            raise SluiceError(f"no table '{table}' in the Spark warehouse {self.warehouse}")
        return df

    def write_parquet_partitioned(
        self, query: exp.Expression, directory: str, partition_by: Sequence[str], file_prefix: str
    ) -> None:
        """Hive-layout Parquet as DuckDB's COPY writes it: one ``<prefix>-<i>.parquet`` per
        partition folder (Spark names its files itself, so they are renamed after writing)."""
        with self._clock.timed(lambda: f"(Parquet export to {directory}) {self.render(query)}"):
            self._write_parquet_partitioned(query, directory, partition_by, file_prefix)

    def _write_parquet_partitioned(
        self, query: exp.Expression, directory: str, partition_by: Sequence[str], file_prefix: str
    ) -> None:
        target = Path(directory)
        scratch = target / f".spark-{os.getpid()}"
        df = self._df(query).repartition(*[F.col(f"`{p}`") for p in partition_by])
        df.write.mode("overwrite").partitionBy(*partition_by).parquet(spark_path(str(scratch)))
        for folder in sorted({p.parent for p in scratch.rglob("*.parquet")}):
            rel = folder.relative_to(scratch)
            (target / rel).mkdir(parents=True, exist_ok=True)
            for i, part in enumerate(sorted(folder.glob("*.parquet"))):
                os.replace(part, target / rel / f"{file_prefix}-{i}.parquet")
        shutil.rmtree(scratch, ignore_errors=True)

    # -- transactions ----------------------------------------------------------------
    def begin(self) -> None:
        if self._tx is not None:
            raise SluiceError("a transaction is already open on this Spark engine")
        self._views_current()
        self._tx = self.store.begin()

    def will_change(self, tables: Sequence[str]) -> None:
        if self._tx is None:
            return
        with self._clock.timed(lambda: f"(stage {', '.join(tables)} for changes)"):
            self._tx.prepare(tables)

    def staged_versions(self) -> dict[str, int]:
        return self._tx.staged_versions() if self._tx is not None else {}

    def commit(self) -> None:
        tx, self._tx = self._tx, None
        if tx is None:
            return
        with self._clock.timed(
            lambda: f"(commit: publish {', '.join(tx.tables())} to {self.store.format})"
        ):
            self.last_commit = tx.commit(fault=self._fault)
        # the views are pointed at the published tables when something next reads one
        # (each reads the table's log, ~0.15 s on Delta; a run reads nothing after it)
        self._unviewed.update(tx.tables())

    def rollback(self) -> None:
        tx, self._tx = self._tx, None
        if tx is None:
            return
        tx.rollback()
        for table in tx.tables():
            self._publish_view(table)

    def _java_process(self) -> Any:
        """The JVM process this engine started (None for a reused session or Spark Connect)."""
        if not self._owned:
            return None
        try:
            gateway = self.spark.sparkContext._gateway  # noqa: SLF001 - py4j launcher
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            return None
        return getattr(gateway, "proc", None)  # pyspark.java_gateway: the Popen of the JVM

    def _jvm_exit_code(self, wait: float = 0.0) -> int | None:
        """The exit code of the JVM this engine started, waiting up to ``wait`` seconds for
        it (a JVM out of heap runs its shutdown hooks first); None while it runs."""
        process = self._java_process()
        if process is None:
            return None
        try:
            return process.wait(timeout=wait) if wait else process.poll()
        except subprocess.TimeoutExpired:
            return None

    def explain_failure(self, exc: BaseException) -> SluiceError | None:
        """A JVM that died under the run: out of heap (Spark's exit code 52) names the
        setting to raise; any other exit says so. Without this the error was py4j's
        "Connection refused" from a dead gateway (and its ``str()`` itself failed)."""
        if self._java_process() is None:
            return None
        cut_off = _gateway_lost(exc)
        # a raw py4j error (not one PySpark converts, like AnalysisException) may be the
        # JVM going down for a reason its text does not show — a Java error, or a gateway
        # that no longer finds its own classes ("py4j does not exist in the JVM") while
        # the JVM runs its shutdown hooks: a short look first
        grace = JVM_GRACE_SECONDS if isinstance(exc, Py4JError) else 0.0
        code = self._jvm_exit_code(JVM_EXIT_WAIT_SECONDS if cut_off else grace)
        if code is None and not cut_off:
            return None  # an ordinary error from a JVM that still runs
        where = "the run did not finish; the next run repairs an interrupted publish"
        if code == JVM_OUT_OF_MEMORY:
            return EnvironmentFailure(
                f"internal error: the Spark JVM ran out of heap (exit {code}) — {where}; "
                "give it more: engine.options: {spark.driver.memory: 8g} in the contract "
                "(spark.executor.memory on a cluster) or SPARK_DRIVER_MEMORY=8g, then rerun"
            )
        status = "stopped answering" if code is None else f"exited with code {code}"
        return EnvironmentFailure(
            f"internal error: the Spark JVM {status} under the run — {where}; "
            "its log above says why; rerun once it is fixed"
        )

    def close(self) -> None:
        try:
            self._release()
        except Exception:
            if self._jvm_exit_code(JVM_EXIT_WAIT_SECONDS) is None:
                raise
            # the JVM is gone: nothing is left to release (its tables and views died with it)
        finally:
            self._temps.clear()
            self._views.clear()
            self._unviewed.clear()
            self._tx = None

    def _release(self) -> None:
        if self._tx is not None:
            self.rollback()
        for name, df in list(self._temps.items()):
            df.unpersist()
            self._drop_view(name)
        self._temps.clear()
        for name in list(self._views):
            self._drop_view(name)
        if self._owned:
            self.spark.stop()

    # -- internals -------------------------------------------------------------------
    def _autocommit(self):  # noqa: ANN202 - a context manager
        """A statement outside ``begin``/``commit`` is its own transaction (as in DuckDB)."""
        from contextlib import nullcontext

        return nullcontext() if self._tx is not None else self.transaction()

    def _dml(self, stmt: exp.Expression) -> None:
        """INSERT appends through the DataFrame writer; DELETE, UPDATE and MERGE run as
        the table format's own SQL on the transaction's staged copy of the table."""
        name = target_name(stmt)
        if name in self._temps:
            raise SluiceError(f"cannot change the temporary table '{name}' in place on Spark")
        if not self.table_exists(name):
            raise SluiceError(f"no table '{name}' in the Spark warehouse {self.warehouse}")
        with self._autocommit():
            empty = self._tx.known_empty(name)
            if empty and isinstance(stmt, exp.Merge):  # nothing can match: an INSERT
                stmt = insert_for_empty_target(stmt) or stmt
            if isinstance(stmt, exp.Insert):
                rows = self._insert_rows(stmt, self._tx.frame(name).schema)
                self._tx.insert(name, rows, overwrite=bool(stmt.args.get("overwrite")))
            elif empty and isinstance(stmt, exp.Delete | exp.Update):
                return  # nothing to delete or update (a first run's rerun cleanup)
            else:
                native = merge_for_subquery_dml(stmt)  # Delta: no subquery in UPDATE/DELETE
                self.spark.sql(self.render(retarget(native, self._tx.target(name))))
                self._tx.changed(name)
            self._stage_view(name)

    def _insert_rows(self, stmt: exp.Insert, schema: Any) -> DataFrame:
        """INSERT's rows, matched to the table's columns by position (or by the column list)."""
        target = stmt.this
        names = (
            [e.name for e in target.expressions]
            if isinstance(target, exp.Schema)
            else [f.name for f in schema.fields]
        )
        rows = self._df(stmt.expression)
        if len(rows.columns) != len(names):
            raise SluiceError(
                f"INSERT into {target_name(stmt)}: {len(rows.columns)} values for "
                f"{len(names)} columns"
            )
        rows = rows.toDF(*names)
        missing = [f for f in schema.fields if f.name not in names]
        for f in missing:
            rows = rows.withColumn(f.name, F.lit(None).cast(f.dataType))
        return rows.select(
            *[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in schema.fields]
        )

    def _drop(self, name: str, *, if_exists: bool) -> None:
        if name in self._temps:
            self._temps.pop(name).unpersist()
            self._drop_view(name)
            return
        if not self.table_exists(name):
            if if_exists:
                return
            raise SluiceError(f"no table '{name}' in the Spark warehouse {self.warehouse}")
        with self._autocommit():
            self._tx.drop(name)
            self._drop_view(name)

    def _temp_view(self, name: str, df: DataFrame, *, cache: bool) -> None:
        old = self._temps.pop(name, None)
        if cache and old is not None and df.sameSemantics(old):
            # the same plan again (the same files typed again under one engine): Spark's
            # cache matches plans, not rows, so persisting it now would hand back old's
            # rows, and unpersisting old afterwards would drop the entry both share,
            # leaving every later read to recompute it. Drop old's first.
            old.unpersist()
            old = None
        if cache:
            df = df.persist(StorageLevel.MEMORY_AND_DISK)
            df.count()  # materialize now: a snapshot, like a DuckDB TEMP table
        df.createOrReplaceTempView(name)
        self._temps[name] = df
        if old is not None:
            old.unpersist()

    def _stage_view(self, name: str) -> None:
        """Point the view ``name`` at the transaction's staged copy."""
        self._unviewed.discard(name)
        df = self._tx.frame(name) if self._tx is not None else None
        if df is None:
            self._drop_view(name)
            return
        df.createOrReplaceTempView(name)
        self._views.add(name)

    def _views_current(self) -> None:
        """Point the views of the tables the last commit published at what it published."""
        while self._unviewed:
            self._publish_view(min(self._unviewed))

    def _publish_view(self, name: str) -> None:
        self._unviewed.discard(name)
        df = self.store.read(name)
        if df is None:
            self._drop_view(name)
        else:
            df.createOrReplaceTempView(name)
            self._views.add(name)

    def _drop_view(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)
        self._views.discard(name)


def target_name(stmt: exp.Expression) -> str:
    """The table a DML statement changes."""
    t = stmt.this
    if isinstance(t, exp.Schema):
        t = t.this
    if not isinstance(t, exp.Table):
        raise SluiceError(f"cannot find the target table of {type(stmt).__name__}")
    return t.name


def retarget(stmt: exp.Expression, target: exp.Table) -> exp.Expression:
    """``stmt`` with its target table replaced by ``target`` (a staged table); a target
    alias the statement gave wins over the staged table's default alias (its name)."""
    stmt = stmt.copy()
    t = stmt.this
    new = target.copy()
    if t.alias:
        new.set("alias", exp.TableAlias(this=ident(t.alias)))
    stmt.set("this", new)
    return stmt


def _gateway_lost(exc: BaseException) -> bool:
    """Is the JVM gone or going? A network error in the chain; an error whose text cannot
    be fetched from the JVM any more; or a task's ``OutOfMemoryError``, after which
    Spark's handler exits the JVM (the gateway may still answer for a moment)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionError | Py4JNetworkError):
            return True
        seen = seen.__cause__ or seen.__context__
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - py4j asks the JVM for the text
        return True
    return "java.lang.OutOfMemoryError" in text
