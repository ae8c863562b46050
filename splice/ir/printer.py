"""Printing IR as a readable listing, in the spirit of Julia's ``@code_lowered``.

Statements are numbered, each computation reads ``%n = op(args)``, nested blocks are
indented, and the source line appears in the left margin whenever it changes.

The printer itself is written in ``splice.ir.nodes``, because ``str(ir)`` prints with it and
the nodes import nothing above them (docs/architecture.md, "Packages and layers"); this
module is where the printer's names are imported from, and holds ``Listing``.
"""

from __future__ import annotations

import html

from splice.ir.nodes import (
    Annotator,
    FunctionIR,
    Printer,
    format_function,
    op_text,
    operand_text,
)
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Annotator", "Listing", "Printer", "format_function", "op_text", "operand_text"]


class Listing:
    """What ``splice.code_lowered`` returns: prints as the listing, renders in Jupyter."""

    def __init__(self, ir: FunctionIR) -> None:
        self.ir = ir

    def __str__(self) -> str:
        return format_function(self.ir)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"
