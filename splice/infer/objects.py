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


_WRITERS: dict[type, dict[str, list[types.FunctionType]]] = {}


#: what :func:`outside_stores` gives when any attribute name may be stored
ALL_NAMES: frozenset[str] = frozenset({"*"})
_OUTSIDE: dict[type, frozenset[str]] = {}
_MODULE_STORES: dict[tuple[str, int], tuple[tuple[str, frozenset[str]], ...]] = {}
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
    found = _OUTSIDE.get(cls)
    if found is not None:
        return found
    names: set[str] = set()
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
                    names.update(_code_stores(fn.__code__, constants_only=True))
    for klass in cls.__mro__:
        if not _is_python_class(klass):
            continue
        for qualname, stored in _stores_of_module(klass.__module__):
            if qualname not in methods:
                names.update(stored)
    result = ALL_NAMES if "*" in names else frozenset(names)
    _OUTSIDE[cls] = result
    return result


def _unlowerable(fn: types.FunctionType) -> bool:
    try:
        splice_ir.lower(fn)
    except Exception:
        return True
    return False


def _stores_of_module(name: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """(code qualname, attribute names it may store) for every code object of the module's
    source (``*``: any name)."""
    module = sys.modules.get(name)
    key = (name, id(module))
    found = _MODULE_STORES.get(key)
    if found is not None:
        return found
    result: list[tuple[str, frozenset[str]]] = []
    try:
        source = inspect.getsource(module) if module is not None else None
        code = compile(source, getattr(module, "__file__", name), "exec") if source else None
    except Exception:  # no source: nothing known about what it stores
        code = None
        if module is not None and getattr(module, "__file__", None):
            result.append(("<module>", ALL_NAMES))
    todo = [code] if code is not None else []
    while todo:
        current = todo.pop()
        result.append((current.co_qualname, frozenset(_code_stores(current))))
        todo.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    _MODULE_STORES[key] = tuple(result)
    return _MODULE_STORES[key]


def _code_stores(code: types.CodeType, *, constants_only: bool = False) -> set[str]:
    """Attribute names one code object (not its nested ones) may store: its ``STORE_ATTR``
    and ``DELETE_ATTR`` names, except stores on its own first argument in a method (an
    instance of its own class); with a dynamic store (``setattr``, ``__dict__``...), any
    name (``*``), or its string constants if ``constants_only``."""
    names: set[str] = set()
    parts = code.co_qualname.split(".")
    # a method's ``self`` (by name: a static method's first argument is anything)
    method = len(parts) >= 2 and parts[-2] != "<locals>" and code.co_argcount > 0 \
        and code.co_varnames[0] == "self"
    previous = None
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("STORE_ATTR", "DELETE_ATTR"):
            own = (method and previous is not None and previous.opname == "LOAD_FAST"
                   and previous.argval == "self")
            if not own:
                names.add(instruction.argval)
        previous = instruction
    if _DYNAMIC_STORES & set(code.co_names):
        if constants_only:
            names.update(c for c in code.co_consts if isinstance(c, str) and c.isidentifier())
        else:
            names.add("*")
    return names


def _attribute_writers(cls: type) -> dict[str, list[types.FunctionType]]:
    """Attribute name -> the functions along ``cls``'s MRO that store an attribute of that
    name (``x.name = ...`` on any object: a conservative superset of the self stores)."""
    found = _WRITERS.get(cls)
    if found is not None:
        return found
    names: dict[str, list[types.FunctionType]] = {}
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
            for stmt in ir.walk():
                if isinstance(stmt, N.Assign) and isinstance(stmt.op, N.SetAttr):
                    writers = names.setdefault(stmt.op.name, [])
                    if fn not in writers:
                        writers.append(fn)
    _WRITERS[cls] = names
    return names


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
