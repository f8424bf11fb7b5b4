"""``sluicegate schema``: the contract's JSON Schema, for editors and CI checks."""

from __future__ import annotations

from pathlib import Path

import click

from .common import CONTEXT, examples, handled
from .console import CliConsole


@click.command("schema", context_settings=CONTEXT)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    help="Write the schema to FILE instead of stdout.",
)
@handled
@examples("sluicegate schema", "sluicegate schema --out contract.schema.json")
def schema_cmd(out: str | None) -> None:
    """Print the JSON Schema of a contract file (draft 2020-12), generated from the models.

    \b
    Point an editor at it with a first line in the contract:
      # yaml-language-server: $schema=path/to/contract.schema.json
    Every key has a description; ${…} tokens are accepted wherever a value may be
    templated; a misspelt key is an error, as in `sluicegate validate`.
    """
    from ..contract.schema_export import render_schema

    text = render_schema()
    if out is None:
        click.echo(text, nl=False)
        return
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text, encoding="utf-8")
    CliConsole().line(f"wrote {out}")
