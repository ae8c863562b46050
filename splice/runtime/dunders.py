"""Finding dunders as CPython finds them, and calling the Python ones under a context.

CPython looks special methods and descriptors up on the type (``_PyType_Lookup``: the
``__dict__`` of each class of the MRO, no descriptor of the metaclass involved) and calls a
Python function found there directly. ``Dunders`` does the same with the function entered
through the context's dispatch table, so hooks see the call and its body runs transformed;
what is not a Python function is called as CPython calls it.
"""

from __future__ import annotations

import builtins
import functools
import types
from collections.abc import Callable, Generator, Mapping
from typing import Any

from splice.keys import ClassSet
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

_FunctionType = types.FunctionType
_partial = functools.partial

#: what no lookup returns (``None`` is a legitimate class attribute)
MISSING: Any = object()

#: builtin types whose operators and protocols run no Python code: operations on them are
#: compiled to the native operation behind a type check
NATIVE_TYPES: ClassSet = ClassSet({
    int, float, complex, bool, str, bytes, bytearray, tuple, list, dict, set, frozenset,
    type(None), range, slice, memoryview,
})

# the raw getters of ``type``'s own data descriptors (a metaclass could shadow them; with
# ``type`` itself as the metaclass, plain attribute access is the same and faster)
type_dict = type.__dict__["__dict__"].__get__
type_mro = type.__dict__["__mro__"].__get__
type_flags = type.__dict__["__flags__"].__get__
_type_name = type.__dict__["__name__"].__get__
_type_module = type.__dict__["__module__"].__get__
#: ``Py_TPFLAGS_IMMUTABLETYPE``: the type's ``__dict__`` and ``__bases__`` cannot change
IMMUTABLE_TYPE = 1 << 8
HEAP_TYPE = 1 << 9


def _frozen_namespaces() -> dict[type, dict[str, Any]]:
    """Copies of the ``__dict__`` of the builtin types (immutable: they never change), read
    as plain dicts by the lookups below instead of a new mappingproxy each time."""
    kinds = {kind for module in (builtins, types) for kind in vars(module).values()
             if isinstance(kind, type)}
    kinds.update({object, type, type(None), type(NotImplemented), type(Ellipsis)})
    return {kind: dict(type_dict(kind)) for kind in kinds
            if type_flags(kind) & IMMUTABLE_TYPE}


#: builtin type -> a copy of its ``__dict__`` (see ``_frozen_namespaces``)
FROZEN: dict[type, dict[str, Any]] = _frozen_namespaces()


def frozen_namespace(kind: type) -> dict[str, Any] | None:
    """``FROZEN``'s copy of ``kind``'s ``__dict__`` (None for a type not in it). Builtin
    types are instances of ``type`` itself: a class whose metaclass defines ``__eq__``
    without ``__hash__`` cannot be hashed, so it is not looked up."""
    return FROZEN.get(kind) if type(kind) is type else None


def mro_of(kind: type) -> tuple[type, ...]:
    """``kind.__mro__`` as CPython's lookups see it (a metaclass cannot redefine it)."""
    return kind.__mro__ if type(kind) is type else type_mro(kind)


def find(kind: type, name: str) -> Any:
    """``name`` found on ``kind``'s MRO without any descriptor call (``MISSING`` if absent),
    as ``_PyType_Lookup``."""
    for klass in kind.__mro__ if type(kind) is type else type_mro(kind):
        namespace: Mapping[str, Any] | None = frozen_namespace(klass)
        if namespace is None:
            namespace = klass.__dict__ if type(klass) is type else type_dict(klass)
        if name in namespace:
            return namespace[name]
    return MISSING


def find3(kind: type, first: str, second: str, third: str) -> tuple[Any, Any, Any]:
    """``find`` for three names at once, in one walk of the MRO."""
    one = two = three = MISSING
    for klass in kind.__mro__ if type(kind) is type else type_mro(kind):
        namespace: Mapping[str, Any] | None = frozen_namespace(klass)
        if namespace is None:
            namespace = klass.__dict__ if type(klass) is type else type_dict(klass)
        if one is MISSING and first in namespace:
            one = namespace[first]
        if two is MISSING and second in namespace:
            two = namespace[second]
        if three is MISSING and third in namespace:
            three = namespace[third]
    return one, two, three


def special(kind: type, name: str) -> Any:
    """``name`` found on ``kind``'s MRO, as CPython looks up special methods (or None)."""
    found = find(kind, name)
    return None if found is MISSING else found


def immutable(kind: type) -> bool:
    """Whether nothing can change what is found on ``kind`` (a builtin or C extension type,
    whose bases are immutable too): lookups on it may be cached."""
    return frozen_namespace(kind) is not None or bool(type_flags(kind) & IMMUTABLE_TYPE)


def type_name(kind: type, limit: int) -> str:
    """``kind``'s ``tp_name`` as CPython formats it into messages with ``%.<limit>s``
    (builtin and C types carry their module in it, heap types do not)."""
    name: str = _type_name(kind)
    if not type_flags(kind) & HEAP_TYPE:
        module = _type_module(kind)
        if module != "builtins":
            name = f"{module}.{name}"
    return name.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "replace")


#: a protocol's generator: it yields steps ``(fn, *args)``, is sent each step's result and
#: returns the operation's result (see ``drive``)
Steps = Generator[tuple[Any, ...], Any, Any]


def _drive_in_python(plan: Callable[..., Steps]) -> Callable[..., Any]:
    """``drive`` without the C driver (splice built without a compiler): the same steps,
    run from a Python frame of splice's."""
    def driven(*args: Any, **kwargs: Any) -> Any:
        steps = plan(*args, **kwargs)
        try:
            step = next(steps)
            while True:
                try:
                    result = step[0](*step[1:])
                except BaseException as exc:  # noqa: BLE001 - the protocol decides
                    step = steps.throw(exc)
                else:
                    step = steps.send(result)
        except StopIteration as stop:
            return stop.value
    return driven


drive: Callable[[Callable[..., Steps]], Callable[..., Any]]
try:
    from splice.runtime._hooks import Driven as drive
except ImportError:  # built without a compiler
    drive = _drive_in_python


class Dunders:
    """Calls of dunders found on a type, Python functions entered through ``table``."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def _bound(self, method: Any, obj: Any) -> Any:
        """``method`` (found on ``type(obj)``) bound to ``obj`` as a special-method lookup
        binds it; a Python function is entered under the context."""
        if type(method) is _FunctionType:
            return _partial(self.table[method], obj)
        if obj is None:
            # NoneType's methods are C descriptors, and ``__get__(None, ...)`` would give
            # back the unbound descriptor: pass None as their first argument
            return _partial(method, obj)
        get = getattr(type(method), "__get__", None)
        return get(method, obj, type(obj)) if get is not None else method

    def _step(self, method: Any, obj: Any, *args: Any) -> tuple[Any, ...]:
        """The protocol step (see ``drive``) calling ``method`` (found on ``type(obj)``) for
        ``obj``, bound as CPython binds special methods."""
        if type(method) is _FunctionType:
            return (self.table[method], obj, *args)  # the common case, without a partial
        return (self._bound(method, obj), *args)

    def _call_step(self, function: Any, *args: Any) -> tuple[Any, ...]:
        """The protocol step of a plain call CPython makes from C: a Python function
        entered, anything else as it is."""
        if type(function) is _FunctionType:
            return (self.table[function], *args)
        return (function, *args)

