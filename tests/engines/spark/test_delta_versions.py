"""Spark + Delta: a table's version is read from its log, not its history.

``table_version`` answers after every clone and publish (a daily run asks ~20 times); it
reads ``DeltaLog.update().version`` (a listing of ``_delta_log``) instead of running a
history query as a Spark job. The answer must be the same — checked against delta-rs, a
reader that shares nothing with the JVM — including after another writer committed to a
table this JVM has already read (a stale cached log would give the old version).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from sluicegate.engines import delta_spark

pytestmark = pytest.mark.spark


def _write(spark, path: Path, n: int, mode: str) -> None:  # noqa: ANN001 - a SparkSession
    spark.range(n).write.format("delta").mode(mode).save(str(path))


def test_the_log_gives_the_version_delta_rs_reads(spark, tmp_path: Path) -> None:
    table = tmp_path / "t"
    _write(spark, table, 3, "overwrite")
    _write(spark, table, 2, "append")
    _write(spark, table, 1, "append")
    # the fast path answers on this Delta release (no fallback to the history)
    assert delta_spark.log_version(spark, str(table)) == 2
    assert delta_spark.table_version(spark, str(table)) == DeltaTable(str(table)).version() == 2


def test_a_commit_by_another_writer_is_seen(spark, tmp_path: Path) -> None:
    """The JVM caches a table's log; the version read must bring it up to date."""
    table = tmp_path / "t"
    _write(spark, table, 3, "overwrite")
    assert spark.read.format("delta").load(str(table)).count() == 3  # the log now cached
    assert delta_spark.table_version(spark, str(table)) == 0
    write_deltalake(str(table), pa.table({"id": pa.array([7, 8], pa.int64())}), mode="append")
    write_deltalake(str(table), pa.table({"id": pa.array([9], pa.int64())}), mode="append")
    assert DeltaTable(str(table)).version() == 2
    assert delta_spark.table_version(spark, str(table)) == 2


def test_no_table_no_version(spark, tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    assert delta_spark.log_version(spark, str(empty)) == -1
    with pytest.raises(Exception):  # noqa: B017, PT011 - the history's own error, as before
        delta_spark.table_version(spark, str(empty))


def test_the_history_answers_when_the_log_cannot(spark, tmp_path: Path, monkeypatch) -> None:
    """Another Delta release's ``update`` signature: the version still comes, from the history."""
    table = tmp_path / "t"
    _write(spark, table, 3, "overwrite")
    _write(spark, table, 1, "append")

    def broken(_spark, _path):  # noqa: ANN001, ANN202
        raise RuntimeError("no such method")

    monkeypatch.setattr(delta_spark, "log_version", broken)
    assert delta_spark.table_version(spark, str(table)) == 1
