"""Stage 6, the model: SCD2 dimensions, as-of facts, marts and the fact export.

It runs in three steps so it can never unbalance the ledger or publish half a model:

1. :func:`prepare_model` (after routing, before publish): build each dimension into a
   TEMP table from its changelog reference; for ``on_missing: quarantine`` joins, turn
   the clean rows that match no version into quarantined rows (reason
   ``no_dimension_version:<dim>``) *in the routed relation*, update the counts and
   re-judge the gate. Publish then writes them to the DLQ and never to the clean table,
   so ``raw = clean + quarantined + duplicates`` holds by construction.
2. :func:`publish_model` (inside the publish transaction, after the clean table is
   written): replace each dimension, replace this logical date's fact rows from the
   clean rows of this run, prove fact rows = clean rows from the written tables, rebuild
   the marts in dependency order, and write each exported fact to a staging folder.
   A failure anywhere rolls back everything with the outputs.
3. :func:`finish_model` (after commit): swap the staged export partitions into place.

Export crash semantics (a file write is not inside the DuckDB transaction): files are
written to ``.<export>.staging/<logical date>/`` next to the export folder, where no
reader looks, before the commit; after the commit each file is moved into its partition
with an atomic rename, then this date's files the new export no longer has are removed.
A crash before the commit leaves the warehouse unchanged and a stale staging folder
that the next run of the date deletes first; a crash during the swap leaves every
partition either old or new for this date (never a partial file) until the date is run
again, which rewrites the same files (same input, same run id, same rows).

Export scope follows the run's replace scope: a batch run rewrites its date's files
(``part-<date>-<i>``); a micro-batch, which replaces only its own run id's rows, writes
only its own rows (``part-<date>-<run id>-<i>``, staged in ``<date>.<run id>/``), so a
watch's publish does not grow with the day. A micro-batch that finds a staging folder of
its date left by another run (a crash between that run's commit and its swap) rewrites
the date's export whole instead — the batch run's files, which repair any interrupted
swap — and removes the left folders only after its own swap.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..compile import outputs as out_c
from ..compile.model import asof, checks, scd2
from ..compile.model.export import export_select
from ..compile.model.schema import (
    EXPORT_PARTITIONS,
    export_path,
    export_time,
    fact_columns,
    interval_type,
)
from ..contract.model_spec import Fact
from ..errors import LedgerError, LedgerViolation, SluiceError
from .gate import evaluate_gate
from .lineage_proof import lineage_readback
from .state import T_QUARANTINED

if TYPE_CHECKING:
    from ..engines import Engine
    from .state import RunContext


def dim_temp_table(name: str) -> str:
    """The TEMP table a dimension is built in before publish."""
    return f"_sg_dim_{name}"


@dataclass
class PendingExport:
    """A fact export staged before the commit, to be swapped in after it."""

    fact: str
    staging: Path
    final: Path
    prefix: str
    rows: int
    scope: str = "date"  # "run": a micro-batch's own rows only
    repaired: tuple[Path, ...] = ()  # same-date staging folders left by other runs


# -- 1. before publish ---------------------------------------------------------------


def prepare_model(ctx: RunContext, routed_table: str) -> None:
    """Build the dimensions (TEMP) and reroute rows with no version where asked to."""
    m = ctx.contract.model
    if m is None:
        return
    eng = ctx.engine
    stats: dict[str, Any] = {"dimensions": {}, "facts": {}, "marts": {}}
    for name, dim in m.dimensions.items():
        ref = ctx.reference_tables[dim.reference]
        table = dim_temp_table(name)
        build = scd2.scd2_select(ref, dim, interval_type(dim, ctx.contract))
        count = scd2.dimension_metrics(table, ref, dim)
        make = partial(_build_dimension, ctx, table, build, count)
        if ctx.reuse is None:
            stats["dimensions"][name] = make()
        else:  # a watch: restored while its reference and declaration are unchanged
            sql = [eng.render(q) for q in (build, count)]
            stats["dimensions"][name] = ctx.reuse.dimension(eng, dim.reference, sql, table, make)
    ctx.counts.model = stats
    dims = {n: dim_temp_table(n) for n in m.dimensions}
    if not any(asof.quarantine_joins(f) for f in m.facts.values()):
        return
    before = routed_table + "_premodel"
    eng.create_table_as(
        before, exp.select(exp.Star()).from_(exp.to_table(routed_table)), temporary=True
    )
    if ctx.routed_view:  # the rerouted rows replace the view with a table
        eng.drop_view(routed_table)
        ctx.routed_view = False
    # the route stage's quarantined rows no longer are all of them: publish reads routed
    eng.drop_table(T_QUARANTINED)
    eng.create_table_as(
        routed_table, asof.reroute_select(before, ctx.contract, dims), temporary=True
    )
    q, reasons = asof.reason_counts(routed_table, ctx.contract)
    moved = dict(zip(reasons, (int(v or 0) for v in eng.fetch(q)[0]), strict=True))
    total = sum(moved.values())
    stats["quarantined"] = moved
    if not total:
        return
    counts = ctx.counts
    counts.clean = (counts.clean or 0) - total
    counts.quarantined = (counts.quarantined or 0) + total
    counts.by_reason = {**counts.by_reason, **{k: v for k, v in moved.items() if v}}
    g = ctx.contract.gate
    ctx.gate = evaluate_gate(
        quarantined=counts.quarantined,
        routed=counts.routed or 0,
        warn_above=g.warn_above,
        fail_above=g.fail_above,
        rules=ctx.rules,
        rule_failures=counts.failed,
    )


def _build_dimension(
    ctx: RunContext, table: str, build: exp.Select, count: exp.Select
) -> dict[str, Any]:
    """Build a dimension into TEMP ``table``; its rows, current rows and rejected changes."""
    eng = ctx.engine
    eng.create_table_as(table, build, temporary=True)
    # one query: versions, current versions, rejected changes (scd2.dimension_metrics)
    rows, current, rejected = (int(v) for v in eng.fetch(count)[0])
    return {"rows": rows, "current": current, "rejected_changes": rejected}


# -- 2. inside the publish transaction -------------------------------------------------


def publish_model(ctx: RunContext) -> list[PendingExport]:
    """Write dimensions, this date's facts and the marts; stage exports. Raises to roll back."""
    m = ctx.contract.model
    if m is None:
        return []
    eng, c = ctx.engine, ctx.contract
    rid, day = ctx.run_id, ctx.loaded.logical_date
    stats = ctx.counts.model_stats()
    for name in m.dimensions:
        _publish_dimension(ctx, name)
    visible = {**c.source.columns, **dict.fromkeys(ctx.partitions, None)}
    pending: list[PendingExport] = []
    for name, fact in m.facts.items():
        derived = checks.compile_derive(fact, visible)
        select = asof.fact_select(
            c.outputs.clean, fact, c, {d: d for d in m.dimensions}, derived, rid
        )
        _ensure_table(ctx, name, select, [col_.name for col_ in fact_columns(fact, c)])
        eng.execute(out_c.delete_run(name, day, run_id=ctx.replace_run_id))
        eng.execute(out_c.insert_into(name, select))
        sums, joins = asof.unknown_sums(fact)
        rows, clean, lineages, unknown = _fact_readback(eng, name, c.outputs.clean, rid, sums)
        if not rows == lineages == clean:
            raise LedgerError(
                [
                    LedgerViolation(
                        f"model:{name}",
                        f"fact rows {rows} (distinct lineage {lineages}) != clean rows {clean}",
                    )
                ]
            )
        fstats: dict[str, Any] = {"rows": rows}
        if joins:  # a run without fact rows sums to NULL: none got the unknown member
            fstats["unknown_member"] = {j: int(v or 0) for j, v in zip(joins, unknown, strict=True)}
        path = export_path(name, fact, c)
        if path is not None:
            pe = _stage_export(ctx, name, fact, path, rows)
            fstats["export"] = {"path": str(pe.final), "rows": pe.rows}
            pending.append(pe)
        stats["facts"][name] = fstats
    for mart in checks.compiled_marts(c):
        # the write's own count where the engine has one (Spark: an observed write); a
        # COUNT per mart otherwise (folding them into one query was no faster on Spark:
        # each scalar subquery is its own job; benchmarks/RESULTS.md)
        stats["marts"][mart.name] = eng.create_table_counted(mart.name, mart.query)
    return pending


def _fact_readback(
    eng: Engine, fact: str, clean: str, run_id: str, sums: list[exp.Expression]
) -> tuple[int, int, int, list[Any]]:
    """The fact's rows, this run's clean rows, the fact's distinct lineages and the
    unknown-member sums, read back from the written tables. DuckDB reads the extra
    copies apart, from per-file bitmaps; where each query is costly (Spark) one query
    gives all four."""
    if eng.capabilities.bitmap_aggregate:
        q = asof.fact_readback(fact, clean, run_id, unknown=sums)
        rows, clean_rows, *unknown = eng.fetch(q)[0]
        rows = int(rows)  # counts are never NULL: a NULL raises here
        return rows, int(clean_rows), rows - lineage_readback(eng, [fact], run_id)[0], unknown
    q = asof.fact_readback(
        fact,
        clean,
        run_id,
        extra_copies=True,
        bucketed=eng.capabilities.bucket_bitmaps,
        unknown=sums,
    )
    rows, clean_rows, extra, *unknown = eng.fetch(q)[0]
    return int(rows), int(clean_rows), int(rows) - int(extra), unknown


def _publish_dimension(ctx: RunContext, name: str) -> None:
    """Replace the published dimension, unless a watch knows it already holds these rows:
    it carries the mark of the build this run restored (run/reuse.py)."""
    eng, temp = ctx.engine, dim_temp_table(name)
    mark = ctx.reuse.dimension_mark(temp) if ctx.reuse is not None else None
    if mark is not None and eng.table_mark(name) == mark:
        ctx.reuse.kept_published += 1
        return
    eng.create_table_as(name, exp.select(exp.Star()).from_(exp.to_table(temp)))
    if mark is not None:
        eng.mark_table(name, mark)


def _ensure_table(ctx: RunContext, name: str, select: exp.Select, columns: list[str]) -> None:
    """Create the fact table on first use; refuse to append to a table of another shape."""
    eng = ctx.engine
    if not eng.table_exists(name):
        eng.create_table_as(name, out_c.empty_like(select))
        return
    have = [n for n, _t in eng.columns(name)]
    if have != columns:
        raise SluiceError(
            f"fact table '{name}' has columns {have}, but the contract now builds {columns}",
            hint=f"the model changed: drop or rename the table '{name}' and rerun the dates it holds",
        )


def _stage_export(ctx: RunContext, name: str, fact: Fact, path: str, rows: int) -> PendingExport:
    """Stage the fact's export: the date's rows, or a micro-batch's own rows only.

    ``rows`` (just proven equal to the run's clean rows) is what the metrics report.
    """
    day, run = ctx.loaded.logical_date, ctx.replace_run_id
    final = Path(ctx.loaded.resolve_path(path))
    own = staging_dir(final, day, run)
    left = sorted(own.parent.iterdir()) if own.parent.is_dir() else []
    same_day = [p for p in left if p != own and _staging_date(p.name) == day]
    for p in left:
        if _staging_date(p.name) != day:  # a run crashed after its commit, before its swap
            ctx.listener.notice(
                f"the export {final} of {_staging_date(p.name)} was committed but not swapped "
                f"in (a crash after the commit): rerun --logical-date {_staging_date(p.name)} "
                "to repair it"
            )
    if run is not None and same_day:  # repair: rewrite the date's export whole
        run, own = None, staging_dir(final, day, None)
    shutil.rmtree(own, ignore_errors=True)
    own.mkdir(parents=True)
    columns = [c.name for c in fact_columns(fact, ctx.contract)]
    select = export_select(name, columns, export_time(fact), day, run_id=run)
    prefix = export_prefix(day, run)
    ctx.engine.write_parquet_partitioned(select, str(own), EXPORT_PARTITIONS, prefix)
    repaired = tuple(p for p in same_day if p != own)
    scope = "date" if run is None else "run"
    return PendingExport(name, own, final, prefix, rows, scope, repaired)


def staging_dir(final: Path, logical_date: str, run_id: str | None = None) -> Path:
    """Next to the export folder, hidden from every reader of it: ``<date>`` for a date's
    export, ``<date>.<run id>`` for a micro-batch's own rows."""
    leaf = logical_date if run_id is None else f"{logical_date}.{run_id}"
    return final.parent / f".{final.name}.staging" / leaf


def _staging_date(leaf: str) -> str:
    return leaf.split(".", 1)[0]


def export_prefix(logical_date: str, run_id: str | None = None) -> str:
    """File names of one logical date, ``part-<date>-<i>.parquet`` (fixed-length dates), or
    of one micro-batch of it, ``part-<date>-<run id>-<i>.parquet``: the date's glob
    ``part-<date>-*`` covers both, so a batch rerun of the date replaces every one."""
    return f"part-{logical_date}" if run_id is None else f"part-{logical_date}-{run_id}"


# -- 3. after commit ------------------------------------------------------------------


def finish_model(ctx: RunContext, pending: list[PendingExport]) -> None:
    """Swap each staged export into place, partition by partition."""
    for pe in pending:
        swapped = swap_partitions(pe.staging, pe.final, pe.prefix)
        for left in pe.repaired:  # the date's export now holds what they staged
            shutil.rmtree(left, ignore_errors=True)
        parent = pe.staging.parent
        if pe.repaired and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
        ctx.counts.model_stats().setdefault("facts", {}).setdefault(pe.fact, {})["export"] = {
            "path": str(pe.final),
            "rows": pe.rows,
            "scope": pe.scope,
            **swapped,
        }


def swap_partitions(staging: Path, final: Path, prefix: str) -> dict[str, int]:
    """Replace this date's files (``prefix-*.parquet``) under ``final`` by the staged ones.

    Other dates' files in the same partitions are untouched. Each file moves with
    ``os.replace`` (atomic on one filesystem); files of this date the new export did not
    write — partitions it no longer reaches — are removed afterwards, then empty
    partition folders and the staging folder.
    """
    final.mkdir(parents=True, exist_ok=True)
    new = sorted(p.relative_to(staging) for p in staging.glob("*/*/*.parquet"))
    for rel in new:
        (final / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / rel, final / rel)
    keep = set(new)
    removed = 0
    emptied: set[Path] = set()
    for old in final.glob(f"*/*/{prefix}-*.parquet"):
        if old.relative_to(final) not in keep:
            old.unlink()
            removed += 1
            emptied.add(old.parent)
    # only folders this export emptied go: an empty folder someone else made stays
    for month in sorted(emptied):
        if not any(month.iterdir()):
            month.rmdir()
            if not any(month.parent.iterdir()):
                month.parent.rmdir()
    shutil.rmtree(staging, ignore_errors=True)
    parent = staging.parent
    if parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
    return {
        "partitions": len({rel.parent for rel in new}),
        "files": len(new),
        "stale_removed": removed,
    }
