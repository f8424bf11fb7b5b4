"""``sluicegate init`` (a draft contract from data) and ``sluicegate export|import odcs``
(the Open Data Contract Standard, v3)."""

from __future__ import annotations

import click

from .common import CONTEXT, examples, handled
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
    import os

    key = f", dedupe key {r.key}" if r.key else ""
    shown = os.path.relpath(r.path)
    shown = str(r.path) if shown.startswith("..") else shown
    con.line(f"wrote {shown}: {r.columns} columns, {r.rules} suggested rules{key}")
    con.line(f"trial run on the data: {r.trial}; gate {r.status.upper()}")
    con.line(f"next: review the comments, then  sluicegate run {shown}")


@click.group("export", context_settings=CONTEXT)
def export_group() -> None:
    """Write a contract in another standard's format.

    \b
    Example:
      sluicegate export odcs contract.yml --out odcs.yaml
    """


@export_group.command("odcs", context_settings=CONTEXT)
@click.argument("contract", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), help="Write to FILE instead of stdout.")
@click.option(
    "--var",
    "variables",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a contract variable (for validation; tokens are exported as written).",
)
@handled
@examples(
    "sluicegate export odcs contract.yml", "sluicegate export odcs contract.yml --out odcs.yaml"
)
def export_odcs_cmd(contract: str, out: str | None, variables: tuple[str, ...]) -> None:
    """Export CONTRACT as an Open Data Contract Standard (v3) document.

    Columns, types, required, owner, freshness and rules (as SQL checks) use ODCS's own
    fields; what ODCS cannot carry (gate, dedupe, outputs, model, formats…) goes into
    customProperties named sluicegate.*, so `import odcs` gives the contract back.
    """
    from pathlib import Path

    from ..interop.odcs_export import export_odcs
    from .common import parse_vars

    text = export_odcs(contract, parse_vars(variables))
    if out is None:
        click.echo(text, nl=False)
        return
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text, encoding="utf-8")
    CliConsole().line(f"wrote {out}")


@click.group("import", context_settings=CONTEXT)
def import_group() -> None:
    """Read a contract written in another standard's format.

    \b
    Example:
      sluicegate import odcs odcs.yaml --out contract.yml
    """


@import_group.command("odcs", context_settings=CONTEXT)
@click.argument("file", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Write the contract to FILE (default: stdout)."
)
@click.option(
    "--source",
    "source",
    metavar="NAME",
    help="The schema object to read as the feed (default: the first).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing --out file.")
@handled
@examples("sluicegate import odcs odcs.yaml --out contract.yml")
def import_odcs_cmd(file: str, out: str | None, source: str | None, force: bool) -> None:
    """Import an Open Data Contract Standard (v3) FILE as a sluicegate contract.

    Every part of the document that has no sluicegate equivalent is listed on stderr and
    at the top of the contract, never dropped silently.
    """
    from pathlib import Path

    from ..errors import UsageError
    from ..interop.odcs_import import import_odcs

    imported = import_odcs(file, source)
    text = imported.to_yaml(Path(file).name)
    con = CliConsole()
    for note in imported.notes:
        con.notice(note)
    if out is None:
        click.echo(text, nl=False)
        return
    if Path(out).exists() and not force:
        raise UsageError(f"{out} exists", hint="pass --force to overwrite it")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text, encoding="utf-8")
    con.line(f"wrote {out} ({len(imported.notes)} parts not imported, listed at its top)")
