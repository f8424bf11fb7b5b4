"""Stage 5: write, audit, publish — one transaction on the embedded engine.

The warehouse is attached (DuckDB staging mode: the only time a run holds the file) and
one transaction then

1. replaces this logical date's rows of clean, quarantine and duplicates;
2. reads the counts back and proves the ledger — a violation rolls everything back
   (nothing published, exit 3);
3. finishes the facts (ledger, read-back, schema vs the previous run) and the verdict;
   a failed run deletes its clean rows again, so quarantine, duplicates, facts and the
   run record are published and the clean rows are not;
4. MERGEs the facts on ``(run_id, check_id)`` and the run record on ``run_id``;
5. commits.

A crash anywhere before the COMMIT leaves the warehouse as it was (DuckDB writes the
transaction to its WAL at COMMIT); a crash after it leaves the whole run published.
``faults.checkpoint`` marks each boundary for the crash tests.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..compile import facts as facts_c
from ..compile import ledger as ledger_c
from ..compile import outputs as out_c
from ..dlq.inbox import merge_inbox
from ..engines.storage import SNAPSHOTS_TABLE
from ..errors import LedgerError, LedgerViolation
from ..faults import checkpoint
from .bind import changed_since_bind, schema_fingerprint
from .facts import fact_rows, finish_facts, gate_levels
from .gate import escalate
from .lineage_proof import output_readback
from .model import finish_model, publish_model
from .owners import claim_tables
from .snapshot import record_snapshot

if TYPE_CHECKING:
    from ..engines import Engine
    from .state import RunContext


def write_output(
    eng: Engine,
    table: str,
    select: exp.Select,
    logical_date: str,
    *,
    keep_recycled: bool = False,
    run_id: str | None = None,
) -> None:
    """Replace ``logical_date``'s rows of ``table`` (only ``run_id``'s, for a micro-batch)
    with ``select`` (idempotent reruns)."""
    if not eng.table_exists(table):
        eng.create_table_as(table, out_c.empty_like(select))
    eng.execute(out_c.delete_run(table, logical_date, keep_recycled=keep_recycled, run_id=run_id))
    eng.execute(out_c.insert_into(table, select))


def changed_in_place(ctx: RunContext, outputs: list[str]) -> list[str]:
    """The tables a publish changes rather than replaces whole, in the order it changes
    them: the outputs, the model's facts, the quality facts, the run record, the mode's
    ledger and the snapshots (dimensions and marts are written anew each run)."""
    c = ctx.contract
    facts = list(c.model.facts) if c.model is not None else []
    return [
        *outputs,
        *facts,
        c.outputs.facts,
        facts_c.RUNS_TABLE,
        *ctx.mode.ledger_tables,
        SNAPSHOTS_TABLE,
    ]


def _count(eng: Engine, query: exp.Expression) -> int:
    return int(eng.fetch(query)[0][0])


def publish(ctx: RunContext, routed: str, ranked: str, quarantined: str | None = None) -> None:
    """Write the outputs, prove the ledger from them, and commit. ``quarantined``: a
    relation holding at least the routed rows that are not ``_ok`` (default ``routed``)."""
    eng = ctx.engine
    c = ctx.contract
    o = c.outputs
    rid, day = ctx.run_id, ctx.loaded.logical_date
    selects = {
        o.clean: out_c.clean_select(routed, c, ctx.partitions, ctx.rules, rid, day),
        o.quarantine: out_c.quarantine_select(quarantined or routed, c, ctx.partitions, rid, day),
        o.duplicates: out_c.duplicates_select(ranked, c, ctx.partitions, rid, day),
    }
    fingerprint = schema_fingerprint(c.source)
    with eng.attached():
        checkpoint("publish:attached")
        eng.begin()
        try:
            checkpoint("publish:begun")
            claim_tables(eng, c, str(ctx.loaded.path), ctx.loaded.line("outputs"))
            eng.will_change(changed_in_place(ctx, list(selects)))
            for table, select in selects.items():
                if table == o.quarantine:  # the DLQ inbox: MERGE on _dlq_sk (dlq/inbox.py)
                    merge_inbox(ctx, select)
                else:
                    write_output(
                        eng,
                        table,
                        select,
                        day,
                        keep_recycled=table == o.clean,
                        run_id=ctx.replace_run_id,
                    )
            checkpoint("publish:written")
            _audit(ctx, list(selects), fingerprint)
            checkpoint("publish:audited")
            _withhold_clean_on_fail(ctx)
            pending = publish_model(ctx)  # model: dimensions, facts, marts (run/model.py)
            _write_facts_and_run(ctx, fingerprint)
            ctx.mode.record_files(ctx)  # a micro-batch's processed-file ledger
            ctx.counts.table_versions = record_snapshot(ctx)  # last: published last
            checkpoint("publish:before_commit")
        except BaseException:
            eng.rollback()
            raise
        eng.commit()
        if eng.last_commit is not None and ctx.counts.table_versions:
            # what the store published (Iceberg snapshot ids are known only now)
            named = ctx.counts.table_versions
            ctx.counts.table_versions = {
                t: eng.last_commit.versions.get(t, v) for t, v in named.items()
            }
        checkpoint("publish:committed")
    finish_model(ctx, pending)  # model: swap the staged fact exports in (run/model.py)


def _audit(ctx: RunContext, tables: list[str], fingerprint: str) -> None:
    """Read back, prove the ledger, finish the facts and the verdict; raise on a violation."""
    eng = ctx.engine
    o = ctx.contract.outputs
    written, overlaps, read = output_readback(eng, tables, ctx.run_id)
    ledger = prove_ledger(
        raw=ctx.binding.raw_records,
        clean=written[o.clean],
        quarantined=written[o.quarantine],
        duplicates=written[o.duplicates],
        overlaps=overlaps,
        computed={
            k: v
            for k, v in (
                ("clean", ctx.counts.clean),
                ("quarantined", ctx.counts.quarantined),
                ("duplicates", ctx.counts.duplicates),
            )
            if v is not None
        },
        per_file=file_violations(ctx.binding, read) + changed_violations(ctx.binding),
    )
    ctx.counts.ledger = ledger
    previous = None
    if eng.table_exists(facts_c.RUNS_TABLE):
        rows = eng.fetch(facts_c.previous_fingerprint(ctx.contract.name, ctx.run_id))
        previous = rows[0][0] if rows else None
    ctx.facts = finish_facts(
        ctx, ctx.facts, ledger=ledger, fingerprint=fingerprint, previous_fingerprint=previous
    )
    if ctx.gate is not None:
        ctx.gate = escalate(ctx.gate, gate_levels(ctx.facts))
    if ledger["violations"]:
        raise LedgerError([LedgerViolation(v["check"], v["detail"]) for v in ledger["violations"]])


def _withhold_clean_on_fail(ctx: RunContext) -> None:
    """A failed run publishes everything but its clean rows; re-read what stays visible."""
    eng = ctx.engine
    o = ctx.contract.outputs
    failed = ctx.gate is None or ctx.gate.status == "fail"
    if failed:
        eng.execute(out_c.delete_run_id(o.clean, ctx.run_id))
    published = _count(eng, ledger_c.count_run(o.clean, ctx.run_id))
    expected = 0 if failed else ctx.counts.ledger["clean"]
    if published != expected:
        raise LedgerError(
            [LedgerViolation("readback", f"clean published {published}, expected {expected}")]
        )
    ctx.counts.clean_published = published


def _write_facts_and_run(ctx: RunContext, fingerprint: str) -> None:
    """MERGE the facts and the run record; read the facts back (a rerun must not add any)."""
    from .metrics import build_metrics

    eng = ctx.engine
    o = ctx.contract.outputs
    now = dt.datetime.now(dt.UTC)
    started = ctx.started_at or now
    rows = fact_rows(ctx, ctx.facts, started_at=started, evaluated_at=now)
    if not eng.table_exists(o.facts):
        eng.create_table_as(o.facts, facts_c.empty_select(facts_c.FACT_COLUMNS))
    eng.execute(facts_c.merge_facts(o.facts, ctx.run_id, rows))
    n = _count(eng, facts_c.count_facts(o.facts, ctx.run_id))
    if n != len(rows):
        raise LedgerError(
            [LedgerViolation("readback", f"facts of run {ctx.run_id}: {n}, expected {len(rows)}")]
        )
    checkpoint("publish:facts")
    metrics = build_metrics(
        ctx,
        started=started,
        elapsed=(now - started).total_seconds(),
        engine=eng.name,
        ledger_error=None,
    )
    if not eng.table_exists(facts_c.RUNS_TABLE):
        eng.create_table_as(facts_c.RUNS_TABLE, facts_c.empty_select(facts_c.RUN_COLUMNS))
    eng.execute(facts_c.merge_run(run_record(ctx, metrics, fingerprint, started, now)))


def run_record(
    ctx: RunContext,
    metrics: dict[str, Any],
    fingerprint: str,
    started: dt.datetime,
    published: dt.datetime,
) -> dict[str, Any]:
    """The ``_sluicegate_runs`` row: who ran what, with which outcome, and the metrics."""
    led = ctx.counts.ledger or {}
    text = ctx.loaded.redactor(json.dumps(metrics, default=str, sort_keys=True))
    return {
        "run_id": ctx.run_id,
        "contract": ctx.contract.name,
        "logical_date": ctx.loaded.logical_date,
        "status": ctx.gate.status if ctx.gate else "fail",
        "engine": ctx.engine.name,
        "contract_digest": ctx.loaded.digest,
        "binding_digest": ctx.binding.digest if ctx.binding else None,
        "schema_fingerprint": fingerprint,
        "raw_records": led.get("raw"),
        "clean": led.get("clean"),
        "quarantined": led.get("quarantined"),
        "duplicates": led.get("duplicates"),
        "clean_published": ctx.counts.clean_published or 0,
        "started_at": _naive(started),
        "published_at": _naive(published),
        "metrics": text,
    }


def _naive(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def changed_violations(binding: Any) -> list[dict]:
    """Inputs rewritten between the bind and now (after every read): refuse, exit 3.

    A binding whose records were captured at the bind (``files_can_change`` False: a
    Kafka batch, held with its SHA-256 in the offsets ledger) has nothing to re-check."""
    if not binding.files_can_change:
        return []
    changed = changed_since_bind(binding.files, binding.s3)
    if not changed:
        return []
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return [
        {
            "check": "input_changed",
            "detail": "rewritten after the bind (size or mtime differ): "
            + ", ".join(changed[:3])
            + more,
        }
    ]


def file_violations(binding: Any, read: dict[str, int]) -> list[dict]:
    """The lineage's files must be the binding's files, each with its bound record count."""
    bound = {f.path: f.records for f in binding.files if f.records}
    out = []
    for path in sorted(set(bound) | set(read)):
        want, got = bound.get(path, 0), read.get(path, 0)
        if path not in bound:
            out.append(
                {"check": "lineage", "detail": f"{got} records from a file not bound: {path}"}
            )
        elif want != got:
            out.append(
                {"check": "lineage", "detail": f"{path}: bound {want} records, outputs hold {got}"}
            )
    return out[:20]


def prove_ledger(
    *,
    raw: int,
    clean: int,
    quarantined: int,
    duplicates: int,
    overlaps: int,
    computed: dict,
    per_file: list[dict] | None = None,
) -> dict:
    """The ledger from read-back counts; every way it can fail is listed."""
    violations = list(per_file or [])
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
            {
                "check": "disjoint",
                "detail": f"{overlaps} extra copies of records across the outputs "
                "(a record in more than one output, or twice in one)",
            }
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
