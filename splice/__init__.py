"""splice: a compiler-plugin system for Python.

The pipeline (see DESIGN.md): Python function -> lower -> IR -> codegen -> code object;
plugins run a whole call graph through it (``Plugin.run``).
"""

from __future__ import annotations

from splice.cache.world import invalidate, world
from splice.errors import SpliceError, UnsupportedError
from splice.plugin import Plugin, compose, explain, intercept
from splice.reflection import code_lowered, code_python

__all__ = ["Plugin", "SpliceError", "UnsupportedError", "code_lowered", "code_python",
           "compose", "explain", "intercept", "invalidate", "world"]
