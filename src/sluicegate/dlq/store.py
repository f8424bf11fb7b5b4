"""An opened DLQ: the contract, its warehouse engine and table names, and the read queries.

Operator commands (``sluicegate dlq …``) work on the warehouse a run published, so the
store refuses to open one that has no inbox yet, with a hint to run the contract first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from ..compile.render import col, ident, lit
from ..contract.loader import LoadedContract
from ..engines import Engine
from ..errors import UsageError
from ..workspace import Access, Workspace, open_engine_for
from .tables import STATUSES, DlqTables

#: How long an operator command waits for a publishing run to release the warehouse.
WAIT_SECONDS = 30.0


@dataclass
class DlqStore:
    """One contract's DLQ on its warehouse."""

    loaded: LoadedContract
    engine: Engine
    tables: DlqTables
    partitions: list[str]

    @property
    def contract(self):  # noqa: ANN201 - the Contract model
        return self.loaded.contract

    @property
    def declared(self) -> list[str]:
        return list(self.contract.source.columns)

    def data_columns(self) -> list[str]:
        """Partition columns then declared columns: the inbox's leading columns."""
        return self.partitions + self.declared

    # -- reads -------------------------------------------------------------------------
    def rows(
        self,
        *,
        status: str | None = None,
        reason: str | None = None,
        sk: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Inbox rows, oldest lineage first, optionally filtered."""
        conds: list[exp.Expression] = []
        if status is not None:
            conds.append(exp.EQ(this=col("_dlq_status"), expression=lit(status)))
        if reason is not None:
            conds.append(exp.EQ(this=col("_reason"), expression=lit(reason)))
        if sk is not None:
            conds.append(exp.EQ(this=col("_dlq_sk"), expression=lit(sk)))
        q = exp.select(exp.Star()).from_(exp.Table(this=ident(self.tables.inbox)))
        if conds:
            q = q.where(exp.and_(*conds))
        q = q.order_by(col("_logical_date"), col("_source_file"), col("_source_line"))
        if limit is not None:
            q = q.limit(limit)
        return self.engine.fetch_dicts(q)

    def row(self, sk: str) -> dict[str, Any]:
        """One inbox row by key; a clear error when there is none."""
        found = self.rows(sk=sk)
        if not found:
            raise UsageError(
                f"no DLQ row with key {sk} in {self.tables.inbox}",
                hint="list the keys with: sluicegate dlq list CONTRACT",
            )
        return found[0]

    def by_status(self) -> dict[str, int]:
        """Inbox row count per status (every status listed, zeros included)."""
        q = (
            exp.select(col("_dlq_status"), exp.func("COUNT", exp.Star()))
            .from_(exp.Table(this=ident(self.tables.inbox)))
            .group_by(col("_dlq_status"))
        )
        got = {s: int(n) for s, n in self.engine.fetch(q)}
        return {s: got.get(s, 0) for s in STATUSES} | {
            s: n for s, n in got.items() if s not in STATUSES
        }

    def close(self) -> None:
        self.engine.close()


def default_actor() -> str:
    """Who an audit row names when ``--by`` is not given: ``$USER`` (else ``unknown``)."""
    return os.environ.get("USER") or os.environ.get("USERNAME") or "unknown"


@contextmanager
def open_store(
    loaded: LoadedContract, *, read_only: bool = False, engine_name: str | None = None
) -> Iterator[DlqStore]:
    """Open the contract's warehouse and its DLQ; closes the engine on exit."""
    workspace = Workspace(loaded)
    path = str(workspace.warehouse)
    tables = DlqTables.of(loaded.contract)
    workspace.require("DLQ")
    access = Access.READ if read_only else Access.OPERATE
    eng = open_engine_for(loaded, access, engine=engine_name, wait_seconds=WAIT_SECONDS)
    try:
        if not eng.table_exists(tables.inbox):
            raise UsageError(
                f"the warehouse {path} has no DLQ inbox table '{tables.inbox}' yet",
                hint="run the contract first: sluicegate run CONTRACT",
            )
        declared = set(loaded.contract.source.columns)
        partitions = [
            n for n, _t in eng.columns(tables.inbox) if not n.startswith("_") and n not in declared
        ]
        store = DlqStore(loaded, eng, tables, partitions)
        yield store
    finally:
        eng.close()
