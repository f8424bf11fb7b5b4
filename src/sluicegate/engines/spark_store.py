"""The Spark side of the storage seam: what a table format must do for the Spark engine.

``SparkEngine`` computes; a :class:`SparkTableStore` keeps its durable tables. The engine
hands a store whole statements' worth of work — "this table is now this DataFrame", "run
this DELETE / UPDATE / MERGE / INSERT on it" — inside a :class:`SparkStoreTx`, and the
store decides how its format stages and publishes them. Delta is ``delta_spark.py``;
an Iceberg store implements the same two classes (its DML also runs natively in Spark
SQL), looked up by ``spark_formats.store_class``.

The contract every store keeps (tests/engines/conformance/test_storage.py):

* reads inside a transaction see its own writes; nothing is visible to other readers
  before ``commit``; ``rollback`` leaves every table as it was;
* ``commit`` publishes each changed table and returns the version each now has;
* a crash at any point of a commit is repaired by the next ``recover`` (completed or
  undone, never half), and running ``recover`` twice changes nothing the second time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from .storage import CommitResult, StorageCapabilities

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Fault = Callable[[str], None]


class SparkStoreTx(ABC):
    """One open transaction of a store: staged tables, published at ``commit``."""

    @abstractmethod
    def frame(self, name: str) -> DataFrame | None:
        """``name``'s content as this transaction sees it (None: no such table)."""

    @abstractmethod
    def create(self, name: str, content: DataFrame) -> None:
        """CREATE OR REPLACE ``name`` as ``content``."""

    def create_counted(self, name: str, content: DataFrame) -> int | None:
        """:meth:`create`, and the rows written when the write itself counted them
        (None: the caller counts the table)."""
        self.create(name, content)
        return None

    @abstractmethod
    def drop(self, name: str) -> None: ...

    @abstractmethod
    def target(self, name: str) -> exp.Table:
        """The table DML may change in place (the staged copy, never the published
        table), aliased ``name`` so the statement's qualified columns still resolve."""

    @abstractmethod
    def insert(self, name: str, rows: DataFrame, *, overwrite: bool = False) -> None:
        """Append ``rows`` (already in the table's columns and types), or replace all."""

    @abstractmethod
    def changed(self, name: str) -> None:
        """Note that a DML statement ran on ``target(name)``."""

    @abstractmethod
    def tables(self) -> list[str]:
        """The tables this transaction touched (created, changed or dropped)."""

    def exists(self, name: str) -> bool:
        """Whether ``name`` is a table in this transaction (it may cost a read)."""
        return self.frame(name) is not None

    def prepare(self, names: Sequence[str]) -> None:  # noqa: B027 - a hint: may do nothing
        """The transaction is about to change these tables (see :meth:`Engine.will_change`):
        a store that stages each changed table may stage them now, together."""

    def known_empty(self, name: str) -> bool:  # noqa: ARG002 - a store may know more
        """``name`` holds no rows in this transaction, known without reading it (a DELETE
        or UPDATE on it changes nothing and need not run). False when unsure."""
        return False

    @abstractmethod
    def staged_versions(self) -> dict[str, int]:
        """The version each changed table will have once committed."""

    @abstractmethod
    def commit(self, fault: Fault | None = None) -> CommitResult: ...

    @abstractmethod
    def rollback(self) -> None: ...


class SparkTableStore(ABC):
    """The durable tables of one warehouse in one format."""

    format: str
    capabilities: StorageCapabilities

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self.root = root

    @abstractmethod
    def tables(self) -> list[str]:
        """Published tables, sorted."""

    @abstractmethod
    def read(self, name: str, version: int | None = None) -> DataFrame | None:
        """A published table (as of ``version``), or None."""

    @abstractmethod
    def version(self, name: str) -> int | None:
        """The table's current version (None: no such table)."""

    @abstractmethod
    def recover(self) -> list[str]:
        """Repair an interrupted commit; say what was done (idempotent)."""

    @abstractmethod
    def begin(self) -> SparkStoreTx: ...

    def change_feed(self, name: str) -> list[dict[str, Any]]:
        """Row-level changes since creation (``Engine.change_feed``); formats with a
        change feed override it."""
        raise NotImplementedError(f"the {self.format} format keeps no change feed")
