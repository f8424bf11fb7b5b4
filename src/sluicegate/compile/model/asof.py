"""As-of facts: each clean row joined to the dimension version valid at its event time.

The rule is the half-open interval ``valid_from <= t < valid_to`` on the dimension's key,
written as a keyed range join (a LEFT JOIN with the interval in the ON clause) because it
runs unchanged on every engine: Spark has no ASOF JOIN, and on DuckDB the range join was
measured faster than ``ASOF JOIN`` with identical results (docs/model.md), so the ASOF
form is not used at all. The LEFT JOIN is what makes "no silent drop" structural: a row
with no valid version keeps its place with NULL attributes. Because a key's intervals
never overlap (the SCD2 build guarantees it; property-tested), a row matches at most one
version, so the join never multiplies rows either.

``on_missing: quarantine`` moves the rows that match no version out of the clean set
*before* publishing (:func:`reroute_select`), with reason ``no_dimension_version:<dim>``,
so the ledger ``raw = clean + quarantined + duplicates`` holds by construction.
"""

from __future__ import annotations

from sqlglot import exp

from ...contract.model_spec import AsOfJoin, Dimension, Fact
from ...contract.models import Contract
from ..ledger import bucketed_overlaps, lineage_overlaps
from ..render import col, ident, lit
from ..render import table as table_ref
from .schema import fact_source_columns, join_output_columns, unknown_flag

FACT_ALIAS = "_f"
MISSING_PREFIX = "no_dimension_version:"


def dim_alias(i: int) -> str:
    return f"_d{i}"


def missing_reason(join: AsOfJoin) -> str:
    """The DLQ reason of a row with no valid version (rule names cannot contain ':')."""
    return MISSING_PREFIX + join.dimension


def asof_on(join: AsOfJoin, dim: Dimension, fact_alias: str, alias: str) -> exp.Expression:
    """``f.k = d.k AND d.valid_from <= f.t AND f.t < d.valid_to`` (new version wins at a tie)."""
    t = col(join.as_of, fact_alias)
    return exp.and_(
        *[
            exp.EQ(this=col(fk, fact_alias), expression=col(dk, alias))
            for fk, dk in zip(join.on, dim.key, strict=True)
        ],
        exp.LTE(this=col("valid_from", alias), expression=t),
        exp.LT(this=t.copy(), expression=col("valid_to", alias)),
    )


def qualify_row_expr(e: exp.Expression, alias: str) -> exp.Expression:
    """Qualify the bare columns of a derive expression with the fact's alias."""
    e = e.copy()
    for c in list(e.find_all(exp.Column)):
        if not c.table:
            c.set("table", ident(alias))
    return e


def fact_select(
    clean_table: str,
    fact: Fact,
    contract: Contract,
    dim_tables: dict[str, str],
    derived: dict[str, exp.Expression],
    run_id: str,
) -> exp.Select:
    """The fact rows of one run: its clean rows, derived columns and as-of attributes.

    ``derived`` are the checked ``derive`` expressions (see checks.py); ``dim_tables``
    maps each dimension name to the table holding it.
    """
    f = FACT_ALIAS
    dims = contract.model.dimensions
    outs: list[exp.Expression] = [col(c, f) for c in fact_source_columns(fact, contract)]
    outs += [exp.alias_(qualify_row_expr(e, f), ident(n)) for n, e in derived.items()]
    joins = []
    for i, j in enumerate(fact.joins):
        a, dim = dim_alias(i), dims[j.dimension]
        for name, dcol in join_output_columns(j, dim):
            outs.append(exp.alias_(col(dcol, a), ident(name)))
        flag = unknown_flag(j)
        if flag:
            outs.append(
                exp.alias_(exp.Is(this=col("version", a), expression=exp.null()), ident(flag))
            )
        joins.append((table_ref(dim_tables[j.dimension], a), asof_on(j, dim, f, a)))
    outs += [col(c, f) for c in ("_source_file", "_source_line", "_run_id", "_logical_date")]
    select = exp.select(*outs).from_(table_ref(clean_table, f))
    for table, on in joins:
        select = select.join(table, on=on, join_type="LEFT")
    return select.where(exp.EQ(this=col("_run_id", f), expression=lit(run_id)))


def quarantine_joins(fact: Fact) -> list[tuple[int, AsOfJoin]]:
    return [(i, j) for i, j in enumerate(fact.joins) if j.on_missing == "quarantine"]


def reroute_select(
    routed_table: str, contract: Contract, dim_tables: dict[str, str]
) -> exp.Select | None:
    """The routed relation with rows that match no version (``on_missing: quarantine``)
    turned from clean into quarantined; None when no join quarantines.

    Only clean rows change: ``_ok`` becomes FALSE, ``_reason`` the first missing join's
    ``no_dimension_version:<dim>`` (in fact and join order), ``_failed_rules`` lists every
    missing join. A quarantined row keeps the reason its rules gave it. Every other column
    is passed through unchanged, so publish and the DLQ see the shape they expect.
    """
    checks: list[tuple[str, AsOfJoin, str]] = []  # (hit flag, join, dimension alias)
    r = "_r"
    inner_outs: list[exp.Expression] = [
        exp.Column(this=exp.Star(), table=ident(r)),
        exp.alias_(col("_ok", r), ident("_sg_ok0")),
        exp.alias_(col("_reason", r), ident("_sg_reason0")),
        exp.alias_(col("_failed_rules", r), ident("_sg_failed0")),
    ]
    joins = []
    n = 0
    for fact in contract.model.facts.values():
        for _i, j in quarantine_joins(fact):
            dim = contract.model.dimensions[j.dimension]
            a, hit = f"_q{n}", f"_sg_hit{n}"
            n += 1
            inner_outs.append(
                exp.alias_(
                    exp.Not(this=exp.Is(this=col("version", a), expression=exp.null())), ident(hit)
                )
            )
            joins.append((table_ref(dim_tables[j.dimension], a), asof_on(j, dim, r, a)))
            checks.append((hit, j, a))
    if not checks:
        return None
    inner = exp.select(*inner_outs).from_(table_ref(routed_table, r))
    for table, on in joins:
        inner = inner.join(table, on=on, join_type="LEFT")

    was_ok = col("_sg_ok0")
    all_hit = exp.and_(*[col(h) for h, _j, _a in checks])
    ok = exp.and_(was_ok, exp.paren(all_hit))
    reason = exp.Case(
        ifs=[exp.If(this=exp.Not(this=was_ok.copy()), true=col("_sg_reason0"))]
        + [exp.If(this=exp.Not(this=col(h)), true=lit(missing_reason(j))) for h, j, _a in checks],
    )
    missing = _not_null_filter(
        exp.Array(
            expressions=[
                exp.Case(
                    ifs=[
                        exp.If(
                            this=exp.Not(this=col(h)),
                            true=_failed_entry(missing_reason(j), _describe(j)),
                        )
                    ]
                )
                for h, j, _a in checks
            ]
        )
    )
    failed = exp.Case(ifs=[exp.If(this=was_ok.copy(), true=missing)], default=col("_sg_failed0"))
    drop = ["_ok", "_reason", "_failed_rules", "_sg_ok0", "_sg_reason0", "_sg_failed0"]
    drop += [h for h, _j, _a in checks]
    return exp.select(
        exp.Star(except_=[col(c) for c in drop]),
        exp.alias_(exp.paren(ok), ident("_ok")),
        exp.alias_(reason, ident("_reason")),
        exp.alias_(failed, ident("_failed_rules")),
    ).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=ident("_sg_hits"))))


def _describe(j: AsOfJoin) -> str:
    """The ``rule`` text recorded with a missing-version failure."""
    keys = ", ".join(j.on)
    return f"a version of {j.dimension} for ({keys}) valid at {j.as_of}"


def _failed_entry(name: str, rule: str) -> exp.Struct:
    """``{name, rule}``: the shape of every entry of ``_failed_rules``."""
    return exp.Struct(
        expressions=[
            exp.PropertyEQ(this=exp.to_identifier("name"), expression=lit(name)),
            exp.PropertyEQ(this=exp.to_identifier("rule"), expression=lit(rule)),
        ]
    )


def _not_null_filter(arr: exp.Expression) -> exp.Expression:
    x = exp.to_identifier("x")
    return exp.ArrayFilter(
        this=arr,
        expression=exp.Lambda(
            this=exp.Not(this=exp.Is(this=exp.Column(this=x.copy()), expression=exp.null())),
            expressions=[x],
        ),
    )


def reason_counts(routed_table: str, contract: Contract) -> tuple[exp.Select, list[str]]:
    """One row: how many rows each quarantining join moved (its ``_reason``)."""
    reasons = sorted(
        {missing_reason(j) for f in contract.model.facts.values() for _i, j in quarantine_joins(f)}
    )
    sums = [
        exp.func(
            "SUM",
            exp.Case(
                ifs=[exp.If(this=exp.EQ(this=col("_reason"), expression=lit(rn)), true=lit(1))],
                default=lit(0),
            ),
        )
        for rn in reasons
    ]
    return exp.select(*sums).from_(table_ref(routed_table)), reasons


def fact_readback(
    fact_table: str,
    clean_table: str,
    run_id: str,
    *,
    extra_copies: bool = False,
    bucketed: bool = False,
    unknown: list[exp.Expression] | None = None,
) -> exp.Select:
    """(fact rows, clean rows[, extra copies], *unknown-member rows) of one run: facts
    must equal clean.

    That no lineage is in the fact twice is a third number: with ``extra_copies`` it is
    a column of this one query (an engine where every query is costly, Spark), counted
    from bucketed bitmaps when ``bucketed`` (Spark's ``BITMAP_*`` functions) or by
    grouping the pairs; else the caller reads it apart (run/lineage_proof.py, DuckDB's
    per-file bitmaps). ``unknown`` (:func:`unknown_sums`) are counted in the same scan of
    the fact as its rows and come last."""
    of_run = exp.EQ(this=col("_run_id"), expression=lit(run_id))
    sums = unknown or []
    fact = (
        exp.select(
            exp.alias_(exp.func("COUNT", exp.Star()), ident("_rows")),
            *[exp.alias_(s, ident(f"_u{i}")) for i, s in enumerate(sums)],
        )
        .from_(table_ref(fact_table))
        .where(of_run)
    )
    clean = exp.select(exp.func("COUNT", exp.Star())).from_(table_ref(clean_table)).where(of_run)
    outs: list[exp.Expression] = [col("_rows"), exp.Subquery(this=clean)]
    if extra_copies:
        overlaps = bucketed_overlaps if bucketed else lineage_overlaps
        outs.append(exp.Subquery(this=overlaps([fact_table], run_id)))
    outs += [col(f"_u{i}") for i in range(len(sums))]
    return exp.select(*outs).from_(exp.Subquery(this=fact, alias=exp.TableAlias(this=ident("_f"))))


def unknown_sums(fact: Fact) -> tuple[list[exp.Expression], list[str]]:
    """Per unknown-member join of ``fact``: the sum that counts the rows that got the
    unknown member (for :func:`fact_readback`), and the join's name."""
    flags = [(j.name, unknown_flag(j)) for j in fact.joins if unknown_flag(j)]
    sums = [
        exp.func("SUM", exp.Case(ifs=[exp.If(this=col(flag), true=lit(1))], default=lit(0)))
        for _n, flag in flags
    ]
    return sums, [n for n, _f in flags]
