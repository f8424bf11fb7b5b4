"""Helpers shared by the ODCS import modules."""

from __future__ import annotations

import re
from typing import Any

from .odcs_export import PREFIX


def custom_of(items: Any) -> dict[str, Any]:
    """The ``sluicegate.*`` custom properties of a node, by short name."""
    out = {}
    for item in items or []:
        if isinstance(item, dict) and str(item.get("property", "")).startswith(PREFIX):
            out[item["property"][len(PREFIX) :]] = item.get("value")
    return out


def ident(text: str, lower: bool = True) -> str:
    """``text`` made into an identifier (``Merchant payments`` → ``merchant_payments``)."""
    out = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "feed"
    out = out.lower() if lower else out
    return "_" + out if out[0].isdigit() else out
