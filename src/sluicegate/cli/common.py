"""What every command shares: the error handler, the common options, ``--var`` parsing,
JSON encoding.

One option name for one thing, on every command: ``--date`` (the logical date; the old
``--logical-date`` still works), ``--run``, ``--limit``, ``--json``, ``-q/--quiet``,
``--engine``. How values look is decided in ``cli/present.py``.
"""

from __future__ import annotations

import inspect
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
from .present import emit_json, error_document
from .present import jsonable as jsonable

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
    """``--date`` (alias ``--logical-date``, the name it had before)."""
    return click.option("--date", "--logical-date", "logical_date", metavar="YYYY-MM-DD", help=help)


date_option = logical_date_option


def quiet_option(
    help: str = "No progress and no summary (the exit code still tells).",
) -> Decorator:
    return click.option("-q", "--quiet", is_flag=True, help=help)


def limit_option(default: int | None, help: str = "At most N rows.") -> Decorator:
    return click.option(
        "--limit",
        type=click.IntRange(0, None),
        default=default,
        show_default=default is not None,
        metavar="N",
        help=help + (" 0 = all." if default is not None else ""),
    )


def run_option(help: str = "Only rows of this run id.") -> Decorator:
    return click.option("--run", "run_id", metavar="RUN_ID", help=help)


def json_option(help: str = "Print one JSON document on stdout.") -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help)


def engine_option(help: str = "Engine (default: the contract's, else duckdb).") -> Decorator:
    return click.option("--engine", type=click.Choice(["duckdb", "spark"]), help=help)


#: ``sluicegate --debug`` (or ``SLUICEGATE_DEBUG=1``): an internal error prints its traceback.
DEBUG = {"on": os.environ.get("SLUICEGATE_DEBUG", "") not in ("", "0")}


def handled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Library errors → one redacted message on stderr and the documented exit code (no
    tracebacks); with ``--json`` also the error document on stdout.

    Anything else is sluicegate's own failure (a bug, or the environment breaking under
    it): one line on stderr and exit 70 — never exit 1, which tells a scheduler "the gate
    failed, do not retry". ``--debug`` adds the (redacted) traceback.
    """

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SluiceError as exc:
            fail(exc, as_json=bool(kwargs.get("as_json")))
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - the one place an unexpected error lands
            internal_error(exc, as_json=bool(kwargs.get("as_json")))

    return wrapper


def internal_error(exc: BaseException, *, as_json: bool = False) -> None:
    """Print one line for an unexpected error (the traceback with ``--debug``); exit 70."""
    if DEBUG["on"]:
        text = "".join(traceback.format_exception(exc))
        print(redact_secrets(text), file=sys.stderr, end="")
    detail = " ".join(_text_of(exc).split())[:300] or "(no message)"
    message = redact_secrets(
        f"internal error ({type(exc).__name__}): {detail} — nothing was published; "
        + ("" if DEBUG["on"] else "rerun with --debug for the traceback and ")
        + "report it"
    )
    CliConsole().error(message)
    if as_json:
        emit_json(error_document(None, exit_code=EXIT_INTERNAL, message=message))
    sys.exit(EXIT_INTERNAL)


def _text_of(exc: BaseException) -> str:
    """``str(exc)``, or its class's name when that fails: a py4j error's text is fetched
    from its JVM, and a JVM that died raises again inside ``str()``."""
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - any failure to describe the failure
        return f"{type(exc).__name__} (its message could not be read)"


def fail(exc: SluiceError, *, as_json: bool) -> None:
    """Report ``exc`` the one way every command does, and exit with its code."""
    CliConsole().error(redact_secrets(exc.render()))
    if as_json:
        emit_json(error_document(exc, exit_code=exc.exit_code))
    sys.exit(exc.exit_code)


def examples(*lines: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Append an ``Examples:`` block to a command's ``--help`` (every command has one)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        block = "\n\n\b\nExamples:\n" + "\n".join(f"  {ln}" for ln in lines)
        fn.__doc__ = inspect.cleandoc(fn.__doc__ or "") + block
        return fn

    return deco


def write_out(out: str, text: str | None) -> str:
    """Write a command's ``--out`` FILE, folders created (``text=None``: only check that it
    can be written there). A path that cannot be written is a usage error (exit 2) naming
    the option, not an internal error. Returns the path as people read it."""
    from pathlib import Path

    from .present import norm_path

    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is not None:
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, FileExistsError | NotADirectoryError):
            why = "a folder on its path is a file"
        err = UsageError(
            f"--out {out}: cannot write it ({why})",
            hint="pass --out with a file path in a writable folder",
        )
        err.option = "--out"  # the JSON error document's ``path``: the option at fault
        raise err from None
    return norm_path(path)


def parse_vars(values: tuple[str, ...]) -> dict[str, str]:
    """``--var KEY=VALUE`` options as a dict (a malformed one is a usage error, exit 2)."""
    out = {}
    for v in values:
        if "=" not in v:
            raise UsageError(f"--var '{v}' is not KEY=VALUE")
        k, val = v.split("=", 1)
        out[k.strip()] = val
    return out
