"""The run-metrics JSON: written for every run, pass or fail."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import resource
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import LedgerError
from ..workspace import Workspace
from .bind import schema_fingerprint

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract
    from .state import RunContext


def build_metrics(
    ctx: RunContext,
    *,
    started: dt.datetime,
    elapsed: float,
    engine: str,
    ledger_error: LedgerError | None,
) -> dict[str, Any]:
    c = ctx.contract
    counts = ctx.counts
    raw = ctx.binding.raw_records if ctx.binding else 0
    ledger = dict(counts.ledger or {})
    ledger.update(
        {
            "raw": raw,
            "blank_lines": ctx.binding.blank_lines if ctx.binding else 0,
            "corrupt": counts.corrupt or 0,
            "quarantined_by_reason": counts.by_reason,
        }
    )
    rules = {}
    failed = counts.failed
    routed = counts.routed or 0
    for r in ctx.rules:
        n = failed.get(r.name, 0)
        rules[r.name] = {
            "failed": n,
            "share": round(n / routed, 6) if routed else 0.0,
            "on_fail": r.on_fail,
            "owner": r.owner or c.owner,
            "version": r.version,
            "expect": ctx.loaded.redactor(r.text),
        }
    gate = ctx.gate
    status = "ledger_violation" if ledger_error else (gate.status if gate else "fail")
    return {
        "sluicegate_version": __version__,
        "run_id": ctx.run_id,
        "contract": {"name": c.name, "digest": ctx.loaded.digest, "path": str(ctx.loaded.path)},
        "logical_date": ctx.loaded.logical_date,
        "engine": engine,
        "started_at": started.isoformat(timespec="seconds"),
        "status": status,
        "input": {
            "format": c.source.format,
            "files": ctx.binding.manifest() if ctx.binding else [],
            "binding_digest": ctx.binding.digest if ctx.binding else None,
            "raw_records": raw,
            # source.format: iceberg / delta — the bound snapshot or version (run/bind*.py)
            "snapshot": ctx.binding.snapshot if ctx.binding else None,
        },
        "schema_fingerprint": schema_fingerprint(c.source),
        "partitions": ctx.partitions,
        "drift": ctx.drift,
        "ledger": ledger,
        "rules": rules,
        "builtin": {
            k: failed.get(k, 0) for k in ("corrupt_record", "type_mismatch", "missing_required")
        },
        "gate": {
            "status": gate.status if gate else None,
            "levels": [_numeric_level(lv.__dict__) for lv in gate.levels] if gate else [],
        },
        "clean_published": counts.clean_published or 0,
        "model": counts.model,  # dimensions, facts, marts, export (run/model.py)
        "incremental": counts.incremental,  # micro-batch files (run/incremental.py)
        "serve": counts.serve,  # one entry per serve: target (run/serve_step.py)
        "dlq": counts.dlq,  # rows the run added to the DLQ inbox (dlq/inbox.py)
        # table -> version the publish gave it (run/snapshot.py; formats with versions)
        "table_versions": counts.table_versions or {},
        "facts": [_numeric_fact(f.as_dict()) for f in ctx.facts],
        "timings": {**ctx.timings, "total": round(elapsed, 4)},
        "rows_per_second": round(raw / elapsed, 1) if elapsed else None,
        "peak_rss_bytes": peak_rss_bytes(),
        "memory_limit": ctx.memory_limit,  # the engine's buffer, sized at the bind
        "outputs": {
            "warehouse": str(Workspace(ctx.loaded).warehouse),
            "clean": c.outputs.clean,
            "quarantine": c.outputs.quarantine,
            "duplicates": c.outputs.duplicates,
            "facts": c.outputs.facts,
        },
        "error": ledger_error.render() if ledger_error else None,
        **_profile(ctx),
    }


def _profile(ctx: RunContext) -> dict[str, Any]:
    """``profile``: every statement with its stage, wall and CPU seconds (``run --profile``)."""
    timings = ctx.engine.profile
    if timings is None:
        return {}
    return {"profile": [dataclasses.asdict(t) for t in timings]}


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def runs_dir(loaded: LoadedContract) -> Path:
    """``<warehouse stem>.runs`` next to a warehouse file (``_runs`` inside a folder)."""
    return Workspace(loaded).runs_dir


def metrics_dir(ctx: RunContext) -> Path:
    return runs_dir(ctx.loaded)


def lock_path(loaded: LoadedContract) -> Path:
    """The writer lock of a contract, beside its run metrics (workspace.py)."""
    return Workspace(loaded).writer_lock


def write_metrics(ctx: RunContext, metrics: dict[str, Any]) -> Path:
    """Write ``<warehouse stem>.runs/<contract>/<logical date>__<run id>.json`` and ``latest.json``."""
    d = metrics_dir(ctx) / ctx.contract.name
    d.mkdir(parents=True, exist_ok=True)
    text = ctx.loaded.redactor(json.dumps(metrics, indent=2, default=str, sort_keys=False))
    path = d / f"{ctx.loaded.logical_date}__{ctx.run_id}.json"
    path.write_text(text + "\n", encoding="utf-8")
    (d / "latest.json").write_text(text + "\n", encoding="utf-8")
    return path


def _number(text: Any) -> Any:
    """Canonical decimal text as a JSON number (``"0.0125"`` → ``0.0125``; ``"5"`` → 5)."""
    if not isinstance(text, str) or not text:
        return None if text == "" else text
    try:
        d = Decimal(text)
    except ArithmeticError:
        return text
    return int(d) if d == d.to_integral_value() else float(d)


def _numeric_fact(fact: dict[str, Any]) -> dict[str, Any]:
    """A fact with its metric and thresholds as JSON numbers (the facts table keeps the
    canonical text)."""
    return {**fact, **{k: _number(fact[k]) for k in ("metric", "threshold_warn", "threshold_fail")}}


def _numeric_level(level: dict[str, Any]) -> dict[str, Any]:
    """A gate level with its metric as a JSON number, like its thresholds (the level keeps
    the canonical decimal text; ``0.0125`` is exact as a float's shortest repr)."""
    return {**level, "metric": _number(level.get("metric"))}
