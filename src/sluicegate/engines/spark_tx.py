"""A Spark engine transaction: every change staged as Parquet, swapped in at commit.

Each table a transaction changes becomes a :class:`StagedTable`: the published folder
(the base) plus an *overlay* of ``_logical_date`` partition folders written by this
transaction. A statement's new content is written at once for the partitions it touches
(``spark_dml`` says which), so reads inside the transaction — the ledger's read-back —
come from written Parquet files, as they do from DuckDB's tables. Tables without a
``_logical_date`` column, and tables created in the transaction, are written whole.

:meth:`Transaction.commit` turns the overlays into :class:`SwapOp` renames and hands them
to :meth:`Warehouse.publish` (journal, then swap); :meth:`Transaction.rollback` deletes
the staging folder. Nothing published changes before the commit.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from .spark_lines import spark_path
from .spark_warehouse import NULL_PARTITION, PARTITION, SwapOp, Warehouse, partition_name


def nullable(schema: StructType) -> StructType:
    """Every column and nested field nullable.

    Literals make Spark infer NOT NULL (a struct of literal strings in ``_failed_rules``),
    which Parquet would then pin, and a later insert of a NULL-able value could not be
    cast to it. DuckDB's tables are nullable throughout; so are these.
    """
    return StructType(
        [StructField(f.name, _nullable_type(f.dataType), True) for f in schema.fields]
    )


def _nullable_type(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return nullable(t)
    if isinstance(t, ArrayType):
        return ArrayType(_nullable_type(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(_nullable_type(t.keyType), _nullable_type(t.valueType), True)
    return t


def conform(df: DataFrame, schema: StructType) -> DataFrame:
    """``df``'s columns, by name, cast to ``schema``'s types, in ``schema``'s order."""
    return df.select(*[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in schema.fields])


def in_partitions(keys: Iterable[str]) -> Column:
    """Rows whose ``_logical_date`` folder is one of ``keys``."""
    values, null = [], False
    for k in keys:
        v = k.split("=", 1)[1]
        if v == NULL_PARTITION:
            null = True
        else:
            values.append(v)
    cond = F.col(PARTITION).cast("string").isin(values) if values else F.lit(False)
    return cond | F.col(PARTITION).isNull() if null else cond


def read_folder(spark: SparkSession, folder: Path, schema: StructType) -> DataFrame:
    """A Parquet folder (partitioned or not) read with its declared schema and order."""
    df = spark.read.schema(schema).parquet(spark_path(str(folder)))
    return df.select(*[F.col(f"`{f.name}`") for f in schema.fields])


def read_published(spark: SparkSession, store: Warehouse, name: str) -> DataFrame | None:
    meta = store.read_meta(name)
    if meta is None:
        return None
    schema = StructType.fromJson(meta["schema"])
    return read_folder(spark, store.table_path(name), schema)


@dataclass
class StagedTable:
    """One table as this transaction sees it: base + overlay, or written whole."""

    name: str
    schema: StructType
    base: Path | None
    overlay: dict[str, Path | None] = field(default_factory=dict)
    whole: Path | None = None
    dropped: bool = False
    versions: int = 0

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    @property
    def partitioned(self) -> bool:
        return PARTITION in self.columns

    def frame(self, spark: SparkSession) -> DataFrame:
        """The table's current content inside the transaction."""
        empty = spark.createDataFrame([], self.schema)
        if not self.partitioned:
            folder = self.whole or self.base
            return read_folder(spark, folder, self.schema) if folder else empty
        parts: list[DataFrame] = []
        if self.base is not None:
            base = read_folder(spark, self.base, self.schema)
            if self.overlay:
                base = base.where(~in_partitions(self.overlay))
            parts.append(base)
        by_version: dict[Path, list[str]] = {}
        for path in self.overlay.values():
            if path is not None:
                by_version.setdefault(path.parent, []).append(spark_path(str(path)))
        for version, paths in sorted(by_version.items()):
            df = spark.read.schema(self.schema).option("basePath", str(version)).parquet(*paths)
            parts.append(df.select(*[F.col(f"`{c}`") for c in self.columns]))
        if not parts:
            return empty
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out

    def write(self, tx: Path, content: DataFrame, touched: DataFrame | list[str] | None) -> bool:
        """Stage ``content`` for the partitions in ``touched`` (all when None); False if none.

        ``touched`` lists the dates, or is a query whose rows name them.
        """
        content = conform(content, self.schema)
        self.versions += 1
        out = tx / self.name / f"v{self.versions}"
        if not self.partitioned:
            content.write.mode("errorifexists").parquet(spark_path(str(out)))
            self.whole = out
            return True
        if touched is None:
            keys = None
            data = content
        else:
            if isinstance(touched, list):
                values: list = touched
            else:
                values = [r[0] for r in touched.distinct().collect()]
            if not values:
                return False
            keys = [partition_name(v) for v in values]
            data = content.where(in_partitions(keys))
        data.write.mode("errorifexists").partitionBy(PARTITION).parquet(spark_path(str(out)))
        if keys is None:  # the whole table: the base no longer counts
            self.base = None
            self.overlay = {}
            keys = [p.name for p in out.glob(f"{PARTITION}=*") if p.is_dir()]
        for k in keys:
            p = out / k
            self.overlay[k] = p if p.is_dir() else None
        return True

    def swap_ops(self, tx: Path, existed: bool, store: Warehouse) -> list[SwapOp]:
        """The renames that publish this table (see :class:`Warehouse`)."""
        if self.dropped:
            return [SwapOp(self.name, None, None)] if existed else []
        if self.versions == 0:
            return []  # only read
        if self.partitioned and self.base is not None:
            return [
                SwapOp(self.name, k, str(p.relative_to(tx)) if p is not None else None)
                for k, p in sorted(self.overlay.items())
            ]
        final = tx / self.name / "final"
        if self.partitioned:
            final.mkdir(parents=True, exist_ok=True)
            for k, p in sorted(self.overlay.items()):
                if p is not None:
                    os.rename(p, final / k)
        elif self.whole is not None:
            os.rename(self.whole, final)
        else:
            final.mkdir(parents=True, exist_ok=True)
        store.write_meta(final, self.schema.json(), self.columns)
        return [SwapOp(self.name, None, str(final.relative_to(tx)))]


class Transaction:
    """The staged tables of one open transaction."""

    def __init__(self, spark: SparkSession, store: Warehouse) -> None:
        self.spark = spark
        self.store = store
        self.tx = store.new_tx()
        self.tables: dict[str, StagedTable] = {}
        self.existed: dict[str, bool] = {}

    def staged(self, name: str) -> StagedTable | None:
        """The table as staged, staging it from the published folder on first use."""
        if name in self.tables:
            return None if self.tables[name].dropped else self.tables[name]
        meta = self.store.read_meta(name)
        if meta is None:
            return None
        self.existed[name] = True
        st = StagedTable(name, StructType.fromJson(meta["schema"]), self.store.table_path(name))
        self.tables[name] = st
        return st

    def create(self, name: str, content: DataFrame) -> StagedTable:
        """CREATE OR REPLACE: the table becomes ``content``, written whole."""
        if name not in self.existed:
            self.existed[name] = self.store.read_meta(name) is not None
        st = StagedTable(name, nullable(content.schema), base=None)
        self.tables[name] = st
        st.write(self.tx, content, None)
        return st

    def drop(self, name: str) -> None:
        st = self.staged(name)
        if st is not None:
            st.dropped = True

    def commit(self, fault: Callable[[str], None] | None = None) -> list[str]:
        """Publish every staged table; returns the names of the tables that changed."""
        ops: list[SwapOp] = []
        for name, st in self.tables.items():
            ops += st.swap_ops(self.tx, self.existed.get(name, False), self.store)
        self.store.publish(self.tx, ops, fault=fault)
        return list(self.tables)

    def rollback(self) -> None:
        self.store.discard(self.tx)
