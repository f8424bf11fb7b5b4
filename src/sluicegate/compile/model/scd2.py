"""SCD2 dimensions from a changelog reference.

Each change of a key opens a version valid over the half-open interval
``[valid_from, valid_to)``: ``valid_from`` is the change's effective time, ``valid_to``
the next version's, or the far-future sentinel for the newest version, which is the only
one with ``is_current``. Consecutive versions meet without overlapping, so an event at
exactly a change's time belongs to the new version.

The changelog is hostile (unsorted, exact duplicate events, ties, repeats), so:

* **usable changes** — a change row is used only when it parsed (not corrupt, no value
  failed its cast) and its key and effective time are not NULL; the others cannot place
  a version in time and are counted (``rejected_changes``), never guessed at;
* **ties** — several changes of one key at the same effective time keep exactly one:
  the **last by lineage** (greatest ``_source_file``, then ``_source_line``), i.e. the
  change written last in the log wins, as a later write would in the source system.
  Exact duplicate events are such ties with equal attributes, so they collapse too;
* **no-op changes** — a change whose attributes equal (NULL-safe) those of the key's
  previous change opens no new version: consecutive unchanged versions collapse into the
  earlier one, whose interval extends;
* ``version`` numbers the surviving versions of a key 1, 2, ... by effective time.

Every step is a window over a total order, so the dimension is identical on every engine
and every rerun.
"""

from __future__ import annotations

from sqlglot import exp

from ...contract.model_spec import Dimension
from ..render import col, ident, lineage_file, lit
from .schema import SENTINEL_DATE, SENTINEL_INT, SENTINEL_TIMESTAMP, time_kind


def sentinel(type_text: str) -> exp.Expression:
    """The far-future ``valid_to`` of the open version for a time of type ``type_text``."""
    kind = time_kind(type_text)
    if kind == "integer":
        return exp.cast(exp.Literal.number(SENTINEL_INT), "BIGINT")
    if kind == "date":
        return exp.cast(lit(SENTINEL_DATE), "DATE")
    return exp.cast(lit(SENTINEL_TIMESTAMP), "TIMESTAMP")


def _window(dim: Dimension, fn: exp.Expression, *order: exp.Ordered) -> exp.Window:
    return exp.Window(
        this=fn,
        partition_by=[col(k) for k in dim.key],
        order=exp.Order(expressions=list(order)),
    )


def _by_time(dim: Dimension) -> exp.Ordered:
    return exp.Ordered(this=col(dim.effective), nulls_first=False)


def usable_changes(dim: Dimension) -> exp.Expression:
    """The predicate of a change row that can place a version in time."""
    return exp.and_(
        exp.Not(this=col("_corrupt")),
        exp.Not(this=col("_mismatch")),
        *[
            exp.Not(this=exp.Is(this=col(c), expression=exp.null()))
            for c in [*dim.key, dim.effective]
        ],
    )


def scd2_select(ref_table: str, dim: Dimension, interval_type: str) -> exp.Select:
    """The SCD2 dimension of ``dim`` over the typed changelog table ``ref_table``.

    Columns: key columns, attributes, ``version``, ``valid_from``, ``valid_to``,
    ``is_current``, and the lineage of the change that opened the version.

    >>> from sluicegate.contract.model_spec import Dimension
    >>> d = Dimension(reference="cdc", key="cid", effective="eff", attributes=["tier"])
    >>> "LEAD" in scd2_select("_sg_ref_cdc", d, "BIGINT").sql()
    True
    """
    keys = [col(k) for k in dim.key]
    attrs = [col(a) for a in dim.attributes]
    base = [*keys, *attrs, col(dim.effective), col("_source_file"), col("_source_line")]
    base_names = [*dim.key, *dim.attributes, dim.effective, "_source_file", "_source_line"]

    # 1. usable changes, each tie of (key, effective) ranked: last by lineage first.
    tie = exp.Window(
        this=exp.RowNumber(),
        partition_by=[*(col(k) for k in dim.key), col(dim.effective)],
        order=exp.Order(
            expressions=[
                exp.Ordered(this=col("_source_file"), desc=True, nulls_first=False),
                exp.Ordered(this=col("_source_line"), desc=True, nulls_first=False),
            ]
        ),
    )
    ranked = (
        exp.select(*base, exp.alias_(tie, ident("_sg_tie")))
        .from_(exp.to_table(ref_table))
        .where(usable_changes(dim))
    )
    # 2. one change per (key, effective); flag the ones that change an attribute.
    first = exp.EQ(this=_window(dim, exp.RowNumber(), _by_time(dim)), expression=lit(1))
    differs = [
        exp.NullSafeNEQ(this=_window(dim, exp.Lag(this=col(a)), _by_time(dim)), expression=col(a))
        for a in dim.attributes
    ]
    opens = exp.or_(first, *differs)
    marked = (
        exp.select(*[col(n) for n in base_names], exp.alias_(exp.paren(opens), ident("_sg_opens")))
        .from_(_sub(ranked, "_sg_ranked"))
        .where(exp.EQ(this=col("_sg_tie"), expression=lit(1)))
    )
    # 3. the versions: each opening change until the next one, or the sentinel.
    nxt = _window(dim, exp.Lead(this=col(dim.effective)), _by_time(dim))
    eff = exp.cast(col(dim.effective), interval_type)
    versions = (
        exp.select(
            *[col(k) for k in dim.key],
            *[col(a) for a in dim.attributes],
            exp.alias_(
                exp.cast(_window(dim, exp.RowNumber(), _by_time(dim)), "BIGINT"), ident("version")
            ),
            exp.alias_(eff, ident("valid_from")),
            exp.alias_(
                exp.Coalesce(
                    this=exp.cast(nxt, interval_type), expressions=[sentinel(interval_type)]
                ),
                ident("valid_to"),
            ),
            exp.alias_(exp.Is(this=nxt.copy(), expression=exp.null()), ident("is_current")),
            lineage_file(),
            col("_source_line"),
        )
        .from_(_sub(marked, "_sg_marked"))
        .where(col("_sg_opens"))
    )
    return versions


def rejected_changes(ref_table: str, dim: Dimension) -> exp.Select:
    """How many change rows could not be used (corrupt, uncastable, NULL key or time)."""
    return (
        exp.select(exp.func("COUNT", exp.Star()))
        .from_(exp.to_table(ref_table))
        .where(exp.Not(this=exp.paren(usable_changes(dim))))
    )


def dimension_stats(dim_table: str) -> exp.Select:
    """Versions and current versions (= keys) of a dimension, for the run metrics."""
    return exp.select(
        exp.func("COUNT", exp.Star()),
        exp.func("COUNT", exp.Case(ifs=[exp.If(this=col("is_current"), true=lit(1))])),
    ).from_(exp.to_table(dim_table))


def dimension_metrics(dim_table: str, ref_table: str, dim: Dimension) -> exp.Select:
    """:func:`dimension_stats` and :func:`rejected_changes` as one row (versions, current,
    rejected): two one-row aggregates cross-joined, so a run asks once per dimension (on
    Spark every query pays planning and code generation)."""
    return (
        exp.select(exp.Star())
        .from_(_sub(dimension_stats(dim_table), "_ds"))
        .join(_sub(rejected_changes(ref_table, dim), "_rc"), join_type="CROSS")
    )


def _sub(q: exp.Select, alias: str) -> exp.Subquery:
    return exp.Subquery(this=q, alias=exp.TableAlias(this=ident(alias)))
