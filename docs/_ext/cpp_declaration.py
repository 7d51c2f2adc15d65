"""``.. cpp-declaration:: comm/comm_plan.hpp CommPlan``: the declaration of a C++ class or
struct as the header has it (the comment lines just above it, through its closing ``};`` at
the start of a line), so the page cannot drift from the code. A name the header does not
declare is an error (the docs build fails)."""

import pathlib
import re

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

SOURCES = pathlib.Path(__file__).resolve().parents[2] / "src" / "commsolve"


def declaration(header, name):
    lines = (SOURCES / header).read_text().splitlines()
    start = next((k for k, line in enumerate(lines) if re.match(rf"(class|struct) {re.escape(name)}\b[^;]*$", line)),
                 None)
    if start is None:
        raise ExtensionError(f"cpp-declaration: {header} declares no class or struct {name}")
    end = next(k for k in range(start, len(lines)) if lines[k].startswith("};"))
    while start > 0 and lines[start - 1].startswith("//"):
        start -= 1
    return "\n".join(lines[start:end + 1])


class CppDeclaration(SphinxDirective):
    required_arguments = 2

    def run(self):
        header, name = self.arguments
        self.env.note_dependency(str(SOURCES / header))
        text = declaration(header, name)
        block = nodes.literal_block(text, text, language="cpp")
        caption = nodes.paragraph()
        caption += nodes.literal(text=f"#include <commsolve/{header}>")
        return [caption, block]


def setup(app):
    app.add_directive("cpp-declaration", CppDeclaration)
    return {"parallel_read_safe": True}
