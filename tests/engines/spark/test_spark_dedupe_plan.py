"""On Spark the repeated keys are joined to the typed rows by broadcast, not by a shuffle.

With adaptive execution off (a local session's default), Spark sizes an inline aggregate
from its input: the keys that occur more than once looked as large as the typed relation,
and the ranking shuffled every typed row by key (a sort-merge join: 3.8 s of a 1M-line
run's dedupe). Kept as a small table of their own (``_sg_repeated``), their size is known
and the join is a broadcast (1.5 s, plus 1.7 s for the table). The test shrinks the
broadcast threshold so that a few thousand rows stand for a million.
"""

from __future__ import annotations

import pytest
import sqlglot

from sluicegate.compile import dedupe as dedupe_c
from sluicegate.contract.models import Dedupe
from sluicegate.engines import open_engine

pytestmark = pytest.mark.spark

DEDUPE = Dedupe(key=["sale_id"], order_by=["ingested_at DESC"])
# computed here, apart from the SQL: each key's rows that are not corrupt
ROWS_OF: dict[str, int] = {}
for i in range(20000):
    if i % 997:
        ROWS_OF[f"S{i % 15000}"] = ROWS_OF.get(f"S{i % 15000}", 0) + 1
REPEATED = {k: n for k, n in ROWS_OF.items() if n > 1}
TYPED = """
SELECT '/feed/a.json' AS _source_file, id + 1 AS _source_line,
       CONCAT('S', CAST(id % 15000 AS STRING)) AS sale_id,
       id % 7 AS ingested_at, REPEAT('x', 40) AS payload, id % 997 = 0 AS _corrupt
FROM RANGE(20000)
"""


def plan_of(eng, query) -> str:  # noqa: ANN001
    df = eng.spark.sql(eng.render(query))
    return df._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001


def test_the_ranking_joins_the_materialized_repeated_keys_by_broadcast(spark, tmp_path):
    eng = open_engine("spark", str(tmp_path / "wh"))
    try:
        # the engine's own session: its SQL settings are private to it
        eng.spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(200 << 10))
        eng.create_table_as("_sg_typed", sqlglot.parse_one(TYPED, read="spark"), temporary=True)
        inline = dedupe_c.ranking_select("_sg_typed", DEDUPE)
        # the inline aggregate (the run before) is sized from its input: a shuffle. Asked
        # before the keys are cached: Spark's cache would then stand in for the same plan.
        assert "SortMergeJoin" in plan_of(eng, inline)
        before = set(eng.fetch(inline))

        eng.create_table_as(
            "_sg_repeated", dedupe_c.repeated_select("_sg_typed", DEDUPE), temporary=True
        )
        keys = eng.fetch(sqlglot.parse_one("SELECT COUNT(*) FROM _sg_repeated"))[0][0]
        assert keys == len(REPEATED) == 4989  # corrupt rows are not keys
        table = dedupe_c.ranking_select("_sg_typed", DEDUPE, "_sg_repeated")
        assert "BroadcastHashJoin" in plan_of(eng, table)
        assert "SortMergeJoin" not in plan_of(eng, table)

        after = set(eng.fetch(table))
        assert after == before
        assert len(after) == sum(REPEATED.values())
        assert sorted(rn for _f, _l, rn, _kf, _kl in after) == sorted(
            rn for n in REPEATED.values() for rn in range(1, n + 1)
        )
    finally:
        eng.close()
