"""``sluicegate serve``: the serve step on its own, over what the warehouse published.

It holds the contract's writer lock (a run and a serve never interleave their warehouse
writes), opens the engine the way a run does, serves, and records the ``serve:<target>``
facts under the run served: ``--run ID`` or else the latest published run.
"""

from __future__ import annotations

import os
from typing import Any

from sqlglot import exp

from ..compile.facts import RUNS_TABLE
from ..compile.render import col, lit
from ..contract.loader import LoadedContract
from ..engines import open_engine
from ..errors import UsageError
from ..serve import TargetResult, serve
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
    from .metrics import lock_path
    from .pipeline import PUBLISH_WAIT_SECONDS, warehouse_path

    path = warehouse_path(loaded)
    if not os.path.exists(path):
        raise UsageError(
            f"no warehouse at {path} yet, so nothing to serve",
            hint="run the contract first: sluicegate run CONTRACT",
        )
    name = engine_name or loaded.contract.engine.name
    cfg = loaded.contract.engine
    options: dict[str, Any]
    if name == "duckdb":
        options = {"staging": True, "wait_seconds": PUBLISH_WAIT_SECONDS}
    else:
        options = {
            "contract_master": cfg.master,
            "contract_remote": cfg.remote,
            "options": cfg.options or None,
        }
    lock = WriterLock(lock_path(loaded), loaded.contract.name)
    with lock.hold():
        eng = open_engine(name, path, **{k: v for k, v in options.items() if v is not None})
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
    if not rows:
        raise UsageError(
            f"no published run '{run_id}' of contract '{loaded.contract.name}'"
            if run_id
            else f"no published run of contract '{loaded.contract.name}'",
            hint="`sluicegate facts CONTRACT latest` shows the runs the warehouse has",
        )
    return str(rows[0][0]), str(rows[0][1])
