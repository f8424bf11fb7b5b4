"""Iceberg tables for the Spark engine: write-audit-publish with Iceberg's own branches.

The tables live in the contract's Iceberg catalog (``catalogs:``), opened by Spark's
Iceberg runtime as a ``JdbcCatalog`` on the same SQLite file or PostgreSQL database the
embedded engine's pyiceberg ``SqlCatalog`` uses (``iceberg_catalog.spark_conf``), in the
namespace ``outputs.namespace``. Every table carries ``write.wap.enabled=true``; one run:

1. **write** — the first change of a table in a transaction creates the branch
   ``sg-<tx>`` at its ``main`` snapshot (Iceberg's ``ManageSnapshots``); every DELETE,
   UPDATE, MERGE (the DLQ inbox's upsert on ``_dlq_sk``) and INSERT then runs natively in
   Spark SQL on ``<catalog>.<ns>.<table>.branch_sg-<tx>``; a rerun's DELETE of its
   logical date and INSERT replace that date on the branch. ``main`` does not move.
2. **audit** — the ledger, the facts and the gate read the branches (the engine's views
   point at them); a violation or a crash rolls back: the branches are removed, ``main``
   never moved, tables this run created are dropped.
3. **publish** — ``commit`` writes the journal (``<warehouse>/.sluicegate/iceberg/
   journal/<tx>.json``, the same shape the embedded engine's store writes: every table,
   its ``main`` snapshot before and the branch snapshot to publish) — the commit point —
   then fast-forwards ``main`` of each table to its branch with
   ``CALL <catalog>.system.fast_forward`` (which refuses when ``main`` moved meanwhile)
   and removes the branch. The run's snapshot rows (``_sluicegate_snapshots``) are
   published last. The snapshot ids the run record names are the branch heads: a
   fast-forward moves ``main`` to that very snapshot.

A reader of ``main`` mid-run sees every table as it was; between two tables'
fast-forwards it may see one table new and the next old (Iceberg commits per table),
and the run record, published last, names each table's snapshot for a consistent view.
``recover`` completes a journaled publish (tables whose branch still exists) and removes
branches and staging tables of dead processes; running it twice changes nothing.

A new table is created with an empty first snapshot on ``main`` (a branch needs one to
start from), partitioned by ``months(_logical_date)`` or ``months(logical_date)`` (the
fact tables by year/month, as the embedded engine does). A ``CREATE OR REPLACE`` of a
table with a new shape cannot be written on a branch (the schema is the table's, not
the branch's): it is staged in a hidden table ``<name>__sg-<tx>`` and published as one
``REPLACE TABLE … AS SELECT`` commit at ``commit``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..compile.render import ident, lit, render
from ..errors import SluiceError
from .delta_journal import ACTIVE, INTERNAL, PARTITION, new_tx_id, orphan
from .hadoop_fs import HadoopFS
from .iceberg_catalog import CatalogSpec, spark_conf
from .iceberg_store import BRANCH, FACT_DATE, _tx_of
from .spark_store import Fault, SparkStoreTx, SparkTableStore
from .storage import ICEBERG, SNAPSHOTS_TABLE, CommitResult, spark_uri

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Properties of every table sluicegate creates: Iceberg's write-audit-publish switch and
#: the format version pyiceberg, Trino and Spark all read and write.
TABLE_PROPERTIES = {"write.wap.enabled": "true", "format-version": "2"}
STAGE = "__" + BRANCH  # a staging table: <name>__sg-<tx>


@dataclass
class Staged:
    """One table a transaction touched: ``how`` is ``branch`` (written on the run's
    branch), ``stage`` (a new shape, in a staging table) or ``drop``."""

    name: str
    how: str
    before: int | None
    created: bool = False
    dirty: bool = False


class IcebergSparkStore(SparkTableStore):
    """The tables of one namespace of an Iceberg catalog, through Spark's Iceberg runtime."""

    format = "iceberg"
    capabilities = ICEBERG

    def __init__(self, spark: SparkSession, root: str, *, iceberg: tuple[CatalogSpec, str]) -> None:
        super().__init__(spark, spark_uri(root).rstrip("/"))
        spec, namespace = iceberg
        self.catalog = spec.name
        self.namespace = namespace
        # runtime settings of this (private) session: the JdbcCatalog named as in the
        # contract, uncached so that a table another engine committed is seen at once
        for k, v in {
            **spark_conf(spec),
            f"spark.sql.catalog.{spec.name}.cache-enabled": "false",
        }.items():
            spark.conf.set(k, v)
        self.fs = HadoopFS(spark, self.root)
        self.internal = f"{self.root}/{INTERNAL}/iceberg"
        spark.sql(
            render(
                exp.Create(
                    kind="SCHEMA",
                    exists=True,
                    this=exp.Table(db=ident(namespace), catalog=ident(spec.name)),
                ),
                "spark",
            )
        )

    # -- names --------------------------------------------------------------------------
    def table(self, name: str, branch: str | None = None, alias: str | None = None) -> exp.Table:
        """``catalog.ns.name`` (``.branch_<branch>``) as a sqlglot table."""
        this: exp.Expression = ident(name)
        if branch is not None:
            this = exp.Dot(this=this, expression=ident(f"branch_{branch}"))
        t = exp.Table(this=this, db=ident(self.namespace), catalog=ident(self.catalog))
        if alias:
            t.set("alias", exp.TableAlias(this=ident(alias)))
        return t

    def ident(self, name: str, branch: str | None = None) -> str:
        """The multi-part identifier Spark's DataFrame API takes."""
        return render(self.table(name, branch), "spark")

    def jtable(self, name: str) -> Any:
        """Iceberg's own Table object (py4j): snapshots, refs and branch management."""
        jvm = self.spark.sparkContext._jvm  # noqa: SLF001 - py4j gateway: Iceberg's Java API
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession,  # noqa: SLF001
            self.ident(name),
        )

    # -- published tables ---------------------------------------------------------------
    def _all_tables(self) -> list[str]:
        """Every table of the namespace, staging tables included (the session's temp
        views, which Spark's catalog lists too, left out)."""
        found = self.spark.catalog.listTables(f"{self.catalog}.{self.namespace}")
        return sorted(t.name for t in found if not t.isTemporary)

    def tables(self) -> list[str]:
        return [t for t in self._all_tables() if STAGE not in t]

    def exists(self, name: str) -> bool:
        return name in self._all_tables()

    def read(self, name: str, version: int | None = None) -> DataFrame | None:
        if not self.exists(name):
            return None
        reader = self.spark.read
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.table(self.ident(name))

    def version(self, name: str) -> int | None:
        if not self.exists(name):
            return None
        return main_snapshot(self.jtable(name))

    def refs(self, name: str) -> dict[str, int]:
        """Every branch and tag of the table and the snapshot it points at."""
        refs = self.jtable(name).refs()
        return {str(k): int(refs.get(k).snapshotId()) for k in refs.keySet()}

    def begin(self) -> IcebergSparkTx:
        return IcebergSparkTx(self)

    # -- branches and publishing --------------------------------------------------------
    def create_branch(self, name: str, branch: str) -> None:
        """The run's branch at ``main``'s snapshot (kept when the run already made it)."""
        t = self.jtable(name)
        if t.refs().containsKey(branch):
            return
        snap = t.currentSnapshot()
        ms = t.manageSnapshots()
        (
            ms.createBranch(branch, snap.snapshotId())
            if snap is not None
            else ms.createBranch(branch)
        ).commit()

    def remove_branch(self, name: str, branch: str) -> None:
        if self.exists(name) and branch in self.refs(name):
            self.jtable(name).manageSnapshots().removeBranch(branch).commit()

    def fast_forward(self, name: str, branch: str) -> None:
        """``CALL <catalog>.system.fast_forward``: main to the branch's head (refused by
        Iceberg unless main is an ancestor of it, i.e. nobody else moved main)."""
        call = exp.Dot.build(
            [
                ident(self.catalog),
                exp.to_identifier("system"),
                exp.Anonymous(
                    this="fast_forward",
                    expressions=[
                        exp.Kwarg(
                            this=exp.var("table"), expression=lit(f"{self.namespace}.{name}")
                        ),
                        exp.Kwarg(this=exp.var("branch"), expression=lit("main")),
                        exp.Kwarg(this=exp.var("to"), expression=lit(branch)),
                    ],
                ),
            ]
        )
        self.spark.sql(
            render(
                exp.Command(this="CALL", expression=exp.Literal.string(render(call, "spark"))),
                "spark",
            )
        )

    def create_table(self, name: str, content: DataFrame, *, replace: bool = False) -> None:
        """A new table (or ``REPLACE TABLE … AS SELECT``) partitioned by month of its date."""
        from pyspark.sql.functions import col
        from pyspark.sql.functions.partitioning import months

        w = content.writeTo(self.ident(name)).using("iceberg")
        for k, v in TABLE_PROPERTIES.items():
            w = w.tableProperty(k, v)
        for column in (PARTITION, FACT_DATE):
            if column in content.columns:
                w = w.partitionedBy(months(col(f"`{column}`")))
                break
        (w.createOrReplace() if replace else w.create())

    def drop_table(self, name: str) -> None:
        if self.exists(name):
            self.spark.sql(
                render(exp.Drop(kind="TABLE", exists=True, this=self.table(name)), "spark")
            )

    def publish(self, p: dict[str, Any], branch: str) -> int | None:
        """Publish one journaled table (idempotent: recovery runs it again); its snapshot."""
        name = p["name"]
        if p["how"] == "drop":
            self.drop_table(name)
            return None
        if p["how"] == "stage":
            staging = name + STAGE + branch[len(BRANCH) :]
            if self.exists(staging):
                self.create_table(name, self.spark.table(self.ident(staging)), replace=True)
                self.drop_table(staging)
            return self.version(name)
        if not self.exists(name):
            return None
        refs = self.refs(name)
        if branch in refs:
            if refs.get("main") != refs[branch]:
                self.fast_forward(name, branch)
            self.remove_branch(name, branch)
        return self.version(name)

    def recover(self) -> list[str]:
        done: list[str] = []
        journals = f"{self.internal}/journal"
        for file in self.fs.children(journals):
            if not file.endswith(".json"):
                continue
            doc = json.loads(self.fs.read_text(f"{journals}/{file}"))
            for p in doc["tables"]:
                self.publish(p, doc["branch"])
            self.fs.delete(f"{journals}/{file}")
            names = ", ".join(p["name"] for p in doc["tables"])
            done.append(f"completed an interrupted publish of {names} (transaction {doc['tx']})")
        for name in self._all_tables():
            if STAGE in name:
                if orphan(_tx_of(BRANCH + name.split(STAGE, 1)[1])):
                    self.drop_table(name)
                    done.append(f"removed the staging table {name} of an interrupted run")
                continue
            for ref in self.refs(name):
                if ref.startswith(BRANCH) and orphan(_tx_of(ref)):
                    self.remove_branch(name, ref)
                    done.append(f"removed the branch {ref} of an interrupted run from {name}")
        return done


def main_snapshot(jtable: Any) -> int:
    """The snapshot ``main`` points at (0: a table without snapshots)."""
    snap = jtable.currentSnapshot()
    return int(snap.snapshotId()) if snap is not None else 0


class IcebergSparkTx(SparkStoreTx):
    """One run's branch ``sg-<tx>`` on every table it changes (see the module docstring)."""

    def __init__(self, store: IcebergSparkStore) -> None:
        self.store = store
        self.spark = store.spark
        self.tx = new_tx_id()
        self.branch = BRANCH + self.tx.replace("~", "-")
        self.entries: dict[str, Staged] = {}
        ACTIVE.add(self.tx)

    def _staging(self, name: str) -> str:
        return name + STAGE + self.branch[len(BRANCH) :]

    def _where(self, e: Staged) -> tuple[str, str | None]:
        """(table, branch) holding ``e``'s staged rows."""
        return (self._staging(e.name), None) if e.how == "stage" else (e.name, self.branch)

    # -- reads --------------------------------------------------------------------------
    def frame(self, name: str) -> DataFrame | None:
        e = self.entries.get(name)
        if e is None:
            return self.store.read(name)
        if e.how == "drop":
            return None
        return self.spark.table(self.store.ident(*self._where(e)))

    def tables(self) -> list[str]:
        return list(self.entries)

    # -- writes -------------------------------------------------------------------------
    def _open(self, name: str) -> Staged:
        """Start writing ``name`` on the run's branch (it must exist)."""
        e = self.entries.get(name)
        if e is not None and e.how != "drop":
            return e
        if not self.store.exists(name):
            raise SluiceError(f"no table '{name}' in the Iceberg namespace {self.store.namespace}")
        self.store.create_branch(name, self.branch)
        before = self.store.version(name)
        e = Staged(name, "branch", before if e is None else e.before)
        self.entries[name] = e
        return e

    def create(self, name: str, content: DataFrame) -> None:
        old = self.entries.get(name)
        if old is not None and old.how == "stage":
            self.store.create_table(self._staging(name), content, replace=True)
            old.dirty = True
            return
        if not self.store.exists(name):
            self.store.create_table(name, content.limit(0))  # main: one empty snapshot
            self.store.create_branch(name, self.branch)
            e = Staged(name, "branch", None, created=True)
            self.entries[name] = e
        elif _same_shape(self.store.read(name), content):
            e = self._open(name)
        else:  # a new shape: a staging table, published as one REPLACE at commit
            before = old.before if old is not None else self.store.version(name)
            if old is not None and old.how == "branch":
                self.store.remove_branch(name, self.branch)
            self.store.create_table(self._staging(name), content, replace=True)
            self.entries[name] = Staged(name, "stage", before, dirty=True)
            return
        content.writeTo(self.store.ident(name, self.branch)).overwrite(_true())
        e.dirty = True

    def drop(self, name: str) -> None:
        old = self.entries.get(name)
        before = old.before if old is not None else self.store.version(name)
        if old is not None and old.how == "stage":
            self.store.drop_table(self._staging(name))
        self.entries[name] = Staged(
            name, "drop", before, created=bool(old and old.created), dirty=True
        )

    def target(self, name: str) -> exp.Table:
        table, branch = self._where(self._open(name))
        return self.store.table(table, branch, alias=name)

    def insert(self, name: str, rows: DataFrame, *, overwrite: bool = False) -> None:
        e = self._open(name)
        w = rows.writeTo(self.store.ident(*self._where(e)))
        (w.overwrite(_true()) if overwrite else w.append())
        e.dirty = True

    def changed(self, name: str) -> None:
        self.entries[name].dirty = True

    def staged_versions(self) -> dict[str, int]:
        """Each changed table's snapshot once published: its branch head (a fast-forward
        moves ``main`` to that very snapshot); a staged new shape gets its id only at
        commit (the staging table's head stands in)."""
        out: dict[str, int] = {}
        for e in self.entries.values():
            if not e.dirty or e.how == "drop":
                continue
            table, branch = self._where(e)
            refs = self.store.refs(table)
            out[e.name] = refs.get(branch or "main", 0)
        return out

    # -- commit -------------------------------------------------------------------------
    def commit(self, fault: Fault | None = None) -> CommitResult:
        result = CommitResult()
        dirty = [e for e in self.entries.values() if e.dirty]
        dirty.sort(key=lambda e: e.name == SNAPSHOTS_TABLE)  # the run's snapshot rows last
        heads = self.staged_versions()
        plan = [
            {"name": e.name, "how": e.how, "before": e.before, "target": heads.get(e.name)}
            for e in dirty
        ]
        for e in self.entries.values():  # touched, unchanged: nothing to publish
            if not e.dirty and e.how == "branch":
                self.store.remove_branch(e.name, self.branch)
        if plan:
            journal = f"{self.store.internal}/journal/{self.tx}.json"
            doc = {"tx": self.tx, "branch": self.branch, "tables": plan}
            self.store.fs.write_text(journal, json.dumps(doc, indent=1))
            if fault:
                fault("iceberg:journaled")
            for i, p in enumerate(plan):
                version = self.store.publish(p, self.branch)
                if version is not None:
                    result.versions[p["name"]] = version
                if fault and i == 0:
                    fault("iceberg:published_first")
            self.store.fs.delete(journal)
        ACTIVE.discard(self.tx)
        return result

    def rollback(self) -> None:
        """Remove the run's branches and staging tables, and the tables it created."""
        for e in self.entries.values():
            if e.created:
                self.store.drop_table(e.name)
            elif e.how == "stage":
                self.store.drop_table(self._staging(e.name))
            else:
                self.store.remove_branch(e.name, self.branch)
        ACTIVE.discard(self.tx)


def _true() -> Any:
    from pyspark.sql import functions as F

    return F.lit(True)


def _same_shape(table: DataFrame | None, content: DataFrame) -> bool:
    """Same column names in order and the same types (nullability aside)."""
    if table is None:
        return False
    a = [(f.name, f.dataType.simpleString()) for f in table.schema.fields]
    b = [(f.name, f.dataType.simpleString()) for f in content.schema.fields]
    return a == b
