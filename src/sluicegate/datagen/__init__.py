"""Seeded generators of hostile sample feeds, each with its own ground truth.

They need neither DuckDB nor Spark: the demo, the tests and the benchmark
use them to check that a pipeline reports exactly what was written.
``generate`` is imported lazily so that ``python -m sluicegate.datagen.retail``
runs the module once, as ``__main__``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["generate"]


def __getattr__(name: str) -> Any:
    if name == "generate":
        from sluicegate.datagen.retail import generate

        return generate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
