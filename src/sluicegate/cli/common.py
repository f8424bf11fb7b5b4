"""What every command shares: the error handler, the common options, ``--var`` parsing,
JSON encoding."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import sys
import traceback
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from ..contract.tokens import redact_secrets
from ..errors import EXIT_INTERNAL, SluiceError, UsageError
from .console import CliConsole

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: The columns of a ledger table, in the order of its equation.
LEDGER_COLUMNS = (
    "raw",
    "clean",
    "withheld",
    "duplicates",
    "quarantined",
    "fixed",
    "recycled",
    "rejected",
)

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

contract_argument = click.argument("contract", type=click.Path(dir_okay=False))


def var_option(help: str = "Set a contract variable (wins over vars:).") -> Decorator:
    return click.option("--var", "variables", multiple=True, metavar="KEY=VALUE", help=help)


def logical_date_option(help: str = "Value of ${logical_date} in the contract.") -> Decorator:
    return click.option("--logical-date", metavar="YYYY-MM-DD", help=help)


def json_option(help: str = "Print one JSON document on stdout.") -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help)


def engine_option(help: str = "Engine (default: the contract's, else duckdb).") -> Decorator:
    return click.option("--engine", type=click.Choice(["duckdb", "spark"]), help=help)


#: ``sluicegate --debug`` (or ``SLUICEGATE_DEBUG=1``): an internal error prints its traceback.
DEBUG = {"on": os.environ.get("SLUICEGATE_DEBUG", "") not in ("", "0")}


def handled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Library errors → one redacted message and the documented exit code (no tracebacks).

    Anything else is sluicegate's own failure (a bug, or the environment breaking under
    it): one line on stderr and exit 70 — never exit 1, which tells a scheduler "the gate
    failed, do not retry". ``--debug`` adds the (redacted) traceback.
    """

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SluiceError as exc:
            CliConsole().error(redact_secrets(exc.render()))
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - the one place an unexpected error lands
            internal_error(exc)

    return wrapper


def internal_error(exc: BaseException) -> None:
    """Print one line for an unexpected error (the traceback with ``--debug``); exit 70."""
    if DEBUG["on"]:
        text = "".join(traceback.format_exception(exc))
        print(redact_secrets(text), file=sys.stderr, end="")
    detail = " ".join(str(exc).split())[:300] or "(no message)"
    CliConsole().error(
        redact_secrets(
            f"internal error ({type(exc).__name__}): {detail} — nothing was published; "
            + ("" if DEBUG["on"] else "rerun with --debug for the traceback and ")
            + "report it"
        )
    )
    sys.exit(EXIT_INTERNAL)


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
