"""What every peer script shares: its command line and its stage clock.

Standard library only: each peer runs in its own virtualenv (``.venv-peers/<tool>``), and
this module sits beside the scripts, so ``import peer_common`` works in every one of them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """``--input typed.parquet --feed FEED --out DIR``, the same for every peer."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", type=Path, required=True)
    ap.add_argument("--feed", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    return ap.parse_args(argv)


class StageClock:
    """Seconds per stage since the process started (``t0``: the script's first line, so
    ``imports`` is the peer library's import time), reported as ``stage_seconds``."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.stages = {"imports": round(time.perf_counter() - t0, 3)}
        self._mark = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = round(now - self._mark, 3)
        self._mark = now

    def total(self) -> float:
        return round(time.perf_counter() - self.t0, 3)


def report(
    stage: StageClock,
    pipeline: str,
    version: str,
    rows: int,
    rule_failures: dict[str, int],
    quarantined: int,
    clean: int,
) -> None:
    """The one JSON line peer_bench.py reads from every peer's stdout."""
    doc = {
        "pipeline": pipeline,
        "version": version,
        "deduplicated_rows": rows,
        "rule_failures": rule_failures,
        "quarantined": quarantined,
        "clean": clean,
        "stage_seconds": stage.stages,
        "total_seconds": stage.total(),
    }
    print(json.dumps(doc))
