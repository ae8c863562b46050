"""Code objects splice puts in place of a function's own ``__code__``.

The dynamic scope (``splice.runtime.dynamic``) and the soundness oracle
(``splice.infer.oracle``) run a function with splice's copy of its code for a while. The
source lookup (``splice.ir.source``) verifies that a function's code is what its source
compiles to; a stand-in is verified through the code it stands for. Entries are by
identity and held weakly (a stand-in that is gone is forgotten), so an equal code object
made by anyone else never counts as splice's.
"""

from __future__ import annotations

import types
import weakref

from splice.forks import fork_safe_lock
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["original_of", "stands_for"]

_lock = fork_safe_lock()
_originals: dict[int, tuple[weakref.ref[types.CodeType], types.CodeType]] = {}


def stands_for(stand_in: types.CodeType, original: types.CodeType) -> None:
    """Record that ``stand_in`` is splice's copy of ``original`` (with additions)."""
    key = id(stand_in)

    def forget(_: object) -> None:
        with _lock:
            entry = _originals.get(key)
            if entry is not None and entry[0]() is None:
                del _originals[key]
    with _lock:
        _originals[key] = (weakref.ref(stand_in, forget), original)


def original_of(code: types.CodeType) -> types.CodeType:
    """The code ``code`` stands for, or ``code`` itself."""
    entry = _originals.get(id(code))
    if entry is not None and entry[0]() is code:
        return original_of(entry[1])
    return code
