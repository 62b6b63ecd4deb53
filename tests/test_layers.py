"""The package's layers, read from its source: every import (at the top of a module or
inside a function) points down, and no modules import each other round in a cycle.

docs/architecture.md draws the same layers; a module that needs something from above
its layer is in the wrong place, or the thing it needs is."""
import ast
import functools
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


@functools.cache
def _every_import(name):
    """What module ``name`` imports (the package's modules and libraries, by full name):
    (target, line, whether inside a function)."""
    path, is_package = MODULES[name]
    here = name.split(".") if is_package else name.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside = {id(node) for function in ast.walk(tree)
              if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
              for node in ast.walk(function)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.append((target if target in MODULES else base, node.lineno,
                              id(node) in inside))
        elif isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, id(node) in inside) for alias in node.names]
    return found


def _imports(name):
    """The package's modules that module ``name`` imports, with the line of each."""
    return [(target, line) for target, line, _ in _every_import(name) if target in MODULES]


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


# -- imports inside functions: only for start-up time, each listed here -----------------------

# What a module may import inside a function (where it first needs it) rather than at its top,
# and why: each costs start-up time that a command not needing it must not pay (`cdx` of a
# local file starts in a few tens of milliseconds: tests/test_cdx.py checks what it loads).
# Every other import is at the top of its module, where the layers (above) see it.
LAZY = {
    # libraries
    "boto3": "storage.s3 is loaded for any s3:// place, which is checked (WRITABLE...) before "
             "a request; these take longer to import than indexing a small archive",
    "botocore.config": "as boto3",
    "botocore.exceptions": "as boto3",
    "urllib3.exceptions": "as boto3",
    "pyspark": "not a dependency (spark-submit brings it): spark_engine, whose functions Spark's "
               "workers load, imports it only to make a SparkContext",
    "py4j.protocol": "as pyspark",
    "pyarrow": "columnar/ is loaded by build and export for their options and the table's plan; "
               "pyarrow (~0.2 s) only when a table is written or read",
    "pyarrow.parquet": "as pyarrow",
    "tldextract": "the public suffix list (~0.1 s), only for a table's registered-domain columns",
    "regex": "api.request is loaded by query and serve; regex only for a ~ filter",
    "warcio.exceptions": "indexing reads most records past warcio's loader (tests/test_cdx.py)",
    "warcio.recordloader": "as warcio.exceptions",
    "warcio.statusandheaders": "as warcio.exceptions",
    "warcio.timeutils": "only for a WARC-Date in an unusual form",
    "hashlib": "OpenSSL (~3 ms), only for a record without a payload digest",
    "datetime": "cdx.indexer: only for a date the compiled walker leaves to Python",
    "base64": "cdx.indexer: only for a digest the compiled walker leaves to Python",
    "gzip": "inputs.manifests: only for a gzipped manifest",
    "isal": "isal.igzip (~4 ms), only for a file read as one gzip stream, not by cdx's walk "
            "of gzip members",
    "logging": "cdx of a local file does not log (tests/test_cdx.py)",
    "tempfile": "imports random (tests/test_cdx.py); storage, storage.local and commands.cdx "
                "are loaded by cdx of a local file",
    "ctypes": "storage.local is loaded by every command; ctypes only to publish with renameat2",
    "random": "util.retry is loaded with storage by every command; random only to retry",
    "importlib.metadata": "--version only (tests/test_cdx.py)",
    "traceback": "only for copy --verbose of a job that failed",
    "email.parser": "cdx.postquery: only for a multipart POST body (--post-append)",
    "email.policy": "as email.parser",
    # the package: what a command that does not need it must not load
    f"{PACKAGE}.commands.build": "loads the engines: cli (build) and commands.report (a build's "
                                 "report) only when they run",
    f"{PACKAGE}.build.summary": "as build.tasks: cdx -o only (tests/test_walker_builds.py)",
    f"{PACKAGE}.commands.cdx": "cli loads each command's work only when that command runs",
    f"{PACKAGE}.commands.copy": "as commands.cdx",
    f"{PACKAGE}.commands.corpus": "as commands.cdx",
    f"{PACKAGE}.commands.export": "as commands.cdx",
    f"{PACKAGE}.commands.recompress": "as commands.cdx",
    f"{PACKAGE}.commands.zstd_dict": "as commands.cdx",
    f"{PACKAGE}.commands.acl": "as commands.cdx",
    f"{PACKAGE}.commands.wacz": "as commands.cdx",
    f"{PACKAGE}.api.access": "as commands.cdx (query and serve only)",
    f"{PACKAGE}.api.collection": "as commands.cdx",
    f"{PACKAGE}.api.request": "as commands.cdx",
    f"{PACKAGE}.api.serve": "as commands.cdx",
    f"{PACKAGE}.copy": "as commands.cdx",
    f"{PACKAGE}.copy.plan": "as commands.cdx",
    f"{PACKAGE}.inputs.discovery": "as commands.cdx (commands.report is loaded by every command)",
    f"{PACKAGE}.storage": "as commands.cdx (commands.report is loaded by every command)",
    f"{PACKAGE}.warc.walk": "as commands.cdx (--version)",
    f"{PACKAGE}.warc._install": "written by setup.py (no module in a plain checkout): --version "
                                "only, to say why the compiled walker is missing",
    f"{PACKAGE}.build.merge": "cdx of one archive to stdout loads none of build "
                              "(tests/test_cdx.py): only cdx of several, or cdx -o",
    f"{PACKAGE}.build.runs": "as build.merge",
    f"{PACKAGE}.build.tasks": "as build.merge",
    f"{PACKAGE}.storage.lock": "as build.merge",
    f"{PACKAGE}.util.progress": "as build.merge (it loads threading)",
    f"{PACKAGE}.cdx.postquery": "cdx.indexer: --post-append only",
    f"{PACKAGE}.zipnum.layout": "inputs: only to tell a shard (cdx-NNNNN.gz) by its name; cdx "
                                "of an archive does not load it (typing, deflate: ~4 ms)",
    f"{PACKAGE}.cdx.urlkey": "options loads cdx.cdxline: every command would load surt",
    f"{PACKAGE}.inputs.indexes": "cdx of archives reads no index input",
    f"{PACKAGE}.inputs.legacy": "as inputs.indexes",
    f"{PACKAGE}.inputs.linecheck": "as inputs.indexes: only a file of no known name is read to "
                                   "see whether it is an index",
    f"{PACKAGE}.warc.wacz": "imports zipfile: only for a WACZ",
    f"{PACKAGE}.cdx.waczown": "imports zipfile: only for a WACZ with --trust-wacz-index",
    f"{PACKAGE}.warc.zstdwarc": "imports zstandard: only for .warc.zst files (tests/test_cdx.py)",
    f"{PACKAGE}.warc.plain": "compiles its record-start patterns (~4 ms): only for uncompressed "
                             "archives (tests/test_walker_builds.py)",
}


def _lazy_imports():
    """Every import inside a function of the package: (module, line, what it imports)."""
    return [(name, line, target) for name in MODULES
            for target, line, lazy in _every_import(name) if lazy]


def test_imports_inside_functions_are_listed():
    unlisted = sorted({f"{name} (line {line}): {target}" for name, line, target in _lazy_imports()
                       if target not in LAZY})
    assert not unlisted, ("import at the top of the module, or (only if start-up time needs "
                          f"it) list in LAZY with the reason: {unlisted}")


def test_every_listed_lazy_import_is_one():
    """LAZY stays true: what it lists is imported inside a function somewhere, and never at
    the top of a module that also imports it inside a function."""
    lazy = _lazy_imports()
    assert set(LAZY) == {target for _, _, target in lazy}
    both = sorted({(name, target) for name, _, target in lazy
                   if any(t == target and not inner for t, _, inner in _every_import(name))})
    assert not both, f"imported at the top and inside a function: {both}"


def test_the_lazy_check_sees_an_import_inside_a_function():
    """The check itself: cli.py's import of a command's module where it runs is found, and
    an import at the top of a module is not."""
    found = {(name, target) for name, _, target in _lazy_imports()}
    assert (f"{PACKAGE}.cli", f"{PACKAGE}.commands.build") in found
    assert (f"{PACKAGE}.storage.s3", "boto3") in found
    assert (f"{PACKAGE}.warc.raw", f"{PACKAGE}.storage") not in found
