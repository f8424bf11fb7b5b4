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
from ..engines import Engine, open_engine
from ..errors import UsageError

#: How long a reader waits for a run's publish transaction to release a DuckDB file.
READ_WAIT_SECONDS = 30.0


def warehouse_of(loaded: LoadedContract) -> str:
    return str(loaded.resolve_path(loaded.contract.outputs.warehouse))


@contextmanager
def open_warehouse(
    loaded: LoadedContract, *, read_only: bool = True, engine_name: str | None = None
) -> Iterator[Engine]:
    """The contract's warehouse, opened by the engine its contract names; closed on exit.

    (The redesign's workspace module will own this; it is the one place here that does.)
    """
    path = warehouse_of(loaded)
    if not os.path.exists(path):
        raise UsageError(
            f"no warehouse at {path} yet", hint="run the contract first: sluicegate run CONTRACT"
        )
    name = engine_name or loaded.contract.engine.name
    cfg = loaded.contract.engine
    if name == "duckdb":
        options: dict[str, Any] = {"read_only": read_only, "wait_seconds": READ_WAIT_SECONDS}
    else:
        options = {
            "contract_master": cfg.master,
            "contract_remote": cfg.remote,
            "options": cfg.options or None,
        }
    eng = open_engine(name, path, **{k: v for k, v in options.items() if v is not None})
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
