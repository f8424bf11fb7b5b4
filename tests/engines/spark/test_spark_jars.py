"""A local session sluicegate starts reads its jars in place (engines/spark_jars.py).

With ``spark.jars`` the local executor copied every jar — 697 MB with the AWS SDK bundle —
into ``/tmp/spark-*/userFiles-*`` at each session start, and a killed JVM left the copy
behind (78 of them once filled this machine's disk). Here a real session, started the way
a run starts it in its own process, writes and reads a Delta table and loads Iceberg's
catalog class, while its files folder holds no jar.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import run_json_script

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent(
    """\
    import json, os, sys
    from pyspark import SparkFiles
    from sluicegate.engines.spark_session import SessionSpec, open_session

    spark, owned = open_session(SessionSpec(master="local[2]"))
    root = SparkFiles.getRootDirectory()
    copied = sorted(n for _, _, names in os.walk(root) for n in names if n.endswith(".jar"))
    spark.range(5).write.format("delta").save(sys.argv[1])
    rows = spark.read.format("delta").load(sys.argv[1]).count()
    loader = spark.sparkContext._jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    iceberg = loader.loadClass("org.apache.iceberg.spark.SparkCatalog").getName()
    aqe = spark.conf.get("spark.sql.adaptive.enabled")
    packed = spark.conf.get("spark.sql.inMemoryColumnarStorage.compressed")
    jvm = spark.sparkContext._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    young = int(bean.getVMOption("MaxNewSize").getValue())
    heap = int(jvm.java.lang.Runtime.getRuntime().maxMemory())
    print(json.dumps({"copied": copied, "rows": rows, "iceberg": iceberg, "owned": owned,
                      "aqe": aqe, "packed": packed, "young": young, "heap": heap}))
    spark.stop()
    """
)


def test_a_local_session_copies_no_jar_and_still_has_delta_and_iceberg(tmp_path):
    seen = run_json_script(SCRIPT, str(tmp_path / "t"))
    assert seen["owned"] is True
    assert seen["copied"] == []  # with spark.jars: delta-spark, iceberg-spark-runtime, …
    assert seen["rows"] == 5
    assert seen["iceberg"] == "org.apache.iceberg.spark.SparkCatalog"
    assert seen["aqe"] == "false"  # local defaults: no re-planning at each shuffle
    assert seen["packed"] == "false"  # local defaults: cached columns kept as they are
    # the JVM runs with the young generation capped (every page it touched stays resident)
    assert seen["young"] == 512 << 20, seen
    assert seen["heap"] > 2 * seen["young"], seen
