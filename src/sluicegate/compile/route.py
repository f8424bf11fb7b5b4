"""Validate and route (stage 4): one evaluation of every rule per row, split on it.

:func:`routed_select` evaluates each rule once into a pass flag (``IS TRUE``: FALSE and
NULL fail), derives ``_ok``, ``_reason`` (first failing check in priority order: built-in
reasons, then rules in list order) and ``_failed_rules`` (every failing check as
``{name, rule}``). Clean is ``WHERE _ok`` and quarantine ``WHERE NOT _ok`` of that one
materialized relation: ``_ok`` is never NULL, so the two are exact complements.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..contract.models import Contract
from .render import col, ident, is_true, lit
from .rules import CompiledRule, Membership

BUILTIN_REASONS = {
    "corrupt_record": "the record is a well-formed object of the declared shape",
    "type_mismatch": "every present value casts to its declared type",
    "missing_required": "every nullable: false column has a value",
}


@dataclass(frozen=True)
class Check:
    """One routed check: a built-in reason or a rule, with its pass-flag column."""

    name: str
    rule: str
    flag: str
    routes: bool


def checks(rules: list[CompiledRule]) -> list[Check]:
    """Built-in reasons first, then rules in list order: this is ``_reason`` priority."""
    out = [
        Check("corrupt_record", BUILTIN_REASONS["corrupt_record"], "_ok_corrupt", True),
        Check("type_mismatch", BUILTIN_REASONS["type_mismatch"], "_ok_mismatch", True),
        Check("missing_required", BUILTIN_REASONS["missing_required"], "_ok_required", True),
    ]
    out += [Check(r.name, r.text, r.flag, r.routes) for r in rules]
    return out


def membership_subquery(m: Membership, contract: Contract, ref_table: str) -> exp.Subquery:
    """DISTINCT non-NULL keys of a reference, cast to the row column's declared type."""
    spec = contract.source.columns.get(m.column)
    key = col(m.key)
    if spec is not None:
        key = exp.TryCast(this=key, to=spec.parsed.datatype.copy())
    inner = (
        exp.select(exp.alias_(key, ident("_k")))
        .distinct()
        .from_(exp.to_table(ref_table))
        .where(exp.Not(this=exp.Is(this=col(m.key), expression=exp.null())))
    )
    return exp.Subquery(this=inner, alias=exp.TableAlias(this=ident(m.alias)))


def flags_select(
    kept_table: str,
    contract: Contract,
    rules: list[CompiledRule],
    memberships: list[Membership],
    reference_tables: dict[str, str],
) -> exp.Select:
    """Every kept row with one pass flag per check, each evaluated exactly once."""
    required = [n for n, s in contract.source.columns.items() if not s.nullable]
    not_corrupt = exp.Not(this=col("_corrupt", "_r"))
    ok_required = (
        exp.or_(
            col("_corrupt", "_r"),
            exp.and_(*[exp.Not(this=exp.Is(this=col(n), expression=exp.null())) for n in required]),
        )
        if required
        else exp.true()
    )
    select = exp.select(
        exp.Column(this=exp.Star(), table=ident("_r")),
        exp.alias_(not_corrupt, ident("_ok_corrupt"), copy=False),
        exp.alias_(exp.Not(this=col("_mismatch", "_r")), ident("_ok_mismatch"), copy=False),
        exp.alias_(exp.paren(ok_required), ident("_ok_required"), copy=False),
        *[
            exp.alias_(
                exp.or_(col("_corrupt", "_r"), is_true(r.expr.copy()), copy=False),
                ident(r.flag),
                copy=False,
            )
            for r in rules
        ],
    ).from_(exp.Table(this=ident(kept_table), alias=exp.TableAlias(this=ident("_r"))), copy=False)
    for m in memberships:
        select = select.join(
            membership_subquery(m, contract, reference_tables[m.reference]),
            on=exp.EQ(this=col(m.column, "_r"), expression=col("_k", m.alias)),
            join_type="LEFT",
            copy=False,
        )
    return select


def routed_select(flags: str | exp.Select, rules: list[CompiledRule]) -> exp.Select:
    """``_ok``, ``_reason``, ``_failed_rules`` and ``_warnings`` from the pass flags.

    ``flags`` is a table, or :func:`flags_select` itself: then the flags are a subquery
    and the routed relation is built in one pass (no million-row flags table in between).
    """
    all_checks = checks(rules)
    routing = [c for c in all_checks if c.routes]
    # copy=False throughout: fresh nodes, and copying a 500-rule tree at every builder
    # call was most of `compile`'s time
    ok = exp.and_(*[col(c.flag) for c in routing], copy=False)
    reason = exp.Case(
        ifs=[exp.If(this=exp.Not(this=col(c.flag)), true=lit(c.name)) for c in routing]
    )
    # the list only for failing rows: a clean row's would be [] and nobody reads it
    failed = exp.Case(
        ifs=[exp.If(this=exp.Not(this=exp.paren(ok.copy())), true=_struct_list(routing))]
    )
    warn_checks = [c for c in all_checks if not c.routes]
    outs = [
        exp.Star(),
        exp.alias_(exp.paren(ok), ident("_ok"), copy=False),
        exp.alias_(reason, ident("_reason"), copy=False),
        exp.alias_(failed, ident("_failed_rules"), copy=False),
    ]
    if warn_checks:
        outs.append(exp.alias_(_name_list(warn_checks), ident("_warnings"), copy=False))
    source = (
        exp.to_table(flags)
        if isinstance(flags, str)
        else exp.Subquery(this=flags, alias=exp.TableAlias(this=ident("_f")))
    )
    return exp.select(*outs).from_(source, copy=False)


def _not_null_filter(arr: exp.Expression) -> exp.Expression:
    x = exp.to_identifier("x")
    return exp.ArrayFilter(
        this=arr,
        expression=exp.Lambda(
            this=exp.Not(this=exp.Is(this=exp.Column(this=x.copy()), expression=exp.null())),
            expressions=[x],
        ),
    )


def _struct_list(cs: list[Check]) -> exp.Expression:
    items = [
        exp.Case(
            ifs=[
                exp.If(
                    this=exp.Not(this=col(c.flag)),
                    true=exp.Struct(
                        expressions=[
                            exp.PropertyEQ(this=exp.to_identifier("name"), expression=lit(c.name)),
                            exp.PropertyEQ(this=exp.to_identifier("rule"), expression=lit(c.rule)),
                        ]
                    ),
                )
            ]
        )
        for c in cs
    ]
    return _not_null_filter(exp.Array(expressions=items))


def _name_list(cs: list[Check]) -> exp.Expression:
    items = [exp.Case(ifs=[exp.If(this=exp.Not(this=col(c.flag)), true=lit(c.name))]) for c in cs]
    return _not_null_filter(exp.Array(expressions=items))
