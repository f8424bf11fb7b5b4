"""One run, stage by stage: ready → lock → open → stages → metrics.

The stages (:data:`STAGES`, in run order: bind, compile, references, read, dedupe,
route, model, check, publish, serve) are small functions of the :class:`~.state.RunContext`;
timings and counts land in the run metrics. Batch and micro-batch differ only in the
context's mode object (run/modes.py, run/incremental.py). Intermediate relations are TEMP
tables on the engine; only ``publish`` touches the warehouse's durable tables, inside one
transaction. The engine is opened by the workspace (workspace.py), as for every command.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from sqlglot import exp

from ..compile import dedupe as dedupe_c
from ..compile import metrics as metrics_c
from ..compile import route as route_c
from ..compile.read import table as read_table
from ..compile.read.relation import LINEAGE
from ..compile.render import col
from ..compile.rules import compile_rules
from ..contract.loader import LoadedContract
from ..contract.partitions import hive_partition_names
from ..errors import LedgerError
from ..faults import checkpoint
from ..report.events import Listener, Silent
from ..workspace import (
    DEFAULT_MEMORY_LIMIT,
    PUBLISH_WAIT_SECONDS,
    Workspace,
    capabilities,
    open_engine_for,
)
from . import bind as bind_s
from .counts import RankedCounts, RoutedCounts
from .gate import escalate, evaluate_gate
from .lock import WriterLock
from .model import prepare_model
from .modes import mode_of
from .publish import publish
from .serve_step import stage_serve
from .stage_counts import records_after
from .state import (
    REF_LINES_PREFIX,
    REF_PREFIX,
    T_DUPLICATES,
    T_FLAGS,
    T_KEPT,
    T_LINES,
    T_QUARANTINED,
    T_RANKED,
    T_RANKING,
    T_REPEATED,
    T_ROUTED,
    T_TYPED,
    RunContext,
    RunResult,
)

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "PUBLISH_WAIT_SECONDS",
    "STAGES",
    "T_DUPLICATES",
    "T_FLAGS",
    "T_KEPT",
    "T_LINES",
    "T_QUARANTINED",
    "T_RANKED",
    "T_RANKING",
    "T_REPEATED",
    "T_ROUTED",
    "T_TYPED",
    "RunContext",
    "RunResult",
    "run_contract",
]


def run_contract(
    loaded: LoadedContract,
    *,
    engine_name: str | None = None,
    listener: Listener | None = None,
    engine_options: dict[str, Any] | None = None,
    incremental: Any = None,
    reuse: Any = None,
) -> RunResult:
    """Run the contract once for ``loaded.logical_date``. Never raises for bad data.

    ``incremental`` (True or a run/incremental.py ``Incremental``) makes the run one
    micro-batch over the files not yet processed (status ``empty`` when there are none).
    ``reuse``: a run/reuse.py ``RelationCache`` a long-lived watch keeps its unchanged
    typed references and dimensions in between its runs.

    Raises :class:`NotReadyError` (exit 4) before anything when ``source.ready_when`` is
    missing, and :class:`LockedError` (exit 5) when another run of the contract is live.
    """
    from .guards import check_warehouse
    from .ready import check_ready

    check_warehouse(str(Workspace(loaded).warehouse))
    check_ready(loaded)
    lock = WriterLock(Workspace(loaded).writer_lock, loaded.contract.name)
    with lock.hold():
        if lock.took_over is not None and listener is not None:
            listener.notice(f"took over a stale writer lock from {lock.took_over.describe()}")
        checkpoint("locked")
        return _run_locked(loaded, lock, engine_name, listener, engine_options, incremental, reuse)


def _run_locked(
    loaded: LoadedContract,
    lock: WriterLock,
    engine_name: str | None,
    listener: Listener | None,
    engine_options: dict[str, Any] | None,
    incremental: Any = None,
    reuse: Any = None,
) -> RunResult:
    """Open the engine, run the stages in order, write the metrics."""
    from .metrics import build_metrics, write_metrics

    listener = listener or Silent()
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    caps = capabilities(loaded, engine_name)
    name = engine_name or loaded.contract.engine.name
    overrides = dict(engine_options or {})
    if overrides.pop("profile", False):
        if caps.statement_profile:
            overrides["profile"] = True
        else:
            listener.notice(f"--profile: the {name} engine does not time its statements")
    mode = mode_of(incremental, loaded)
    if caps.memory_at_start:  # e.g. a local Spark driver's heap, fixed when it starts
        overrides["input_bytes"] = mode.input_size(loaded)
    engine = open_engine_for(loaded, engine=engine_name, overrides=overrides)
    for notice in engine.notices:  # e.g. an interrupted publish repaired
        listener.notice(notice)
    ctx = RunContext(
        loaded=loaded,
        engine=engine,
        listener=listener,
        mode=mode,
        lock=lock,
        started_at=started,
        reuse=reuse if caps.relation_snapshots else None,
    )
    ledger_error: LedgerError | None = None
    try:
        for stage in STAGES:
            try:
                _timed(ctx, stage)
            except LedgerError as exc:
                if stage is not stage_publish:
                    raise
                ledger_error = exc
            if ctx.result is not None:  # nothing to do (an empty micro-batch)
                return ctx.result
    except Exception as exc:
        failure = engine.explain_failure(exc)  # e.g. the Spark JVM ran out of heap
        if failure is None:
            raise
        raise failure from None
    finally:
        engine.close()
    elapsed = time.perf_counter() - t0
    metrics = build_metrics(
        ctx, started=started, elapsed=elapsed, engine=name, ledger_error=ledger_error
    )
    path = write_metrics(ctx, metrics)
    checkpoint("metrics_written")
    if ledger_error is not None:
        return RunResult(metrics, "ledger_violation", ledger_error.exit_code, path)
    status = ctx.gate.status if ctx.gate else "fail"
    return RunResult(metrics, status, 1 if status == "fail" else 0, path)


def _timed(ctx: RunContext, stage: Callable[[RunContext], None]) -> None:
    """Run one stage, time it, then its fault checkpoint."""
    name = stage.__name__.removeprefix("stage_")
    ctx.engine.profile_stage = name
    ctx.listener.stage(name)
    t = time.perf_counter()
    stage(ctx)
    ctx.timings[name] = round(time.perf_counter() - t, 4)
    ctx.listener.finished(name, ctx.timings[name], records=records_after(ctx, name))
    checkpoint(f"after_{name}")


# -- stages ------------------------------------------------------------------------


def stage_bind(ctx: RunContext) -> None:
    """The run's files (all of them, or a micro-batch's new ones) and its run id."""
    ctx.binding, ctx.run_id = ctx.mode.bind(ctx)
    # before the first heavy statement: a large input may get a larger buffer
    ctx.memory_limit = ctx.engine.size_for_input(ctx.binding.total_bytes)
    ctx.partitions = discover_partitions(ctx.binding, ctx.contract.source.path)
    ctx.result = ctx.mode.empty_result(ctx)
    if ctx.lock is not None:
        ctx.lock.update(run_id=ctx.run_id)


def discover_partitions(binding: bind_s.Binding, declared_path: str) -> list[str]:
    """The partition columns of the run: the declared ones (``source.partitions``, then
    ``name=`` folders written in the path), never inferred from the data.

    Hive folders found below the source folder that the contract does not declare are
    left on ``binding.undeclared_partitions`` for the drift report.
    """
    names = list(binding.partitions) or list(hive_partition_names(declared_path))
    seen: list[str] = []
    for f in binding.files:
        try:
            parts = Path(f.path).parent.relative_to(binding.root).parts if binding.root else ()
        except ValueError:
            parts = ()
        for part in parts:
            n = part.split("=", 1)[0] if "=" in part else ""
            if n and n.isidentifier() and n not in names and n not in seen:
                seen.append(n)
    binding.undeclared_partitions = seen
    return names


def stage_compile(ctx: RunContext) -> None:
    c = ctx.contract
    visible = {**c.source.columns, **dict.fromkeys(ctx.partitions, None)}
    refs = {n: r.columns for n, r in c.references.items()}
    ctx.rules, ctx.memberships = compile_rules(c.rules, visible, refs)


def stage_references(ctx: RunContext) -> None:
    """Load each reference with the same permissive reader (its bad rows cannot match)."""
    for name, ref in ctx.contract.references.items():
        files = bind_s.list_files(ctx.loaded, ref, f"references.{name}")
        table = f"{REF_PREFIX}{name}"
        build = partial(_load_typed, ctx, files, ref, [], table, f"{REF_LINES_PREFIX}{name}")
        if ctx.reuse is not None:  # a watch: restored while its files are unchanged
            ctx.reuse.reference(ctx.engine, name, ref, files, table, build)
        else:
            build()
        ctx.reference_tables[name] = table


def _load_typed(
    ctx: RunContext, files: list[str], spec, partitions: list[str], table: str, lines_table: str
) -> None:  # noqa: ANN001
    """Load ``files`` raw (lines or Parquet rows), then build the typed relation ``table``."""
    eng = ctx.engine
    physical = None
    if spec.format in read_table.LOADS_PARQUET:
        eng.load_parquet(files, lines_table)
        physical = dict(eng.columns(lines_table))
    elif spec.format == "kafka":  # the micro-batch's messages (run/offsets.py)
        ctx.mode.load_lines(eng, lines_table)
    else:
        eng.load_lines(files, lines_table)
    select = read_table.typed_select(lines_table, spec, partitions, eng.dialect, physical)
    if (
        ctx.mode.routes_through_view
        and eng.loaded_as_view(lines_table)
        and read_table.rereads_cheaply(spec, partitions, physical, eng.dialect)
    ):
        # Parquet already of the declared types: each stage reads the files again through
        # a view (a projection; the copy cost ~0.25 s and ~180 MiB per 1M rows). The files
        # were bound and are re-checked unchanged before the COMMIT (changed_since_bind).
        eng.create_temp_view(table, select)
        return
    eng.create_table_as(table, select, temporary=True)
    if eng.capabilities.eager_tables:  # typed is a materialized copy (Spark's may be lazy)
        # the raw text is not read again (corrupt lines keep theirs in _raw): free it now
        eng.drop_loaded(lines_table)


def stage_read(ctx: RunContext) -> None:
    files = [f.path for f in ctx.binding.files]
    _load_typed(ctx, files, ctx.contract.source, ctx.partitions, T_TYPED, T_LINES)


def stage_dedupe(ctx: RunContext) -> None:
    """Rank the rows of repeated keys into a small table; the ranked and kept relations are
    views over the typed table, so a million-row relation is never copied twice."""
    eng = ctx.engine
    ranking = None
    if ctx.contract.dedupe is not None:
        ranking = T_RANKING
        dedupe = ctx.contract.dedupe
        eng.create_table_as(T_REPEATED, dedupe_c.repeated_select(T_TYPED, dedupe), temporary=True)
        eng.create_table_as(
            T_RANKING, dedupe_c.ranking_select(T_TYPED, dedupe, T_REPEATED), temporary=True
        )
    ranked = dedupe_c.ranked_select(T_TYPED, ctx.contract.dedupe, ranking)
    ranked = ctx.mode.against_prior(ctx, ranked, T_TYPED)  # earlier micro-batches' rows win
    eng.create_temp_view(T_RANKED, ranked)
    names = list(ctx.contract.source.columns)
    q, labels = metrics_c.ranked_counts(T_RANKED, names)
    row = eng.fetch(q)[0]
    counts = RankedCounts.from_row(labels, row)
    ctx.counts.take_ranked(counts)
    ctx.drift = drift_events(ctx, counts)
    kept = (
        exp.select(exp.Star())
        .from_(exp.to_table(T_RANKED))
        .where(exp.EQ(this=col("_rn"), expression=exp.Literal.number(1)))
    )
    eng.create_temp_view(T_KEPT, kept)


def drift_events(ctx: RunContext, counts: RankedCounts) -> list[dict[str, Any]]:
    """Schema drift of this run, also shown on the console.

    Kinds: ``undeclared_field`` (with the records carrying it), ``declared_field_absent``
    (a declared column or partition no record has), ``field_never_casts`` (values present,
    none cast), ``type_mismatch`` (some values did not cast), ``undeclared_partition``
    (a Hive folder the contract does not declare).
    """
    events: list[dict[str, Any]] = []
    records = counts.parsed - counts.corrupt
    if counts.undeclared_rows:
        for k, n in ctx.engine.fetch(metrics_c.undeclared_fields(T_RANKED, ctx.engine.dialect)):
            events.append({"kind": "undeclared_field", "field": k, "records": int(n)})
    if records:
        for name in ctx.contract.source.columns:
            if counts.present[name] == 0:
                events.append({"kind": "declared_field_absent", "field": name, "records": records})
    binding = ctx.binding
    if binding is not None and binding.files:
        for p in ctx.partitions:
            folders = (part for f in binding.files for part in Path(f.path).parent.parts)
            if not any(part.startswith(p + "=") for part in folders):
                events.append({"kind": "declared_field_absent", "field": p, "records": records})
        for p in binding.undeclared_partitions:
            events.append({"kind": "undeclared_partition", "field": p, "records": records})
    for name in ctx.contract.source.columns:
        mism = counts.mismatch[name]
        if mism and counts.nonnull[name] == 0:
            events.append({"kind": "field_never_casts", "field": name, "records": mism})
        elif mism:
            events.append({"kind": "type_mismatch", "field": name, "records": mism})
    for e in events:
        ctx.listener.notice(f"drift: {e['kind']} {e['field']} ({e['records']} records)")
    return events


def stage_route(ctx: RunContext) -> None:
    eng = ctx.engine
    flags = route_c.flags_select(
        T_KEPT, ctx.contract, ctx.rules, ctx.memberships, ctx.reference_tables
    )
    routed = route_c.routed_select(flags, ctx.rules)
    if eng.capabilities.eager_tables and ctx.mode.routes_through_view:
        # A one-shot run on an eager engine routes through a view: its few readers (the
        # counts below, the clean rows, the quarantine rows, the model's reroute) each
        # evaluate the flags again (~0.09 s per 1M rows), which costs less than writing
        # every row with ~50 columns once more (~0.5 s). The flags are pure functions of
        # TEMP tables (rules may call only deterministic functions), so every reader
        # sees the same routing, and the ledger proof reads back what was written.
        eng.create_temp_view(T_ROUTED, routed)
        ctx.routed_view = True
        # Publish needs only the duplicates of the typed relation (~1% of it): keep those
        # so that it does not join the whole ranking again.
        eng.create_table_as(T_DUPLICATES, _duplicates_select(ctx), temporary=True)
    else:
        # a micro-batch ranks its rows against earlier batches' keys: a table fixes its
        # routing once (Spark's TEMP tables are cached views, not evaluated again)
        eng.create_table_as(T_ROUTED, routed, temporary=True)
    checks = route_c.checks(ctx.rules)
    if ctx.routed_view and all(c.routes for c in checks):
        counts = _count_through_quarantine(ctx, checks)
    else:
        q, labels = metrics_c.routed_counts(T_ROUTED, checks, ctx.rules)
        counts = RoutedCounts.from_row(labels, eng.fetch(q)[0])
    ctx.counts.take_routed(counts)
    ctx.gate = evaluate_gate(
        quarantined=counts.routed - counts.clean,
        routed=counts.routed,
        warn_above=ctx.contract.gate.warn_above,
        fail_above=ctx.contract.gate.fail_above,
        rules=ctx.rules,
        rule_failures=counts.failed,
    )


def _count_through_quarantine(ctx: RunContext, checks: list[route_c.Check]) -> RoutedCounts:
    """Keep the quarantined rows (~1% of a feed) as a table and count the routing there.

    Where every check routes, a row fails a check only if it is quarantined, so every
    count but the total is a count over those rows; the total is the kept rows the dedupe
    stage counted. One pass over the routed view (that evaluates the flags) replaces two:
    the counts' and the quarantine output's (~0.15 s per 1M rows each). The ledger still
    compares these counts with what is read back from the written outputs.
    """
    eng = ctx.engine
    not_ok = exp.Not(this=col("_ok"))
    eng.create_table_as(
        T_QUARANTINED,
        exp.select(exp.Star()).from_(exp.to_table(T_ROUTED)).where(not_ok),
        temporary=True,
    )
    q, labels = metrics_c.routed_counts(T_QUARANTINED, checks, ctx.rules)
    bad = RoutedCounts.from_row(labels, eng.fetch(q)[0])
    kept = (ctx.counts.parsed or 0) - (ctx.counts.duplicates or 0)
    return RoutedCounts(kept, kept - bad.routed, bad.reason, bad.failed)


def _duplicates_select(ctx: RunContext) -> exp.Select:
    """The ranked relation's rows with ``_rn > 1``, same columns.

    Built from the small ranking table joined to the typed rows (an inner join probes the
    typed table once); filtering the ranked view instead joins every typed row first
    (5.4 s of 193 s at 5M lines).
    """
    rn_gt_1 = exp.GT(this=col("_rn", "_r"), expression=exp.Literal.number(1))
    if ctx.contract.dedupe is None:  # nothing is ranked: no duplicates
        return exp.select(exp.Star()).from_(exp.to_table(T_RANKED)).where(exp.false())
    on = exp.and_(*[exp.EQ(this=col(c, "_t"), expression=col(c, "_r")) for c in LINEAGE])
    return (
        exp.select(
            exp.Column(this=exp.Star(), table=exp.to_identifier("_t")),
            *[col(c, "_r") for c in ("_rn", "_kept_source_file", "_kept_source_line")],
        )
        .from_(
            exp.Table(
                this=exp.to_identifier(T_TYPED), alias=exp.TableAlias(this=exp.to_identifier("_t"))
            )
        )
        .join(
            exp.Table(
                this=exp.to_identifier(T_RANKING),
                alias=exp.TableAlias(this=exp.to_identifier("_r")),
            ),
            on=on,
            join_type="INNER",
        )
        .where(rn_gt_1)
    )


def stage_check(ctx: RunContext) -> None:
    """Governed checks from the run's own counts (facts); error-severity ones join the gate."""
    from ..compile.facts import newest_value
    from .bind import schema_fingerprint
    from .facts import gate_levels, pre_publish_facts

    fresh = ctx.contract.source.freshness
    newest = None
    if fresh is not None and fresh.column in ctx.contract.source.columns:
        newest = ctx.engine.fetch(newest_value(T_ROUTED, fresh.column))[0][0]
    ctx.facts = pre_publish_facts(
        ctx,
        newest=newest,
        now=dt.datetime.now(dt.UTC),
        fingerprint=schema_fingerprint(ctx.contract.source),
    )
    ctx.facts.extend(ctx.mode.facts(ctx))  # a micro-batch's changed files (incremental.py)
    if ctx.gate is not None:
        ctx.gate = escalate(ctx.gate, gate_levels(ctx.facts))
    for f in ctx.facts:
        if f.status != "pass" and f.kind == "check":
            ctx.listener.notice(f"check {f.check_id} {f.status.upper()}: {f.detail}")


def stage_model(ctx: RunContext) -> None:
    """Model, before publish: build dimensions, reroute rows with no version (run/model.py)."""
    prepare_model(ctx, T_ROUTED)


def stage_publish(ctx: RunContext) -> None:
    # the duplicates table when stage_route kept it (every row has _rn > 1), else the view
    ranked = T_DUPLICATES if ctx.engine.table_exists(T_DUPLICATES) else T_RANKED
    # the quarantined rows when stage_route kept them (and the model did not reroute)
    quarantined = T_QUARANTINED if ctx.engine.table_exists(T_QUARANTINED) else T_ROUTED
    publish(ctx, T_ROUTED, ranked, quarantined)


#: The stages of a run, in run order (each times itself and ends at a fault checkpoint).
STAGES: tuple[Callable[[RunContext], None], ...] = (
    stage_bind,
    stage_compile,
    stage_references,
    stage_read,
    stage_dedupe,
    stage_route,
    stage_model,
    stage_check,
    stage_publish,
    stage_serve,  # run/serve_step.py: after the publish, each serve: target
)
