"""Code instances: one compiled specialization of a function for one owner.

A *specialization* is a code object, the abstract types of its arguments and an optional
runtime key (``Plugin.specialize``). A ``CodeInstance`` is what splice built for one
specialization under one owner (a plugin context): the IR after each stage, the inferred
return type, the edges (definitions its code relied on), the world range in which it is
valid, the generated source and the compiled function::

    ci = splice.compile(FastMath({math.sin: fast_sin}), simulate, float, int)
    ci.typed                        # typed IR, every value annotated with its abstract value
    splice.invoke(ci, 0.5, 1000)    # calls exactly this instance

Invalidation. An instance is valid from ``min_world`` (the world it was compiled in) until
it is invalidated; it then gets ``max_world`` (the last world it was valid in), the world
moves, and every instance that depends on it is invalidated too. What invalidates it:

* a **callee** edge: the function's ``__code__``, ``__defaults__`` or ``__kwdefaults__``
  changes (seen at once, through the audit hook of ``splice.cache.world``), or
  ``splice.invalidate(function)``;
* a **global** or **attribute** edge: the binding changed. CPython 3.11 raises no event for
  either (no dict watchers; no audit event on ``type.__setattr__``), so they are checked by
  run-time guards (``splice.cache.guards``) each time ``invoke`` enters the instance, and by
  :func:`revalidate` for every live instance.

``invoke`` refuses an invalidated instance with ``InvalidatedError`` and arguments that do
not fit the specialization with ``ArgumentTypeError`` (a ``TypeError``).
"""

from __future__ import annotations

import inspect
import sys
import threading
import types
import weakref
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.cache.guards import Guard
from splice.cache.world import advance, world
from splice.errors import SpliceError
from splice.ir.nodes import FunctionIR

if TYPE_CHECKING:
    from splice.runtime.context import Context

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["INVALID", "ArgumentTypeError", "CodeInstance", "InvalidatedError", "Specialization",
           "instances_of", "invoke", "revalidate"]

#: ``max_world`` of an instance that has not been invalidated
MAX_WORLD = sys.maxsize


class _Invalid:
    """What an invalidated instance's ``holder`` holds (never a callee)."""

    def __repr__(self) -> str:
        return "<invalidated>"


INVALID: Any = _Invalid()


class InvalidatedError(SpliceError):
    """``splice.invoke`` on an instance that was invalidated (compile it again)."""


class ArgumentTypeError(SpliceError, TypeError):
    """``splice.invoke`` with arguments that do not fit the instance's specialization."""


@dataclass(frozen=True, slots=True)
class Specialization:
    """What a code instance is specialized on: a code object, the abstract types of the
    function's leading parameters (in order) and an optional runtime key."""

    code: types.CodeType
    argtypes: tuple[Any, ...]
    key: Hashable = None

    def __str__(self) -> str:
        types_ = ", ".join(str(t) for t in self.argtypes)
        key = "" if self.key is None else f"; key={self.key!r}"
        return f"{self.code.co_qualname}({types_}{key})"


@dataclass(eq=False)
class CodeInstance:
    """The compiled result of one specialization for one owner (see the module docstring).

    ``lowered``, ``typed`` and ``optimized`` are the IR after each stage (after the
    plugins' hooks of that stage); ``routed`` is the IR that was compiled (calls go through
    the owner's dispatch table, so callees run under the plugin); ``compiled`` is the
    function object, sharing ``fn``'s globals, closure cells and keyword defaults.
    """

    specialization: Specialization
    owner: Context
    fn: types.FunctionType
    lowered: FunctionIR
    typed: FunctionIR
    optimized: FunctionIR
    routed: FunctionIR
    compiled: types.FunctionType
    return_type: Any
    edges: tuple[Any, ...]
    guards: tuple[Guard, ...]
    inference: Any = None
    #: the return type inferred before the ``typed`` hooks (the function as the context
    #: runs it) and whether typed hooks ran (the types were inferred again after them)
    untyped_return_type: Any = None
    retyped: bool = False
    #: seconds spent in each stage
    times: dict[str, float] = field(default_factory=dict)
    #: what the optimisation stage did (one line per rewrite)
    optimizations: list[str] = field(default_factory=list)
    min_world: int = field(default_factory=world)
    max_world: int = MAX_WORLD
    #: why the instance was invalidated (None while valid)
    invalidated_because: str | None = None
    _dependents: list[weakref.ref[CodeInstance]] = field(default_factory=list, repr=False)
    _source: str | None = field(default=None, repr=False)
    #: ``[fn]`` while the instance is valid, ``[INVALID]`` after: what guarded direct calls
    #: compare the callee with (one subscript, no attribute read that raises audit events)
    holder: list[Any] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.holder[:] = [self.fn]
        code = self.specialization.code
        self._names = code.co_varnames
        self._argcount = code.co_argcount

    # ------------------------------------------------------------------------ validity

    @property
    def valid(self) -> bool:
        """Whether the instance has not been invalidated (its guards are checked by
        :meth:`check`)."""
        return self.max_world == MAX_WORLD

    def valid_in(self, world_: int) -> bool:
        """Whether the instance is valid in world ``world_``."""
        return self.min_world <= world_ <= self.max_world

    def check(self) -> bool:
        """Check the run-time guards (global and attribute edges); invalidate the instance
        if one fails. Returns whether it is still valid."""
        if self.max_world != MAX_WORLD:
            return False
        for guard in self.guards:
            if guard.current() is not guard.expected:
                self.invalidate(f"{guard.describe()} changed")
                return False
        return True

    def invalidate(self, reason: str) -> None:
        """Mark the instance and its dependents invalid and move the world."""
        with _lock:
            if self.max_world != MAX_WORLD:
                return
            self.max_world = world()
            self.invalidated_because = reason
            self.holder[0] = INVALID
            dependents = [ref() for ref in self._dependents]
            self._dependents.clear()
            cache = self.owner.__dict__.get(_CACHE_ATTRIBUTE)
            if cache is not None:
                cache.discard(self)
        advance()
        for dependent in dependents:
            if dependent is not None:
                dependent.invalidate(f"it depends on {self.specialization}, which was "
                                     f"invalidated ({reason})")

    def add_dependent(self, other: CodeInstance) -> None:
        """Invalidate ``other`` whenever this instance is invalidated."""
        if not self.valid:
            other.invalidate(f"it depends on {self.specialization}, already invalid")
            return
        self._dependents.append(weakref.ref(other))

    @property
    def dependents(self) -> list[CodeInstance]:
        """The live instances invalidated with this one."""
        return [d for d in (ref() for ref in self._dependents) if d is not None]

    # ---------------------------------------------------------------------- reflection

    @property
    def argtypes(self) -> tuple[Any, ...]:
        return self.specialization.argtypes

    @property
    def preserves_return_type(self) -> bool:
        """Whether the instance returns only what the function as the context runs it
        (without typed hooks) was inferred to return, allocation sites and constants
        aside: callers inferred with the latter may call the instance instead."""
        if not self.retyped:
            return True
        return bool(erase_sites(self.return_type) <= erase_sites(self.untyped_return_type))

    @property
    def source(self) -> str:
        """The Python source generated from the optimized IR (calls shown as the program
        makes them; ``routed_source`` shows them going through the dispatch table)."""
        if self._source is None:
            from splice.ir import generate

            self._source = generate(self.optimized)
        return self._source

    @property
    def routed_source(self) -> str:
        """The Python source that was compiled (calls through the owner's table)."""
        from splice.ir import generate

        return generate(self.routed)

    def __repr__(self) -> str:
        state = "valid" if self.valid else f"invalid since world {self.max_world + 1}"
        return (f"<CodeInstance {self.specialization} -> {self.return_type} under "
                f"{self.owner!r}, worlds {self.min_world}.."
                f"{'' if self.valid else self.max_world} ({state})>")

    # ---------------------------------------------------------------------------- calls

    def mismatch(self, args: Sequence[Any], kwargs: dict[str, Any]) -> str | None:
        """Why ``args``/``kwargs`` do not fit the specialization (None if they do, or if
        they do not bind to the signature at all: the call then raises as natively)."""
        # (``fn.__code__`` is not read here: reading it raises an audit event, slow)
        argtypes = self.specialization.argtypes
        names = self._names
        if not kwargs and len(argtypes) <= len(args) <= self._argcount:
            values: Sequence[Any] = args
        else:
            try:
                bound = inspect.signature(self.fn).bind(*args, **kwargs)
            except TypeError:
                return None
            bound.apply_defaults()
            values = [bound.arguments[name] for name in names[:len(argtypes)]]
        for index, expected in enumerate(argtypes):
            value = values[index]
            if not expected.accepts(value):
                return (f"{self.fn.__qualname__}() argument {index + 1} ({names[index]!r}) "
                        f"is {type(value).__name__} {_short(value)}, but this instance is "
                        f"specialized for {expected}")
        key = self.specialization.key
        if key is not None:
            now = _key_of(self.owner, self.fn, tuple(args), kwargs)
            if now != key:
                return (f"{self.fn.__qualname__}(): the runtime key is {now!r}, but this "
                        f"instance is specialized for key {key!r}")
        return None


def erase_sites(value: Any) -> Any:
    """``value`` with what depends on one inference run forgotten: allocation sites
    (``list@1`` becomes ``list``) and plain value constants (``Const(2)`` becomes ``int``),
    so that results of two inferences can be compared."""
    from splice.infer import lattice as L

    if isinstance(value, L.Alloc):
        return L.Exact(value.cls)
    if isinstance(value, L.Elements):
        return L.Elements(value.cls, erase_sites(value.elem))
    if isinstance(value, L.PartialTuple):
        return L.PartialTuple(erase_sites(item) for item in value.items)
    if isinstance(value, L.Union):
        return L.join_all(erase_sites(m) for m in value.members())
    if isinstance(value, L.Const) and L.is_value_constant(value.value):
        return L.Exact(type(value.value))
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _key_of(owner: Context, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> Hashable:
    """The runtime key of a call: the plugins' ``specialize`` results (None if none)."""
    keys = []
    for plugin in owner.plugins:
        specialize = getattr(plugin, "specialize", None)
        if specialize is not None:
            keys.append(specialize(fn, args, kwargs))
    if not keys or all(k is None for k in keys):
        return None
    return keys[0] if len(keys) == 1 else tuple(keys)


def invoke(ci: CodeInstance, /, *args: Any, **kwargs: Any) -> Any:
    """Call exactly the code instance ``ci`` with ``args`` and ``kwargs``.

    Raises ``InvalidatedError`` if ``ci`` was invalidated (or a global or attribute it
    relied on has changed since), and ``ArgumentTypeError`` (a ``TypeError``) naming the
    argument, its type and the expected abstract type if the arguments do not fit ``ci``'s
    specialization. Arguments that do not bind to the signature raise as natively."""
    if not ci.check():
        raise InvalidatedError(
            f"{ci.specialization} was invalidated ({ci.invalidated_because}); it was valid "
            f"in worlds {ci.min_world}..{ci.max_world}, the world is now {world()}: "
            "compile it again with splice.compile")
    problem = ci.mismatch(args, kwargs)
    if problem is not None:
        raise ArgumentTypeError(problem)
    return ci.compiled(*args, **kwargs)


# ---------------------------------------------------------------------------- the caches


_lock = threading.RLock()


class InstanceCache:
    """The code instances of one owner, by specialization."""

    def __init__(self) -> None:
        self._items: dict[tuple[int, tuple[Any, ...], Hashable], CodeInstance] = {}
        #: how many instances were built (tests check "compiled once")
        self.builds = 0

    def get(self, spec: Specialization) -> CodeInstance | None:
        """The valid instance for ``spec``, if there is one."""
        found = self._items.get((id(spec.code), spec.argtypes, spec.key))
        if found is None or found.specialization.code is not spec.code or not found.valid:
            return None
        return found

    def add(self, ci: CodeInstance) -> None:
        spec = ci.specialization
        self._items[(id(spec.code), spec.argtypes, spec.key)] = ci
        self.builds += 1
        _all_instances.add(ci)

    def discard(self, ci: CodeInstance) -> None:
        spec = ci.specialization
        key = (id(spec.code), spec.argtypes, spec.key)
        if self._items.get(key) is ci:
            del self._items[key]

    def of_code(self, code: types.CodeType) -> list[CodeInstance]:
        """The valid instances compiled from ``code``."""
        return [ci for ci in self._items.values()
                if ci.specialization.code is code and ci.valid]

    def __iter__(self) -> Any:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)


_all_instances: weakref.WeakSet[CodeInstance] = weakref.WeakSet()
_CACHE_ATTRIBUTE = "_splice_instances"


def cache_of(owner: Context) -> InstanceCache:
    """The instance cache of ``owner``, kept on the owner itself (instances refer to their
    owner: a cache kept elsewhere, keyed weakly by the owner, would keep it alive)."""
    cache: InstanceCache | None = owner.__dict__.get(_CACHE_ATTRIBUTE)
    if cache is None:
        with _lock:
            cache = owner.__dict__.setdefault(_CACHE_ATTRIBUTE, InstanceCache())
    assert cache is not None
    return cache


def instances_of(owner: Context) -> list[CodeInstance]:
    """The valid code instances of ``owner`` (a plugin's ``context``)."""
    return [ci for ci in cache_of(owner) if ci.valid]


def revalidate() -> int:
    """Check the guards of every live instance (a global rebound or a class attribute
    changed since it was compiled); returns how many were invalidated."""
    count = 0
    for ci in list(_all_instances):
        if ci.valid and not ci.check():
            count += 1
    return count
