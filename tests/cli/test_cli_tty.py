"""Progress on a real terminal: ``script`` gives the CLI a pseudo-terminal of 80 columns,
and the captured screen shows each stage with its record count and rate, the run's bar,
the demo's data generation — and no line wider than the terminal, no path cut at its end.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

import pytest

from tests.conftest import SLUICEGATE, copy_orders_example

pytestmark = [
    pytest.mark.duckdb,
    pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux script"),
]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_a_terminal(*args: str, cols: int = 80, timeout: int = 300) -> tuple[int, list[str]]:
    """Run the CLI under ``script`` (a pty) and return its exit code and the last screen:
    the final frame of every live line (what stays on the terminal), escapes removed."""
    cmd = shlex.join([*SLUICEGATE, *args])
    env = {**os.environ, "COLUMNS": str(cols), "LINES": "50", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    p = subprocess.run(
        ["script", "-qec", f"stty cols {cols} rows 50 2>/dev/null; {cmd}", "/dev/null"],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    text = ANSI.sub("", p.stdout).replace("\r\n", "\n")
    # a live display redraws in place: keep what each line finally showed
    lines = [seg.split("\r")[-1] for seg in text.split("\n")]
    return p.returncode, lines


def test_run_shows_each_stage_with_records_and_rate(tmp_path):
    c = copy_orders_example(tmp_path / "o") / "contract.yml"
    code, lines = on_a_terminal("run", str(c), "--date", "2024-01-01")
    assert code == 0, "\n".join(lines)
    final = {ln.split()[1]: ln for ln in lines if ln.startswith("✓ ") and len(ln.split()) > 1}
    for stage, n in (("bind", 12), ("read", 12), ("dedupe", 12), ("route", 12), ("publish", 4)):
        assert re.search(rf"\b{n} records\s+[\d,]+/s\s+\d+:\d\d:\d\d$", final[stage]), final[stage]
    assert re.search(r"\b(\d+)/\1\s+100%", final["run"])  # every stage of the run done
    assert "warning: gate WARN — quarantine_share 66.67% > 5%" in lines
    assert max(len(ln) for ln in lines) <= 80


def test_demo_shows_data_generation_and_nothing_is_cut_at_80_columns(tmp_path):
    where = tmp_path / "a-rather-long-folder-name-for-the-demo" / "with" / "nested" / "levels"
    code, lines = on_a_terminal("demo", "--dir", str(where), "--lines", "3000", timeout=600)
    assert code == 0, "\n".join(lines)
    gen = [ln for ln in lines if ln.startswith("✓ generate: write")]
    assert gen and re.search(r"100%\s+3,000 lines", gen[-1]), gen
    assert any(re.search(r"^✓ route\s.*[\d,]+ records", ln) for ln in lines)
    assert max(len(ln) for ln in lines) <= 80, [ln for ln in lines if len(ln) > 80]
    # the export path is shortened in the middle (or folded): its end survives
    star = lines[lines.index("Star schema") : lines.index("Gate")]
    detail = "".join(ln.rstrip(" │").rsplit("│", 1)[-1].strip() for ln in star)
    assert re.search(r"partitions in ?/\S*levels/export/fct_sales", detail), detail
    assert not any(ln.rstrip(" │┃").endswith("…") for ln in lines)
