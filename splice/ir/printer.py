"""Printing IR as a readable listing, in the spirit of Julia's ``@code_lowered``.

Statements are numbered, each computation reads ``%n = op(args)``, nested blocks are
indented, and the source line appears in the left margin whenever it changes.
"""

from __future__ import annotations

import ast
import dataclasses
import html
from collections.abc import Callable

from splice.ir.nodes import (
    Assign,
    BuildDict,
    Call,
    ClassDef,
    DeleteVar,
    For,
    FunctionDef,
    FunctionIR,
    If,
    Import,
    ImportFrom,
    Keyword,
    Match,
    Op,
    Pos,
    Region,
    Starred,
    Stmt,
    Store,
    Try,
    TypeAlias,
    Unpack,
    While,
    With,
)
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

Annotator = Callable[[object], str]


def operand_text(operand: object, annotate: Annotator | None = None) -> str:
    if isinstance(operand, Starred):
        return "*" + operand_text(operand.value, annotate)
    if isinstance(operand, Keyword):
        value = operand_text(operand.value, annotate)
        return f"**{value}" if operand.name is None else f"{operand.name}={value}"
    return repr(operand)


def op_text(op: Op) -> str:
    """``name(operands...)`` for an op, with its non-operand fields shown inline."""
    if isinstance(op, Call):
        args = [operand_text(a) for a in op.args] + [operand_text(k) for k in op.keywords]
        return f"call {operand_text(op.func)}({', '.join(args)})"
    if isinstance(op, BuildDict):
        parts = [f"**{v!r}" if k is None else f"{k!r}: {v!r}" for k, v in op.items]
        return "dict{" + ", ".join(parts) + "}"
    fields = []
    for name in (f.name for f in dataclasses.fields(op)):  # type: ignore[arg-type]
        value = getattr(op, name)
        if name in ("fn", "rest", "body", "orelse") or isinstance(value, Region):
            continue
        if name in op._operand_fields:
            if isinstance(value, list):
                fields.append("[" + ", ".join(operand_text(v) for v in value) + "]"
                              if name not in ("args", "items", "parts", "values", "defaults")
                              else ", ".join(operand_text(v) for v in value))
            elif value is not None:
                fields.append(operand_text(value))
        elif isinstance(value, bool):
            if value:
                fields.append(name)
        elif value is not None and not isinstance(value, (list, Pos)):
            # (positions are where the op came from, shown in the line column)
            fields.append(f"{name}={value!r}" if name not in ("op", "name") else repr(value)
                          if name == "name" else str(value))
    return f"{op.opname}({', '.join(fields)})"


class Printer:
    def __init__(self, annotate: Annotator | None = None) -> None:
        self.lines: list[tuple[str, int, str]] = []  # (line marker, depth, text)
        self.last_line = -1
        self.annotate = annotate

    def add(self, stmt_line: int, depth: int, text: str) -> None:
        marker = "" if stmt_line == self.last_line else str(stmt_line)
        self.last_line = stmt_line
        self.lines.append((marker, depth, text))

    def function(self, ir: FunctionIR, depth: int = 0) -> None:
        args = ir.args.signature()
        kind = {"class": "class", "comprehension": "comprehension", "lambda": "lambda"}.get(
            ir.kind, "async def" if ir.is_async else "def")
        self.add(ir.pos.lineno, depth, f"{kind} {ir.qualname}({args})")
        for decl, names in (("global", ir.globals), ("nonlocal", ir.nonlocals)):
            if names:
                self.add(ir.pos.lineno, depth + 1, f"{decl} {', '.join(names)}")
        self.block(ir.body, depth + 1)

    def block(self, stmts: list[Stmt], depth: int) -> None:
        for stmt in stmts:
            self.stmt(stmt, depth)

    def region(self, label: str, region: Region, depth: int, line: int) -> None:
        self.add(line, depth, f"{label}:")
        self.block(region.body, depth + 1)
        self.add(line, depth + 1, f"→ {region.value!r}")

    def stmt(self, stmt: Stmt, depth: int) -> None:
        line = stmt.pos.lineno
        if isinstance(stmt, Assign):
            text = op_text(stmt.op)
            if isinstance(stmt.op, Unpack):
                lhs = ", ".join(repr(r) for r in stmt.results)
                text = f"{lhs} = {text}"
            elif stmt.results:
                annotation = stmt.results[0].annotation
                suffix = f"::{annotation}" if annotation is not None else ""
                text = f"{stmt.results[0]!r} = {text}{suffix}"
            self.add(line, depth, text)
            for i, region in enumerate(stmt.op.regions()):
                self.region(f"lazy {i + 1}", region, depth + 1, line)
            inner = getattr(stmt.op, "fn", None)
            if isinstance(inner, FunctionIR):
                self.function(inner, depth + 1)
        elif isinstance(stmt, Store):
            self.add(line, depth, f"{stmt.var.name} = {stmt.value!r}")
        elif isinstance(stmt, DeleteVar):
            self.add(line, depth, f"del {stmt.var.name}")
        elif isinstance(stmt, If):
            self.add(line, depth, f"if {stmt.test!r}")
            self.block(stmt.body, depth + 1)
            if stmt.orelse:
                self.add(line, depth, "else")
                self.block(stmt.orelse, depth + 1)
            self.add(line, depth, "end")
        elif isinstance(stmt, While):
            self.add(line, depth, "while")
            self.region("test", stmt.test, depth + 1, line)
            self.block(stmt.body, depth + 1)
            if stmt.orelse:
                self.add(line, depth, "else")
                self.block(stmt.orelse, depth + 1)
            self.add(line, depth, "end")
        elif isinstance(stmt, For):
            word = "async for" if stmt.is_async else "for"
            self.add(line, depth, f"{word} {stmt.target!r} = next({stmt.iterator!r})")
            self.block(stmt.body, depth + 1)
            if stmt.orelse:
                self.add(line, depth, "else")
                self.block(stmt.orelse, depth + 1)
            self.add(line, depth, "end")
        elif isinstance(stmt, With):
            word = "async with" if stmt.is_async else "with"
            target = f" as {stmt.target!r}" if stmt.target is not None else ""
            self.add(line, depth, f"{word} enter({stmt.manager!r}){target}")
            self.block(stmt.body, depth + 1)
            self.add(line, depth, f"exit({stmt.manager!r})")
        elif isinstance(stmt, Try):
            self.add(line, depth, "try")
            self.block(stmt.body, depth + 1)
            for handler in stmt.handlers:
                star = "*" if stmt.is_star else ""
                name = f" as {handler.name}" if handler.name else ""
                self.add(handler.pos.lineno, depth, f"except{star}{name}")
                if handler.type is not None:
                    self.region("matches", handler.type, depth + 1, handler.pos.lineno)
                self.block(handler.body, depth + 1)
            if stmt.orelse:
                self.add(line, depth, "else")
                self.block(stmt.orelse, depth + 1)
            if stmt.finalbody:
                self.add(line, depth, "finally")
                self.block(stmt.finalbody, depth + 1)
            self.add(line, depth, "end")
        elif isinstance(stmt, Match):
            self.add(line, depth, f"match {stmt.subject!r}")
            for case in stmt.cases:
                self.add(line, depth + 1, f"case {ast.unparse(case.pattern)}")
                if case.guard is not None:
                    self.region("guard", case.guard, depth + 2, line)
                self.block(case.body, depth + 2)
            self.add(line, depth, "end")
        elif isinstance(stmt, (FunctionDef, ClassDef)):
            operands = ", ".join([*(repr(o) for o in stmt.operands()),
                                  *(_scoped_parts(stmt) if isinstance(stmt, ClassDef) else [])])
            word = "def" if isinstance(stmt, FunctionDef) else "class"
            self.add(line, depth,
                     f"{word} {stmt.fn.name}{_type_params(stmt.fn.type_params)}({operands})")
            self.function(stmt.fn, depth + 1)
        elif isinstance(stmt, TypeAlias):
            self.add(line, depth, f"type {stmt.var.name}{_type_params(stmt.type_params)}"
                                  f" = lazy {ast.unparse(stmt.value)}")
        elif isinstance(stmt, (Import, ImportFrom)):
            names = ", ".join(n if a is None else f"{n} as {a}" for n, a in stmt.names)
            if isinstance(stmt, ImportFrom):
                module = "." * stmt.level + (stmt.module or "")
                self.add(line, depth, f"from {module} import {names}")
            else:
                self.add(line, depth, f"import {names}")
        else:
            name = type(stmt).__name__.lower()
            operands = ", ".join(repr(o) for o in stmt.operands())
            self.add(line, depth, f"{name} {operands}".rstrip())
            for region in stmt.regions():
                self.region("lazy", region, depth + 1, line)

    def render(self) -> str:
        width = max((len(m) for m, _, _ in self.lines), default=1)
        out = []
        for number, (marker, depth, text) in enumerate(self.lines, start=1):
            out.append(f"{marker:>{width}} │ {number:>3} {'  ' * depth}{text}")
        return "\n".join(out)


def format_function(ir: FunctionIR, annotate: Annotator | None = None) -> str:
    """The listing of ``ir``."""
    printer = Printer(annotate)
    printer.function(ir)
    return printer.render()


class Listing:
    """What ``splice.code_lowered`` returns: prints as the listing, renders in Jupyter."""

    def __init__(self, ir: FunctionIR) -> None:
        self.ir = ir

    def __str__(self) -> str:
        return format_function(self.ir)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


def _type_params(params: list[ast.AST]) -> str:
    """``[T, *Ts]``: PEP 695 type parameters as written (evaluated lazily, so shown as
    source), or nothing."""
    return f"[{', '.join(ast.unparse(p) for p in params)}]" if params else ""


def _scoped_parts(stmt: ClassDef) -> list[str]:
    """A generic class's bases and keywords, evaluated in its type parameters' scope."""
    return [ast.unparse(part) for part in [*stmt.scoped_bases, *stmt.scoped_keywords]]
