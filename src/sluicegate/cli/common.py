"""What every command shares: the error handler, ``--var`` parsing, JSON encoding."""

from __future__ import annotations

import datetime as dt
import decimal
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

from ..contract.tokens import redact_secrets
from ..errors import SluiceError, UsageError
from .console import CliConsole

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def handled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Library errors → one redacted message and the documented exit code (no tracebacks)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SluiceError as exc:
            CliConsole().error(redact_secrets(exc.render()))
            sys.exit(exc.exit_code)

    return wrapper


def parse_vars(values: tuple[str, ...]) -> dict[str, str]:
    """``--var KEY=VALUE`` options as a dict (a malformed one is a usage error, exit 2)."""
    out = {}
    for v in values:
        if "=" not in v:
            raise UsageError(f"--var '{v}' is not KEY=VALUE")
        k, val = v.split("=", 1)
        out[k.strip()] = val
    return out


def jsonable(v: Any) -> Any:
    """JSON fallback for warehouse values: exact decimals and ISO times as strings."""
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    return str(v)
