"""The world age: a number that moves whenever a definition that splice relied on changes.

Every cache of splice that holds what it derived from the program's definitions (code
instances, inference's per-class tables) records the world it was filled in and is dropped
or checked when the world has moved since. The counter is the lowest layer of that scheme,
below inference, so that inference's caches can read it; what moves it (the watch on
functions' code and the backedges of cached code) is ``splice.cache.world``.

Reading the world is one global load; moving it takes a lock, so that two changes seen at
once by two threads move it twice.
"""

from __future__ import annotations

from splice.forks import fork_safe_lock
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["advance", "world"]

_lock = fork_safe_lock()
_world = 0


def world() -> int:
    """The current world: it moves each time a definition that splice relied on changes."""
    return _world


def advance() -> int:
    """Move the world forward (a definition changed); returns the new world."""
    global _world
    with _lock:
        _world += 1
        return _world
