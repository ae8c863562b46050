"""Typed code instances on disk: what a ``SharedInstance`` relied on, written as content
fingerprints and checked against the running program when it is read back.

A code instance is valid while what its build relied on holds: the bindings of the globals
and class attributes inference read (its guards, ``splice.cache.guards``), the code and
defaults of the functions it used (its function guards and backedges) and the instances of
its direct callees. In the process those are checked by identity. Another process has other
objects, so an entry records each as a *fingerprint* of its content, and loading finds the
live object again and compares:

* a plain value (``None``, numbers, strings, bytes, tuples and frozensets of them) by its
  type and value (``SCALE = 2.0``);
* a function by its qualified name where a module holds it, the fingerprint of its code
  object (``splice.cache.disk.code_fingerprint``: bytecode, constants, names, positions,
  file: an edit of its source changes it), its defaults and what its closure cells hold
  (a method calling ``super()`` holds its class; an object that has no fingerprint, such
  as a memo dict, is left unchecked: inference relies on a cell's content only through a
  cell guard of its own); a ``classmethod``, ``staticmethod`` or
  ``property`` by the functions it wraps; a slot or builtin attribute descriptor by its
  class and name;
* a class, a module, a builtin by reference (``splice.cache.references``): the same name
  must find it in the running program, which imports nothing for it;
* a binding inference typed by its class (a global or class attribute holding an instance:
  ``GlobalShapeGuard``, ``AttributeShapeGuard``) by that class (its shape);
* a binding that did not exist as missing.

A guard is read back as the same kind of guard *expecting the live object* once the
fingerprint matches it (so it then checks identity, as a guard built in the process does);
a guard whose binding now holds something else, or whose objects cannot be found, makes the
entry unusable (``NotStorable``) and the function is built again. Direct calls are written
as their callee's fingerprint and specialization; the loader binds them to its own callee
instances (``splice.runtime.instance_sharing``), built or loaded as any other. A closure
cell guard, an object that no module names and an abstract value that cannot be written
(``splice.cache.stored_ir``) make an instance that is not written at all: soundness never
depends on what a loader cannot check.
"""

from __future__ import annotations

import json
import math
import sys
import types
from typing import Any

from splice.cache.disk import code_fingerprint
from splice.cache.guards import (
    MISSING,
    AttributeGuard,
    AttributeShapeGuard,
    CellGuard,
    FunctionGuard,
    GlobalGuard,
    GlobalShapeGuard,
    Guard,
    lookup_global,
)
from splice.cache.instances import SELF
from splice.cache.references import NotStorable, decode, encode, lookup, reference_of
from splice.cache.shared_instances import DirectCall, SharedInstance
from splice.cache.stored_values import ObjectTable, decode_abstract, encode_abstract
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["ReadMemo", "decode_guard", "decode_instance", "encode_guard", "encode_instance",
           "fingerprint", "found", "matches", "module_of", "namespace_of"]

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_DESCRIPTORS = (types.MemberDescriptorType, types.GetSetDescriptorType,
                types.WrapperDescriptorType, types.MethodDescriptorType,
                types.ClassMethodDescriptorType)
#: how deep a fingerprint looks into tuples and wrapped functions
_DEPTH = 4


# ----------------------------------------------------------------------------- fingerprints


def fingerprint(value: Any, depth: int = _DEPTH) -> list[Any]:
    """The content of ``value`` as data another process compares with its own object
    (module docstring); ``NotStorable`` if it has none that can be checked."""
    if depth < 0:
        raise NotStorable("nested too deep")
    if value is MISSING:
        return ["missing"]
    kind = type(value)
    if kind in _PLAIN or ((kind is tuple or kind is frozenset) and _all_plain(value)):
        return ["value", encode(value)]
    if kind is types.FunctionType:
        try:
            where: list[str] | None = reference_of(value)
        except NotStorable:
            where = None
        defaults = [encode(value.__defaults__), encode(tuple(sorted(
            (value.__kwdefaults__ or {}).items())))]
        return ["function", where, code_fingerprint(value.__code__), defaults,
                [_cell_fingerprint(cell, depth - 1) for cell in value.__closure__ or ()]]
    if kind is classmethod or kind is staticmethod:
        return [kind.__name__, fingerprint(value.__func__, depth - 1)]
    if kind is property:
        return ["property", *(None if f is None else fingerprint(f, depth - 1)
                              for f in (value.fget, value.fset, value.fdel))]
    if kind is types.ModuleType:
        return ["module", value.__name__]
    if kind in _DESCRIPTORS:
        # a slot, a builtin attribute or method: the class defining it and its name say
        # which (a slot's is made per class, no module names it)
        return ["descriptor", encode(value.__objclass__), value.__name__]
    return ["ref", encode(value)]


def findable(value: Any) -> list[Any]:
    """``value``'s fingerprint, for an edge whose object the loader must find by itself
    (:func:`found`): ``NotStorable`` now, when it could not (a function no module names),
    rather than an entry that no process can use."""
    data = fingerprint(value)
    if data[0] == "function" and data[1] is None:
        raise NotStorable(f"{value.__qualname__} is a function no module names")
    if data[0] in ("classmethod", "staticmethod", "property", "descriptor", "missing",
                   "unchecked"):
        raise NotStorable(f"{data[0]} names no object by itself")
    return data


def _cell_fingerprint(cell: types.CellType, depth: int) -> list[Any]:
    """What a function's cell holds, or "unchecked" for an object that has no fingerprint
    (a memoizing decorator's dict): inference relies on what a closure cell holds only
    through a cell edge (a function or class it read there), which an entry records as a
    guard of its own, so nothing else about such an object was relied on."""
    try:
        return fingerprint(_cell_contents(cell), depth)
    except NotStorable:
        return ["unchecked"]


def _cell_contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return MISSING


def _all_plain(value: Any) -> bool:
    return all(type(v) in _PLAIN or ((type(v) is tuple or type(v) is frozenset)
                                     and _all_plain(v)) for v in value)


def matches(data: Any, live: Any) -> bool:
    """Whether ``live`` has the content ``data`` (a ``fingerprint``) names."""
    try:
        return _matches(data, live)
    except (NotStorable, TypeError, ValueError, IndexError, KeyError):
        return False


def _matches(data: Any, live: Any) -> bool:
    tag = data[0]
    if tag == "missing":
        return live is MISSING
    if tag == "unchecked":
        return True
    if tag == "value":
        stored = decode(data[1])
        return type(live) is type(stored) and _same_value(live, stored)
    if tag == "function":
        if type(live) is not types.FunctionType:
            return False
        cells = live.__closure__ or ()
        return code_fingerprint(live.__code__) == data[2] and bool(data[3] == [
            encode(live.__defaults__),
            encode(tuple(sorted((live.__kwdefaults__ or {}).items())))]) and \
            len(cells) == len(data[4]) and all(
                _matches(part, _cell_contents(cell))
                for part, cell in zip(data[4], cells, strict=True))
    if tag == "descriptor":
        owner = decode(data[1])
        return isinstance(owner, type) and type(live) in _DESCRIPTORS and \
            vars(owner).get(data[2]) is live
    if tag in ("classmethod", "staticmethod"):
        return type(live).__name__ == tag and type(live) in (classmethod, staticmethod) \
            and _matches(data[1], live.__func__)
    if tag == "property":
        if type(live) is not property:
            return False
        return all((part is None and f is None) or (part is not None and f is not None and
                                                    _matches(part, f))
                   for part, f in zip(data[1:], (live.fget, live.fset, live.fdel),
                                      strict=True))
    if tag == "module":
        return type(live) is types.ModuleType and live is sys.modules.get(data[1])
    if tag == "ref":
        return decode(data[1]) is live
    return False


def _same_value(a: Any, b: Any) -> bool:
    """Equal and of the same kinds all through (``1 == 1.0 == True`` are not the same)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b and math.copysign(1, a) == math.copysign(1, b) or (a != a and b != b)
    if type(a) is tuple:
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def find(data: Any) -> Any:
    """The live object a function fingerprint names (by its reference; ``NotStorable`` if
    there is none or its content differs)."""
    if data[0] != "function" or data[1] is None:
        raise NotStorable("a function no module names")
    live = decode(["ref", *data[1]])
    if not matches(data, live):
        raise NotStorable(f"{'.'.join(data[1])} changed since the entry was written")
    return live


def found(data: Any) -> Any:
    """The live object a fingerprint names by itself (a function by its reference, a class,
    module or builtin, a plain value), checked; ``NotStorable`` otherwise."""
    tag = data[0]
    if tag == "function":
        return find(data)
    if tag == "module":
        return imported_module(data[1])
    if tag == "ref":
        return decode(data[1])
    if tag == "value":
        return decode(data[1])
    raise NotStorable(f"{tag} names no object by itself")


# ----------------------------------------------------------------------------------- guards


def module_of(namespace: dict[str, Any]) -> str:
    """The name of the imported module whose namespace ``namespace`` is."""
    name = namespace.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None or module.__dict__ is not namespace:
        raise NotStorable("the namespace of no imported module")
    return name  # type: ignore[return-value]


def imported_module(name: Any) -> Any:
    """The imported module ``name`` (``NotStorable`` if it is not imported)."""
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None:
        raise NotStorable(f"module {name!r} is not imported")
    return module


def namespace_of(name: Any) -> dict[str, Any]:
    """The namespace of the imported module ``name`` (``NotStorable`` if not imported)."""
    namespace: dict[str, Any] = imported_module(name).__dict__
    return namespace


def _shape(shape: Any) -> Any:
    if type(shape) is tuple:
        return ["tuple", [_shape(item) for item in shape[1:]]]
    return encode(shape)


def _unshape(data: Any) -> Any:
    if data[0] == "tuple" and type(data[1]) is list:
        return (tuple, *(_unshape(item) for item in data[1]))
    shape = decode(data)
    if not isinstance(shape, type):
        raise NotStorable(f"{shape!r} is not a class")
    return shape


def encode_guard(guard: Guard) -> list[Any]:
    """``guard`` as data (``NotStorable`` for a guard no other process can check)."""
    kind = type(guard)
    if kind is GlobalGuard:
        assert isinstance(guard, GlobalGuard)
        return ["global", module_of(guard.namespace), guard.name,
                fingerprint(guard.expected)]
    if kind is GlobalShapeGuard:
        assert isinstance(guard, GlobalShapeGuard)
        return ["global class", module_of(guard.namespace), guard.name,
                None if guard.expected is MISSING else _shape(guard.expected)]
    if kind is AttributeGuard:
        assert isinstance(guard, AttributeGuard)
        owner = guard.owner
        where = ["module", owner.__name__] if type(owner) is types.ModuleType else \
            ["class", encode(owner)]
        return ["attribute", where, guard.name, fingerprint(guard.expected)]
    if kind is AttributeShapeGuard:
        assert isinstance(guard, AttributeShapeGuard)
        return ["attribute class", ["class", encode(guard.owner)], guard.name,
                None if guard.expected is MISSING else _shape(guard.expected)]
    if kind is FunctionGuard:
        assert isinstance(guard, FunctionGuard)
        return ["function", findable(guard.function)]
    if kind is CellGuard:
        assert isinstance(guard, CellGuard)
        if guard.function is None:
            raise NotStorable("a cell of a function not known")
        return ["cell", findable(guard.function), guard.index, guard.name,
                fingerprint(guard.expected)]
    raise NotStorable(f"a {kind.__name__} cannot be checked by another process")


def decode_guard(data: Any) -> Guard:
    """The guard ``data`` names, expecting the live objects (``NotStorable`` if what it
    relied on does not hold in this program)."""
    tag = data[0]
    if tag == "global":
        namespace = namespace_of(data[1])
        live = lookup_global(namespace, data[2])
        if not matches(data[3], live):
            raise NotStorable(f"global {data[1]}.{data[2]} changed")
        return GlobalGuard(namespace, data[2], live)
    if tag == "global class":
        namespace = namespace_of(data[1])
        guard = GlobalShapeGuard.now(namespace, data[2])
        expected = MISSING if data[3] is None else _unshape(data[3])
        if guard.expected != expected:
            raise NotStorable(f"the class of global {data[1]}.{data[2]} changed")
        return guard
    if tag == "attribute":
        where = data[1]
        owner = sys.modules.get(where[1]) if where[0] == "module" else decode(where[1])
        if owner is None:
            raise NotStorable(f"module {where[1]} is not imported")
        attribute = AttributeGuard.now(owner, data[2])
        if not matches(data[3], attribute.expected):
            raise NotStorable(f"attribute {data[2]} of {where[1]} changed")
        return attribute
    if tag == "attribute class":
        owner = decode(data[1][1])
        if not isinstance(owner, type):
            raise NotStorable(f"{owner!r} is not a class")
        shape_guard = AttributeShapeGuard.now(owner, data[2])
        expected = MISSING if data[3] is None else _unshape(data[3])
        if shape_guard.expected != expected:
            raise NotStorable(f"the class of attribute {data[2]} of {data[1][1]} changed")
        return shape_guard
    if tag == "function":
        return FunctionGuard.now(find(data[1]))
    if tag == "cell":
        function = find(data[1])
        index = data[2]
        cell = (function.__closure__ or ())[index]
        held = CellGuard.now(cell, str(data[3]), function, index)
        if not matches(data[4], held.expected):
            raise NotStorable(f"closure variable {data[3]} of {function.__qualname__} changed")
        return held
    raise NotStorable(f"malformed guard {data!r}")


# -------------------------------------------------------------------------------- instances


def encode_instance(shared: SharedInstance, own_code: types.CodeType) -> dict[str, Any]:
    """What an entry records of ``shared`` besides its code (``NotStorable`` if a part of
    it cannot be written or checked by another process)."""
    objects = ObjectTable.for_disk(own_code)

    def abstract(value: Any) -> Any:
        return encode_abstract(value, objects)

    def return_types() -> Any:
        try:
            return [abstract(shared.return_type), abstract(shared.untyped_return_type)]
        except NotStorable:
            return None  # (the loaded instance says only whether it preserves it)

    defaults = None if shared.defaults is None else [
        [abstract(d) for d in shared.defaults[0]],
        [[name, abstract(d)] for name, d in shared.defaults[1]]]
    return {
        "argtypes": [abstract(t) for t in shared.argtypes],
        "key": encode(shared.key),
        "module": module_of(shared.globals),
        "direct": [[_text(findable(call.callee)), [abstract(t) for t in call.argtypes],
                    encode(call.key)] for call in shared.direct],
        "self_calls": shared.self_calls,
        "guards": [_text(encode_guard(g)) for g in shared.guards],
        "function_guards": [_text(encode_guard(g)) for g in shared.function_guards],
        "callees": [_text(findable(f)) for f in shared.callees
                    if type(f) is types.FunctionType],
        "defaults": defaults,
        "cells": [[index, None if expected is SELF else findable(expected)]
                  for index, expected in shared.cells],
        "return_types": return_types(),
        "preserves": _preserves(shared),
        "retyped": shared.retyped,
        "optimizations": list(shared.optimizations),
    }


def _text(data: Any) -> str:
    """An edge's data as the JSON text an entry holds it in: the text names it in the
    memo of edges read (``ReadMemo``), and is parsed only when the memo misses."""
    return _EDGE_TEXT(data)


#: ``json.dumps(data, sort_keys=True, separators=(",", ":"))``, one encoder for every call
_EDGE_TEXT = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def _parsed(text: Any) -> Any:
    if type(text) is not str:
        raise NotStorable(f"malformed edge {text!r}")
    try:
        return json.loads(text)
    except ValueError:
        raise NotStorable(f"malformed edge {text!r}") from None


class ReadMemo:
    """What reading an owner's entries found, by the text of the edge that names it: the
    entries of one program repeat the same few edges (a class, a module global, a callee
    many functions call), each decoded once.

    * A guard is reused while it holds: it expects the object it found then, so reusing it
      checks identity, as the guard a build in this process makes would; one that no
      longer holds is decoded again against the live program.
    * A function a fingerprint named (a callee, a function guard's function) is reused
      while its reference finds the same object with the same code and defaults objects,
      and it has neither closure cells nor keyword-only defaults (a dict, which changes in
      place): what the fingerprint compared is then what it compared before. Any other
      function is matched against its fingerprint again."""

    __slots__ = ("guards", "functions")

    def __init__(self) -> None:
        self.guards: dict[str, Guard] = {}
        self.functions: dict[str, tuple[list[Any], Any, Any, Any]] = {}

    def guard(self, text: Any) -> Guard:
        guard = self.guards.get(text) if type(text) is str else None
        if guard is None or not guard.holds():  # (not: the program rebound it since)
            guard = self.guards[text] = decode_guard(_parsed(text))
        return guard

    def function(self, text: Any) -> Any:
        known = self.functions.get(text) if type(text) is str else None
        if known is not None:
            data, live, code, defaults = known
            if lookup(*data[1]) is live and live.__code__ is code and \
                    live.__defaults__ is defaults:
                return live
        data = _parsed(text)
        live = find(data)
        if not live.__closure__ and live.__kwdefaults__ is None:
            self.functions[text] = (data, live, live.__code__, live.__defaults__)
        return live


def _preserves(shared: SharedInstance) -> bool:
    from splice.cache.instances import erase_sites

    if not shared.retyped:
        return True
    return bool(erase_sites(shared.return_type) <= erase_sites(shared.untyped_return_type))


def decode_instance(data: dict[str, Any], code: Any, own_code: types.CodeType,
                    stored_ir: dict[str, Any], read: ReadMemo | None = None
                    ) -> SharedInstance:
    """The shared instance an entry describes, checked against the running program
    (``NotStorable`` if anything it relied on does not hold); ``code`` is its decoded
    ``SharedCode`` (None: its code cannot be used here, the stored IR can), ``stored_ir``
    the IR of its stages the entry holds (``StoredIR``, read when first needed). ``read``:
    the edges decoded before, reused while they hold (``ReadMemo``)."""
    from splice.infer.lattice import ANY, NEVER

    objects = ObjectTable.for_disk(own_code)
    memo = ReadMemo() if read is None else read

    def abstract(item: Any) -> Any:
        return decode_abstract(item, objects)

    if data["return_types"] is not None:
        return_type, untyped = (abstract(t) for t in data["return_types"])
    else:  # written as whether it preserves the untyped return type only
        return_type, untyped = ANY, (ANY if data["preserves"] else NEVER)
    defaults = data["defaults"]
    direct = tuple(DirectCall(memo.function(callee), tuple(abstract(t) for t in argtypes),
                              decode(key)) for callee, argtypes, key in data["direct"])
    return SharedInstance(
        argtypes=tuple(abstract(t) for t in data["argtypes"]), key=decode(data["key"]),
        globals=namespace_of(data["module"]), code=code, direct=direct,
        self_calls=int(data["self_calls"]),
        guards=tuple(memo.guard(g) for g in data["guards"]),
        function_guards=tuple(memo.guard(g) for g in data["function_guards"]),
        callees=tuple(memo.function(f) for f in data["callees"]),
        defaults=None if defaults is None else (
            tuple(abstract(d) for d in defaults[0]),
            tuple((str(name), abstract(d)) for name, d in defaults[1])),
        cells=tuple((int(index), SELF if expected is None else found(expected))
                    for index, expected in data["cells"]),
        return_type=return_type, untyped_return_type=untyped,
        retyped=bool(data["retyped"]), stages={},
        stored_ir=stored_ir,
        optimizations=[str(line) for line in data["optimizations"]], edges=())
