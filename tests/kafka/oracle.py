"""The expected outcome of every Kafka record, computed without sluicegate.

A record is one message: ``(kafka:<topic>/<partition>, offset)``. Its value is parsed
with Python's ``json`` (strict UTF-8, a leading BOM and trailing CR/LF removed); anything
that is not a JSON object — empty, a tombstone, binary, truncated, an array — is
quarantined. Dedupe keeps the first record of an ``id`` by lineage (file, then offset),
exactly the contract's rule with no ``order_by``; a kept record is clean when ``a > 0``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

BOM = "\ufeff"


def parse(value: bytes | None) -> dict | None:
    if not value:
        return None
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removeprefix(BOM).rstrip("\r\n")
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def as_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def oracle(
    records: list[tuple[str, int, int, bytes | None]],
    batch_of: Callable[[str, int, int], int] | None = None,
) -> dict[str, set]:
    """``(topic, partition, offset, value)`` → sets of ``(id, file, offset)`` for clean and
    dlq, ``(file, offset, kept_file, kept_offset)`` for dups.

    ``batch_of(topic, partition, offset)`` — the micro-batch that read a record: across
    batches the first *published* record of a key wins (a published row is never
    retracted), so records are judged in (batch, lineage) order.
    """
    clean, dlq, dups = set(), set(), set()
    kept: dict[int, tuple[str, int]] = {}

    def order(r: tuple) -> tuple:
        b = batch_of(r[0], r[1], r[2]) if batch_of else 0
        return (b, f"kafka:{r[0]}/{r[1]}", r[2])

    for topic, part, off, value in sorted(records, key=order):
        f = f"kafka:{topic}/{part}"
        doc = parse(value)
        if doc is None:
            dlq.add((None, f, off))
            continue
        rid = as_int(doc.get("id"))
        if rid is not None and rid in kept:
            dups.add((f, off, *kept[rid]))
            continue
        if rid is not None:
            kept[rid] = (f, off)
        a = as_int(doc.get("a"))
        ok = (
            rid is not None and a is not None and a > 0 and isinstance(doc.get("k", ""), str | None)
        )
        (clean if ok else dlq).add((rid, f, off))
    return {"clean": clean, "dlq": dlq, "dups": dups}
