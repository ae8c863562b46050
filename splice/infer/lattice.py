"""The lattice of abstract values that inference computes for every IR value.

An ``Abstract`` describes a set of Python objects. The kinds, from precise to vague:

* ``NEVER`` — no value at all: the code never produces one (it raises or loops forever).
* ``Const(v)`` — exactly the object ``v`` (simple immutable values by type and value; other
  objects — functions, classes, modules, builtins — by identity). Known callables are constants.
* ``PartialTuple(items)`` — a tuple of ``len(items)`` elements, each described by its item.
* ``Method(func, self)`` — a bound method object of the Python function ``func`` on a receiver.
* ``Exact(cls)`` — any object whose class is exactly ``cls``.
* ``Sub(cls)`` — any instance of ``cls`` or of a subclass (what a stub's return type promises).
* ``Union(members)`` — any of a few of the above (made by :func:`join`, bounded in width).
* ``ANY`` — any object.

Abstract values are immutable and hashable, and hashing one never runs the program's code:
a class whose metaclass defines its own ``__hash__`` or ``__eq__`` (``splice.keys.
keyable_class``), and the instances of such a class, are never held by a value. ``Const``,
``Exact``, ``Sub``, ``Elements`` and ``Alloc`` of one give ``ANY`` instead (sound: ``ANY``
admits it), so neither this lattice nor the tables inference keys by class ever hash one.
``a <= b`` says every value of ``a`` is a value of ``b``; :func:`join` is an upper bound,
:func:`meet` an upper bound of the intersection (exact except for two unrelated ``Sub``
classes, where multiple inheritance could meet).
``a.accepts(v)`` tests a run-time object, as argument checks and the soundness oracle do.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from splice.keys import ClassSet, keyable_class
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

#: the widest union ``join`` builds before it widens (``InferenceParams.union_width``)
DEFAULT_UNION_WIDTH = 4

#: types whose values are constants by value (immutable, compared by type and value)
_VALUE_TYPES: ClassSet = ClassSet(
    {type(None), bool, int, float, complex, str, bytes, type(Ellipsis), type(NotImplemented)})


def _holdable(value: object) -> bool:
    """Whether an abstract value may hold ``value``: hashing neither it (a class) nor its
    class runs a metaclass's code (see the module docstring)."""
    kind = type(value)
    if kind is type:
        return True  # a class of the default metaclass
    if type(kind) is not type and not keyable_class(kind):
        return False
    return not issubclass(kind, type) or keyable_class(value)  # type: ignore[arg-type]


def _holdable_class(cls: type) -> bool:
    return type(cls) is type or keyable_class(cls)


class Abstract:
    """An abstract value: a set of Python objects (see the module docstring for the kinds)."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> Abstract:
        # immutable: a copy of IR shares its annotations (which may hold modules, code
        # objects and namespaces, none of which can be copied)
        return self

    # --- queries -------------------------------------------------------------------------

    def accepts(self, value: object) -> bool:
        """True when the run-time object ``value`` belongs to this abstract value."""
        raise NotImplementedError

    @property
    def exact_class(self) -> type | None:
        """The class of every value, when it is known exactly; else ``None``."""
        return None

    @property
    def is_const(self) -> bool:
        """True for a single known object (``value`` gives it)."""
        return False

    @property
    def value(self) -> Any:
        """The object of a constant (``ValueError`` for other kinds)."""
        raise ValueError(f"{self} is not a constant")

    def members(self) -> tuple[Abstract, ...]:
        """The union members (a one-tuple of itself for other kinds, empty for NEVER)."""
        return (self,)

    def widen(self) -> Abstract:
        """The next vaguer description: constants become their class, and so on."""
        result = self._widen()
        report = LOST_SITE_HOOK.get()
        if report is not None:
            _report_lost(report, self, result)
        return result

    def _widen(self) -> Abstract:
        return ANY

    # --- ordering ------------------------------------------------------------------------

    def __le__(self, other: object) -> bool:
        if isinstance(other, type) or _is_typing_form(other):
            other = abstract(other)
        if not isinstance(other, Abstract):
            return NotImplemented
        return _leq(self, other)

    def __ge__(self, other: object) -> bool:
        if isinstance(other, type) or _is_typing_form(other):
            other = abstract(other)
        if not isinstance(other, Abstract):
            return NotImplemented
        return _leq(other, self)

    def __lt__(self, other: object) -> bool:
        return self <= other and self != other

    def __or__(self, other: Abstract) -> Abstract:
        return join(self, other)

    def __and__(self, other: Abstract) -> Abstract:
        return meet(self, other)


class _Top(Abstract):
    __slots__ = ()

    def accepts(self, value: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "Any"

    def __reduce__(self) -> str:
        return "ANY"


class _Bottom(Abstract):
    __slots__ = ()

    def accepts(self, value: object) -> bool:
        return False

    def members(self) -> tuple[Abstract, ...]:
        return ()

    def _widen(self) -> Abstract:
        return self

    def __repr__(self) -> str:
        return "Never"

    def __reduce__(self) -> str:
        return "NEVER"


#: any object (top)
ANY: Abstract = _Top()
#: no value: the code never returns (bottom)
NEVER: Abstract = _Bottom()


def _const_key(value: object) -> tuple[Any, ...]:
    cls = type(value)
    if cls in _VALUE_TYPES:
        if cls is float:  # -0.0 == 0.0 and nan != nan: compare by representation
            return (cls, float.hex(value))  # type: ignore[arg-type]
        if cls is complex:
            return (cls, repr(value))
        return (cls, value)
    if cls is tuple and all(type(v) in _VALUE_TYPES or type(v) is tuple for v in value):  # type: ignore[attr-defined]
        return (cls, tuple(_const_key(v) for v in value))  # type: ignore[attr-defined]
    if cls is frozenset and all(type(v) in _VALUE_TYPES for v in value):  # type: ignore[attr-defined]
        return (cls, frozenset(_const_key(v) for v in value))  # type: ignore[attr-defined]
    return (cls, "id", id(value))


def is_value_constant(value: object) -> bool:
    """True when ``value`` is compared by value as a constant (numbers, strings, tuples
    of those...), rather than by identity."""
    return _const_key(value)[1:2] != ("id",)


class Const(Abstract):
    """Exactly one object. Known callables (functions, classes, builtins, modules) are
    constants compared by identity; numbers, strings and tuples of those by type and value."""

    __slots__ = ("_value", "_key")

    def __new__(cls, value: object) -> Any:
        return super().__new__(cls) if _holdable(value) else ANY

    def __init__(self, value: object) -> None:
        self._value = value
        self._key = _const_key(value)

    @property
    def value(self) -> Any:
        return self._value

    @property
    def is_const(self) -> bool:
        return True

    @property
    def exact_class(self) -> type | None:
        return type(self._value)

    def accepts(self, value: object) -> bool:
        if value is self._value:
            return True
        if type(value) is not type(self._value) or self._key[1:2] == ("id",):
            return False
        try:
            return _const_key(value) == self._key
        except Exception:
            return False

    def _widen(self) -> Abstract:
        if type(self._value) is tuple:
            return PartialTuple(tuple(Const(v) for v in self._value))
        return Exact(type(self._value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and other._key == self._key

    def __hash__(self) -> int:
        return hash(("const", self._key))

    def __repr__(self) -> str:
        value = self._value
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
            return f"Const({getattr(value, '__qualname__', value)})"
        if isinstance(value, types.ModuleType):
            return f"Const(module {value.__name__})"
        text = repr(value)
        return f"Const({text if len(text) <= 40 else text[:37] + '...'})"


class Exact(Abstract):
    """Any object whose class is exactly ``cls``."""

    __slots__ = ("cls",)

    def __new__(cls_, cls: type) -> Any:  # noqa: N804 - ``cls`` is the field's name
        return super().__new__(cls_) if _holdable_class(cls) else ANY

    def __init__(self, cls: type) -> None:
        self.cls = cls

    @property
    def exact_class(self) -> type | None:
        return self.cls

    def accepts(self, value: object) -> bool:
        return type(value) is self.cls

    def _widen(self) -> Abstract:
        return ANY

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Exact) and other.cls is self.cls

    def __hash__(self) -> int:
        return hash(("exact", self.cls))

    def __repr__(self) -> str:
        return _class_name(self.cls)


class Sub(Abstract):
    """Any instance of ``cls``, subclasses included."""

    __slots__ = ("cls",)

    def __new__(cls_, cls: type) -> Any:  # noqa: N804 - ``cls`` is the field's name
        return super().__new__(cls_) if _holdable_class(cls) else ANY

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def accepts(self, value: object) -> bool:
        return isinstance(value, self.cls)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sub) and other.cls is self.cls

    def __hash__(self) -> int:
        return hash(("sub", self.cls))

    def __repr__(self) -> str:
        return f"<:{_class_name(self.cls)}"


class PartialTuple(Abstract):
    """A tuple of known length whose items are described one by one."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Abstract]) -> None:
        self.items: tuple[Abstract, ...] = tuple(items)

    @property
    def exact_class(self) -> type | None:
        return tuple

    def accepts(self, value: object) -> bool:
        if type(value) is not tuple or len(value) != len(self.items):
            return False
        return all(a.accepts(v) for a, v in zip(self.items, value, strict=True))

    def _widen(self) -> Abstract:
        return Exact(tuple)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartialTuple) and other.items == self.items

    def __hash__(self) -> int:
        return hash(("tuple", self.items))

    def __repr__(self) -> str:
        inner = ", ".join(map(str, self.items))
        return f"tuple[{inner}{',' if len(self.items) == 1 else ''}]"


class Elements(Abstract):
    """An object of exactly class ``cls`` (an iterator, ``range``, a generator...) whose
    iteration yields values of ``elem``. ``accepts`` checks the class only: the items are
    checked where iteration produces them."""

    __slots__ = ("cls", "elem")

    def __new__(cls_, cls: type, elem: Abstract) -> Any:  # noqa: N804 - ``cls`` is the field's name
        return super().__new__(cls_) if _holdable_class(cls) else ANY

    def __init__(self, cls: type, elem: Abstract) -> None:
        self.cls = cls
        self.elem = elem

    @property
    def exact_class(self) -> type | None:
        return self.cls

    def accepts(self, value: object) -> bool:
        return type(value) is self.cls

    def _widen(self) -> Abstract:
        return Exact(self.cls)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Elements) and other.cls is self.cls and other.elem == self.elem

    def __hash__(self) -> int:
        return hash(("elements", self.cls, self.elem))

    def __repr__(self) -> str:
        return f"{_class_name(self.cls)}[{self.elem}]"


#: called with each ``Alloc`` whose sites a join or widening forgets: the ``escape`` of the
#: inference running in this thread (or task), which sets it for the time of its run, as
#: such containers escape its tracking; ``None`` when none runs. A context variable, so
#: that an inference hears of its own joins only, never of another thread's nor of an
#: inference nested in it (whose sites are not its own).
LOST_SITE_HOOK: ContextVar[Callable[[Alloc], None] | None] = ContextVar(
    "splice_lost_site_hook", default=None)


def allocs(value: Abstract) -> set[tuple[type, Any]]:
    """The (class, site) pairs of every ``Alloc`` inside ``value`` (tuples, iterators,
    methods, unions included)."""
    found: set[tuple[type, Any]] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, Alloc):
            found.update((v.cls, site) for site in v.sites)
        elif isinstance(v, PartialTuple):
            todo.extend(v.items)
        elif isinstance(v, Union):
            todo.extend(v.members())
        elif isinstance(v, Elements):
            todo.append(v.elem)
        elif isinstance(v, (Method, SuperOf)):
            todo.append(v.receiver)
    return found


def _report_lost(report: Callable[[Alloc], None], before: Abstract, *after: Abstract
                 ) -> None:
    if isinstance(before, (Exact, Const, Sub, _Top, _Bottom)):
        return
    kept: set[tuple[type, Any]] = set()
    for a in after:
        kept |= allocs(a)
    lost = allocs(before) - kept
    for cls, site in lost:
        report(Alloc(cls, (site,)))


class Alloc(Abstract):
    """A mutable container of exactly class ``cls`` (list, set) created at one of
    ``sites`` (allocation sites). What the containers hold is a per-site summary kept by the
    interpreter, joined over every store it sees; ``accepts`` checks the class."""

    __slots__ = ("cls", "sites")

    def __new__(cls_, cls: type, sites: Iterable[Any]) -> Any:  # noqa: N804 - ``cls`` is the field's name
        return super().__new__(cls_) if _holdable_class(cls) else ANY

    def __init__(self, cls: type, sites: Iterable[Any]) -> None:
        self.cls = cls
        self.sites: frozenset[Any] = frozenset(sites)

    @property
    def exact_class(self) -> type | None:
        return self.cls

    def accepts(self, value: object) -> bool:
        return type(value) is self.cls

    def _widen(self) -> Abstract:
        return ANY

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Alloc) and other.cls is self.cls and other.sites == self.sites

    def __hash__(self) -> int:
        return hash(("alloc", self.cls, self.sites))

    def __repr__(self) -> str:
        return f"{_class_name(self.cls)}@{len(self.sites)}"


class SuperOf(Abstract):
    """The object ``super()`` makes in a method of ``thisclass`` called on ``receiver``."""

    __slots__ = ("thisclass", "receiver")

    def __init__(self, thisclass: type, receiver: Abstract) -> None:
        self.thisclass = thisclass
        self.receiver = receiver

    @property
    def exact_class(self) -> type | None:
        return super

    def accepts(self, value: object) -> bool:
        return (type(value) is super
                and getattr(value, "__thisclass__", None) is self.thisclass
                and self.receiver.accepts(getattr(value, "__self__", None)))

    def _widen(self) -> Abstract:
        return Exact(super)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SuperOf) and other.thisclass is self.thisclass
                and other.receiver == self.receiver)

    def __hash__(self) -> int:
        return hash(("super", self.thisclass, self.receiver))

    def __repr__(self) -> str:
        return f"super[{_class_name(self.thisclass)}, {self.receiver}]"


class Method(Abstract):
    """A bound method object: the Python function ``func`` bound to a receiver ``self``."""

    __slots__ = ("func", "receiver")

    def __init__(self, func: Any, receiver: Abstract) -> None:
        self.func = func
        self.receiver = receiver

    @property
    def exact_class(self) -> type | None:
        if isinstance(self.func, types.FunctionType):
            return types.MethodType
        if isinstance(self.func, types.WrapperDescriptorType):
            return types.MethodWrapperType  # a slot wrapper bound (``object.__init__``)
        return types.BuiltinMethodType

    def accepts(self, value: object) -> bool:
        if isinstance(self.func, types.FunctionType):
            return (type(value) is types.MethodType and value.__func__ is self.func
                    and self.receiver.accepts(value.__self__))
        return (type(value) is self.exact_class
                and getattr(value, "__name__", None) == getattr(self.func, "__name__", "")
                and self.receiver.accepts(getattr(value, "__self__", None)))

    def _widen(self) -> Abstract:
        cls = self.exact_class
        return Exact(cls) if cls is not None else ANY

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Method) and other.func is self.func
                and other.receiver == self.receiver)

    def __hash__(self) -> int:
        return hash(("method", id(self.func), self.receiver))

    def __repr__(self) -> str:
        return f"method[{getattr(self.func, '__qualname__', self.func)}, {self.receiver}]"


class MadeFunction(Abstract):
    """A function a ``def`` or ``lambda`` made while the program ran (a local function, a
    closure): its code object and globals are known, what its cells hold is not; its
    defaults had the abstract values ``defaults`` (positional) and ``kwdefaults``
    (``(name, value)`` pairs) when it was made."""

    __slots__ = ("code", "globals", "defaults", "kwdefaults")

    def __init__(self, code: types.CodeType, globals_: dict[str, Any],
                 defaults: Iterable[Abstract] = (),
                 kwdefaults: Iterable[tuple[str, Abstract]] = ()) -> None:
        self.code = code
        self.globals = globals_
        self.defaults = tuple(defaults)
        self.kwdefaults = tuple(kwdefaults)

    @property
    def exact_class(self) -> type | None:
        return types.FunctionType

    def accepts(self, value: object) -> bool:
        if type(value) is not types.FunctionType or value.__globals__ is not self.globals:
            return False
        code = value.__code__
        # the same ``def``: this code object, or another compiled from the same source
        # (inference lowers the source; splice's rebuilt copies of a function make their
        # nested functions from regenerated code objects)
        if code is not self.code and (code.co_filename, code.co_qualname,
                                      code.co_firstlineno) != _origin(self.code):
            return False
        defaults = value.__defaults__ or ()
        kwdefaults = value.__kwdefaults__ or {}
        return (len(defaults) == len(self.defaults)
                and all(a.accepts(v) for a, v in zip(self.defaults, defaults, strict=True))
                and all(name in kwdefaults and a.accepts(kwdefaults[name])
                        for name, a in self.kwdefaults))

    def _widen(self) -> Abstract:
        return Exact(types.FunctionType)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, MadeFunction) and other.code is self.code
                and other.globals is self.globals and other.defaults == self.defaults
                and other.kwdefaults == self.kwdefaults)

    def __hash__(self) -> int:
        return hash(("made", id(self.code), id(self.globals), self.defaults, self.kwdefaults))

    def __repr__(self) -> str:
        return f"function[{self.code.co_qualname}]"


def _origin(code: types.CodeType) -> tuple[str, str, int]:
    return code.co_filename, code.co_qualname, code.co_firstlineno


class Union(Abstract):
    """Any of ``members`` (two or more, none of which contains another)."""

    __slots__ = ("_members",)

    def __init__(self, members: Iterable[Abstract]) -> None:
        self._members: frozenset[Abstract] = frozenset(members)

    def members(self) -> tuple[Abstract, ...]:
        return tuple(sorted(self._members, key=str))

    @property
    def exact_class(self) -> type | None:
        classes = {m.exact_class for m in self._members}
        if len(classes) == 1:
            return classes.pop()
        return None

    def accepts(self, value: object) -> bool:
        return any(m.accepts(value) for m in self._members)

    def _widen(self) -> Abstract:
        return _union([m.widen() for m in self._members], DEFAULT_UNION_WIDTH)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Union) and other._members == self._members

    def __hash__(self) -> int:
        return hash(("union", self._members))

    def __repr__(self) -> str:
        return " | ".join(map(str, self.members()))


def _class_name(cls: type) -> str:
    if cls is type(None):
        return "None"
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


# ------------------------------------------------------------------------------- ordering


def _leq(a: Abstract, b: Abstract) -> bool:
    if a is b or a is NEVER or b is ANY:
        return True
    if a is ANY or b is NEVER:
        return False
    if a == b:
        return True
    if isinstance(a, Union):
        return all(_leq(m, b) for m in a._members)
    if isinstance(b, Union):
        return any(_leq(a, m) for m in b._members)
    if isinstance(b, Const):
        return a == b
    if isinstance(b, Exact):
        return a.exact_class is b.cls
    if isinstance(b, Sub):
        if isinstance(a, Sub):
            return issubclass(a.cls, b.cls)
        cls = a.exact_class
        return cls is not None and issubclass(cls, b.cls)
    if isinstance(b, PartialTuple):
        if isinstance(a, Const) and type(a.value) is tuple:
            a = a.widen()
        return (isinstance(a, PartialTuple) and len(a.items) == len(b.items)
                and all(_leq(x, y) for x, y in zip(a.items, b.items, strict=False)))
    if isinstance(b, Elements):
        return isinstance(a, Elements) and a.cls is b.cls and _leq(a.elem, b.elem)
    if isinstance(b, Alloc):
        return isinstance(a, Alloc) and a.cls is b.cls and a.sites <= b.sites
    if isinstance(b, Method):
        return isinstance(a, Method) and a.func is b.func and _leq(a.receiver, b.receiver)
    return False


# ------------------------------------------------------------------------------ join/meet


def join(a: Abstract, b: Abstract, width: int = DEFAULT_UNION_WIDTH) -> Abstract:
    """The least description (within this lattice's bounded width) of both ``a`` and ``b``."""
    result = _join(a, b, width)
    report = LOST_SITE_HOOK.get()
    if report is None:
        return result
    if result is not a and result is not b:
        _report_lost(report, a, result)
        _report_lost(report, b, result)
    else:
        _report_lost(report, b if result is a else a, result)
    return result


def _join(a: Abstract, b: Abstract, width: int) -> Abstract:
    if a is b or _leq(b, a):
        return a
    if _leq(a, b):
        return b
    return _union([*a.members(), *b.members()], width)


def join_all(values: Iterable[Abstract], width: int = DEFAULT_UNION_WIDTH) -> Abstract:
    """The join of every value (``NEVER`` for none)."""
    result = NEVER
    for value in values:
        result = join(result, value, width)
    return result


def _union(members: list[Abstract], width: int) -> Abstract:
    if any(m is ANY for m in members):
        return ANY
    # same-length partial tuples and constant tuples merge item by item
    tuples: dict[int, Abstract] = {}
    iterables: dict[type, Abstract] = {}
    allocs: dict[type, Alloc] = {}
    rest: list[Abstract] = []
    for m in members:
        if isinstance(m, Alloc):
            old_alloc = allocs.get(m.cls)
            allocs[m.cls] = m if old_alloc is None else Alloc(m.cls, old_alloc.sites | m.sites)
            continue
        if isinstance(m, Elements):
            old_it = iterables.get(m.cls)
            iterables[m.cls] = m if old_it is None else Elements(
                m.cls, join(old_it.elem, m.elem, width))  # type: ignore[attr-defined]
            continue
        if isinstance(m, Const) and type(m.value) is tuple:
            m = m.widen()
        if isinstance(m, PartialTuple):
            n = len(m.items)
            old = tuples.get(n)
            if old is None:
                tuples[n] = m
            else:
                assert isinstance(old, PartialTuple)
                tuples[n] = PartialTuple(join(x, y, width)
                                         for x, y in zip(old.items, m.items, strict=True))
        else:
            rest.append(m)
    if len(tuples) > 1:
        rest.append(Exact(tuple))
    else:
        rest.extend(tuples.values())
    rest.extend(iterables.values())
    rest.extend(allocs.values())
    if any(m is ANY for m in rest):
        return ANY
    members = _reduce(rest)
    while len(members) > width:
        # widen the members that have a wider description: constants first
        widened = [m.widen() if m.is_const else m for m in members]
        if widened == members:
            widened = [m.widen() if not isinstance(m, (Exact, Sub)) else m for m in members]
            if widened == members:
                return ANY
        members = _reduce(widened)
        if any(m is ANY for m in members):
            return ANY
    if not members:
        return NEVER
    if len(members) == 1:
        return members[0]
    return Union(members)


def _reduce(members: list[Abstract]) -> list[Abstract]:
    """Drop members contained in another member (and duplicates)."""
    unique = list(dict.fromkeys(members))
    return [m for i, m in enumerate(unique)
            if not any(j != i and _leq(m, o) for j, o in enumerate(unique))]


def meet(a: Abstract, b: Abstract) -> Abstract:
    """The values in both ``a`` and ``b`` (an upper bound of them: exact except where two
    unrelated ``Sub`` classes could share a subclass, where ``a`` is kept)."""
    if _leq(a, b):
        return a
    if _leq(b, a):
        return b
    if isinstance(a, Union) or isinstance(b, Union):
        return join_all(meet(x, y) for x in a.members() for y in b.members())
    if isinstance(a, Const):
        return a if b.accepts(a.value) else NEVER
    if isinstance(b, Const):
        return b if a.accepts(b.value) else NEVER
    if isinstance(a, PartialTuple) and isinstance(b, PartialTuple):
        if len(a.items) != len(b.items):
            return NEVER
        items = [meet(x, y) for x, y in zip(a.items, b.items, strict=False)]
        return NEVER if NEVER in items else PartialTuple(items)
    if isinstance(a, Elements) and isinstance(b, Elements):
        return Elements(a.cls, meet(a.elem, b.elem)) if a.cls is b.cls else NEVER
    ca, cb = a.exact_class, b.exact_class
    if ca is not None and cb is not None:
        return NEVER if ca is not cb else a  # same class, different details: keep a
    if ca is not None and isinstance(b, Sub):
        return a if issubclass(ca, b.cls) else NEVER
    if cb is not None and isinstance(a, Sub):
        return b if issubclass(cb, a.cls) else NEVER
    return a


# ------------------------------------------------------------------------------ narrowing


def narrow_isinstance(a: Abstract, classes: tuple[type, ...]) -> tuple[Abstract, Abstract]:
    """(values for which ``isinstance(v, classes)`` is true, those for which it is false)."""
    yes: list[Abstract] = []
    no: list[Abstract] = []
    for m in a.members():
        cls = m.exact_class
        if cls is not None:
            (yes if issubclass(cls, classes) else no).append(m)
        elif isinstance(m, Sub) and issubclass(m.cls, classes):
            yes.append(m)
        else:
            no.append(m)
            if isinstance(m, Sub):
                yes.append(m)
            elif m is ANY:
                yes.append(join_all(Sub(c) for c in classes))
    return _union(yes, 64), _union(no, 64)


def narrow_type_is(a: Abstract, cls: type) -> tuple[Abstract, Abstract]:
    """(values for which ``type(v) is cls``, the others)."""
    yes: list[Abstract] = []
    no: list[Abstract] = []
    for m in a.members():
        exact = m.exact_class
        if exact is not None:
            (yes if exact is cls else no).append(m)
        else:
            no.append(m)
            if m is ANY or (isinstance(m, Sub) and issubclass(cls, m.cls)):
                yes.append(Exact(cls))
    return _union(yes, 64), _union(no, 64)


def narrow_is(a: Abstract, obj: object) -> tuple[Abstract, Abstract]:
    """(values that are the object ``obj`` — None, True, a sentinel —, the others).
    The second part only drops ``obj`` where identity is certain (singletons)."""
    const = Const(obj)
    yes = meet(a, const)
    if obj is None or type(obj) is bool or obj is Ellipsis or obj is NotImplemented:
        no = _union([m for m in a.members() if m != const and m != Exact(type(obj))]
                    + ([Const(not obj)] if type(obj) is bool
                       and Exact(bool) in a.members() else []), 64)
    else:
        no = _union([m for m in a.members() if m != const], 64)
    return yes, no


_FALSY_EXACT: dict[type, object] = {int: 0, bool: False, str: "", bytes: b"",
                                    type(None): None, tuple: ()}


def narrow_truth(a: Abstract) -> tuple[Abstract, Abstract]:
    """(values that are true in a truth test, values that are false)."""
    yes: list[Abstract] = []
    no: list[Abstract] = []
    for m in a.members():
        truth = truth_of(m)
        if truth is True:
            yes.append(m)
        elif truth is False:
            no.append(m)
        else:
            yes.append(Exact(bool) if m == Exact(bool) else m)
            cls = m.exact_class
            if m == Exact(bool):
                yes[-1] = Const(True)
                no.append(Const(False))
            elif cls in _FALSY_EXACT and not isinstance(m, PartialTuple):
                no.append(Const(_FALSY_EXACT[cls]))
            else:
                no.append(m)
    return _union(yes, 64), _union(no, 64)


def truth_of(a: Abstract) -> bool | None:
    """The truth value of every value of ``a`` when it is known (without running user
    code), else ``None``."""
    if isinstance(a, Const) and is_value_constant(a.value):
        return bool(a.value)
    if isinstance(a, Const) and isinstance(a.value, (type, types.FunctionType,
                                                     types.BuiltinFunctionType,
                                                     types.ModuleType)):
        return True
    if isinstance(a, PartialTuple):
        return bool(a.items)
    if isinstance(a, Method):
        return True
    if a.exact_class is type(None):
        return False
    return None


# ------------------------------------------------------------------------------ conversion


def _is_typing_form(t: object) -> bool:
    return isinstance(t, (types.UnionType, types.GenericAlias)) or type(t).__module__ == "typing"


def abstract(t: object) -> Abstract:
    """The abstract value of a user-given type: an ``Abstract`` (as is), a class
    (``float`` is ``Exact(float)``; ``None`` is ``Const(None)``), a union (``int | None``),
    ``tuple[int, str]``, ``tuple[int, ...]``, ``list[int]`` (``Exact(list)``),
    ``typing.Any``, ``typing.Optional``/``Union``/``Literal``."""
    if isinstance(t, Abstract):
        return t
    if t is None or t is type(None):
        return Const(None)
    if t is typing.Any or t is object:
        return ANY
    if isinstance(t, type) and not isinstance(t, types.GenericAlias):
        return Exact(t)
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        return join_all((abstract(x) for x in args), width=max(len(args), 1))
    if origin is typing.Literal:
        return join_all((Const(x) for x in args), width=max(len(args), 1))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis or not args:
            return Exact(tuple)
        if args == ((),):
            return Const(())
        return PartialTuple(abstract(x) for x in args)
    if isinstance(origin, type):
        return Exact(origin)
    raise TypeError(f"cannot make an abstract value of {t!r}")


def const_float_ok(value: float) -> bool:
    """True for floats worth constant-folding (finite)."""
    return math.isfinite(value)


def is_definition(value: object) -> bool:
    """A function, class, module or builtin function: an object inference knows by
    identity."""
    return isinstance(value, (types.FunctionType, type, types.ModuleType,
                              types.BuiltinFunctionType))


def object_abstract(value: object) -> Abstract:
    """The abstract value of a known object (a constant, a default, a global's value).
    Here, with the lattice, so a loaded instance checks its function's defaults without
    loading inference."""
    if is_value_constant(value) or is_definition(value) or isinstance(
            value, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return Const(value)
    if isinstance(value, tuple) and type(value) is tuple and len(value) <= 16:
        return PartialTuple(object_abstract(v) for v in value)
    return Exact(type(value))
