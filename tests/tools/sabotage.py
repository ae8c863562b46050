"""A deliberately wrong stand-in for ``splice.ir.roundtrip``, to check that the CPython test
harness notices a divergence: ``TextWrapper._wrap_chunks`` gets its string constants changed
(its signature and every fact the rebuild checks stay the same)."""

from __future__ import annotations

import types

import splice.ir


def roundtrip(fn: types.FunctionType, *, renest: bool = True) -> types.FunctionType:
    new = splice.ir.roundtrip(fn, renest=renest)
    if fn.__qualname__ == "TextWrapper._wrap_chunks":
        consts = tuple(c + "#" if isinstance(c, str) and c != new.__doc__ else c
                       for c in new.__code__.co_consts)
        new.__code__ = new.__code__.replace(co_consts=consts)
    return new
