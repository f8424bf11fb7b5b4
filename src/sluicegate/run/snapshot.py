"""The run's snapshot: which version of every table a run published (``sluicegate snapshot``).

On a format whose tables commit one by one (Delta), a reader can catch the warehouse
between two tables' commits. The run record therefore ends with one row per table in
``_sluicegate_snapshots`` — (run, table, version) — written in the run's transaction
after every other table, so the store publishes it last: once it names a run, every
version it names is committed, and time-travelling each table to its version gives that
run's consistent view. The versions come from the engine (``staged_versions``): the
version each table gets when the open transaction commits. A DuckDB file commits every
table at once and has no versions, so no rows are written there.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..compile import facts as facts_c
from ..compile.render import col, lit
from ..engines.storage import SNAPSHOTS_TABLE

if TYPE_CHECKING:
    from ..engines import Engine
    from .state import RunContext

SNAPSHOT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    ("table_name", "VARCHAR"),
    ("version", "BIGINT"),
    ("logical_date", "DATE"),
    ("recorded_at", "TIMESTAMP"),
)
SNAPSHOT_KEY = ("run_id", "table_name")


def record_snapshot(ctx: RunContext) -> dict[str, int]:
    """Write the versions the open transaction will publish; returns them ({} when the
    format has no versions). Call last inside the publish transaction."""
    eng = ctx.engine
    if not eng.storage.versions:
        return {}
    versions = {t: v for t, v in eng.staged_versions().items() if t != SNAPSHOTS_TABLE}
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(sep=" ")
    rows = [
        {
            "run_id": ctx.run_id,
            "table_name": table,
            "version": version,
            "logical_date": ctx.loaded.logical_date,
            "recorded_at": now,
        }
        for table, version in sorted(versions.items())
    ]
    if not eng.table_exists(SNAPSHOTS_TABLE):
        eng.create_table_as(SNAPSHOTS_TABLE, facts_c.empty_select(SNAPSHOT_COLUMNS))
    # no scope: a rerun of the run updates the tables it changed and keeps the rows of
    # those it left alone (an outbox the first attempt, or a publish completed after a
    # crash, already holds: the version named there still holds this run's rows)
    eng.execute(facts_c.merge_rows(SNAPSHOTS_TABLE, SNAPSHOT_COLUMNS, SNAPSHOT_KEY, rows))
    return versions


def read_snapshot(eng: Engine, contract: str, run_id: str | None) -> dict[str, Any] | None:
    """The run (the contract's latest published one when ``run_id`` is None) and the
    version of each table it published; None when there is no such run."""
    if not eng.table_exists(facts_c.RUNS_TABLE):
        return None
    q = (
        exp.select("run_id", "logical_date", "status", "published_at")
        .from_(facts_c.RUNS_TABLE)
        .where(exp.EQ(this=col("contract"), expression=lit(contract)))
    )
    if run_id is not None:
        q = q.where(exp.EQ(this=col("run_id"), expression=lit(run_id)))
    rows = eng.fetch_dicts(q.order_by("published_at DESC").limit(1))
    if not rows:
        return None
    run = rows[0]
    tables: dict[str, int] = {}
    if eng.table_exists(SNAPSHOTS_TABLE):
        got = eng.fetch(
            exp.select("table_name", "version")
            .from_(SNAPSHOTS_TABLE)
            .where(exp.EQ(this=col("run_id"), expression=lit(run["run_id"])))
            .order_by("table_name")
        )
        tables = {str(t): int(v) for t, v in got}
    return {
        "run_id": run["run_id"],
        "logical_date": str(run["logical_date"]),
        "status": run["status"],
        "published_at": str(run["published_at"]),
        "format": eng.storage.format,
        "tables": tables,
    }
