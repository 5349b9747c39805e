"""Griffe extension: render the docstrings' Sphinx-style markup as Markdown.

The sources use reST roles (:class:`~retrysafe.Transaction`) and ``Example::`` literal-block
markers; the site's Markdown shows a role as inline code of its target (the last part when the
target starts with ``~``) and turns ``::`` into ``:`` so the indented block below renders as code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")
LITERAL_BLOCK = re.compile(r"::$", re.MULTILINE)


def to_markdown(text: str) -> str:
    """The docstring text with roles as code spans and literal-block markers as colons."""
    text = ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)
    return LITERAL_BLOCK.sub(":", text)


class SphinxRoles(griffe.Extension):
    """Rewrites every loaded object's docstring with :func:`to_markdown`."""

    def on_instance(self, *, obj: griffe.Object, **_: Any) -> None:
        """Called for each module, class, function and attribute griffe loads."""
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
