"""Python objects as inference sees them: the abstract value of a known object, class
lookups that run no code, binding abstract arguments to parameters, and which methods of
a class store which attributes."""

from __future__ import annotations

import inspect
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


_WRITERS: dict[type, dict[str, list[types.FunctionType]]] = {}


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


def _bind(fn: types.FunctionType, args: list[Abstract], kwargs: dict[str, Abstract]
          ) -> tuple[Abstract, ...] | None:
    """Bind abstract arguments to ``fn``'s parameters (in ``ir.args.names()`` order);
    ``None`` when the binding is not simple (the call then gets ``ANY``)."""
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
    defaults = fn.__defaults__ or ()
    for i in range(nargs):
        if bound[i] is None:
            j = i - (nargs - len(defaults))
            if j < 0:
                return None
            bound[i] = _object_abstract(defaults[j])
    kwdefaults = fn.__kwdefaults__ or {}
    for i in range(nargs, nargs + nkw):
        if bound[i] is None:
            if names[i] not in kwdefaults:
                return None
            bound[i] = _object_abstract(kwdefaults[names[i]])
    out: list[Abstract] = [b for b in bound if b is not None]
    if has_var:
        out.insert(nargs, PartialTuple(extra))
    if has_kw:
        out.append(Exact(dict))
    return tuple(out)
