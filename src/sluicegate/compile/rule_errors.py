"""Rule errors in the rule's own words: what is wrong, at which column, and the fix.

sqlglot's parse errors name its expression classes (``missing for <class
'sqlglot.expressions.core.And'>``) and carry terminal colour codes; a rule author wrote
``amount > 0 AND``. This module turns a parse error into one line quoting the rule's
text at the column where it breaks, and refuses expressions that parse but are not
conditions (``amount >> 0`` — a bit shift, as ``amount > > 0`` also parses — or
``amount + 1``), which would otherwise fail only when the engine runs them.
"""

from __future__ import annotations

import re

from sqlglot import exp

#: Common slips and what was probably meant.
_SLIPS = (
    (re.compile(r"=>"), ">="),
    (re.compile(r"=<"), "<="),
    (re.compile(r"=="), "="),
    (re.compile(r"!=="), "!="),
    (re.compile(r">\s*>"), ">"),
    (re.compile(r"<\s*<"), "<"),
)

#: Expressions that are values, not conditions, said in words.
_NOT_CONDITIONS: tuple[tuple[type, str], ...] = tuple(
    (cls, words)
    for cls, words in (
        (getattr(exp, "BitwiseRightShift", None), "a bit shift (>>)"),
        (getattr(exp, "BitwiseLeftShift", None), "a bit shift (<<)"),
        (getattr(exp, "BitwiseAnd", None), "a bitwise AND (&)"),
        (getattr(exp, "BitwiseOr", None), "a bitwise OR (|)"),
        (getattr(exp, "BitwiseXor", None), "a bitwise XOR (^)"),
        (getattr(exp, "DPipe", None), "a text concatenation (||)"),
        (exp.Add, "a sum (+)"),
        (exp.Sub, "a difference (-)"),
        (exp.Mul, "a product (*)"),
        (exp.Div, "a division (/)"),
        (exp.Mod, "a remainder (%)"),
        (exp.Neg, "a negative number"),
        (exp.Literal, "a constant"),
    )
    if isinstance(cls, type)
)


def describe_parse_error(text: str, exc: Exception, what: str = "expect") -> str:
    """One line: ``expect is not valid SQL at column 14 of 'amount > 0 AND': …``."""
    errors = getattr(exc, "errors", None) or [{}]
    first = errors[0] if isinstance(errors[0], dict) else {}
    col = first.get("col")
    token = _plain(first.get("highlight") or "")
    desc = _plain(first.get("description") or str(exc).splitlines()[0])
    if not getattr(exc, "errors", None):  # a TokenError: the text does not even split
        quotes = [q for q in "'\"" if text.count(q) % 2]
        problem = f"a {quotes[0]} quote is not closed" if quotes else "it cannot be read as SQL"
    elif "Required keyword" in desc or "missing for" in desc:
        problem = f"'{token}' needs a value after it" if token else "something is missing"
    elif desc.startswith("Expecting "):
        problem = f"expected {desc[len('Expecting ') :].strip()}"
        if token:
            problem += f" near '{token}'"
    elif token:
        problem = f"unexpected '{token}'"
    else:
        problem = re.sub(r"<class '[^']*'>", "an expression", desc).rstrip(". ")
    where = f" at column {col}" if isinstance(col, int) and col > 0 else ""
    return f"{what} is not valid SQL{where} of {_quote(text)}: {problem}{_slip(text)}"


def not_a_condition(tree: exp.Expression, text: str, what: str = "expect") -> str | None:
    """The message for an expression that cannot be TRUE or FALSE, or None when it can."""
    node = tree
    while isinstance(node, exp.Paren):
        node = node.this
    for cls, words in _NOT_CONDITIONS:
        if isinstance(node, cls):
            return (
                f"{what} must be a condition (TRUE or FALSE) but {_quote(text)} is "
                f"{words}{_slip(text) or '; compare it, e.g. ' + _quote(text.strip() + ' > 0')}"
            )
    return None


def _slip(text: str) -> str:
    for pattern, meant in _SLIPS:
        if pattern.search(text):
            return f"; did you mean {_quote(pattern.sub(meant, text, count=1))}?"
    return ""


def _quote(text: str) -> str:
    one_line = " ".join(text.split())
    return "'" + (one_line if len(one_line) <= 80 else one_line[:77] + "...") + "'"


def _plain(text: str) -> str:
    """Without the ANSI colour codes sqlglot puts around the highlighted token."""
    return re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip()
