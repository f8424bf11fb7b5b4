"""Lineage: every engine numbers physical lines the same way (Engine.load_lines).

The oracle is a few lines of Python over the raw bytes (docs/contract-reference.md §4):
LF ends a line, trailing CRs go, one BOM at the start of a file goes, a line of only
spaces/tabs/CRs is blank (not a record), invalid UTF-8 is replaced and flagged. On Spark
the same files are also read by the split-aware reader with tiny splits, so a file is cut
across several tasks and the line numbers must still be the physical ones.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlglot import exp

FILES: dict[str, bytes] = {
    "plain.json": b'{"a":1}\n{"a":2}\n',
    "crlf, blanks and no final LF.json": b'\xef\xbb\xbf{"a":1}\r\n\r\n  \t\n{"a":2}\r\r\n{"a":3}',
    "bad+utf8 100%.json": b'{"a":"\xff"}\n{"a":"ok"}\n\xe2\x82\n{"a":"\xc3\xa9"}\n',
    "inner cr [1].json": b'{"a":1}\rX\n\x0b\n\n',
    "empty.json": b"",
    "two boms.json": b"\xef\xbb\xbf\xef\xbb\xbf{}\n\xef\xbb\xbf\n",
    "long.json": b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i % 37)) for i in range(400)),
}


def expected_lines(
    folder: Path, files: dict[str, bytes] = FILES
) -> list[tuple[str, int, str, bool]]:
    """The lines relation of ``files`` (name → bytes) in ``folder``, computed from the
    bytes, independently of any engine."""
    rows = []
    for name in sorted(files):
        data = files[name]
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        for n, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip(b" \t\r"):
                continue
            try:
                text, bad = raw.decode("utf-8"), False
            except UnicodeDecodeError:
                text, bad = raw.decode("utf-8", errors="replace"), True
            rows.append((str(folder / name), n, text.rstrip("\r"), bad))
    return sorted(rows)


@pytest.fixture
def feed(tmp_path: Path) -> Path:
    folder = tmp_path / "in put"
    folder.mkdir()
    for name, data in FILES.items():
        (folder / name).write_bytes(data)
    return folder


def _read(eng, folder: Path) -> list[tuple]:  # noqa: ANN001
    files = sorted(os.path.abspath(folder / n) for n in FILES)
    eng.load_lines(files, "_sg_lines")
    q = exp.select("_source_file", "_source_line", "_line", "_bad_utf8").from_("_sg_lines")
    return sorted(tuple(r) for r in eng.fetch(q))


def test_lines_relation(open_test_engine, feed):
    assert _read(open_test_engine(), feed) == expected_lines(feed)


@pytest.mark.spark
@pytest.mark.parametrize("engine_name", ["spark"], indirect=True)
def test_spark_split_aware_reader_numbers_lines_across_splits(open_test_engine, feed):
    """Force the split-aware reader and 64-byte splits: many tasks per file."""
    eng = open_test_engine(wholetext_max_bytes=0)
    eng.spark.conf.set("spark.sql.files.maxPartitionBytes", "64")
    eng.spark.conf.set("spark.sql.files.openCostInBytes", "0")
    eng.load_lines([str(feed / "long.json")], "_probe")
    assert eng.spark.table("_probe").rdd.getNumPartitions() > 1  # really split
    assert _read(eng, feed) == expected_lines(feed)


def test_drop_table_frees_a_temporary_table(open_test_engine, feed):
    """``drop_table`` (a run frees its large temporary tables with it) removes the table:
    sqlglot keeps a DROP's table in ``tables``, which the Spark engine once ignored."""
    eng = open_test_engine()
    _read(eng, feed)
    eng.create_table_as("_sg_copy", exp.select("_line").from_("_sg_lines"), temporary=True)
    assert eng.table_exists("_sg_copy")
    eng.drop_table("_sg_copy")
    assert not eng.table_exists("_sg_copy")
    eng.drop_table("_sg_copy")  # IF EXISTS: a second drop is no error
