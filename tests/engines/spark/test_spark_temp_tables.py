"""A TEMP table built again under its name from the same plan stays cached (Spark).

Typing a reference again from the same files under one engine gives the same plan.
Spark's cache matches plans, not rows, so persisting the new relation handed back the old
one's cached rows, and unpersisting the old one afterwards dropped the entry both shared:
every later read of the reference recomputed the whole reader (a probe that typed a
5,000-line run's references twice saw its model stage take 105 s instead of 0.9 s).
``SparkEngine._temp_view`` drops the old entry first when the plans are the same. Today a
run types each reference once (a watch's batches each open their own engine); this keeps
the next path that types one again from falling into it.
"""

from __future__ import annotations

import pytest
from sqlglot import exp

from sluicegate.engines import open_engine

pytestmark = pytest.mark.spark


def lines_of(tmp_path, text: str):
    f = tmp_path / "ref.json"
    f.write_text(text)
    return [str(f)]


def test_typed_again_from_the_same_files_it_is_cached_with_their_current_rows(spark, tmp_path):
    eng = open_engine("spark", str(tmp_path / "wh"))
    typed = exp.select("_line").from_("_sg_t_lines")
    try:
        files = lines_of(tmp_path, '{"k": 1}\n{"k": 2}\n')
        for _again in range(2):  # the same files typed twice under one engine
            eng.load_lines(files, "_sg_t_lines")
            eng.create_table_as("_sg_t_ref", typed, temporary=True)
            assert eng.spark.catalog.isCached("_sg_t_ref")
            assert eng.fetch(exp.select("COUNT(*)").from_("_sg_t_ref"))[0][0] == 2
        # the same path rewritten between two batches: the new rows, cached
        lines_of(tmp_path, '{"k": 1}\n{"k": 2}\n{"k": 3}\n')
        eng.load_lines(files, "_sg_t_lines")
        eng.create_table_as("_sg_t_ref", typed, temporary=True)
        assert eng.spark.catalog.isCached("_sg_t_ref")
        assert eng.fetch(exp.select("COUNT(*)").from_("_sg_t_ref"))[0][0] == 3
    finally:
        eng.close()
