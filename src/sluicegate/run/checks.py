"""The governed checks a run records, and the fact record each one produces.

A leaf of the run package: the run's state (run/state.py) holds a list of :class:`Fact`,
and the modules that compute facts (run/facts.py, the micro-batch's
``processed_files_unchanged`` in run/incremental.py) build them with :func:`_check`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from .gate import canonical

#: Governed run checks: id -> (version, severity). Bump a version when its logic changes.
CHECKS: dict[str, tuple[int, str]] = {
    "source_available": (1, "error"),
    "schema_exact": (1, "error"),
    "freshness": (1, "error"),
    "invalid_share": (1, "error"),
    "quarantine_share": (1, "error"),
    "ledger_conserved": (1, "error"),
    "clean_nonempty": (1, "warning"),
    "output_readback": (1, "error"),
}
#: Checks only micro-batches have (run/incremental.py, docs/streaming.md).
STREAM_CHECKS: dict[str, tuple[int, str]] = {
    "processed_files_unchanged": (1, "warning"),
    "kafka_offsets_contiguous": (1, "error"),  # run/offsets.py: lost offsets warn the gate
}


@dataclass(frozen=True)
class Fact:
    """One governed fact of one run (the contract-independent part of a facts row)."""

    check_id: str
    kind: str  # check | rule | builtin
    version: int
    owner: str | None
    severity: str  # error | warning
    status: str  # pass | warn | fail
    metric: str | None
    diagnostic: str
    detail: str
    threshold_warn: Decimal | None = None
    threshold_fail: Decimal | None = None
    failed: int | None = None
    evaluated: int | None = None
    rule_name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("threshold_warn", "threshold_fail"):
            d[k] = None if d[k] is None else canonical(d[k])
        return d


def _dec(x: float | int | None) -> Decimal | None:
    return None if x is None else Decimal(str(x))


def _check(
    check_id: str,
    owner: str | None,
    status: str,
    metric: Decimal | None,
    diagnostic: str,
    detail: str,
    **kw: Any,
) -> Fact:
    version, severity = (CHECKS | STREAM_CHECKS)[check_id]
    return Fact(
        check_id=check_id,
        kind="check",
        version=version,
        owner=owner,
        severity=severity,
        status=status,
        metric=None if metric is None else canonical(metric),
        diagnostic=diagnostic if status != "pass" else (diagnostic or "OK"),
        detail=detail,
        **kw,
    )
