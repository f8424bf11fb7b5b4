"""DuckDB reading ``s3://`` source objects: copied to a local folder, read by the usual
readers, lineage renamed back to the object's URI.

DuckDB reaches S3 only through its ``httpfs`` extension, which it downloads from its own
extension site at run time (not from a package registry), so a machine without that
site cannot load it. Instead the bound objects are copied with pyarrow's S3 client (in
the pyarrow wheel) into a private temp folder as ``<tmp>/<bucket>/<key>``, the same
readers as for local files run on the copies (``duckdb_inputs``: the fast path, the
UTF-8 rescue, Parquet with row numbers), and ``_source_file`` is rewritten from
``<tmp>/`` to ``s3://`` — so lineage, the ledger and the DLQ name the object, exactly as
Spark (which reads ``s3a://`` itself) does. The copies are removed when the table is
built. The binder hashed the objects before (run/bind_s3.py); the publish checks that
none changed since (size and last-modified time).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence

import pyarrow.fs as pafs
from sqlglot import exp

from ..compile.render import col, lit
from .object_store import S3Settings, is_s3, key_path


def read_via_copies(
    files: Sequence[str],
    table: str,
    s3: S3Settings | None,
    load: Callable[[list[str]], None],
    execute: Callable[[exp.Expression], None],
) -> None:
    """Copy the ``s3://`` files, ``load(local paths)`` into ``table``, rename lineage."""
    settings = s3 or S3Settings.resolve()
    fs = settings.arrow_fs()
    local = pafs.LocalFileSystem()
    tmp = tempfile.mkdtemp(prefix="sluicegate-s3-")
    try:
        paths = []
        for f in files:
            if not is_s3(f):
                paths.append(f)
                continue
            dest = os.path.join(tmp, key_path(f))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            pafs.copy_files(key_path(f), dest, source_filesystem=fs, destination_filesystem=local)
            paths.append(dest)
        load(paths)
        prefix = tmp + "/"
        execute(
            exp.update(
                exp.Table(this=exp.to_identifier(table, quoted=True)),
                {
                    "_source_file": exp.DPipe(
                        this=lit("s3://"),
                        expression=exp.Substring(
                            this=col("_source_file"), start=lit(len(prefix) + 1)
                        ),
                        safe=True,
                    )
                },
                where=exp.func("starts_with", col("_source_file"), lit(prefix)),
            )
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
