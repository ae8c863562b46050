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

import functools
import sys
import types
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from splice.cache.guards import Guard, guard_check
from splice.cache.world import add_backedge, advance, world
from splice.errors import ArgumentTypeError, InvalidatedError
from splice.forks import fork_safe_rlock
from splice.ir.functions import describe
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["INVALID", "SELF", "ArgumentTypeError", "Binding", "CodeInstance",
           "InvalidatedError", "Specialization", "builder_of", "defaults_of", "instances_of",
           "invoke", "is_nested", "make_instance", "revalidate"]

class Owner(Protocol):
    """What owns code instances (a ``splice.runtime.context.Context``): the plugins the
    instances were built under, and the cache that holds them."""

    plugins: tuple[Any, ...]
    instances: InstanceCache
    hooks: Any  # splice.hooks.HookTable (its ``key_of``)


#: ``max_world`` of an instance that has not been invalidated
MAX_WORLD = sys.maxsize


class _Invalid:
    """What an invalidated instance's ``holder`` holds (never a callee)."""

    def __repr__(self) -> str:
        return "<invalidated>"


INVALID: Any = _Invalid()


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


@dataclass(eq=False, slots=True)
class Binding:
    """A code instance applied to one function object, for guarded direct calls:
    ``function`` runs the instance with that object's cells and defaults; ``holder`` is
    ``[the function object]`` while the instance is valid and ``[INVALID]`` from the moment
    it (or the object's code or defaults) changes, so the guard ``f is holder[0]`` is one
    subscript (reading ``f.__code__`` would raise an audit event per call)."""

    instance: CodeInstance
    function: types.FunctionType
    holder: list[Any]

    @property
    def fn(self) -> Any:
        """The function object the instance is applied to."""
        return self.holder[0]


def defaults_of(fn: types.FunctionType) -> tuple[Any, ...]:
    """The abstract values of ``fn``'s defaults and keyword defaults, as inference reads
    them when it binds a call of ``fn`` (what an instance that read them relies on)."""
    defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
    if not defaults and not kwdefaults:
        return ((), ())  # (without loading inference: a loaded instance checks this)
    from splice.infer.lattice import object_abstract

    kwdefaults = kwdefaults or {}
    return (tuple(object_abstract(d) for d in defaults or ()),
            tuple((name, object_abstract(kwdefaults[name])) for name in sorted(kwdefaults)))


#: in ``CodeInstance.cells``: the cell holds the function itself (a recursive closure)
SELF: Any = type("_Self", (), {"__repr__": lambda self: "<the function itself>"})()


@dataclass(eq=False)
class CodeInstance:
    """The compiled result of one specialization for one owner (see the module docstring).

    ``stages`` holds the IR kept after the pipeline's stages (``splice.compiler.stages``):
    ``lowered``, ``typed`` and ``optimized`` (after the plugins' hooks of that stage) and
    ``routed``, the IR that was compiled (calls go through the owner's dispatch table, so
    callees run under the plugin); each is also a property. ``code`` is what was
    compiled, from which a function is made for each function object that runs the
    instance (:meth:`function_for`); ``compiled`` is the one for ``fn``.

    An instance is shared by the function objects of its code object that fit what it
    relied on (:meth:`fits`): the same globals, the same objects in the closure cells that
    inference read (``cells``: free variable index and object, ``SELF`` for a cell holding
    the function itself) and, if inference read the function's own defaults (a recursive
    closure calling itself), defaults of the same abstract values (``defaults``). It holds
    ``builder``, the function it was inferred and compiled from: ``fn`` itself if ``fn``
    is not a closure, else a copy of ``fn`` whose cells hold only what inference may read
    (functions and classes), so an instance does not keep the closure it was first built
    for, or the data that closure captured, alive. ``fn`` is held weakly.
    """

    specialization: Specialization
    owner: Owner
    builder: types.FunctionType
    #: the IR kept after the stages, by stage (``lowered``, ``typed``, ``optimized``,
    #: ``routed``)
    stages: dict[str, FunctionIR]
    code: Any  # a splice.ir.assemble.CompiledCode
    return_type: Any
    edges: tuple[Any, ...]
    guards: tuple[Guard, ...]
    inference: Any = None
    #: the function object the instance was built for (weakly held: see ``fn``)
    function: Any = field(default=None, repr=False)
    #: own closure cells inference relied on: (free variable index, object or ``SELF``)
    cells: tuple[tuple[int, Any], ...] = ()
    #: the abstract values of the defaults inference read (None: it read none)
    defaults: Any = None
    #: the callee instances run by direct calls (they must live as long as this code)
    direct: list[Binding] = field(default_factory=list, repr=False)
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
    #: the Python functions whose code or defaults inference used, and the callees of its
    #: direct calls (their changes invalidate it: backedges)
    callees: tuple[Any, ...] = field(default=(), repr=False)
    #: the holders of its direct calls of itself (``splice.compiler.direct.SelfCall``)
    self_holders: tuple[list[Any], ...] = field(default=(), repr=False)
    #: how the owner got it: ``"built"`` by the stages, ``"bound"`` from what another
    #: context of its owner built (``splice.cache.shared_instances``)
    origin: str = "built"
    #: the IR of a stage not in ``stages``, made when first asked for (an instance bound
    #: or loaded from what its owner keeps: ``splice.runtime.instance_sharing``), or None
    restore: Any = field(default=None, repr=False)
    #: what its owner keeps of it for other contexts (``splice.cache.shared_instances``):
    #: the shared instance it was bound from, or made of it; invalidated with it
    shared: Any = field(default=None, repr=False)
    _dependents: list[weakref.ref[CodeInstance]] = field(default_factory=list, repr=False)
    _source: str | None = field(default=None, repr=False)
    _bindings: dict[int, Binding] = field(default_factory=dict, repr=False)
    _compiled: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        fn = self.function if self.function is not None else self.builder
        self._fn_ref: weakref.ref[types.FunctionType] = weakref.ref(fn)
        self.function = None
        code = self.specialization.code
        self._names = code.co_varnames
        self._argcount = code.co_argcount
        self.globals: dict[str, Any] = self.builder.__globals__
        #: ``[True]`` until the instance is invalidated: the flag C guard checks read
        self.alive: list[bool] = [True]

    def stage(self, name: str) -> FunctionIR:
        """The IR kept after the stage ``name`` (a ``KeyError`` lists the kept ones)."""
        try:
            return self.stages[name]
        except KeyError:
            pass
        restored: FunctionIR | None = None if self.restore is None else self.restore(name)
        if restored is None:
            raise KeyError(f"no IR kept for stage {name!r}; kept: "
                           f"{', '.join(self.stages)}") from None
        self.stages[name] = restored
        return restored

    @property
    def lowered(self) -> FunctionIR:
        """The IR after the ``lowered`` hooks."""
        return self.stage("lowered")

    @property
    def typed(self) -> FunctionIR:
        """The typed IR (after the ``typed`` hooks), every value with its abstract value."""
        return self.stage("typed")

    @property
    def optimized(self) -> FunctionIR:
        """The IR after the optimisation stage, the ``optimized`` hooks and direct calls."""
        return self.stage("optimized")

    @property
    def routed(self) -> FunctionIR:
        """The IR that was compiled."""
        return self.stage("routed")

    @property
    def fn(self) -> Any:
        """The function object the instance was built for (None once it was freed)."""
        return self._fn_ref()

    # ------------------------------------------------------------------ function objects

    def fits(self, fn: types.FunctionType) -> bool:
        """Whether ``fn`` (a function of the instance's code object) may run this instance:
        its globals, the cells inference read and (if read) its defaults are what the
        instance was inferred with."""
        if fn.__globals__ is not self.globals or not self.cells_hold(fn):
            return False
        return self.defaults is None or defaults_of(fn) == self.defaults

    def cells_hold(self, fn: types.FunctionType) -> bool:
        """Whether ``fn``'s closure cells still hold what inference read (a cell can be
        rebound after the closure was made)."""
        if not self.cells:
            return True
        closure = fn.__closure__
        assert closure is not None
        for index, expected in self.cells:
            try:
                content = closure[index].cell_contents
            except ValueError:
                return False
            if content is not (fn if expected is SELF else expected):
                return False
        return True

    def check_for(self, fn: types.FunctionType) -> Any:
        """A callable that tells, with no Python frame, whether ``fn`` may run this
        instance now: the instance is valid, its guards hold and ``fn``'s cells still hold
        what inference read (``splice.cache.guards.guard_check``; a False from it means
        "ask :meth:`check`", which invalidates). None without the C extension."""
        closure = fn.__closure__
        cells = [(closure[index], fn if expected is SELF else expected)
                 for index, expected in self.cells] if closure else []
        return guard_check(self.alive, self.guards, cells)

    def function_for(self, fn: types.FunctionType) -> types.FunctionType:
        """A function running this instance's code with ``fn``'s globals, closure cells and
        defaults (keyword defaults shared: changes to them show)."""
        from splice.ir.compiled import instantiate

        return instantiate(self.code, fn, share_kwdefaults=True)

    @property
    def compiled(self) -> types.FunctionType:
        """The function running this instance for ``fn`` (made on first use)."""
        compiled = self._compiled
        if compiled is None:
            fn = self.fn
            if fn is None:
                raise ReferenceError(f"the function {self.specialization} was compiled for "
                                     "was freed")
            compiled = self._compiled = self.function_for(fn)
        return compiled  # type: ignore[no-any-return]

    def bind(self, fn: types.FunctionType, holder: list[Any] | None = None) -> Binding:
        """The instance applied to ``fn`` for direct calls (one per function object): the
        function to call and the holder the call's guard compares the callee with.
        ``holder``: a list made before the instance existed, by its own code's direct
        calls of itself (``splice.compiler.direct.SelfCall``), used as the holder if ``fn``
        has no binding yet; its item 1 is set to the function first."""
        with _lock:
            found = self._bindings.get(id(fn))
            if found is not None:
                return found
            function = self.function_for(fn)
            if holder is None:
                holder = [INVALID]
            else:
                holder[1] = function
            holder[0] = fn if self.valid else INVALID
            binding = Binding(self, function, holder)
            self._bindings[id(fn)] = binding  # the holder keeps fn: its id stays unique
        if fn is not self.fn:
            # a new code or defaults of fn: its direct calls take the generic path at once
            add_backedge(fn, functools.partial(holder.__setitem__, 0, INVALID))
        return binding

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
            if not guard.holds():
                self.invalidate(f"{guard.describe()} changed")
                return False
        return True

    def invalidate(self, reason: str) -> None:
        """Mark the instance and its dependents invalid and move the world."""
        with _lock:
            if self.max_world != MAX_WORLD:
                return
            self.max_world = world()
            self.alive[0] = False
            self.invalidated_because = reason
            for binding in self._bindings.values():
                binding.holder[0] = INVALID
            dependents = [ref() for ref in self._dependents]
            self._dependents.clear()
            self.owner.instances.discard(self)
        if self.shared is not None:
            # what it relied on changed for every context: none binds it again
            self.shared.invalidate(reason)
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
                import inspect

                bound = inspect.signature(self.compiled).bind(*args, **kwargs)
            except TypeError:
                return None
            bound.apply_defaults()
            values = [bound.arguments[name] for name in names[:len(argtypes)]]
        for index, expected in enumerate(argtypes):
            value = values[index]
            if not expected.accepts(value):
                return (f"{self.builder.__qualname__}() argument {index + 1} ({names[index]!r}) "
                        f"is {type(value).__name__} {_short(value)}, but this instance is "
                        f"specialized for {expected}")
        key = self.specialization.key
        if key is not None:
            now = self.owner.hooks.key_of(self.fn, tuple(args), kwargs)
            if now != key:
                return (f"{self.builder.__qualname__}(): the runtime key is {now!r}, but this "
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


def invoke(ci: CodeInstance, /, *args: Any, **kwargs: Any) -> Any:
    """Call exactly the code instance ``ci`` with ``args`` and ``kwargs``.

    Raises ``InvalidatedError`` if ``ci`` was invalidated (or a global or attribute it
    relied on has changed since), and ``ArgumentTypeError`` (a ``TypeError``) naming the
    argument, its type and the expected abstract type if the arguments do not fit ``ci``'s
    specialization. Arguments that do not bind to the signature raise as natively."""
    if not isinstance(ci, CodeInstance):
        raise TypeError(f"invoke() takes a code instance (what splice.compile returns), not "
                        f"{type(ci).__name__}: splice.invoke(splice.compile(plugin, fn, "
                        "*argtypes), *args)")
    if not ci.check():
        raise InvalidatedError(
            f"{ci.specialization} was invalidated ({ci.invalidated_because}); it was valid "
            f"in worlds {ci.min_world}..{ci.max_world}, the world is now {world()}: "
            "compile it again with splice.compile")
    problem = ci.mismatch(args, kwargs)
    if problem is not None:
        raise ArgumentTypeError(problem)
    return ci.compiled(*args, **kwargs)


# ------------------------------------------------------------------ making instances


def is_nested(fn: types.FunctionType) -> bool:
    """Whether the function ``fn`` was made inside another function (its code's qualified
    name says so), so the program may make and drop many of them. (The code's, not the
    function's: ``functools.wraps`` gives a wrapper the wrapped function's name, and a
    wrapper made per object, as ``tempfile``'s file wrapper makes them, must not be kept
    alive by the table.)"""
    return "<locals>" in fn.__code__.co_qualname


def builder_of(fn: types.FunctionType, *, cell_free: bool = False) -> types.FunctionType:
    """The function an instance for ``fn`` is inferred and compiled from: ``fn`` itself if
    it is a module's function, else a copy of ``fn`` (a nested function may be made anew in
    a loop), whose cells hold only what inference reads from cells (functions and classes;
    a cell holding ``fn`` holds the copy), so the instance keeps neither ``fn`` nor what
    ``fn`` captured (a copy's defaults are dropped once its instance is built:
    ``make_instance``). ``cell_free``:
    every cell empty (inference reads nothing from them; the instance fits every function
    object of the code)."""
    code = fn.__code__
    if not code.co_freevars:
        # a module-level function lives as long as its module anyway; a nested one may be
        # made anew in a loop, and the instance must not keep the first object alive
        return _copy_of(fn, None) if is_nested(fn) else fn
    closure = fn.__closure__ or ()
    cells: list[types.CellType] = []
    itself: list[types.CellType] = []
    for cell in closure:
        try:
            content = cell.cell_contents
        except ValueError:
            content = None
        if cell_free or not isinstance(content, (types.FunctionType, type)):
            cells.append(types.CellType())
        elif content is fn:
            cells.append(types.CellType())
            itself.append(cells[-1])
        else:
            cells.append(types.CellType(content))
    builder = _copy_of(fn, tuple(cells))
    for cell in itself:
        cell.cell_contents = builder
    return builder


def _copy_of(fn: types.FunctionType, closure: tuple[types.CellType, ...] | None
             ) -> types.FunctionType:
    """A function of ``fn``'s code, globals, defaults and names with ``closure``."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              closure)
    copy.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    copy.__qualname__ = fn.__qualname__
    copy.__module__ = fn.__module__
    copy.__doc__ = fn.__doc__
    copy.__annotations__ = dict(fn.__annotations__)
    return copy


def make_instance(owner: Any, fn: types.FunctionType, spec: Specialization, *,
                  self_calls: list[tuple[types.FunctionType, list[Any]]],
                  **parts: Any) -> CodeInstance:
    """A ``CodeInstance`` of ``spec`` for ``fn`` under ``owner`` from its ``parts``
    (``CodeInstance``'s fields), connected to what it relies on: backedges to ``fn`` and
    its ``callees``, dependent on their instances under ``owner``, and the holders of its
    calls of itself (``self_calls``: the function each call's guard compares with, and
    the holder) bound to it. Built by the stages, or bound from what the owner keeps
    (``splice.runtime.instance_sharing``)."""
    ci = CodeInstance(specialization=spec, owner=owner, function=fn,
                      self_holders=tuple(holder for _, holder in self_calls), **parts)
    _connect(ci, fn, list(ci.callees))
    for callee, holder in self_calls:
        ci.bind(callee, holder)
    if ci.builder is not fn:
        _release_defaults(ci.builder)
        own = ci._bindings.get(id(ci.builder))
        if own is not None:
            _release_defaults(own.function)
    return ci


def _release_defaults(function: types.FunctionType) -> None:
    """Drop the defaults of ``function``: a builder copied from a nested function
    (:func:`builder_of`), or the function its own calls of itself were bound to, once
    its instance is built. Inference read the builder's defaults while the stages ran, and
    what the instance relies on of them it keeps as abstract values (``defaults``, checked
    by :meth:`CodeInstance.fits`). Kept, they would outlive the program's last reference
    to the first function object's defaults. The function bound for the builder is never
    called: its calls' guard compares the callee with the builder, which only splice
    holds. (Assigning the defaults raises the audit event ``splice.cache.world`` watches;
    nothing has an edge to either function, so it drops nothing and the world does not
    move.)"""
    if function.__defaults__ is not None:
        function.__defaults__ = None
    if function.__kwdefaults__ is not None:
        function.__kwdefaults__ = None


def _connect(ci: CodeInstance, fn: types.FunctionType, callees: list[Any]) -> None:
    """Backedges: the instance is invalidated when ``fn`` or a callee it relied on changes
    (``__code__``, defaults; ``splice.invalidate``), and with the instances of its callees
    under the same owner."""
    ref = weakref.ref(ci)

    def drop_for(what: Any) -> Callable[[], None]:
        name = describe(what)

        def drop() -> None:
            live = ref()
            if live is not None:
                live.invalidate(f"{name} was redefined")
        return drop

    add_backedge(fn, drop_for(fn))
    cache = cache_of(ci.owner)
    for callee in callees:
        if callee is fn:
            continue
        try:
            add_backedge(callee, drop_for(callee))
        except TypeError:  # cannot be weakly referenced (a builtin)
            continue
        code = getattr(callee, "__code__", None)
        if isinstance(code, types.CodeType):
            for other in cache.of_code(code):
                other.add_dependent(ci)


# ---------------------------------------------------------------------------- the caches


_lock = fork_safe_rlock()


class InstanceCache:
    """The code instances of one owner, by code object (several per specialization when
    function objects of one code differ in what inference read: see
    ``CodeInstance.fits``)."""

    def __init__(self) -> None:
        # id(code) -> its instances; an instance holds its code, so the id stays unique
        self._by_code: dict[int, list[CodeInstance]] = {}
        #: how many instances were built (tests check "compiled once"), and how many
        #: were bound from what the owner keeps (``splice.cache.shared_instances``)
        self.builds = 0
        self.bound = 0
        # id(code) -> (the code, held weakly; invalidations of its instances; the last
        # reason): how often what its instances relied on changed
        self._invalidations: dict[int, tuple[weakref.ref[types.CodeType], int, str]] = {}

    def find(self, spec: Specialization, fn: types.FunctionType, *, own: bool = False
             ) -> CodeInstance | None:
        """A valid instance of ``spec`` that ``fn`` may run (``own``: built for ``fn``
        itself), if there is one."""
        for ci in self._by_code.get(id(spec.code), ()):
            if _same(ci.specialization, spec) and ci.valid and ci.fits(fn) and \
                    (not own or ci.fn is fn):
                return ci
        return None

    def variants(self, spec: Specialization) -> int:
        """How many valid instances ``spec`` has (for different function objects)."""
        return sum(1 for ci in self._by_code.get(id(spec.code), ())
                   if _same(ci.specialization, spec) and ci.valid)

    def add(self, ci: CodeInstance, *, built: bool = True) -> None:
        with _lock:
            self._by_code.setdefault(id(ci.specialization.code), []).append(ci)
            if built:
                self.builds += 1
            else:
                self.bound += 1
        _all_instances.add(ci)

    def discard(self, ci: CodeInstance) -> None:
        with _lock:
            code = ci.specialization.code
            key = id(code)
            found = self._by_code.get(key)
            if found is not None and ci in found:
                found.remove(ci)
                if not found:
                    del self._by_code[key]
            if ci.invalidated_because is not None:
                _, count, _ = self.invalidations_of(code)
                self._invalidations[key] = (weakref.ref(code), count + 1,
                                            ci.invalidated_because)

    def invalidations_of(self, code: types.CodeType) -> tuple[Any, int, str]:
        """``(code, how many of its instances were invalidated, the last reason)``."""
        entry = self._invalidations.get(id(code))
        if entry is None or entry[0]() is not code:
            return code, 0, ""
        return code, entry[1], entry[2]

    def rebuilt_too_often(self, code: types.CodeType, max_rebuilds: int) -> str | None:
        """Why ``code`` gets no more instances (what they relied on changed
        ``max_rebuilds`` times: ``CompileParams.max_rebuilds``), or None while it may."""
        _, invalidations, last = self.invalidations_of(code)
        if invalidations < max_rebuilds:
            return None
        return (f"its instances were invalidated {invalidations} times (the last: {last}; "
                f"CompileParams.max_rebuilds is {max_rebuilds})")

    def of_code(self, code: types.CodeType) -> list[CodeInstance]:
        """The valid instances compiled from ``code``."""
        return [ci for ci in self._by_code.get(id(code), ()) if ci.valid]

    def __iter__(self) -> Any:
        return iter([ci for found in list(self._by_code.values()) for ci in found])

    def __len__(self) -> int:
        return sum(len(found) for found in self._by_code.values())


def _same(a: Specialization, b: Specialization) -> bool:
    # (not ``==``: comparing code objects compares their contents, and ignores file names)
    return a.code is b.code and a.argtypes == b.argtypes and a.key == b.key


_all_instances: weakref.WeakSet[CodeInstance] = weakref.WeakSet()


def cache_of(owner: Owner) -> InstanceCache:
    """The instance cache of ``owner``, a field of the owner itself (instances refer to
    their owner: a cache kept elsewhere, keyed weakly by the owner, would keep it alive)."""
    return owner.instances


def instances_of(owner: Owner) -> list[CodeInstance]:
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
