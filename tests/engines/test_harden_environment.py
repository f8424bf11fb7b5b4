"""Issue 14 #7, the environment side: the disk fills up or the filesystem turns read-only
under a run. Either ends in exit 70 (an internal error: one line on stderr, no traceback
without ``--debug``), nothing half-published, and the writer lock does not block the rerun.

Real faults, not mocks: the warehouse lives on a mount the test makes as root —

* **disk full**: a 16 MiB ``tmpfs``; while the run pauses inside the publish transaction
  (``SLUICEGATE_PAUSE``, faults.py), a filler file takes every free byte, so DuckDB's own
  write meets ``ENOSPC`` from the kernel;
* **read-only mid-publish**: a 32 MiB ext4 image on a loop device mounted with
  ``errors=remount-ro``; inside the publish transaction the test writes to ext4's
  ``trigger_fs_error``, the kernel's own error path, which turns the filesystem read-only
  under open files (``mount -o remount,ro`` refuses while DuckDB holds the file);
* **read-only before publish**: the tmpfs remounted read-only between the checks and the
  publish (no file is open for writing then), so opening the warehouse meets ``EROFS``.

Mounting needs root and ``CAP_SYS_ADMIN`` (CI runs as root on a VM); where the sandbox
forbids it the tests skip and say why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.conftest import SLUICEGATE, run_cli_paused

pytestmark = pytest.mark.duckdb

ROWS = 20_000
CONTRACT = (
    "name: events\n"
    "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
    "rules: [{name: pos, expect: amount > 0}]\n"
    "gate: {warn_above: 0.9, fail_above: 0.95}\n"
    "outputs: {warehouse: m/wh.duckdb, clean: ev, quarantine: dlq}\n"
)


def _sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _feed(root: Path) -> Path:
    (root / "land").mkdir()
    with open(root / "land" / "a.json", "w", encoding="utf-8") as f:
        for i in range(ROWS):
            f.write(f'{{"id":{i},"amount":{i % 50 - 3}}}\n')
    (root / "m").mkdir()
    c = root / "c.yml"
    c.write_text(CONTRACT, encoding="utf-8")
    return c


def _umount(mnt: Path) -> None:
    if _sh("umount", str(mnt)).returncode != 0:
        _sh("umount", "-l", str(mnt))


@pytest.fixture
def tmpfs(tmp_path):
    """A 16 MiB tmpfs at ``tmp_path/m`` holding the warehouse (skips if mounting fails)."""
    c = _feed(tmp_path)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    r = _sh("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(tmp_path / "m"))
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (no CAP_SYS_ADMIN?): {r.stderr.strip()}")
    yield c
    _umount(tmp_path / "m")


@pytest.fixture
def ext4(tmp_path):
    """A 32 MiB ext4 image on a loop device at ``tmp_path/m``, errors=remount-ro."""
    c = _feed(tmp_path)
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4"):
        pytest.skip("needs root and mkfs.ext4 (e2fsprogs) to make an ext4 loop mount")
    img = tmp_path / "fs.img"
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    assert _sh("mkfs.ext4", "-q", "-F", str(img)).returncode == 0
    r = _sh("mount", "-o", "loop,errors=remount-ro", str(img), str(tmp_path / "m"))
    if r.returncode != 0:
        pytest.skip(f"cannot loop-mount an ext4 image here: {r.stderr.strip()}")
    yield c, img
    _umount(tmp_path / "m")


def _run_with(c: Path, point: str, action) -> subprocess.CompletedProcess:
    """Run the contract, pause at ``point``, do ``action()`` meanwhile, return the result."""
    return run_cli_paused(["run", str(c), "--quiet"], point, action, cwd=c.parent)


def _internal_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 70, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def _nothing_published(c: Path) -> None:
    """No clean rows and no run record: the failed transaction left nothing behind."""
    wh = c.parent / "m" / "wh.duckdb"
    if not wh.exists():
        return
    con = duckdb.connect(str(wh), read_only=True)
    try:
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for t in {"ev", "dlq", "_sluicegate_runs"} & tables:
            assert con.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,), t
    finally:
        con.close()


def _rerun_publishes_everything_once(c: Path) -> None:
    r = subprocess.run(
        [*SLUICEGATE, "run", str(c), "--quiet"], cwd=c.parent, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr  # not 5: the dead run's lock does not block it
    expect_clean = sum(1 for i in range(ROWS) if i % 50 - 3 > 0)  # independent count
    con = duckdb.connect(str(c.parent / "m" / "wh.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*), count(DISTINCT id) FROM ev").fetchone() == (
            expect_clean,
            expect_clean,
        )
        assert con.execute("SELECT count(*) FROM dlq").fetchone() == (ROWS - expect_clean,)
        assert con.execute("SELECT count(*) FROM _sluicegate_runs").fetchone() == (1,)
    finally:
        con.close()


def test_a_disk_full_during_publish_is_an_internal_error_and_a_rerun_succeeds(tmpfs):
    c = tmpfs
    filler = c.parent / "m" / "filler"

    def fill() -> None:
        with open(filler, "wb") as f:
            chunk = b"\0" * (1 << 20)
            try:
                while True:
                    f.write(chunk)
                    f.flush()
            except OSError:
                pass

    r = _run_with(c, "publish:written", fill)
    _internal_error(r, "No space left on device")
    assert not (c.parent / "m" / "wh.runs" / "events" / "writer.lock").exists()
    filler.unlink()
    _nothing_published(c)
    _rerun_publishes_everything_once(c)


def test_a_filesystem_turned_read_only_mid_publish_is_an_internal_error(ext4):
    c, img = ext4
    mnt = c.parent / "m"
    dev = Path(_sh("findmnt", "-n", "-o", "SOURCE", str(mnt)).stdout.strip()).name
    trigger = Path("/sys/fs/ext4") / dev / "trigger_fs_error"
    if not trigger.exists():
        pytest.skip(f"this kernel has no {trigger} to turn ext4 read-only")

    r = _run_with(c, "publish:begun", lambda: trigger.write_text("1"))
    _internal_error(r, "Read-only file system", "wh.duckdb")
    assert "writer.lock" not in r.stderr  # the lock's failed release never hides the cause
    # the filesystem is repaired and mounted again, as an operator would
    _umount(mnt)
    _sh("e2fsck", "-fy", str(img))
    assert _sh("mount", "-o", "loop", str(img), str(mnt)).returncode == 0
    _nothing_published(c)
    _rerun_publishes_everything_once(c)


def test_a_filesystem_turned_read_only_before_publish_is_an_internal_error(tmpfs):
    c = tmpfs
    mnt = c.parent / "m"

    def read_only() -> None:
        r = _sh("mount", "-o", "remount,ro", str(mnt))
        assert r.returncode == 0, r.stderr

    r = _run_with(c, "after_check", read_only)
    _internal_error(r, "Read-only file system", "wh.duckdb")
    assert "writer.lock" not in r.stderr
    assert _sh("mount", "-o", "remount,rw", str(mnt)).returncode == 0
    _nothing_published(c)
    _rerun_publishes_everything_once(c)
