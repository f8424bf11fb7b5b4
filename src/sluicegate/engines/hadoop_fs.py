"""Files on any Hadoop file system (a local folder, S3A) through the Spark session's JVM.

The Spark table stores (Delta: engines/delta_spark.py, Iceberg: engines/iceberg_spark.py)
keep their journal and staging beside the warehouse's tables, on the same file system:
``s3a://`` as well as a local path, so Python's own file functions will not do.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class HadoopFS:
    """The few file operations the store needs, on any Hadoop file system (local, S3A)."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - py4j gateway: Hadoop's FileSystem
        self._jvm = jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
        self._fs = jvm.org.apache.hadoop.fs.Path(root).getFileSystem(self._conf)

    def _p(self, path: str):  # noqa: ANN202
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._p(path)))

    def children(self, path: str) -> list[str]:
        """Names of the folders directly under ``path`` ([] when it does not exist)."""
        if not self.exists(path):
            return []
        return sorted(s.getPath().getName() for s in self._fs.listStatus(self._p(path)))

    def write_text(self, path: str, text: str) -> None:
        """Write a small file whole (S3 puts are atomic; locally a rename makes it so)."""
        tmp = path + f".{secrets.token_hex(4)}.tmp"
        out = self._fs.create(self._p(tmp), True)
        out.write(bytearray(text.encode("utf-8")))
        out.hsync()
        out.close()
        if not self._fs.rename(self._p(tmp), self._p(path)):
            raise OSError(f"could not write {path}")

    def read_text(self, path: str) -> str:
        stream = self._fs.open(self._p(path))
        try:
            reader = self._jvm.java.io.BufferedReader(
                self._jvm.java.io.InputStreamReader(stream, "UTF-8")
            )
            lines = []
            line = reader.readLine()
            while line is not None:
                lines.append(line)
                line = reader.readLine()
            return "\n".join(lines)
        finally:
            stream.close()

    def delete(self, path: str) -> None:
        self._fs.delete(self._p(path), True)

    @property
    def renames_atomically(self) -> bool:
        """A folder rename is one atomic step here (a local disk, HDFS); on S3 it is a
        copy of every object, so a store never publishes by renaming there."""
        return str(self._fs.getScheme()) in ("file", "hdfs")

    def rename(self, source: str, target: str) -> bool:
        """Move folder ``source`` to ``target`` (which must not exist); False if refused."""
        if self.exists(target):
            return False
        return bool(self._fs.rename(self._p(source), self._p(target)))
