"""A click group whose subcommands are imported when they are used.

Every ``sluicegate`` process starts by importing the command line. With each command
module imported up front, a ``run`` paid for the DLQ, facts, watch, serve and authoring
commands (and what they import) before reading its contract. A lazy group names each
command's module and imports it only when that command runs, or when the help lists it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import click


class LazyGroup(click.Group):
    """``lazy`` maps a command name to ``"module:attribute"`` (the click command object)."""

    def __init__(self, *args: object, lazy: Mapping[str, str] | None = None, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def load(self, cmd_name: str) -> click.Command:
        """Import the module of ``cmd_name`` and return its command."""
        module, _, attribute = self.lazy[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
        return command
