"""The fixed cost of a ``sluicegate`` process: interpreter start, imports, contract
loading, plan building — what every run pays before and around the engine's work.

Three whole processes, each timed N times: ``sluicegate --help``, ``sluicegate compile``
of the retail contract, and a ``sluicegate run --json`` of a small retail feed (fresh
warehouse each time; ``--json`` as ``make bench`` runs it). For the run, the time outside
its own stage timings (``timings.total`` of the run metrics) is reported too: that is the
fixed cost a bigger feed pays as well. ``modules`` counts what each process imported
(``python -X importtime``), a figure the machine's load does not move.

CPU seconds (user + system of the child, from ``wait4``) are the figure to compare on a
shared machine; wall time moves with the load. With ``--src A --src B`` the same commands
run against other source trees (``PYTHONPATH``), alternating run by run, so a change can
be measured against the code before it on the same host in the same minutes::

    git archive main src | tar -x -C /tmp/before
    .venv/bin/python benchmarks/startup_bench.py --src /tmp/before/src --src src --runs 7

Bytecode: an editable install run with ``PYTHONDONTWRITEBYTECODE=1`` compiles every
sluicegate module from source on every start (0.2-0.3 CPU s here); an installed wheel
never does. The source trees are byte-compiled first so both sides measure what an
installation pays (``--no-compile`` to measure the other case).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONTRACT = REPO / "examples" / "retail" / "contract.yml"
FEED = REPO / ".bench-cache" / "retail-5000-seed42"


def child(
    src: Path, argv: list[str], cwd: Path, python_args: tuple[str, ...] = ()
) -> tuple[float, float, int, str, str]:
    """Run ``python -m sluicegate.cli.main argv`` with ``src`` first on the path: wall s,
    CPU s (user + system, the child only, from ``wait4``), exit code, stdout, stderr."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, *python_args, "-m", "sluicegate.cli.main", *argv],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
            text=True,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return wall, cpu, proc.returncode, out.read(), err.read()


def modules_imported(src: Path, argv: list[str], cwd: Path) -> int:
    """How many modules the process imports (``-X importtime`` logs each once)."""
    err = child(src, argv, cwd, ("-X", "importtime"))[4]
    return sum(1 for line in err.splitlines() if line.startswith("import time:")) - 1


def commands(feed: Path, tmp: Path) -> dict[str, list[str]]:
    wh = tmp / "wh.duckdb"
    return {
        "help": ["--help"],
        "compile": [
            "compile",
            str(CONTRACT),
            "--var",
            "root=/tmp",
            "--var",
            f"warehouse={tmp / 'x.duckdb'}",
        ],
        "run": [
            "run",
            str(CONTRACT),
            "--var",
            f"root={feed}",
            "--var",
            f"warehouse={wh}",
            "--var",
            f"export={tmp / 'export'}",
            "--json",
        ],
    }


def stage_total(tmp: Path) -> float | None:
    """The run's own ``timings.total`` (from its metrics file)."""
    latest = tmp / "wh.runs" / "retail_sales" / "latest.json"
    try:
        return float(json.loads(latest.read_text())["timings"]["total"])
    except (OSError, KeyError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", type=Path, help="a source tree (repeatable)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--feed", type=Path, default=FEED, help="a retail feed folder")
    ap.add_argument("--only", choices=["help", "compile", "run"], action="append")
    ap.add_argument("--no-compile", action="store_true", help="do not byte-compile first")
    args = ap.parse_args(argv)
    srcs = [s.resolve() for s in (args.src or [REPO / "src"])]
    if not args.no_compile:
        for s in srcs:
            compileall.compile_dir(str(s / "sluicegate"), quiet=1)
    names = args.only or ["help", "compile", "run"]
    if "run" in names and not (args.feed / "sales").is_dir():
        print(f"no feed at {args.feed}: run benchmarks/run_bench.py --scale tiny first")
        return 2
    seen: dict[tuple[str, str], list[tuple[float, float, float | None]]] = {}
    for i in range(args.runs + 1):  # the first round warms the page cache, not counted
        for s in srcs:
            for name in names:
                with tempfile.TemporaryDirectory(prefix="sg-start-") as t:
                    tmp = Path(t)
                    wall, cpu, rc, _, _ = child(s, commands(args.feed, tmp)[name], REPO)
                    if rc not in (0, 1):
                        print(f"{name} exited {rc} with {s}")
                        return 2
                    outside = None
                    if name == "run" and (total := stage_total(tmp)) is not None:
                        outside = wall - total
                if i:
                    seen.setdefault((str(s), name), []).append((wall, cpu, outside))
    counts = {}
    for s in srcs:
        for name in names:
            with tempfile.TemporaryDirectory(prefix="sg-start-") as t:
                counts[(str(s), name)] = modules_imported(
                    s, commands(args.feed, Path(t))[name], REPO
                )
    print(
        f"{'source':<40} {'command':<8} {'wall s':>7} {'CPU s':>6} {'outside stages s':>17} modules"
    )
    for (s, name), rows in seen.items():
        wall = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        outs = [r[2] for r in rows if r[2] is not None]
        out = f"{statistics.median(outs):17.2f}" if outs else f"{'':>17}"
        print(f"{s[-40:]:<40} {name:<8} {wall:7.2f} {cpu:6.2f} {out} {counts[(s, name)]:7d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
