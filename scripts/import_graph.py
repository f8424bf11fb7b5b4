"""Every import between sluicegate's modules, including those inside functions and under
``TYPE_CHECKING``, checked for circles and for the layer order.

import-linter (``make lint``) checks the layers too, but it builds its graph with grimp,
which reads module-level imports only by default; an import written inside a function is
still a dependency (it runs the first time the function does), so this walker reads the
whole syntax tree with :mod:`ast` and counts every ``import`` / ``from ... import``.

    python scripts/import_graph.py            # prints circles and layer violations; exit 1 if any

The layer order is the one in pyproject.toml's ``[tool.importlinter]`` contract (lowest
first); a module may import only from its own layer or a lower one.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
PACKAGE = "sluicegate"


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path, modules: set[str], src: Path = SRC) -> set[str]:
    """Every sluicegate module ``path`` imports, at any depth of its syntax tree."""
    importer = module_name(path, src)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(importer, is_package, node)
            # ``from pkg import mod`` imports the submodule when there is one
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        for t in targets:
            while t and t not in modules:  # ``import a.b.c`` of a name inside a.b
                t = t.rpartition(".")[0]
            if t.startswith(PACKAGE) and t != importer:
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    files = sorted((SRC / PACKAGE).rglob("*.py"))
    modules = {module_name(f) for f in files}
    return {module_name(f): imports_of(f, modules) for f in files}


def _strip_parents(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop edges from a module to its own parent packages (``a.b.c`` → ``a.b``): importing a
    submodule runs its package's ``__init__`` anyway, so that edge is not a choice."""
    return {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in g.items()}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    g = _strip_parents(g)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def layers() -> list[list[str]]:
    """The layers contract from pyproject.toml, lowest first (import-linter lists highest first)."""
    doc = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    for contract in doc["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "layers":
            return [
                [f"{PACKAGE}.{m.strip()}" for m in layer.split("|")]
                for layer in reversed(contract["layers"])
            ]
    raise SystemExit("no layers contract in pyproject.toml")


def layer_violations(g: dict[str, set[str]]) -> list[str]:
    order = layers()

    def rank(m: str) -> int | None:
        for i, layer in enumerate(order):
            if any(m == p or m.startswith(p + ".") for p in layer):
                return i
        return None

    bad = []
    for m, ts in sorted(g.items()):
        rm = rank(m)
        for t in sorted(ts):
            rt = rank(t)
            if rm is not None and rt is not None and rt > rm:
                bad.append(f"{m} -> {t}")
    return bad


def main() -> int:
    g = graph()
    edges = sum(len(v) for v in g.values())
    cs = circles(g)
    bad = layer_violations(g)
    print(f"{len(g)} modules, {edges} imports (module- and function-level)")
    for c in cs:
        print("circle: " + " <-> ".join(c))
    for b in bad:
        print("layer violation: " + b)
    print(f"{len(cs)} circles, {len(bad)} layer violations")
    return 1 if cs or bad else 0


if __name__ == "__main__":
    sys.exit(main())
