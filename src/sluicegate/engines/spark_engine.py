"""The scale-out engine: Apache Spark, with Parquet tables under a warehouse directory.

The same sqlglot trees the DuckDB engine runs are rendered for Spark SQL here. What
Spark lacks, the engine supplies without Python UDFs on the row path:

* **inputs with lineage** — ``spark_lines`` numbers physical lines exactly;
* **temporary tables** — a DataFrame persisted (memory, spilling to disk) and registered
  as a temp view of a private session, materialized when created (DuckDB's TEMP tables
  are snapshots too);
* **durable tables and transactions** — plain Parquet cannot be updated, so DELETE, UPDATE
  and MERGE are rewritten into the table's new content (``spark_dml``), staged per
  ``_logical_date`` partition (``spark_tx``) and published at commit by journaled folder
  swaps (``spark_warehouse``). ``begin``/``commit``/``rollback`` keep the DuckDB shape, so
  ``run/publish.py`` does not know which engine it drives.

Example (what ``sluicegate run CONTRACT --engine spark`` does underneath)::

    eng = SparkEngine("/data/warehouse", master="local[2]")
    eng.load_lines(["/data/in.json"], "_sg_lines")
    eng.fetch(exp.select("COUNT(*)").from_("_sg_lines"))
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from sqlglot import exp

from ..errors import SluiceError
from .base import Engine
from .capabilities import SPARK
from .spark_dml import rewrite, static_partitions, target_name
from .spark_lines import DEFAULT_WHOLETEXT_MAX_BYTES, read_lines, read_parquet, spark_path
from .spark_session import open_session, resolve_spec
from .spark_tx import Transaction, conform, nullable, read_published
from .spark_warehouse import PARTITION, Warehouse

BIG_STATEMENT = 20_000
"""SQL longer than this (characters) runs without whole-stage codegen (see ``_sized``)."""


def _py(value: Any) -> Any:
    """Spark values as DuckDB's driver returns them: structs as dicts, arrays as lists."""
    if isinstance(value, Row):
        return {k: _py(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_py(v) for v in value]
    if isinstance(value, dict):
        return {k: _py(v) for k, v in value.items()}
    return value


class SparkEngine(Engine):
    """Spark SQL on a private session; Parquet tables under ``warehouse``."""

    name = "spark"
    dialect = "spark"
    capabilities = SPARK

    def __init__(
        self,
        warehouse: str,
        *,
        master: str | None = None,
        remote: str | None = None,
        options: Mapping[str, str] | None = None,
        contract_master: str | None = None,
        contract_remote: str | None = None,
        wholetext_max_bytes: int = DEFAULT_WHOLETEXT_MAX_BYTES,
        fault: Callable[[str], None] | None = None,
    ) -> None:
        self.store = Warehouse(warehouse)
        self.warehouse = str(self.store.root)
        #: what opening the warehouse repaired (an interrupted publish), for the run's log
        self.notices: list[str] = self.store.recover()
        self.spec = resolve_spec(
            master,
            remote,
            options,
            contract_master=contract_master,
            contract_remote=contract_remote,
        )
        self.spark, self._owned = open_session(self.spec)
        self.wholetext_max_bytes = wholetext_max_bytes
        if fault is None:  # SLUICEGATE_FAULT=spark:journaled … kills the run there (tests)
            from ..faults import checkpoint as fault
        self._fault = fault
        self._temps: dict[str, DataFrame] = {}
        self._tx: Transaction | None = None
        self._views: set[str] = set()
        for table in self.store.tables():
            self._publish_view(table)

    # -- execution -------------------------------------------------------------------
    def _df(self, statement: exp.Expression | str) -> DataFrame:
        sql = statement if isinstance(statement, str) else self.render(statement)
        return self.spark.sql(sql)

    @contextmanager
    def _sized(self, statement: exp.Expression | str) -> Iterator[None]:
        """Run a very large statement without whole-stage code generation.

        Whole-stage codegen fuses a stage's operators into one Java method, which the JVM
        caps at 64 KB; the reader of a wide contract exceeds it, and Spark then logs a
        compile error and falls back after wasting the compile time. Statements whose SQL
        is longer than ``BIG_STATEMENT`` characters are planned with it off from the
        start (expressions are still compiled, per operator).
        """
        sql = statement if isinstance(statement, str) else self.render(statement)
        if len(sql) <= BIG_STATEMENT:
            yield
            return
        self.spark.conf.set("spark.sql.codegen.wholeStage", "false")
        try:
            yield
        finally:
            self.spark.conf.set("spark.sql.codegen.wholeStage", "true")

    def execute(self, statement: exp.Expression | str) -> None:
        with self._sized(statement):
            self._execute(statement)

    def _execute(self, statement: exp.Expression | str) -> None:
        if isinstance(statement, exp.Insert | exp.Delete | exp.Update | exp.Merge):
            self._dml(statement)
        elif isinstance(statement, exp.Create) and statement.kind in ("TABLE", "VIEW"):
            if statement.kind == "VIEW":  # a view stays lazy, as in DuckDB
                self._temp_view(statement.this.name, self._df(statement.expression), cache=False)
                return
            temporary = any(
                isinstance(p, exp.TemporaryProperty)
                for p in (statement.args.get("properties") or exp.Properties()).expressions
            )
            self._create_table_as(statement.this.name, statement.expression, temporary=temporary)
        elif isinstance(statement, exp.Drop) and statement.kind in ("TABLE", "VIEW"):
            self._drop(statement.this.name, if_exists=bool(statement.args.get("exists")))
        else:
            self._df(statement).collect()

    def fetch(self, query: exp.Expression | str) -> list[tuple]:
        with self._sized(query):
            return [tuple(_py(v) for v in row) for row in self._df(query).collect()]

    def fetch_dicts(self, query: exp.Expression | str) -> list[dict[str, Any]]:
        with self._sized(query):
            df = self._df(query)
            names = df.columns
            return [dict(zip(names, (_py(v) for v in row), strict=True)) for row in df.collect()]

    def arrow_batches(self, query: exp.Expression, batch_rows: int = 122_880) -> Any:
        """The rows of ``query`` collected to the driver as Arrow (``DataFrame.toArrow``:
        executors send Arrow IPC, no per-row Python objects), then handed out as batches."""
        import pyarrow as pa

        table = self._df(query).toArrow()
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
        self._temp_view(table, self.spark.createDataFrame(rows), cache=True)

    def load_parquet(self, files: Sequence[str], table: str) -> None:
        self._temp_view(table, read_parquet(self.spark, files), cache=False)

    # -- tables ----------------------------------------------------------------------
    def create_table_as(
        self, table: str, query: exp.Expression, *, temporary: bool = False
    ) -> None:
        with self._sized(query):
            self._create_table_as(table, query, temporary=temporary)

    def _create_table_as(self, table: str, query: exp.Expression, *, temporary: bool) -> None:
        df = self._df(query)
        if temporary:
            self._temp_view(table, df, cache=True)
            return
        with self._autocommit():
            st = self._tx.create(table, df)
            self._stage_view(table, st.frame(self.spark))

    def table_exists(self, table: str) -> bool:
        if table in self._temps:
            return True
        if self._tx is not None and table in self._tx.tables:
            return not self._tx.tables[table].dropped
        return self.store.read_meta(table) is not None

    def columns(self, table: str) -> list[tuple[str, str]]:
        df = self._frame(table)
        return [(f.name, f.dataType.simpleString().upper()) for f in df.schema.fields]

    def _frame(self, table: str) -> DataFrame:
        if table in self._temps:
            return self._temps[table]
        if self._tx is not None:
            st = self._tx.staged(table)
            if st is not None:
                return st.frame(self.spark)
        df = read_published(self.spark, self.store, table)
        if df is None:
            raise SluiceError(f"no table '{table}' in the Spark warehouse {self.warehouse}")
        return df

    def write_parquet_partitioned(
        self, query: exp.Expression, directory: str, partition_by: Sequence[str], file_prefix: str
    ) -> None:
        """Hive-layout Parquet as DuckDB's COPY writes it: one ``<prefix>-<i>.parquet`` per
        partition folder (Spark names its files itself, so they are renamed after writing)."""
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
        self._tx = Transaction(self.spark, self.store)

    def commit(self) -> None:
        tx, self._tx = self._tx, None
        if tx is None:
            return
        changed = tx.commit(fault=self._fault)
        for table in changed:
            self._publish_view(table)

    def rollback(self) -> None:
        tx, self._tx = self._tx, None
        if tx is None:
            return
        tx.rollback()
        for table in tx.tables:
            self._publish_view(table)

    def close(self) -> None:
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
        name = target_name(stmt)
        if name in self._temps:
            self._temp_view(name, self._changed(stmt, self._temps[name])[0], cache=True)
            return
        with self._autocommit():
            st = self._tx.staged(name)
            if st is None:
                raise SluiceError(f"no table '{name}' in the Spark warehouse {self.warehouse}")
            content, touched = self._changed(stmt, st.frame(self.spark), st.schema)
            if st.write(self._tx.tx, content, touched):
                self._stage_view(name, st.frame(self.spark))

    def _changed(
        self, stmt: exp.Expression, current: DataFrame, schema: Any = None
    ) -> tuple[DataFrame, DataFrame | list[str] | None]:
        """(new content, the touched partitions) of ``stmt`` on ``current``.

        The partitions are a list of dates when the statement's text says which (no Spark
        job), else rows of a query naming them; None means the whole table.
        """
        schema = schema or nullable(current.schema)
        columns = [f.name for f in schema.fields]
        partitioned = PARTITION in columns
        if isinstance(stmt, exp.Insert):
            rows = self._insert_rows(stmt, schema)
            content = rows if stmt.args.get("overwrite") else current.unionByName(rows)
            if stmt.args.get("overwrite") or not partitioned:
                return content, None
            return content, static_partitions(stmt, columns) or rows.select(PARTITION)
        types = {
            f.name: exp.DataType.build(f.dataType.simpleString(), dialect="spark")
            for f in schema.fields
        }
        rw = rewrite(stmt, columns, types)
        content = self._df(rw.content)
        if not partitioned or rw.touched is None:
            return content, None
        return content, static_partitions(stmt, columns) or self._df(rw.touched)

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
        return conform(rows, schema)

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
        if cache:
            df = df.persist(StorageLevel.MEMORY_AND_DISK)
            df.count()  # materialize now: a snapshot, like a DuckDB TEMP table
        df.createOrReplaceTempView(name)
        self._temps[name] = df
        if old is not None:
            old.unpersist()

    def _stage_view(self, name: str, df: DataFrame) -> None:
        df.createOrReplaceTempView(name)
        self._views.add(name)

    def _publish_view(self, name: str) -> None:
        df = read_published(self.spark, self.store, name)
        if df is None:
            self._drop_view(name)
        else:
            self._stage_view(name, df)

    def _drop_view(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)
        self._views.discard(name)
