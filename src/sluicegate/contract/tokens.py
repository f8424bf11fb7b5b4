"""Substitution tokens in contract values: ``${var}``, ``${env:NAME}``, ``${secret:scope/key}``,
``${logical_date}``.

Substitution runs on the parsed YAML (string values only), so a token can never change
the YAML structure. Secret values are collected so every message leaving the library can
be redacted (see :class:`sluicegate.errors.Redactor`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import MIN_SECRET_CHARS, spellings
from .secret import Secret, secret_allowed, secret_key_names, shown_form

TOKEN = re.compile(r"\$\{([^}]*)\}")

#: Every secret value resolved in this process. Contract errors are redacted with the
#: contract's own :class:`~sluicegate.errors.Redactor`; text that leaves the process by
#: other paths (the CLI's error handler, ``--json`` documents) goes through
#: :func:`redact_secrets`, which knows them all.
_RESOLVED_SECRETS: set[str] = set()
REDACTED = "***"


SecretProvider = Callable[[str, str], "str | None"]


def env_secret_provider(scope: str, key: str) -> str | None:
    """Default secret provider: ``SLUICEGATE_SECRET_<SCOPE>_<KEY>`` (upper-cased, non-alnum → _)."""
    name = "SLUICEGATE_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", f"{scope}_{key}").upper()
    return os.environ.get(name)


@dataclass
class TokenContext:
    """What tokens resolve against."""

    variables: Mapping[str, str]
    logical_date: str
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    secret_provider: SecretProvider = env_secret_provider
    secrets_seen: set[str] = field(default_factory=set)


class TokenError(Exception):
    """A token could not be resolved; ``message`` says which and how to supply it."""


def substitute(text: str, ctx: TokenContext) -> str | Secret:
    """Replace every token in ``text``. Raises :class:`TokenError` for an unknown one.

    A text that held a ``${secret:…}`` token comes back as a :class:`Secret` (shown with
    the token as ``***``), never as a plain string.
    """
    used_secret = False

    def repl(m: re.Match[str]) -> str:
        body = m.group(1).strip()
        if body == "logical_date":
            return ctx.logical_date
        if body.startswith("env:"):
            name = body[4:]
            if name not in ctx.env:
                raise TokenError(f"environment variable '{name}' is not set (token ${{{body}}})")
            return ctx.env[name]
        if body.startswith("secret:"):
            ref = body[7:]
            if "/" not in ref:
                raise TokenError(f"secret token must be ${{secret:scope/key}}, got ${{{body}}}")
            scope, key = ref.split("/", 1)
            value = ctx.secret_provider(scope, key)
            if value is None:
                raise TokenError(
                    f"secret '{scope}/{key}' not found; set SLUICEGATE_SECRET_"
                    f"{re.sub(r'[^A-Za-z0-9]', '_', scope + '_' + key).upper()}"
                )
            if len(value) < MIN_SECRET_CHARS:
                raise TokenError(
                    f"secret '{scope}/{key}' is {len(value)} characters; at least "
                    f"{MIN_SECRET_CHARS} are required (a short secret cannot be redacted "
                    "without corrupting other text, and is guessable from what is redacted)"
                )
            nonlocal used_secret
            used_secret = True
            ctx.secrets_seen.add(value)
            _RESOLVED_SECRETS.update(spellings(value))
            return value
        if body in ctx.variables:
            return str(ctx.variables[body])
        raise TokenError(
            f"unknown variable '{body}'; define it under vars: or pass --var {body}=VALUE"
        )

    out = TOKEN.sub(repl, text)
    return Secret(out, shown_form(text)) if used_secret else out


def substitute_tree(
    node: Any, ctx: TokenContext, path: tuple = (), on_error: Callable | None = None
) -> Any:
    """Substitute tokens in every string of a parsed YAML tree.

    ``on_error(path, message)`` is called for each failure so all problems are reported at once.
    """
    if isinstance(node, dict):
        return {k: substitute_tree(v, ctx, path + (k,), on_error) for k, v in node.items()}
    if isinstance(node, list):
        return [substitute_tree(v, ctx, path + (i,), on_error) for i, v in enumerate(node)]
    if isinstance(node, str) and "${" in node:
        try:
            out = substitute(node, ctx)
            if isinstance(out, Secret) and not secret_allowed(path):
                raise TokenError(
                    "holds a secret (${secret:…}); a secret is accepted only where it goes "
                    f"straight to a driver: {secret_key_names()}. Anywhere else it would reach "
                    "run ids, lineage, summaries or the run record — move it"
                )
            return out
        except TokenError as exc:
            if on_error is None:
                raise
            on_error(path, str(exc))
            return node
    return node


def redact_secrets(text: str) -> str:
    """Replace every secret value resolved in this process with ``***`` (longest first)."""
    for value in sorted(_RESOLVED_SECRETS, key=len, reverse=True):
        if value:
            text = text.replace(value, REDACTED)
    return text


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from output like a ``${secret:…}`` (a credential an engine took
    from the environment, e.g. ``AWS_SECRET_ACCESS_KEY``)."""
    if value:
        _RESOLVED_SECRETS.update(spellings(value) or {value})
