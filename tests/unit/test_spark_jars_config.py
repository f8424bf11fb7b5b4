"""How a session sluicegate starts gets its jars (engines/spark_jars.py), without a JVM.

Local mode puts them on the driver's class path, read in place; ``spark.jars`` would make
the local executor copy all 697 MB of them into ``/tmp/spark-*/userFiles-*`` at each
start. A cluster still gets ``spark.jars``: its executors are other JVMs.
"""

from __future__ import annotations

import os

from sluicegate.engines.spark_jars import DELTA_EXTENSION, ENV_JARS, lakehouse_config


def folder_of_jars(tmp_path, *names: str) -> dict[str, str]:
    for name in names:
        (tmp_path / name).write_bytes(b"PK")
    return {ENV_JARS: str(tmp_path)}


def test_a_local_session_reads_our_jars_in_place(tmp_path):
    env = folder_of_jars(tmp_path, "delta-spark.jar", "iceberg.jar")
    cfg = lakehouse_config({}, env, local=True)
    assert "spark.jars" not in cfg
    assert cfg["spark.driver.extraClassPath"].split(os.pathsep) == [
        str(tmp_path / "delta-spark.jar"),
        str(tmp_path / "iceberg.jar"),
    ]
    assert cfg["spark.sql.extensions"] == DELTA_EXTENSION


def test_a_cluster_session_ships_them_with_spark_jars(tmp_path):
    env = folder_of_jars(tmp_path, "delta-spark.jar")
    cfg = lakehouse_config({}, env)
    assert cfg["spark.jars"] == str(tmp_path / "delta-spark.jar")
    assert "spark.driver.extraClassPath" not in cfg


def test_the_users_class_path_and_jars_come_first_and_are_not_repeated(tmp_path):
    env = folder_of_jars(tmp_path, "delta-spark.jar", "kafka-clients.jar")
    user = {
        "spark.driver.extraClassPath": "/opt/a.jar",
        "spark.jars": "/opt/kafka-clients.jar",  # the user's copy of one of ours
    }
    cfg = lakehouse_config(user, env, local=True)
    assert cfg["spark.jars"] == "/opt/kafka-clients.jar"  # passed through, fetched as asked
    assert cfg["spark.driver.extraClassPath"].split(os.pathsep) == [
        "/opt/a.jar",
        str(tmp_path / "delta-spark.jar"),
    ]
    cluster = lakehouse_config(user, env)
    assert cluster["spark.jars"] == f"/opt/kafka-clients.jar,{tmp_path / 'delta-spark.jar'}"


def test_no_folder_adds_nothing_but_deltas_settings():
    cfg = lakehouse_config({}, {ENV_JARS: ""}, local=True)
    assert "spark.jars" not in cfg and "spark.driver.extraClassPath" not in cfg
    assert cfg["spark.sql.extensions"] == DELTA_EXTENSION


KAFKA = (
    "spark-sql-kafka-0-10_2.13-4.1.1.jar",
    "spark-token-provider-kafka-0-10_2.13-4.1.1.jar",
    "kafka-clients-3.9.1.jar",
    "commons-pool2-2.12.1.jar",
)


def test_a_kafka_stream_takes_its_jars_with_the_folder_not_through_spark_jars(
    tmp_path, monkeypatch
):
    from sluicegate.engines.spark_kafka import kafka_session_options

    env = folder_of_jars(tmp_path, "delta-spark.jar", *KAFKA)
    monkeypatch.setenv(ENV_JARS, env[ENV_JARS])
    opts = kafka_session_options({"spark.sql.shuffle.partitions": "2"})
    assert opts == {"spark.sql.shuffle.partitions": "2"}  # no spark.jars: no copies
    on_path = lakehouse_config(opts, local=True)["spark.driver.extraClassPath"]
    assert {os.path.basename(p) for p in on_path.split(os.pathsep)} >= set(KAFKA)


def test_a_kafka_stream_names_its_jars_when_the_folder_is_not_added(tmp_path, monkeypatch):
    from sluicegate.engines.spark_kafka import kafka_session_options

    checkout = tmp_path / "checkout"
    (checkout / "spark").mkdir(parents=True)
    folder_of_jars(checkout / "spark", *KAFKA)
    monkeypatch.setenv(ENV_JARS, "")  # the lakehouse jars are not added: the checkout's
    monkeypatch.setattr("sluicegate.engines.spark_jars.checkout_jars", lambda: checkout)
    opts = kafka_session_options(None)
    assert sorted(os.path.basename(j) for j in opts["spark.jars"].split(",")) == sorted(KAFKA)
