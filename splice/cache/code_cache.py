"""Transformed code, cached per owner and per code object.

The cache maps a code object to what was built from it (a ``CompiledCode``, or the
``UnsupportedError`` that says why it could not be; a transient one, a recursion limit too
low for splice, is returned but not kept; a kept one loses its traceback, which would hold
the frames of the first call and its callers' locals forever). It holds code objects
weakly, so entries die with the functions that used them, and by identity: code objects
compare equal across files (``code.__eq__`` ignores the file name and qualified name), so
two files defining the same function at the same line must not share an entry. Concurrent
first requests for one code object build it once: the others wait for the first (a per-code
re-entrant lock, so a build that reaches the same code again on its own thread does not
deadlock). Builds run with room on the stack whatever the program's depth
(``splice.cache.headroom``).
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from splice.cache.headroom import with_headroom
from splice.errors import UnsupportedError
from splice.ir.functions import describe
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["ByCode", "CodeCache"]

T = TypeVar("T")
V = TypeVar("V")


class ByCode(Generic[V]):
    """A map keyed weakly by code objects' identity."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref[types.CodeType], V]] = {}

    def __getitem__(self, code: types.CodeType) -> V:
        return self._items[id(code)][1]

    def get(self, code: types.CodeType) -> V | None:
        item = self._items.get(id(code))
        return None if item is None else item[1]

    def __setitem__(self, code: types.CodeType, value: V) -> None:
        key = id(code)
        items = self._items

        def forget(ref: weakref.ref[types.CodeType]) -> None:
            # runs while the code object dies, before its id can be reused
            item = items.get(key)
            if item is not None and item[0] is ref:
                del items[key]

        items[key] = (weakref.ref(code, forget), value)

    def pop(self, code: types.CodeType) -> None:
        self._items.pop(id(code), None)

    def values(self) -> list[V]:
        return [value for _, value in self._items.values()]

    def __len__(self) -> int:
        return len(self._items)


def _forget_frames(error: BaseException) -> None:
    """Drop the tracebacks of a cached ``error`` and of the exceptions it chains: they hold
    the frames of the call that first reached the function, and through ``f_back`` every
    caller's frame and locals, which the cache would otherwise keep alive for good."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        exc = pending.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        exc.__traceback__ = None
        pending += (exc.__cause__, exc.__context__)


class CodeCache(Generic[T]):
    """``code object -> T``, built on first request by ``build(function)``."""

    def __init__(self) -> None:
        self._entries: ByCode[T | UnsupportedError] = ByCode()
        self._locks: ByCode[threading.RLock] = ByCode()
        self._guard = threading.Lock()
        #: how many times ``build`` ran (tests check "compiled once")
        self.builds = 0

    def get(self, function: types.FunctionType, build: Callable[[types.FunctionType], T],
            code: types.CodeType | None = None) -> T | UnsupportedError:
        """The entry for ``function.__code__`` (``code``, if the caller has read it: each
        read raises an audit event), built from ``function`` if missing (an
        ``UnsupportedError`` if the build ran out of the recursion limit)."""
        if code is None:
            code = function.__code__
        item = self._entries._items.get(id(code))
        if item is not None:
            return item[1]
        return with_headroom(self._build, function, build, code)

    def _build(self, function: types.FunctionType, build: Callable[[types.FunctionType], T],
               code: types.CodeType) -> T | UnsupportedError:
        with self._guard:
            lock = self._locks.get(code)
            if lock is None:
                lock = self._locks[code] = threading.RLock()
        with lock:
            try:
                return self._entries[code]
            except KeyError:
                pass
            value: T | UnsupportedError
            try:
                value = build(function)
            except RecursionError:
                # on a fresh stack when the caller had little room: the limit itself is
                # too low for splice (docs/runtime.md, "Recursion limit")
                value = UnsupportedError.recursion_limit(describe(function))
            self.builds += 1
            if isinstance(value, UnsupportedError):
                if value.transient:
                    return value
                _forget_frames(value)
            self._entries[code] = value
            return value

    def cached(self, code: types.CodeType) -> T | UnsupportedError | None:
        """The entry for ``code`` if it was built already (never builds)."""
        item = self._entries._items.get(id(code))
        return None if item is None else item[1]

    def drop(self, code: types.CodeType) -> None:
        """Forget the entry for ``code``."""
        self._entries.pop(code)

    def items(self) -> list[tuple[types.CodeType, T | UnsupportedError]]:
        """The entries built, with their code objects (those still alive)."""
        found = []
        for ref, value in list(self._entries._items.values()):
            code = ref()
            if code is not None:
                found.append((code, value))
        return found

    def __len__(self) -> int:
        return len(self._entries)
