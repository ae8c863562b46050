"""Callables and classes as dictionary keys, and sets of classes, without running the
program's code.

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

Classes are the same case one level up: hashing a class calls its metaclass's
``__hash__``, and a metaclass that defines ``__eq__`` alone makes its classes unhashable.
CPython hashes a class only where the program puts it in a set or dict; splice tests the
class of almost every object it routes against sets of builtin types and keys tables by
class (attribute lookups, code instances by argument classes). So:

* :class:`ClassSet` is the set of classes splice tests membership in: by identity, never
  calling the metaclass (a C type, ``splice/_classes.c``, whose ``in`` costs no frame;
  the Python form below when it is not built);
* :func:`keyable_class` says whether a class may key a dict or set: its metaclass keeps
  ``type``'s own hash and equality (true of ``type``, ``ABCMeta``, ``EnumType``...). A
  table keyed by class takes another path for the rare class that is not: uncached, or
  not specialised.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["IDENTITY_HASHES", "ClassSet", "get_hashed", "hashed_by_identity", "keyable_class",
           "keyable_classes"]

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


_TYPE_HASH = type.__hash__
_TYPE_EQ = type.__eq__


def keyable_class(cls: type) -> bool:
    """Whether ``cls`` can key a dict or set without running code of the program's: its
    metaclass hashes and compares it as ``type`` does (by identity)."""
    meta = type(cls)
    return meta is type or (meta.__hash__ is _TYPE_HASH and meta.__eq__ is _TYPE_EQ)


def keyable_classes(classes: tuple[type, ...]) -> bool:
    """Whether a tuple of classes can key a dict (see :func:`keyable_class`)."""
    return all(type(cls) is type or keyable_class(cls) for cls in classes)


class _PythonClassSet:
    """The pure-Python form of ``splice._classes.ClassSet``: an immutable set of classes
    tested by identity. It holds its classes, so the address of one cannot be reused
    while the set lives and ``id`` identifies it."""

    __slots__ = ("_classes", "_ids")

    def __init__(self, classes: Any = ()) -> None:
        unique: dict[int, type] = {}
        for cls in classes:
            if not isinstance(cls, type):
                raise TypeError(f"ClassSet holds classes only, not {cls!r} "
                                f"(of class {type(cls).__name__})")
            unique.setdefault(id(cls), cls)
        self._classes: tuple[type, ...] = tuple(unique.values())
        self._ids = frozenset(unique)

    def __contains__(self, cls: object) -> bool:
        return id(cls) in self._ids

    def __iter__(self) -> Any:
        return iter(self._classes)

    def __len__(self) -> int:
        return len(self._classes)

    def __or__(self, other: Any) -> Any:
        return _PythonClassSet((*self._classes, *other))

    def __ror__(self, other: Any) -> Any:
        return _PythonClassSet((*other, *self._classes))

    def __repr__(self) -> str:
        return f"ClassSet({self._classes!r})" if self._classes else "ClassSet()"

    def __splice_persist__(self) -> tuple[tuple[type, ...]]:
        return (self._classes,)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._classes,))


if TYPE_CHECKING:
    ClassSet = _PythonClassSet
else:
    try:
        from splice._classes import ClassSet
    except ImportError:  # built without a compiler
        ClassSet = _PythonClassSet
