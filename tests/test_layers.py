"""The Python package's imports point down the layers of DESIGN.md, with no cycle: the import
graph is built from the source (ast), lazy imports inside functions included, and checked
against the layer each top-level module or subpackage belongs to."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "python" / "commsolve"

# Bottom to top; a module may import its own layer's and the layers below.
LAYERS = [
    {"_core", "_collective", "_watchdog", "_plotting", "launch", "stats", "topology", "partition", "io", "gallery",
     "boxes"},  # foundation
    {"model"},                                                                              # cost models
    {"parcsr", "products", "trees", "virtual", "redistribute", "krylov"},                   # distributed data, plans
    {"direct", "dense"},                                                                    # direct and dense solvers
    {"amg", "mg", "workloads"},                                                             # multigrid; solves counted
    {"sim"},                                                                                # the simulator reads plans
    {"tune"},                                                                               # tuning by simulation
    {"runs"},                                                                               # run drivers, reports
    {"cli", "__main__"},                                                                    # the command line
]
LEVEL = {name: k for k, names in enumerate(LAYERS) for name in names}


def module_name(path):
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(["commsolve", *parts[:-1]] + ([] if parts[-1] == "__init__" else [parts[-1]]))


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
MODULES["commsolve._core"] = None  # the extension


def imports(name, path):
    """The commsolve modules ``name`` imports: ``from X import y`` counts as ``X.y`` when that
    is a module, else as ``X``."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "commsolve"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "commsolve":
                continue
            for a in node.names:
                out.add(f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target)
    return out


GRAPH = {name: {t for t in imports(name, path) if t in MODULES} for name, path in MODULES.items() if path}


def layer(name):
    parts = name.split(".")
    return LEVEL.get(parts[1]) if len(parts) > 1 else len(LAYERS)  # the package root re-exports everything


def test_every_module_has_a_layer():
    missing = sorted(name for name in GRAPH if name != "commsolve" and layer(name) is None)
    assert not missing, f"modules outside the layers of DESIGN.md: {missing}"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_point_down(name):
    upward = sorted(t for t in GRAPH[name] if layer(t) is not None and layer(name) is not None
                    and layer(t) > layer(name))
    assert not upward, f"{name} (layer {layer(name)}) imports upward: {upward}"


def cycles(edges):
    """The strongly connected components of more than one module (or a module importing
    itself), by Tarjan's algorithm."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    """Every import counts, a submodule's of its own package's ``__init__`` too (which
    imports the submodules: importing the package from inside it is a cycle)."""
    assert not cycles(GRAPH), f"import cycles: {cycles(GRAPH)}"


def test_the_checks_fail_where_they_should(tmp_path, monkeypatch):
    """An upward import is seen (a direct module importing the simulator, lazily inside a
    function), and so is a cycle."""
    fake = tmp_path / "bad.py"
    fake.write_text("def f():\n    from ..sim import study\n")
    monkeypatch.setitem(MODULES, "commsolve.direct.bad", fake)
    got = imports("commsolve.direct.bad", fake)
    assert "commsolve.sim.study" in got and layer("commsolve.sim.study") > layer("commsolve.direct.bad")
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
