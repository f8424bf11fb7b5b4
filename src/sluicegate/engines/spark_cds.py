"""The class-data-sharing archive a local Spark driver starts from.

A local run spends seconds of its start, and of every first use of Delta, Parquet and
the query compiler later on, loading and verifying JVM classes from jars. A
dynamic CDS archive (JDK 13+) holds those classes already parsed and verified; the JVM
maps it and skips the work. Measured on a 20,000-line retail run on ``local[2]``
(docs/spark.md, "Local mode defaults"): 82-84 s without, 70 s with; at 1M lines the
saving is inside the host's noise.

``make jars`` builds the archive with one training run (``scripts/spark_cds.py``) into
``.jars/cds/driver.jsa`` of the source checkout; ``SLUICEGATE_SPARK_CDS`` names another
file, or is empty to use none. The JVM itself checks that the archive matches its build
and class path and, when it does not (a JDK upgrade, other PySpark jars), runs without
it; the archive can make a run faster, never different. Its log lines are turned off:
the JVM writes them to the standard output, where a run's ``--json`` report goes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .spark_jars import checkout_jars

ENV_CDS = "SLUICEGATE_SPARK_CDS"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""The JVM reports an archive it cannot use on the standard output; not here."""


def archive_path(environ: Mapping[str, str] | None = None) -> str | None:
    """The archive a local driver should map: ``SLUICEGATE_SPARK_CDS`` (empty = none),
    else ``.jars/cds/driver.jsa`` of the source checkout; None when it is not there."""
    env = os.environ if environ is None else environ
    if ENV_CDS in env:
        path = env[ENV_CDS]
    else:
        path = str(checkout_jars() / "cds" / "driver.jsa")
    return path if path and os.path.isfile(path) else None


def driver_flags(environ: Mapping[str, str] | None = None) -> str:
    """HotSpot flags that map the archive, or "" when there is none.

    >>> driver_flags({ENV_CDS: ""})
    ''
    """
    path = archive_path(environ)
    if path is None or any(c.isspace() for c in path):  # a Java option cannot hold spaces
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def dump_flags(path: str) -> str:
    """HotSpot flags that write the archive of every class loaded, at the JVM's exit."""
    return f"-XX:ArchiveClassesAtExit={path} {QUIET}"
