"""The gate: fail the run, not the row.

Share = quarantined / routed records (records left after dedupe). ``≤ warn_above`` pass,
``≤ fail_above`` warn, above → fail. A rule's own ``fail_above`` judges its failure share;
an ``abort`` rule fails the run on any violation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

from ..compile.rules import CompiledRule

STATUS_ORDER = {"pass": 0, "warn": 1, "fail": 2}


def share(n: int, d: int) -> Decimal:
    """n/d as an exact decimal rounded to 6 places (canonical: no float noise)."""
    if d == 0:
        return Decimal(0)
    return (Decimal(n) / Decimal(d)).quantize(Decimal("0.000001"), rounding=ROUND_HALF_EVEN)


def canonical(d: Decimal) -> str:
    """Canonical decimal string: ``0.0125``, not ``0.012499999`` and not ``1.25E-2``."""
    text = format(d.normalize(), "f")
    return text if text not in ("-0",) else "0"


@dataclass
class GateLevel:
    check: str
    status: str
    metric: str
    threshold_warn: float | None
    threshold_fail: float | None
    detail: str = ""


@dataclass
class GateResult:
    status: str
    levels: list[GateLevel] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        return [f"{lv.check}: {lv.detail}" for lv in self.levels if lv.status != "pass"]


def level(value: Decimal, warn: float | None, fail: float | None) -> str:
    if fail is not None and value > Decimal(str(fail)):
        return "fail"
    if warn is not None and value > Decimal(str(warn)):
        return "warn"
    return "pass"


def evaluate_gate(
    *,
    quarantined: int,
    routed: int,
    warn_above: float,
    fail_above: float,
    rules: list[CompiledRule],
    rule_failures: dict[str, int],
) -> GateResult:
    """Evaluate every gate level; the run's status is the worst of them."""
    levels = []
    q_share = share(quarantined, routed)
    st = level(q_share, warn_above, fail_above)
    levels.append(
        GateLevel(
            "quarantine_share",
            st,
            canonical(q_share),
            warn_above,
            fail_above,
            f"{quarantined} of {routed} records quarantined ({canonical(q_share * 100)}%)",
        )
    )
    for r in rules:
        failed = rule_failures.get(r.name, 0)
        rs = share(failed, routed)
        if r.on_fail == "abort":
            st = "fail" if failed else "pass"
            levels.append(
                GateLevel(
                    f"rule:{r.name}",
                    st,
                    str(failed),
                    None,
                    0,
                    f"abort rule violated by {failed} records",
                )
            )
        elif r.fail_above is not None:
            st = level(rs, None, r.fail_above)
            levels.append(
                GateLevel(
                    f"rule:{r.name}",
                    st,
                    canonical(rs),
                    None,
                    r.fail_above,
                    f"{failed} failures, share {canonical(rs)} > {r.fail_above}",
                )
            )
    worst = max((lv.status for lv in levels), key=STATUS_ORDER.__getitem__)
    return GateResult(worst, levels)


def escalate(gate: GateResult, levels: list[GateLevel]) -> GateResult:
    """The gate plus governed checks that decide the run (``error``-severity facts).

    Levels for the same check are replaced, so escalating twice (before publishing and
    again with the read-back facts) never lists a check twice.
    """
    names = {lv.check for lv in levels}
    kept = [lv for lv in gate.levels if lv.check not in names] + list(levels)
    worst = max((lv.status for lv in kept), key=STATUS_ORDER.__getitem__, default="pass")
    return GateResult(worst, kept)
