"""What the report shows, read from the governed tables: the run record (its metrics JSON
as committed with the outputs), the facts' trend, the DLQ inbox, the model's counts.

One read-only pass over the warehouse; the result is plain data (:class:`ReportData`),
so the page is a function of the warehouse alone — a DuckDB file or a Spark warehouse.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from sqlglot import exp

from ..compile import dashboard
from ..compile.facts import RUNS_TABLE
from ..compile.render import col, ident, lit
from ..contract.loader import LoadedContract
from ..engines import Engine
from ..errors import UsageError
from .reader import open_warehouse, unknown_run, warehouse_of

#: DLQ rows shown with their reasons (the newest first).
SAMPLE_ROWS = 10
#: Characters of a sampled row's JSON shown before it is cut.
SAMPLE_CHARS = 240
DLQ_STATUSES = ("quarantined", "fixed", "recycled", "rejected")


@dataclass
class ReportData:
    """Everything the page shows, as plain values."""

    contract: str
    warehouse: str
    metrics: dict[str, Any]
    trend: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    dlq_by_reason: list[dict[str, Any]] = field(default_factory=list)
    dlq_by_status: dict[str, int] = field(default_factory=dict)
    dlq_sample: list[dict[str, Any]] = field(default_factory=list)
    runs_in_trend: int = 0


def _table(name: str) -> exp.Table:
    return exp.Table(this=ident(name))


def run_record(eng: Engine, contract: str, run_id: str | None) -> dict[str, Any] | None:
    """The committed metrics of ``run_id``, else of the contract's newest run."""
    if not eng.table_exists(RUNS_TABLE):
        return None
    cond = exp.EQ(this=col("contract"), expression=lit(contract))
    if run_id is not None:
        cond = exp.and_(cond, exp.EQ(this=col("run_id"), expression=lit(run_id)))
    q = (
        exp.select(col("metrics"))
        .from_(_table(RUNS_TABLE))
        .where(cond)
        .order_by(exp.Ordered(this=col("started_at"), desc=True))
        .limit(1)
    )
    rows = eng.fetch(q)
    return json.loads(rows[0][0]) if rows and rows[0][0] else None


def _number(text: Any) -> float | None:
    try:
        return float(Decimal(str(text))) if text is not None else None
    except (InvalidOperation, ValueError):
        return None


def trend(
    eng: Engine, loaded: LoadedContract, runs: int, has_status: bool
) -> dict[str, list[dict[str, Any]]]:
    """The last ``runs`` facts of every check with a numeric metric, oldest first."""
    c = loaded.contract
    if not eng.table_exists(c.outputs.facts):
        return {}
    q = dashboard.build(
        "trend",
        c.outputs.facts,
        c.name,
        quarantine=c.outputs.quarantine,
        dlq_status=has_status,
        runs=runs,
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for r in eng.fetch_dicts(q.query):
        value = _number(r.get("metric"))
        if value is None:
            continue
        out.setdefault(str(r["check_id"]), []).append(
            {
                "label": str(r.get("logical_date")),
                "value": value,
                "status": r.get("status"),
                "warn": _number(r.get("threshold_warn")),
                "fail": _number(r.get("threshold_fail")),
                "run_id": r.get("run_id"),
            }
        )
    return out


def dlq(eng: Engine, loaded: LoadedContract) -> tuple[list[dict], dict[str, int], list[dict]]:
    """DLQ rows by reason and status, rows by status, and a redacted sample of waiting rows."""
    inbox = loaded.contract.outputs.quarantine
    if not eng.table_exists(inbox):
        return [], {}, []
    names = {n for n, _t in eng.columns(inbox)}
    status = col("_dlq_status") if "_dlq_status" in names else lit("quarantined")
    grouped = (
        exp.select(
            exp.alias_(col("_reason"), "reason"),
            exp.alias_(status.copy(), "status"),
            exp.alias_(exp.func("COUNT", exp.Star()), "n"),
        )
        .from_(_table(inbox))
        .group_by(col("_reason"), status.copy())
        .order_by(exp.Ordered(this=exp.column("n"), desc=True), col("_reason"))
        .limit(1000)
    )
    red = loaded.redactor
    by_reason: dict[str, dict[str, Any]] = {}
    by_status = dict.fromkeys(DLQ_STATUSES, 0)
    for r in eng.fetch_dicts(grouped):
        reason = red(str(r["reason"]))
        row = by_reason.setdefault(reason, {"reason": reason, **dict.fromkeys(DLQ_STATUSES, 0)})
        row[str(r["status"])] = row.get(str(r["status"]), 0) + int(r["n"])
        by_status[str(r["status"])] = by_status.get(str(r["status"]), 0) + int(r["n"])
    wanted = [
        n
        for n in (
            "_dlq_sk",
            "_reason",
            "_dlq_status",
            "_dlq_attempts",
            "_source_file",
            "_source_line",
            "_logical_date",
            "_row_data",
        )
        if n in names
    ]
    sample_q = exp.select(*[col(n) for n in wanted]).from_(_table(inbox))
    if "_dlq_status" in names:
        sample_q = sample_q.where(
            exp.In(this=col("_dlq_status"), expressions=[lit(s) for s in dashboard.DLQ_WAITING])
        )
    sample_q = sample_q.order_by(
        exp.Ordered(this=col("_logical_date"), desc=True), col("_source_file"), col("_source_line")
    ).limit(SAMPLE_ROWS)
    sample = []
    for r in eng.fetch_dicts(sample_q):
        row = {k.lstrip("_"): (red(v) if isinstance(v, str) else v) for k, v in r.items()}
        data = str(row.get("row_data") or "")
        row["row_data"] = data if len(data) <= SAMPLE_CHARS else data[:SAMPLE_CHARS] + " …"
        sample.append(row)
    return list(by_reason.values()), by_status, sample


def _metrics_file(d: Path, run_id: str | None) -> dict[str, Any] | None:
    """A run that published nothing (a ledger violation) has only its metrics file."""
    paths = sorted(d.glob(f"*__{run_id}.json")) if run_id else [d / "latest.json"]
    for p in paths:
        if p.is_file():
            return json.loads(p.read_text(encoding="utf-8"))
    return None


def collect(
    loaded: LoadedContract, *, metrics_dir: Path, runs: int = 90, run_id: str | None = None
) -> ReportData:
    """Read everything the report shows for ``run_id`` (default: the newest run)."""
    c = loaded.contract
    with open_warehouse(loaded) as eng:
        committed = run_record(eng, c.name, run_id)
        latest = _metrics_file(metrics_dir, run_id)
        metrics = committed
        if latest is not None and (
            committed is None or str(latest.get("started_at")) > str(committed.get("started_at"))
        ):
            metrics = latest  # a newer run that published nothing (ledger violation)
        if metrics is None and run_id is not None:
            raise unknown_run(
                eng,
                c.name,
                run_id,
                f"the warehouse {warehouse_of(loaded)} has no record of run {run_id} of '{c.name}'",
            )
        if metrics is None:
            what = f"run {run_id}" if run_id else "any run"
            raise UsageError(
                f"the warehouse {warehouse_of(loaded)} has no record of {what} of '{c.name}'",
                hint="run the contract first: sluicegate run CONTRACT"
                if run_id is None
                else "list runs with: sluicegate facts trend CONTRACT --check quarantine_share",
            )
        has_status = eng.table_exists(c.outputs.quarantine) and "_dlq_status" in {
            n for n, _t in eng.columns(c.outputs.quarantine)
        }
        series = trend(eng, loaded, runs, has_status)
        by_reason, by_status, sample = dlq(eng, loaded)
    return ReportData(
        contract=c.name,
        warehouse=warehouse_of(loaded),
        metrics=metrics,
        trend=series,
        dlq_by_reason=by_reason,
        dlq_by_status=by_status,
        dlq_sample=sample,
        runs_in_trend=max((len(v) for v in series.values()), default=0),
    )
