"""Contract errors that say the fix: the valid choices or the corrected form.

pydantic reports *what* is wrong ("Input should be a valid list"); a user needs to know
*what to write*. :func:`explain` turns one pydantic error into a message naming the valid
choices (with the closest one as a did-you-mean) or the value rewritten in the expected
shape (``key: payment_id`` → ``key: [payment_id]``). Errors it does not know keep
pydantic's message.
"""

from __future__ import annotations

import re
from typing import Any

from .suggest import closest

#: Patterns the models use for names, said in words, with how to make a name fit.
_PATTERNS = {
    r"^[a-z_][a-z0-9_]*$": "lower-case letters, digits and _, not starting with a digit",
    r"^[A-Za-z_][A-Za-z0-9_]*$": "letters, digits and _, not starting with a digit",
}


def explain(err: dict[str, Any]) -> tuple[str, str | None] | None:
    """A better (message, suggestion) for one pydantic error, or None to keep pydantic's.

    >>> explain({"type": "list_type", "loc": ("dedupe", "key"), "input": "payment_id",
    ...          "msg": "Input should be a valid list"})
    ('must be a list: write key: [payment_id]', None)
    """
    etype = err["type"]
    value = err.get("input")
    key = next((str(k) for k in reversed(err["loc"]) if isinstance(k, str)), "")
    if etype == "value_error" and "valid types" in err.get("msg", ""):
        return err["msg"].removeprefix("Value error, "), None  # it names the choices already
    if etype == "list_type" and isinstance(value, str | int | float):
        fixed = f"[{value}]"
        return f"must be a list: write {key}: {fixed}", None
    if etype == "literal_error":
        choices = (err.get("ctx") or {}).get("expected", "")
        names = re.findall(r"'([^']*)'", choices)
        if names:
            got = f" (got {value!r})" if value is not None else ""
            hint = closest(str(value), names) if isinstance(value, str) else None
            return f"must be one of {', '.join(names)}{got}", hint
    if etype == "string_pattern_mismatch" and isinstance(value, str):
        pattern = (err.get("ctx") or {}).get("pattern", "")
        words = _PATTERNS.get(pattern)
        if words:
            fixed = _identifier(value, lower=pattern.startswith("^[a-z_]"))
            return f"{value!r} is not a valid name here: use {words}", fixed
    return None


def _identifier(value: str, *, lower: bool) -> str | None:
    """``value`` made into an identifier (``Payments-2024`` → ``payments_2024``)."""
    out = re.sub(r"[^A-Za-z0-9_]+", "_", value.strip()).strip("_")
    if lower:
        out = out.lower()
    if not out:
        return None
    return "_" + out if out[0].isdigit() else out
