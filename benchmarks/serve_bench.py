"""The serving row of ``make bench``: the retail run with a ``serve:`` target on a
throwaway PostgreSQL 15 (tests/servers/postgres.py), timed next to the run.

The contract is the benchmark's own (examples/retail) plus a serve section: the customer
dimension, the fact, the three marts, the quality facts and the DLQ summary. The served
fact is counted back with ``psql`` and must equal the generator's fact rows.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

SERVE = """
serve:
  - name: bench_db
    url: ${pg_url}
    password: ${secret:bench_db/password}
    schema: serving
    tables: [dim_customer, fct_sales, mart_monthly_revenue, mart_top_products,
             mart_customer_running_revenue, quality_facts, dlq_summary]
"""


def serve_check(
    exe: Path | None, contract: Path, feed: Path, expected: dict[str, Any]
) -> dict[str, Any]:
    """One ``sluicegate run`` that serves, on a fresh database: run and serve seconds."""
    if exe is None:
        return {"check": "serve", "skipped": "no sluicegate executable found"}
    try:
        from tests.servers.postgres import PostgresServer
    except ImportError as exc:  # pragma: no cover - the source tree always has it
        return {"check": "serve", "skipped": f"no PostgreSQL launcher: {exc}"}
    import subprocess

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp, PostgresServer() as pg:
        root = Path(tmp)
        served = root / "contract.yml"
        served.write_text(contract.read_text(encoding="utf-8") + SERVE, encoding="utf-8")
        pg.create_database("bench")
        url = f"postgresql://{pg.user}@{pg.host}:{pg.port}/bench"
        argv = [
            str(exe), "run", str(served), "--json",
            "--var", f"root={feed}", "--var", f"warehouse={root / 'warehouse.duckdb'}",
            "--var", f"export={root / 'export'}", "--var", f"pg_url={url}",
        ]  # fmt: skip
        env = dict(os.environ, SLUICEGATE_SECRET_BENCH_DB_PASSWORD=pg.password)
        t = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
        wall = time.perf_counter() - t
        try:
            m = json.loads(p.stdout)
        except json.JSONDecodeError:
            return {"check": "serve", "skipped": f"run failed (exit {p.returncode}): "
                    f"{p.stderr.strip()[-300:]}"}  # fmt: skip
        (target,) = m.get("serve") or [{}]
        fact_rows = int(pg.psql("SELECT count(*) FROM serving.fct_sales", "bench") or 0)
        seconds = m["timings"].get("serve")
        copied = target.get("copied", 0)
        return {
            "check": "serve",
            "lines": expected["raw_lines"],
            "rc": p.returncode,
            "status": target.get("status"),
            "run_wall_s": round(wall, 2),
            "serve_s": seconds,
            "rows_served": copied,
            "serve_rows_per_s": round(copied / seconds) if seconds else None,
            "tables": {t["target"]: t["copied"] for t in target.get("tables", [])},
            "fact_rows_served": fact_rows,
            "correct": target.get("status") == "pass" and fact_rows == expected["fact_rows"],
        }


def describe(rec: dict[str, Any]) -> str:
    if "skipped" in rec:
        return f"serve check: skipped — {rec['skipped']}"
    return (
        f"serve check: run + serve of {rec['lines']:,} lines {rec['run_wall_s']:.2f} s, of which "
        f"serve {rec['serve_s']:.2f} s for {rec['rows_served']:,} rows "
        f"({rec['serve_rows_per_s']:,} rows/s; fct_sales {rec['fact_rows_served']:,} rows) "
        f"{'ok' if rec['correct'] else 'WRONG'}"
    )
