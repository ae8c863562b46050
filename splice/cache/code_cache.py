"""Transformed code, cached per owner and per code object.

The cache maps a code object to what was built from it (a ``CompiledCode``, or the
``UnsupportedError`` that says why it could not be). It holds code objects weakly, so entries
die with the functions that used them. Concurrent first requests for one code object build it
once: the others wait for the first (a per-code re-entrant lock, so a build that reaches the
same code again on its own thread does not deadlock).
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class CodeCache(Generic[T]):
    """``code object -> T``, built on first request by ``build(function)``."""

    def __init__(self) -> None:
        self._entries: weakref.WeakKeyDictionary[types.CodeType, T] = \
            weakref.WeakKeyDictionary()
        self._locks: weakref.WeakKeyDictionary[types.CodeType, threading.RLock] = \
            weakref.WeakKeyDictionary()
        self._guard = threading.Lock()
        #: how many times ``build`` ran (tests check "compiled once")
        self.builds = 0

    def get(self, function: types.FunctionType,
            build: Callable[[types.FunctionType], T]) -> T:
        """The entry for ``function.__code__``, built from ``function`` if missing."""
        code = function.__code__
        try:
            return self._entries[code]
        except KeyError:
            pass
        with self._guard:
            lock = self._locks.get(code)
            if lock is None:
                lock = self._locks[code] = threading.RLock()
        with lock:
            try:
                return self._entries[code]
            except KeyError:
                pass
            value = build(function)
            self.builds += 1
            self._entries[code] = value
            return value

    def drop(self, code: types.CodeType) -> None:
        """Forget the entry for ``code``."""
        self._entries.pop(code, None)

    def __len__(self) -> int:
        return len(self._entries)
