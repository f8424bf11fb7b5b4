"""The DuckDB engine never writes to stdout: stdout is where `run --json` prints its one
JSON document, and DuckDB's own progress bar draws there once a statement runs past 2 s
(on a slow host the bar landed in front of the JSON and a reader's `json.loads` failed)."""

from __future__ import annotations

import pytest

from sluicegate.engines.duckdb_engine import DuckDBEngine

pytestmark = pytest.mark.duckdb

LONG = "SELECT count(*) FROM (SELECT i % 1000 AS k, sum(i) FROM range(20000000) t(i) GROUP BY k)"


def test_the_engine_turns_duckdbs_progress_bar_off(capfd, tmp_path) -> None:
    engine = DuckDBEngine(str(tmp_path / "w.duckdb"))
    try:
        assert engine.fetch("SELECT current_setting('enable_progress_bar')") == [(False,)]
        assert engine.fetch(LONG) == [(1000,)]
        assert capfd.readouterr().out == ""
        # what the setting guards against: the bar, on, with its 2 s delay taken away
        # (setting the delay turns the bar back on), draws on stdout
        engine.execute("SET progress_bar_time = 0")
        assert engine.fetch(LONG) == [(1000,)]
        assert "%" in capfd.readouterr().out
    finally:
        engine.close()
