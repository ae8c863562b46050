"""Python objects as inference sees them: the abstract value of a known object, class
lookups that run no code, binding abstract arguments to parameters, and which methods of
a class store which attributes."""

from __future__ import annotations

import dis
import inspect
import sys
import types
from collections.abc import Sequence
from typing import Any

import splice.ir as splice_ir
from splice.infer.lattice import (
    ANY,
    NEVER,
    Abstract,
    Const,
    Exact,
    PartialTuple,
    Sub,
    is_value_constant,
    join,
)
from splice.ir import nodes as N
from splice.ir.tools import scopes
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


def join_all_(values: Sequence[Abstract]) -> Abstract:
    result = NEVER
    for value in values:
        result = join(result, value)
    return result


def _drop_consts(a: Abstract) -> Abstract:
    """Constants of plain values become their class (callables stay constants)."""
    if isinstance(a, Const):
        return a.widen() if is_value_constant(a.value) else a
    if isinstance(a, PartialTuple):
        return PartialTuple(_drop_consts(x) for x in a.items)
    if len(a.members()) > 1:
        result = NEVER
        for m in a.members():
            result = join(result, _drop_consts(m))
        return result
    return a


def _class_of_object(value: object) -> Abstract:
    """What a binding that may be rebound to a value of the same class holds: the class
    (tuples item by item when short)."""
    if type(value) is tuple:
        items: tuple[object, ...] = value  # type: ignore[assignment,unused-ignore]
        if len(items) <= 16:
            return PartialTuple(_class_of_object(v) for v in items)
    if _is_definition(value):
        return Exact(type(value))
    return Exact(type(value))


def _is_definition(value: object) -> bool:
    return isinstance(value, (types.FunctionType, type, types.ModuleType,
                              types.BuiltinFunctionType))


def _object_abstract(value: object) -> Abstract:
    """The abstract value of a known object (a constant, a default, a global's value)."""
    if is_value_constant(value) or _is_definition(value) or isinstance(
            value, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return Const(value)
    if isinstance(value, tuple) and type(value) is tuple and len(value) <= 16:
        return PartialTuple(_object_abstract(v) for v in value)
    return Exact(type(value))


def _is_python_class(cls: type) -> bool:
    """A class created by a class statement (a heap type), not a builtin."""
    return bool(cls.__flags__ & (1 << 9)) and cls.__module__ != "builtins"


def _lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


_WRITERS: dict[type, tuple[dict[str, list[types.FunctionType]],
                           dict[str, list[types.FunctionType]]]] = {}


#: what :func:`outside_stores` gives when any attribute name may be stored
ALL_NAMES: frozenset[str] = frozenset({"*"})
_OUTSIDE: dict[type, tuple[frozenset[str], frozenset[str]]] = {}
_MODULE_ATTRIBUTES: dict[tuple[str, int],
                         tuple[tuple[str, frozenset[str], frozenset[str]], ...]] = {}
_DYNAMIC_STORES = frozenset({"setattr", "delattr", "__setattr__", "__delattr__", "__dict__",
                             "vars"})


def outside_stores(cls: type) -> frozenset[str]:
    """Attribute names that code other than the methods of ``cls``'s MRO (which inference
    infers as writers) may store on an instance of ``cls`` (``ALL_NAMES``: any): the
    stores of the code of the modules defining those classes (other functions, other
    classes' methods storing on something else than their own ``self``, nested functions,
    module-level code), names such code may store dynamically (``setattr``, ``__dict__``:
    any), and the stores of methods of the MRO without source (those made by ``exec``, such
    as a dataclass's ``__init__``). Stores made by other modules are not seen (a known
    limit)."""
    return _outside(cls)[0]


def outside_loads(cls: type) -> frozenset[str]:
    """Attribute names that code other than the methods of ``cls``'s MRO may read from an
    instance of ``cls`` (as :func:`outside_stores`; dynamic reads, ``getattr``: any): a
    container held in such an attribute may be changed by code inference does not see."""
    return _outside(cls)[1]


def _outside(cls: type) -> tuple[frozenset[str], frozenset[str]]:
    found = _OUTSIDE.get(cls)
    if found is not None:
        return found
    stores: set[str] = set()
    loads: set[str] = set()
    methods: set[str] = set()
    for klass in cls.__mro__:
        if not _is_python_class(klass):
            continue
        for attr in vars(klass).values():
            fn = getattr(attr, "fset", None) if isinstance(attr, property) else \
                getattr(attr, "__func__", attr)
            if isinstance(fn, types.FunctionType):
                methods.add(fn.__code__.co_qualname)
                if _unlowerable(fn):
                    own_stores, own_loads = _code_attributes(fn.__code__,
                                                             constants_only=True)
                    stores.update(own_stores)
                    loads.update(own_loads)
    for klass in cls.__mro__:
        if not _is_python_class(klass):
            continue
        for qualname, stored, loaded in _attributes_of_module(klass.__module__):
            if qualname not in methods:
                stores.update(stored)
                loads.update(loaded)
    result = (ALL_NAMES if "*" in stores else frozenset(stores),
              ALL_NAMES if "*" in loads else frozenset(loads))
    _OUTSIDE[cls] = result
    return result


def _unlowerable(fn: types.FunctionType) -> bool:
    try:
        splice_ir.lower(fn)
    except Exception:
        return True
    return False


def _attributes_of_module(name: str
                          ) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """(code qualname, attribute names it may store, names it may read) for every code
    object of the module's source (``*``: any name)."""
    module = sys.modules.get(name)
    key = (name, id(module))
    found = _MODULE_ATTRIBUTES.get(key)
    if found is not None:
        return found
    result: list[tuple[str, frozenset[str], frozenset[str]]] = []
    try:
        source = inspect.getsource(module) if module is not None else None
        code = compile(source, getattr(module, "__file__", name), "exec") if source else None
    except Exception:  # no source: nothing known about what it does
        code = None
        if module is not None and getattr(module, "__file__", None):
            result.append(("<module>", ALL_NAMES, ALL_NAMES))
    todo = [code] if code is not None else []
    while todo:
        current = todo.pop()
        stored, loaded = _code_attributes(current)
        result.append((current.co_qualname, frozenset(stored), frozenset(loaded)))
        todo.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    _MODULE_ATTRIBUTES[key] = tuple(result)
    return _MODULE_ATTRIBUTES[key]


def _code_attributes(code: types.CodeType, *, constants_only: bool = False
                     ) -> tuple[set[str], set[str]]:
    """Attribute names one code object (not its nested ones) may store (``STORE_ATTR``,
    ``DELETE_ATTR``) and read (``LOAD_ATTR``, ``LOAD_METHOD``), except on its own first
    argument in a method (an instance of its own class); with a dynamic store (``setattr``,
    ``__dict__``...) or read (``getattr``...), any name (``*``), or its string constants if
    ``constants_only``."""
    stores: set[str] = set()
    loads: set[str] = set()
    parts = code.co_qualname.split(".")
    # a method's ``self`` (by name: a static method's first argument is anything)
    method = len(parts) >= 2 and parts[-2] != "<locals>" and code.co_argcount > 0 \
        and code.co_varnames[0] == "self"
    instructions = [i for i in dis.get_instructions(code) if i.opname not in _NOISE]
    for index, instruction in enumerate(instructions):
        name = instruction.opname
        if name in _STORE_OPS or name in _LOAD_OPS:
            previous = instructions[index - 1] if index else None
            own = (method and previous is not None and previous.opname == "LOAD_FAST"
                   and previous.argval == "self")
            if own:
                continue
            if name in _STORE_OPS:
                stores.add(instruction.argval)
            elif not _only_read(instructions, index):
                loads.add(instruction.argval)
    names = set(code.co_names)
    constants = {c for c in code.co_consts if isinstance(c, str) and c.isidentifier()}
    for dynamic, found in ((_DYNAMIC_STORES, stores), (_DYNAMIC_LOADS, loads)):
        if dynamic & names:
            if constants_only:
                found.update(constants)
            else:
                found.add("*")
    return stores, loads


def _only_read(instructions: list[dis.Instruction], index: int) -> bool:
    """Whether the value the attribute read at ``index`` gives is only looked at right
    away (subscripted, iterated, compared, tested: ``obj.items[-1]``, ``x in obj.items``),
    not kept, passed on or called a method of (which could change it)."""
    following = [i.opname for i in instructions[index + 1:index + 3]]
    if following and following[0] in _READ_ONLY_USES:
        return True
    return len(following) == 2 and following[0] in _SIMPLE_LOADS and \
        following[1] in _READ_ONLY_BINARY


_READ_ONLY_USES = frozenset({"BINARY_SUBSCR", "GET_ITER", "COMPARE_OP", "CONTAINS_OP",
                             "IS_OP", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE",
                             "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
                             "UNARY_NOT", "POP_TOP", "FORMAT_VALUE"})
_SIMPLE_LOADS = frozenset({"LOAD_CONST", "LOAD_FAST", "LOAD_DEREF", "LOAD_GLOBAL",
                           "LOAD_NAME"})
_READ_ONLY_BINARY = frozenset({"BINARY_SUBSCR", "COMPARE_OP", "CONTAINS_OP", "IS_OP"})
#: instructions that do nothing to the values on the stack
_NOISE = frozenset({"CACHE", "EXTENDED_ARG", "NOP", "RESUME"})
_STORE_OPS = frozenset({"STORE_ATTR", "DELETE_ATTR"})
_LOAD_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_DYNAMIC_LOADS = frozenset({"getattr", "__getattribute__", "__dict__", "vars"})


def _attribute_writers(cls: type) -> dict[str, list[types.FunctionType]]:
    """Attribute name -> the functions along ``cls``'s MRO that store an attribute of that
    name (``x.name = ...`` on any object: a conservative superset of the self stores)."""
    return _attribute_users(cls)[0]


def _attribute_readers(cls: type) -> dict[str, list[types.FunctionType]]:
    """Attribute name -> the functions along ``cls``'s MRO that read an attribute of that
    name (they may change a container it holds: ``self.items.append(x)``)."""
    return _attribute_users(cls)[1]


def _attribute_users(cls: type) -> tuple[dict[str, list[types.FunctionType]],
                                         dict[str, list[types.FunctionType]]]:
    found = _WRITERS.get(cls)
    if found is not None:
        return found
    writers: dict[str, list[types.FunctionType]] = {}
    readers: dict[str, list[types.FunctionType]] = {}
    for klass in cls.__mro__:
        for attr in vars(klass).values():
            fn = getattr(attr, "__func__", attr)
            if isinstance(attr, property):
                fn = attr.fset
            if not isinstance(fn, types.FunctionType):
                continue
            try:
                ir = splice_ir.lower(fn)
            except Exception:
                continue
            for scope in scopes(ir):  # comprehensions run with the method
                for stmt in scope.walk():
                    if isinstance(stmt, N.Assign) and isinstance(stmt.op, (N.SetAttr,
                                                                           N.GetAttr)):
                        table = writers if isinstance(stmt.op, N.SetAttr) else readers
                        users = table.setdefault(stmt.op.name, [])
                        if fn not in users:
                            users.append(fn)
    _WRITERS[cls] = (writers, readers)
    return _WRITERS[cls]


def _exception_of(exc: Abstract) -> Abstract:
    if isinstance(exc, Const) and isinstance(exc.value, type) and issubclass(
            exc.value, BaseException):
        return Sub(exc.value)
    return ANY


def _bind(fn: types.FunctionType, args: list[Abstract], kwargs: dict[str, Abstract], *,
          defaults: Sequence[Abstract] | None = None,
          kwdefaults: dict[str, Abstract] | None = None) -> tuple[Abstract, ...] | None:
    """Bind abstract arguments to ``fn``'s parameters (in ``ir.args.names()`` order);
    ``None`` when the binding is not simple (the call then gets ``ANY``). ``defaults`` and
    ``kwdefaults``: the abstract values of the defaults (default: ``fn``'s own)."""
    code = fn.__code__
    nargs = code.co_argcount
    nkw = code.co_kwonlyargcount
    names = code.co_varnames[:nargs + nkw]
    has_var = bool(code.co_flags & inspect.CO_VARARGS)
    has_kw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    if has_kw and kwargs:
        return None
    bound: list[Abstract | None] = [None] * (nargs + nkw)
    for i, a in enumerate(args[:nargs]):
        bound[i] = a
    extra = args[nargs:]
    if extra and not has_var:
        return None
    posonly = code.co_posonlyargcount
    for name, value in kwargs.items():
        if name not in names or names.index(name) < posonly:
            return None
        index = names.index(name)
        if bound[index] is not None:
            return None
        bound[index] = value
    if defaults is None:
        defaults = [_object_abstract(d) for d in fn.__defaults__ or ()]
    for i in range(nargs):
        if bound[i] is None:
            j = i - (nargs - len(defaults))
            if j < 0:
                return None
            bound[i] = defaults[j]
    if kwdefaults is None:
        kwdefaults = {k: _object_abstract(v) for k, v in (fn.__kwdefaults__ or {}).items()}
    for i in range(nargs, nargs + nkw):
        if bound[i] is None:
            if names[i] not in kwdefaults:
                return None
            bound[i] = kwdefaults[names[i]]
    out: list[Abstract] = [b for b in bound if b is not None]
    if has_var:
        out.insert(nargs, PartialTuple(extra))
    if has_kw:
        out.append(Exact(dict))
    return tuple(out)
