"""Every public function, class, method and property of the Python API has a docstring in
numpydoc form (issue 34): a summary line; a "Parameters" section naming each parameter
(``a, b : float`` counts for both; ``*args``/``**kwargs`` by their bare names); a "Returns"
(or "Yields") section where the code returns a value. The public API is what the reference
(docs/api) documents: each public module's ``__all__`` (or, without one, the functions and
classes it defines whose names do not begin with "_"), the public methods and properties of
those classes.

``python3 tests/test_docstrings.py [module prefix]`` prints what is missing, name by name.
"""

import ast
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap

import pytest

import commsolve

# Internal layers: the command line (documented by its own --help and docs/cli), the run drivers
# behind it, the launcher, and modules whose names begin with "_".
INTERNAL = ("commsolve.cli", "commsolve.runs", "commsolve.launch", "commsolve.__main__")


def public_modules():
    names = ["commsolve"]
    for m in pkgutil.walk_packages(commsolve.__path__, "commsolve."):
        if any(p.startswith("_") for p in m.name.split(".")[1:]) or m.name.startswith(INTERNAL):
            continue
        names.append(m.name)
    return sorted(names)


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    out = []
    for n in names:
        v = getattr(module, n, None)
        if (inspect.isfunction(v) or inspect.isclass(v)) and getattr(v, "__module__", None) == module.__name__:
            out.append((n, v))
    return out


def returns_value(fn):
    """Whether the function's own body (not nested functions) has ``return <value>`` or yields."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0]

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return) and child.value is not None and not (
                    isinstance(child.value, ast.Constant) and child.value.value is None):
                return True
            if isinstance(child, (ast.Yield, ast.YieldFrom)):
                return True
            if walk(child):
                return True
        return False
    return walk(body)


SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}\s*$", re.M)


def sections(doc):
    """{section title: its text} of a numpydoc docstring."""
    found = list(SECTION.finditer(doc))
    return {m.group(1).strip(): doc[m.end():found[k + 1].start() if k + 1 < len(found) else len(doc)]
            for k, m in enumerate(found)}


def documented_parameters(text):
    names = set()
    for line in text.splitlines():
        if line and not line[0].isspace():
            head = line.split(" : ")[0]
            for name in head.split(","):
                names.add(name.strip().lstrip("*"))
    return names


def problems_of_function(qualname, fn, skip_first=False):
    doc = inspect.getdoc(fn) or ""
    if not doc.strip():
        return [f"{qualname}: no docstring"]
    out = []
    params = [p for p in inspect.signature(fn).parameters.values()]
    if skip_first and params:
        params = params[1:]
    secs = sections(doc)
    if params:
        if "Parameters" not in secs:
            out.append(f"{qualname}: no Parameters section (parameters: {', '.join(p.name for p in params)})")
        else:
            missing = [p.name for p in params if p.name not in documented_parameters(secs["Parameters"])]
            if missing:
                out.append(f"{qualname}: Parameters does not name {', '.join(missing)}")
    if returns_value(fn) and "Returns" not in secs and "Yields" not in secs:
        out.append(f"{qualname}: returns a value but has no Returns section")
    return out


def problems_of_class(qualname, cls):
    out = []
    if not (cls.__doc__ or "").strip():
        out.append(f"{qualname}: no class docstring")
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            if not (member.__doc__ or "").strip():
                out.append(f"{qualname}.{name}: property without a docstring")
        elif isinstance(member, (classmethod, staticmethod)):
            out += problems_of_function(f"{qualname}.{name}", member.__func__, isinstance(member, classmethod))
        elif inspect.isfunction(member):
            out += problems_of_function(f"{qualname}.{name}", member, skip_first=True)
    return out


def problems(module_name):
    module = importlib.import_module(module_name)
    out = [] if (module.__doc__ or "").strip() else [f"{module_name}: no module docstring"]
    for name, value in public_names(module):
        qual = f"{module_name}.{name}"
        out += problems_of_class(qual, value) if inspect.isclass(value) else problems_of_function(qual, value)
    return out


@pytest.mark.parametrize("module_name", public_modules())
def test_public_names_have_numpydoc_docstrings(module_name):
    found = problems(module_name)
    assert not found, "\n".join(found)


def test_the_checker_catches_what_it_should():
    def undocumented(a, b=1):
        return a + b

    def documented(a, b=1, *rest, **options):
        """Adds.

        Parameters
        ----------
        a, b : int
            The terms.
        *rest, **options
            Ignored.

        Returns
        -------
        int
        """
        return a + b

    def no_value(a):
        """Nothing back.

        Parameters
        ----------
        a : int
        """
        if a:
            return None

    assert problems_of_function("u", undocumented) == ["u: no docstring"]
    assert problems_of_function("d", documented) == []
    assert problems_of_function("n", no_value) == []
    half = documented.__doc__.replace("        a, b : int", "        a : int")
    documented.__doc__ = half
    assert problems_of_function("d", documented) == ["d: Parameters does not name b"]


if __name__ == "__main__":
    prefix = sys.argv[1] if len(sys.argv) > 1 else "commsolve"
    total = 0
    for name in public_modules():
        if name == prefix or name.startswith(prefix + "."):
            found = problems(name)
            total += len(found)
            print("\n".join(found)) if found else None
    print(f"{total} problem(s)")
