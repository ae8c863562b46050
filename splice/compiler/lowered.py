"""Lowered IR per code object, shared by every context and code instance.

Lowering depends on nothing but the code object and its source (no plugin, no argument
types), so one cache serves every owner. The cache is keyed weakly by the code object
(``splice.cache.code_cache``) and its values hold no function: a function holds its code,
so a value holding one would keep its own key alive. Stages work on copies
(``FunctionIR.copy``) and set ``function`` on those.
"""

from __future__ import annotations

import types

from splice.cache.code_cache import CodeCache
from splice.errors import UnsupportedError
from splice.ir import lower
from splice.ir.nodes import FunctionIR
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["LOWERED", "lowered"]

#: lowered IR (or why ``fn`` cannot be lowered) per code object
LOWERED: CodeCache[FunctionIR | UnsupportedError] = CodeCache()


def _lower(function: types.FunctionType) -> FunctionIR | UnsupportedError:
    try:
        ir = lower(function)
    except UnsupportedError as exc:
        return exc
    ir.function = None
    return ir


def lowered(fn: types.FunctionType) -> FunctionIR | UnsupportedError:
    """``fn``'s lowered IR from the shared cache (lowered on first use), or the
    ``UnsupportedError`` saying why it cannot be lowered. Copy it before changing it."""
    return LOWERED.get(fn, _lower)
