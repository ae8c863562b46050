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
the moment CPython frees the function. The key holds no strong reference, and neither does
an entry keyed this way (:func:`holds_weakly`): the function rebuilt from transformed code
holds ``fn``'s cells and defaults, which ``fn`` holds too, and the C entries of per-call
hooks and of typed stages (``Hooked``, ``Chosen``, made with ``weak=True``) hold ``fn`` by
a weak reference, taking a strong one only while a call runs; so nothing lives longer than
natively. Call sites keep a callee that only a temporary holds alive until its call returns
(``splice.runtime.native.HELD_CALL``), as CPython's stack does. Entries that hold the
callee itself (the Python forms, used without the C extensions) keep strong keys: a weak
key would never die.

The C type (splice/runtime/_methods.c) compares without a Python frame; the Python form
below is the fallback when the extension is not built.
"""

from __future__ import annotations

import types
import weakref
from typing import Any

from splice.cache.instances import is_nested  # (defined there: cache needs it too)
from splice.keys import ClassSet
from splice.pristine import BUILTINS
from splice.runtime import native

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["WeakKey", "holds_weakly", "is_nested"]


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


_WEAK_ENTRIES = ClassSet(kind for kind in (native.HOOKED, native.CHOSEN) if kind is not None)


def holds_weakly(entry: Any, fn: Any) -> bool:
    """Whether ``entry``, what runs the calls of ``fn``, holds ``fn`` weakly or not at all:
    a function rebuilt from ``fn``'s transformed code (it holds ``fn``'s cells), or a C
    entry made with ``weak=True`` (what it runs is then one of these, never ``fn``)."""
    if entry is fn:
        return False
    kind = type(entry)
    return kind is types.FunctionType or (kind in _WEAK_ENTRIES and bool(entry.weak))
