"""Class statements under a context: ``__set_name__`` entered through the dispatch table.

``type.__new__`` calls ``__set_name__`` on the values of the new class's namespace from C.
For a class statement that ``type`` itself makes (no ``metaclass=``, every base a class
whose metaclass is ``type``), splice gets those calls back without changing the class or
any global state:

* ``bases(qualname, *bases)`` is evaluated as the statement's positional bases (it returns
  them) and notes, for this thread, whether ``type`` will make the class; nothing runs
  between it and the class body (splice applies it only where the keywords are names or
  constants, and no base needs ``__mro_entries__``), whose first statement
  ``body_begins(locals())`` takes the note into the namespace under a hidden key;
* the body's last statement ``body_ends(locals())`` drops that key and replaces each value
  whose ``__set_name__`` is a Python function with a stand-in whose own ``__set_name__`` is
  C code (a property reading the stand-in's slot), named like the value's type so that
  ``type.__new__``'s error message names it the same;
* ``type.__new__`` calls the stand-ins' ``__set_name__`` in namespace order, between the
  C ones, as it would the real ones; the first call puts every real value back, in the new
  class (same keys, so the same ``__dict__`` order) and in the namespace, before any
  ``__set_name__`` and ``__init_subclass__`` runs; each then calls the real one entered
  under the context.

``__init_subclass__`` stays native: ``type.__new__`` calls it on the new class's MRO through
``super()``, and diverting that call would mean changing the class's bases or metaclass, or
the parent's ``__init_subclass__``, which other threads see.
"""

from __future__ import annotations

import functools
import operator
import threading
import types
from typing import Any

from splice.runtime.dunders import MISSING, Dunders, find, type_name

_FunctionType = types.FunctionType
_TYPE_SETATTR = type.__dict__["__setattr__"]
#: the namespace key (not an identifier) holding the note while the class body runs
NOTE_KEY = "@set_names"


class _NameSetter:
    """Base of the stand-ins: ``__set_name__`` is a property, so ``type.__new__``'s lookup
    gives the partial stored in ``hook`` and calls it (C code all the way to splice)."""

    __slots__ = ("hook",)
    hook: Any
    __set_name__ = property(operator.attrgetter("hook"))


class _Restore:
    """The values one class statement's stand-ins replaced, until they are put back."""

    __slots__ = ("namespace", "replaced")

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.replaced: list[tuple[str, Any]] | None = []


class ClassCreation(Dunders):
    """The class-statement protocol of one context."""

    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self._pending = threading.local()
        self._stand_ins: dict[str, type] = {}

    def bases(self, qualname: str, *bases: Any) -> tuple[Any, ...]:
        """A class statement's positional bases (returned as they are), noting whether
        ``type`` will make the class."""
        self._pending.note = (qualname, all(type(base) is type for base in bases))
        return bases

    def body_begins(self, namespace: Any) -> None:
        """First statement of the class body: take this statement's note."""
        note = getattr(self._pending, "note", None)
        self._pending.note = None
        if note is not None and note[1] and type(namespace) is dict and \
                namespace.get("__qualname__") == note[0]:
            namespace[NOTE_KEY] = True

    def body_ends(self, namespace: Any) -> None:
        """Last statement of the class body: stand-ins for the values whose
        ``__set_name__`` is Python code."""
        if type(namespace) is not dict or namespace.pop(NOTE_KEY, None) is not True:
            return
        restore = _Restore(namespace)
        replaced = restore.replaced
        assert replaced is not None
        for key, value in list(namespace.items()):
            if type(key) is not str or (key[:2] == "__" and key[-2:] == "__"):
                continue  # type.__new__ reads dunders itself (__slots__, __doc__, ...)
            if type(find(type(value), "__set_name__")) is not _FunctionType:
                continue
            stand_in = self._stand_in_class(type(value))()
            stand_in.hook = functools.partial(self._set_name, restore, value)
            replaced.append((key, value))
            namespace[key] = stand_in

    def _stand_in_class(self, kind: type) -> type:
        name = type_name(kind, 1 << 16)
        found = self._stand_ins.get(name)
        if found is None:
            found = self._stand_ins[name] = type(name, (_NameSetter,), {"__slots__": ()})
        return found

    def _set_name(self, restore: _Restore, value: Any, owner: type, name: Any) -> Any:
        """A stand-in's ``__set_name__(owner, name)``: the real values back (once), then the
        real value's ``__set_name__``, entered."""
        replaced = restore.replaced
        if replaced is not None:
            restore.replaced = None
            for key, real in replaced:
                restore.namespace[key] = real
                _TYPE_SETATTR(owner, key, real)
        method = find(type(value), "__set_name__")
        if method is MISSING:
            return None
        return self._invoke(method, value, owner, name)
