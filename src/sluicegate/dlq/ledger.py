"""The run ledger extended with the DLQ, proven from the tables.

A run proves ``raw = clean + quarantined + duplicates`` when it publishes. Afterwards
operators move its quarantined rows through the DLQ, which never deletes an inbox row
nor changes its ``_run_id``: a status only splits the ``quarantined`` term. So, per run,

    raw = clean + withheld + duplicates + quarantined + fixed + recycled + rejected

where ``clean`` is the run's own rows in the clean table (``_recycled_from`` NULL),
``withheld`` the clean rows a failed gate did not publish, and the last four terms are
the run's inbox rows by ``_dlq_status``. ``raw`` is the count taken from the input at
bind time (the run record ``_sluicegate_runs``), not recomputed from the outputs.
Recycled rows are counted once: each ``recycled`` inbox row has exactly one outbox row and
exactly one clean copy (tagged ``_recycled_from``), and every copy has its inbox row:

    clean table = Σ clean + Σ recycled        outbox = Σ recycled

Summed over every run present in the warehouse, the same equation balances.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..compile.outputs import RECYCLED_FROM
from ..compile.render import col, ident, lit
from ..contract.models import Contract
from ..engines import Engine
from .store import DlqStore
from .tables import STATUSES, DlqTables

EQUATION = "raw = clean + withheld + duplicates + quarantined + fixed + recycled + rejected"
RUNS_TABLE = "_sluicegate_runs"  # the run record (compile/facts.py), when the warehouse has one


def _tbl(name: str) -> exp.Table:
    return exp.Table(this=ident(name))


def _per_run(
    eng: Engine, table: str, where: exp.Expression | None, extra: tuple[str, ...] = ()
) -> list[tuple]:
    keys = [col("_run_id"), col("_logical_date"), *[col(e) for e in extra]]
    q = exp.select(*keys, exp.func("COUNT", exp.Star())).from_(_tbl(table))
    if where is not None:
        q = q.where(where)
    return eng.fetch(q.group_by(*[k.copy() for k in keys]))


def _scalar(eng: Engine, q: exp.Expression) -> int:
    return int(eng.fetch(q)[0][0] or 0)


def _recycled_in(table: str) -> exp.Subquery:
    return exp.Subquery(
        this=exp.select(col("_dlq_sk"))
        .from_(_tbl(table))
        .where(exp.EQ(this=col("_dlq_status"), expression=lit("recycled")))
    )


def _run_records(eng: Engine, contract: str) -> dict[str, dict[str, Any]]:
    if not eng.table_exists(RUNS_TABLE):
        return {}
    names = {n for n, _t in eng.columns(RUNS_TABLE)}
    wanted = ["run_id", "raw_records", "clean", "clean_published"]
    if not set(wanted) <= names:
        return {}
    q = exp.select(*[col(n) for n in wanted]).from_(_tbl(RUNS_TABLE))
    if "contract" in names:
        q = q.where(exp.EQ(this=col("contract"), expression=lit(contract)))
    return {r["run_id"]: r for r in eng.fetch_dicts(q)}


def dlq_ledger(store: DlqStore) -> dict[str, Any]:
    """The extended ledger of every run in the warehouse, with every violation found."""
    return ledger_of(store.engine, store.tables, store.contract)


def ledger_of(eng: Engine, t: DlqTables, contract: Contract) -> dict[str, Any]:
    """:func:`dlq_ledger` of a warehouse opened by anyone (the stream ledger's too)."""
    o = contract.outputs
    runs: dict[str, dict[str, Any]] = {}

    def run(rid: str, day: Any) -> dict[str, Any]:
        r = runs.setdefault(
            rid,
            {
                "run_id": rid,
                "logical_date": str(day),
                "raw": None,
                "clean": 0,
                "withheld": 0,
                "duplicates": 0,
                **dict.fromkeys(STATUSES, 0),
            },
        )
        return r

    own = exp.Is(this=col(RECYCLED_FROM), expression=exp.null())
    for rid, day, n in _per_run(eng, o.clean, own):
        run(rid, day)["clean"] = int(n)
    if eng.table_exists(o.duplicates):
        for rid, day, n in _per_run(eng, o.duplicates, None):
            run(rid, day)["duplicates"] = int(n)
    for rid, day, status, n in _per_run(eng, t.inbox, None, ("_dlq_status",)):
        run(rid, day)[status] = int(n)

    violations: list[dict[str, str]] = []
    records = _run_records(eng, contract.name)
    for rid, r in runs.items():
        rec = records.get(rid)
        if rec is None or rec.get("raw_records") is None:
            continue
        r["raw"] = int(rec["raw_records"])
        r["withheld"] = max(int(rec.get("clean") or 0) - int(rec.get("clean_published") or 0), 0)
        rhs = r["clean"] + r["withheld"] + r["duplicates"] + sum(r[s] for s in STATUSES)
        r["balanced"] = rhs == r["raw"]
        if not r["balanced"]:
            violations.append(
                {
                    "check": "conservation",
                    "detail": f"run {rid}: raw {r['raw']} != {rhs} ("
                    + " + ".join(f"{k} {r[k]}" for k in ("clean", "withheld", "duplicates"))
                    + " + "
                    + " + ".join(f"{s} {r[s]}" for s in STATUSES)
                    + ")",
                }
            )

    copies = exp.Not(this=exp.Is(this=col(RECYCLED_FROM), expression=exp.null()))
    counts = {
        "recycled_copies_in_clean": _scalar(
            eng, exp.select(exp.func("COUNT", exp.Star())).from_(_tbl(o.clean)).where(copies)
        ),
        "distinct_recycled_copies": _scalar(
            eng,
            exp.select(exp.func("COUNT", exp.Distinct(expressions=[col(RECYCLED_FROM)])))
            .from_(_tbl(o.clean))
            .where(copies.copy()),
        ),
        "outbox": 0,
        "distinct_outbox": 0,
    }
    if eng.table_exists(t.outbox):
        counts["outbox"] = _scalar(
            eng, exp.select(exp.func("COUNT", exp.Star())).from_(_tbl(t.outbox))
        )
        counts["distinct_outbox"] = _scalar(
            eng,
            exp.select(exp.func("COUNT", exp.Distinct(expressions=[col("_dlq_sk")]))).from_(
                _tbl(t.outbox)
            ),
        )
    recycled = sum(r["recycled"] for r in runs.values())
    for what in ("recycled_copies_in_clean", "distinct_recycled_copies"):
        if counts[what] != recycled:
            violations.append(
                {"check": "recycled", "detail": f"{what} {counts[what]} != recycled {recycled}"}
            )
    if eng.table_exists(t.outbox):
        for what in ("outbox", "distinct_outbox"):
            if counts[what] != recycled:
                violations.append(
                    {"check": "recycled", "detail": f"{what} {counts[what]} != recycled {recycled}"}
                )
        orphans = _scalar(
            eng,
            exp.select(exp.func("COUNT", exp.Star()))
            .from_(_tbl(t.outbox))
            .where(exp.Not(this=exp.In(this=col("_dlq_sk"), query=_recycled_in(t.inbox)))),
        )
        if orphans:
            violations.append(
                {"check": "recycled", "detail": f"{orphans} outbox rows have no recycled inbox row"}
            )
    orphan_copies = _scalar(
        eng,
        exp.select(exp.func("COUNT", exp.Star()))
        .from_(_tbl(o.clean))
        .where(
            exp.and_(
                copies.copy(),
                exp.Not(this=exp.In(this=col(RECYCLED_FROM), query=_recycled_in(t.inbox))),
            )
        ),
    )
    if orphan_copies:
        violations.append(
            {
                "check": "recycled",
                "detail": f"{orphan_copies} recycled clean rows have no recycled inbox row",
            }
        )

    ordered = sorted(runs.values(), key=lambda r: (r["logical_date"], r["run_id"]))
    totals: dict[str, Any] = {
        k: sum(r[k] for r in ordered) for k in ("clean", "withheld", "duplicates", *STATUSES)
    }
    known = [r for r in ordered if r["raw"] is not None]
    totals["raw"] = sum(r["raw"] for r in known) if len(known) == len(ordered) else None
    totals["clean_table"] = totals["clean"] + counts["recycled_copies_in_clean"]
    return {
        "equation": EQUATION,
        "runs": ordered,
        "totals": totals,
        "recycled": counts,
        "verified_runs": len(known),
        "balanced": not violations,
        "violations": violations,
    }
