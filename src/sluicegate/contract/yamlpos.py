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


#: Nodes a contract may expand to. Aliases share one parsed node, but the plain copy
#: expands every use: nine levels of nine aliases ("billion laughs") would need ~430M
#: nodes. A real contract has a few thousand.
MAX_NODES = 50_000
MAX_DEPTH = 64


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
    except RecursionError:
        raise YamlSyntaxError(f"nested deeper than {MAX_DEPTH} levels", None) from None
    except Exception as exc:  # noqa: BLE001 - ruamel raises plain errors on odd input
        raise YamlSyntaxError(f"{type(exc).__name__}: {exc}", None) from None
    positions: dict[Path, int] = {}
    budget = [MAX_NODES]
    return _restore(_plain(doc, (), positions, budget), saved), positions


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


def _line(container: Any, key: Any, item: bool = False) -> int | None:
    try:
        line, _col = container.lc.item(key) if item else container.lc.key(key)
        return line + 1
    except (KeyError, TypeError, AttributeError, IndexError):
        return None


def _plain(node: Any, path: Path, positions: dict[Path, int], budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise YamlSyntaxError(
            f"the document expands to more than {MAX_NODES} values (YAML aliases reused "
            "too often?); write the values out or use fewer aliases",
            line_of(positions, path),
        )
    if len(path) > MAX_DEPTH:
        raise YamlSyntaxError(f"nested deeper than {MAX_DEPTH} levels", line_of(positions, path))
    if isinstance(node, CommentedMap):
        out = {}
        for key, value in node.items():
            line = _line(node, key)
            if not isinstance(key, str):  # ~: x, 1: x, [a]: x — a contract key is text
                raise YamlSyntaxError(f"key {key!r} is not text; quote it or remove it", line)
            if line is not None:
                positions[path + (key,)] = line
            out[key] = _plain(value, path + (key,), positions, budget)
        return out
    if isinstance(node, CommentedSeq):
        out_list = []
        for i, value in enumerate(node):
            line = _line(node, i, item=True)
            if line is not None:
                positions[path + (i,)] = line
            out_list.append(_plain(value, path + (i,), positions, budget))
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
