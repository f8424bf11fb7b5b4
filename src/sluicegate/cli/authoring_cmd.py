"""``sluicegate init`` (a draft contract from data) and ``sluicegate export|import odcs``
(the Open Data Contract Standard, v3)."""

from __future__ import annotations

import click

from .common import CONTEXT, examples, handled, json_option, parse_vars, write_out
from .console import CliConsole
from .present import emit_json, norm_path


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
@json_option('Print {"status", "file", "columns", "rules", "trial", …} as JSON.')
@handled
def init_cmd(
    name: str,
    source: str,
    references: tuple[str, ...],
    out: str | None,
    fmt: str | None,
    force: bool,
    as_json: bool = False,
) -> None:
    """Draft a contract NAME.yml from data: profile it on the embedded engine, declare
    its columns, suggest rules, a dedupe key and foreign keys — each with its evidence in
    a comment — then validate the draft and run it once on the data (scratch warehouse).

    \b
    Examples:
      sluicegate init payments --from data/payments.csv \\
          --reference merchants=data/merchants.csv
      sluicegate init payments --from 'landing/*.json' --out c/payments.yml --json
    """
    from ..authoring.init import init_contract

    con = CliConsole()
    if out is not None:  # an unwritable --out is exit 2 before the data is profiled
        write_out(out, None)
    r = init_contract(
        name, source, references=_references(references), out=out, fmt=fmt, force=force
    )
    shown = norm_path(r.path)
    if as_json:
        emit_json(
            {
                "status": "ok",
                "contract": name,
                "file": shown,
                "columns": r.columns,
                "rules": r.rules,
                "dedupe_key": r.key,
                "trial": {
                    "status": r.status,
                    "ledger": r.ledger,
                    "quarantine_share": r.quarantine_share,
                },
                "next": f"sluicegate run {shown}",
            }
        )
        return
    key = f", dedupe key {r.key}" if r.key else ""
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
@json_option('Print {"status", "contract", "out", "odcs"} as JSON (the document as an object).')
@handled
@examples(
    "sluicegate export odcs contract.yml",
    "sluicegate export odcs contract.yml --out odcs.yaml",
    "sluicegate export odcs contract.yml --json | jq .odcs.schema",
)
def export_odcs_cmd(
    contract: str, out: str | None, variables: tuple[str, ...], as_json: bool = False
) -> None:
    """Export CONTRACT as an Open Data Contract Standard (v3) document.

    Columns, types, required, owner, freshness and rules (as SQL checks) use ODCS's own
    fields; what ODCS cannot carry (gate, dedupe, outputs, model, formats…) goes into
    customProperties named sluicegate.*, so `import odcs` gives the contract back.
    """
    import yaml  # the ODCS models' own YAML reader (safe_load), for the JSON form

    from ..interop.odcs_export import export_odcs

    text = export_odcs(contract, parse_vars(variables))
    written = None if out is None else write_out(out, text)
    if as_json:
        doc = yaml.safe_load(text)
        emit_json({"status": "ok", "contract": norm_path(contract), "out": written, "odcs": doc})
    elif written is None:
        click.echo(text, nl=False)
    else:
        CliConsole().line(f"wrote {written}")


@click.group("import", context_settings=CONTEXT)
def import_group() -> None:
    """Read a contract written in another standard's format.

    \b
    Example:
      sluicegate import odcs odcs.yaml --out contract.yml
    """


@import_group.command("odcs", context_settings=CONTEXT)
@click.argument("file", type=click.Path(dir_okay=False))
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
@json_option('Print {"status", "file", "out", "notes", "contract"} as JSON.')
@handled
@examples(
    "sluicegate import odcs odcs.yaml --out contract.yml",
    "sluicegate import odcs odcs.yaml --json | jq -r '.notes[]'",
)
def import_odcs_cmd(
    file: str, out: str | None, source: str | None, force: bool, as_json: bool = False
) -> None:
    """Import an Open Data Contract Standard (v3) FILE as a sluicegate contract.

    Every part of the document that has no sluicegate equivalent is listed on stderr and
    at the top of the contract, never dropped silently.
    """
    from pathlib import Path

    from ..errors import UsageError
    from ..interop.odcs_import import import_odcs

    imported = import_odcs(file, source)
    text = imported.to_yaml(Path(file).name)
    if out is not None and Path(out).exists() and not force:
        raise UsageError(f"{out} exists", hint="pass --force to overwrite it")
    con = CliConsole()
    for note in imported.notes:  # the one warning channel, with or without --json
        con.warning(note)
    written = None if out is None else write_out(out, text)
    if as_json:
        emit_json(
            {
                "status": "ok",
                "file": norm_path(file),
                "out": written,
                "notes": imported.notes,
                "contract": imported.contract,
            }
        )
    elif written is None:
        click.echo(text, nl=False)
    else:
        con.line(f"wrote {written} ({len(imported.notes)} parts not imported, listed at its top)")
