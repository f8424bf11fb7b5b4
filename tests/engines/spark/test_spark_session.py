"""Where the Spark engine connects, and the messages when it cannot (no JVM started here).

Precedence: the CLI flag, then ``SLUICEGATE_SPARK_MASTER`` / ``_REMOTE``, then the
contract's ``engine:`` section, then ``local[*]``. Missing Java or a missing Spark Connect
client is one message with the install line and exit 2 — checked through the CLI, as a
user meets it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sluicegate.engines.spark_session import PINNED, resolve_spec
from sluicegate.errors import UsageError
from tests.conftest import copy_orders_example, run_cli


def test_precedence_flag_environment_contract_default():
    env = {"SLUICEGATE_SPARK_MASTER": "spark://env:7077"}
    assert resolve_spec(environ={}).master == "local[*]"
    assert resolve_spec(environ={}, contract_master="spark://c:7077").master == "spark://c:7077"
    assert resolve_spec(environ=env, contract_master="spark://c:7077").master == "spark://env:7077"
    assert (
        resolve_spec("local[2]", environ=env, contract_master="spark://c:7077").master == "local[2]"
    )
    remote = resolve_spec(environ={"SLUICEGATE_SPARK_REMOTE": "sc://h:15002"})
    assert (remote.master, remote.remote) == (None, "sc://h:15002")
    # a flag for the remote wins over an environment master
    assert resolve_spec(remote="sc://x:1", environ=env).remote == "sc://x:1"


def test_conflicts_and_malformed_remote_are_usage_errors():
    with pytest.raises(UsageError):
        resolve_spec("local[2]", "sc://h:1", environ={})
    with pytest.raises(UsageError):
        resolve_spec(
            environ={"SLUICEGATE_SPARK_MASTER": "local", "SLUICEGATE_SPARK_REMOTE": "sc://h:1"}
        )
    with pytest.raises(UsageError, match="sc://host:port"):
        resolve_spec(remote="http://h:15002", environ={})


def test_pinned_settings_make_spark_agree_with_duckdb():
    assert PINNED["spark.sql.ansi.enabled"] == "true"
    assert PINNED["spark.sql.session.timeZone"] == "UTC"
    assert PINNED["spark.sql.timestampType"] == "TIMESTAMP_NTZ"
    assert PINNED["spark.sql.sources.partitionOverwriteMode"] == "dynamic"


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    return copy_orders_example(tmp_path / "orders") / "contract.yml"


@pytest.mark.spark
def test_no_java_is_one_message_with_the_install_line(orders, tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python")
    r = run_cli(
        "run",
        str(orders),
        "--engine",
        "spark",
        env={"PATH": str(bare), "JAVA_HOME": "", "SLUICEGATE_SPARK_MASTER": ""},
    )
    assert r.returncode == 2, r.stderr
    assert "needs Java 17" in r.stderr
    assert "pip install 'sluicegate[spark]'" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.spark
def test_spark_remote_without_the_connect_client_says_what_to_install(orders):
    pytest.importorskip("pyspark")
    try:
        import grpc  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the Spark Connect client is installed here")
    r = run_cli("run", str(orders), "--spark-remote", "sc://127.0.0.1:1")
    assert r.returncode == 2, r.stderr
    assert "pyspark[connect]" in r.stderr
    assert "Traceback" not in r.stderr


def test_spark_flags_with_the_duckdb_engine_are_refused(orders):
    r = run_cli("run", str(orders), "--engine", "duckdb", "--spark-master", "local[2]")
    assert r.returncode == 2
    assert "--engine spark" in r.stderr


def test_local_sessions_get_small_shuffles_a_bigger_heap_and_jit_flags_unless_set():
    from sluicegate.engines.spark_session import LOCAL_JVM, local_cores, local_defaults

    assert [local_cores(m) for m in ("local", "local[2]", "local[3,2]", "spark://h:7077")] == [
        1,
        2,
        3,
        None,
    ]
    assert local_cores("local[*]") == (os.cpu_count() or 1)
    d = local_defaults("local[2]", {}, {})
    assert d["spark.sql.shuffle.partitions"] == "4"
    assert d["spark.sql.adaptive.enabled"] == "false"
    assert d["spark.sql.inMemoryColumnarStorage.compressed"] == "false"
    assert d["spark.driver.memory"].endswith("m")
    assert LOCAL_JVM in d["spark.driver.extraJavaOptions"]
    assert "log4j2.configurationFile" in d["spark.driver.extraJavaOptions"]
    # the user's settings win; a cluster gets none of these
    mine = {
        "spark.sql.shuffle.partitions": "64",
        "spark.driver.memory": "1g",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.inMemoryColumnarStorage.compressed": "true",
    }
    assert set(local_defaults("local[2]", mine, {})) == {"spark.driver.extraJavaOptions"}
    # the young generation is capped at 512m, or a third of a smaller heap, whoever set it
    assert "-XX:MaxNewSize=512m" in d["spark.driver.extraJavaOptions"]
    yours = local_defaults("local[2]", mine, {})["spark.driver.extraJavaOptions"]
    assert "-XX:MaxNewSize=341m" in yours
    env = local_defaults("local[2]", {}, {"SPARK_DRIVER_MEMORY": "900m"})
    assert "-XX:MaxNewSize=300m" in env["spark.driver.extraJavaOptions"]
    assert "spark.driver.memory" not in local_defaults(
        "local[2]", {}, {"SPARK_DRIVER_MEMORY": "2g"}
    )
    assert local_defaults("spark://h:7077", {}, {}) == {}


def test_local_sessions_map_the_class_archive_when_there_is_one(tmp_path):
    from sluicegate.engines.spark_cds import ENV_CDS, driver_flags
    from sluicegate.engines.spark_session import local_defaults

    archive = tmp_path / "driver.jsa"
    assert driver_flags({ENV_CDS: str(archive)}) == ""  # not built (yet): no flag
    archive.write_bytes(b"x")
    flags = driver_flags({ENV_CDS: str(archive)})
    assert f"-XX:SharedArchiveFile={archive}" in flags and "-Xlog:cds=off" in flags
    java = local_defaults("local[2]", {}, {ENV_CDS: str(archive)})["spark.driver.extraJavaOptions"]
    assert flags in java
    assert "SharedArchiveFile" not in local_defaults("local[2]", {}, {ENV_CDS: ""}).get(
        "spark.driver.extraJavaOptions", ""
    )
    spaced = tmp_path / "a b.jsa"
    spaced.write_bytes(b"x")
    assert driver_flags({ENV_CDS: str(spaced)}) == ""  # one Java option cannot hold a space
