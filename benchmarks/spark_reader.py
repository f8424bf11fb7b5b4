"""CPU seconds of the Spark reader step alone: NDJSON lines → the cached typed relation.

The reader is the largest stage of a Spark run (benchmarks/RESULTS.md, "Where the time
goes: the Spark engine at 1M lines"). This script times only it, on one SparkSession, so
the figure does not depend on what else a run does or on other load on the machine:
CPU seconds of the whole process tree (the Python driver and its JVM, from
``/proc`` via psutil) around building the typed table, for each reader layout in turn,
alternating, after one warm-up of each (JIT). Layouts:

* ``one`` — the typed relation as one statement (``table.typed_select``; what
  ``sluicegate plan`` prints);
* ``steps`` — the same rows in two cached steps, as RESULTS.md proposed so that Spark
  could generate code for each: parse (``ndjson_spark.parse_select``), then format,
  cast and flag (``format_select`` + ``relation.finish``); the intermediate table is
  dropped at the end. Measured slower and not used by the pipeline (RESULTS.md).

It also prints, per statement, whether Spark compiled it with whole-stage code
generation and the largest generated method (``explain(mode="codegen")``'s
``maxMethodCodeSize``; the JVM refuses methods over 64 KB and Spark falls back to
per-operator code over ``spark.sql.codegen.hugeMethodLimit``).

    .venv/bin/python benchmarks/spark_reader.py --feed DIR_OF_NDJSON --files 4 --runs 3

``--feed`` is a folder of ``*.json`` files (searched recursively; e.g. a ``make bench``
feed's ``sales``); ``--files`` takes the first N in path order.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil
from sqlglot import exp

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))

from sluicegate.compile.read import ndjson_spark, relation  # noqa: E402
from sluicegate.compile.read import table as read_table  # noqa: E402
from sluicegate.compile.read.spark_json import SPARK  # noqa: E402
from sluicegate.contract.loader import parse_contract  # noqa: E402
from sluicegate.engines.spark_engine import SparkEngine  # noqa: E402

LINES = "_sg_lines"
TYPED = "_sg_typed"
#: an order-free fingerprint of the typed rows, to show every layout gives the same rows
FINGERPRINT = exp.select("COUNT(*)", "SUM(CAST(HASH(*) AS BIGINT))").from_(TYPED)


def tree_cpu() -> float:
    """User + system CPU seconds of this process and its children (the JVM)."""
    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def codegen_stats(eng: SparkEngine, sql: str) -> dict[str, object]:
    """Whole-stage code generation of ``sql``: whether the engine plans it with it on
    (``SparkEngine._sized``), and the largest generated method if it were on."""
    with eng._sized(sql):  # the engine's own switch (codegen off for very long SQL)
        whole = eng.spark.conf.get("spark.sql.codegen.wholeStage")
    qe = eng.spark.sql(sql)._jdf.queryExecution()
    try:
        text = eng.spark._jvm.PythonSQLUtils.explainString(qe, "codegen")
    except Exception as exc:  # noqa: BLE001 - a compile failure is the finding
        text = ""
        whole = f"{whole} (forced: {str(exc).splitlines()[0][:120]})"
    sizes = [int(s) for s in re.findall(r"maxMethodCodeSize:(\d+)", text)]
    return {
        "sql_chars": len(sql),
        "engine_wholeStage": whole,
        "subtrees": len(sizes),
        "max_method_bytes": max(sizes) if sizes else None,
    }


def two_steps(source, parts: list[str]) -> list[tuple[str, exp.Select]]:  # noqa: ANN001
    """Parse into ``<typed>_parsed``, then format, cast and flag from it into the typed table."""
    parsed = f"{TYPED}_parsed"
    text = ndjson_spark.format_select(exp.to_table(parsed), source, parts)
    extra = ndjson_spark._carried_for_rescue(len(source.columns))
    typed = relation.finish(text, source, parts, SPARK, ndjson_spark.rescue_value, extra=extra)
    return [(parsed, ndjson_spark.parse_select(LINES, source, parts)), (TYPED, typed)]


def build(eng: SparkEngine, steps: list[tuple[str, object]], stats: list | None = None) -> None:
    for name, select in steps:
        if stats is not None:  # planned once its inputs exist
            stats.append(codegen_stats(eng, eng.render(select)))
        eng.create_table_as(name, select, temporary=True)
    for name, _select in steps[:-1]:
        eng.drop_table(name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--feed", type=Path, required=True)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--contract", type=Path, default=REPO / "examples" / "retail" / "contract.yml")
    ap.add_argument("--partitions", default="month", help="comma-separated Hive partitions")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)

    files = sorted(str(p) for p in args.feed.rglob("*.json"))[: args.files]
    source = parse_contract(args.contract).contract.source
    parts = [p for p in args.partitions.split(",") if p]
    layouts = {
        "one": [(TYPED, read_table.typed_select(LINES, source, parts, "spark"))],
        "steps": two_steps(source, parts),
    }
    with tempfile.TemporaryDirectory() as wh:
        eng = SparkEngine(wh, master=args.master)
        try:
            eng.load_lines(files, LINES)
            lines = eng.fetch(exp.select("COUNT(*)").from_(LINES))[0][0]
            report: dict[str, object] = {"lines": lines, "files": len(files)}
            for name, steps in layouts.items():
                report[f"codegen_{name}"] = stats = []
                build(eng, steps, stats)  # also the warm-up (JIT, planner)
            check = {}
            samples: dict[str, list[tuple[float, float]]] = {k: [] for k in layouts}
            for _ in range(args.runs):
                for name, steps in layouts.items():
                    c0, w0 = tree_cpu(), time.perf_counter()
                    build(eng, steps)
                    samples[name].append((tree_cpu() - c0, time.perf_counter() - w0))
                    check[name] = eng.fetch(FINGERPRINT)[0]
            report["same_rows"] = len(set(check.values())) == 1
            for name, s in samples.items():
                report[name] = {
                    "cpu_s": [round(c, 2) for c, _w in s],
                    "wall_s": [round(w, 2) for _c, w in s],
                    "median_cpu_s": round(statistics.median(c for c, _w in s), 2),
                    "median_wall_s": round(statistics.median(w for _c, w in s), 2),
                }
        finally:
            eng.close()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
