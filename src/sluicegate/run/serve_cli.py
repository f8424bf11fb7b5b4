"""``sluicegate serve``: the serve step on its own, over what the warehouse published.

It holds the contract's writer lock (a run and a serve never interleave their warehouse
writes), opens the engine the way a run does, serves, and records the ``serve:<target>``
facts under the run served: ``--run ID`` or else the latest published run.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..compile.facts import RUNS_TABLE
from ..compile.render import col, lit
from ..contract.loader import LoadedContract
from ..errors import UsageError
from ..report.reader import unknown_run
from ..serve import TargetResult, serve
from ..workspace import Access, Workspace, open_engine_for
from .serve_step import record_serve_facts


def serve_published(
    loaded: LoadedContract,
    *,
    run_id: str | None = None,
    targets: list[str] | None = None,
    engine_name: str | None = None,
) -> tuple[str, list[TargetResult]]:
    """Serve the warehouse's published tables; return the run the facts belong to."""
    from .lock import WriterLock

    workspace = Workspace(loaded)
    workspace.require("published run to serve")
    lock = WriterLock(workspace.writer_lock, loaded.contract.name)
    with lock.hold():
        eng = open_engine_for(loaded, Access.RUN, engine=engine_name)
        try:
            served_run, day = _run_of(eng, loaded, run_id)
            results = serve(eng, loaded, run_id=run_id, targets=targets)
            record_serve_facts(eng, loaded, results, run_id=served_run, logical_date=day)
        finally:
            eng.close()
    return served_run, results


def _run_of(eng: Any, loaded: LoadedContract, run_id: str | None) -> tuple[str, str]:
    """(run id, logical date) of ``run_id``, or of the contract's latest published run."""
    with eng.attached():
        if not eng.table_exists(RUNS_TABLE):
            raise UsageError(
                "no run was published to the warehouse yet, so nothing to serve",
                hint="run the contract first: sluicegate run CONTRACT",
            )
        q = (
            exp.select(col("run_id"), exp.cast(col("logical_date"), "VARCHAR"))
            .from_(exp.to_table(RUNS_TABLE))
            .where(exp.EQ(this=col("contract"), expression=lit(loaded.contract.name)))
        )
        if run_id:
            q = q.where(exp.EQ(this=col("run_id"), expression=lit(run_id)))
        rows = eng.fetch(q.order_by(exp.Ordered(this=col("published_at"), desc=True)).limit(1))
        if not rows and run_id:
            name = loaded.contract.name
            raise unknown_run(eng, name, run_id, f"no published run '{run_id}' of '{name}'")
    if not rows:
        raise UsageError(
            f"no published run of contract '{loaded.contract.name}'",
            hint="`sluicegate facts ledger CONTRACT` lists the runs the warehouse has",
        )
    return str(rows[0][0]), str(rows[0][1])
