"""``sluicegate schema``: the contract's JSON Schema, for editors and CI checks."""

from __future__ import annotations

import json

import click

from .common import CONTEXT, examples, handled, json_option, write_out
from .console import CliConsole
from .present import emit_json


@click.command("schema", context_settings=CONTEXT)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    help="Write the schema to FILE instead of stdout.",
)
@json_option('Print {"status", "out", "schema"} as JSON (the schema as an object).')
@handled
@examples(
    "sluicegate schema",
    "sluicegate schema --out contract.schema.json",
    "sluicegate schema --json | jq '.schema.required'",
)
def schema_cmd(out: str | None, as_json: bool) -> None:
    """Print the JSON Schema of a contract file (draft 2020-12), generated from the models.

    \b
    Point an editor at it with a first line in the contract:
      # yaml-language-server: $schema=path/to/contract.schema.json
    Every key has a description; ${…} tokens are accepted wherever a value may be
    templated; a misspelt key is an error, as in `sluicegate validate`.
    """
    from ..contract.schema_export import render_schema

    text = render_schema()
    written = None if out is None else write_out(out, text)
    if as_json:
        emit_json({"status": "ok", "out": written, "schema": json.loads(text)})
    elif written is None:
        click.echo(text, nl=False)
    else:
        CliConsole().line(f"wrote {written}")
