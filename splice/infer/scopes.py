"""Which names of a function its inner scopes use or rebind, and what a pattern binds."""

from __future__ import annotations

import ast

from splice.ir import nodes as N
from splice.ir.walk import walk
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


def _captured_by_inner_functions(ir: N.FunctionIR) -> set[str]:
    """Names used by nested functions, lambdas and classes (not comprehensions, which
    inference runs inline)."""
    names: set[str] = set()
    for stmt in ir.walk():
        names |= _scoped_names(stmt)
        inner: N.FunctionIR | None = None
        if isinstance(stmt, (N.FunctionDef, N.ClassDef)):
            inner = stmt.fn
        elif isinstance(stmt, N.Assign) and isinstance(stmt.op, N.MakeLambda):
            inner = stmt.op.fn
        elif isinstance(stmt, N.Assign) and isinstance(stmt.op, N.MakeComprehension):
            names |= _captured_by_inner_functions(stmt.op.fn)
        if inner is not None:
            names |= _all_names(inner)
    return names


def _scoped_names(stmt: N.Stmt) -> set[str]:
    """Names read by the parts of a statement kept as source AST that run in scopes of their
    own (PEP 695: type parameters' bounds, a generic definition's annotations, bases and
    keywords, a ``type`` statement's value), some of them lazily, after the statement."""
    parts: list[ast.AST] = []
    if isinstance(stmt, N.TypeAlias):
        parts = [*stmt.type_params, stmt.value]
    elif isinstance(stmt, (N.FunctionDef, N.ClassDef)) and stmt.fn.type_params:
        parts = list(stmt.fn.type_params)
        if isinstance(stmt, N.FunctionDef):
            parts += [a for _, a in stmt.annotations if isinstance(a, ast.AST)]
        else:
            parts += [*stmt.scoped_bases, *stmt.scoped_keywords]
    return {node.id for part in parts for node in walk(part)
            if isinstance(node, ast.Name)}


def _all_names(ir: N.FunctionIR) -> set[str]:
    names: set[str] = set(ir.args.names())
    for stmt in ir.walk():
        names |= _scoped_names(stmt)
        for operand in stmt.operands():
            if isinstance(operand, N.Var):
                names.add(operand.name)
        if isinstance(stmt, N.Assign) and isinstance(stmt.op, N.Load):
            names.add(stmt.op.var.name)
        if isinstance(stmt, N.Store):
            names.add(stmt.var.name)
        for region in stmt.regions():
            if isinstance(region.value, N.Var):
                names.add(region.value.name)
        if isinstance(stmt, (N.FunctionDef, N.ClassDef)):
            names |= _all_names(stmt.fn)
        elif isinstance(stmt, N.Assign) and isinstance(stmt.op, (N.MakeLambda,
                                                                 N.MakeComprehension)):
            names |= _all_names(stmt.op.fn)
    return names


def _rebound_by_inner_scopes(ir: N.FunctionIR) -> set[str]:
    """Names that nested scopes declare ``nonlocal`` (any call may rebind them)."""
    names: set[str] = set()
    for stmt in ir.walk():
        inner: N.FunctionIR | None = None
        if isinstance(stmt, (N.FunctionDef, N.ClassDef)):
            inner = stmt.fn
        elif isinstance(stmt, N.Assign) and isinstance(stmt.op, (N.MakeLambda,
                                                                 N.MakeComprehension)):
            inner = stmt.op.fn
        if inner is not None:
            names.update(inner.nonlocals)
            names.update(_rebound_by_inner_scopes(inner))
    return names


def _pattern_names(pattern: ast.pattern) -> list[str]:
    names = []
    for node in walk(pattern):
        name = getattr(node, "name", None) or getattr(node, "rest", None)
        if isinstance(name, str):
            names.append(name)
    return names
