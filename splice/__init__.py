"""splice: a compiler-plugin system for Python.

The pipeline (see DESIGN.md): Python function -> lower -> IR -> codegen -> code object.
"""

from __future__ import annotations

from splice.errors import SpliceError, UnsupportedError
from splice.reflection import code_lowered, code_python

__all__ = ["SpliceError", "UnsupportedError", "code_lowered", "code_python"]
