"""Callables as dictionary keys without running the program's code.

CPython never hashes a callable to call it. splice keeps tables keyed by callee (the
dispatch table, intercepts, overlays), so looking a callee up there must not run code the
program would not run: a callable object's ``__hash__`` written in Python (and the
``__eq__`` a hash collision would call) would run under the plugin where it never runs
natively, with whatever side effects it has, and an unhashable one would raise.

A callee whose class hashes it by identity (``object``'s hash, which functions, classes
and ``functools.partial`` inherit, and the bound-method kinds, which hash their
``__self__`` by identity) is looked up by hash; any other is matched by identity, by
scanning. The scan is linear, so it is for small tables or for the rare callee that
defines its own hash: no table splice keys by callee is meant to hold such keys often.
"""

from __future__ import annotations

import types
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["IDENTITY_HASHES", "get_hashed", "hashed_by_identity"]

#: the ``__hash__`` of the kinds whose hash runs no Python code and depends on identity
IDENTITY_HASHES = frozenset({object.__hash__, types.BuiltinFunctionType.__hash__,
                             types.MethodType.__hash__, types.MethodWrapperType.__hash__})


def hashed_by_identity(key: Any) -> bool:
    """Whether hashing ``key`` runs no Python code (its class keeps an identity hash)."""
    return type(key).__hash__ in IDENTITY_HASHES


def get_hashed(table: dict[Any, Any], key: Any) -> Any:
    """``table.get(key)`` without calling a ``__hash__`` or ``__eq__`` of the program's: a
    key whose class defines its own (or is unhashable) is matched by identity."""
    if hashed_by_identity(key):
        return table.get(key)
    for held, value in table.items():
        if held is key:
            return value
    return None
