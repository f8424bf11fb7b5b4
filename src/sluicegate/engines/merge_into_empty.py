"""A MERGE into a table known to be empty, as the INSERT it amounts to.

Into an empty target no source row matches: ``WHEN MATCHED`` and ``WHEN NOT MATCHED BY
SOURCE`` never fire, and each source row takes the first ``WHEN NOT MATCHED`` clause
whose condition holds. With one such clause the MERGE inserts exactly ``SELECT <values>
FROM <source> [WHERE <condition>]``. A table store that stages a new table in one write
(``delta_spark``: a first run's DLQ inbox, quality facts and run records are created
empty, then merged into) runs that INSERT instead: one commit, no join, and no Delta
MERGE machinery for rows that cannot match.

>>> import sqlglot
>>> m = sqlglot.parse_one(
...     "MERGE INTO t AS x USING s AS y ON x.k = y.k "
...     "WHEN MATCHED THEN UPDATE SET v = y.v "
...     "WHEN NOT MATCHED AND y.v > 0 THEN INSERT (k, v) VALUES (y.k, y.v)",
...     read="spark",
... )
>>> insert_for_empty_target(m).sql("spark")
'INSERT INTO t (k, v) SELECT y.k, y.v FROM s AS y WHERE y.v > 0'
"""

from __future__ import annotations

from sqlglot import exp


def insert_for_empty_target(merge: exp.Merge) -> exp.Insert | None:
    """The INSERT equal to ``merge`` on an empty target, or None where there is no simple
    one (several ``WHEN NOT MATCHED`` clauses, ``INSERT *``, an unusual shape)."""
    whens = merge.args.get("whens")
    clauses = whens.expressions if isinstance(whens, exp.Whens) else []
    inserting = [w for w in clauses if not w.args.get("matched") and not w.args.get("source")]
    if len(inserting) != 1:
        return None
    when = inserting[0]
    then = when.args.get("then")
    target = merge.this
    using = merge.args.get("using")
    if not (
        isinstance(then, exp.Insert)
        and isinstance(then.this, exp.Tuple)
        and isinstance(then.expression, exp.Tuple)
        and len(then.this.expressions) == len(then.expression.expressions)
        and isinstance(target, exp.Table)
        and using is not None
    ):
        return None
    select = exp.Select(expressions=[v.copy() for v in then.expression.expressions]).from_(
        using.copy()
    )
    condition = when.args.get("condition")
    if condition is not None:
        select = select.where(condition.copy())
    table = target.copy()
    table.set("alias", None)
    return exp.Insert(
        this=exp.Schema(this=table, expressions=[c.copy() for c in then.this.expressions]),
        expression=select,
    )
