"""``sluicegate init`` (a draft contract from data) and ``sluicegate export|import odcs``
(the Open Data Contract Standard, v3)."""

from __future__ import annotations

import click

from .common import CONTEXT, handled
from .console import CliConsole


def _references(values: tuple[str, ...]) -> dict[str, str]:
    from ..errors import UsageError

    out: dict[str, str] = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise UsageError(
                f"--reference '{v}' is not NAME=FILE",
                hint="--reference merchants=data/merchants.csv",
            )
        out[name.strip()] = path
    return out


@click.command("init", context_settings=CONTEXT)
@click.argument("name")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="FILE_OR_GLOB",
    help="The data: a file, a folder (read recursively) or a quoted glob.",
)
@click.option(
    "--reference",
    "references",
    multiple=True,
    metavar="NAME=FILE",
    help="A lookup table the feed's columns may point into (repeatable).",
)
@click.option("--out", type=click.Path(dir_okay=False), help="Where to write (default NAME.yml).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["ndjson", "csv", "parquet"], case_sensitive=False),
    help="The data's format (default: from the file extension).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@handled
def init_cmd(
    name: str,
    source: str,
    references: tuple[str, ...],
    out: str | None,
    fmt: str | None,
    force: bool,
) -> None:
    """Draft a contract NAME.yml from data: profile it on the embedded engine, declare
    its columns, suggest rules, a dedupe key and foreign keys — each with its evidence in
    a comment — then validate the draft and run it once on the data (scratch warehouse).

    \b
    Example:
      sluicegate init payments --from data/payments.csv --reference merchants=data/merchants.csv
    """
    from ..authoring.init import init_contract

    con = CliConsole()
    r = init_contract(
        name, source, references=_references(references), out=out, fmt=fmt, force=force
    )
    key = f", dedupe key {r.key}" if r.key else ""
    con.line(f"wrote {r.path}: {r.columns} columns, {r.rules} suggested rules{key}")
    con.line(f"trial run on the data: {r.trial}; gate {r.status.upper()}")
    con.line(f"next: review the comments, then  sluicegate run {r.path.name}")
