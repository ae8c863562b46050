"""The plugins splice ships.

* :class:`Tracer`: records the call tree of a run (qualified names, files and lines, wall
  times, exceptions, optional argument and return summaries); writes Chrome trace-event
  JSON and prints a text tree. ``splice trace`` runs a program under it.
* :class:`Patch`: replaces functions, methods and attributes only inside the call graph run
  under it: a thread-safe alternative to ``unittest.mock.patch`` that changes no global
  state. The pytest fixture ``splice_patch`` hands one to a test.
"""

from __future__ import annotations

from splice.plugins.patch import Patch
from splice.plugins.tracer import Call, FunctionInfo, ThreadTrace, Tracer

__all__ = ["Call", "FunctionInfo", "Patch", "ThreadTrace", "Tracer"]
