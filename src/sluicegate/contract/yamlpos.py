"""YAML loading that remembers where every key came from.

pydantic reports errors by key path; users fix files by line. ``load_with_positions``
returns plain Python data plus a map from key path (a tuple of keys and list indexes)
to the 1-based line where that key or item starts.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

Path = tuple[str | int, ...]


class YamlSyntaxError(Exception):
    """The text is not YAML; carries the line of the problem."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


_TOKEN = re.compile(r"\$\{[^}\n]*\}")


def _protect_tokens(text: str) -> tuple[str, dict[str, str]]:
    """Hide ``${...}`` tokens from the YAML parser.

    ``{path: ${root}/x.json}`` is how users write contracts, but a ``{`` inside a flow
    mapping is YAML syntax. Each token becomes a plain placeholder (same line) and is put
    back in every string after parsing.
    """
    saved: dict[str, str] = {}

    def keep(m: re.Match[str]) -> str:
        key = f"__sgtok{len(saved)}__"
        saved[key] = m.group(0)
        return key

    return _TOKEN.sub(keep, text), saved


def load_with_positions(text: str) -> tuple[Any, dict[Path, int]]:
    """Parse YAML text into plain dicts/lists and a ``path -> line`` map."""
    yaml = YAML(typ="rt")
    text, saved = _protect_tokens(text)
    try:
        doc = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlSyntaxError(str(exc.problem or exc), line) from None
    positions: dict[Path, int] = {}
    return _restore(_plain(doc, (), positions), saved), positions


def _restore(node: Any, saved: dict[str, str]) -> Any:
    if not saved:
        return node
    if isinstance(node, dict):
        return {_restore(k, saved): _restore(v, saved) for k, v in node.items()}
    if isinstance(node, list):
        return [_restore(v, saved) for v in node]
    if isinstance(node, str) and "__sgtok" in node:
        return re.sub(r"__sgtok\d+__", lambda m: saved.get(m.group(0), m.group(0)), node)
    return node


def _plain(node: Any, path: Path, positions: dict[Path, int]) -> Any:
    if isinstance(node, CommentedMap):
        out = {}
        for key, value in node.items():
            try:
                line, _col = node.lc.key(key)
                positions[path + (str(key),)] = line + 1
            except (KeyError, TypeError, AttributeError):
                pass
            out[str(key)] = _plain(value, path + (str(key),), positions)
        return out
    if isinstance(node, CommentedSeq):
        out_list = []
        for i, value in enumerate(node):
            try:
                line, _col = node.lc.item(i)
                positions[path + (i,)] = line + 1
            except (KeyError, TypeError, AttributeError, IndexError):
                pass
            out_list.append(_plain(value, path + (i,), positions))
        return out_list
    if node is None or isinstance(node, bool | int | float):
        return node
    return str(node) if not isinstance(node, str) else str(node)


def line_of(positions: dict[Path, int], path: Path) -> int | None:
    """The line of ``path``, or of its nearest ancestor that has one."""
    p = tuple(path)
    while p:
        if p in positions:
            return positions[p]
        p = p[:-1]
    return None
