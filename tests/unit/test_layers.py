"""The package layers hold and no import circle exists, counting every import.

scripts/import_graph.py reads each module's whole syntax tree, so an import written
inside a function or under ``TYPE_CHECKING`` counts like a top-level one; the layer order
is the import-linter contract in pyproject.toml (``make lint`` runs import-linter too).
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("import_graph", REPO / "scripts/import_graph.py")
assert spec is not None and spec.loader is not None
import_graph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(import_graph)


def test_no_import_circle_counting_function_level_imports():
    assert import_graph.circles(import_graph.graph()) == []


def test_every_import_respects_the_layers():
    assert import_graph.layer_violations(import_graph.graph()) == []


def test_engines_never_import_the_orchestration():
    g = import_graph.graph()
    bad = {
        f"{m} -> {t}"
        for m, ts in g.items()
        if m.startswith("sluicegate.engines")
        for t in ts
        if t.startswith(("sluicegate.run", "sluicegate.dlq", "sluicegate.cli"))
    }
    assert bad == set()


def test_no_module_over_600_lines():
    src = REPO / "src/sluicegate"
    long = {
        str(p.relative_to(src)): n
        for p in src.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}


def test_no_engine_name_branch_outside_engines():
    """Engine differences are capabilities (engines/capabilities.py), never names."""
    src = REPO / "src/sluicegate"
    hits = []
    for p in src.rglob("*.py"):
        if p.parent.name == "engines":
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if ('== "duckdb"' in line or '== "spark"' in line) and "dialect" not in line:
                hits.append(f"{p.relative_to(src)}:{i}: {line.strip()}")
    assert hits == []


# -- the walker itself bites: a function-level import is an edge ---------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for name, text in files.items():
        path = tmp_path / "sluicegate" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    modules = {import_graph.module_name(p, tmp_path) for p in tmp_path.rglob("*.py")}
    return {
        import_graph.module_name(p, tmp_path): import_graph.imports_of(p, modules, tmp_path)
        for p in tmp_path.rglob("*.py")
    }


@pytest.mark.parametrize(
    "where",
    [
        "from .b import x",  # module level
        "def f():\n    from .b import x",  # inside a function
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import x",
    ],
)
def test_a_circle_is_found_wherever_the_import_is_written(tmp_path, where):
    g = _tree(
        tmp_path,
        {"__init__.py": "", "a.py": where + "\n", "b.py": "from . import a\n"},
    )
    assert import_graph.circles(g) == [["sluicegate.a", "sluicegate.b"]]
