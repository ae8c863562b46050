"""Keys of a dispatch table that do not keep a nested function alive.

A nested function (a closure, a lambda, a method of a class made in a function) is a new
object each time its ``def`` runs, and the program may drop it right after calling it. A
dispatch table that held it as a key would keep it, its cells and everything they refer to
alive until the table is swept: a file a closure writes to stays open, a generator it holds
stays suspended (``traceback.extract_stack`` leaves one holding the caller's frame, so a
pyparsing ``Forward`` kept by that frame is finalised late and its warning comes late).

``WeakKey(fn, callback)`` is a weak reference that a dict takes for ``fn`` itself: it
hashes as ``fn`` and compares equal to it (and to itself only, once dead), so
``table[fn]`` finds what was stored under ``table[WeakKey(fn, callback)]`` and generated
code looks entries up as before. When ``fn`` dies, ``callback(key)`` removes the entry, at
the moment CPython frees the function. The key holds no strong reference; the entry (the
function rebuilt from transformed code) holds ``fn``'s cells and defaults, which ``fn``
holds too, so nothing lives longer than natively. Entries that hold the callee itself (a
hooks wrapper, a specializing entry) keep strong keys: a weak key would never die.

The C type (splice/runtime/_methods.c) compares without a Python frame; the Python form
below is the fallback when the extension is not built.
"""

from __future__ import annotations

import weakref
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["WeakKey", "is_nested"]


class _PythonWeakKey(weakref.ref):  # type: ignore[type-arg]
    """The Python form of ``WeakKey``."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        referent = self()
        return referent is not None and referent is other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = weakref.ref.__hash__


WeakKey: Any
try:
    from splice.runtime._methods import WeakKey
except ImportError:  # built without a compiler
    WeakKey = _PythonWeakKey


def is_nested(fn: Any) -> bool:
    """Whether the function ``fn`` was made inside another function (its code's qualified
    name says so), so the program may make and drop many of them. (The code's, not the
    function's: ``functools.wraps`` gives a wrapper the wrapped function's name, and a
    wrapper made per object, as ``tempfile``'s file wrapper makes them, must not be kept
    alive by the table.)"""
    return "<locals>" in fn.__code__.co_qualname
