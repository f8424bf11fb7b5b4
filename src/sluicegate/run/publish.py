"""Stage 5: write, audit, publish — in one transaction on the embedded engine.

Inside one transaction: replace this logical date's rows in every output, insert the
run's rows, read the counts back and prove the ledger; a ledger violation rolls
everything back (nothing published, exit 3). A failed gate publishes quarantine and
duplicates (so operators see why) but withholds the clean rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..compile import ledger as ledger_c
from ..compile import outputs as out_c
from ..dlq.inbox import merge_inbox
from ..errors import LedgerError, LedgerViolation
from .model import finish_model, publish_model

if TYPE_CHECKING:
    from .pipeline import RunContext


def publish(ctx: RunContext, routed: str, ranked: str) -> None:
    eng = ctx.engine
    c = ctx.contract
    o = c.outputs
    rid, day = ctx.run_id, ctx.loaded.logical_date
    selects = {
        o.clean: out_c.clean_select(routed, c, ctx.partitions, ctx.rules, rid, day),
        o.quarantine: out_c.quarantine_select(routed, c, ctx.partitions, rid, day),
        o.duplicates: out_c.duplicates_select(ranked, c, ctx.partitions, rid, day),
    }
    eng.begin()
    try:
        for table, select in selects.items():
            if table == o.quarantine:  # the DLQ inbox: MERGE on _dlq_sk (dlq/inbox.py)
                merge_inbox(ctx, select)
                continue
            if not eng.table_exists(table):
                eng.create_table_as(table, out_c.empty_like(select))
            eng.execute(out_c.delete_run(table, day, keep_recycled=table == o.clean))
            eng.execute(out_c.insert_into(table, select))
        written = {t: int(eng.fetch(ledger_c.count_run(t, rid))[0][0]) for t in selects}
        overlaps = int(eng.fetch(ledger_c.lineage_overlaps(list(selects), rid))[0][0])
        ledger = prove_ledger(
            raw=ctx.binding.raw_records,
            clean=written[o.clean],
            quarantined=written[o.quarantine],
            duplicates=written[o.duplicates],
            overlaps=overlaps,
            computed=ctx.counts,
        )
        ctx.counts["ledger"] = ledger
        if ledger["violations"]:
            raise LedgerError(
                [LedgerViolation(v["check"], v["detail"]) for v in ledger["violations"]]
            )
        if ctx.gate is not None and ctx.gate.status == "fail":
            eng.execute(out_c.delete_run_id(o.clean, rid))
            ctx.counts["clean_published"] = 0
        else:
            ctx.counts["clean_published"] = written[o.clean]
        pending = publish_model(ctx)  # model: dimensions, facts, marts (run/model.py)
    except BaseException:
        eng.rollback()
        raise
    eng.commit()
    finish_model(ctx, pending)  # model: swap the staged fact exports in (run/model.py)


def prove_ledger(
    *, raw: int, clean: int, quarantined: int, duplicates: int, overlaps: int, computed: dict
) -> dict:
    """The ledger from read-back counts; every way it can fail is listed."""
    violations = []
    total = clean + quarantined + duplicates
    if total != raw:
        violations.append(
            {
                "check": "conservation",
                "detail": f"raw {raw} != clean {clean} + quarantined {quarantined} + duplicates {duplicates} (= {total})",
            }
        )
    if overlaps:
        violations.append(
            {"check": "disjoint", "detail": f"{overlaps} records appear in more than one output"}
        )
    for key, got in (("clean", clean), ("quarantined", quarantined), ("duplicates", duplicates)):
        if key in computed and computed[key] != got:
            violations.append(
                {"check": "readback", "detail": f"{key}: computed {computed[key]}, read back {got}"}
            )
    return {
        "raw": raw,
        "clean": clean,
        "quarantined": quarantined,
        "duplicates": duplicates,
        "balanced": not violations,
        "violations": violations,
    }
