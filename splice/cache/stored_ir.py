"""splice's IR written as JSON-able data, never as pickles (objects and abstract values in it
by ``splice.cache.stored_values``).

The code cache keeps, next to a compiled code object, the IR it was generated from (to
regenerate the code without inferring again: curing) and of every stage of a code instance
(its listings). ``encode_ir`` writes a ``FunctionIR`` as data that ``json.dumps`` accepts,
``decode_ir`` makes a new ``FunctionIR`` of it.

**The IR** is written generically: each dataclass of ``splice.ir.nodes`` as its class name
and its fields in ``dataclasses.fields`` order, so a new node class needs nothing here. A
field annotated ``Any`` holds an object the IR shares rather than copies (``Const.value``,
``Call.callee``, a scope's ``origin``, ``function`` and ``key``: the fields ``snapshot_ir``
shares) and goes through the object table (``splice.cache.stored_values.ObjectTable``);
every other value is written by kind: lists, tuples, frozensets, ``Pos``, bytes, complex
numbers, ``Ellipsis``, and the syntax the IR keeps (annotations, match patterns,
``Arguments.source``, PEP 695 parameters) as the ``ast`` class's name and its fields and
positions. A ``Temp`` is written once, in the data's table of temps (its id and
annotation), and referred to by its index: the decoded IR has one ``Temp`` per entry,
shared by every statement using it as in the original. Annotations are written once per
abstract value object, in a table of their own.

**Why decoding is safe.** Decoding instantiates only classes of ``splice.ir.nodes`` and
the node classes of the ``ast`` module, looked up by name in those two modules, and
``Temp``, ``Pos``, lists, tuples, frozensets and plain values; objects and abstract values
come from ``splice.cache.stored_values``. Every field of a node is checked against its
annotation (``list[Operand | Starred]``, ``Pos``, ``str | None``...), read generically from
the dataclass, before the node is made; the syntax is checked for its classes, field names
and positions (``compile`` checks its field types where codegen uses it). Any malformed
data (truncated, a class of another module, a wrong type) raises ``NotStorable``, never
another exception.

Statement ids: a copy kept in memory keeps them (as ``copy_ir`` does); IR read from disk
gets fresh ones (``fresh_ids``), since another process's ids could collide with those this
one hands out, and passes key statements by id.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
from collections.abc import Callable
from itertools import repeat
from typing import Any

from splice.cache.stored_values import (
    MALFORMED,
    NotStorable,
    ObjectTable,
    decode_abstract,
    encode_abstract,
    inert,
    plain,
    strict_list,
)
from splice.infer.lattice import Abstract
from splice.ir import nodes
from splice.ir.nodes import FunctionIR, Pos, Stmt, Temp
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["FORMAT", "NotStorable", "ObjectTable", "decode_abstract", "decode_ir",
           "encode_abstract", "encode_ir"]

#: the version of the layout ``encode_ir`` writes (``decode_ir`` reads only this one)
FORMAT = 1

_NONE = type(None)


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
        decoder.load_tables(strict_list(data["temps"]), strict_list(data["abstracts"]))
        ir = decoder.value(data["ir"])
    except MALFORMED as exc:
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
                        out.append(item if plain(item) else self.objects.encode(item))
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
            if not plain(item):
                values[index] = self.objects.decode(item)
        for index, plain_classes in node.plain:
            if not issubclass(type(values[index]), plain_classes):
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
        if not all(map(inert, items)):
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
