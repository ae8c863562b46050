"""Containers as inference tracks them: lists, sets and dicts per allocation site.

What the containers of a site hold is the join of everything stored into any of them that
inference sees (``append``, item assignment, ``update``...). A container *escapes* when code
inference does not enter may reach it; its site then holds ``ANY`` for good, and so do the
containers and objects reachable from it. ``ContainerTracking`` is the part of
``AbstractInterpreter`` that does this (and the builtins that call back Python functions).
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from splice.infer import transfer
from splice.infer.lattice import (
    ANY,
    NEVER,
    Abstract,
    Alloc,
    Const,
    Elements,
    Exact,
    Method,
    PartialTuple,
    SuperOf,
    is_value_constant,
    join,
)
from splice.infer.objects import _drop_consts, _is_python_class, join_all_

if TYPE_CHECKING:
    from splice.infer.results import InferenceParams

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


class ContainerTracking:
    """Allocation sites, escapes, and the builtins that take callbacks (a mixin of
    ``AbstractInterpreter``)."""

    if TYPE_CHECKING:
        params: InferenceParams
        sites: dict[Any, Abstract]
        escaped: set[Any]
        escaped_classes: set[type]
        attr_table: dict[type, dict[str, Abstract]]
        _site_reads: set[Any]
        _site_hint: Any
        _attr_changed: bool

        def join(self, a: Abstract, b: Abstract) -> Abstract: ...

        def infer_call(self, func: Abstract, args: list[Abstract],
                       kwargs: dict[str, Abstract], frame: Any, stmt: Any = None
                       ) -> Abstract: ...

    def native_callbacks(self, fn: Any, args: list[Abstract], kwargs: dict[str, Abstract],
                         frame: Any) -> Abstract | None:
        """``sorted``/``min``/``max`` with a ``key=`` function, ``map`` and ``filter``:
        the builtin calls a Python function on the items; that call is inferred like any
        other (so it is not code inference cannot see). ``None``: not such a call."""
        def items_of(value: Abstract) -> Abstract | None:
            ok = any(isinstance(m, (Alloc, Elements, PartialTuple)) or m.exact_class in (
                range, str) or (isinstance(m, Const) and is_value_constant(m.value))
                for m in value.members())
            return self.elements_of(self._proxy(value)) if ok else None

        def callable_(value: Abstract) -> bool:
            return all(isinstance(m, Const) and isinstance(m.value, types.FunctionType)
                       or isinstance(m, Method) and isinstance(m.func, types.FunctionType)
                       for m in value.members())

        if fn in (sorted, min, max):
            key = kwargs.get("key")
            extra = set(kwargs) - {"key", "reverse", "default"}
            if key is None or extra or not callable_(key) or not args:
                return None
            if fn is sorted and len(args) != 1:
                return None
            items = items_of(args[0]) if len(args) == 1 else join_all_(args)
            if items is None or items is NEVER:
                return None
            keys = self.infer_call(key, [items], {}, frame)
            if not self.inert(keys):
                self.escape(keys)  # comparing them runs their methods
                self.escape(items)
            if fn is sorted:
                return self.new_site(list, items)
            default = kwargs.get("default")
            return items if default is None else self.join(items, default)
        if fn in (map, filter) and len(args) >= 2 and not kwargs and callable_(args[0]):
            if fn is filter and len(args) != 2:
                return None
            columns = [items_of(a) for a in args[1:]]
            if any(c is None for c in columns):
                return None
            inputs = [c for c in columns if c is not None]
            result = self.infer_call(args[0], inputs, {}, frame)
            if fn is map:
                return Elements(map, result)
            if not self.inert(result):
                self.escape(result)  # its truth is tested
            return Elements(filter, inputs[0])
        return None

    def _proxy(self, a: Abstract) -> Abstract:
        """A container argument as what a builtin sees: its class and its items."""
        if not any(isinstance(m, Alloc) for m in a.members()):
            return a
        result = NEVER
        for m in a.members():
            if isinstance(m, Alloc):
                m = Elements(m.cls, self.elements_of(m))
            result = join(result, m, 64)
        return result

    def summary(self, a: Alloc) -> Abstract:
        """What the containers of ``a``'s sites hold (for dicts: tuple[keys, values])."""
        result = NEVER
        for site in a.sites:
            self._site_reads.add(site)
            item = ANY if site in self.escaped else self.sites.get(site, NEVER)
            result = self.join(result, item)
        return result

    def dict_part(self, a: Abstract, index: int) -> Abstract:
        """The keys (0) or values (1) of the dicts ``a`` may be."""
        result = NEVER
        for m in a.members():
            if isinstance(m, Alloc) and m.cls is dict:
                content = self.summary(m)
                part = content.items[index] if isinstance(content, PartialTuple) else (
                    NEVER if content is NEVER else ANY)
                result = self.join(result, part)
            else:
                result = ANY
        return result

    def _materialize(self, fn: Any, result: Abstract, args: list[Abstract],
                     original: Sequence[Abstract] = (),
                     kwargs: dict[str, Abstract] | None = None) -> Abstract:
        """New lists, sets and dicts a builtin returns get an allocation site."""
        if result == Exact(dict) and fn is dict:
            contents: Abstract = NEVER
            if kwargs:
                contents = PartialTuple((Exact(str), join_all_(list(kwargs.values()))))
            if original:
                source = original[0]
                if isinstance(source, Alloc) and source.cls is dict:
                    contents = self.join(contents, self.summary(source))
                else:
                    pairs = self.elements_of(source)
                    if isinstance(pairs, PartialTuple) and len(pairs.items) == 2:
                        contents = self.join(contents, pairs)
                    elif pairs is not NEVER:
                        self.escape(source)
                        contents = ANY
            return self.new_site(dict, contents)
        if isinstance(result, Elements) and result.cls in (list, set):
            return self.new_site(result.cls, result.elem)
        if result == Exact(list) and fn in (list, sorted):
            return self.new_site(list, self.elements_of(args[0]) if args else NEVER)
        if result == Exact(set) and fn is set:
            return self.new_site(set, self.elements_of(args[0]) if args else NEVER)
        if result == Exact(tuple) and fn is tuple and args:
            return Elements(tuple, self.elements_of(args[0]))
        return result

    def container_method(self, name: str, receiver: Abstract, args: list[Abstract],
                         kwargs: dict[str, Abstract]) -> Abstract | None:
        """``list.append`` and friends on a list or set: record what goes in."""
        n = len(args)
        if kwargs and name != "sort":
            return None
        if name in ("append", "add") and n == 1:
            if name == "add" and not self.inert(args[0]):
                self.escape(args[0])
            self.write(receiver, args[0])
            return Const(None)
        if name == "insert" and n == 2:
            self.write(receiver, args[1])
            return Const(None)
        if name in ("extend", "update") and n == 1:
            if not self.inert(args[0]):
                self.escape(args[0])
            self.write(receiver, self.elements_of(args[0]))
            return Const(None)
        if name == "pop" and n <= 1:
            return self.elements_of(receiver)
        if name in ("clear", "reverse") and n == 0:
            return Const(None)
        if name in ("remove", "discard", "index", "count", "sort"):
            if not all(self.inert(a) for a in (receiver, *args, *kwargs.values())):
                self.escape(receiver)
                for a in (*args, *kwargs.values()):
                    self.escape(a)
            return Exact(int) if name in ("index", "count") else Const(None)
        if name == "copy" and n == 0 and receiver.exact_class is not None:
            return self.new_site(receiver.exact_class, self.elements_of(receiver))
        return None

    def dict_method(self, name: str, receiver: Alloc, args: list[Abstract],
                    kwargs: dict[str, Abstract]) -> Abstract | None:
        """Methods of a tracked dict: what goes in is recorded, what comes out is read."""
        n = len(args)
        if kwargs and name != "update":
            return None
        if args and not self.inert(args[0]) and name in ("get", "pop", "setdefault"):
            self.opaque([receiver, args[0]])  # hashing and comparing run their code
        keys, values = self.dict_part(receiver, 0), self.dict_part(receiver, 1)
        default = args[1] if n == 2 else Const(None)
        if name == "get" and n in (1, 2):
            return self.join(values, default)
        if name == "pop" and n in (1, 2):
            return values if n == 1 else self.join(values, default)
        if name == "setdefault" and n in (1, 2):
            self.write(receiver, PartialTuple((args[0], default)))
            return self.join(values, default)
        if name == "keys" and n == 0:
            return Elements(type({}.keys()), keys)
        if name == "values" and n == 0:
            return Elements(type({}.values()), values)
        if name == "items" and n == 0:
            return Elements(type({}.items()), PartialTuple((keys, values)))
        if name == "popitem" and n == 0:
            return PartialTuple((keys, values))
        if name == "clear" and n == 0:
            return Const(None)
        if name == "copy" and n == 0:
            return self.new_site(dict, self.summary(receiver))
        if name == "update" and n <= 1:
            if args:
                other = args[0]
                if isinstance(other, Alloc) and other.cls is dict:
                    self.write(receiver, self.summary(other))
                else:
                    self.escape(other)
                    self.write(receiver, PartialTuple((ANY, ANY)))
            if kwargs:
                self.write(receiver, PartialTuple((Exact(str), join_all_(list(kwargs.values())))))
            return Const(None)
        return None

    def new_site(self, cls: type, contents: Abstract) -> Abstract:
        """A new list or set made by the statement being inferred, holding ``contents``."""
        site = (self._site_hint, cls)
        self.write_site(site, contents)
        return Alloc(cls, (site,))

    def write_site(self, site: Any, value: Abstract) -> None:
        """Join ``value`` into what the containers of ``site`` hold."""
        if value is NEVER:
            return
        if site in self.escaped:
            self.escape(value)
            return
        old = self.sites.get(site, NEVER)
        new = self.join(old, _drop_consts(value))
        if new != old:
            self.sites[site] = new
            if site in self._site_reads:
                self._attr_changed = True

    def write(self, container: Abstract, value: Abstract) -> None:
        """``value`` goes into ``container`` (append, item assignment...)."""
        for m in container.members():
            if isinstance(m, Alloc):
                for site in m.sites:
                    self.write_site(site, value)
            else:
                self.escape(value)

    def elements_of(self, a: Abstract) -> Abstract:
        """What iterating ``a`` yields (site summaries for tracked containers)."""
        result = NEVER
        for m in a.members():
            if isinstance(m, Elements) and m.cls in (list, set, tuple, frozenset, dict):
                result = self.join(result, m.elem)
            elif isinstance(m, Alloc) and m.cls is dict:
                result = self.join(result, self.dict_part(m, 0))
            elif isinstance(m, Alloc):
                for site in m.sites:
                    self._site_reads.add(site)
                    item = ANY if site in self.escaped else self.sites.get(site, NEVER)
                    result = self.join(result, item)
            else:
                result = self.join(result, transfer.elements(m))
        return result

    def escape(self, value: Abstract) -> None:
        """``value`` reaches code inference does not see: the containers and objects it
        can reach are no longer tracked (they hold ``ANY`` from now on)."""
        todo = [value]
        while todo:
            for m in todo.pop().members():
                if isinstance(m, Alloc):
                    for site in m.sites:
                        if site not in self.escaped:
                            self.escaped.add(site)
                            if site in self._site_reads:
                                self._attr_changed = True
                            todo.append(self.sites.get(site, NEVER))
                elif isinstance(m, PartialTuple):
                    todo.extend(m.items)
                elif isinstance(m, Elements):
                    todo.append(m.elem)
                elif isinstance(m, (Method, SuperOf)):
                    todo.append(m.receiver)
                else:
                    cls = m.exact_class
                    if (cls is not None and _is_python_class(cls)
                            and cls not in self.escaped_classes):
                        self.escaped_classes.add(cls)
                        todo.extend(self.attr_table.get(cls, {}).values())

    def opaque(self, values: Sequence[Abstract]) -> Abstract:
        """Values passed to code inference does not enter: they escape; the result is
        ``ANY``."""
        for value in values:
            self.escape(value)
        return ANY

    def inert(self, value: Abstract) -> bool:
        """True when a builtin given ``value`` runs no Python code of the program (plain
        numbers and strings, and tracked containers of those)."""
        todo = [value]
        seen: set[Any] = set()
        while todo:
            for m in todo.pop().members():
                if isinstance(m, Alloc):
                    for site in m.sites:
                        if site in self.escaped:
                            return False
                        if site not in seen:
                            seen.add(site)
                            todo.append(self.sites.get(site, NEVER))
                elif isinstance(m, PartialTuple):
                    todo.extend(m.items)
                elif isinstance(m, Elements):
                    if m.cls is types.GeneratorType:
                        return False
                    todo.append(m.elem)
                elif isinstance(m, Const):
                    v = m.value
                    if not (is_value_constant(v) or isinstance(
                            v, (types.BuiltinFunctionType, types.ModuleType))
                            or (isinstance(v, type) and not _is_python_class(v))):
                        return False
                elif m.exact_class not in _INERT_CLASSES:
                    return False
        return True


#: classes whose instances run no program code when a builtin uses them
_INERT_CLASSES: frozenset[Any] = frozenset(
    {int, float, complex, bool, str, bytes, type(None), range, slice, type(Ellipsis),
     type(iter(range(0))), type(iter("")), type(iter("\u00e9")), type(iter([])),
     type(iter(())), enumerate, zip,
     reversed, type(reversed([])), type(iter(set()))})


#: builtins whose result holds (only) items of their arguments, which stay tracked
_ELEMENT_BUILTINS: frozenset[Any] = frozenset(
    {list, sorted, set, tuple, frozenset, dict, min, max, iter, next, enumerate, zip, reversed,
     len, sum, any, all, isinstance, print, abs, round})


#: builtins that use their arguments' items without running any of their methods
_NO_ELEMENT_CODE: frozenset[Any] = frozenset(
    {len, isinstance, id, type, iter, enumerate, zip, reversed, list, tuple, str.join,
     bytes.join, callable})


def _builtin_shallow(value: Abstract) -> bool:
    """The value itself is a builtin object (its items may be anything)."""
    for m in value.members():
        if isinstance(m, Const):
            v = m.value
            if not (is_value_constant(v) or isinstance(v, (types.BuiltinFunctionType, type))):
                return False
        elif isinstance(m, (Alloc, PartialTuple)):
            continue
        elif isinstance(m, Elements):
            if m.cls is types.GeneratorType:
                return False
        elif m.exact_class is None or _is_python_class(m.exact_class) or m.exact_class in (
                types.FunctionType, types.MethodType):
            return False
    return True


#: builtins that call a Python function given to them on the items of an iterable
_CALLBACK_BUILTINS: frozenset[Any] = frozenset({sorted, min, max, map, filter})


def _atomic(value: Abstract) -> bool:
    """True for values that hold no other objects (numbers, strings, None...)."""
    return all(m.exact_class in _ATOMIC for m in value.members())


_ATOMIC: frozenset[Any] = frozenset(
    {int, float, complex, bool, str, bytes, type(None), range, slice})
