"""Rebuild a module in place: every Python function and method it defines replaced by its
round-tripped version (``splice.ir.roundtrip``), restorably.

::

    restore = rebuild_module(textwrap)      # textwrap now runs regenerated code
    print(restore.stats)                    # replaced / unsupported / failed / kept native
    restore()                               # the original objects are back

Which functions
---------------
A function is the module's when ``fn.__module__ == module.__name__`` *and* its code's
``co_filename`` is the module's file (``<frozen name>`` for frozen modules). The first test
alone would take wrappers that ``functools.wraps`` copied ``__module__`` onto (such as
``contextlib.contextmanager``'s ``helper``, whose code lives in contextlib) and functions made
by ``exec`` (``dataclasses``' generated ``__init__``, which has no source); the second keeps
them out. :func:`rebuild_modules` rebuilds several modules as one unit (a package and its
submodules): a function of any of them found through any of them is replaced; the test is
then "``__module__`` is one of their names and ``co_filename`` one of their files", which also
covers ``_pydecimal`` (its functions say ``__module__ == "decimal"``). Functions a rebuild
produced are never rebuilt again (a module that re-exports a rebuilt module's functions).

Where functions are replaced (each slot rewritten is recorded and put back by ``restore()``)
---------------------------------------------------------------------------------------------
* the module's globals;
* classes reached from the globals (nested classes included; a class is walked wherever it is
  defined, but only the rebuilt modules' functions are replaced): plain methods,
  ``staticmethod`` and ``classmethod`` (a new descriptor over the new function, with the old
  descriptor's attributes), ``property`` (a copy made with ``getter``/``setter``/``deleter``,
  so subclasses and the docstring survive), objects holding ``fget``/``fset``/``fdel`` in their
  ``__dict__`` (``types.DynamicClassAttribute``, ``enum.property``: changed in place),
  ``functools.cached_property`` and ``functools.partialmethod`` (``func`` changed in place);
* bound methods in the globals (``random.randint = _inst.randint``: rebound to the new
  function, same ``__self__``), ``functools.partial`` objects (a new partial, same arguments);
* items of plain ``dict``, ``list`` and ``tuple`` objects held in the globals or a class
  dict, nested up to three levels (dispatch tables such as ``pickle._Pickler.dispatch``,
  ``copy._deepcopy_dispatch``, ``functools._convert``: dicts and lists change in place, a
  tuple holding a function is replaced by a new tuple in its container), and attributes of
  objects held directly in the globals whose instance ``__dict__`` holds functions
  (``json._default_decoder.scan_once`` when the pure-Python scanner is used);
* closure cells: a rebuilt function shares its original's cells; a cell that holds a function
  of the module gets the new function (so a decorator's wrapper defined in the module calls
  the rebuilt inner function).

Identity: each original function is round-tripped once and every slot that held it gets the
same new object, so aliases stay aliases (``A.__iter__ is A.keys``, ``f is A.__dict__['g']``).
References the walk does not reach keep the original (default argument values, closures made
before the rebuild by functions of other modules, references other modules took with ``from
m import f`` before the rebuild, instances' dicts beyond the module's own globals): the
original still works, it is just not rebuilt. Rebuild before the code that uses the module is
imported for the widest reach.

Wrappers (the ``__wrapped__`` choice)
-------------------------------------
* A ``functools.wraps`` wrapper defined in the module is itself rebuilt; the inner function,
  found in the wrapper's closure, is rebuilt too (its cell is set to the new inner function)
  and the new wrapper's ``__wrapped__`` is the new inner function. So both layers run
  regenerated code and ``inspect.unwrap`` sees the regenerated inner function.
* A wrapper from another module (``contextlib.contextmanager``'s ``helper``,
  ``functools.wraps`` in a decorator of another module) is kept, but a closure cell of it that
  holds a function of the module is set to the rebuilt function, and its ``__wrapped__``
  follows; so ``@contextmanager`` generators run rebuilt.
* ``functools.lru_cache``/``functools.cache`` wrappers (C objects) are replaced by a new
  wrapper with the same ``maxsize`` and ``typed`` around the new function: the cache starts
  empty, and ``cache_info()`` counts from zero.
* Other wrappers that are not Python functions (``functools.singledispatch`` registries,
  ``singledispatchmethod``, C wrappers) are kept native and counted in ``stats.kept_native``.

Failures: ``splice.UnsupportedError`` keeps the original and is counted in
``stats.unsupported``; any other exception (an internal error) keeps the original and is
counted in ``stats.failed`` (``strict=True`` raises it instead). With ``check=True``
(default) the new function's ``dis``-level facts are compared with the original's
(``splice.tools.corpus.compare_facts``); a mismatch counts as failed and keeps the original.
"""

from __future__ import annotations

import contextlib
import functools
import types
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import splice.ir
from splice.errors import UnsupportedError
from splice.tools.common import module_filenames

RoundTrip = Callable[..., types.FunctionType]
#: how deep plain dicts, lists and tuples are searched for functions
CONTAINER_DEPTH = 3


@dataclass
class RebuildStats:
    """What :func:`rebuild_module` did."""

    modules: list[str]
    #: distinct functions replaced by their round trip
    replaced: int = 0
    #: slots (globals, class attributes, cells, container items) rewritten
    slots: int = 0
    #: (qualified name, reason)
    unsupported: list[tuple[str, str]] = field(default_factory=list)
    #: (qualified name, "ExceptionType: message")
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: wrappers kept as they are, with the reason
    kept_native: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"modules": self.modules, "replaced": self.replaced, "slots": self.slots,
                "unsupported": self.unsupported, "failed": self.failed,
                "kept_native": self.kept_native}

    def __str__(self) -> str:
        return (f"rebuilt {', '.join(self.modules)}: {self.replaced} functions replaced "
                f"({self.slots} slots), {len(self.unsupported)} unsupported, "
                f"{len(self.failed)} failed, {len(self.kept_native)} wrappers kept native")


class Restore:
    """Calling it puts every original object back (once; later calls do nothing)."""

    def __init__(self, stats: RebuildStats, undo: list[Callable[[], None]]) -> None:
        self.stats = stats
        self._undo = undo

    def __call__(self) -> None:
        undo, self._undo = self._undo, []
        for step in reversed(undo):
            step()

    def __repr__(self) -> str:
        return f"<Restore: {self.stats}>"





def _safe_dict(value: object) -> dict[str, Any] | None:
    try:
        d = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - objects without a plain __dict__
        return None
    return d if type(d) is dict else None


def _name(fn: object) -> str:
    module = getattr(fn, "__module__", "?")
    return f"{module}.{getattr(fn, '__qualname__', repr(fn))}"


#: every function a rebuild produced: a later rebuild leaves them alone
_PRODUCED: weakref.WeakSet[types.FunctionType] = weakref.WeakSet()


class _Rebuilder:
    def __init__(self, modules: list[types.ModuleType], scope: list[types.ModuleType],
                 renest: bool, strict: bool, check: bool, roundtrip: RoundTrip) -> None:
        self.names = {m.__name__ for m in [*modules, *scope]}
        self.files = set().union(*(module_filenames(m) for m in [*modules, *scope]))
        self.renest = renest
        self.strict = strict
        self.check = check
        self.roundtrip = roundtrip
        self.stats = RebuildStats([m.__name__ for m in modules])
        self.undo: list[Callable[[], None]] = []
        self.memo: dict[int, types.FunctionType] = {}
        self.keep: list[object] = []  # keeps memo keys alive
        self.seen: set[int] = set()  # classes and containers already walked
        self.tuples: dict[int, object] = {}  # tuples already walked -> their replacement

    # -- what belongs

    def belongs(self, value: object) -> bool:
        if not isinstance(value, types.FunctionType) or value in _PRODUCED:
            return False
        return (getattr(value, "__module__", None) in self.names
                and value.__code__.co_filename in self.files)

    # -- slots

    def set_item(self, mapping: dict[Any, Any], key: object, new: object) -> None:
        old = mapping[key]
        mapping[key] = new
        self.stats.slots += 1
        self.undo.append(lambda: mapping.__setitem__(key, old))

    def set_attr(self, obj: object, attr: str, new: object) -> None:
        old = getattr(obj, attr)
        setattr(obj, attr, new)
        self.stats.slots += 1
        self.undo.append(lambda: setattr(obj, attr, old))

    def set_cell(self, cell: types.CellType, new: object) -> None:
        old = cell.cell_contents
        cell.cell_contents = new
        self.stats.slots += 1

        def undo() -> None:
            cell.cell_contents = old
        self.undo.append(undo)

    # -- functions

    def convert(self, fn: types.FunctionType) -> types.FunctionType:
        known = self.memo.get(id(fn))
        if known is not None:
            return known
        self.memo[id(fn)] = fn  # provisional: cycles through cells end here
        self.keep.append(fn)
        new = fn
        try:
            new = self.roundtrip(fn, renest=self.renest)
            if self.check:
                from splice.tools.corpus import compare_facts
                compare_facts(fn, new)
        except UnsupportedError as exc:
            self.stats.unsupported.append((_name(fn), exc.reason))
            new = fn
        except Exception as exc:
            if self.strict:
                raise
            self.stats.failed.append((_name(fn), f"{type(exc).__name__}: {exc}"[:300]))
            new = fn
        else:
            self.stats.replaced += 1
            _PRODUCED.add(new)
        self.memo[id(fn)] = new
        self.rewire(fn)
        wrapped = fn.__dict__.get("__wrapped__")
        if wrapped is not None:
            new_wrapped = self.transform(wrapped)
            if new_wrapped is not wrapped:
                if new is fn:
                    self.set_attr(new, "__wrapped__", new_wrapped)
                else:
                    new.__wrapped__ = new_wrapped  # type: ignore[attr-defined]
        return new

    def rewire(self, fn: types.FunctionType) -> bool:
        """Point ``fn``'s closure cells that hold the module's functions at their rebuilds."""
        changed = False
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, (types.FunctionType, staticmethod, classmethod, property,
                                  types.MethodType)) or self.is_lru(value):
                new = self.transform(value)
                if new is not value:
                    self.set_cell(cell, new)
                    changed = True
        return changed

    @staticmethod
    def is_lru(value: object) -> bool:
        return (type(value).__name__ == "_lru_cache_wrapper"
                and hasattr(value, "cache_parameters"))

    # -- any value

    def transform(self, value: object) -> object:
        """The object that should replace ``value`` (``value`` itself if nothing changes;
        objects changed in place are returned unchanged)."""
        if isinstance(value, types.FunctionType):
            if self.belongs(value):
                return self.convert(value)
            self.foreign_wrapper(value)
            return value
        if isinstance(value, type):
            self.walk_class(value)
            return value
        if isinstance(value, (staticmethod, classmethod)):
            inner: object = value.__func__
            new_inner = self.transform(inner)
            if new_inner is inner:
                return value
            descriptor = type(value)(cast(Any, new_inner))
            for k, v in (_safe_dict(value) or {}).items():
                if k != "__wrapped__":
                    with contextlib.suppress(Exception):
                        setattr(descriptor, k, v)
            return descriptor
        if isinstance(value, property):
            return self.transform_property(value)
        if isinstance(value, types.MethodType):
            inner = value.__func__
            new_inner = self.transform(inner)
            if new_inner is inner:
                return value
            return types.MethodType(cast(Callable[..., Any], new_inner), value.__self__)
        if isinstance(value, functools.partial):
            new_func = self.transform(value.func)
            if new_func is value.func:
                return value
            new_partial = type(value)(cast(Callable[..., Any], new_func), *value.args,
                                      **value.keywords)
            with contextlib.suppress(Exception):
                new_partial.__dict__.update(value.__dict__)
            return new_partial
        if isinstance(value, (functools.cached_property, functools.partialmethod)):
            func: object = value.func
            new_func = self.transform(func)
            if new_func is not func:
                self.set_attr(value, "func", new_func)
            return value
        if self.is_lru(value):
            return self.transform_lru(value)
        d = _safe_dict(value)
        if d is not None and any(k in d for k in ("fget", "fset", "fdel")):
            for attr in ("fget", "fset", "fdel"):  # DynamicClassAttribute, enum.property
                part = d.get(attr)
                if part is not None:
                    new_part = self.transform(part)
                    if new_part is not part:
                        self.set_item(d, attr, new_part)
            return value
        if isinstance(value, functools.singledispatchmethod) or (
                d is not None and "__wrapped__" in d and self.belongs(d["__wrapped__"])):
            self.stats.kept_native.append((_name(value), f"a {type(value).__name__} wrapper"))
        return value

    def foreign_wrapper(self, fn: types.FunctionType) -> None:
        """A function of another module wrapping one of ours (``contextmanager``'s helper):
        kept, but its cells get the rebuilt inner functions."""
        wrapped = fn.__dict__.get("__wrapped__")
        if wrapped is None or id(fn) in self.seen:
            return
        self.seen.add(id(fn))
        if self.rewire(fn):
            new_wrapped = self.transform(wrapped)
            if new_wrapped is not wrapped:
                self.set_attr(fn, "__wrapped__", new_wrapped)
        elif self.belongs(wrapped) or (isinstance(wrapped, types.FunctionType)
                                       and self.memo.get(id(wrapped)) is not None):
            self.stats.kept_native.append(
                (_name(fn), (f"wrapper {fn.__code__.co_qualname} from "
                             f"{fn.__code__.co_filename} does not hold its inner function "
                             "in a closure cell")))

    def transform_property(self, prop: property) -> object:
        parts = {attr: getattr(prop, attr) for attr in ("fget", "fset", "fdel")}
        new_parts = {a: (self.transform(f) if f is not None else None)
                     for a, f in parts.items()}
        if all(new_parts[a] is parts[a] for a in parts):
            return prop
        try:
            new = prop
            for attr, method in (("fget", "getter"), ("fset", "setter"),
                                 ("fdel", "deleter")):
                if new_parts[attr] is not parts[attr]:
                    new = getattr(new, method)(new_parts[attr])
            d = _safe_dict(prop)
            if d:
                new.__dict__.update(d)
        except Exception as exc:  # noqa: BLE001 - odd property subclasses
            self.stats.kept_native.append((_name(parts["fget"] or prop),
                                           f"property copy failed: {exc}"))
            return prop
        return new

    def transform_lru(self, wrapper: Any) -> object:
        inner = wrapper.__wrapped__
        new_inner = self.transform(inner)
        if new_inner is inner:
            return wrapper
        params = wrapper.cache_parameters()
        new = functools.lru_cache(maxsize=params["maxsize"], typed=params["typed"])(new_inner)
        for k, v in (_safe_dict(wrapper) or {}).items():
            if k != "__wrapped__":
                with contextlib.suppress(Exception):
                    setattr(new, k, v)
        return new

    # -- containers

    def walk_class(self, cls: type) -> None:
        if id(cls) in self.seen:
            return
        self.seen.add(id(cls))
        try:
            items = list(vars(cls).items())
        except TypeError:
            return
        for attr, value in items:
            new = self.transform(value)
            if new is value:
                new = self.walk_container(value)
            if new is not value:
                try:
                    self.set_attr_raw(cls, attr, new)
                except (TypeError, AttributeError) as exc:
                    self.stats.kept_native.append((f"{cls.__qualname__}.{attr}",
                                                   f"class attribute not settable: {exc}"))

    def set_attr_raw(self, cls: type, attr: str, new: object) -> None:
        old = cls.__dict__[attr]
        type.__setattr__(cls, attr, new)
        self.stats.slots += 1
        self.undo.append(lambda: type.__setattr__(cls, attr, old))

    def walk_container(self, value: object, depth: int = 0) -> object:
        """Rebuild the functions held in plain dicts, lists and tuples (nested up to
        :data:`CONTAINER_DEPTH`): dicts and lists change in place; a tuple that holds a
        function is replaced by a new tuple, which is returned (``value`` otherwise)."""
        if depth > CONTAINER_DEPTH:
            return value
        kind = type(value)
        if kind is tuple:
            known = self.tuples.get(id(value))
            if known is not None:
                return known
            old = cast(tuple[object, ...], value)
            items = [self.item(item, depth) for item in old]
            changed = any(a is not b for a, b in zip(items, old, strict=True))
            new = tuple(items) if changed else value
            self.tuples[id(value)] = new
            self.keep.append(value)
            return new
        if id(value) in self.seen or kind not in (dict, list):
            return value
        self.seen.add(id(value))
        if kind is dict:
            d: dict[Any, Any] = value  # type: ignore[assignment]
            for key, item in list(d.items()):
                new_item = self.item(item, depth)
                if new_item is not item:
                    self.set_item(d, key, new_item)
                # a dict keyed by a function of the module (typing._caches, 3.12+: keyed by
                # the function its wrapper's cell holds, which rewire() re-points): the
                # rebuilt function is a key too, with the same (rebuilt) item
                new_key = self.transform(key) if isinstance(key, types.FunctionType) else key
                if new_key is not key and new_key not in d:
                    self.add_key(d, new_key, new_item)
        else:
            lst: list[Any] = value  # type: ignore[assignment]
            for index, item in enumerate(list(lst)):
                new_item = self.item(item, depth)
                if new_item is not item:
                    self.set_list_item(lst, index, new_item)
        return value

    def item(self, item: object, depth: int) -> object:
        """The replacement of one item of a container."""
        if self.callable_like(item):
            return self.transform(item)
        if type(item) in (dict, list, tuple):
            return self.walk_container(item, depth + 1)
        return item

    def add_key(self, mapping: dict[Any, Any], key: object, new: object) -> None:
        mapping[key] = new
        self.stats.slots += 1
        self.undo.append(lambda: mapping.pop(key, None))

    def set_list_item(self, target: list[Any], index: int, new: object) -> None:
        old = target[index]
        target[index] = new
        self.stats.slots += 1
        self.undo.append(lambda: target.__setitem__(index, old))

    def callable_like(self, value: object) -> bool:
        return isinstance(value, (types.FunctionType, staticmethod, classmethod,
                                  types.MethodType, functools.partial)) or self.is_lru(value)

    def walk_instance(self, value: object) -> None:
        """Function-valued attributes of an object held directly in the globals."""
        if isinstance(value, (types.ModuleType, type, types.FunctionType)) or id(
                value) in self.seen:
            return
        d = _safe_dict(value)
        if d is None:
            return
        self.seen.add(id(value))
        for key, item in list(d.items()):
            if isinstance(item, (types.FunctionType, types.MethodType)):
                new = self.transform(item)
                if new is not item:
                    self.set_item(d, key, new)

    def walk_module(self, module: types.ModuleType) -> None:
        globals_ = vars(module)
        for name, value in list(globals_.items()):
            new = self.transform(value)
            if new is value:
                new = self.walk_container(value)
                self.walk_instance(value)
            if new is not value:
                self.set_item(globals_, name, new)


def rebuild_modules(modules: Iterable[types.ModuleType], *, renest: bool = True,
                    strict: bool = False, check: bool = True,
                    roundtrip: RoundTrip | None = None,
                    scope: Iterable[types.ModuleType] = ()) -> Restore:
    """Rebuild several modules as one unit (see the module docstring); returns the
    :class:`Restore` that puts the originals back (its ``stats`` say what was done).

    ``scope``: more modules whose functions count as the unit's when reached from
    ``modules`` (their own globals are not walked)."""
    mods = list(modules)
    rebuilder = _Rebuilder(mods, list(scope), renest, strict, check,
                           roundtrip if roundtrip is not None else splice.ir.roundtrip)
    try:
        for module in mods:
            rebuilder.walk_module(module)
    except BaseException:
        Restore(rebuilder.stats, rebuilder.undo)()
        raise
    return Restore(rebuilder.stats, rebuilder.undo)


def rebuild_module(module: types.ModuleType, *, renest: bool = True, strict: bool = False,
                   check: bool = True, roundtrip: RoundTrip | None = None) -> Restore:
    """Replace every Python function and method defined in ``module`` by its round trip, in
    place; return the :class:`Restore` that puts the originals back."""
    return rebuild_modules([module], renest=renest, strict=strict, check=check,
                           roundtrip=roundtrip)
