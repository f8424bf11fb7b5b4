"""Benchmark: a contract with many rules (issue 14 #9). Rules cost per rule, not per rule².

60/125/250/320 rules on 12 rows took 2.4/7.6/26/49 s before the facts builder stopped
chaining ``UNION ALL`` (each link deep-copied the whole chain). This times ``validate``
and ``run`` of an N-rule contract on a 12-line feed and prints one row per N.

    python benchmarks/many_rules.py --rules 60 250 1000
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SLUICEGATE = [sys.executable, "-m", "sluicegate.cli.main"]


def contract(n: int) -> str:
    rules = "\n".join(
        f"  - {{name: r{i}, expect: 'amount > {-i} AND id IS NOT NULL'}}" for i in range(n)
    )
    return (
        "name: many_rules\n"
        "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
        f"rules:\n{rules}\n"
        "gate: {warn_above: 0.5, fail_above: 0.9}\n"
        "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n"
    )


def _cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes: on a shared
    machine the wall clock measures the neighbours too, CPU time measures sluicegate."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measure(n: int) -> tuple[float, float, float, int]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "land").mkdir()
        (root / "land" / "a.json").write_text(
            "".join(f'{{"id":{i},"amount":{i - 2}}}\n' for i in range(12))
        )
        (root / "c.yml").write_text(contract(n))
        t = time.perf_counter()
        v = subprocess.run([*SLUICEGATE, "validate", str(root / "c.yml")], capture_output=True)
        validate_s = time.perf_counter() - t
        t, c = time.perf_counter(), _cpu()
        r = subprocess.run(
            [*SLUICEGATE, "run", str(root / "c.yml"), "--quiet"], capture_output=True
        )
        run_s, run_cpu = time.perf_counter() - t, _cpu() - c
        if v.returncode != 0 or r.returncode not in (0, 1):
            raise SystemExit(f"{n} rules: validate {v.returncode}, run {r.returncode}: {r.stderr}")
        return validate_s, run_s, run_cpu, r.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", type=int, nargs="+", default=[60, 250, 1000])
    args = ap.parse_args(argv)
    print(f"{'rules':>6} {'validate s':>11} {'run s':>7} {'run cpu s':>10}  exit")
    for n in args.rules:
        validate_s, run_s, run_cpu, code = measure(n)
        print(f"{n:>6} {validate_s:>11.2f} {run_s:>7.2f} {run_cpu:>10.2f}  {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
