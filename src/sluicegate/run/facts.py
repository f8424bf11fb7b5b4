"""Quality facts: one per rule, one per built-in reason, one per governed check.

Facts are computed in two steps because some need the warehouse. Before publishing
(:func:`pre_publish_facts`, from the run's own counts): source availability, exact schema,
freshness, invalid share, quarantine share, non-empty clean output, rules. Inside the
publish transaction (:func:`finish_facts`, from read-back counts): ledger conservation,
output read-back, and the schema compared with the previous published run.

A fact's ``severity`` says whether it decides the run: ``error`` facts that warn or fail
make the run warn or fail (a failed run withholds its clean rows, like a failed gate);
``warning`` facts are recorded and shown to operators but never change the exit code.
Metrics are canonical decimal strings (``0.0125``) computed with :mod:`decimal`.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .checks import CHECKS, STREAM_CHECKS, Fact, _check, _dec
from .gate import STATUS_ORDER, GateLevel, canonical, level, share

if TYPE_CHECKING:
    from .state import RunContext

__all__ = ["CHECKS", "STREAM_CHECKS", "Fact", "fact_rows", "finish_facts", "gate_levels"]

BUILTINS = ("corrupt_record", "type_mismatch", "missing_required")
#: Drift kinds that make the data's schema differ from the declared one (a value that
#: merely fails to cast is an invalid record, counted by ``invalid_share``).
SCHEMA_DRIFT_KINDS = ("undeclared_field", "declared_field_absent", "field_never_casts")


def _share_status(value: Decimal, warn: Decimal | None, fail: Decimal | None) -> str:
    return level(
        value, None if warn is None else float(warn), None if fail is None else float(fail)
    )


def _share_diag(prefix: str, status: str) -> str:
    return {"pass": "OK", "warn": f"{prefix}_ABOVE_WARN", "fail": f"{prefix}_ABOVE_FAIL"}[status]


# -- before publishing ------------------------------------------------------------------


def freshness_reference(logical_date: str, now: dt.datetime) -> dt.datetime:
    """Age is measured at the end of the logical date, or now if that is still ahead.

    So a backfill of an old date is judged as of that date (reruns agree), and today's
    run is judged as of now. Naive UTC, like the engines' TIMESTAMP values.
    """
    end = dt.datetime.combine(dt.date.fromisoformat(logical_date), dt.time()) + dt.timedelta(days=1)
    now_naive = now.astimezone(dt.UTC).replace(tzinfo=None) if now.tzinfo else now
    return min(end, now_naive)


def freshness_fact(ctx: RunContext, newest: dt.datetime | dt.date | None, now: dt.datetime) -> Fact:
    c = ctx.contract
    spec = c.source.freshness
    owner = c.owner
    if spec is None:
        return _check(
            "freshness",
            owner,
            "pass",
            None,
            "FRESHNESS_NOT_DECLARED",
            "source.freshness is not declared",
        )
    max_age = Decimal(spec.max_age_seconds)
    stale = spec.on_stale
    thresholds = {
        "threshold_warn": max_age if stale == "warn" else None,
        "threshold_fail": max_age if stale == "fail" else None,
    }
    kind = (
        c.source.columns[spec.column].parsed.kind if spec.column in c.source.columns else "string"
    )
    if kind not in ("date", "timestamp"):
        return _check(
            "freshness",
            owner,
            stale,
            None,
            "FRESHNESS_UNSUPPORTED_TYPE",
            f"freshness column '{spec.column}' is {kind}, not a DATE or TIMESTAMP",
            **thresholds,
        )
    if newest is None:
        return _check(
            "freshness",
            owner,
            stale,
            None,
            "FRESHNESS_NO_VALUES",
            f"no clean record has a value in '{spec.column}'",
            **thresholds,
        )
    if not isinstance(newest, dt.datetime):
        newest = dt.datetime.combine(newest, dt.time())
    if newest.tzinfo is not None:
        newest = newest.astimezone(dt.UTC).replace(tzinfo=None)
    ref = freshness_reference(ctx.loaded.logical_date, now)
    age = Decimal(int((ref - newest).total_seconds()))
    ok = age <= max_age
    return _check(
        "freshness",
        owner,
        "pass" if ok else stale,
        age,
        "OK" if ok else "FRESHNESS_STALE",
        f"newest {spec.column} {newest.isoformat(sep=' ')} is {age}s old at {ref.isoformat(sep=' ')}"
        f" (max_age {spec.max_age})",
        **thresholds,
    )


def schema_fact(ctx: RunContext, fingerprint: str, previous: str | None) -> Fact:
    """Exact schema: the declared fingerprint against the expected one, the previous run's,
    and what the data showed (undeclared fields, declared fields never present)."""
    c = ctx.contract
    expected = c.source.expected_fingerprint
    deviations = [e for e in ctx.drift if e["kind"] in SCHEMA_DRIFT_KINDS]
    problems = [f"{e['kind']} {e['field']}" for e in deviations]
    status, diag = "pass", "OK"
    if problems:
        status, diag = "warn", "SCHEMA_DRIFT"
    if previous is not None and previous != fingerprint:
        status, diag = "warn", "SCHEMA_CHANGED"
        problems.insert(0, f"fingerprint changed since the previous run ({previous[:12]}…)")
    if expected is not None and expected != fingerprint:
        status, diag = "fail", "SCHEMA_FINGERPRINT_MISMATCH"
        problems.insert(0, f"fingerprint {fingerprint[:12]}… != expected {expected[:12]}…")
    metric = Decimal(len(problems))
    detail = "; ".join(problems) if problems else f"fingerprint {fingerprint[:12]}… matches"
    return _check(
        "schema_exact",
        c.owner,
        status,
        metric,
        diag,
        detail,
        threshold_fail=Decimal(0) if expected else None,
        failed=len(problems),
    )


def pre_publish_facts(
    ctx: RunContext, *, newest: dt.datetime | dt.date | None, now: dt.datetime, fingerprint: str
) -> list[Fact]:
    """Every fact the run's own counts decide, in a fixed order."""
    c = ctx.contract
    owner = c.owner
    counts = ctx.counts
    binding = ctx.binding
    files = len(binding.files) if binding else 0
    raw = binding.raw_records if binding else 0
    routed = counts.routed or 0
    warn, fail = _dec(c.gate.warn_above), _dec(c.gate.fail_above)
    facts: list[Fact] = []

    def share_check(check_id: str, n: int, what: str) -> Fact:
        """``n`` of the routed records, judged by the gate's thresholds."""
        s = share(n, routed)
        st = _share_status(s, warn, fail)
        return _check(
            check_id,
            owner,
            st,
            s,
            _share_diag(check_id.upper(), st),
            f"{n} of {routed} records {what}",
            threshold_warn=warn,
            threshold_fail=fail,
            failed=n,
            evaluated=routed,
        )

    facts.append(
        _check(
            "source_available",
            owner,
            "pass" if files else "fail",
            Decimal(files),
            "OK" if files else "SOURCE_NO_FILES",
            f"{files} files, {raw} records" if files else f"no input files at '{c.source.path}'",
            threshold_fail=Decimal(0),
            evaluated=raw,
        )
    )
    facts.append(schema_fact(ctx, fingerprint, None))
    facts.append(freshness_fact(ctx, newest, now))

    by_reason = counts.by_reason
    invalid = sum(by_reason.get(b, 0) for b in BUILTINS)
    facts.append(
        share_check(
            "invalid_share",
            invalid,
            "unreadable as declared (corrupt, type mismatch, missing required)",
        )
    )
    facts.append(share_check("quarantine_share", counts.quarantined or 0, "quarantined"))
    clean = counts.clean or 0
    facts.append(
        _check(
            "clean_nonempty",
            owner,
            "pass" if clean else "fail",
            Decimal(clean),
            "OK" if clean else "CLEAN_EMPTY",
            f"{clean} clean records" if clean else "the run produced no clean record",
            threshold_fail=Decimal(0),
            evaluated=routed,
        )
    )
    failed = counts.failed
    for b in BUILTINS:
        n = failed.get(b, 0)
        s = share(n, routed)
        st = _share_status(s, warn, fail)
        facts.append(
            Fact(
                check_id=f"builtin:{b}",
                kind="builtin",
                version=1,
                owner=owner,
                severity="warning",
                status=st,
                metric=canonical(s),
                diagnostic=_share_diag("BUILTIN_SHARE", st),
                detail=f"{n} of {routed} records",
                threshold_warn=warn,
                threshold_fail=fail,
                failed=n,
                evaluated=routed,
                rule_name=b,
            )
        )
    for r in ctx.rules:
        facts.append(rule_fact(r, failed.get(r.name, 0), routed, warn, fail, r.owner or owner))
    return facts


def rule_fact(
    r: Any, n: int, routed: int, warn: Decimal | None, fail: Decimal | None, owner: str | None
) -> Fact:
    """A rule's fact: its failure share judged like the gate judges it.

    ``abort`` rules fail on any violation; rules with their own ``fail_above`` are judged
    by it; other rules by the gate's thresholds. ``warn`` rules keep rows clean, so their
    fact is reported (severity warning) but does not decide the run.
    """
    s = share(n, routed)
    if r.on_fail == "abort":
        tw, tf = None, Decimal(0)
        st = "fail" if n else "pass"
        metric, diag = Decimal(n), ("RULE_ABORT_VIOLATED" if n else "OK")
    else:
        tw, tf = (None, _dec(r.fail_above)) if r.fail_above is not None else (warn, fail)
        st = _share_status(s, tw, tf)
        metric, diag = s, _share_diag("RULE_SHARE", st)
    return Fact(
        check_id=f"rule:{r.name}",
        kind="rule",
        version=r.version,
        owner=owner,
        severity="warning" if r.on_fail == "warn" else "error",
        status=st,
        metric=canonical(metric),
        diagnostic=diag,
        detail=f"{n} of {routed} records failed ({r.on_fail})",
        threshold_warn=tw,
        threshold_fail=tf,
        failed=n,
        evaluated=routed,
        rule_name=r.name,
    )


# -- inside the publish transaction --------------------------------------------------------


def finish_facts(
    ctx: RunContext,
    facts: list[Fact],
    *,
    ledger: dict[str, Any],
    fingerprint: str,
    previous_fingerprint: str | None,
) -> list[Fact]:
    """Add ledger conservation and output read-back; compare the schema with the last run."""
    owner = ctx.contract.owner
    out = [
        schema_fact(ctx, fingerprint, previous_fingerprint) if f.check_id == "schema_exact" else f
        for f in facts
    ]
    violations = ledger.get("violations", [])
    cons = [v for v in violations if v["check"] in ("conservation", "disjoint")]
    total = ledger["clean"] + ledger["quarantined"] + ledger["duplicates"]
    unaccounted = ledger["raw"] - total
    out.append(
        _check(
            "ledger_conserved",
            owner,
            "fail" if cons else "pass",
            Decimal(unaccounted),
            "LEDGER_VIOLATION" if cons else "OK",
            "; ".join(v["detail"] for v in cons)
            or f"raw {ledger['raw']} = clean {ledger['clean']} + quarantined "
            f"{ledger['quarantined']} + duplicates {ledger['duplicates']}, lineage disjoint",
            threshold_fail=Decimal(0),
            failed=abs(unaccounted),
            evaluated=ledger["raw"],
        )
    )
    rb = [v for v in violations if v["check"] == "readback"]
    out.append(
        _check(
            "output_readback",
            owner,
            "fail" if rb else "pass",
            Decimal(len(rb)),
            "READBACK_MISMATCH" if rb else "OK",
            "; ".join(v["detail"] for v in rb)
            or "clean, quarantine and duplicates read back equal to the computed counts",
            threshold_fail=Decimal(0),
            failed=len(rb),
            evaluated=3,
        )
    )
    order = {cid: i for i, cid in enumerate(CHECKS | STREAM_CHECKS)}
    checks = sorted((f for f in out if f.kind == "check"), key=lambda f: order[f.check_id])
    return checks + [f for f in out if f.kind != "check"]


def gate_levels(facts: list[Fact]) -> list[GateLevel]:
    """Governed checks that decide the run: ``error`` severity, not passing.

    ``quarantine_share`` and rules are already gate levels (run/gate.py); they are left out.
    """
    levels = []
    for f in facts:
        if f.kind == "check" and f.severity == "error" and f.status != "pass":
            if f.check_id == "quarantine_share":
                continue
            levels.append(
                GateLevel(
                    f.check_id,
                    f.status,
                    f.metric or "",
                    None if f.threshold_warn is None else float(f.threshold_warn),
                    None if f.threshold_fail is None else float(f.threshold_fail),
                    f"{f.diagnostic}: {f.detail}",
                )
            )
    return levels


def worst(facts: list[Fact]) -> str:
    return max((f.status for f in facts), key=STATUS_ORDER.__getitem__, default="pass")


def fact_rows(
    ctx: RunContext, facts: list[Fact], *, started_at: dt.datetime, evaluated_at: dt.datetime
) -> list[dict[str, Any]]:
    """Facts as table rows: the run's identity and timestamps added, text redacted."""
    red = ctx.loaded.redactor
    rows = []
    for f in facts:
        d = f.as_dict()
        d["detail"] = red(d["detail"]) if d["detail"] else d["detail"]
        d["owner"] = red(d["owner"]) if d["owner"] else d["owner"]
        d.update(
            contract=ctx.contract.name,
            run_id=ctx.run_id,
            logical_date=ctx.loaded.logical_date,
            run_started_at=_naive(started_at),
            evaluated_at=_naive(evaluated_at),
        )
        rows.append(d)
    return rows


def _naive(t: dt.datetime) -> str:
    """UTC wall-clock as ISO text without offset (a TIMESTAMP literal every engine casts)."""
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="microseconds")


__all__ = [
    "CHECKS",
    "Fact",
    "fact_rows",
    "finish_facts",
    "gate_levels",
    "pre_publish_facts",
    "worst",
]
