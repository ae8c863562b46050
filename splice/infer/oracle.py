"""The soundness oracle: run a program with every inferred value checked at run time.

``check_run(inference, fn, *args)`` instruments every function of the inferred call graph
(the entry and each callee specialisation): after each assignment of a temp, a call checks
that the run-time value is accepted by the temp's abstract value in the specialisation(s)
whose argument types accept the actual arguments of that call; the entry's return value is
checked against the return type. The functions' code is swapped in for the run and restored.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import splice.ir as splice_ir
from splice.infer.lattice import ANY, NEVER, Abstract
from splice.infer.results import Inference
from splice.ir import nodes as N
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

_SPEC_VAR = "__splice_oracle_spec"
# the checker is reached through two module globals set for the run (constants that are
# not inert objects would become closure cells, and the code could not be swapped in)
_CHECK = "__splice_oracle_check__"
_ENTER = "__splice_oracle_enter__"


@dataclass
class Violation:
    """A run-time value outside its inferred abstract value."""

    function: str
    line: int
    value: str
    abstract: str

    def __str__(self) -> str:
        return f"{self.function}:{self.line}: {self.value} not in {self.abstract}"


@dataclass
class Report:
    """What an instrumented run checked: ``checks`` values, ``violations`` found,
    ``instrumented`` functions, ``unmatched`` calls no specialisation accepted, and the
    entry's ``result`` (or the exception it ``raised``)."""

    checks: int = 0
    violations: list[Violation] = field(default_factory=list)
    instrumented: int = 0
    unmatched: int = 0
    result: Any = None
    raised: BaseException | None = None


def _assigns(ir: N.FunctionIR) -> Iterator[tuple[N.Stmt, list[N.Stmt]]]:
    """(statement, block holding it) in walk order, into comprehension scopes."""
    def block(stmts: list[N.Stmt]) -> Iterator[tuple[N.Stmt, list[N.Stmt]]]:
        for stmt in list(stmts):
            for region in stmt.regions():
                yield from block(region.body)
            yield stmt, stmts
            if isinstance(stmt, N.Assign) and isinstance(stmt.op, N.MakeComprehension):
                yield from block(stmt.op.fn.body)
            for inner in stmt.blocks():
                yield from block(inner)
    return block(ir.body)


def all_inferences(root: Inference) -> list[Inference]:
    """The root and every callee specialisation reachable from it."""
    seen: dict[int, Inference] = {}
    todo = [root]
    while todo:
        inf = todo.pop()
        if id(inf) in seen:
            continue
        seen[id(inf)] = inf
        todo.extend(inf.callee_inferences)
    return list(seen.values())


class _Checker:
    def __init__(self, report: Report) -> None:
        self.report = report
        # function -> list of (argtypes, [annotation per checked statement])
        self.specs: dict[int, list[tuple[tuple[Abstract, ...], list[list[Abstract]]]]] = {}
        self.functions: list[Any] = []

    def enter(self, fn: int, *args: Any) -> list[int]:
        matches = [i for i, (argtypes, _) in enumerate(self.specs[fn])
                   if len(argtypes) == len(args)
                   and all(a.accepts(v) for a, v in zip(argtypes, args, strict=False))]
        if not matches:
            self.report.unmatched += 1
        return matches

    def check(self, fn: int, index: int, line: int, specs: list[int] | None, *values: Any
              ) -> None:
        entries = self.specs[fn]
        chosen = range(len(entries)) if specs is None else specs
        for position, value in enumerate(values):
            self.report.checks += 1
            abstracts = [entries[i][1][index][position] for i in chosen]
            if not abstracts:
                continue
            if not any(a.accepts(value) for a in abstracts):
                self.report.violations.append(Violation(
                    self.functions[fn].__qualname__, line, _short(value),
                    " / ".join(map(str, abstracts))))


def _short(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}"


def _checked_temps(stmt: N.Stmt) -> tuple[N.Temp, ...]:
    if isinstance(stmt, N.Assign):
        return stmt.results
    return ()


def _instrument(fn: Any, infs: list[Inference], checker: _Checker) -> types.CodeType | None:
    base = splice_ir.lower(fn)
    spec_rows: list[tuple[tuple[Abstract, ...], list[list[Abstract]]]] = []
    for inf in infs:
        rows = [[inf.types.get(t, ANY) for t in _checked_temps(stmt)]
                for stmt, _ in _assigns(inf.ir)]
        spec_rows.append((inf.argtypes, rows))
    key = len(checker.functions)
    checker.functions.append(fn)
    checker.specs[key] = spec_rows
    comprehension_stmts: set[int] = set()
    for stmt, _ in _assigns(base):
        if isinstance(stmt, N.Assign) and isinstance(stmt.op, N.MakeComprehension):
            comprehension_stmts.update(id(s) for s in stmt.op.fn.walk())
    inserts: list[tuple[list[N.Stmt], N.Stmt, N.Stmt]] = []
    for index, (stmt, block) in enumerate(list(_assigns(base))):
        temps = _checked_temps(stmt)
        if not temps or all(all(a is ANY for a in row[1][index]) for row in spec_rows):
            continue
        if id(stmt) in comprehension_stmts:
            continue  # codegen keeps comprehension bodies as expressions: not checked
        spec_arg: N.Operand = N.Var(_SPEC_VAR)
        call = N.Call(N.Var(_CHECK), [N.Const(key), N.Const(index),
                                               N.Const(stmt.pos.lineno), spec_arg, *temps], [])
        inserts.append((block, stmt, N.Assign((), call, stmt.pos)))
    for block, stmt, new in inserts:
        position = next(i for i, s in enumerate(block) if s is stmt)
        block.insert(position + 1, new)
    params = [N.Var(name) for name in base.args.names()]
    enter = N.Call(N.Var(_ENTER), [N.Const(key), *params], [])
    result = base.new_temp()
    base.body[:0] = [N.Assign((result,), enter, base.pos), N.Store(N.Var(_SPEC_VAR), result,
                                                                   base.pos)]
    try:
        compiled = splice_ir.compile_ir(base, fn)
    except Exception:
        return None
    code: types.CodeType = compiled.__code__
    return code


def check_run(inference: Inference, fn: Any, *args: Any, **kwargs: Any) -> Report:
    """Run ``fn(*args, **kwargs)`` with every function of ``inference``'s call graph
    instrumented; the report lists the values outside their abstract values."""
    report = Report()
    checker = _Checker(report)
    by_function: dict[Any, list[Inference]] = {}
    for inf in all_inferences(inference):
        by_function.setdefault(inf.function, []).append(inf)
    saved: dict[Any, types.CodeType] = {}
    namespaces: dict[int, dict[str, Any]] = {}
    try:
        for function, infs in by_function.items():
            if not isinstance(function, types.FunctionType):
                continue
            namespace = function.__globals__
            namespaces[id(namespace)] = namespace
            namespace[_CHECK] = checker.check
            namespace[_ENTER] = checker.enter
            code = _instrument(function, infs, checker)
            if code is not None and code.co_freevars == function.__code__.co_freevars:
                saved[function] = function.__code__
                function.__code__ = code
                report.instrumented += 1
        try:
            report.result = fn(*args, **kwargs)
        except Exception as exc:  # the program's own exception: values were still checked
            report.raised = exc
    finally:
        for function, code in saved.items():
            function.__code__ = code
        for namespace in namespaces.values():
            namespace.pop(_CHECK, None)
            namespace.pop(_ENTER, None)
    if report.raised is None and (inference.return_type is NEVER
                                  or not inference.return_type.accepts(report.result)):
        report.violations.append(Violation(
            getattr(fn, "__qualname__", str(fn)), 0, _short(report.result),
            f"return {inference.return_type}"))
    report.checks += 1
    return report
