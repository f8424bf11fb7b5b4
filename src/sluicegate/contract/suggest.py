"""Did-you-mean: the closest valid name to a misspelt one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """Return the candidate closest to ``name`` (case-insensitive), or None if none is close."""
    cands = list(candidates)
    lowered = {c.lower(): c for c in cands}
    if name.lower() in lowered:
        return lowered[name.lower()]
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None
