"""Reads a contract's governed tables for the report, the API and the notifiers.

Everything here goes through the engine that owns the warehouse (a DuckDB file opened
read-only, or the Spark warehouse's tables), asks only for tables sluicegate publishes
(facts, run records, the DLQ inbox, the model), and never touches a run's working state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..contract.loader import LoadedContract
from ..engines import Engine
from ..errors import UsageError
from ..workspace import Access, Workspace, open_engine_for


def warehouse_of(loaded: LoadedContract) -> str:
    """The warehouse as messages name it: a local path normalised (``data/../wh.duckdb``
    reads ``wh.duckdb``), a URL as written."""
    where = str(Workspace(loaded).warehouse)
    return where if "://" in where else os.path.normpath(where)


def recent_runs(eng: Engine, contract: str, limit: int = 200) -> list[str]:
    """The contract's run ids in the warehouse's run records, newest first."""
    from sqlglot import exp

    from ..compile.facts import RUNS_TABLE
    from ..compile.render import col, lit

    if not eng.table_exists(RUNS_TABLE):
        return []
    q = (
        exp.select(col("run_id"))
        .from_(exp.to_table(RUNS_TABLE))
        .where(exp.EQ(this=col("contract"), expression=lit(contract)))
        .order_by(exp.Ordered(this=col("started_at"), desc=True))
        .limit(limit)
    )
    return [str(r[0]) for r in eng.fetch(q)]


def unknown_run(eng: Engine, contract: str, run_id: str, message: str) -> UsageError:
    """The error for a run id the warehouse does not know: ``message``, the closest id
    (a did-you-mean, also the JSON error's ``suggestion``) and the newest ids to choose from."""
    from ..contract.suggest import closest

    ids = recent_runs(eng, contract)
    near = closest(run_id, ids)
    err = UsageError(
        message + (f" (did you mean '{near}'?)" if near else ""),
        hint=f"newest runs: {', '.join(ids[:5])}" if ids else "run the contract first",
    )
    err.suggestion = near  # type: ignore[attr-defined]
    err.option = "--run"  # type: ignore[attr-defined]
    return err


@contextmanager
def open_warehouse(
    loaded: LoadedContract, *, access: Access = Access.READ, engine_name: str | None = None
) -> Iterator[Engine]:
    """The contract's warehouse, opened through the workspace (read-only by default, the
    contract's ``engine:`` section applied as for every command); closed on exit."""
    Workspace(loaded).require("report")
    eng = open_engine_for(loaded, access, engine=engine_name)
    try:
        yield eng
    finally:
        eng.close()


def facts_query(
    loaded: LoadedContract,
    query: str,
    *,
    check: str | None = None,
    runs: int = 90,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """One dashboard query (compile/dashboard.py) on the warehouse, as dicts."""
    from ..compile import dashboard

    if query not in dashboard.QUERIES:
        raise UsageError(f"unknown facts query '{query}'", hint="one of: latest, trend, attention")
    c = loaded.contract
    with open_warehouse(loaded) as eng:
        if not eng.table_exists(c.outputs.facts):
            raise UsageError(
                f"the warehouse has no facts table '{c.outputs.facts}' yet",
                hint="run the contract first: sluicegate run CONTRACT",
            )
        quarantine = c.outputs.quarantine if eng.table_exists(c.outputs.quarantine) else None
        dlq_status = quarantine is not None and "_dlq_status" in {
            n for n, _t in eng.columns(quarantine)
        }
        q = dashboard.build(
            query,
            c.outputs.facts,
            c.name,
            quarantine=quarantine,
            dlq_status=dlq_status,
            check_id=check,
            runs=runs,
            limit=limit,
        )
        return eng.fetch_dicts(q.query)
