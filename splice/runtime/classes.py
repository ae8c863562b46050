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
  a property, named like the value's type so that ``type.__new__``'s error message names
  it the same, and puts a restoring value (``_Restore``) under another hidden key just
  before the first stand-in;
* ``type.__new__`` calls the ``__set_name__`` of the restoring value first: it puts every
  real value back, in the new class (same keys, so the same ``__dict__`` order) and in the
  namespace, and removes its own key from both, before any real ``__set_name__`` and
  ``__init_subclass__`` runs; then, in namespace order between the C ones as it would the
  real ones, it looks up each stand-in's ``__set_name__``, which gives the real one bound
  and entered under the context, and calls that. No frame of splice's is on the stack
  while a real ``__set_name__`` runs, so none is in the traceback of an error it raises
  (from 3.12 the error propagates unwrapped, with a note: ``splice.compat``).

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

from splice.pristine import BUILTINS
from splice.runtime.dunders import MISSING, Dunders, find, type_name

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

_FunctionType = types.FunctionType
_TYPE_SETATTR = type.__dict__["__setattr__"]
_TYPE_DELATTR = type.__dict__["__delattr__"]
#: the namespace key (not an identifier) holding the note while the class body runs
NOTE_KEY = "@set_names"
#: the namespace key (not an identifier) of the value putting the real values back
RESTORE_KEY = "@restore_names"


class _NameSetter:
    """Base of the stand-ins: ``__set_name__`` is a property, so ``type.__new__``'s lookup
    (``_PyObject_LookupSpecial``, right before the call) calls the partial stored in
    ``hook``, which gives what to call: the real ``__set_name__`` bound to the real value,
    entered. splice's frames end with the lookup, so none is in the traceback of an error the
    real one raises (from 3.12 it propagates unwrapped, with a note)."""

    __slots__ = ("hook",)
    hook: Any
    __set_name__ = property(operator.methodcaller("hook"))


class _Restore:
    """Put back the values one class statement's stand-ins replaced: the value of the hidden
    key ``RESTORE_KEY``, placed just before the first stand-in, whose ``__set_name__``
    ``type.__new__`` calls before theirs. It puts every real value back in the new class
    and in the namespace, and removes itself from both; its frame ends before any real
    ``__set_name__`` runs."""

    __slots__ = ("namespace", "replaced")

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.replaced: list[tuple[str, Any]] = []

    def __set_name__(self, owner: type, name: str) -> None:
        namespace = self.namespace
        for key, real in self.replaced:
            namespace[key] = real
            _TYPE_SETATTR(owner, key, real)
        namespace.pop(name, None)
        _TYPE_DELATTR(owner, name)


def _ignore(owner: type, name: Any) -> None:
    """The ``__set_name__`` of a value whose type lost its own since the class body."""


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
        items = list(namespace.items())
        for index, (key, value) in enumerate(items):
            if type(key) is not str or (key[:2] == "__" and key[-2:] == "__"):
                continue  # type.__new__ reads dunders itself (__slots__, __doc__, ...)
            if type(find(type(value), "__set_name__")) is not _FunctionType:
                continue
            if not replaced:
                # the restoring value just before the first stand-in (the keys after it
                # inserted again, in their order)
                for later, _ in items[index:]:
                    del namespace[later]
                namespace[RESTORE_KEY] = restore
                namespace.update(items[index:])
            stand_in = self._stand_in_class(type(value))()
            stand_in.hook = functools.partial(self._set_name, value)
            replaced.append((key, value))
            namespace[key] = stand_in

    def _stand_in_class(self, kind: type) -> type:
        name = type_name(kind, 1 << 16)
        found = self._stand_ins.get(name)
        if found is None:
            found = self._stand_ins[name] = type(name, (_NameSetter,), {"__slots__": ()})
        return found

    def _set_name(self, value: Any) -> Any:
        """The lookup of a stand-in's ``__set_name__``: the real value's, bound to it and
        entered (the real values are back already: see ``_Restore``)."""
        method = find(type(value), "__set_name__")
        if method is MISSING:
            return _ignore
        return self._bound(method, value)
