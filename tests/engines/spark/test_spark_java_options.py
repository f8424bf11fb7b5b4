"""A contract's own ``spark.driver.extraJavaOptions`` on a live driver JVM.

The contract sets a property, another collector and another young generation; the JVM
that starts has all three, and still sluicegate's log4j2 file (Spark's errors on one line)
and JIT thresholds. Before, the contract's string replaced every one of sluicegate's
flags — and merely appending it would not start: the JVM refuses two collectors.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import run_json_script

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent(
    """\
    import json
    from sluicegate.engines.spark_session import SessionSpec, open_session

    theirs = "-Dsluicegate.probe=yes -XX:+UseG1GC -XX:MaxNewSize=256m"
    spark, owned = open_session(
        SessionSpec(master="local[1]", options={"spark.driver.extraJavaOptions": theirs})
    )
    jvm = spark.sparkContext._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    flag = lambda name: str(bean.getVMOption(name).getValue())
    prop = jvm.java.lang.System.getProperty
    print(json.dumps({
        "probe": prop("sluicegate.probe"),
        "log4j2": prop("log4j2.configurationFile"),
        "g1": flag("UseG1GC"), "parallel": flag("UseParallelGC"),
        "young": int(flag("MaxNewSize")),
        "tier4": flag("Tier4InvocationThreshold"),
        "rows": spark.range(3).count(),
    }))
    spark.stop()
    """
)


def test_a_contracts_java_options_join_sluicegates_on_the_live_jvm():
    seen = run_json_script(SCRIPT)
    assert seen["rows"] == 3
    # the contract's three flags, theirs winning where both set one
    assert seen["probe"] == "yes"
    assert (seen["g1"], seen["parallel"]) == ("true", "false")
    assert seen["young"] == 256 << 20
    # sluicegate's own, still there
    assert "sluicegate-log4j2" in (seen["log4j2"] or ""), seen
    assert seen["tier4"] == "50000"
