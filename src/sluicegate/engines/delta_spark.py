"""Delta Lake tables for the Spark engine: stage on a shallow clone, publish one commit per table.

Layout (``docs/lakehouse.md``)::

    <warehouse>/<table>/_delta_log/...              every output: a Delta table
    <warehouse>/.sluicegate/delta/staging/<tx>/<t>/ a transaction's shadow of table t
    <warehouse>/.sluicegate/delta/journal/<tx>.json the publish list of a committing tx

Delta commits one table at a time, and sluicegate's publish changes several (clean,
quarantine, duplicates, facts, the run record ...) after auditing what it wrote. So a
transaction works on *shadows*:

1. the first change to table ``t`` makes a ``SHALLOW CLONE`` of it (metadata only: the
   clone's log points at ``t``'s files) with the change data feed on; Delta runs the
   DELETE / UPDATE / MERGE / INSERT natively on the clone, and reads inside the
   transaction (the ledger's read-back) read the clone. ``t`` is untouched.
2. ``commit`` writes the journal — the tables, their versions before, how each is
   published and a marker naming the transaction: **the commit point** — then publishes
   each table with ONE Delta commit carrying the marker as ``userMetadata``:
   ``replaceWhere`` of the ``_logical_date`` values the clone's change feed names (date
   tables), ``MERGE`` on ``_dlq_sk`` changing only rows that differ (the DLQ tables:
   their change feed shows real updates), or a whole overwrite (other tables).
3. the journal and the shadows are deleted.

A table the transaction creates (it did not exist before) whose shadow holds exactly one
commit — written whole, carrying the marker — is published by **renaming** the shadow's
folder into place on a warehouse where a rename is atomic (a local disk, HDFS): the
table appears in one step with that one commit, and its rows are not written twice (on
a first run that is every output; the clean and fact tables are ~1M rows at 1M lines).
To keep such shadows at one commit, a table created empty (``CREATE TABLE … AS SELECT …
WHERE FALSE``) is not written until its first INSERT, which then writes it whole; a
DELETE or UPDATE on it until then changes nothing and does not run. On S3 the shadow is
copied as before.

A crash before step 2's journal leaves every table as it was (the next open removes the
shadows of a dead process). A crash after it leaves a journal: the next open publishes
every table whose history has no commit with the marker yet — from the same shadows — so
the commit completes exactly once, however often recovery itself is interrupted.

A reader sees each table change in one step (Delta's snapshot isolation per table);
between two tables' commits it may see one table new and the next old. The run record,
published last, names the version of every table the run published
(``_sluicegate_snapshots``): time-travel each table to that version for one run's
consistent view.

File operations go through Hadoop's FileSystem, so the warehouse may be ``s3a://``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..compile.render import col, ident, render
from .delta_journal import (
    ACTIVE,
    CDF,
    INTERNAL,
    KEY,
    MARKER,
    PARTITION,
    RECORDS,
    Entry,
    in_dates,
    new_tx_id,
    orphan,
)
from .hadoop_fs import HadoopFS
from .side_by_side import side_by_side
from .spark_empty import empty_frame
from .spark_store import Fault, SparkStoreTx, SparkTableStore
from .storage import DELTA, CommitResult, spark_uri

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

_ACTIVE = ACTIVE  # tests clear it to play a crashed process


class DeltaStore(SparkTableStore):
    """Delta tables under one warehouse root (a folder or an ``s3a://`` URI)."""

    format = "delta"
    capabilities = DELTA

    def __init__(self, spark: SparkSession, root: str) -> None:
        super().__init__(spark, spark_uri(root).rstrip("/"))
        self.fs = HadoopFS(spark, self.root)
        self.internal = f"{self.root}/{INTERNAL}/delta"

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def is_table(self, path: str) -> bool:
        return self.fs.exists(f"{path}/_delta_log")

    def tables(self) -> list[str]:
        return [
            n
            for n in self.fs.children(self.root)
            if not n.startswith(".") and self.is_table(self.path(n))
        ]

    def read(self, name: str, version: int | None = None) -> DataFrame | None:
        if not self.is_table(self.path(name)):
            return None
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self.path(name))

    def version(self, name: str) -> int | None:
        if not self.is_table(self.path(name)):
            return None
        return table_version(self.spark, self.path(name))

    def begin(self) -> DeltaTx:
        return DeltaTx(self)

    def change_feed(self, name: str) -> list[dict[str, Any]]:
        """The table's change data feed from version 0 (Delta's ``readChangeFeed``)."""
        df = (
            self.spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", 0)
            .load(self.path(name))
        )
        rows = [r.asDict(recursive=True) for r in df.collect()]
        rows.sort(key=lambda r: r["_commit_version"])
        return rows

    # -- recovery -----------------------------------------------------------------------
    def recover(self) -> list[str]:
        done: list[str] = []
        journals = f"{self.internal}/journal"
        for file in self.fs.children(journals):
            if not file.endswith(".json"):
                continue
            doc = json.loads(self.fs.read_text(f"{journals}/{file}"))
            entries = [Entry(**e) for e in doc["entries"]]
            published = []
            for e in entries:
                if not _published(self, e, doc["marker"]):
                    _publish(self, e, doc["marker"])
                    published.append(e.name)
            self.fs.delete(f"{journals}/{file}")
            self.fs.delete(f"{self.internal}/staging/{doc['tx']}")
            done.append(
                f"completed an interrupted publish of {', '.join(e.name for e in entries)} "
                f"(transaction {doc['tx']}; published now: {', '.join(published) or 'none'})"
            )
        for tx in self.fs.children(f"{self.internal}/staging"):
            if orphan(tx):
                self.fs.delete(f"{self.internal}/staging/{tx}")
                done.append(f"removed the staging of an interrupted run ({tx})")
        return done


class DeltaTx(SparkStoreTx):
    """Shadows of the tables one transaction changes (see the module docstring)."""

    def __init__(self, store: DeltaStore) -> None:
        self.store = store
        self.spark = store.spark
        self.tx = new_tx_id()
        self.folder = f"{store.internal}/staging/{self.tx}"
        self.entries: dict[str, Entry] = {}
        self.marker = MARKER + self.tx
        #: tables created empty and not written yet: their schema (see the module docstring)
        self._empty: dict[str, Any] = {}
        #: new tables whose shadow holds one commit, with the marker: published by a rename
        self._single: set[str] = set()
        self._n = 0
        _ACTIVE.add(self.tx)

    def _shadow_path(self, name: str) -> str:
        self._n += 1
        return f"{self.folder}/{name}.{self._n}"

    # -- reads --------------------------------------------------------------------------
    def frame(self, name: str) -> DataFrame | None:
        e = self.entries.get(name)
        if e is None:
            return self.store.read(name)
        if e.how == "drop":
            return None
        if name in self._empty:
            return empty_frame(self.spark, self._empty[name])
        return self.spark.read.format("delta").load(e.shadow)

    def tables(self) -> list[str]:
        return list(self.entries)

    def exists(self, name: str) -> bool:
        """Without loading the shadow (each load reads its log)."""
        e = self.entries.get(name)
        return e.how != "drop" if e is not None else self.store.is_table(self.store.path(name))

    def known_empty(self, name: str) -> bool:
        return name in self._empty

    # -- writes -------------------------------------------------------------------------
    def create(self, name: str, content: DataFrame) -> None:
        self._create(name, content, observed=None)

    def create_counted(self, name: str, content: DataFrame) -> int | None:
        """The shadow's one write counts its rows as it passes them (an ``Observation``
        on the write's only action): the count a first read of the new table would give,
        without that read (0.5-0.85 s per table on a 1M-line run)."""
        from pyspark.sql import Observation

        seen = Observation()
        return self._create(name, content, observed=seen)

    def _create(self, name: str, content: DataFrame, *, observed: Observation | None) -> int | None:
        """Stage ``content`` as ``name``'s shadow; with an ``Observation``, the rows
        written (0 for a plan Spark proved empty: nothing runs, nothing is written)."""
        before = self._before(name)
        shadow = self._shadow_path(name)
        self._single.discard(name)
        self._empty.pop(name, None)
        self.entries[name] = Entry(name, shadow, before, "replace", True, tuple(content.columns))
        if _is_empty_plan(content):
            self._empty[name] = content.schema
            return 0
        if observed is None:
            self._write_whole(name, content)
            return None
        from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

        self._write_whole(name, content.observe(observed, F.count(F.lit(1)).alias("rows")))
        return int(observed.get["rows"])

    def _write_whole(self, name: str, content: DataFrame) -> None:
        """The shadow's one commit: ``content`` whole, with the marker (and, for a DLQ
        table, the change data feed its publish would give it)."""
        w = _writer(content, "overwrite").option("userMetadata", self.marker)
        if KEY in content.columns:
            w = w.options(**CDF)
        w.save(self.entries[name].shadow)
        if self.entries[name].before is None:
            self._single.add(name)

    def _materialize(self, name: str) -> None:
        """Write a table created empty, so DML can run on it."""
        schema = self._empty.pop(name, None)
        if schema is not None:
            self._write_whole(name, empty_frame(self.spark, schema))

    def drop(self, name: str) -> None:
        before = self._before(name)
        self._empty.pop(name, None)
        self._single.discard(name)
        self.entries[name] = Entry(name, "", before, "drop", True)

    def target(self, name: str) -> exp.Table:
        e = self.entries.get(name)
        if e is None:
            e = self.entries[name] = self._clone(name, self._shadow_path(name))
        self._materialize(name)
        return _path_table(e.shadow, name)

    def prepare(self, names: Sequence[str]) -> None:
        """Clone the existing tables of ``names`` this transaction has not staged yet, side
        by side: each clone reads the table's log, writes the shadow's and reads it back
        (~3 CPU s, mostly the driver's, with gaps between its steps); one after the other a
        daily run's seven would cost their sum, side by side they fill each other's gaps."""
        todo = [
            n
            for n in dict.fromkeys(names)
            if n not in self.entries and self.store.is_table(self.store.path(n))
        ]
        shadows = {n: self._shadow_path(n) for n in todo}  # numbered here, in one thread
        staged = side_by_side([lambda n=n: self._clone(n, shadows[n]) for n in todo])
        for e in staged:
            self.entries[e.name] = e

    def _clone(self, name: str, shadow: str) -> Entry:
        """Stage the existing table ``name`` as a shallow clone at ``shadow`` (its change
        data feed on: the publish asks it which dates changed)."""
        path = self.store.path(name)
        before = table_version(self.spark, path)
        _jvm_table(self.spark, path).clone(
            shadow, True, False, {"delta.enableChangeDataFeed": "true"}
        )
        columns = tuple(self.spark.read.format("delta").load(shadow).columns)
        how = "key" if KEY in columns else "dates" if PARTITION in columns else "whole"
        return Entry(name, shadow, before, how, False, columns)

    def insert(self, name: str, rows: DataFrame, *, overwrite: bool = False) -> None:
        if name in self._empty:  # created empty: these rows are its one commit
            del self._empty[name]
            self._write_whole(name, rows)
            return
        self.target(name)
        e = self.entries[name]
        _writer(rows, "overwrite" if overwrite else "append").save(e.shadow)
        self._single.discard(name)
        e.dirty = True
        e.dates = None

    def changed(self, name: str) -> None:
        self._single.discard(name)
        self.entries[name].dirty = True
        self.entries[name].dates = None

    def staged_versions(self) -> dict[str, int]:
        """Each changed table's version after commit; a date table whose change feed
        names no date is not published and keeps its version."""
        out = {}
        for e in self.entries.values():
            if not e.dirty or e.how == "drop":
                continue
            self._plan(e)
            changes = e.how != "dates" or bool(e.dates)
            out[e.name] = (e.before + 1 if changes else e.before) if e.before is not None else 0
        return out

    def _plan(self, e: Entry) -> None:
        """The dates a date table's publish replaces (from the shadow's change feed)."""
        if e.how == "dates" and e.dates is None:
            e.dates = [
                str(d) if d is not None else None for d in changed_dates(self.spark, e.shadow)
            ]

    def _before(self, name: str) -> int | None:
        if name in self.entries:
            return self.entries[name].before
        return self.store.version(name)

    # -- commit -------------------------------------------------------------------------
    def commit(self, fault: Fault | None = None) -> CommitResult:
        """Journal the publish, then publish each changed table with one commit.

        The first table alone (a crash test stops right after it); then the outputs side
        by side (each publish is a few small Delta operations on its own table); then the records (``_sluicegate_*``: the run record, the file
        ledger, the snapshots) one by one in the order the run changed them, so a reader
        who sees the run record finds every output it names already published."""
        for name in list(self._empty):  # still empty: published as an empty table
            self._materialize(name)
        entries = [e for e in self.entries.values() if e.dirty]
        marker = self.marker
        result = CommitResult()
        side_by_side([lambda e=e: self._plan(e) for e in entries])
        entries = [e for e in entries if e.how != "dates" or e.dates]
        if entries:
            doc = {"tx": self.tx, "marker": marker, "entries": [asdict(e) for e in entries]}
            self.store.fs.write_text(
                f"{self.store.internal}/journal/{self.tx}.json", json.dumps(doc, indent=1)
            )
            if fault:
                fault("delta:journaled")
            expected = self.staged_versions()

            def publish(e: Entry) -> None:
                version = _publish(self.store, e, marker, move=e.name in self._single)
                if version is not None:
                    result.versions[e.name] = version
                    if expected.get(e.name) not in (None, version):
                        result.notices.append(
                            f"{e.name}: published as version {version}, not "
                            f"{expected[e.name]} (another writer committed in between)"
                        )

            first, rest = entries[0], entries[1:]
            records = [e for e in rest if e.name.startswith(RECORDS)]
            with commit_metadata(self.spark, marker):
                publish(first)
                if fault:
                    fault("delta:published_first")
                side_by_side([lambda e=e: publish(e) for e in rest if e not in records])
                for e in records:
                    publish(e)
            self.store.fs.delete(f"{self.store.internal}/journal/{self.tx}.json")
        self._cleanup()
        return result

    def rollback(self) -> None:
        self._cleanup()

    def _cleanup(self) -> None:
        _ACTIVE.discard(self.tx)
        self.store.fs.delete(self.folder)


@contextmanager
def commit_metadata(spark: SparkSession, marker: str) -> Iterator[None]:
    """Every Delta commit in the block carries ``marker`` as ``userMetadata`` (a SQL
    MERGE has no writer option for it). Set once around a commit's publishes, not per
    table: one thread unsetting it would strip it from another's MERGE. Nested: kept."""
    key = "spark.databricks.delta.commitInfo.userMetadata"
    if spark.conf.get(key, None) == marker:
        yield
        return
    spark.conf.set(key, marker)
    try:
        yield
    finally:
        spark.conf.unset(key)


# -- publishing one table ------------------------------------------------------------------
def _writer(df: DataFrame, mode: str):  # noqa: ANN202 - pyspark DataFrameWriter
    # static: the session pins dynamic partition overwrite for Parquet exports; a Delta
    # overwrite here replaces exactly what replaceWhere (or the whole table) says
    w = df.write.format("delta").mode(mode).option("partitionOverwriteMode", "static")
    if PARTITION in df.columns:
        w = w.partitionBy(PARTITION)
    return w


def _publish(store: DeltaStore, e: Entry, marker: str, *, move: bool = False) -> int | None:
    """Publish one staged table with one Delta commit carrying ``marker``; its version.

    ``move``: the shadow is a new table's only commit, written with ``marker``; where a
    rename is atomic it becomes the table as it is. (Recovery never moves: it copies.)"""
    spark = store.spark
    path = store.path(e.name)
    if e.how == "drop":
        store.fs.delete(path)
        return None
    if (
        move
        and e.before is None
        and store.fs.renames_atomically
        and store.fs.rename(e.shadow, path)
    ):
        return 0  # the shadow's one commit, now the table's: no history read needed
    shadow = spark.read.format("delta").load(e.shadow)
    if e.how == "replace" or e.before is None:
        w = _writer(shadow, "overwrite").option("overwriteSchema", "true")
        if KEY in shadow.columns:  # a DLQ table: with its change data feed (delta_journal)
            w = w.options(**CDF)
        w.option("userMetadata", marker).save(path)
        return table_version(spark, path)
    if e.how == "dates":
        dates = e.dates if e.dates is not None else changed_dates(spark, e.shadow)
        if not dates:
            return None
        cond = render(in_dates(dates), "spark")
        w = _writer(shadow.where(cond), "overwrite").option("replaceWhere", cond)
        w.option("userMetadata", marker).save(path)
        return table_version(spark, path)
    if e.how == "key" and _unique_keys(shadow):
        with commit_metadata(spark, marker):  # a SQL MERGE takes it from the session only
            spark.sql(render(_merge(path, e.shadow, list(shadow.columns)), "spark"))
        return table_version(spark, path)
    _writer(shadow, "overwrite").option("userMetadata", marker).save(path)
    return table_version(spark, path)


def _published(store: DeltaStore, e: Entry, marker: str) -> bool:
    """Did a commit with ``marker`` already publish ``e`` (recovery's idempotence test)?"""
    path = store.path(e.name)
    if e.how == "drop":
        return not store.fs.exists(path)
    if not store.is_table(path):
        return False
    rows = _jvm_history(store.spark, path).select("version", "userMetadata")
    after = e.before if e.before is not None else -1
    return any(r[0] > after and r[1] == marker for r in rows.collect())


def _is_empty_plan(df: DataFrame) -> bool:
    """Spark's optimizer proved ``df`` has no rows (``WHERE FALSE``, ``LIMIT 0``): its
    plan is an empty local relation. Nothing is run; False when the plan is out of
    reach (Spark Connect)."""
    try:
        plan = df._jdf.queryExecution().optimizedPlan()  # noqa: SLF001 - py4j
        return plan.getClass().getSimpleName() == "LocalRelation" and bool(plan.data().isEmpty())
    except Exception:  # noqa: BLE001
        return False


def _path_table(path: str, alias: str) -> exp.Table:
    """``delta.`path` AS alias``."""
    return exp.Table(
        this=exp.Identifier(this=path, quoted=True),
        db=exp.Identifier(this="delta"),
        alias=exp.TableAlias(this=ident(alias)),
    )


def _merge(path: str, shadow: str, columns: list[str]) -> exp.Merge:
    """MERGE the shadow into the table on ``_dlq_sk``: insert new keys, update only rows
    that differ (null-safe), delete keys the shadow no longer has."""
    same = exp.and_(*[exp.NullSafeEQ(this=col(c, "t"), expression=col(c, "s")) for c in columns])
    whens = [
        exp.When(
            matched=True,
            condition=exp.Not(this=exp.paren(same)),
            then=exp.Update(
                expressions=[exp.EQ(this=col(c), expression=col(c, "s")) for c in columns]
            ),
        ),
        exp.When(
            matched=False,
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(c) for c in columns]),
                expression=exp.Tuple(expressions=[col(c, "s") for c in columns]),
            ),
        ),
        exp.When(matched=False, source=True, then=exp.var("DELETE")),
    ]
    return exp.Merge(
        this=_path_table(path, "t"),
        using=_path_table(shadow, "s"),
        on=exp.EQ(this=col(KEY, "t"), expression=col(KEY, "s")),
        whens=exp.Whens(expressions=whens),
    )


def _unique_keys(shadow: DataFrame) -> bool:
    """A keyed MERGE is right only where ``_dlq_sk`` names one row (the inbox, the outbox);
    the audit trail holds a row per change of a key, so it is published whole instead
    (a MERGE would stop on DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE)."""
    return shadow.groupBy(KEY).count().where("count > 1").limit(1).count() == 0


def changed_dates(spark: SparkSession, shadow: str) -> list:
    """The ``_logical_date`` values the shadow's change feed names since it was cloned.

    A table marked changed whose statements committed nothing (a rerun's DELETE of rows
    that are not there) has no version 1: the feed would refuse to start there."""
    if table_version(spark, shadow) < 1:
        return []
    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(shadow)
    )
    return [r[0] for r in changes.select(PARTITION).distinct().collect()]


def _jvm_table(spark: SparkSession, path: str):  # noqa: ANN202 - io.delta.tables.DeltaTable
    """Delta's own table API (the jar's Scala class; the delta-spark PyPI wrapper is not
    needed for history and clone)."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    return jvm.io.delta.tables.DeltaTable.forPath(spark._jsparkSession, path)  # noqa: SLF001


def _jvm_history(spark: SparkSession, path: str, limit: int | None = None) -> DataFrame:
    from pyspark.sql import DataFrame as PyDataFrame

    t = _jvm_table(spark, path)
    return PyDataFrame(t.history(limit) if limit else t.history(), spark)


def table_version(spark: SparkSession, path: str) -> int:
    """The latest version of the Delta table at ``path``: from its log brought up to date
    (:func:`log_version`), else from its history (a Spark job: ~0.2 s warm, ~0.5 s cold;
    a daily run asks ~20 times)."""
    try:
        version = log_version(spark, path)
    except Exception:  # noqa: BLE001 - another Delta release's signature: ask the history
        version = -1
    if version >= 0:
        return version
    return int(_jvm_history(spark, path, 1).select("version").collect()[0][0])


def log_version(spark: SparkSession, path: str) -> int:
    """``DeltaLog.update().version`` of ``path``: a listing of its ``_delta_log`` (~10 ms),
    the same answer as its history's latest entry; -1 where no table is (the history then
    raises, as it always did)."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession,  # noqa: SLF001
        jvm.org.apache.hadoop.fs.Path(path),
    )
    none = jvm.scala.Option.empty()
    return int(log.update(False, none, none).version())
