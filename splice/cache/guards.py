"""Run-time guards: checks that a binding a code instance relied on is still the same.

CPython 3.11 has no dictionary watchers, and assigning an attribute of a class raises no
audit event (``type.__setattr__`` does not call ``PySys_Audit``; only function attributes
such as ``__code__`` do). So the kinds of edge splice cannot observe as they change are
checked instead, each time an instance is entered through ``splice.invoke`` (and by
``splice.cache.instances.revalidate``):

* a **global** edge (a module's namespace and a name) holds while the name is bound to the
  same object as when the instance was compiled (looked up as the code looks it up: the
  module's globals, then its builtins);
* a **global shape** edge holds while the name is bound to an object of the same class (a
  short tuple: of the same classes item by item): inference typed the global by its class
  only (``splice.infer.objects``), so a program that rebinds it to a new object of that
  class on every run keeps its instances;
* an **attribute** edge (a class and a name) holds while looking the name up on the class's
  MRO finds the same object (a method replaced on the class or on a base, a new override in
  between, or a changed ``__bases__`` all fail it);
* a **cell** edge (a closure cell from which inference read a function or class) holds
  while the cell holds the same object (the instance's own function's cells are checked
  per function object: ``CodeInstance.cells_hold``; cells of other functions by
  ``CellGuard``).

Objects are compared by identity, so rebinding a name to an equal but new object counts as
a change (conservative: the instance is rebuilt, never wrong).

Each guard also has a C form (:meth:`Guard.c_form`), which ``guard_check`` gathers into one
``splice.cache._guards.GuardCheck`` per instance and function object: the specializing
entry's per-call check, with no Python frame (splice/cache/_guards.c). It evaluates the
same lookups; where it cannot tell (a binding whose C form would need Python code to
compare, a short tuple's shape) it answers False, and the caller takes the Python path,
which checks again and invalidates. So the C form only ever sends a call to the slower
path, never past a guard that fails.
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["AttributeGuard", "AttributeShapeGuard", "CellGuard", "FunctionGuard", "GlobalGuard",
           "GlobalShapeGuard", "Guard", "MISSING", "guard_check", "shape_of"]

GuardCheck: Callable[..., Any] | None
try:
    from splice.cache._guards import GuardCheck
except ImportError:  # built without a compiler: guards are checked in Python only
    GuardCheck = None

#: the kinds of a guard's C form (splice/cache/_guards.c)
_GLOBAL, _GLOBAL_CLASS, _CLASS_ATTR, _DICT_ITEM, _CELL, _CALL, _CLASS_ATTR_CLASS = range(7)
#: a C form: (kind, a, b, c)
CForm = tuple[int, Any, Any, Any]


class _Missing:
    """The value of a binding that does not exist."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


class Guard:
    """A check that one binding still has the object it had when the guard was made."""

    __slots__ = ()
    expected: Any

    def current(self) -> Any:
        """The object the binding has now (``MISSING`` if none)."""
        raise NotImplementedError

    def holds(self) -> bool:
        """Whether the binding still has the expected object."""
        return self.current() is self.expected

    def describe(self) -> str:
        """A short description for error messages."""
        raise NotImplementedError

    def c_form(self) -> CForm:
        """The check as ``splice.cache._guards.GuardCheck`` makes it (by default: calling
        :meth:`holds`)."""
        return (_CALL, self.holds, None, None)


def guard_check(alive: list[bool] | None, guards: Any, cells: Any = ()) -> Any:
    """One callable checking, without a Python frame, that ``alive[0]`` is still true, that
    each of ``guards`` holds and that each closure cell of ``cells`` (pairs of a cell and
    the object it must hold) still holds it; None when the C extension is not built."""
    if GuardCheck is None:
        return None
    items = [guard.c_form() for guard in guards]
    items.extend((_CELL, cell, expected, None) for cell, expected in cells)
    return GuardCheck(alive, tuple(items), MISSING)


def lookup_global(namespace: dict[str, Any], name: str) -> Any:
    """``name`` as code running with globals ``namespace`` finds it (globals, then
    builtins); ``MISSING`` if unbound."""
    if name in namespace:
        return namespace[name]
    builtin_ns: Any = namespace.get("__builtins__", builtins)
    if isinstance(builtin_ns, types.ModuleType):
        builtin_ns = builtin_ns.__dict__
    if isinstance(builtin_ns, dict):
        return builtin_ns.get(name, MISSING)
    return MISSING


def lookup_class(cls: type, name: str) -> Any:
    """``name`` looked up on ``cls``'s MRO through the class dicts (no descriptor is
    invoked, no user code runs); ``MISSING`` if no class defines it."""
    for klass in cls.__mro__:
        namespace = klass.__dict__
        if name in namespace:
            return namespace[name]
    return MISSING


@dataclass(eq=False, slots=True)
class GlobalGuard(Guard):
    """``namespace[name]`` (or the builtin of that name) is still ``expected``."""

    namespace: dict[str, Any] = field(repr=False)
    name: str
    expected: Any

    @classmethod
    def now(cls, namespace: dict[str, Any], name: str) -> GlobalGuard:
        """A guard expecting the current binding."""
        return cls(namespace, name, lookup_global(namespace, name))

    def current(self) -> Any:
        return lookup_global(self.namespace, self.name)

    def describe(self) -> str:
        module = self.namespace.get("__name__", "?")
        return f"global {module}.{self.name}"

    def c_form(self) -> CForm:
        return (_GLOBAL, self.namespace, self.name, self.expected)


def shape_of(value: Any) -> Any:
    """What inference read of a value it typed by class (``splice.infer.objects``'s
    ``_class_of_object``): its class, and a short tuple's items' shapes."""
    if type(value) is tuple and len(value) <= 16:
        return (tuple, *(shape_of(item) for item in value))
    return type(value)


def _shape_found(value: Any) -> Any:
    """The shape of what a lookup found (``MISSING`` if it found nothing)."""
    return MISSING if value is MISSING else shape_of(value)


class _ShapeGuard(Guard):
    """A guard comparing the shape of what its lookup finds (``current``) with the one
    expected, not the object."""

    __slots__ = ()

    def holds(self) -> bool:
        return bool(self.current() == self.expected)


@dataclass(eq=False, slots=True)
class GlobalShapeGuard(_ShapeGuard):
    """``namespace[name]`` still holds a value of the class (the shape, for a short tuple)
    it held: inference typed the global by its class, not its identity, so rebinding it to
    another object of that class (``planner = Planner()`` at the start of each run) keeps
    the instance."""

    namespace: dict[str, Any] = field(repr=False)
    name: str
    expected: Any

    @classmethod
    def now(cls, namespace: dict[str, Any], name: str) -> GlobalShapeGuard:
        """A guard expecting the current binding's shape."""
        return cls(namespace, name, _shape_found(lookup_global(namespace, name)))

    def current(self) -> Any:
        return _shape_found(lookup_global(self.namespace, self.name))

    def describe(self) -> str:
        module = self.namespace.get("__name__", "?")
        return f"the class of global {module}.{self.name}"

    def c_form(self) -> CForm:
        if type(self.expected) is tuple:  # a short tuple's shape: compared in Python
            return Guard.c_form(self)
        return (_GLOBAL_CLASS, self.namespace, self.name, self.expected)


@dataclass(eq=False, slots=True)
class AttributeGuard(Guard):
    """Looking ``name`` up on ``owner`` (a class's MRO, or a module's namespace) still
    finds ``expected``."""

    owner: Any
    name: str
    expected: Any

    @classmethod
    def now(cls, owner: Any, name: str) -> AttributeGuard:
        """A guard expecting the current binding."""
        guard = cls(owner, name, MISSING)
        guard.expected = guard.current()
        return guard

    def current(self) -> Any:
        owner = self.owner
        if isinstance(owner, type):
            return lookup_class(owner, self.name)
        namespace = getattr(owner, "__dict__", None)
        if isinstance(namespace, dict):
            return namespace.get(self.name, MISSING)
        return MISSING

    def describe(self) -> str:
        return f"attribute {getattr(self.owner, '__qualname__', self.owner)!s}.{self.name}"

    def c_form(self) -> CForm:
        owner = self.owner
        if isinstance(owner, type) and type(self.name) is str:
            return (_CLASS_ATTR, owner, self.name, self.expected)
        if type(owner) is types.ModuleType and type(self.name) is str:
            # a module's __dict__ is the same dict for its whole life
            return (_DICT_ITEM, owner.__dict__, self.name, self.expected)
        return Guard.c_form(self)


@dataclass(eq=False, slots=True)
class AttributeShapeGuard(_ShapeGuard):
    """Looking ``name`` up on the class ``owner``'s MRO still finds a value of the class
    (the shape, for a short tuple) it found: inference typed the class attribute by its
    class (``splice.infer``'s "attribute class" edge), as ``GlobalShapeGuard`` a global."""

    owner: Any
    name: str
    expected: Any

    @classmethod
    def now(cls, owner: Any, name: str) -> AttributeShapeGuard:
        """A guard expecting the current binding's shape."""
        return cls(owner, name, _shape_found(lookup_class(owner, name)))

    def current(self) -> Any:
        return _shape_found(lookup_class(self.owner, self.name))

    def describe(self) -> str:
        return f"the class of attribute " \
               f"{getattr(self.owner, '__qualname__', self.owner)!s}.{self.name}"

    def c_form(self) -> CForm:
        if isinstance(self.owner, type) and type(self.name) is str and \
                type(self.expected) is not tuple:
            return (_CLASS_ATTR_CLASS, self.owner, self.name, self.expected)
        return Guard.c_form(self)  # a short tuple's shape: compared in Python


@dataclass(eq=False, slots=True)
class CellGuard(Guard):
    """A closure cell still holds ``expected`` (a cell of a function the instance reached:
    the outer function, or a ``nonlocal`` statement, can rebind it)."""

    cell: Any = field(repr=False)
    name: str
    expected: Any
    #: the function whose cell it is and the cell's index in its closure, where known (what
    #: another process finds the cell by: ``splice.cache.stored_instances``)
    function: Any = field(default=None, repr=False)
    index: int = -1

    @classmethod
    def now(cls, cell: Any, name: str, function: Any = None, index: int = -1) -> CellGuard:
        """A guard expecting what the cell holds now."""
        guard = cls(cell, name, MISSING, function, index)
        guard.expected = guard.current()
        return guard

    def current(self) -> Any:
        try:
            return self.cell.cell_contents
        except ValueError:  # an empty cell
            return MISSING

    def describe(self) -> str:
        return f"closure variable {self.name}"

    def c_form(self) -> CForm:
        return (_CELL, self.cell, self.expected, None)


@dataclass(eq=False, slots=True)
class FunctionGuard(Guard):
    """A function still has the code, defaults and keyword defaults it had (instances learn
    of such changes from the audit hook of ``splice.cache.world`` at once; this guard is for
    checking them later, as the soundness oracle does)."""

    function: Any = field(repr=False)
    expected: Any

    @classmethod
    def now(cls, function: Any) -> FunctionGuard:
        """A guard expecting the function's current code and defaults."""
        guard = cls(function, MISSING)
        guard.expected = guard.current()
        return guard

    def current(self) -> Any:
        return _FunctionState(self.function)

    def holds(self) -> bool:
        return bool(self.current() == self.expected)

    def describe(self) -> str:
        return f"function {getattr(self.function, '__qualname__', self.function)}"


class _FunctionState:
    """A function's code and defaults, compared by identity."""

    __slots__ = ("parts",)

    def __init__(self, function: Any) -> None:
        self.parts = (getattr(function, "__code__", None), getattr(function, "__defaults__",
                                                                    None),
                      getattr(function, "__kwdefaults__", None))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FunctionState) and all(
            a is b for a, b in zip(self.parts, other.parts, strict=True))

    __hash__ = None  # type: ignore[assignment]
