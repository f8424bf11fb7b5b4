"""The serve step of a run: after a successful publish, load each
``serve:`` target, and record each outcome as a governed ``serve:<target>`` fact.

A serve fact has severity ``warning``: a target that is down, refuses the password or
runs out of disk fails its fact and shows on the console and in the run metrics, but the
run's verdict stays the gate's (the warehouse is already published and correct). The
next run, or ``sluicegate serve CONTRACT``, loads what this one could not.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

from ..compile import facts as facts_c
from ..contract.loader import LoadedContract
from ..engines import Engine
from ..errors import SluiceError
from .facts import Fact
from .gate import canonical

if TYPE_CHECKING:
    from ..serve import TargetResult
    from .state import RunContext

SERVE_CHECK_VERSION = 1


def serve_fact(owner: str | None, result: TargetResult) -> Fact:
    """``serve:<target>``: pass with the rows loaded, or fail with the (redacted) error."""
    ok = result.status == "pass"
    if ok:
        written = sum(t.written for t in result.tables)
        deleted = sum(t.deleted for t in result.tables)
        detail = (
            f"{result.copied} rows of {len(result.tables)} tables compared in "
            f"{result.seconds} s: {written} written, {deleted} deleted"
        )
    else:
        detail = result.error or "failed"
    return Fact(
        check_id=f"serve:{result.target}",
        kind="check",
        version=SERVE_CHECK_VERSION,
        owner=owner,
        severity="warning",  # never decides the run: the warehouse is published already
        status="pass" if ok else "fail",
        metric=canonical(Decimal(result.copied)),
        diagnostic="OK" if ok else "SERVE_FAILED",
        detail=detail,
        evaluated=result.copied,
    )


def stage_serve(ctx: RunContext) -> None:
    """Serve every target; add the facts to the run and MERGE them into the facts table."""
    if not ctx.contract.serve or (ctx.counts.ledger or {}).get("violations"):
        return  # nothing to serve, or nothing was published (a ledger violation)
    # imported here: serving loads pyarrow (~0.15 s), which a run without serve: never needs
    from ..serve import serve

    results = serve(ctx.engine, ctx.loaded)
    ctx.counts.serve = [r.as_dict() for r in results]
    try:
        facts = record_serve_facts(
            ctx.engine,
            ctx.loaded,
            results,
            run_id=ctx.run_id,
            logical_date=ctx.loaded.logical_date,
            started_at=ctx.started_at,
        )
    except SluiceError as exc:  # e.g. the warehouse busy past the wait: still not the verdict
        facts = [serve_fact(ctx.contract.owner, r) for r in results]
        ctx.listener.notice(f"serve facts not recorded in the warehouse: {exc.message}")
    ctx.facts = [f for f in ctx.facts if not f.check_id.startswith("serve:")] + facts


def record_serve_facts(
    engine: Engine,
    loaded: LoadedContract,
    results: list[TargetResult],
    *,
    run_id: str,
    logical_date: str,
    started_at: dt.datetime | None = None,
) -> list[Fact]:
    """MERGE one ``serve:<target>`` fact per result into the facts table, keyed
    ``(run_id, check_id)`` (a later serve of the same run replaces it)."""
    owner = loaded.contract.owner
    facts = [serve_fact(owner, r) for r in results]
    now = dt.datetime.now(dt.UTC)
    red = loaded.redactor
    rows = []
    for f in facts:
        d = f.as_dict()
        d.update(
            detail=red(d["detail"]),
            owner=red(d["owner"]) if d["owner"] else d["owner"],
            contract=loaded.contract.name,
            run_id=run_id,
            logical_date=logical_date,
            run_started_at=_naive(started_at or now),
            evaluated_at=_naive(now),
        )
        rows.append(d)
    table = loaded.contract.outputs.facts
    with engine.attached():
        engine.begin()
        try:
            engine.execute(facts_c.merge_rows(table, facts_c.FACT_COLUMNS, facts_c.FACT_KEY, rows))
        except BaseException:
            engine.rollback()
            raise
        engine.commit()
    return facts


def _naive(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
