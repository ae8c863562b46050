"""Transformed code shared by the contexts of one owner (``splice.cache.owners``).

Code a context builds reads two kinds of objects through its hidden cells: objects that are
the same for every context of the owner (builtins, the program's functions and classes,
helpers, constants a plugin's hook inserted from its configuration) and objects of the
building context itself: its dispatch table and the table's fast dict, lookups and bound
methods, its implicit-call and attribute protocols, its call sites, the plugin objects and
their attributes (a ``Tracer``'s per-thread event list). ``template`` tells the two apart:
the first are kept as they are, the second as the *path* that reached them from the
building context (``("table", "fast")``, ``("plugins", 0, "_local")``), a bound method as
its object's path and its name, a call site as a fresh site of the binding context's
table. ``bind`` follows the paths from another context, so the code runs that context's
table, sites and plugins, exactly as if it had built the code itself.

Soundness: a value is kept as shared only if nothing in it is a runtime object of splice
(a context, table, site, protocol object, plugin) that the paths do not name; a function's
closure cells and a bound method's object are looked into. A value that cannot be told
apart makes the code unshared (``template`` None): each context builds its own, as
without an owner. So a shared value is never one of the building context's objects, and a
path always leads to the binding context's object of the same role. What a plugin keeps
*inside* its attributes (an object in a list it holds) is shared: its token promises that
the code its hooks make depends on its configuration only (``Plugin.cache_token``).
"""

from __future__ import annotations

import types
from collections.abc import Hashable, Mapping
from typing import Any, Protocol

from splice.cache.shared_code import SharedCode
from splice.errors import UnsupportedError
from splice.ir.compiled import CompiledCode
from splice.pristine import BUILTINS
from splice.runtime.attributes import Attributes
from splice.runtime.classes import ClassCreation
from splice.runtime.implicit import Implicit
from splice.runtime.sites import Site
from splice.runtime.table import DispatchTable

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["bind", "context_objects", "follow", "share", "shareable_value"]

Path = tuple[str | int, ...]


class Context(Protocol):
    """What sharing reads of a ``splice.runtime.context.Context``."""

    table: DispatchTable
    implicit: Implicit | None
    plugins: tuple[Any, ...]

#: values that are the same object in every context whatever they hold
_ATOMS = (type(None), bool, int, float, complex, str, bytes, type, types.ModuleType,
          types.CodeType, type(Ellipsis), type(NotImplemented))
#: splice's runtime objects: one per context, never shared
_RUNTIME = (DispatchTable, Site, Implicit, Attributes, ClassCreation)
#: ... and any other object of a class of splice's runtime (a driven protocol, a method
#: lookup, a constructor): made per context unless a path names it
_RUNTIME_PACKAGE = "splice.runtime"
#: how deep ``shareable_value`` looks into containers, closures and bound methods
_DEPTH = 4


def context_objects(context: Context) -> dict[int, Path]:
    """id -> path from ``context`` of every object of ``context`` that generated code may
    hold: its parts (the table, its fast dict and lookups, the protocol objects and their
    driven steps), the plugin objects and their attributes."""
    paths: dict[int, Path] = {}
    implicit = context.implicit

    def add(path: Path, obj: Any) -> None:
        if isinstance(obj, (*_ATOMS, tuple, frozenset)):
            return
        paths.setdefault(id(obj), path)

    add((), context)
    parts: list[tuple[Path, Any]] = [((), context), (("table",), context.table)]
    if implicit is not None:
        parts += [(("implicit",), implicit), (("implicit", "attributes"), implicit.attributes),
                  (("implicit", "classes"), implicit.classes)]
    for path, part in parts:
        add(path, part)
        for name, value in vars(part).items():
            add((*path, name), value)
    for name in ("methods", "methods_without_callbacks"):
        # a method lookup's twin for calls passing the receiver again, and each one as the
        # builtin function generated code calls (each made once per lookup:
        # ``splice/runtime/_methods.c``)
        lookup: Any = getattr(context.table, name, None)
        twin = getattr(lookup, "receiver_first", None)
        if twin is not None:
            add(("table", name, "receiver_first"), twin)
            add(("table", name, "builtin"), lookup.builtin)
            add(("table", name, "receiver_first", "builtin"), twin.builtin)
    for index, plugin in enumerate(context.plugins):
        add(("plugins", index), plugin)
        for name, value in vars(plugin).items():
            add(("plugins", index, name), value)
    return paths


def follow(context: Context, path: Path) -> Any:
    """The object at ``path`` from ``context`` (what ``context_objects`` named)."""
    obj: Any = context
    for step in path:
        obj = obj[step] if isinstance(step, int) else getattr(obj, step)
    return obj


def shareable_value(value: Any, paths: dict[int, Path], plugins: tuple[Any, ...],
               depth: int = _DEPTH) -> bool:
    """Whether ``value`` is the same object for every context: none of splice's runtime
    objects or plugins is in it (as far as ``depth`` looks)."""
    if isinstance(value, _ATOMS):
        return True
    if id(value) in paths or isinstance(value, _RUNTIME) or any(value is p for p in plugins) \
            or type(value).__module__.startswith(_RUNTIME_PACKAGE):
        return False
    if depth == 0:
        return not hasattr(value, "__dict__")  # an object that may hold anything: unknown
    if isinstance(value, (tuple, frozenset, list, set)):
        return all(shareable_value(v, paths, plugins, depth - 1) for v in value)
    if isinstance(value, dict):
        return all(shareable_value(k, paths, plugins, depth - 1) and
                   shareable_value(v, paths, plugins, depth - 1) for k, v in value.items())
    if isinstance(value, types.FunctionType):
        cells = value.__closure__ or ()
        try:
            contents = [cell.cell_contents for cell in cells]
        except ValueError:  # an empty cell: holds nothing yet, may later
            return False
        return all(shareable_value(v, paths, plugins, depth - 1) for v in contents)
    if isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        owner = value.__self__
        return owner is None or shareable_value(owner, paths, plugins, depth - 1)
    return True


def _entry(name: str, value: Any, context: Context, paths: dict[int, Path]
           ) -> tuple[Any, ...] | None:
    """How a context gets hidden cell ``name``'s value (``value`` under ``context``), or
    None if that cannot be told."""
    path = paths.get(id(value))
    if path is not None:
        return ("path", path)
    if isinstance(value, Site):
        return ("site",) if value.table() is context.table else None
    if isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        owner_path = paths.get(id(value.__self__))
        if owner_path is not None:
            method_name = value.__name__
            try:
                same = getattr(value.__self__, method_name) == value
            except AttributeError:
                same = False
            return ("method", owner_path, method_name) if same else None
    if shareable_value(value, paths, context.plugins):
        return ("value", value)
    return None


def share(compiled: CompiledCode | UnsupportedError, context: Context,
          original_freevars: tuple[str, ...], objects: Mapping[int, Hashable] | None = None
          ) -> SharedCode | UnsupportedError:
    """``compiled`` (built under ``context``) as its owner keeps it; an ``UnsupportedError``
    is kept as it is. ``objects``: id -> name of the hidden values the binder makes
    itself (a code instance's direct-call holders: ``splice.runtime.instance_sharing``),
    kept as ``("object", name)``."""
    if not isinstance(compiled, CompiledCode):
        return compiled
    paths = context_objects(context)
    template: dict[str, tuple[Any, ...]] | None = {}
    for name, value in compiled.hidden.items():
        made = None if objects is None else objects.get(id(value))
        entry = ("object", made) if made is not None else \
            _entry(name, value, context, paths)
        if entry is None:
            template = None
            break
        template[name] = entry  # type: ignore[index]
    return SharedCode(compiled.code, original_freevars, template)


def bind(shared: SharedCode, context: Context,
         objects: Mapping[Hashable, object] | None = None) -> CompiledCode | None:
    """``shared`` running under ``context`` (its table, sites and plugins), or None if it
    cannot be shared (the context builds its own). ``objects``: the values of the
    template's ``("object", name)`` entries, by name."""
    if shared.template is None:
        return None
    hidden: dict[str, object] = {}
    for name, entry in shared.template.items():
        kind = entry[0]
        if kind == "object":
            if objects is None or entry[1] not in objects:
                return None
            hidden[name] = objects[entry[1]]
        elif kind == "value":
            hidden[name] = entry[1]
        elif kind == "path":
            hidden[name] = follow(context, entry[1])
        elif kind == "method":
            hidden[name] = getattr(follow(context, entry[1]), entry[2])
        else:  # "site"
            hidden[name] = Site(context.table)
    return CompiledCode.of(shared.code, hidden, shared.original_freevars)
