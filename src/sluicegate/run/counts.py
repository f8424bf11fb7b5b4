"""A run's counts as typed records, not a dict keyed by strings.

Three records, each filled by the stage that counts it and read by the metrics, facts,
gate and progress display:

* :class:`RankedCounts` — one query over every parsed record (dedupe stage): totals and,
  per declared column, how many records carry it, how many failed to cast and how many
  are non-NULL (the drift signals);
* :class:`RoutedCounts` — one query over the routed rows (route stage): clean, per
  reason, failures per check;
* :class:`RunCounts` — what the run keeps for the metrics JSON (``RunContext.counts``):
  the totals above plus what later stages add (ledger, publish, DLQ, model, micro-batch,
  serve, table versions). ``None`` means "not counted by this run (yet)".

The queries (compile/metrics.py) return one row of labelled numbers, labels such as
``present:<column>``; :meth:`RankedCounts.from_row` and :meth:`RoutedCounts.from_row`
are the only places that read those labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


def _split(labels: Sequence[str], row: Sequence[Any]) -> tuple[dict[str, int], dict[str, dict]]:
    """Plain labels → number; ``kind:name`` labels → kind → name → number (in order)."""
    plain: dict[str, int] = {}
    per_name: dict[str, dict[str, int]] = {}
    for label, value in zip(labels, row, strict=True):
        kind, sep, name = label.partition(":")
        if sep:
            per_name.setdefault(kind, {})[name] = int(value)
        else:
            plain[label] = int(value)
    return plain, per_name


@dataclass(frozen=True)
class RankedCounts:
    """Counts over every parsed record (compile/metrics.py ``ranked_counts``)."""

    parsed: int
    duplicates: int
    corrupt: int
    undeclared_rows: int
    #: declared column → records (not corrupt) whose object has the field
    present: dict[str, int]
    #: declared column → records whose value did not cast
    mismatch: dict[str, int]
    #: declared column → records with a non-NULL typed value
    nonnull: dict[str, int]

    @classmethod
    def from_row(cls, labels: Sequence[str], row: Sequence[Any]) -> RankedCounts:
        plain, per = _split(labels, row)
        return cls(
            **plain,
            present=per.get("present", {}),
            mismatch=per.get("mismatch", {}),
            nonnull=per.get("nonnull", {}),
        )


@dataclass(frozen=True)
class RoutedCounts:
    """Counts over the routed rows (compile/metrics.py ``routed_counts``)."""

    routed: int
    clean: int
    #: routing check → rows quarantined for it (checks that route only)
    reason: dict[str, int]
    #: check → rows failing it
    failed: dict[str, int]

    @classmethod
    def from_row(cls, labels: Sequence[str], row: Sequence[Any]) -> RoutedCounts:
        plain, per = _split(labels, row)
        return cls(**plain, reason=per.get("reason", {}), failed=per.get("failed", {}))


@dataclass
class RunCounts:
    """The run's counts as the metrics and facts report them (run/metrics.py reads them)."""

    parsed: int | None = None
    duplicates: int | None = None
    corrupt: int | None = None
    routed: int | None = None
    clean: int | None = None
    quarantined: int | None = None
    #: reason → quarantined rows (reasons with at least one row)
    by_reason: dict[str, int] = field(default_factory=dict)
    #: check → failing rows (every check)
    failed: dict[str, int] = field(default_factory=dict)
    #: the proved ledger (run/publish.py ``prove_ledger``)
    ledger: dict[str, Any] | None = None
    clean_published: int | None = None
    #: rows the run added to the DLQ inbox (dlq/inbox.py)
    dlq: dict[str, Any] | None = None
    #: dimensions, facts, marts, export (run/model.py)
    model: dict[str, Any] | None = None
    #: micro-batch files or offsets (run/incremental.py, run/offsets.py)
    incremental: dict[str, Any] | None = None
    #: one entry per serve target (run/serve_step.py)
    serve: list[dict[str, Any]] | None = None
    #: table → version the publish gave it (run/snapshot.py)
    table_versions: dict[str, Any] = field(default_factory=dict)

    def take_ranked(self, c: RankedCounts) -> None:
        self.parsed, self.duplicates, self.corrupt = c.parsed, c.duplicates, c.corrupt

    def take_routed(self, c: RoutedCounts) -> None:
        self.routed, self.clean = c.routed, c.clean
        self.quarantined = c.routed - c.clean
        self.by_reason = {k: n for k, n in c.reason.items() if n}
        self.failed = dict(c.failed)

    def model_stats(self) -> dict[str, Any]:
        """The model's stats, created empty on first use."""
        if self.model is None:
            self.model = {"dimensions": {}, "facts": {}, "marts": {}}
        return self.model
