"""Return types of builtin and standard-library callables, read from typeshed's stubs
through ``typeshed_client`` (no hand-written table).

A stub's return annotation becomes an abstract value: ``int`` is ``Sub(int)`` in general (a
function declared ``-> int`` may return a ``bool``), and ``Exact(int)`` for functions
implemented in C on the builtin scalar and container types, which build exactly the class they
declare. Overloads join; type variables, ``Self`` and anything not understood give ``ANY``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import types
from typing import Any

from splice.infer.lattice import (
    ANY,
    Abstract,
    Const,
    Elements,
    Exact,
    PartialTuple,
    Sub,
    join_all,
)
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

#: classes a C function declares and returns exactly (never a subclass instance)
_EXACT_FROM_C: dict[str, type] = {
    "int": int, "float": float, "str": str, "bytes": bytes, "bool": bool, "complex": complex,
    "list": list, "dict": dict, "set": set, "tuple": tuple, "frozenset": frozenset,
    "bytearray": bytearray,
}


@functools.lru_cache(maxsize=256)
def _stub_names(module: str) -> Any:
    try:
        import typeshed_client
        return typeshed_client.get_stub_names(module)
    except Exception:
        return None


def _definitions(info: Any) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    node = getattr(info, "ast", None)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node]
    defs = getattr(node, "definitions", None)
    if defs:
        return [d for d in defs if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return []


def _locate(fn: Any) -> tuple[str, list[str], bool] | None:
    """(module, name path inside it, implemented in C) for a callable."""
    in_c = isinstance(fn, (types.BuiltinFunctionType, types.MethodDescriptorType,
                           types.WrapperDescriptorType, types.ClassMethodDescriptorType))
    owner = getattr(fn, "__objclass__", None)
    if owner is None and isinstance(fn, types.BuiltinMethodType):
        receiver = getattr(fn, "__self__", None)
        if receiver is not None and not isinstance(receiver, types.ModuleType):
            owner = receiver if isinstance(receiver, type) else type(receiver)
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return None
    if isinstance(owner, type):
        return owner.__module__, [*owner.__qualname__.split("."), name], in_c
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", name)
    if not isinstance(module, str):
        return None
    return module, str(qualname).split("."), in_c


@functools.lru_cache(maxsize=4096)
def _return_annotations(module: str, path: tuple[str, ...]) -> tuple[ast.expr, ...] | None:
    names = _stub_names(module)
    if names is None:
        return None
    info = names.get(path[0])
    for part in path[1:]:
        children = getattr(info, "child_nodes", None)
        if not children:
            return None
        info = children.get(part)
    if info is None:
        return None
    defs = _definitions(info)
    if not defs or any(d.returns is None for d in defs):
        return None
    return tuple(d.returns for d in defs if d.returns is not None)


def _convert(node: ast.expr, exact: bool) -> Abstract:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return Const(None)
        return ANY
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return join_all([_convert(node.left, exact), _convert(node.right, exact)], 8)
    if isinstance(node, ast.Subscript):
        outer = _convert(node.value, exact)
        if exact and outer == Exact(list) and not isinstance(node.slice, ast.Tuple):
            # a new list of these items (the interpreter gives it an allocation site)
            return Elements(list, _convert(node.slice, exact))
        if exact and outer == Exact(tuple) and isinstance(node.slice, ast.Tuple):
            parts = node.slice.elts
            if len(parts) == 2 and isinstance(parts[1], ast.Constant) and (
                    parts[1].value is Ellipsis):
                return Elements(tuple, _convert(parts[0], exact))
            return PartialTuple(_convert(p, exact) for p in parts)
        return outer
    if isinstance(node, ast.Name):
        cls = _EXACT_FROM_C.get(node.id)
        if cls is not None:
            return Exact(cls) if exact or cls is bool else Sub(cls)
        if node.id == "LiteralString":
            return Exact(str) if exact else Sub(str)
        if node.id == "None":
            return Const(None)
        if node.id == "NoReturn" or node.id == "Never":
            return ANY  # a stub's NoReturn is trusted no further than Any
        value = getattr(builtins, node.id, None)
        if isinstance(value, type) and issubclass(value, BaseException):
            return Sub(value)
    return ANY


def stub_return(fn: Any) -> Abstract | None:
    """The abstract return value typeshed declares for the callable ``fn`` (joined over
    overloads), or ``None`` when there is no stub for it."""
    where = _locate(fn)
    if where is None:
        return None
    module, path, in_c = where
    annotations = _return_annotations(module, tuple(path))
    if annotations is None:
        return None
    return join_all([_convert(a, in_c) for a in annotations], 8)
