"""The package's folders are its layers (tierlab/__init__.py): every import inside
`python/tierlab` — at the top of a module or inside a function — points to the same
layer or one before it, and no group of modules imports itself round."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "python" / "tierlab"
# Bottom first. `errors`, the lazy-export helper and the compiled `_core` are below everything.
LAYERS = ["_core", "_lazy", "_signals", "errors", "model", "trace", "run", "live", "analysis", "experiments", "report", "cli"]


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The tierlab modules `path` imports (absolute names)."""
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("tierlab")}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if target.startswith("tierlab"):
                # `from . import x` may name a submodule: keep the longest existing name.
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    found.add(sub if _exists(sub) else target)
    return found


def _exists(module: str) -> bool:
    p = PACKAGE.parent.joinpath(*module.split("."))
    return p.with_suffix(".py").is_file() or p.with_suffix(".pyi").is_file() or (p / "__init__.py").is_file()


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


GRAPH = {_module(p): _imports(p) for p in PACKAGE.rglob("*.py")}


def test_the_graph_was_read():
    assert len(GRAPH) > 40 and "tierlab.run.simulate" in GRAPH["tierlab.run"]


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m != "tierlab"))
def test_imports_point_down_the_layers(module):
    up = sorted(t for t in GRAPH[module] if _layer(t) > _layer(module))
    assert not up, f"{module} (layer {LAYERS[_layer(module)]}) imports a later layer: {up}"


def test_no_import_cycles():
    """Depth-first search for a back edge among modules (a package's `__init__` is a
    module like any other)."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(GRAPH.get(m, ())):
            if t == m or t not in GRAPH:
                continue
            if state.get(t) == 1:
                cycle = path[path.index(t) :] + [t]
                pytest.fail("import cycle: " + " → ".join(cycle))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)
