"""The plugins splice ships.

* :class:`Tracer`: records the call tree of a run (qualified names, files and lines, wall
  times, exceptions, optional argument and return summaries); writes Chrome trace-event
  JSON and prints a text tree. ``splice trace`` runs a program under it.
* :class:`Patch`: replaces functions, methods and attributes only inside the call graph run
  under it: a thread-safe alternative to ``unittest.mock.patch`` that changes no global
  state. The pytest fixture ``splice_patch`` hands one to a test.
* :class:`FastMath`: replaces math functions by cheaper ones where inference proves the
  argument is a float (a ``typed`` pass; used through ``splice.compile``/``invoke``).

The submodules are imported on first use (pytest imports ``splice.plugins.pytest_plugin``
in every session of a project that has splice installed).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.plugins.fastmath import FastMath
    from splice.plugins.patch import Patch
    from splice.plugins.tracer import Call, FunctionInfo, FunctionStats, ThreadTrace, Tracer

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Call", "FastMath", "FunctionInfo", "FunctionStats", "Patch", "ThreadTrace",
           "Tracer"]

_WHERE = {"FastMath": "splice.plugins.fastmath", "Patch": "splice.plugins.patch",
          "Call": "splice.plugins.tracer",
          "FunctionInfo": "splice.plugins.tracer", "FunctionStats": "splice.plugins.tracer",
          "ThreadTrace": "splice.plugins.tracer",
          "Tracer": "splice.plugins.tracer"}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'splice.plugins' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
