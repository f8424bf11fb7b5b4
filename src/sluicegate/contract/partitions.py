"""Partition columns of a source: declared, or ``name=`` folders written in its path."""

from __future__ import annotations

from .models import Source


def partition_names(source: Source) -> list[str]:
    """Partition columns of a source: ``source.partitions``, then ``name=`` folders in its path.

    Only these become columns (VARCHAR): the schema is declared, never inferred. Hive
    folders found in the data but not declared are reported as drift.
    """
    names = list(source.partitions)
    return names + [p for p in hive_partition_names(source.path) if p not in names]


def hive_partition_names(path: str) -> list[str]:
    """Column names contributed by Hive-style folders written in the path (``month=*``)."""
    names = []
    for part in path.replace("\\", "/").split("/"):
        if "=" in part:
            names.append(part.split("=", 1)[0])
    return names
