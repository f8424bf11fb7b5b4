"""The embedded engine loads a run's lines with one cursor per core (duckdb_inputs.py
``_load_lines_in_parallel``): DuckDB splits and numbers one file's lines on one thread, so
one statement used one core. The relation must be the same one the bytes say, whatever
the path: parallel, the UTF-8 rescue after a parallel attempt, one batch after another,
and never written into the warehouse file of an engine that is not staging."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

from sluicegate.engines.duckdb_engine import DuckDBEngine
from tests.engines.conformance.test_lines import expected_lines

pytestmark = pytest.mark.duckdb

GOOD = {
    f"part-{i}.json": b"".join(
        b'{"n":%d,"pad":"%s"}\r\n' % (j, b"x" * ((i * 7 + j) % 41)) for j in range(50 + 300 * i)
    )
    + b'\n  \t\n{"tail":true}'
    for i in range(5)
}
BAD = {"latin1.json": b'{"a":"caf\xe9"}\n{"a":"ok"}\n'}


def write(folder: Path, files: dict[str, bytes]) -> list[str]:
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return sorted(str(folder / n) for n in files)


def lines(eng: DuckDBEngine) -> list[tuple]:
    q = exp.select("_source_file", "_source_line", "_line", "_bad_utf8").from_("_sg_lines")
    return sorted(tuple(r) for r in eng.fetch(q))


def relations(eng: DuckDBEngine) -> list[tuple]:
    """Every relation named _sg_lines, with its catalog and whether it is TEMP."""
    return sorted(
        eng.fetch(
            "SELECT database_name, temporary FROM duckdb_tables() WHERE table_name = '_sg_lines'"
        )
    )


@pytest.fixture
def staging(tmp_path: Path):
    eng = DuckDBEngine(str(tmp_path / "wh.duckdb"), staging=True, threads=2, profile=True)
    yield eng
    eng.close()


def test_parallel_load_equals_the_bytes(staging, tmp_path):
    files = write(tmp_path / "a", GOOD)
    staging.load_lines(files, "_sg_lines")
    assert lines(staging) == expected_lines(tmp_path / "a", GOOD)
    assert relations(staging) == [("memory", False)]  # the staging database, not the file
    assert any("2 cursors at once" in t.sql for t in staging.profile)


def test_a_bad_file_falls_back_and_leaves_one_relation(staging, tmp_path):
    files = write(tmp_path / "b", {**GOOD, **BAD})
    staging.load_lines(files, "_sg_lines")
    assert lines(staging) == expected_lines(tmp_path / "b", {**GOOD, **BAD})
    assert relations(staging) == [("temp", True)]  # the groups appended before it: gone


def test_a_batch_after_a_rescued_one_is_not_hidden_by_it(staging, tmp_path):
    staging.load_lines(write(tmp_path / "c", BAD), "_sg_lines")  # one file: the TEMP path
    files = write(tmp_path / "d", GOOD)
    staging.load_lines(files, "_sg_lines")
    assert lines(staging) == expected_lines(tmp_path / "d", GOOD)


def test_an_engine_on_the_warehouse_file_keeps_its_lines_temporary(tmp_path):
    eng = DuckDBEngine(str(tmp_path / "wh.duckdb"), threads=2)
    try:
        eng.load_lines(write(tmp_path / "e", GOOD), "_sg_lines")
        assert lines(eng) == expected_lines(tmp_path / "e", GOOD)
        assert relations(eng) == [("temp", True)]
    finally:
        eng.close()
