"""The IR of code a context built, stored so that any context of its owner, in this
process or a later one, can read it back as its own.

The IR a stage leaves holds objects of three kinds: the program's (functions, classes,
constants: the same everywhere), the building context's (its dispatch table and the
table's parts, its call sites, its plugins and their attributes: the routed IR is full of
them) and the compiled code's own (a code instance's direct-call holders). ``store_ir``
writes it with ``splice.cache.stored_ir``, the last two kinds as markers: a context's part
as its path from the context (``splice.runtime.sharing``), a call site as a numbered fresh
site (one site serves the test and the call of a lookup, so its uses must stay one object),
the function compiled and its source as themselves, and the code's own objects by the names
the caller gives them. It is written for disk where every other object can be, else kept in
memory by reference, where each kept object must be the same for every context
(``sharing.shareable_value``), else not at all.

``restore_ir`` reads it back under another context (or the same), each marker resolved to
that context's object of the same role, and ``regenerate`` generates code from routed IR
read back so (the ``codegen`` stage alone: no inference, no hook): what *curing* an entry
whose code object cannot be used is. Sound for the reasons sharing code is
(``splice.runtime.sharing``): the IR is what the owner's stages made, and every object in
it that belongs to a context is that context's own once read back.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any

from splice.cache.references import NotStorable
from splice.cache.shared_code import StoredIR
from splice.errors import UnsupportedError
from splice.ir.compiled import CompiledCode
from splice.pristine import BUILTINS
from splice.runtime.sharing import context_objects, follow, shareable_value
from splice.runtime.sites import Site

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["regenerate", "restore_ir", "store_ir"]


def store_ir(ir: FunctionIR, context: Any, own_code: types.CodeType,
             made: Mapping[int, tuple[Any, ...]], origin: Any = None) -> StoredIR | None:
    """``ir`` (built under ``context`` for the function of ``own_code``) as data, with
    ``made`` (id -> name) and ``context``'s objects as markers; None if it cannot be
    stored."""
    from splice.cache.stored_ir import ObjectTable, encode_ir

    paths = context_objects(context)
    sites: dict[int, int] = {}
    foreign: list[Any] = []

    def substitute(obj: Any) -> Any | None:
        mark = made.get(id(obj))
        if mark is not None:
            return list(mark)
        if obj is origin and obj is not None:
            return ["origin"]
        path = paths.get(id(obj))
        if path is not None:
            return ["path", list(path)]
        if isinstance(obj, Site):
            if obj.table() is not context.table:
                foreign.append(obj)
            # (numbered: one site stands in several places, its test and its call)
            return ["site", sites.setdefault(id(obj), len(sites))]
        if isinstance(obj, (types.MethodType, types.BuiltinMethodType)):
            owner = paths.get(id(obj.__self__))
            if owner is not None:
                return ["method", list(owner), obj.__name__]
        return None

    try:
        stored = StoredIR(encode_ir(ir, ObjectTable.for_disk(own_code,
                                                             substitute=substitute)), None)
    except NotStorable:
        table = ObjectTable.in_memory(substitute=substitute)
        try:
            data = encode_ir(ir, table)
        except NotStorable:
            return None
        if not all(shareable_value(obj, paths, context.plugins) for obj in table.kept):
            return None
        stored = StoredIR(data, table.kept)
    return None if foreign else stored


def resolver(context: Any, fn: types.FunctionType, objects: Mapping[Hashable, object]
             ) -> Callable[[Any], Any]:
    """What a marker ``store_ir`` wrote stands for under ``context``, for ``fn`` whose
    code's own objects are ``objects`` (by the names ``store_ir`` was given)."""
    sites: dict[Any, Site] = {}

    def resolve(marker: Any) -> Any:
        kind = marker[0]
        if kind == "origin":
            from splice.ir.source import find_source

            return find_source(fn)
        if kind == "path":
            return follow(context, tuple(marker[1]))
        if kind == "site":
            site = sites.get(marker[1])
            if site is None:
                site = sites[marker[1]] = Site(context.table)
            return site
        if kind == "method":
            return getattr(follow(context, tuple(marker[1])), marker[2])
        key = tuple(marker)
        if key not in objects:
            raise NotStorable(f"no object {marker!r} in this code")
        return objects[key]
    return resolve


def restore_ir(stored: StoredIR, context: Any, fn: types.FunctionType,
               objects: Mapping[Hashable, object]) -> FunctionIR | None:
    """The IR ``stored`` holds, read back under ``context`` for ``fn`` (None if it cannot
    be: an object it names is not in this program)."""
    from splice.cache.stored_ir import ObjectTable, decode_ir

    resolve = resolver(context, fn, {("function",): fn, **objects})
    if stored.kept is None:
        table = ObjectTable.for_disk(fn.__code__, resolve=resolve)
    else:
        table = ObjectTable.in_memory(resolve=resolve)
        table.kept.extend(stored.kept)
    try:
        return decode_ir(stored.read(), table)
    except (NotStorable, ValueError, KeyError):
        return None


def regenerate(stored: StoredIR, context: Any, fn: types.FunctionType,
               objects: Mapping[Hashable, object]) -> CompiledCode | None:
    """``fn``'s code generated under ``context`` from the routed IR ``stored`` holds (None
    if it cannot be read back or does not compile)."""
    ir = restore_ir(stored, context, fn, objects)
    if ir is None:
        return None
    from splice.compiler.stages import generate_code

    try:
        return generate_code(ir, fn)
    except UnsupportedError:
        return None
