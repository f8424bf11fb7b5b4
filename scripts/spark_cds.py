#!/usr/bin/env python3
"""Build the class-data-sharing archive local Spark drivers start from.

One training run — the retail example on a small generated feed, ``--engine spark``,
``local[2]``, Delta warehouse — with the driver JVM told to archive every class it
loaded when it exits. Later local sessions map that archive instead of loading and
verifying the classes again (``sluicegate/engines/spark_cds.py``).

    python scripts/spark_cds.py --out .jars/cds/driver.jsa     # what `make jars` runs

The archive is written beside ``--out`` and renamed into place, so a session never maps
half a file. A training run that fails leaves no archive and exits 0 with a note: the
archive only saves time, and sessions run the same without it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from sluicegate.datagen.retail import generate  # noqa: E402
from sluicegate.engines.spark_cds import ENV_CDS, dump_flags  # noqa: E402

TRAINING_LINES = 5_000


def train(out: Path, lines: int) -> bool:
    """One retail run whose driver archives its classes into ``out``; True when written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}")
    with tempfile.TemporaryDirectory(prefix="sluicegate-cds-") as tmp:
        feed = Path(tmp) / "feed"
        generate(feed, lines, 42)
        env = {
            **os.environ,
            ENV_CDS: "",  # dump from a plain JVM: a dynamic archive cannot stack on another
            "SPARK_SUBMIT_OPTS": f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} "
            f"{dump_flags(str(partial))}".strip(),
        }
        cmd = [
            sys.executable,
            "-m",
            "sluicegate.cli.main",
            "run",
            str(REPO / "examples" / "retail" / "contract.yml"),
            "--engine",
            "spark",
            "--spark-master",
            "local[2]",
            "--var",
            f"root={feed}",
            "--var",
            f"warehouse={tmp}/wh",
            "--var",
            f"export={tmp}/export",
            "--json",
        ]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    # 0 = passed or warned, 1 = the gate failed: either way the run went end to end
    if done.returncode not in (0, 1) or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = (done.stderr or "").strip().splitlines()[-3:]
        print(f"spark-cds: training run exited {done.returncode}; no archive", *tail, sep="\n  ")
        return False
    os.replace(partial, out)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="the archive to write (.jsa)")
    ap.add_argument("--lines", type=int, default=TRAINING_LINES, help="training feed size")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if train(args.out.resolve(), args.lines):
        size = args.out.stat().st_size / 2**20
        print(f"spark-cds: {args.out} ({size:,.0f} MiB) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
