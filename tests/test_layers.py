"""The package's layers, read from its source: every import (at the top of a module or
inside a function) points down, and no modules import each other round in a cycle.

docs/architecture.md draws the same layers; a module that needs something from above
its layer is in the wrong place, or the thing it needs is."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "webarchive_indexing"

# Bottom first: a part may import only the parts before it (and itself). The MRJob jobs
# run tasks of build and copy, and the engines run the jobs; jobs/spark_build.py is a
# command line of its own, as cli.py is.
LAYERS = ["util", "storage", "warc", "cdx", "options", "columnar", "zipnum", "inputs", "build",
          "copy", "jobs", "engines", "api", "commands", "cli"]
TOP = {"jobs.spark_build": "cli"}


def _modules():
    """Every module of the package: dotted name -> (file, whether a package)."""
    found = {}
    for root, prefix in ((REPO / PACKAGE, PACKAGE), (REPO / "jobs", f"{PACKAGE}.jobs")):
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = (path, is_package)
    return found


MODULES = _modules()


def _imports(name):
    """The package's modules that module ``name`` imports, with the line of each."""
    path, is_package = MODULES[name]
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                target = target if target in MODULES else base
                if target in MODULES:
                    found.append((target, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name in MODULES]
    return found


def layer(name):
    """Which layer a module is in: its first part below the package."""
    short = name[len(PACKAGE) + 1:]
    if short in TOP:
        return TOP[short]
    return short.split(".")[0] if short else "cli"


def test_every_module_is_in_a_layer():
    assert {layer(name) for name in MODULES} <= set(LAYERS)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down(name):
    mine = LAYERS.index(layer(name))
    upward = [f"{target} (line {line}, layer {layer(target)})"
              for target, line in _imports(name) if LAYERS.index(layer(target)) > mine]
    assert not upward, f"{name} (layer {layer(name)}) imports from above: {upward}"


def test_no_import_cycles():
    graph = {name: {target for target, _ in _imports(name) if target != name}
             for name in MODULES}
    # a package's __init__ that gathers its modules is imported through them, not a cycle
    for name, (_, is_package) in MODULES.items():
        if is_package:
            graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert not cycles


def test_the_layers_see_an_upward_import():
    """The check itself: a module of ``warc`` importing ``engines`` is caught."""
    probe = f"{PACKAGE}.warc.magic"
    mine = LAYERS.index(layer(probe))
    assert LAYERS.index(layer(f"{PACKAGE}.engines")) > mine
    assert layer(f"{PACKAGE}.jobs.spark_build") == "cli"
    assert (f"{PACKAGE}.storage", 1) not in _imports(probe)
    assert any(t == f"{PACKAGE}.storage" for t, _ in _imports(f"{PACKAGE}.warc.raw"))
