"""The interval of a compile, reported to the plugins that observe the compiler.

``reporting(owner, fn, build)`` runs ``build()``; if it is the outermost compile on this
thread (one compile builds others: callee instances, constructors), its interval goes to
the owner's plugins that define ``Plugin.compiled``, as one span holding every compile it
made, so that a profiler keeps it out of the program's time. Building, binding shared
code and loading it from the cache on disk are all reported so. This module is small on
purpose: the dispatch table calls it for every callee it resolves, also in a process whose
code all comes from the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from time import perf_counter_ns
from typing import Any, TypeVar

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["reporting"]


class _Depth(threading.local):
    """How many compiles are under way on this thread (one builds others: callee
    instances, constructors)."""

    depth = 0


_COMPILING = _Depth()
_T = TypeVar("_T")


def reporting(owner: Any, fn: Any, build: Callable[[], _T]) -> _T:
    """``build()``; if it is the outermost compile on this thread, its interval goes to
    the owner's plugins that observe the compiler (``Plugin.compiled``), as one span
    holding every compile it made: a profiler then keeps it out of the program's time."""
    compiling = _COMPILING
    outermost = compiling.depth == 0
    start = perf_counter_ns() if outermost else 0
    compiling.depth += 1
    try:
        result = build()
    finally:
        compiling.depth -= 1
    if outermost and owner.hooks.compile_observers:
        owner.hooks.report_compile(fn, start, perf_counter_ns())
    return result
