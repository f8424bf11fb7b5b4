"""How the command line shows things, decided once for every command.

* Shares are fractions in JSON (``0.7``) and percentages for people (``70%``).
* JSON carries numbers as numbers: an exact decimal becomes a JSON number when it
  round-trips, times become ISO strings.
* Paths are normalised (``data/../wh.duckdb`` → ``wh.duckdb``) and, when they do not
  fit, shortened in the middle — the file name at the end is what an operator needs.
* Errors under ``--json`` are one document on stdout (docs/cli.md, "Errors"):
  ``{"status": "error", "exit_code": 2, "errors": [{"file", "line", "path", "message",
  "suggestion", "hint"}]}``.
* Name arguments are checked against what exists (:func:`check_name`): a typo is exit 2
  with a did-you-mean, never an empty result.

Other command modules (report, authoring) reuse these helpers rather than re-deciding.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ContractError, SluiceError, UnknownNameError

#: Width when no terminal tells us (a pipe into a log): wide enough for a ledger row.
FALLBACK_WIDTH = 100


def pct(share: Any, *, digits: int = 2) -> str:
    """A share (fraction) as a percentage for people: ``0.7`` → ``70%``, ``0.0125`` →
    ``1.25%``, ``None``/``""`` → ``—``.

    >>> pct(0.7), pct("0.0125"), pct(0), pct(None)
    ('70%', '1.25%', '0%', '—')
    """
    if share is None or share == "":
        return "—"
    value = decimal.Decimal(str(share)) * 100
    text = format(round(value, digits).normalize(), "f")
    return f"{text}%"


def count(n: int | None) -> str:
    """A count for people: ``20000`` → ``20,000`` (JSON keeps the number)."""
    return "—" if n is None else f"{n:,}"


#: Checks whose metric and thresholds are shares (fractions of the routed records).
SHARE_CHECKS = frozenset({"quarantine_share", "invalid_share"})


def is_share(check: str, detail: str = "") -> bool:
    """Is this check's metric a share? The gate's share checks and every rule's failure
    share — but not an ``abort`` rule's level, whose metric is a count of records."""
    if check in SHARE_CHECKS:
        return True
    return check.startswith(("rule:", "builtin:")) and "abort rule" not in detail


def number(v: Any) -> Any:
    """A JSON value for ``v``: decimals (and numeric strings the warehouse returns as
    text) as numbers when exact, otherwise unchanged.

    >>> number(decimal.Decimal("12.50")), number("0.7"), number("abc")
    (12.5, 0.7, 'abc')
    """
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, decimal.Decimal):
        if v == v.to_integral_value() and abs(v) < 2**63:
            return int(v)
        f = float(v)
        return f if decimal.Decimal(repr(f)) == v.normalize() else str(v)
    if isinstance(v, str):
        try:
            d = decimal.Decimal(v)
        except decimal.InvalidOperation:
            return v
        return number(d) if d.is_finite() else v
    return v


def jsonable(v: Any) -> Any:
    """``json.dumps`` fallback for warehouse values: exact decimals as numbers, ISO
    times, anything else as its text."""
    if isinstance(v, decimal.Decimal):
        return number(v)
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    return str(v)


#: Characters JSON may carry raw that a terminal obeys (C1 controls, DEL, bidi overrides);
#: C0 controls are escaped by json.dumps already. Inside JSON they occur only in strings,
#: where ``\uXXXX`` is the same value.
_TERMINAL_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def dumps(doc: Any, *, compact: bool = False) -> str:
    """The one JSON encoding every command prints (terminal controls escaped)."""
    if compact:
        text = json.dumps(doc, default=jsonable, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(doc, indent=2, default=jsonable, ensure_ascii=False)
    return _TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def emit_json(doc: Any, redactor: Callable[[str], str] | None = None) -> None:
    """Print one JSON document on stdout, secrets redacted."""
    from ..contract.tokens import redact_secrets

    text = redact_secrets(dumps(doc))
    if redactor is not None:
        text = redactor(text)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def norm_path(path: Any) -> str:
    """A path as people should read it: normalised, relative to the working folder when
    it lies below it, absolute otherwise."""
    text = os.path.normpath(os.path.abspath(str(path)))
    try:
        rel = os.path.relpath(text)
    except ValueError:  # another drive (Windows)
        return text
    return text if rel.startswith("..") else rel


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut in the middle to ``width`` characters — the end (a file name, a
    line number) survives; a path keeps whole folder names where it can.

    >>> shorten_middle("/data/warehouse/exports/fct_sales/part-000.parquet", 30)
    '/data/…/part-000.parquet'
    """
    if len(text) <= width or width < 5:
        return text
    parts = text.split("/")
    if len(parts) > 2:
        head, tail = [parts[0]], [parts[-1]]
        i, j = 1, len(parts) - 2
        while i <= j:  # add whole folders from both ends while they fit
            cand_t = [parts[j], *tail]
            if len("/".join([*head, "…", *cand_t])) <= width:
                tail = cand_t
                j -= 1
                if i <= j:
                    cand_h = [*head, parts[i]]
                    if len("/".join([*cand_h, "…", *tail])) <= width:
                        head = cand_h
                        i += 1
                continue
            break
        short = "/".join([*head, "…", *tail])
        if len(short) <= width:
            return short
    keep = width - 1
    front = keep // 3
    return text[:front] + "…" + text[len(text) - (keep - front) :]


def width() -> int:
    """Columns of the terminal the user looks at: ``$COLUMNS``, else stdout's or stderr's
    terminal, else :data:`FALLBACK_WIDTH` (a pipe into a log)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.isatty():
                return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            continue
    return shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns or FALLBACK_WIDTH


def fit_widths(natural: list[int], minimums: list[int], available: int) -> list[int]:
    """Column widths that fit ``available`` characters: the widest column gives a
    character at a time, never below its minimum. When even the minimums do not fit, the
    minimums are returned (the table wraps on the terminal rather than losing a column).

    >>> fit_widths([12, 10, 30], [12, 4, 6], 40)
    [12, 10, 18]
    """
    widths = [max(n, m) for n, m in zip(natural, minimums, strict=True)]
    excess = sum(widths) - available
    while excess > 0:
        slack = [w - m for w, m in zip(widths, minimums, strict=True)]
        i = max(range(len(widths)), key=lambda k: (slack[k] > 0, widths[k]))
        if slack[i] <= 0:
            break
        widths[i] -= 1
        excess -= 1
    return widths


def check_name(option: str, value: str | None, known: Iterable[str], *, what: str) -> None:
    """Raise :class:`UnknownNameError` (exit 2, did-you-mean) when ``value`` is not one of
    ``known``; ``None`` (the option not given) always passes."""
    if value is None:
        return
    from ..contract.suggest import closest

    names = sorted({str(k) for k in known if k is not None})
    if value not in names:
        raise UnknownNameError(option, value, names, what=what, suggestion=closest(value, names))


def choice_typo(exc: Exception) -> UnknownNameError | None:
    """A click ``Choice`` option given a value it does not list (``--fail-on wran``) as the
    same did-you-mean error as every other name argument; None for any other usage error."""
    import click

    param = getattr(exc, "param", None)
    if not isinstance(exc, click.BadParameter) or not isinstance(
        getattr(param, "type", None), click.Choice
    ):
        return None
    found = re.match(r"'(.*)' is not one of", exc.message)
    if found is None:
        return None
    from ..contract.suggest import closest

    choices = [str(c) for c in param.type.choices]  # type: ignore[union-attr]
    option = max(param.opts, key=len) if param.opts else str(param.name)  # type: ignore[union-attr]
    value = found.group(1)
    return UnknownNameError(
        option, value, choices, what="choice", suggestion=closest(value, choices)
    )


def check_dialect(dialect: str) -> None:
    """``-d/--dialect`` names a sqlglot dialect, or exit 2 with the closest one."""
    from sqlglot.dialects.dialect import Dialects

    check_name("--dialect", dialect, [d.value for d in Dialects if d.value], what="SQL dialect")


def error_entries(exc: SluiceError) -> list[dict[str, Any]]:
    """The ``errors`` list of the JSON error document."""
    if isinstance(exc, ContractError):
        return [
            {
                "file": norm_path(p.file or exc.file),
                "line": p.line,
                "path": p.path or None,
                "message": p.message,
                "suggestion": p.suggestion,
                "hint": None,
            }
            for p in exc.problems
        ]
    return [
        {
            "file": None,
            "line": None,
            "path": getattr(exc, "option", None),
            "message": exc.message,
            "suggestion": getattr(exc, "suggestion", None),
            "hint": exc.hint,
        }
    ]


def error_document(exc: SluiceError | None, *, exit_code: int, message: str = "") -> dict:
    """The one JSON error shape: ``--json`` prints it on stdout for every failing command."""
    if exc is None:
        errors = [
            {
                "file": None,
                "line": None,
                "path": None,
                "message": message,
                "suggestion": None,
                "hint": None,
            }
        ]
    else:
        errors = error_entries(exc)
    return {"status": "error", "exit_code": exit_code, "errors": errors}
