"""Sphinx configuration of commsolve's documentation: ``make docs`` builds it offline into
build/docs/html with warnings as errors.

Sphinx because the API reference is generated from the numpydoc docstrings (autodoc +
napoleon), the command-line reference from the click commands themselves (sphinx-click), and
the pages stay Markdown (MyST) that read as well on GitHub; it is also what numpy, scipy,
mpi4py, petsc4py and pyamg use. Nothing is fetched at build time (no intersphinx, no
remote images or scripts)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

project = "commsolve"
author = "the commsolve developers"
copyright = "2026, the commsolve developers"
try:
    from importlib.metadata import version as _version

    release = _version("commsolve")
except Exception:  # not installed: the docs still build from the sources' text
    release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
    "sphinx_click",
    "cpp_declaration",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "tutorials/*.py", "first_solve.py"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# each object documented once, where it is defined (a package's __all__ re-exports its submodules' names)
autodoc_default_options = {"members": True, "show-inheritance": False, "ignore-module-all": True}
autoclass_content = "class"

html_theme = "furo"
html_title = f"commsolve {release}"
html_static_path = []
