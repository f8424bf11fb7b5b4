"""Read input files on Spark with lineage: ``_source_file`` and 1-based ``_source_line``.

Lineage is the identity the ledger is proven on, so the line number must be the physical
line of the file — the same number DuckDB's reader gives — however Spark splits the work.
Two readers, chosen per file by size (both exact; measured in docs/spark.md):

* **whole file** (files up to ``wholetext_max_bytes``, by default 1/20 of a task's
  heap): ``text(wholetext=True)`` gives one row per file; ``posexplode(split(value,
  '\\n'))`` numbers its lines. One task per file, no shuffle, no second pass: the
  cheapest exact reader (1M lines/82 MB: ~1.8 s).
* **split-aware** (larger files, which would not fit one JVM string): ``text`` with
  ``lineSep='\\n'`` lets Spark split a file across tasks. Within one split rows are read in
  order, so ``monotonically_increasing_id()`` is consecutive there; a small aggregate per
  (file, split start) gives each split's first id and row count, a running sum over the
  splits of a file gives its line offset, and ``line = id - first_id + offset + 1``.
  The aggregate is one extra pass over the input (1M lines/82 MB: ~6.6 s).

Both give the lines relation :meth:`Engine.load_lines` specifies (``duckdb_inputs`` has
the reference): one BOM at the start of a file and trailing CRs removed, blank lines (only
spaces, tabs, CRs) dropped, ``_bad_utf8`` for a line holding bytes that are not UTF-8
(replaced by U+FFFD). The whole-file reader decodes a file as one string, which would
hide *which* line was bad, so a file that is not valid UTF-8 (checked in Python, by
chunks) is read split-aware, where each line keeps its raw bytes. ``_source_file`` is
the path as bound (not Spark's URI form): the ``file:`` scheme is removed (``s3a://``
becomes ``s3://`` again) and it is percent-decoded.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from .spark_empty import empty_frame

DEFAULT_WHOLETEXT_MAX_BYTES = 256 << 20
#: A file read whole is held several times over while its lines are split out (its
#: bytes, the decoded value, the split array, the exploded rows), by every task slot at
#: once. Measured on ``local[2]``: in a 4g heap one 205 MB file read whole and a 205 MB
#: with a 103 MB file at once ran out of heap; in a 2g heap the 205 MB file alone did.
#: So a file is read whole only up to 1/20 of the heap one task may count on (a 4g
#: local[2] driver: ~95 MB), and split-aware above that (exact as well, one more pass).
WHOLETEXT_HEAP_SHARE = 20
#: ...and never below this: a tiny heap still reads a small file in one task
WHOLETEXT_MIN_BYTES = 4 << 20


def wholetext_budget(heap_per_task: int) -> int:
    """The largest file read whole, for the heap one task may count on
    (spark_session.heap_per_task).

    >>> wholetext_budget(2 << 30) >> 20, wholetext_budget(64 << 30) >> 20, wholetext_budget(0) >> 20
    (102, 256, 4)
    """
    share = heap_per_task // WHOLETEXT_HEAP_SHARE
    return max(WHOLETEXT_MIN_BYTES, min(DEFAULT_WHOLETEXT_MAX_BYTES, share))


BOM = "\ufeff"
LINES_SCHEMA = StructType(
    [
        StructField("_source_file", StringType()),
        StructField("_source_line", LongType()),
        StructField("_line", StringType()),
        StructField("_bad_utf8", BooleanType()),
    ]
)
_GLOB_CHARS = "\\[]{}*?"


def spark_path(path: str) -> str:
    """Escape glob characters: Spark treats ``[``, ``{``, ``*`` and ``?`` in a path as a glob.
    ``s3://`` is read through Hadoop's S3A (``s3a://``)."""
    if path.startswith("s3://"):
        path = "s3a://" + path[len("s3://") :]
    return "".join("\\" + ch if ch in _GLOB_CHARS else ch for ch in path)


def bound_path(uri: Column) -> Column:
    """Spark's ``file:/a%20b+c.json`` back to the bound ``/a b+c.json``.

    Hadoop percent-encodes a path but leaves ``+`` alone, while ``url_decode`` reads ``+`` as
    a space: protect it first.
    """
    no_scheme = F.regexp_replace(F.regexp_replace(uri, r"^file:(//)?", ""), r"^s3a://", "s3://")
    return F.url_decode(F.replace(no_scheme, F.lit("+"), F.lit("%2B")))


def _not_blank(line: Column) -> Column:
    return F.trim(line, F.lit(" \t\r")) != F.lit("")


def is_utf8(path: str, chunk: int = 1 << 22) -> bool:
    """Whether the file decodes as UTF-8 (incrementally: a big file is not loaded whole)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(chunk), b""):
                decoder.decode(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def read_lines(
    spark: SparkSession,
    files: Sequence[str],
    *,
    wholetext_max_bytes: int = DEFAULT_WHOLETEXT_MAX_BYTES,
) -> DataFrame:
    """``(_source_file, _source_line, _line)`` for every non-blank line of ``files``."""
    if not files:
        return empty_frame(spark, LINES_SCHEMA)
    # an s3:// object is read split-aware (exact for any size or encoding) without first
    # downloading it to the driver to measure and decode it
    whole = [
        f
        for f in files
        if not f.startswith("s3://") and os.path.getsize(f) <= wholetext_max_bytes and is_utf8(f)
    ]
    chosen = set(whole)
    split = [f for f in files if f not in chosen]
    parts = []
    if whole:
        parts.append(_whole_files(spark, whole))
    if split:
        parts.append(_split_aware(spark, split))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _whole_files(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    raw = spark.read.text([spark_path(f) for f in files], wholetext=True)
    text = F.col("value")
    no_bom = F.when(F.startswith(text, F.lit(BOM)), F.substr(text, F.lit(2))).otherwise(text)
    exploded = raw.select(
        bound_path(F.col("_metadata.file_path")).alias("_source_file"),
        F.posexplode(F.split(no_bom, "\n")).alias("_pos", "_l"),
    )
    return exploded.where(_not_blank(F.col("_l"))).select(
        "_source_file",
        (F.col("_pos") + 1).cast("bigint").alias("_source_line"),
        F.rtrim(F.col("_l"), F.lit("\r")).alias("_line"),
        F.lit(False).alias("_bad_utf8"),
    )


def _split_aware(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    raw = (
        spark.read.option("lineSep", "\n")
        .text([spark_path(f) for f in files])
        .select(
            F.col("_metadata.file_path").alias("_uri"),
            F.col("_metadata.file_block_start").alias("_block"),
            F.monotonically_increasing_id().alias("_id"),
            F.col("value").alias("_l"),
        )
    )
    blocks = raw.groupBy("_uri", "_block").agg(
        F.min("_id").alias("_first"), F.count(F.lit(1)).alias("_rows")
    )
    per_file = Window.partitionBy("_uri").orderBy("_block")
    offsets = blocks.select(
        "_uri",
        "_block",
        "_first",
        (F.sum("_rows").over(per_file) - F.col("_rows")).alias("_offset"),
    ).toArrow()
    # from Arrow, a local relation: a Python list would start Python workers (spark_empty)
    table = spark.createDataFrame(
        offsets, "_uri string, _block bigint, _first bigint, _offset bigint"
    )
    numbered = raw.join(F.broadcast(table), ["_uri", "_block"]).select(
        bound_path(F.col("_uri")).alias("_source_file"),
        (F.col("_id") - F.col("_first") + F.col("_offset") + 1).alias("_source_line"),
        F.col("_l"),
    )
    return numbered.where(_not_blank(F.col("_l"))).select(
        "_source_file",
        F.col("_source_line").cast("bigint").alias("_source_line"),
        F.make_valid_utf8(F.rtrim(F.col("_l"), F.lit("\r"))).alias("_line"),
        (~F.is_valid_utf8(F.col("_l"))).alias("_bad_utf8"),
    )


def read_parquet(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    """Parquet rows with ``_source_file`` and the 1-based row number within the file."""
    df = spark.read.parquet(*[spark_path(f) for f in files])
    data = [F.col(f"`{c}`") for c in df.columns]
    return df.select(
        *data,
        bound_path(F.col("_metadata.file_path")).alias("_source_file"),
        (F.col("_metadata.row_index") + 1).cast("bigint").alias("_source_line"),
    )
