"""The class-data-sharing archive local drivers start from (engines/spark_cds.py): the
test session's JVM really maps the archive ``make test`` built, and a JVM that cannot use
an archive says nothing on the standard output (where a run's ``--json`` report goes)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sluicegate.engines.spark_cds import QUIET, archive_path

pytestmark = pytest.mark.spark


def test_the_local_session_maps_the_archive(spark):
    path = archive_path()
    assert path is not None, "no .jars/cds/driver.jsa: `make spark-cds` builds it"
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert str(Path(path).resolve()) in maps  # mapped: the JVM accepted it


@pytest.mark.parametrize("quiet", [False, True])
def test_an_archive_the_jvm_cannot_use_prints_nothing_on_stdout(quiet):
    """A bare ``java`` has none of the driver's class path: the archive does not match."""
    java, path = shutil.which("java"), archive_path()
    assert java and path
    flags = [f"-XX:SharedArchiveFile={path}", *(QUIET.split() if quiet else [])]
    done = subprocess.run(
        [java, *flags, "-version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert "openjdk" in done.stderr.lower()  # it ran, without the archive
    if quiet:
        assert done.stdout == ""
    else:  # what the flags silence: the JVM's own warning, on stdout
        assert "[cds" in done.stdout
