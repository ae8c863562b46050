"""splice's IR and inference's abstract values written as JSON-able data, never as pickles.

The code cache is to keep, next to a compiled code object, the IR it was generated from
(to regenerate the code without inferring again) and the abstract values a code instance
was specialised on. ``encode_ir`` writes a ``FunctionIR`` as data that ``json.dumps``
accepts, ``decode_ir`` makes a new ``FunctionIR`` of it; ``encode_abstract`` and
``decode_abstract`` do the same for one abstract value.

**Objects that are not IR** are written by an ``ObjectTable``, which decides what may be
kept: ``ObjectTable.for_disk(own_code)`` writes each as ``splice.cache.references`` does
(plain values, module-and-qualified-name references, ``__splice_persist__`` objects, the
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

**The IR** is written generically: each dataclass of ``splice.ir.nodes`` as its class name
and its fields in ``dataclasses.fields`` order, so a new node class needs nothing here. A
field annotated ``Any`` holds an object the IR shares rather than copies (``Const.value``,
``Call.callee``, a scope's ``origin``, ``function`` and ``key``: the fields ``snapshot_ir``
shares) and goes through the table; every other value is written by kind: lists,
tuples, frozensets, ``Pos``, bytes, complex numbers, ``Ellipsis``, and the syntax the IR
keeps (annotations, match patterns, ``Arguments.source``, PEP 695 parameters) as the
``ast`` class's name and its fields and positions. A ``Temp`` is written once, in the
data's table of temps (its id and annotation), and referred to by its index: the decoded
IR has one ``Temp`` per entry, shared by every statement using it as in the original.
Annotations are written once per abstract value object, in a table of their own.

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

**Why decoding is safe.** Decoding instantiates only classes of ``splice.ir.nodes`` and
the node classes of the ``ast`` module, looked up by name in those two modules, abstract
values by their constructors, and ``Temp``, ``Pos``, lists, tuples, frozensets and plain
values; objects come from the table alone (``references.decode`` looks references up in
``sys.modules``, never imports, and makes only classes that opt in). Every field of a
node is checked against its annotation (``list[Operand | Starred]``, ``Pos``, ``str |
None``...), read generically from the dataclass, before the node is made; the syntax is
checked for its classes, field names and positions (``compile`` checks its field types
where codegen uses it). Sets and sites are made only of values whose hash runs no code of
the program's. Any malformed data (truncated, a class of another module, a wrong type)
raises ``NotStorable``, never another exception. What a marker resolves to is the
caller's, and ``marshal`` data is trusted as the cache's code objects are (the cache reads
only files this user wrote, ``splice.cache.disk``).

Statement ids: a copy kept in memory keeps them (as ``copy_ir`` does); IR read from disk
gets fresh ones (``fresh_ids``), since another process's ids could collide with those this
one hands out, and passes key statements by id.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import marshal
import math
import operator
import sys
import types
from collections.abc import Callable
from itertools import repeat
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
from splice.ir import nodes
from splice.ir.nodes import FunctionIR, Pos, Stmt, Temp
from splice.keys import ClassSet, hashed_by_identity, keyable_class
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["FORMAT", "NotStorable", "ObjectTable", "decode_abstract", "decode_ir",
           "encode_abstract", "encode_ir"]

#: the version of the layout ``encode_ir`` writes (``decode_ir`` reads only this one)
FORMAT = 1

#: what ``decode_*`` turns into ``NotStorable``: every way malformed data can fail
_MALFORMED = (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError,
              OverflowError, EOFError)

_NONE = type(None)


def _plain(value: Any) -> bool:
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
        except _MALFORMED as exc:
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
        if data[1] == "frozenset" and all(map(_inert, items)):
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


def _inert(value: Any) -> bool:
    """Whether hashing ``value`` (or comparing it on a collision) runs no code of the
    program's: plain values, identity-hashed objects, classes of keyable metaclasses, and
    tuples of those."""
    kind = type(value)
    if kind is tuple:
        return all(map(_inert, value))
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
        if _plain(item):
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
    except _MALFORMED as exc:
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
        return lattice.Const(item if _plain(item) else objects.decode(item))
    if tag in ("exact", "sub") and size == 2:
        cls = _class(objects.decode(data[1]))
        return Exact(cls) if tag == "exact" else Sub(cls)
    if tag == "tuple" and size == 2:
        return PartialTuple([_decode_abstract(item, objects) for item in _list(data[1])])
    if tag == "union" and size == 2 and len(_list(data[1])) >= 2:
        return Union([_decode_abstract(m, objects) for m in data[1]])
    if tag == "elements" and size == 3:
        return Elements(_class(objects.decode(data[1])),
                        _decode_abstract(data[2], objects))
    if tag == "alloc" and size == 3:
        sites = [objects.decode(site) for site in _list(data[2])]
        if not all(map(_inert, sites)):
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
        for name, default in _list(data[4]):
            if type(name) is not str:
                raise NotStorable(f"malformed keyword default {name!r}")
            kwdefaults.append((name, _decode_abstract(default, objects)))
        return MadeFunction(code, namespace,
                            [_decode_abstract(d, objects) for d in _list(data[3])], kwdefaults)
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


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise NotStorable(f"malformed data {value!r}")
    return value


# ----------------------------------------------------------------------------- node classes

#: what a field's value must be: None (anything), classes (an instance of one), a predicate
_Check = tuple[type, ...] | Callable[[Any], bool] | None

_NAMED: dict[str, _Check] = {"str": (str,), "int": (int,), "bool": (bool,),
                             "float": (float,), "bytes": (bytes,), "None": (_NONE,),
                             "Any": None, "object": None}


def _check_of(annotation: str) -> _Check:
    """The check of a field annotated ``annotation`` (read as the dataclass has it, a
    string): unions, ``list[X]``, ``tuple[X, ...]``, ``tuple[X, Y]``, ``frozenset[X]``,
    the classes of ``splice.ir.nodes`` and its aliases, ``ast.X``. What it does not know
    is not checked."""
    try:
        tree = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return None
    return _check_of_node(tree)


def _check_of_node(node: ast.expr) -> _Check:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _check_of_node(node.left), _check_of_node(node.right)
        if left is None or right is None:
            return None
        if isinstance(left, tuple) and isinstance(right, tuple):
            return left + right
        either = (_predicate(left), _predicate(right))
        return lambda value: either[0](value) or either[1](value)
    if isinstance(node, ast.Constant) and node.value is None:
        return (_NONE,)
    if isinstance(node, ast.Name):
        if node.id in _NAMED:
            return _NAMED[node.id]
        found = getattr(nodes, node.id, None)
        if isinstance(found, str):  # an alias written as a string (``Operand``)
            return _check_of(found)
        return (found,) if isinstance(found, type) else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "ast":
        found = getattr(ast, node.attr, None)
        return (found,) if isinstance(found, type) else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        outer = {"list": list, "tuple": tuple, "frozenset": frozenset}.get(node.value.id)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if outer is None:
            return None
        if outer is tuple and not (len(args) == 2 and isinstance(args[1], ast.Constant)
                                   and args[1].value is Ellipsis):
            parts = tuple(_predicate(_check_of_node(a)) for a in args)
            return lambda value: (type(value) is tuple and len(value) == len(parts)
                                  and all(p(v) for p, v in zip(parts, value, strict=True)))
        inner = _check_of_node(args[0])
        if isinstance(inner, tuple):  # (the frequent case, without a call per item)
            classes = repeat(inner)
            return lambda value: type(value) is outer and all(
                map(issubclass, map(type, value), classes))
        item = _predicate(inner)
        return lambda value: type(value) is outer and all(map(item, value))
    return None


def _predicate(check: _Check) -> Callable[[Any], bool]:
    if check is None:
        return lambda value: True
    if isinstance(check, tuple):
        classes = check
        return lambda value: issubclass(type(value), classes)
    return check


_new_tuple = tuple.__new__  # (a ``Pos`` of four ints, without its Python ``__new__``)

#: the classes of the values JSON has as they are (floats but finite ones: not all)
_JSON_PLAIN = (str, int, bool, _NONE)


class _NodeClass:
    """How the generic coder writes one dataclass of ``splice.ir.nodes``: its fields in
    ``dataclasses.fields`` order (those the constructor takes first)."""

    __slots__ = ("cls", "name", "names", "get", "shared", "shared_at", "plain", "positions",
                 "checked", "init", "fresh_id")

    def __init__(self, cls: type) -> None:
        fields = dataclasses.fields(cls)
        ordered = [f for f in fields if f.init] + [f for f in fields if not f.init]
        self.cls = cls
        self.name = cls.__name__
        self.names = tuple(f.name for f in ordered)
        get = operator.attrgetter(*self.names)
        self.get: Callable[[Any], tuple[Any, ...]] = (
            get if len(self.names) > 1 else lambda value: (get(value),))
        #: per field: whether it holds an object shared by reference (annotated ``Any``),
        #: written by the table
        self.shared = tuple(f.type == "Any" for f in ordered)
        self.shared_at = tuple(i for i, shared in enumerate(self.shared) if shared)
        checks = [None if self.shared[i] else _check_of(str(f.type))
                  for i, f in enumerate(ordered)]
        #: (index, classes) of the fields that hold plain values only (read as they are)
        self.plain = tuple((i, check) for i, check in enumerate(checks)
                           if isinstance(check, tuple) and all(c in _JSON_PLAIN for c in check))
        #: the indexes of the fields that hold a ``Pos``
        self.positions = tuple(i for i, check in enumerate(checks) if check == (Pos,))
        #: (index, classes its value must be an instance of, or a predicate, or neither)
        #: of every other field
        done = {*self.shared_at, *self.positions, *(i for i, _ in self.plain)}
        self.checked: tuple[tuple[int, tuple[type, ...] | None,
                                  Callable[[Any], bool] | None], ...] = tuple(
            (i, check if isinstance(check, tuple) else None,
             None if check is None or isinstance(check, tuple) else check)
            for i, check in enumerate(checks) if i not in done)
        #: how many fields the constructor takes (the first ones); the rest are set after
        self.init = sum(1 for f in fields if f.init)
        #: the index of a statement's ``id`` and what makes a fresh one (else None)
        self.fresh_id: tuple[int, Callable[[], Any]] | None = None
        for index, f in enumerate(ordered):
            if f.name == "id" and issubclass(cls, Stmt) and \
                    f.default_factory is not dataclasses.MISSING:
                self.fresh_id = (index, f.default_factory)


_NODE_CLASSES: dict[str, _NodeClass] = {
    name: _NodeClass(value) for name, value in vars(nodes).items()
    if isinstance(value, type) and value.__module__ == nodes.__name__
    and dataclasses.is_dataclass(value) and value.__name__ == name}
#: id of the class -> its coder (ids: looking a class up by hash could run its metaclass)
_NODE_CLASS_IDS: dict[int, _NodeClass] = {id(c.cls): c for c in _NODE_CLASSES.values()}
#: every class of ``splice.ir.nodes``: an instance of another subclass of one is not IR
#: this module can write (only the classes of ``splice.ir.nodes`` are made by decoding)
_IR_CLASSES = tuple(value for value in vars(nodes).values()
                    if isinstance(value, type) and value.__module__ == nodes.__name__)

#: the node classes of ``ast`` by name (not the deprecated aliases, made by a metaclass)
_AST_CLASSES: dict[str, type[ast.AST]] = {
    name: value for name, value in vars(ast).items()
    if isinstance(value, type) and issubclass(value, ast.AST) and type(value) is type
    and value.__name__ == name}
_AST_KEYS: dict[str, frozenset[str]] = {
    name: frozenset((*cls._fields, *cls._attributes)) for name, cls in _AST_CLASSES.items()}
_AST_POSITIONS: dict[str, frozenset[str]] = {
    name: frozenset(cls._attributes) for name, cls in _AST_CLASSES.items()}

#: the kinds of the generic coder; no class of ``splice.ir.nodes`` is named so
_KINDS = ("l", "t", "s", "p", "%", "abs", "ast", "b", "j", "f", "...", "o")
assert not set(_KINDS) & set(_NODE_CLASSES), "a node class is named like a kind"


# ------------------------------------------------------------------------------------- IR


def encode_ir(ir: FunctionIR, objects: ObjectTable) -> dict[str, Any]:
    """``ir`` (with its nested scopes, temps and their annotations) as JSON-able data; the
    objects it shares go through ``objects`` (``NotStorable`` if one cannot be written)."""
    if type(ir) is not FunctionIR:
        raise NotStorable(f"{ir!r} is not a FunctionIR")
    encoder = _Encoder(objects)
    body = encoder.value(ir)
    return {"format": FORMAT, "temps": encoder.temp_data,
            "abstracts": encoder.abstract_data, "ir": body}


def decode_ir(data: Any, objects: ObjectTable, *, fresh_ids: bool | None = None
              ) -> FunctionIR:
    """A new ``FunctionIR`` from what ``encode_ir`` wrote (``NotStorable`` if ``data`` is
    malformed or an object it names cannot be had). ``fresh_ids``: give statements new
    ids (by default: when ``objects`` is for disk)."""
    try:
        if type(data) is not dict or data.get("format") != FORMAT:
            raise NotStorable("not stored IR of this format")
        decoder = _Decoder(objects, objects.disk if fresh_ids is None else fresh_ids)
        decoder.load_tables(_list(data["temps"]), _list(data["abstracts"]))
        ir = decoder.value(data["ir"])
    except _MALFORMED as exc:
        raise NotStorable(f"malformed stored IR ({type(exc).__name__}: {exc})") from None
    if type(ir) is not FunctionIR:
        raise NotStorable("stored IR that is not a FunctionIR")
    return ir


class _Encoder:
    __slots__ = ("objects", "temps", "temp_data", "abstracts", "abstract_data")

    def __init__(self, objects: ObjectTable) -> None:
        self.objects = objects
        self.temps: dict[int, int] = {}  # id of a temp -> its index in ``temp_data``
        self.temp_data: list[list[Any]] = []
        self.abstracts: dict[int, int] = {}  # id of an abstract value -> its index
        self.abstract_data: list[Any] = []
        # (the IR being written holds the temps and abstract values: their ids stay theirs)

    def value(self, value: Any) -> Any:
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            return value
        node = _NODE_CLASS_IDS.get(id(kind))
        if node is not None:
            out: list[Any] = [node.name]
            if node.shared_at:
                for item, shared in zip(node.get(value), node.shared, strict=True):
                    if not shared:
                        out.append(self.value(item))
                    else:
                        out.append(item if _plain(item) else self.objects.encode(item))
                return out
            append, temps = out.append, self.temps
            for item in node.get(value):  # (as ``items`` does: the frequent kinds inline)
                kind = type(item)
                if kind is str or kind is int or kind is bool or item is None:
                    append(item)
                elif kind is Pos:
                    append(["p", *item])
                elif kind is Temp and (index := temps.get(id(item))) is not None:
                    append(["%", index])
                else:
                    append(self.value(item))
            return out
        if kind is list:
            return self.items(value, ["l"])
        if kind is Temp:
            index = self.temps.get(id(value))
            if index is None:
                index = self.temps[id(value)] = len(self.temp_data)
                entry = [value.id if type(value.id) is int else self.value(value.id)]
                self.temp_data.append(entry)
                if value.annotation is not None:
                    entry.append(self.value(value.annotation))
            return ["%", index]
        if kind is Pos:
            return ["p", *value]
        if kind is tuple:
            return self.items(value, ["t"])
        if kind is float:
            return value if math.isfinite(value) else ["f", repr(value)]
        if kind is frozenset:  # (sorted: the same data in every process)
            return ["s", *sorted((self.value(item) for item in value), key=repr)]
        if issubclass(kind, ast.AST):
            return self.ast_node(value)
        if issubclass(kind, Abstract):
            index = self.abstracts.get(id(value))
            if index is None:
                index = self.abstracts[id(value)] = len(self.abstract_data)
                self.abstract_data.append(None)
                self.abstract_data[index] = encode_abstract(value, self.objects)
            return ["abs", index]
        if kind is bytes:
            return ["b", value.hex()]
        if kind is complex:
            return ["j", self.value(value.real), self.value(value.imag)]
        if value is Ellipsis:
            return ["..."]
        if issubclass(kind, _IR_CLASSES):
            raise NotStorable(f"{kind.__qualname__} is not a class of splice.ir.nodes")
        return ["o", self.objects.encode(value)]

    def items(self, values: Any, out: list[Any]) -> list[Any]:
        """``out`` with each of ``values`` appended as ``value`` writes it (the frequent
        kinds without a call: this is the loop the writing spends its time in)."""
        append, temps = out.append, self.temps
        for item in values:
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                append(item)
            elif kind is Pos:
                append(["p", *item])
            elif kind is Temp and (index := temps.get(id(item))) is not None:
                append(["%", index])
            else:
                append(self.value(item))
        return out

    def ast_node(self, node: ast.AST) -> list[Any]:
        name = type(node).__name__
        if _AST_CLASSES.get(name) is not type(node):
            raise NotStorable(f"{type(node)!r} is not a node class of the ast module")
        keys = _AST_KEYS[name]
        fields: dict[str, Any] = {}
        for key, item in vars(node).items():
            if key not in keys:
                raise NotStorable(f"ast.{name} with an attribute {key!r} of its own")
            fields[key] = self.value(item)
        return ["ast", name, fields]


class _Decoder:
    __slots__ = ("objects", "fresh_ids", "temps", "abstracts", "kinds")

    def __init__(self, objects: ObjectTable, fresh_ids: bool) -> None:
        self.objects = objects
        self.fresh_ids = fresh_ids
        self.temps: list[Temp] = []
        self.abstracts: list[Abstract] = []
        self.kinds: dict[str, Callable[[list[Any]], Any]] = {
            "l": self.list_, "t": self.tuple_, "s": self.frozenset_, "abs": self.abstract,
            "ast": self.ast_node, "b": self.bytes_,
            "j": self.complex_, "f": self.float_, "...": self.ellipsis, "o": self.object_}
        assert set(self.kinds) | {"p", "%"} == set(_KINDS)

    def load_tables(self, temps: list[Any], abstracts: list[Any]) -> None:
        self.abstracts = [decode_abstract(a, self.objects) for a in abstracts]
        for entry in temps:
            if type(entry) is not list or not 1 <= len(entry) <= 2 or \
                    type(entry[0]) is not int:
                raise NotStorable(f"malformed temp {entry!r}")
            self.temps.append(Temp(entry[0]))
        for temp, entry in zip(self.temps, temps, strict=True):
            if len(entry) == 2:
                temp.annotation = self.value(entry[1])

    def value(self, data: Any) -> Any:
        kind = type(data)
        if kind is not list:
            if kind is str or kind is int or kind is bool or data is None or kind is float:
                return data
            raise NotStorable(f"malformed IR data {data!r}")
        tag = data[0]
        node = _NODE_CLASSES.get(tag)
        if node is None:
            if tag == "l":
                return self.list_(data)
            if tag == "t":
                return tuple(self.list_(data))
            return self.other(data, tag)
        # a node (inline: decoding spends its time here)

        values = data[1:]
        if len(values) != len(node.names):
            raise NotStorable(f"{node.name} with {len(values)} fields, not {len(node.names)}")
        for index in node.shared_at:
            item = values[index]
            if not _plain(item):
                values[index] = self.objects.decode(item)
        for index, plain in node.plain:
            if not issubclass(type(values[index]), plain):
                raise NotStorable(f"{node.name}.{node.names[index]} holds "
                                  f"{type(values[index]).__name__}")
        for index in node.positions:
            item = values[index]
            if type(item) is not list or len(item) != 5 or item[0] != "p" or not (
                    type(item[1]) is type(item[2]) is type(item[3]) is type(item[4]) is int):
                raise NotStorable(f"{node.name}.{node.names[index]} is not a position")
            values[index] = _new_tuple(Pos, item[1:])
        temps = self.temps
        for index, classes, check in node.checked:
            item = values[index]
            kind = type(item)
            if kind is list:
                # (the frequent kinds without a call: the loop decoding spends its time in)
                tag = item[0]
                if tag == "%" and len(item) == 2 and type(item[1]) is int and item[1] >= 0:
                    item = values[index] = temps[item[1]]
                elif tag == "p" and len(item) == 5 and type(item[1]) is type(item[2]) is \
                        type(item[3]) is type(item[4]) is int:
                    item = values[index] = _new_tuple(Pos, item[1:])
                elif tag == "l":
                    item = values[index] = self.list_(item)
                elif tag == "t":
                    item = values[index] = tuple(self.list_(item))
                else:
                    item = values[index] = self.value(item)
            elif kind is not str and kind is not int and kind is not bool and item is not None:
                item = values[index] = self.value(item)
            if classes is not None:
                if not issubclass(type(item), classes):
                    raise NotStorable(f"{node.name}.{node.names[index]} holds "
                                      f"{type(item).__name__}")
            elif check is not None and not check(item):
                raise NotStorable(f"{node.name}.{node.names[index]} holds "
                                  f"{type(item).__name__}")
        if node.fresh_id is not None and self.fresh_ids:
            values[node.fresh_id[0]] = node.fresh_id[1]()
        if node.init == len(values):
            return node.cls(*values)
        made = node.cls(*values[:node.init])
        for name, value in zip(node.names[node.init:], values[node.init:], strict=True):
            object.__setattr__(made, name, value)
        return made

    def other(self, data: list[Any], tag: Any) -> Any:
        if tag == "p":
            if len(data) != 5 or not (type(data[1]) is type(data[2]) is type(data[3])
                                      is type(data[4]) is int):
                raise NotStorable(f"malformed position {data!r}")
            return _new_tuple(Pos, data[1:])
        if tag == "%":
            index = data[1]
            if len(data) != 2 or type(index) is not int or index < 0:
                raise NotStorable(f"no temp {index!r}")
            return self.temps[index]
        decode = self.kinds.get(tag)
        if decode is None:
            raise NotStorable(f"{tag!r} is not a class of splice.ir.nodes")
        return decode(data)

    def list_(self, data: list[Any]) -> list[Any]:
        values = data[1:]
        temps = self.temps
        for index, item in enumerate(values):
            kind = type(item)
            if kind is list:
                tag = item[0]
                if tag == "%" and len(item) == 2 and type(item[1]) is int and item[1] >= 0:
                    values[index] = temps[item[1]]
                else:
                    values[index] = self.value(item)
            elif kind is not str and kind is not int and kind is not bool and item is not None:
                values[index] = self.value(item)
        return values

    def tuple_(self, data: list[Any]) -> tuple[Any, ...]:
        return tuple(self.list_(data))

    def frozenset_(self, data: list[Any]) -> frozenset[Any]:
        items = [self.value(item) for item in data[1:]]
        if not all(map(_inert, items)):
            raise NotStorable("a set member whose hash would run the program's code")
        return frozenset(items)

    def abstract(self, data: list[Any]) -> Abstract:
        index = data[1]
        if len(data) != 2 or type(index) is not int or not 0 <= index < len(self.abstracts):
            raise NotStorable(f"no abstract value {index!r}")
        return self.abstracts[index]

    def ast_node(self, data: list[Any]) -> ast.AST:
        if len(data) != 3 or type(data[2]) is not dict:
            raise NotStorable(f"malformed syntax {data!r}")
        name, fields = data[1], data[2]
        cls = _AST_CLASSES.get(name)
        if cls is None:
            raise NotStorable(f"{name!r} is not a node class of the ast module")
        keys, positions = _AST_KEYS[name], _AST_POSITIONS[name]
        values = {}
        for key, item in fields.items():
            if key not in keys:
                raise NotStorable(f"ast.{name} has no field {key!r}")
            value = self.value(item)
            if key in positions and type(value) is not int and value is not None:
                raise NotStorable(f"ast.{name}.{key} is not a position")
            values[key] = value
        made = cls.__new__(cls)
        made.__dict__.update(values)
        return made

    def bytes_(self, data: list[Any]) -> bytes:
        if len(data) != 2 or type(data[1]) is not str:
            raise NotStorable(f"malformed bytes {data!r}")
        return bytes.fromhex(data[1])

    def complex_(self, data: list[Any]) -> complex:
        parts = [self.value(item) for item in data[1:]]
        if len(parts) != 2 or not all(type(p) in (int, float) for p in parts):
            raise NotStorable(f"malformed complex number {data!r}")
        return complex(parts[0], parts[1])

    def float_(self, data: list[Any]) -> float:
        if len(data) != 2 or data[1] not in ("inf", "-inf", "nan"):
            raise NotStorable(f"malformed float {data!r}")
        return float(data[1])

    def ellipsis(self, data: list[Any]) -> Any:
        if len(data) != 1:
            raise NotStorable(f"malformed ellipsis {data!r}")
        return Ellipsis

    def object_(self, data: list[Any]) -> Any:
        if len(data) != 2:
            raise NotStorable(f"malformed object {data!r}")
        return self.objects.decode(data[1])
