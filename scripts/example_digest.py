"""Hash every output of the two example contracts, run on one engine, for a before/after diff.

A refactor that "changes no behaviour" must leave what a run *publishes* unchanged. This
script runs ``examples/orders`` and ``examples/retail`` (a fixed 5,000-line generated feed)
through the ``sluicegate`` CLI from a fixed scratch folder, reads every published table
(the DuckDB warehouse file, or a warehouse folder of Parquet or Delta tables) and the
Parquet fact export back with DuckDB, sorts the rows, and prints one SHA-256 per output.

Wall-clock columns (``run_started_at``, ``published_at``, ``_dlq_timestamp``, the metrics
JSON, file mtimes) are left out: they are the only values a rerun may change. The scratch folder and the
input files' mtimes are kept fixed so run ids and ``_source_file`` paths repeat.

    python scripts/example_digest.py --engine duckdb > before-duckdb.txt
    python scripts/example_digest.py --engine spark  > before-spark.txt
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parent.parent
VOLATILE = {
    "run_started_at",
    "evaluated_at",
    "started_at",
    "published_at",
    "metrics",
    "processed_at",
    "mtime",
    "_dlq_timestamp",
}
LOGICAL_DATE = "2026-01-15"
FIXED_MTIME = 1_760_000_000


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _pin_mtimes(root: Path) -> None:
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (FIXED_MTIME, FIXED_MTIME))


def prepare(scratch: Path, example: str) -> Path:
    dst = scratch / example
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    shutil.copy(REPO / "examples" / example / "contract.yml", dst / "contract.yml")
    if example == "orders":
        shutil.copytree(REPO / "examples/orders/data", dst / "data")
    else:
        subprocess.run(
            [sys.executable, "-m", "sluicegate.datagen.retail", "--lines", "5000"]
            + ["--seed", "7", "--out", str(dst / "data")],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    _pin_mtimes(dst)
    return dst


def run(folder: Path, engine: str) -> int:
    cmd = [str(Path(sys.executable).parent / "sluicegate"), "run", str(folder / "contract.yml")]
    cmd += ["--engine", engine, "--logical-date", LOGICAL_DATE, "-q"]
    return subprocess.run(cmd, check=False).returncode


def _digest_relation(con: duckdb.DuckDBPyConnection, rel: str) -> tuple[int, str]:
    cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()]
    keep = [c for c in cols if c not in VOLATILE]
    sel = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' for c in keep)
    rows = con.execute(f"SELECT {sel} FROM {rel} ORDER BY ALL").fetchall()
    h = hashlib.sha256(repr(keep).encode())
    for r in rows:
        h.update(repr(r).encode())
    return len(rows), h.hexdigest()[:16]


def digest_outputs(folder: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    con = duckdb.connect()
    whs = [p for p in folder.rglob("warehouse*") if p.suffix in ("", ".duckdb")]
    for wh in sorted(whs):
        if wh.is_file():
            con.execute(f"ATTACH {_q(str(wh))} AS wh (READ_ONLY)")
            tables = [
                r[0]
                for r in con.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_catalog = 'wh' ORDER BY 1"
                ).fetchall()
            ]
            for t in tables:
                n, h = _digest_relation(con, f'wh.main."{t}"')
                out[f"table {t}"] = f"{n} rows {h}"
            con.execute("DETACH wh")
        elif wh.is_dir():
            for t in sorted(p for p in wh.iterdir() if p.is_dir() and p.name[0] != "."):
                if (t / "_delta_log").is_dir():  # a Delta table: its current version only
                    from deltalake import DeltaTable

                    con.register("delta_table", DeltaTable(str(t)).to_pyarrow_table())
                    n, h = _digest_relation(con, "delta_table")
                    con.unregister("delta_table")
                    out[f"table {t.name}"] = f"{n} rows {h}"
                    continue
                files = sorted(str(f) for f in t.rglob("*.parquet"))
                if not files:
                    out[f"table {t.name}"] = "0 rows (no files)"
                    continue
                rel = f"read_parquet([{', '.join(map(_q, files))}], hive_partitioning = true)"
                n, h = _digest_relation(con, rel)
                out[f"table {t.name}"] = f"{n} rows {h}"
    export = folder / "export"
    if export.is_dir():
        for t in sorted(p for p in export.iterdir() if p.is_dir()):
            files = sorted(str(f) for f in t.rglob("*.parquet"))
            rel = f"read_parquet([{', '.join(map(_q, files))}], hive_partitioning = true)"
            n, h = _digest_relation(con, rel)
            out[f"export {t.name}"] = f"{n} rows {h}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb")
    ap.add_argument("--scratch", default="/tmp/sluicegate-example-digest")
    ap.add_argument("--no-run", action="store_true", help="only hash the last run's outputs")
    ap.add_argument(
        "--example", action="append", choices=["orders", "retail"], help="default: both"
    )
    args = ap.parse_args()
    scratch = Path(args.scratch) / args.engine
    for example in args.example or ("orders", "retail"):
        folder = scratch / example
        if not args.no_run:
            folder = prepare(scratch, example)
            print(f"{example} exit={run(folder, args.engine)}")
        for k, v in digest_outputs(folder).items():
            print(f"  {example} {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
