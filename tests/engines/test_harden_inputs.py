"""Issue 14, reproductions 4 and 7 (input side): links, special files, odd warehouses,
contracts that used to crash — each is now a one-line error with its documented exit code."""

from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import run_cli

BASE = (
    "name: events\n"
    "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
    "rules: [{name: pos, expect: amount > 0}]\n"
    "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n"
)


@pytest.fixture
def feed(tmp_path):
    (tmp_path / "land").mkdir()
    (tmp_path / "land" / "a.json").write_text('{"id":1,"amount":5}\n')
    c = tmp_path / "c.yml"
    c.write_text(BASE)
    return c


def _clean_error(r, code: int, *words: str) -> None:
    assert r.returncode == code, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


@pytest.mark.parametrize("target", ["/etc/passwd", "/proc/self/environ"])
def test_a_link_out_of_the_landing_folder_is_refused_and_nothing_leaks(feed, target):
    os.symlink(target, feed.parent / "land" / "p.json")
    r = run_cli("run", str(feed))
    _clean_error(r, 2, "symbolic link", "p.json")
    assert not (feed.parent / "wh.duckdb").exists()


def test_links_inside_the_folder_need_follow_symlinks_and_never_leave_it(feed):
    os.symlink("a.json", feed.parent / "land" / "b.json")
    _clean_error(run_cli("run", str(feed)), 2, "follow_symlinks")
    feed.write_text(BASE.replace("format: ndjson,", "format: ndjson, follow_symlinks: true,"))
    r = run_cli("run", str(feed), "--json")
    assert r.returncode == 0, r.stderr
    os.symlink("/etc/passwd", feed.parent / "land" / "c.json")
    _clean_error(run_cli("run", str(feed)), 2, "outside the source folder")


def test_a_fifo_in_the_landing_folder_is_refused_not_waited_on(feed):
    os.mkfifo(feed.parent / "land" / "f.json")
    _clean_error(run_cli("run", str(feed)), 2, "FIFO")


def test_a_source_under_proc_is_refused(feed):
    feed.write_text(BASE.replace("path: land", "path: /proc/self"))
    _clean_error(run_cli("run", str(feed)), 2, "kernel")


def test_a_device_as_warehouse_is_refused(feed):
    feed.write_text(BASE.replace("wh.duckdb", "/dev/null"))
    _clean_error(run_cli("run", str(feed)), 2, "/dev/null")


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda b: b + "~: x\n", ["not text"]),
        (lambda b: b.replace("INTEGER}", "'DECIMAL(99999,3)'}"), ["DECIMAL"]),
        (lambda b: b.replace("INTEGER}", "'DECIMAL(3,10)'}"), ["DECIMAL"]),
        (lambda b: b + "engine: {memory_limit: lots}\n", ["memory_limit"]),
        (lambda b: b + "engine: {threads: -5}\n", ["threads"]),
        (lambda b: b + "engine: {threads: 100000}\n", ["threads"]),
        (lambda b: b.replace("amount > 0", "\"amount = 'abc'\""), ["rules[0].expect", "abc"]),
        (
            lambda b: b.replace("amount > 0", '"' + "(" * 5000 + "amount > 0" + ")" * 5000 + '"'),
            ["nests"],
        ),
        (lambda b: b.replace("name: events", "name: events\nsource_x: 1"), ["unknown key"]),
    ],
)
def test_contracts_that_crashed_are_located_contract_errors_at_validate(feed, edit, words):
    feed.write_text(edit(BASE))
    _clean_error(run_cli("validate", str(feed)), 2, *words)


@pytest.mark.parametrize(
    "data", [b"\xff\xfe\x00n\x00a", "name: é".encode("latin-1"), "name: x".encode("utf-16")]
)
def test_binary_and_non_utf8_contracts_are_contract_errors(tmp_path, data):
    c = tmp_path / "c.yml"
    c.write_bytes(data)
    _clean_error(run_cli("validate", str(c)), 2, str(c))


def test_a_column_name_with_a_newline_is_refused(feed):
    feed.write_text(BASE.replace("amount: INTEGER", '"amount\\n": INTEGER'))
    _clean_error(run_cli("validate", str(feed)), 2, "plain identifier")


def test_yaml_alias_bomb_is_refused_quickly_with_a_located_error(tmp_path):
    lines = ["a0: &a0 [x,x,x,x,x,x,x,x,x]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    c = tmp_path / "c.yml"
    c.write_text("\n".join(lines) + "\n" + BASE)
    _clean_error(run_cli("validate", str(c)), 2, "aliases", "c.yml:")


def test_an_internal_error_is_exit_70_one_line_and_debug_gives_the_traceback(feed, tmp_path):
    env = {"SLUICEGATE_FAULT": "publish:written:raise"}  # a bug inside the transaction
    r = run_cli("run", str(feed), "--quiet", env=env)
    _clean_error(r, 70, "internal error", "--debug")
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    d = run_cli("--debug", "run", str(feed), "--quiet", env=env)
    assert d.returncode == 70 and "Traceback" in d.stderr
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".lock")], "lock kept"


def _as_nobody(*args: str):
    """The CLI as an unprivileged user (root reads every file, so permissions need one)."""
    import shutil
    import subprocess

    from tests.conftest import SLUICEGATE

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the CLI as another user")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run(
        [*nobody, sys.executable, "-c", "import sluicegate"], capture_output=True, timeout=60
    )
    if probe.returncode != 0:  # e.g. a checkout inside a folder only root may enter
        pytest.skip("an unprivileged user cannot import sluicegate from this checkout")
    cmd = [*nobody, *SLUICEGATE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("what", ["folder", "file", "contract"])
def test_permission_denied_is_reported_not_read_as_no_files(what):
    import shutil
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp(prefix="sg-perm-"))  # pytest's tmp_path is root-only
    try:
        os.chmod(root, 0o777)
        (root / "land").mkdir()
        (root / "land" / "a.json").write_text('{"id":1,"amount":5}\n')
        (root / "c.yml").write_text(BASE)
        target = {"folder": root / "land", "file": root / "land" / "a.json"}.get(what)
        target = target or root / "c.yml"
        os.chmod(target, 0)
        r = _as_nobody("run", str(root / "c.yml"))
        said = "not readable" if what == "contract" else "Permission denied"  # click's words
        _clean_error(r, 2, said, str(target))
    finally:
        shutil.rmtree(root, ignore_errors=True)
