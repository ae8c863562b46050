"""splice's IR and inference's abstract values written as data (``splice.cache.stored_ir``).

Differential: the IR of every function of a few standard-library modules (and of the
per-construct cases of tests/ir) is written and read back, in memory and through JSON as
the disk cache will, and must be the same IR: the same structure node by node (temps
shared alike, tuples still tuples), the same listing, the same generated code, and code
that behaves the same. Typed IR keeps its annotations, equal and with equal hashes.
Malformed data is refused with ``NotStorable``, never another exception.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import functools
import importlib
import json
import json.decoder
import math
import pkgutil
import random
import re
import tempfile
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import splice
import splice.ir
import tests.ir.cases as cases_package
from splice.cache.stored_ir import (
    FORMAT,
    NotStorable,
    ObjectTable,
    decode_abstract,
    decode_ir,
    encode_abstract,
    encode_ir,
)
from splice.compat import TYPE_PARAMETER_SYNTAX
from splice.errors import UnsupportedError
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
    join,
)
from splice.ir import nodes
from splice.ir.nodes import Call, Const, FunctionIR, Pos, Return, Stmt, Temp
from splice.ir.tools import walk
from tests.modules import load

MODULES = ["json.decoder", "textwrap", "argparse", "difflib", "ast"]


# ------------------------------------------------------------------------------- helpers


def _functions(module: types.ModuleType) -> Iterator[types.FunctionType]:
    """The functions and methods ``module`` defines."""
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            yield value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr in vars(value).values():
                attr = getattr(attr, "__func__", attr)  # static and class methods
                if isinstance(attr, types.FunctionType):
                    yield attr


def _case_functions() -> Iterator[types.FunctionType]:
    for info in pkgutil.iter_modules(cases_package.__path__):
        yield from _functions(importlib.import_module(f"{cases_package.__name__}.{info.name}"))
    if TYPE_PARAMETER_SYNTAX:  # (syntax the case modules cannot hold: they parse on 3.11)
        from tests.ir.test_new_syntax import EVALUATION_ORDER, NESTED_SCOPES

        folder = Path(tempfile.mkdtemp(prefix="splice-stored-ir-"))
        for index, source in enumerate([NESTED_SCOPES, EVALUATION_ORDER]):
            yield from _functions(load(folder, f"stored_ir_syntax_{index}", source))


def _lower_all(functions: Iterator[types.FunctionType]) -> list[FunctionIR]:
    found = []
    for fn in functions:
        try:
            found.append(splice.ir.lower(fn))
        except UnsupportedError:
            continue
    return found


@functools.cache
def _lowered(module: str) -> list[FunctionIR]:
    return _lower_all(_functions(importlib.import_module(module)))


@functools.cache
def _cases() -> list[FunctionIR]:
    return _lower_all(_case_functions())


def _marks(ir: FunctionIR) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """A substitute and a resolve leaving out what a loader would put in: the scope's
    source and function."""
    held = {"origin": ir.origin, "function": ir.function}
    by_id = {id(value): name for name, value in held.items()}
    return (lambda value: by_id.get(id(value))), held.__getitem__


def _in_memory(ir: FunctionIR) -> FunctionIR:
    table = ObjectTable.in_memory()
    data = encode_ir(ir, table)
    json.dumps(data)  # JSON-able, even when the objects stay in the table
    return decode_ir(data, table)


def _through_json(ir: FunctionIR, *, cells: bool = False, **kwargs: Any) -> FunctionIR:
    """``ir`` written for disk, through JSON, and read back. ``cells``: the objects of
    direct calls (the callees' instances and their cells, which a loader binds) are left
    out as marks."""
    substitute, resolve = _marks(ir)
    if cells:
        context: dict[int, Any] = {}
        plain, named = substitute, resolve

        def substitute(value: Any) -> Any:
            if type(value) in (list, types.FunctionType) and plain(value) is None:
                try:
                    ObjectTable.for_disk().encode(value)
                except NotStorable:
                    context[id(value)] = value
                    return ["context", id(value)]
            return plain(value)

        def resolve(marker: Any) -> Any:
            return context[marker[1]] if isinstance(marker, list) else named(marker)
    own = ir.function.__code__ if ir.function is not None else None
    data = encode_ir(ir, ObjectTable.for_disk(own, substitute=substitute))
    text = json.dumps(data, allow_nan=False)
    return decode_ir(json.loads(text), ObjectTable.for_disk(own, resolve=resolve), **kwargs)


def _by_value_or_identity(value: Any) -> Any:
    if lattice.is_value_constant(value):
        return ("value", type(value), repr(value))
    return ("object", id(value))


def _shape(value: Any, temps: dict[int, int], *, ids: bool = True,
           shared: Callable[[Any], Any] = id) -> Any:
    """Everything of ``value`` a copy must reproduce, as nested tuples: classes, fields,
    container kinds, positions; temps numbered in the order they are met (so the same
    numbers say the same sharing) with their ids and annotations; the objects held by
    reference as ``shared`` says."""
    kind = type(value)
    if kind is Temp:
        number = temps.setdefault(id(value), len(temps))
        return ("temp", number, value.id, value.annotation)
    if dataclasses.is_dataclass(value) and kind.__module__ == nodes.__name__:
        return (kind.__name__, *[
            ("shared", shared(getattr(value, f.name))) if f.type == "Any"
            else _shape(getattr(value, f.name), temps, ids=ids, shared=shared)
            for f in dataclasses.fields(value) if ids or f.name != "id"])
    if isinstance(value, ast.AST):
        return ("ast", ast.dump(value, include_attributes=True),
                sorted(vars(value)))
    if kind in (list, tuple):
        return (kind.__name__, *[_shape(v, temps, ids=ids, shared=shared) for v in value])
    if kind is frozenset:
        return ("frozenset", sorted(map(repr, value)))
    if kind is Pos:
        return ("pos", *value)
    return (kind.__name__, repr(value))


def _same_shape(a: FunctionIR, b: FunctionIR, **kwargs: Any) -> bool:
    return bool(_shape(a, {}, **kwargs) == _shape(b, {}, **kwargs))


def _all_nodes(ir: FunctionIR) -> list[Any]:
    found: list[Any] = []

    def visit(value: Any) -> None:
        if dataclasses.is_dataclass(value) and type(value).__module__ == nodes.__name__:
            found.append(value)
            for f in dataclasses.fields(value):
                if f.type != "Any":
                    visit(getattr(value, f.name))
        elif type(value) in (list, tuple):
            for item in value:
                visit(item)
        elif type(value) is Temp:
            found.append(value)
    visit(ir)
    return found


def _results(ir: FunctionIR) -> list[Temp]:
    return [r for s in walk(ir) for r in getattr(s, "results", ()) if isinstance(r, Temp)]


def _classes_in(ir: FunctionIR) -> set[type]:
    return {type(node) for node in _all_nodes(ir)}


# ----------------------------------------------------------------------- lowered IR


@pytest.mark.parametrize("module", MODULES)
def test_lowered_functions_round_trip_in_memory(module: str) -> None:
    irs = _lowered(module)
    assert len(irs) >= 9
    for ir in irs:
        back = _in_memory(ir)
        assert _same_shape(back, ir), ir.qualname  # objects shared: the very objects
        assert str(back) == str(ir)
        assert splice.ir.generate(back) == splice.ir.generate(ir)
        assert back.origin is ir.origin and back.function is ir.function
        # a copy: no node or temp of the original is in it
        assert not {id(n) for n in _all_nodes(back)} & {id(n) for n in _all_nodes(ir)}


@pytest.mark.parametrize("module", MODULES)
def test_lowered_functions_round_trip_through_json_for_disk(module: str) -> None:
    for ir in _lowered(module):
        back = _through_json(ir)
        assert _same_shape(back, ir, ids=False, shared=_by_value_or_identity), ir.qualname
        assert str(back) == str(ir)
        assert splice.ir.generate(back) == splice.ir.generate(ir)
        splice.ir.verify(back)
        # statements get ids of this process's: none of the original's, none twice
        old = {s.id for s in walk(ir)}
        new = [s.id for s in walk(back)]
        assert len(set(new)) == len(new) and not old & set(new)


def test_every_node_class_round_trips() -> None:
    irs = _cases()
    seen: set[type] = set()
    for ir in irs:
        for back in (_in_memory(ir), _through_json(ir)):
            assert _same_shape(back, ir, ids=False, shared=_by_value_or_identity), \
                ir.qualname
            assert splice.ir.generate(back) == splice.ir.generate(ir)
            assert _classes_in(back) == _classes_in(ir)
        seen |= _classes_in(ir)
    not_lowered = {nodes.Copy} | (set() if TYPE_PARAMETER_SYNTAX else {nodes.TypeAlias})
    every = {c for c in vars(nodes).values() if isinstance(c, type)
             and dataclasses.is_dataclass(c) and issubclass(c, (nodes.Op, Stmt))}
    assert not every - not_lowered - seen, "a node class no case exercises"


def test_in_memory_ids_are_kept_and_disk_ids_are_fresh() -> None:
    ir = _lowered("textwrap")[0]
    ids = [s.id for s in walk(ir)]
    assert [s.id for s in walk(_in_memory(ir))] == ids
    assert [s.id for s in walk(_through_json(ir, fresh_ids=False))] == ids
    assert not set(ids) & {s.id for s in walk(_through_json(ir))}


def _scoped(values: list[int], limit: int) -> Iterator[int]:
    def keep(value: int) -> bool:
        return value < limit

    total = 0
    for value in filter(keep, values):
        try:
            total += value
        except TypeError:
            continue
        match value:
            case 0 | 1:
                yield total
            case _:
                yield from (total * k for k in range(value) if k % 2)


def _nonfinite(a=1e999, b=b"\x00\xff", c=2j, d=..., *, e=-1e999):  # type: ignore[no-untyped-def]
    return (a, b, c, d, e, 1e999, b"\x01", 3j, ..., float("nan"))


@pytest.mark.parametrize("fn, args", [
    (textwrap.dedent, ("    a\n      b\n    c",)),
    (textwrap.indent, ("a\n\nb", "> ")),
    (json.decoder.py_scanstring, ('"abc\\n\\u00e9" tail', 1)),
    (difflib.get_close_matches, ("appel", ["ape", "apple", "peach", "puppy"])),
    (argparse._copy_items, ([1, 2],)),
    (_scoped, ([0, 1, 2, 3, 5, 9], 6)),
    (_nonfinite, ()),
])
def test_decoded_ir_compiles_and_behaves_the_same(fn: Any, args: tuple[Any, ...]) -> None:
    ir = splice.ir.lower(fn)
    expected = repr(list(fn(*args)) if fn is _scoped else fn(*args))
    for back in (_in_memory(ir), _through_json(ir)):
        rebuilt = splice.ir.compile_ir(back, fn)
        assert rebuilt.__code__ is not fn.__code__
        result = rebuilt(*args)
        assert repr(list(result) if fn is _scoped else result) == expected


def test_constants_keep_their_kinds_and_values() -> None:
    ir = splice.ir.lower(_nonfinite)
    for back in (_in_memory(ir), _through_json(ir)):
        pairs = list(zip(_all_nodes(ir), _all_nodes(back), strict=True))
        consts = [(a.value, b.value) for a, b in pairs if type(a) is Const]
        assert len(consts) >= 5
        for a, b in consts:
            assert type(a) is type(b) and repr(a) == repr(b)
        assert ast.dump(back.args.source) == ast.dump(ir.args.source)  # type: ignore[arg-type]
        kinds = {type(a): type(b) for a, b in pairs if type(a) in (tuple, list, frozenset)}
        assert all(a is b for a, b in kinds.items())
        assert type(back.module_imports) is frozenset


def test_temps_are_shared_like_the_original() -> None:
    ir = splice.ir.lower(_scoped)
    for back in (_in_memory(ir), _through_json(ir)):
        defined = {id(r) for r in _results(back)} | {
            id(s.target) for s in walk(back) if isinstance(s, nodes.For)}
        used = [o for s in walk(back) for o in s.operands() if isinstance(o, Temp)]
        assert used and all(id(o) in defined for o in used)
        assert len({id(t) for t in _results(back)}) == len({id(t) for t in _results(ir)})


# --------------------------------------------------------------------------- typed IR


class _Typed(splice.Plugin):
    """A typed plugin whose ``typed`` hook reads the annotations (and changes nothing)."""

    def __init__(self) -> None:
        self.annotated = 0

    def typed(self, ir: FunctionIR) -> None:
        self.annotated += sum(r.annotation is not None for r in _results(ir))


def _poly(x, n):  # type: ignore[no-untyped-def]
    total = 0.0
    for i in range(n):
        total = total + x ** i / (i + 1)
    return total


@pytest.mark.parametrize("fn, argtypes", [
    (_poly, (float, int)),
    (textwrap.TextWrapper._wrap_chunks, (textwrap.TextWrapper, list)),
    (difflib.SequenceMatcher.find_longest_match, (difflib.SequenceMatcher, int, int, int, int)),
    (json.decoder.py_scanstring, (str, int)),
    (textwrap.dedent, (str,)),
    (_scoped, (list, int)),
], ids=lambda value: getattr(value, "__qualname__", None))
def test_typed_ir_round_trips_with_equal_annotations(fn: Any, argtypes: Any) -> None:
    plugin = _Typed()
    instance = splice.compile(plugin, fn, *argtypes)
    assert plugin.annotated > 0
    for ir in (instance.typed, instance.optimized):
        for back in (_in_memory(ir), _through_json(ir, cells=ir is instance.optimized)):
            pairs = list(zip(_results(ir), _results(back), strict=True))
            assert sum(a.annotation is not None for a, _ in pairs) > 5
            for a, b in pairs:
                assert b.annotation == a.annotation and hash(b.annotation) == hash(a.annotation)
                assert type(b.annotation) is type(a.annotation)
            assert str(back) == str(ir)  # (the listing shows the annotations)
            assert splice.ir.generate(back) == splice.ir.generate(ir)


# ---------------------------------------------------------------------- abstract values


class _Base:
    def method(self) -> int:
        return 1


class _Child(_Base):
    pass


def _make_adder(k: int) -> Callable[[int], int]:
    def add(x: int, scale: int = 2, *, shift: float = 0.5) -> int:
        return x * scale + k
    return add


_module_lambda = lambda x: x + 1  # noqa: E731 - a code object no function holds
_SITE = ((_make_adder, 7), list)

VALUES: list[Abstract] = [
    ANY, NEVER,
    lattice.Const(1), lattice.Const(True), lattice.Const(-0.0), lattice.Const(0.0),
    lattice.Const(math.nan), lattice.Const(math.inf), lattice.Const("text"),
    lattice.Const(None), lattice.Const(b"\x00"), lattice.Const(1j), lattice.Const(...),
    lattice.Const(NotImplemented), lattice.Const((1, "a", (None, 2.5))),
    lattice.Const(frozenset({1, 2})), lattice.Const(len), lattice.Const(math),
    lattice.Const(json.dumps), lattice.Const(re.IGNORECASE), lattice.Const(_Child),
    lattice.Const(_make_adder), lattice.Const(str.join), lattice.Const(int),
    Exact(int), Exact(type(None)), Exact(types.FunctionType), Sub(Exception), Sub(_Base),
    PartialTuple((Exact(int), lattice.Const("a"))), PartialTuple(()),
    Elements(type(iter(range(1 << 70))), Exact(int)), Elements(type({}.keys()), ANY),
    Elements(type(iter("")), Exact(str)),
    Alloc(list, [_SITE]), Alloc(set, [_SITE, ((_poly, 3), set)]),
    SuperOf(_Child, Exact(_Child)),
    Method(str.join, Exact(str)), Method(_Base.method, Exact(_Child)),
    Method(list.append, Alloc(list, [_SITE])),
    MadeFunction(_make_adder(1).__code__, globals(), [Exact(int)], [("shift", Exact(float))]),
    Union([Exact(int), lattice.Const(None), PartialTuple((ANY,))]),
    join(join(Exact(str), lattice.Const(3)), Elements(type(iter([])), Exact(int))),
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_abstract_values_round_trip(value: Abstract) -> None:
    memory = ObjectTable.in_memory()
    for data, table in [(encode_abstract(value, memory), memory),
                        (json.loads(json.dumps(encode_abstract(value, ObjectTable.for_disk()),
                                               allow_nan=False)), ObjectTable.for_disk())]:
        back = decode_abstract(data, table)
        assert back == value and hash(back) == hash(value)
        assert type(back) is type(value) and repr(back) == repr(value)
    if value is not ANY and value is not NEVER:
        assert decode_abstract(encode_abstract(value, memory), memory) is not value  # made again


_WRITE_IN_A_PROCESS = """
import json, textwrap
import splice.ir
from splice.cache.stored_ir import ObjectTable, encode_abstract, encode_ir
from splice.infer.lattice import Alloc, Const, Union
objects = ObjectTable.for_disk()
ir = splice.ir.lower(textwrap.dedent)
print(json.dumps([
    encode_abstract(Union([Const(c) for c in "abcdefghij"]), objects),
    encode_abstract(Alloc(list, [(c, list) for c in "abcdefghij"]), objects),
    encode_abstract(Const(frozenset("abcdefghij")), objects),
    encode_ir(ir, ObjectTable.for_disk(substitute=lambda v: "src" if v is ir.origin else None)),
]))
"""


def test_every_process_writes_the_same_data() -> None:
    """Sets are written sorted: data does not depend on the hashes of a process (the
    cache names entries by it)."""
    import subprocess
    import sys

    written = {subprocess.run([sys.executable, "-c", _WRITE_IN_A_PROCESS], check=True,
                              capture_output=True, text=True,
                              env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
               for seed in ("1", "2", "3")}
    assert len(written) == 1


def test_every_abstract_class_is_exercised() -> None:
    classes = {type(v) for v in VALUES}
    defined = {c for c in vars(lattice).values()
               if isinstance(c, type) and issubclass(c, Abstract) and c is not Abstract}
    assert defined == classes


def test_a_made_functions_code_is_found_again_in_its_function() -> None:
    value = MadeFunction(_make_adder(1).__code__, globals())
    data = encode_abstract(value, ObjectTable.for_disk())
    assert data[1][0] == "nested code" and data[2] == ["namespace", __name__]
    back = decode_abstract(json.loads(json.dumps(data)), ObjectTable.for_disk())
    assert back.code is _make_adder(2).__code__ and back.globals is globals()  # type: ignore[attr-defined]
    # a code object no function holds is written with marshal: a copy, which is another
    # constant (not equal) that still recognises the function
    lone = MadeFunction(_module_lambda.__code__, globals())
    data = encode_abstract(lone, ObjectTable.for_disk())
    assert data[1][0] == "code"
    copy = decode_abstract(json.loads(json.dumps(data)), ObjectTable.for_disk())
    assert copy != lone and copy.accepts(_module_lambda)


def test_on_disk_a_constant_compared_by_identity_must_be_that_object() -> None:
    value = lattice.Const((len, 1))  # compared by the tuple's identity
    with pytest.raises(NotStorable, match="another object"):
        encode_abstract(value, ObjectTable.for_disk())
    memory = ObjectTable.in_memory()
    assert decode_abstract(encode_abstract(value, memory), memory) == value


def test_an_abstract_value_of_another_class_is_an_object() -> None:
    class Mine(Abstract):
        def accepts(self, value: object) -> bool:
            return True

    mine = Mine()
    memory = ObjectTable.in_memory()
    assert decode_abstract(encode_abstract(mine, memory), memory) is mine
    with pytest.raises(NotStorable):
        encode_abstract(mine, ObjectTable.for_disk())


# ------------------------------------------------------------------------ object tables


def _returning(value: Any) -> FunctionIR:
    """The IR of ``textwrap.dedent`` with its first ``return`` returning ``value``."""
    ir = splice.ir.lower(textwrap.dedent)
    stmt = next(s for s in walk(ir) if isinstance(s, Return))
    stmt.value = Const(value, stmt.pos)
    return ir


def test_for_disk_refuses_what_is_no_reference_and_in_memory_keeps_it() -> None:
    lam = lambda: None  # noqa: E731
    ir = _returning(lam)
    substitute, _ = _marks(ir)
    with pytest.raises(NotStorable):
        encode_ir(ir, ObjectTable.for_disk(substitute=substitute))
    back = _in_memory(ir)
    found = [s.value.value for s in walk(back) if isinstance(s, Return)
             and isinstance(s.value, Const) and callable(s.value.value)]
    assert found == [lam] and found[0] is lam
    # a callee inference resolved is an object too
    ir = splice.ir.lower(textwrap.dedent)
    call = next(s.op for s in walk(ir) if isinstance(getattr(s, "op", None), Call))
    call.callee = lam
    with pytest.raises(NotStorable):
        encode_ir(ir, ObjectTable.for_disk(substitute=_marks(ir)[0]))
    assert [s.op.callee for s in walk(_in_memory(ir))
            if isinstance(getattr(s, "op", None), Call) and s.op.callee is not None] == [lam]


import json.scanner  # noqa: E402 - (its ``c_make_scanner``: ``_json.make_scanner``)

_OBJECTS = [re.IGNORECASE, math, str.join, object.__init__, int.real,
            difflib.SequenceMatcher._SequenceMatcher__chain_b,  # type: ignore[attr-defined]
            type(iter(range(1 << 70))), type({}.items()), json.scanner.c_make_scanner,
            NotImplemented, math.inf, (len, ("a", re.MULTILINE)), frozenset({len, max}),
            textwrap.dedent, vars(textwrap)]


def _same(a: Any, b: Any) -> bool:
    """The very object, or (a tuple, a frozenset, a float) an equal one of the very
    objects."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(map(_same, a, b))
    if type(a) is frozenset:
        return {id(x) for x in a} == {id(x) for x in b}
    return a is b or (lattice.is_value_constant(a) and repr(a) == repr(b))


@pytest.mark.parametrize("value", _OBJECTS,  # (ids by position: reprs hold addresses, and a
                         # frozenset's order depends on the hash seed, which pytest-xdist's
                         # workers must agree on)
                         ids=[f"{i}-{type(v).__name__}" for i, v in enumerate(_OBJECTS)])
def test_objects_on_disk_read_back_as_the_very_objects(value: Any) -> None:
    data = json.loads(json.dumps(ObjectTable.for_disk().encode(value), allow_nan=False))
    assert _same(ObjectTable.for_disk().decode(data), value)
    back = _through_json(_returning(value))  # (a constant of the IR, through the IR's coder)
    returned = [s.value.value for s in walk(back)
                if isinstance(s, Return) and isinstance(s.value, Const)]
    assert any(_same(r, value) for r in returned)


def test_objects_no_module_holds_are_not_storable() -> None:
    class Local:
        pass

    for value in [Local, Local(), [1], {"a": 1}, lambda: 1, re.I | re.M, object(),
                  difflib.Match._replace, dict.__dict__["fromkeys"], type.__dict__["__dict__"],
                  (1, [2])]:
        with pytest.raises(NotStorable):
            ObjectTable.for_disk().encode(value)


def test_a_function_is_written_as_a_reference() -> None:
    ir = splice.ir.lower(textwrap.dedent)
    data = encode_ir(ir, ObjectTable.for_disk(substitute=lambda v: "src" if v is ir.origin
                                              else None))
    assert ["ref", "textwrap", "dedent"] in data["ir"]
    back = decode_ir(json.loads(json.dumps(data)),
                     ObjectTable.for_disk(resolve={"src": ir.origin}.__getitem__))
    assert back.function is textwrap.dedent and back.origin is ir.origin


def test_substitute_and_resolve_round_trip_a_marker() -> None:
    sentinel, replacement = object(), object()
    ir = _returning(sentinel)
    marks = {id(sentinel): "the sentinel", id(ir.origin): "origin", id(ir.function): "fn"}
    objects = {"the sentinel": replacement, "origin": ir.origin, "fn": ir.function}
    for disk in (True, False):
        make = ObjectTable.for_disk if disk else ObjectTable.in_memory
        table = make(substitute=lambda v: marks.get(id(v)), resolve=objects.__getitem__)
        data = json.loads(json.dumps(encode_ir(ir, table)))
        assert "[\"mark\", \"the sentinel\"]" in json.dumps(data)
        back = decode_ir(data, make(resolve=objects.__getitem__) if disk else table)
        values = [s.value.value for s in walk(back)
                  if isinstance(s, Return) and isinstance(s.value, Const)]
        assert replacement in values and sentinel not in values
        with pytest.raises(NotStorable, match="nothing resolves"):
            decode_ir(data, make())


def test_a_node_of_a_class_of_its_own_is_not_ir() -> None:
    @dataclasses.dataclass(slots=True, eq=False)
    class Mine(nodes.Pass):
        pass

    ir = splice.ir.lower(textwrap.dedent)
    ir.body.append(Mine(ir.pos))
    for table in (ObjectTable.in_memory(), ObjectTable.for_disk()):
        with pytest.raises(NotStorable, match="not a class of splice.ir.nodes"):
            encode_ir(ir, table)


# ------------------------------------------------------------------------ malformed data


def _paths(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield from _paths(item, (*path, index))
    elif isinstance(data, dict):
        for key, item in data.items():
            yield from _paths(item, (*path, key))


def _replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(data))
    if not path:
        return value
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return copy


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def _mutations(data: Any, rng: random.Random) -> Iterator[tuple[str, Any]]:
    for path in _paths(data):
        here = _at(data, path)
        if isinstance(here, list):
            if here:
                yield "truncated", _replaced(data, path, here[:-1])
                yield "emptied", _replaced(data, path, [])
                if isinstance(here[0], str):
                    for name in ("os.system", "system", "Name", "FunctionSource",
                                 "CallSite", "Snapshot", "object", "Location"):
                        yield f"class {name}", _replaced(data, path, [name, *here[1:]])
            yield "dict", _replaced(data, path, {"a": here})
        elif isinstance(here, bool) or here is None:
            yield "int", _replaced(data, path, 3)
        elif isinstance(here, int):
            yield "negative", _replaced(data, path, -1)
            yield "huge", _replaced(data, path, 10 ** 9)
            yield "str", _replaced(data, path, "1")
            yield "list", _replaced(data, path, [here])
        elif isinstance(here, str):
            yield "int", _replaced(data, path, 0)
            yield "none", _replaced(data, path, None)
            yield "other", _replaced(data, path, rng.choice(["%", "p", "ast", "o", "l"]))


def test_malformed_data_raises_not_storable() -> None:
    ir = splice.ir.lower(_scoped)
    substitute, resolve = _marks(ir)
    data = json.loads(json.dumps(encode_ir(ir, ObjectTable.for_disk(substitute=substitute))))
    table = ObjectTable.for_disk(resolve=resolve)
    rng = random.Random(1)
    mutations = list(_mutations(data, rng))
    rng.shuffle(mutations)
    refused: dict[str, int] = {}
    for kind, mutated in mutations[:2500]:
        try:
            back = decode_ir(mutated, table)
        except NotStorable:
            refused[kind] = refused.get(kind, 0) + 1
        else:
            assert type(back) is FunctionIR
    counts: dict[str, int] = {}
    for kind, _ in mutations[:2500]:
        counts[kind] = counts.get(kind, 0) + 1
    # a class of another module, or a class that is not a node, is always refused; so is
    # a node with a field too few
    for kind, count in counts.items():
        if kind.startswith("class ") and kind != "class Location":
            assert refused.get(kind) == count, kind
    assert refused.get("emptied") == counts["emptied"]
    assert sum(refused.values()) > len(mutations[:2500]) // 2


def test_malformed_syntax_and_tables_are_refused() -> None:
    ir = splice.ir.lower(_nonfinite)
    substitute, resolve = _marks(ir)
    good = json.loads(json.dumps(encode_ir(ir, ObjectTable.for_disk(substitute=substitute))))
    table = ObjectTable.for_disk(resolve=resolve)
    assert type(decode_ir(good, table)) is FunctionIR
    text = json.dumps(good)
    assert '["ast", "arguments"' in text
    for bad in [text.replace('["ast", "arguments"', '["ast", "NodeVisitor"', 1),
                text.replace('["ast", "arguments"', '["ast", "Num"', 1),  # a deprecated alias
                text.replace('["ast", "arguments"', '["ast", "Assign"', 1),  # not arguments
                text.replace('"lineno": ', '"lineno": "x", "l": ', 1),
                text.replace('"lineno": ', '"co_code": ', 1)]:
        with pytest.raises(NotStorable):
            decode_ir(json.loads(bad), table)
    for wrong in [None, [], {}, {"format": FORMAT + 1}, {**good, "temps": {}},
                  {**good, "temps": [["x"]]}, {**good, "abstracts": [["bogus"]]},
                  {**good, "ir": good["ir"][1]}, {**good, "ir": ["%", 0]}]:
        with pytest.raises(NotStorable):
            decode_ir(wrong, table)
    # an in-memory table's data is read by that table only
    with pytest.raises(NotStorable):
        decode_ir(encode_ir(ir, ObjectTable.in_memory(substitute=substitute)),
                  ObjectTable.in_memory(resolve=resolve))


def _first(data: Any, tag: str) -> tuple[Any, ...]:
    return next(p for p in _paths(data) if isinstance(_at(data, p), list)
                and _at(data, p)[:1] == [tag])


def test_fields_of_the_wrong_kind_are_refused() -> None:
    """Well-formed data whose fields hold what their annotations exclude."""
    ir = splice.ir.lower(_scoped)
    substitute, resolve = _marks(ir)
    good = json.loads(json.dumps(encode_ir(ir, ObjectTable.for_disk(substitute=substitute))))
    table = ObjectTable.for_disk(resolve=resolve)
    var, load = _at(good, _first(good, "Var")), _at(good, _first(good, "Iter"))
    statement = _at(good, _first(good, "Assign"))
    wrong = [
        (_first(good, "Return"), ["Return", ["l"], statement[3], 1]),  # an operand: a list
        (_first(good, "Return"), ["Return", load, statement[3], 1]),  # an operand: an op
        (_first(good, "Var"), ["Var", ["l", "x"], var[2]]),  # a name: a list
        (_first(good, "Var"), ["Var", "x", var]),  # a position: a Var
        (_first(good, "Assign"), ["Assign", statement[1], var, *statement[3:]]),  # an op: Var
        (_first(good, "Assign"), ["Assign", ["l", *statement[1][1:]], *statement[2:]]),
        (_first(good, "Assign"), [*statement[:4], "7"]),  # an id: a str
        (_first(good, "Arguments"), var),  # the parameters: a Var
        ((*_first(good, "For"), 3), ["l", load]),  # a body holding an op
    ]
    for path, value in wrong:
        with pytest.raises(NotStorable, match="holds|is not a position"):
            decode_ir(_replaced(good, path, value), table)


@pytest.mark.parametrize("data", [
    ["exact", ["ref", "os", "system"]], ["exact", ["const", 3]], ["sub"], ["tuple", {}],
    ["union", [["exact", ["ref", "builtins", "int"]]]], ["alloc", ["ref", "builtins", "list"],
                                                          [["made", ["os", "PathLike"], []]]],
    ["super", ["ref", "builtins", "int"]], ["made", ["const", 1], ["const", 2], [], []],
    ["made", ["own code"], ["namespace", "json"], [], [[1, "any"]]], ["other", ["const", 1]],
    ["const", ["ref", "no.such.module", "x"]], ["method", ["mark", 1], "any"],
    ["elements", ["interpreter class", "nope"], "any"], "anything", 3, None, [],
])
def test_malformed_abstract_values_raise_not_storable(data: Any) -> None:
    with pytest.raises(NotStorable):
        decode_abstract(data, ObjectTable.for_disk())


class _Hashy:
    """An object of the program's whose hash is the program's code."""

    hashed = 0

    def __hash__(self) -> int:
        _Hashy.hashed += 1
        return 1


_HASHY = _Hashy()


def test_decoding_hashes_nothing_whose_hash_is_the_programs() -> None:
    hashy = ["ref", __name__, "_HASHY"]
    assert ObjectTable.for_disk().decode(hashy) is _HASHY  # (a reference, as such, is fine)
    ir = splice.ir.lower(textwrap.dedent)
    good = encode_ir(ir, ObjectTable.for_disk(substitute=_marks(ir)[0]))
    at = _first(good, "s")  # (module_imports)
    for abstract in (["alloc", ["ref", "builtins", "list"], [hashy]],
                     ["alloc", ["ref", "builtins", "list"], [["items", "tuple", [hashy]]]],
                     ["const", ["items", "frozenset", [hashy]]]):
        with pytest.raises(NotStorable):
            decode_abstract(abstract, ObjectTable.for_disk())
    with pytest.raises(NotStorable):
        decode_ir(_replaced(good, at, ["s", ["o", hashy]]),
                  ObjectTable.for_disk(resolve=_marks(ir)[1]))
    assert _Hashy.hashed == 0


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False)
    | st.sampled_from(["l", "t", "s", "p", "%", "abs", "ast", "o", "Assign", "Const", "Var",
                       "FunctionIR", "const", "ref", "exact", "union", "made", "mark"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_JSON, _JSON)
def test_arbitrary_json_never_crashes_the_decoders(ir: Any, abstract: Any) -> None:
    table = ObjectTable.for_disk()
    for data in (ir, {"format": FORMAT, "temps": [[1]], "abstracts": [], "ir": ir}):
        try:
            decoded = decode_ir(data, table)
        except NotStorable:
            pass
        else:
            assert type(decoded) is FunctionIR
    try:
        value = decode_abstract(abstract, table)
    except NotStorable:
        pass
    else:
        assert isinstance(value, Abstract)
