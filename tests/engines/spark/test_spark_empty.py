"""Empty frames start no Python worker (Spark).

A table a run creates empty (a DLQ inbox on its first run, a source with no files) used
to be ``createDataFrame([], schema)``: PySpark re-serializes the empty list with a
``map`` over one partition per core, and running them started Spark's Python worker daemon and a
worker per slot — ~140 MiB and ~0.7 s on a local driver, and a refused task on a cluster
whose executors run another Python. ``spark_empty.empty_frame`` has no partitions, so no
task and no worker; its schema is the one asked for, nullability included.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from sluicegate.engines.spark_empty import empty_frame
from sluicegate.engines.spark_lines import LINES_SCHEMA, read_lines

pytestmark = pytest.mark.spark

SCHEMA = StructType(
    [StructField("sale_id", StringType(), False), StructField("qty", LongType(), True)]
)


def tasks_of(df) -> int:
    """Partitions of the frame's physical RDD: the tasks running it would launch."""
    return df._jdf.queryExecution().toRdd().getNumPartitions()


def test_an_empty_frame_has_the_schema_asked_for_and_no_task_to_run(spark, tmp_path):
    df = empty_frame(spark, SCHEMA)
    assert df.schema == SCHEMA  # names, types and nullability
    assert tasks_of(df) == 0
    assert df.count() == 0
    # written and read back as a table with the same columns
    df.write.format("delta").save(str(tmp_path / "t"))
    back = spark.read.format("delta").load(str(tmp_path / "t"))
    assert [(f.name, f.dataType) for f in back.schema] == [
        ("sale_id", StringType()),
        ("qty", LongType()),
    ]
    assert back.count() == 0


def test_the_list_form_would_run_tasks(spark):
    """What the helper replaces: the same schema from an empty list runs a task per slot
    (each one a Python worker), so the count above is a measure that can fail."""
    assert tasks_of(spark.createDataFrame([], SCHEMA)) > 0


def test_no_input_files_read_as_an_empty_lines_relation_without_tasks(spark):
    df = read_lines(spark, [])
    assert df.schema == LINES_SCHEMA
    assert tasks_of(df) == 0


def test_a_table_created_empty_is_read_and_published_without_tasks(spark, tmp_path):
    """The Delta transaction keeps a table created from an empty plan as its schema until
    rows arrive; reading it inside the run and publishing it empty both go through
    ``empty_frame``."""
    from sluicegate.engines.delta_spark import DeltaStore

    store = DeltaStore(spark, str(tmp_path / "wh"))
    tx = store.begin()
    tx.create("inbox", spark.sql("SELECT CAST('a' AS STRING) AS k, 1L AS n WHERE FALSE"))
    assert tx.known_empty("inbox")
    inside = tx.frame("inbox")
    assert tasks_of(inside) == 0
    assert inside.columns == ["k", "n"]
    tx.commit()
    published = store.read("inbox")
    assert published is not None and published.count() == 0
    assert published.columns == ["k", "n"]


def test_the_split_aware_readers_offsets_are_a_local_relation(spark, tmp_path):
    """A file read split-aware (too large to read whole, or not UTF-8) numbers its lines
    from a small table of block offsets collected to the driver; handed back as Arrow it
    is a local relation, not a Python RDD whose tasks would start Python workers."""
    f = tmp_path / "a.jsonl"
    f.write_text('{"k": 1}\n\n{"k": 2}\n')
    df = read_lines(spark, [str(f)], wholetext_max_bytes=0)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan and "ExistingRDD" not in plan, plan
    assert [(r._source_line, r._line) for r in df.orderBy("_source_line").collect()] == [
        (1, '{"k": 1}'),
        (3, '{"k": 2}'),
    ]
