"""The world counter and the backedges that invalidate cached code when definitions change.

A *world* is a number that moves whenever splice observes a change to a definition that cached
code relied on (the counter is ``splice.world_age``, below inference, whose caches read it;
this module moves it). Function objects are watched through CPython's audit events: assigning a
function's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` raises ``object.__setattr__``
(``object.__delattr__`` when it is deleted or set to None)
(as IPython's autoreload and jurigged do), and the hook then drops every cache entry that
recorded an edge to that function, and the entry of that function in every watched dispatch
table (``watch``: tables are scanned instead of registering an edge per function, so that
entering a function made a moment ago, a closure or a lambda, costs no registration).
Rebinding a global or replacing a method on a class needs
no event: dispatch looks callees up by the object called, so a new object is a new entry.
(Neither raises one on 3.11: there are no dict watchers, and ``type.__setattr__`` raises no
audit event. Code instances, which rely on such bindings, check them with run-time guards:
``splice.cache.guards``.)
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable
from typing import Any

from splice.forks import fork_safe_lock
from splice.pristine import BUILTINS
from splice.world_age import advance, world

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["add_backedge", "advance", "invalidate", "watch", "world"]

_WATCHED_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})

# not re-entrant: a weak reference's callback never waits for it (``_dead``), and one run by
# a collection inside a locked block must not change the tables under that block
_lock = fork_safe_lock()
# id(function) -> callbacks that drop the entries relying on it (the backedges). Keyed by id
# with a weak reference alongside, so watching a function never keeps it alive.
_backedges: dict[int, tuple[weakref.ref[Any], list[Callable[[], None]]]] = {}
_hook_installed = False
#: dispatch tables (anything with ``forget(function) -> bool``) whose entries for a function
#: are dropped when it changes, by id; held weakly, so a dropped context's table goes away
_watchers: dict[int, weakref.ref[Any]] = {}


def add_backedge(function: Any, drop: Callable[[], None]) -> None:
    """Call ``drop`` when ``function``'s code or defaults change or ``splice.invalidate`` is
    called on it."""
    _install_hook()
    key = id(function)
    with _lock:
        _purge()
        entry = _backedges.get(key)
        if entry is None or entry[0]() is not function:
            ref = weakref.ref(function, functools.partial(_forget, key))
            entry = _backedges[key] = (ref, [])
        entry[1].append(drop)


def watch(watcher: Any) -> None:
    """Call ``watcher.forget(function)`` whenever a function's code or defaults change or
    ``splice.invalidate`` is called on it (it returns whether it held an entry for it)."""
    _install_hook()
    key = id(watcher)
    with _lock:
        _purge()
        _watchers[key] = weakref.ref(watcher, functools.partial(_dead, _watchers, key))


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    _dead(_backedges, key, ref)


#: (table, key, weak reference) whose referent died while the lock was taken
_pending: list[tuple[dict[int, Any], int, weakref.ref[Any]]] = []


def _dead(table: dict[int, Any], key: int, ref: weakref.ref[Any]) -> None:
    """A weak reference's callback: drop ``table[key]`` if it is still the entry of ``ref``.
    It runs wherever the referent dies, which may be in this thread with the lock taken (a
    collection inside a locked block: where one runs moved in 3.12 and 3.13): then the
    removal waits for the next locked block (``_purge``) instead of deadlocking. (Correct
    with a re-entrant lock too: the removal is then made at once, and no locked block
    iterates a table in place.)"""
    if _lock is None or _pending is None or _purge is None:
        return  # the interpreter is shutting down: this module's globals are cleared
    _pending.append((table, key, ref))
    if _lock.acquire(blocking=False):
        try:
            _purge()
        finally:
            _lock.release()


def _purge() -> None:
    """Drop the entries of dead weak references (with the lock taken)."""
    while _pending:
        table, key, ref = _pending.pop()
        entry = table.get(key)
        if entry is ref or (type(entry) is tuple and entry[0] is ref):
            del table[key]


def invalidate(function: Any) -> int:
    """Drop every cached entry that relied on ``function`` and move the world. Returns the
    new world. Call it after changing a function in a way splice cannot see (for example
    mutating the objects its defaults hold)."""
    _drop(function)
    return advance()


def _drop(function: Any) -> bool:
    """Run ``function``'s backedges and drop it from the watched tables; returns whether
    anything relied on it."""
    with _lock:
        _purge()
        entry = _backedges.pop(id(function), None)
        # a snapshot first: a weak reference's callback may run during the comprehension
        # (a collection), and with a re-entrant lock it may drop an entry at once
        watchers = [w for w in (ref() for ref in list(_watchers.values())) if w is not None]
    relied = False
    if entry is not None and entry[0]() is function:
        relied = True
        for drop in entry[1]:
            drop()
    for watcher in watchers:
        relied = watcher.forget(function) or relied
    return relied


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Runs for every audit event in the process: keep the common path to one comparison.
    if event != "object.__setattr__" and event != "object.__delattr__":
        return
    obj, name = args[0], args[1]
    if name in _WATCHED_ATTRIBUTES and _drop(obj):
        advance()


def _install_hook() -> None:
    global _hook_installed
    if not _hook_installed:
        with _lock:
            if not _hook_installed:
                sys.addaudithook(_audit)
                _hook_installed = True
