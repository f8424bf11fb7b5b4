"""docs/getting-started.md is executable: its files are written exactly as the doc shows
them, its commands run in that order, and their output is the output the doc pastes
(up to run ids, keys, timings and today's date)."""

from __future__ import annotations

import datetime as dt
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.duckdb, pytest.mark.slow]

DOC = REPO / "docs/getting-started.md"
DOC_DATE = "2026-12-01"  # the day the outputs in the doc were pasted
BLOCK = re.compile(r"<!-- (file: (?P<file>\S+)|command) -->\n```[a-z]*\n(?P<body>.*?)```", re.S)


def steps(text: str) -> list[tuple[str, str, str]]:
    """(kind, file or command, content or pasted output) in document order."""
    out = []
    for m in BLOCK.finditer(text):
        body = m.group("body")
        if m.group("file"):
            out.append(("file", m.group("file"), body))
        else:
            first, _, rest = body.partition("\n")
            assert first.startswith("$ "), first
            out.append(("command", first[2:], rest))
    return out


def run_command(command: str, cwd: Path) -> tuple[int, str]:
    """Run a documented ``sluicegate …`` command as the doc's reader would; the output a
    terminal shows: notices (progress lines left out), then the command's own output."""
    args = shlex.split(command)
    assert args[0] == "sluicegate"
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.run(
        [sys.executable, "-m", "sluicegate.cli.main", *args[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    err = [ln for ln in p.stderr.splitlines() if not ln.startswith("stage ")]
    return p.returncode, "\n".join([*err, *p.stdout.splitlines()])


def normal(text: str, today: str) -> list[str]:
    text = text.replace(today, "<today>")
    text = re.sub(r"-?\b\d{15,20}\b", "<key>", text)  # DLQ keys (hash of row and lineage)
    text = re.sub(r"(?<![0-9a-f])[0-9a-f]{12,}(?![0-9a-f])", "<id>", text)  # run ids, digests
    return [" ".join(line.split()) for line in text.strip().splitlines() if line.strip()]


def test_getting_started_runs_as_written(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    today = dt.datetime.now(dt.UTC).date().isoformat()
    seen_commands = 0
    for kind, what, body in steps(text):
        if kind == "file":
            path = tmp_path / what
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            continue
        seen_commands += 1
        code, actual = run_command(what, tmp_path)
        expected_code = 2 if "broken" in what else 0
        assert code == expected_code, f"{what}: exit {code}\n{actual}"
        assert normal(actual, today) == normal(body, DOC_DATE), what
    assert seen_commands >= 6
    # the contract the doc writes is the one a reader validates and runs
    assert (tmp_path / "warehouse.duckdb").is_file()
