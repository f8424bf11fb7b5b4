"""Which lines Spark's NDJSON reader sends down its plain-line branch.

``test_reader.py`` holds every corpus line's typed row on Spark to DuckDB's, whichever
branch it took; this pins the branch, so the fast path cannot quietly stop being taken
(or start taking a line it would read differently) without a failure here.
"""

from __future__ import annotations

import os

import pytest
from sqlglot import exp

from sluicegate.compile.read import ndjson_spark_plain as plain
from sluicegate.compile.read.table import typed_select

from .conftest import open_named
from .test_reader import ALL_LINES, PLAIN_EDGES, SOURCE

pytestmark = pytest.mark.spark

# line → takes the plain branch (the edges; every other corpus line is checked by count)
EXPECTED = {
    "{}": True,
    '{"s": 0.001, "f": 0.001, "d": 0.005}': True,
    '{"s": 0.0001}': False,  # below 10^-3 Java writes 1.0E-4
    '{"s": 9999999.99999999, "d": 0.5}': True,
    '{"s": 1234567.12345678, "f": -0.5, "i": 0}': True,
    '{"s": 12345678.9}': False,  # 10^7 and above: Java writes 1.23456789E7
    '{"s": -12.30, "f": 100.00, "g": 5.0}': True,
    '{"s": 0.0, "f": 0.000}': False,  # zero (and -0.0) take the general path
    '{"i": 999999999999999999}': True,
    '{"i": 9999999999999999999}': False,  # 19 digits: past BIGINT
    '{"s": "7", "i": "abc", "d": "x"}': True,
    '{"b": false, "s": null, "i": -7, "t": "2024-01-02T03:04:05Z"}': True,
    '{"s": "x/y \u2713 \u00e9"}': True,
    '{"s": "a\u2028b", "i": 1, "s": "c"}': True,  # a repeated key: corrupt on this branch
    '{"s": "a\u0085b", "i": 1, "s": "c"}': True,
    '{"s" : "x"}': False,  # a space before the colon
    '{"s": "x", "extra": 1}': False,  # an undeclared key
    '\t{"i": 2}\t': True,
}


@pytest.fixture(scope="module")
def branch(spark, tmp_path_factory) -> dict[int, bool]:  # noqa: ARG001 - the shared session
    """Corpus line number → ``is_plain``, evaluated by Spark on the loaded lines."""
    tmp = tmp_path_factory.mktemp("plain")
    path = tmp / "corpus.json"
    path.write_text("\n".join(ALL_LINES) + "\n", encoding="utf-8")
    eng = open_named("spark", str(tmp / "warehouse"))
    try:
        eng.load_lines([os.path.abspath(path)], "_sg_plain_lines")
        test = plain.is_plain(exp.column("_line"), exp.column("_bad_utf8"), SOURCE)
        rows = eng.fetch(exp.select("_source_line", test).from_("_sg_plain_lines"))
    finally:
        eng.close()
    return {int(n): bool(p) for n, p in rows}


def test_edges_take_the_expected_branch(branch):
    assert set(PLAIN_EDGES) == set(EXPECTED)
    got = {line: branch[ALL_LINES.index(line) + 1] for line in PLAIN_EDGES}
    assert got == EXPECTED


def test_most_of_the_corpus_is_read_on_both_branches(branch):
    # the corpus is hostile by design, yet both branches carry a real share of it
    taken = sum(branch.values())
    assert len(branch) == len(ALL_LINES)
    assert 25 <= taken <= len(ALL_LINES) - 40, taken


def test_a_huge_line_of_repeated_keys_is_corrupt_not_a_failed_job(spark, tmp_path):  # noqa: ARG001
    """The plain regex repeats a group once per member: Java's regex must not recurse per
    repetition (a StackOverflowError would fail the whole Spark job on one hostile line)."""
    path = tmp_path / "huge.json"
    path.write_text("{" + ",".join(['"i":1'] * 200_000) + '}\n{"i": 2}\n', encoding="utf-8")
    eng = open_named("spark", str(tmp_path / "warehouse"))
    try:
        eng.load_lines([os.path.abspath(path)], "_sg_huge_lines")
        typed = typed_select("_sg_huge_lines", SOURCE, [], "spark")
        rows = eng.fetch(
            exp.select("_source_line", "_corrupt", "i").from_(exp.Subquery(this=typed, alias="t"))
        )
    finally:
        eng.close()
    assert sorted(rows) == [(1, True, None), (2, False, 2)]
