"""A contract's own driver JVM options are added to sluicegate's, flag by flag.

Before, a contract's ``spark.driver.extraJavaOptions`` replaced every driver flag
sluicegate sets — the log4j2 file that keeps Spark's errors to one line, the collector,
the JIT thresholds, the young generation's cap, the class archive — so one ``-Dfoo=bar``
brought Java stack frames back. The live JVM's side is in
``tests/engines/spark/test_spark_java_options.py``.
"""

from __future__ import annotations

from sluicegate.engines.jvm_options import flag_key, merge_java_options
from sluicegate.engines.spark_session import LOCAL_JVM, local_defaults

KEY = "spark.driver.extraJavaOptions"


def test_flags_of_one_setting_share_a_key():
    assert flag_key("-XX:MaxNewSize=512m") == flag_key("-XX:MaxNewSize=1g")
    assert flag_key("-XX:+UseParallelGC") == flag_key("-XX:+UseG1GC") == "collector"
    assert flag_key("-XX:+UseCompressedOops") != "collector"
    assert flag_key("-Dlog4j2.configurationFile=file:/a") == flag_key(
        "-Dlog4j2.configurationFile=file:/b"
    )
    assert flag_key("-Da=1") != flag_key("-Dab=1")
    assert flag_key("-Xss4m") == flag_key("-Xss8m") != flag_key("-Xms8m")


def test_theirs_come_last_and_replace_only_what_they_set():
    ours = "-Dlog4j2.configurationFile=file:/t/l.properties -XX:+UseParallelGC -XX:MaxNewSize=512m"
    merged = merge_java_options(ours, "-XX:MaxNewSize=1g -Dprobe='a b'")
    assert merged == (
        "-Dlog4j2.configurationFile=file:/t/l.properties -XX:+UseParallelGC "
        "-XX:MaxNewSize=1g -Dprobe='a b'"
    )
    # another collector drops ours: the JVM refuses to start with two
    g1 = merge_java_options(ours, "-XX:+UseG1GC")
    assert "UseParallelGC" not in g1 and g1.endswith("-XX:+UseG1GC")
    # their own log4j2 file is theirs to choose
    mine = merge_java_options(ours, "-Dlog4j2.configurationFile=file:/mine")
    assert mine.count("log4j2.configurationFile") == 1 and mine.endswith("file:/mine")
    assert merge_java_options(ours, "  ") == ours
    # an unbalanced quote keeps both whole (Spark reports it when it starts)
    assert merge_java_options("-Da=1", "-Db='x") == "-Da=1 -Db='x"


def test_a_local_session_keeps_its_flags_beside_the_contracts():
    d = local_defaults("local[2]", {KEY: "-Dprobe=1 -XX:MaxNewSize=256m"}, {})
    java = d[KEY]
    assert "log4j2.configurationFile" in java
    assert "-XX:+UseParallelGC" in java and "Tier4InvocationThreshold" in java
    assert "-XX:MaxNewSize=512m" not in java
    assert java.endswith("-Dprobe=1 -XX:MaxNewSize=256m")
    # without the contract's string, ours alone
    assert LOCAL_JVM in local_defaults("local[2]", {}, {})[KEY]
