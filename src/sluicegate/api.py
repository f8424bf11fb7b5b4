"""The public Python API: load a contract, run it, read its facts and DLQ, make its report.

The ``sluicegate`` command is a thin layer over exactly these functions (``cli/main.py``'s
``run`` calls :func:`run`), so an orchestrator that imports sluicegate gets the same
runs, verdicts, exit codes, alerts and lineage events as a shell script. Every function
takes a contract path or a :class:`LoadedContract` from :func:`load`; errors are
:class:`~sluicegate.errors.SluiceError` subclasses that carry their exit code and a hint.

Example:
    >>> import sluicegate
    >>> result = sluicegate.run("examples/orders/contract.yml", logical_date="2024-01-31")
    >>> result.status, result.exit_code, result.ledger.balanced      # doctest: +SKIP
    ('warn', 0, True)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .contract.loader import LoadedContract
from .errors import UsageError
from .report.events import Listener

ContractLike = str | os.PathLike[str] | LoadedContract
Status = Literal["pass", "warn", "fail", "ledger_violation"]
FactsQuery = Literal["latest", "trend", "attention"]

__all__ = [
    "ContractLike",
    "Ledger",
    "LoadedContract",
    "RunOutcome",
    "dlq_counts",
    "dlq_rows",
    "facts",
    "load",
    "report",
    "run",
]


def load(
    path: str | os.PathLike[str],
    *,
    vars: Mapping[str, Any] | None = None,
    logical_date: str | None = None,
) -> LoadedContract:
    """Load and validate a contract (shape, types, rule SQL, column names).

    Args:
        path: the YAML contract.
        vars: values for ``${var}`` tokens; they win over the contract's ``vars:``.
        logical_date: ISO date for ``${logical_date}`` (default: today, UTC).

    Raises:
        ContractError: (exit code 2) naming the file, key, line and the fix.

    Example:
        >>> c = sluicegate.load("contract.yml", vars={"root": "/feeds"})  # doctest: +SKIP
        >>> c.contract.name, c.digest[:12]                                # doctest: +SKIP
    """
    from .compile.contract_check import load_contract

    variables = {k: str(v) for k, v in (vars or {}).items()}
    return load_contract(path, variables=variables, logical_date=logical_date)


def _loaded(
    contract: ContractLike, vars: Mapping[str, Any] | None, logical_date: str | None
) -> LoadedContract:
    if isinstance(contract, LoadedContract):
        if vars or logical_date:
            raise UsageError(
                "vars and logical_date are fixed when a contract is loaded",
                hint="pass them to sluicegate.load(), or pass the contract's path here",
            )
        return contract
    return load(contract, vars=vars, logical_date=logical_date)


@dataclass(frozen=True)
class Ledger:
    """The row ledger of one run: ``raw = clean + quarantined + duplicates``."""

    raw: int
    clean: int
    quarantined: int
    duplicates: int
    corrupt: int
    quarantined_by_reason: dict[str, int]
    balanced: bool
    violations: list[dict[str, Any]]

    @classmethod
    def of(cls, metrics: Mapping[str, Any]) -> Ledger:
        led = metrics.get("ledger") or {}
        return cls(
            raw=int(led.get("raw") or 0),
            clean=int(led.get("clean") or 0),
            quarantined=int(led.get("quarantined") or 0),
            duplicates=int(led.get("duplicates") or 0),
            corrupt=int(led.get("corrupt") or 0),
            quarantined_by_reason=dict(led.get("quarantined_by_reason") or {}),
            balanced=bool(led.get("balanced", False)),
            violations=list(led.get("violations") or []),
        )


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run` returns: the verdict, its exit code, and where to look further.

    ``facts`` are the run's governed facts (one per check, rule and built-in reason, plus
    ``notify:*`` facts for alerts and lineage events that could not be delivered), each a
    dict with the facts table's columns. ``metrics`` is the run-metrics JSON document.
    """

    status: Status
    exit_code: int
    run_id: str
    metrics: dict[str, Any]
    metrics_path: Path | None
    notifications: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ledger(self) -> Ledger:
        return Ledger.of(self.metrics)

    @property
    def facts(self) -> list[dict[str, Any]]:
        return list(self.metrics.get("facts") or [])

    @property
    def passed(self) -> bool:
        """True when the gate let the clean rows through (pass or warn)."""
        return self.exit_code == 0


def run(
    contract: ContractLike,
    *,
    vars: Mapping[str, Any] | None = None,
    logical_date: str | None = None,
    engine: Literal["duckdb", "spark"] | None = None,
    engine_options: Mapping[str, Any] | None = None,
    listener: Listener | None = None,
    notify: bool = True,
) -> RunOutcome:
    """Run a contract once for its logical date: bind, read, dedupe, route, prove, publish.

    Never raises for bad data: a failed gate is ``status="fail"``, ``exit_code=1``. Then,
    when the contract has ``alerts:`` or ``lineage:`` (and ``notify`` is true), the alerts
    are sent and the lineage events emitted; a notifier that fails is recorded as a
    ``notify:*`` fact and never changes the status or exit code.

    Args:
        contract: a path or a :class:`LoadedContract`.
        vars: ``${var}`` values (only with a path).
        logical_date: the date the run is for (only with a path; default today, UTC).
        engine: ``duckdb`` or ``spark`` (default: the contract's ``engine:``).
        engine_options: e.g. ``{"master": "local[2]"}`` for Spark, ``{"profile": True}``.
        listener: receives progress events (``sluicegate.report.events.Listener``).
        notify: send alerts and lineage events (default True).

    Raises:
        ContractError: exit 2. NotReadyError: exit 4. LockedError: exit 5.

    Example:
        >>> r = sluicegate.run("contract.yml", vars={"root": "/feeds"})  # doctest: +SKIP
        >>> r.status, r.ledger.raw == r.ledger.clean + r.ledger.quarantined + r.ledger.duplicates
    """
    from .notify.dispatch import after_run, before_run
    from .run.pipeline import run_contract

    loaded = _loaded(contract, vars, logical_date)
    started = before_run(loaded, engine) if notify else None
    result = run_contract(
        loaded, engine_name=engine, listener=listener, engine_options=dict(engine_options or {})
    )
    sent: list[dict[str, Any]] = []
    if notify:
        sent = after_run(loaded, result, started)
    return RunOutcome(
        status=result.status,  # type: ignore[arg-type]
        exit_code=result.exit_code,
        run_id=str(result.metrics.get("run_id") or ""),
        metrics=result.metrics,
        metrics_path=result.metrics_path,
        notifications=sent,
    )


def facts(
    contract: ContractLike,
    query: FactsQuery = "latest",
    *,
    check: str | None = None,
    runs: int = 90,
    limit: int | None = None,
    vars: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The dashboard queries on the contract's warehouse, read-only.

    ``latest``: the newest fact of every check; ``trend``: the last ``runs`` runs of each
    check (``check="quarantine_share"`` for one); ``attention``: warn/fail facts and DLQ
    rows waiting.

    Example:
        >>> [f["check_id"] for f in sluicegate.facts("contract.yml") if f["status"] != "pass"]
    """
    from .report.reader import facts_query

    return facts_query(_loaded(contract, vars, None), query, check=check, runs=runs, limit=limit)


def dlq_rows(
    contract: ContractLike,
    *,
    status: Literal["quarantined", "fixed", "recycled", "rejected"] | None = None,
    reason: str | None = None,
    limit: int | None = 100,
    vars: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Rows of the DLQ inbox (oldest lineage first), with secrets redacted.

    Example:
        >>> rows = sluicegate.dlq_rows("contract.yml", reason="known_product", limit=5)
    """
    from .dlq.store import open_store

    loaded = _loaded(contract, vars, None)
    with open_store(loaded, read_only=True) as store:
        rows = store.rows(status=status, reason=reason, limit=limit)
    red = loaded.redactor
    return [{k: red(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]


def dlq_counts(contract: ContractLike, *, vars: Mapping[str, Any] | None = None) -> dict[str, int]:
    """DLQ inbox rows per status (quarantined, fixed, recycled, rejected)."""
    from .dlq.store import open_store

    with open_store(_loaded(contract, vars, None), read_only=True) as store:
        return store.by_status()


def report(
    contract: ContractLike,
    *,
    out: str | os.PathLike[str] | None = None,
    runs: int = 90,
    run_id: str | None = None,
    vars: Mapping[str, Any] | None = None,
) -> Path:
    """Write the contract's HTML report (one offline file) and return its path.

    Reads the governed tables of the warehouse (facts, run records, DLQ, model), so it
    works for a DuckDB or a Spark warehouse alike. Default path: ``report.html`` beside
    the run metrics (``<warehouse>.runs/<contract>/report.html``).

    Example:
        >>> sluicegate.report("contract.yml", out="quality.html", runs=30)  # doctest: +SKIP
    """
    from .report.build import write_report

    loaded = _loaded(contract, vars, None)
    return write_report(loaded, out=None if out is None else Path(out), runs=runs, run_id=run_id)
