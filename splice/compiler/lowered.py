"""Lowered IR per code object, shared by every context and code instance.

Lowering depends on nothing but the code object and its source (no plugin, no argument
types), so one cache serves every owner. The cache is keyed weakly by the code object
(``splice.cache.code_cache``) and its values hold no function: a function holds its code,
so a value holding one would keep its own key alive. The cache keeps a snapshot of the IR
(``splice.ir.nodes.snapshot_ir``) and each user gets a copy of its own, restored from it;
the first user gets the IR lowering made, which nobody else holds. So the first compile of
a function pays for the pickling half of a copy and later ones for the unpickling half,
where a cache of IR copied for each user made every compile pay both.
"""

from __future__ import annotations

import types

from splice.cache.code_cache import CodeCache
from splice.errors import UnsupportedError
from splice.ir import lower
from splice.ir.nodes import FunctionIR, Snapshot, snapshot_ir
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["LOWERED", "lowered"]

#: lowered IR (or why ``fn`` cannot be lowered) per code object
LOWERED: CodeCache[Snapshot[FunctionIR] | UnsupportedError] = CodeCache()


def _lower(function: types.FunctionType) -> FunctionIR | UnsupportedError:
    try:
        ir = lower(function)
    except UnsupportedError as exc:
        return exc
    ir.function = None
    return ir


def lowered(fn: types.FunctionType) -> FunctionIR | UnsupportedError:
    """A copy of ``fn``'s lowered IR for the caller alone (its scopes' ``function`` is
    ``None``), or the ``UnsupportedError`` saying why it cannot be lowered."""
    fresh: list[FunctionIR] = []

    def lower_once(function: types.FunctionType) -> Snapshot[FunctionIR] | UnsupportedError:
        ir = _lower(function)
        if isinstance(ir, UnsupportedError):
            return ir
        fresh.append(ir)
        return snapshot_ir(ir)

    cached = LOWERED.get(fn, lower_once)
    if fresh:
        return fresh[0]
    return cached if isinstance(cached, UnsupportedError) else cached.restore()
