"""The JVM jars and static settings a Spark session needs for Delta Lake (and S3).

``make jars`` fetches them with Maven from ``jvm/spark/pom.xml`` into ``.jars/spark``;
a run never downloads anything. A session sluicegate starts gets them, with Delta's SQL
extension and catalog, *added to* what the user set:

* in local mode, on the driver JVM's class path (``spark.driver.extraClassPath``, after
  the user's own entries). ``spark.jars`` would make the local executor fetch a copy of
  every jar (697 MB with the AWS SDK bundle) into ``/tmp/spark-*/userFiles-*`` at each
  session start — seconds of I/O, and a folder left behind whenever a JVM is killed. On
  the class path they are read in place, and the driver's class archive (``spark_cds``)
  can hold Delta's and Iceberg's classes too. The executor is the driver JVM there, so
  nothing else needs them;
* on a cluster, ``spark.jars``: the user's jars first, then ours, shipped to the
  executors (a user's ``spark.jars.packages`` is passed through untouched, so cluster
  libraries and Ivy coordinates keep working). A jar the user names in ``spark.jars`` is
  not added again under the same file name, in either mode;
* ``spark.sql.extensions``: Delta's extension appended to the user's list;
* ``spark.sql.catalog.spark_catalog``: Delta's catalog only when the user set none.

Where the jars are: ``SLUICEGATE_SPARK_JARS`` (a folder; empty = add none, e.g. on a
cluster whose image already has Delta), else ``.jars/spark`` of the source checkout.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from pathlib import Path

ENV_JARS = "SLUICEGATE_SPARK_JARS"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def checkout_jars() -> Path:
    """``.jars`` of the source checkout: where ``make jars`` puts the jars (``spark/``,
    ``kafka/``) and the driver's class archive (``cds/``) a local run uses."""
    return Path(__file__).resolve().parents[3] / ".jars"


def jars_folder(environ: Mapping[str, str] | None = None) -> str | None:
    """The folder of jars to hand to Spark, or None."""
    env = os.environ if environ is None else environ
    if ENV_JARS in env:
        return env[ENV_JARS] or None
    checkout = checkout_jars() / "spark"
    return str(checkout) if checkout.is_dir() else None


def lakehouse_config(
    user: Mapping[str, str], environ: Mapping[str, str] | None = None, *, local: bool = False
) -> dict[str, str]:
    """Static settings for a new session: the user's, with our jars and Delta merged in;
    ``local`` when the session runs in one JVM (``local[n]``).

    >>> cfg = lakehouse_config({"spark.jars": "/opt/x.jar"}, environ={ENV_JARS: ""})
    >>> cfg["spark.jars"], cfg["spark.sql.extensions"]
    ('/opt/x.jar', 'io.delta.sql.DeltaSparkSessionExtension')
    """
    out: dict[str, str] = {}
    folder = jars_folder(environ)
    ours = sorted(glob.glob(os.path.join(folder, "*.jar"))) if folder else []
    jars = [j for j in (user.get("spark.jars") or "").split(",") if j.strip()]
    names = {os.path.basename(j) for j in jars}
    ours = [j for j in ours if os.path.basename(j) not in names]
    if local:
        path = [p for p in (user.get("spark.driver.extraClassPath") or "").split(os.pathsep) if p]
        path += [j for j in ours if j not in path]
        if path:
            out["spark.driver.extraClassPath"] = os.pathsep.join(path)
    else:
        jars += ours
    if jars:
        out["spark.jars"] = ",".join(jars)
    extensions = [e for e in (user.get("spark.sql.extensions") or "").split(",") if e.strip()]
    if DELTA_EXTENSION not in extensions:
        extensions.append(DELTA_EXTENSION)
    out["spark.sql.extensions"] = ",".join(extensions)
    out["spark.sql.catalog.spark_catalog"] = user.get(
        "spark.sql.catalog.spark_catalog", DELTA_CATALOG
    )
    # Delta rebuilds a table's state with 50 shuffle partitions by default: ~50 tiny
    # tasks per table read on a small log, most of a short run's time in local mode
    out["spark.databricks.delta.snapshotPartitions"] = user.get(
        "spark.databricks.delta.snapshotPartitions", "2"
    )
    return out


def has_delta(session) -> bool:  # noqa: ANN001 - pyspark.sql.SparkSession
    """Does this (reused) session's context carry Delta's SQL extension?"""
    try:
        extensions = session.sparkContext.getConf().get("spark.sql.extensions") or ""
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: trust the server
        return True
    return DELTA_EXTENSION in extensions
