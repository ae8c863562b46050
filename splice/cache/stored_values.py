"""Objects and inference's abstract values written as JSON-able data, never as pickles: the
part of the code cache's stored data that loading an entry needs (``splice.cache.stored_ir``
adds the IR, which only listings and curing read).

**Objects** are written by an ``ObjectTable``, which decides what may be kept:
``ObjectTable.for_disk(own_code)`` writes each as ``splice.cache.references`` does (plain
values, module-and-qualified-name references, ``__splice_persist__`` objects, the
function's own code as a mark), plus what a stored value needs that references do not name:
modules and module namespaces (a made function's globals) by the module's name in
``sys.modules``, enum members, methods of builtin classes (``str.join``), private methods
(``C.__m``, found as ``C._C__m``), functions and classes a module holds under another name
(``_json.make_scanner``, a class ``Scanner``), the interpreter's classes that no module
names (``longrange_iterator``, ``dict_keys``), infinities, code objects nested in a
function (the function and the path through ``co_consts``; else ``marshal``), and tuples
and frozensets of those. Each reference is checked to read back as the very object.
Anything else is ``NotStorable``: objects of the program's that no module holds (a lambda,
a list, an instance), a function a module holds under no name (the methods ``namedtuple``
makes, whose module is ``collections``), a scope's ``origin`` (its source and syntax tree).

``ObjectTable.in_memory()`` keeps every object by reference in a list of its own (the data
says ``["obj", index]``), so a copy made in the process shares the very objects, as
``splice.ir.nodes.snapshot_ir`` does. Either table may be given a ``substitute``, asked
about each object before it is written, that names an object by a JSON-able marker
(written ``["mark", marker]``), and a ``resolve`` that turns the marker back into an
object when decoding: how a loader leaves out what belongs to one context or is found
again by the loader (the function's source, a dispatch table, a callee's instance) and
puts in its own. Plain values (``str``, ``int``, ``bool``, ``None`` and finite floats) are
written as they are and never shown to ``substitute``.

**Abstract values** are written by kind (every ``Abstract`` subclass of
``splice.infer.lattice``; the classes, functions and sites inside them go through the
table), and made again by their public constructors, so that equality and hashing are
those of the original: ``decode_abstract(encode_abstract(v)) == v``, with equal hashes.
On disk this holds where the objects inside resolve to the very objects: a ``Const`` of
an object compared by identity is written only if its data decodes to that object (else
``NotStorable``: a copy would be another constant), and a made function's code is found
again in the function that holds it; written with ``marshal`` (a module-level lambda), it
decodes to a copy, which its ``accepts`` still recognises but equality does not. An
``Abstract`` of another class (a plugin's) is an object like any other: kept in memory, on
disk written only if it opts in with ``__splice_persist__``.

**Why decoding is safe.** Decoding makes abstract values by their constructors, and
lists, tuples, frozensets and plain values; objects come from the table alone
(``references.decode`` looks references up in ``sys.modules``, imports no module of the
program's, and makes only classes that opt in). Sets and sites are made only of values
whose hash runs no code of the program's. Any malformed data raises ``NotStorable``, never
another exception. What a marker resolves to is the caller's, and ``marshal`` data is
trusted as the cache's code objects are (the cache reads only files this user wrote,
``splice.cache.disk``).
"""

from __future__ import annotations

import enum
import marshal
import math
import sys
import types
from collections.abc import Callable
from typing import Any

from splice.cache import references
from splice.cache.references import NotStorable
from splice.infer import lattice
from splice.infer.lattice import (
    ANY,
    NEVER,
    Abstract,
    Alloc,
    Elements,
    Exact,
    MadeFunction,
    Method,
    PartialTuple,
    Sub,
    SuperOf,
    Union,
)
from splice.keys import ClassSet, hashed_by_identity, keyable_class
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["MALFORMED", "NotStorable", "ObjectTable", "decode_abstract", "encode_abstract",
           "inert", "plain", "strict_list"]

#: what ``decode_*`` turns into ``NotStorable``: every way malformed data can fail
MALFORMED = (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError,
              OverflowError, EOFError)

_NONE = type(None)


def plain(value: Any) -> bool:
    """Written as it is: JSON has it (a finite float; NaN and infinities it has not)."""
    kind = type(value)
    return (kind is str or kind is int or kind is bool or value is None
            or (kind is float and math.isfinite(value)))


# ---------------------------------------------------------------------------- object table


class ObjectTable:
    """How objects that are not IR are written: ``encode`` turns one into JSON-able data (or
    raises ``NotStorable``), ``decode`` makes the object again.

    ``ObjectTable.for_disk(own_code)`` writes data that another process can read
    (``splice.cache.references`` and the kinds the module docstring lists);
    ``ObjectTable.in_memory()`` keeps any object by reference in ``kept`` (data
    ``["obj", index]``), so data it encoded must be decoded by the same table.
    ``substitute(obj)`` returns a JSON-able marker for an object to leave out (or None),
    written ``["mark", marker]``; ``resolve(marker)`` gives the object when decoding."""

    __slots__ = ("disk", "own_code", "substitute", "resolve", "kept", "_kept_index")

    def __init__(self, disk: bool, own_code: types.CodeType | None = None,
                 substitute: Callable[[Any], Any | None] | None = None,
                 resolve: Callable[[Any], Any] | None = None) -> None:
        self.disk = disk
        self.own_code = own_code
        self.substitute = substitute
        self.resolve = resolve
        #: the objects an in-memory table keeps (an index of ``["obj", index]`` each)
        self.kept: list[Any] = []
        self._kept_index: dict[int, int] = {}  # id -> index (``kept`` keeps them alive)

    @classmethod
    def for_disk(cls, own_code: types.CodeType | None = None, *,
                 substitute: Callable[[Any], Any | None] | None = None,
                 resolve: Callable[[Any], Any] | None = None) -> ObjectTable:
        """A table writing objects as data another process reads (``own_code``: the code
        object of the function being compiled, written as a mark)."""
        return cls(True, own_code, substitute, resolve)

    @classmethod
    def in_memory(cls, *, substitute: Callable[[Any], Any | None] | None = None,
                  resolve: Callable[[Any], Any] | None = None) -> ObjectTable:
        """A table keeping every object by reference (copies made in this process)."""
        return cls(False, None, substitute, resolve)

    def encode(self, value: Any) -> Any:
        """``value`` as JSON-able data (``NotStorable`` if this table cannot write it)."""
        if self.substitute is not None:
            marker = self.substitute(value)
            if marker is not None:
                return ["mark", marker]
        if self.disk:
            return _disk_encode(value, self.own_code)
        index = self._kept_index.get(id(value))
        if index is None:
            index = self._kept_index[id(value)] = len(self.kept)
            self.kept.append(value)
        return ["obj", index]

    def decode(self, data: Any) -> Any:
        """The object ``encode`` wrote as ``data`` (``NotStorable`` if it cannot be had)."""
        try:
            if type(data) is list and len(data) == 2:
                tag = data[0]
                if tag == "mark":
                    if self.resolve is None:
                        raise NotStorable(f"nothing resolves the marker {data[1]!r}")
                    return self.resolve(data[1])
                if tag == "obj":
                    index = data[1]
                    if self.disk or type(index) is not int or not 0 <= index < len(self.kept):
                        raise NotStorable(f"no kept object {index!r} in this table")
                    return self.kept[index]
            if not self.disk:
                raise NotStorable(f"an in-memory table keeps objects, not {data!r}")
            return _disk_decode(data, self.own_code)
        except MALFORMED as exc:
            raise NotStorable(f"malformed object data ({type(exc).__name__}: {exc})") from None


#: the descriptors of builtin classes a class names under their own name (``str.join``)
_DESCRIPTORS = ClassSet((types.MethodDescriptorType, types.WrapperDescriptorType,
                         types.GetSetDescriptorType, types.MemberDescriptorType))


def _disk_encode(value: Any, own: types.CodeType | None) -> Any:
    kind = type(value)
    if kind is float and not math.isfinite(value):
        # (JSON has no infinities: ``json.dumps`` writes ``Infinity``, which is not JSON)
        return ["float", repr(value)]
    if kind is types.ModuleType or kind is dict:  # (before ``references``, which would
        # read attributes of the module: a module's ``__getattr__`` is the program's code)
        namespace = value.__dict__ if kind is types.ModuleType else value
        name = namespace.get("__name__")
        module = sys.modules.get(name) if type(name) is str else None
        if module is value:
            return ["module", name]
        if type(module) is types.ModuleType and module.__dict__ is value:
            return ["namespace", name]
        raise NotStorable(f"{kind.__name__} {name!r} is not a module's, or not imported")
    try:
        return references.encode(value, own)
    except NotStorable as exc:
        # (its message only: the exception itself, kept in this frame, would make a cycle
        # with its traceback, which holds this frame and, through its callers, whatever
        # the program's call that is being compiled holds, until the collector runs)
        refused = str(exc)
    if kind is tuple:
        return ["items", "tuple", [_disk_encode(item, own) for item in value]]
    if kind is frozenset:  # (sorted: the same data in every process)
        return ["items", "frozenset", sorted((_disk_encode(item, own) for item in value),
                                             key=repr)]
    if kind is types.CodeType:
        return _code_data(value)
    if issubclass(type(kind), enum.EnumMeta):
        members = vars(kind).get("_member_map_")
        name = value._name_
        if type(members) is dict and type(name) is str and members.get(name) is value:
            return ["enum", references.encode(kind, own), name]
    elif issubclass(kind, type):
        name = getattr(value, "__name__", None)
        if type(name) is str and _INTERPRETER_CLASSES.get(name) is value:
            return ["interpreter class", name]
    found = _other_reference(value)
    if found is not None:
        return found
    raise NotStorable(refused)


def _interpreter_classes() -> dict[str, type]:
    """The interpreter's classes that no module names (``longrange_iterator``,
    ``dict_keys``: neither ``builtins`` nor ``types`` has them), by name: the classes of
    objects made here, the same in every process of this interpreter."""
    samples = [iter(range(0)), iter(range(1 << 70)), reversed(range(0)), iter(""),
               iter("\u00e9"), iter(b""), iter(bytearray()), iter([]), reversed([]),
               iter(()), iter(set()), iter({}), reversed({}), {}.keys(), {}.values(),
               {}.items(), iter({}.keys()), iter({}.values()), iter({}.items()),
               reversed({}.values()), reversed({}.items()), iter(int, 0)]
    found: dict[str, type] = {}
    for cls in map(type, samples):
        try:
            references.encode(cls)
        except NotStorable:
            found[cls.__name__] = cls
    return found


_INTERPRETER_CLASSES = _interpreter_classes()


def _other_reference(value: Any) -> list[str] | None:
    """A ``["ref", module, qualname]`` that ``references.decode`` reads back as ``value``,
    for what ``references.encode`` does not name: methods of builtin classes, private
    methods (whose attribute name is mangled), and functions, classes and enum members a
    module holds under another name than their own (``_json.make_scanner``, a class
    named ``Scanner``)."""
    kind = type(value)
    module: Any = None
    qualname: str | None = None
    if value is NotImplemented:
        return ["ref", "builtins", "NotImplemented"]
    if kind in _DESCRIPTORS:
        owner = getattr(value, "__objclass__", None)
        name = getattr(value, "__name__", None)
        if owner is None or not issubclass(type(owner), type) or type(name) is not str:
            return None
        module, qualname = owner.__module__, f"{owner.__qualname__}.{name}"
    elif kind is types.FunctionType:
        module, qualname = value.__module__, _mangled(value.__qualname__)
    elif kind is types.BuiltinFunctionType or issubclass(kind, type) or \
            issubclass(type(kind), enum.EnumMeta):
        module = getattr(value, "__module__", None)
    if type(module) is not str:
        return None
    if qualname is not None:
        data = ["ref", module, qualname]
        try:
            if references.decode(data) is value:
                return data
        except NotStorable:
            pass
    # held by its module under another name (``_json.make_scanner``, a class ``Scanner``)
    holder = sys.modules.get(module)
    if type(holder) is types.ModuleType:
        for name, held in list(holder.__dict__.items()):
            if held is value and type(name) is str:
                return ["ref", module, name]
    return None


def _mangled(qualname: str) -> str:
    """``C.__m`` as the attribute the class holds it under (``C._C__m``)."""
    parts = qualname.split(".")
    for i in range(1, len(parts)):
        part, owner = parts[i], parts[i - 1].lstrip("_")
        if part.startswith("__") and not part.endswith("__") and owner and owner[0] != "<":
            parts[i] = f"_{owner}{part}"
    return ".".join(parts)


def _code_data(code: types.CodeType) -> list[Any]:
    """A code object as the function holding it and the path to it through ``co_consts``
    (so that it decodes to this very code object), else as ``marshal`` data (a copy)."""
    holder = code.co_qualname.partition(".<locals>")[0]
    for name, module in list(sys.modules.items()):
        if type(module) is types.ModuleType and module.__dict__.get("__file__") == \
                code.co_filename:
            root = _holder_code(["ref", name, holder])
            path = None if root is None else _code_path(root, code)
            if path is not None:
                return ["nested code", name, holder, path, code.co_qualname,
                        code.co_firstlineno]
    try:
        return ["code", marshal.dumps(code).hex()]
    except ValueError:
        raise NotStorable(f"{code!r} holds constants marshal cannot write") from None


def _holder_code(reference: list[Any]) -> types.CodeType | None:
    try:
        holder = references.decode(reference)
    except NotStorable:
        return None
    if type(holder) is types.MethodType:
        holder = holder.__func__
    return holder.__code__ if type(holder) is types.FunctionType else None


def _code_path(root: types.CodeType, code: types.CodeType) -> list[int] | None:
    if root is code:
        return []
    for index, const in enumerate(root.co_consts):
        if type(const) is types.CodeType:
            inner = _code_path(const, code)
            if inner is not None:
                return [index, *inner]
    return None


def _disk_decode(data: Any, own: types.CodeType | None) -> Any:
    tag = data[0] if type(data) is list and data else None
    if tag == "items":
        items = [_disk_decode(item, own) for item in data[2]]
        if data[1] == "tuple":
            return tuple(items)
        if data[1] == "frozenset" and all(map(inert, items)):
            return frozenset(items)
        raise NotStorable(f"malformed items {data!r}")
    if tag == "float" and data[1] in ("inf", "-inf", "nan"):
        return float(data[1])
    if tag == "interpreter class":
        return _INTERPRETER_CLASSES[data[1]]
    if tag == "module":
        module = sys.modules.get(data[1])
        if module is None:
            raise NotStorable(f"module {data[1]} is not imported")
        return module
    if tag == "namespace":
        module = sys.modules.get(data[1])
        if type(module) is not types.ModuleType:
            raise NotStorable(f"module {data[1]} is not imported")
        return module.__dict__
    if tag == "enum":
        cls = references.decode(data[1], own)
        members = vars(cls).get("_member_map_") if issubclass(type(cls), enum.EnumMeta) else None
        member = members.get(data[2]) if type(members) is dict else None
        if type(member) is not cls:
            raise NotStorable(f"{data[1]} has no member {data[2]!r}")
        return member
    if tag == "nested code":
        code = _holder_code(["ref", data[1], data[2]])
        for index in data[3]:
            if code is None or type(index) is not int or index < 0:
                break
            const = code.co_consts[index]
            code = const if type(const) is types.CodeType else None
        if code is None or (code.co_qualname, code.co_firstlineno) != (data[4], data[5]):
            raise NotStorable(f"the code of {data[4]} is not in {data[1]}.{data[2]}")
        return code
    if tag == "code":
        code = marshal.loads(bytes.fromhex(data[1]))
        if type(code) is not types.CodeType:
            raise NotStorable("marshal data that is not a code object")
        return code
    return references.decode(data, own)


_INERT = ClassSet((str, int, float, bool, _NONE, bytes, complex, types.CodeType))


def inert(value: Any) -> bool:
    """Whether hashing ``value`` (or comparing it on a collision) runs no code of the
    program's: plain values, identity-hashed objects, classes of keyable metaclasses, and
    tuples of those."""
    kind = type(value)
    if kind is tuple:
        return all(map(inert, value))
    if issubclass(kind, type):
        return keyable_class(value)
    return kind in _INERT or hashed_by_identity(value)


# -------------------------------------------------------------------------- abstract values


def encode_abstract(value: Abstract, objects: ObjectTable) -> Any:
    """The abstract value ``value`` as JSON-able data (``NotStorable`` if an object in it
    cannot be written by ``objects``)."""
    if value is ANY:
        return "any"
    if value is NEVER:
        return "never"
    kind = type(value)
    if kind is lattice.Const:
        item = value.value
        if plain(item):
            return ["const", item]
        data = objects.encode(item)
        if objects.disk and data[0] != "mark" and not lattice.is_value_constant(item) and \
                objects.decode(data) is not item:
            raise NotStorable(f"{value!r} would be read back as another object")
        return ["const", data]
    if kind is Exact or kind is Sub:
        return ["exact" if kind is Exact else "sub", objects.encode(value.cls)]  # type: ignore[attr-defined]
    if kind is PartialTuple:
        assert isinstance(value, PartialTuple)
        return ["tuple", [encode_abstract(item, objects) for item in value.items]]
    if kind is Union:
        # (the members as a set: ``members()`` sorts them by their text, which reads the
        # reprs of constants, code of the program's; the data is sorted instead, so that
        # every process writes the same data for the same value)
        return ["union", sorted((encode_abstract(m, objects)
                                 for m in value._members), key=repr)]  # type: ignore[attr-defined]
    if kind is Elements:
        assert isinstance(value, Elements)
        return ["elements", objects.encode(value.cls), encode_abstract(value.elem, objects)]
    if kind is Alloc:
        assert isinstance(value, Alloc)
        return ["alloc", objects.encode(value.cls),
                sorted((objects.encode(s) for s in value.sites), key=repr)]
    if kind is Method:
        assert isinstance(value, Method)
        return ["method", objects.encode(value.func), encode_abstract(value.receiver, objects)]
    if kind is SuperOf:
        assert isinstance(value, SuperOf)
        return ["super", objects.encode(value.thisclass),
                encode_abstract(value.receiver, objects)]
    if kind is MadeFunction:
        assert isinstance(value, MadeFunction)
        return ["made", objects.encode(value.code), objects.encode(value.globals),
                [encode_abstract(d, objects) for d in value.defaults],
                [[name, encode_abstract(d, objects)] for name, d in value.kwdefaults]]
    if issubclass(kind, Abstract):
        return ["other", objects.encode(value)]
    raise NotStorable(f"{value!r} is not an abstract value")


def decode_abstract(data: Any, objects: ObjectTable) -> Abstract:
    """The abstract value ``encode_abstract`` wrote as ``data``, made by the lattice's
    constructors (``NotStorable`` if ``data`` is malformed or an object is missing)."""
    try:
        return _decode_abstract(data, objects)
    except MALFORMED as exc:
        raise NotStorable(f"malformed abstract value ({type(exc).__name__}: {exc})") from None


def _decode_abstract(data: Any, objects: ObjectTable) -> Abstract:
    if data == "any":
        return ANY
    if data == "never":
        return NEVER
    if type(data) is not list or not data:
        raise NotStorable(f"malformed abstract value {data!r}")
    tag, size = data[0], len(data)
    if tag == "const" and size == 2:
        item = data[1]
        return lattice.Const(item if plain(item) else objects.decode(item))
    if tag in ("exact", "sub") and size == 2:
        cls = _class(objects.decode(data[1]))
        return Exact(cls) if tag == "exact" else Sub(cls)
    if tag == "tuple" and size == 2:
        return PartialTuple([_decode_abstract(item, objects) for item in strict_list(data[1])])
    if tag == "union" and size == 2 and len(strict_list(data[1])) >= 2:
        return Union([_decode_abstract(m, objects) for m in data[1]])
    if tag == "elements" and size == 3:
        return Elements(_class(objects.decode(data[1])),
                        _decode_abstract(data[2], objects))
    if tag == "alloc" and size == 3:
        sites = [objects.decode(site) for site in strict_list(data[2])]
        if not all(map(inert, sites)):
            raise NotStorable("an allocation site whose hash would run the program's code")
        return Alloc(_class(objects.decode(data[1])), sites)
    if tag == "method" and size == 3:
        return Method(objects.decode(data[1]), _decode_abstract(data[2], objects))
    if tag == "super" and size == 3:
        cls = _class(objects.decode(data[1]))
        if not keyable_class(cls):
            raise NotStorable(f"{cls!r} cannot be held by an abstract value")
        return SuperOf(cls, _decode_abstract(data[2], objects))
    if tag == "made" and size == 5:
        code, namespace = objects.decode(data[1]), objects.decode(data[2])
        if type(code) is not types.CodeType or type(namespace) is not dict:
            raise NotStorable("a made function needs a code object and a namespace")
        kwdefaults = []
        for name, default in strict_list(data[4]):
            if type(name) is not str:
                raise NotStorable(f"malformed keyword default {name!r}")
            kwdefaults.append((name, _decode_abstract(default, objects)))
        return MadeFunction(code, namespace,
                            [_decode_abstract(d, objects) for d in strict_list(data[3])],
                            kwdefaults)
    if tag == "other" and size == 2:
        value = objects.decode(data[1])
        if not issubclass(type(value), Abstract):
            raise NotStorable(f"{type(value)!r} is not an abstract value")
        return value  # type: ignore[no-any-return]
    raise NotStorable(f"malformed abstract value {data!r}")


def _class(value: Any) -> type:
    if not issubclass(type(value), type):
        raise NotStorable(f"{value!r} is not a class")
    return value  # type: ignore[no-any-return]


def strict_list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise NotStorable(f"malformed data {value!r}")
    return value
