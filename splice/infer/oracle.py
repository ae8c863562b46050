"""The soundness oracle: run a program with every inferred value checked at run time.

``check_run(inference, fn, *args)`` instruments every function of the inferred call graph
(the entry and each callee specialisation): after each assignment of a temp, a call checks
that the run-time value is accepted by the temp's abstract value in the specialisation(s)
whose argument types accept the actual arguments of that call; the entry's return value is
checked against the return type. The functions' code is swapped in for the run and restored.

``LiveOracle`` checks functions of code nobody inferred beforehand (a module under a test
suite, ``python -m splice.tools.cpython_tests --mode oracle``): each call against the
function's inference for its arguments' exact classes, inferred on first use.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import splice.ir as splice_ir
from splice.infer.lattice import ANY, NEVER, Abstract, Exact
from splice.infer.results import Inference, InferenceParams
from splice.ir import nodes as N
from splice.ir.stand_ins import stands_for
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
        if isinstance(stmt.op, N.BoolOp) and stmt.op.in_test:
            # only its truth is used: written as statements, its value is that truth
            return ()
        return stmt.results
    return ()


def _rows(inf: Inference) -> tuple[tuple[Abstract, ...], list[list[Abstract]]]:
    """A specialisation's argument types and, per statement (walk order), the abstract
    values of the temps it assigns."""
    return inf.argtypes, [[inf.types.get(t, ANY) for t in _checked_temps(stmt)]
                          for stmt, _ in _assigns(inf.ir)]


def _instrument(fn: Any, infs: list[Inference] | None, checker: _Checker
                ) -> types.CodeType | None:
    """``fn``'s code with a check after each assignment of a temp (``infs``: its
    specialisations; None: they are added as the program runs, so every temp is checked)."""
    base = splice_ir.lower(fn)
    spec_rows = [_rows(inf) for inf in infs or ()]
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
        if not temps or (infs is not None and all(all(a is ANY for a in row[1][index])
                                                  for row in spec_rows)):
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
    from splice.ir.assemble import restore_nested_code

    try:
        compiled = splice_ir.compile_ir(base, fn)
    except Exception:
        return None
    # functions the checked function makes (closures, lambdas) keep their own code objects,
    # which inference knows them by (``MadeFunction``)
    code: types.CodeType = restore_nested_code(compiled.__code__, fn.__code__)
    return code


class LiveOracle(_Checker):
    """Checks functions while a program runs, whatever calls them.

    :meth:`instrument` (a stand-in for ``splice.ir.roundtrip``: ``splice.tools.rebuild``
    puts its results in a module's place) gives a function checking every temp it assigns.
    Each call is checked against the function's inference for the exact classes of its
    positional arguments (as a code instance under ``plugin.run`` is specialised), made on
    the first call with those classes by ``infer_for(fn, argtypes)`` (at most
    ``max_specializations`` per function, then one with every argument ``Any``).
    ``snapshot(inference)``, called right after an inference, returns a test of whether
    what it relied on (its edges: globals, class attributes, cells, callees' code) still
    holds; it is run when a value does not fit: if the edges broke, the value is counted in
    ``stale``, not as a violation (the program changed a definition; code instances check
    such changes where they rely on them), and the specialisation is inferred again at the
    next call. While the oracle itself runs (inferring, checking) no check is
    made, so the program may be code the oracle uses. ``report.violations`` holds one
    example per (function, line, abstract value); ``counts`` how many values each had.
    ``params``: the inference parameters of the default ``infer_for`` (a fresh
    ``AbstractInterpreter`` per specialisation).
    """

    def __init__(self, infer_for: Callable[[Any, tuple[Abstract, ...]], Inference]
                 | None = None,
                 snapshot: Callable[[Inference], Callable[[], bool]] | None = None,
                 max_specializations: int = 4, params: InferenceParams | None = None
                 ) -> None:
        super().__init__(Report())
        self.infer_for = infer_for or functools.partial(_fresh_inference, params=params)
        self.snapshot = snapshot or _always
        self.max_specializations = max_specializations
        #: per function key: its specialisations (inference, test of its edges)
        self.inferences: dict[int, list[tuple[Inference, Callable[[], bool]]]] = {}
        self._by_classes: dict[int, dict[tuple[type, ...] | None, int]] = {}
        #: function keys called at least once (checked)
        self.entered: set[int] = set()
        #: values outside their abstract value while the inference's edges no longer held
        self.stale = 0
        #: inferences that raised (the function's calls are then not checked)
        self.errors: list[str] = []
        self.counts: dict[tuple[str, int, str], int] = {}
        self._stale_specs: set[tuple[int, int | None]] = set()
        self._argcounts: list[int] = []
        self._state = threading.local()
        self._lock = threading.RLock()

    def instrument(self, fn: Any, *, renest: bool = True) -> types.FunctionType:
        """``fn`` checked by this oracle: a new function sharing its globals and cells.
        Raises ``UnsupportedError`` if it cannot be instrumented."""
        from splice.errors import UnsupportedError

        with self._quiet():
            code = _instrument(fn, None, self)
            self._argcounts.append(fn.__code__.co_argcount)
        if code is None or code.co_freevars != fn.__code__.co_freevars:
            raise UnsupportedError(getattr(fn, "__qualname__", repr(fn)),
                                   "the oracle cannot instrument it")
        namespace = fn.__globals__
        namespace[_CHECK] = self.check
        namespace[_ENTER] = self.enter
        new = types.FunctionType(code, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__module__ = fn.__module__
        new.__doc__ = fn.__doc__
        new.__annotations__ = fn.__annotations__
        new.__dict__.update(fn.__dict__)
        self.report.instrumented += 1
        return new

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        state = self._state
        before = getattr(state, "busy", False)
        state.busy = True
        try:
            yield
        finally:
            state.busy = before

    def enter(self, fn: int, *args: Any) -> list[int] | None:  # type: ignore[override]
        state = self._state
        if getattr(state, "busy", False):
            return None
        state.busy = True
        try:
            return self._enter(fn, args)
        except Exception as exc:  # the oracle must never change the program's run
            self.errors.append(f"{self.functions[fn].__qualname__}: "
                               f"{type(exc).__name__}: {exc}"[:300])
            return None
        finally:
            state.busy = False

    def _enter(self, fn: int, args: tuple[Any, ...]) -> list[int] | None:
        function = self.functions[fn]
        classes: tuple[type, ...] | None = tuple(
            type(a) for a in args[:self._argcounts[fn]])
        table = self._by_classes.setdefault(fn, {})
        specs = self.inferences.setdefault(fn, [])
        with self._lock:
            index = table.get(classes)
            if index is None and len(table) >= self.max_specializations:
                classes = None  # the generic specialisation
                index = table.get(classes)
            # (whether its edges still hold is tested when a value does not fit: a
            # specialisation found stale then is inferred again here)
            if index is not None and (fn, index) not in self._stale_specs:
                self.entered.add(fn)
                return [index]
            self._stale_specs.discard((fn, index))
            argtypes = () if classes is None else tuple(Exact(c) for c in classes)
            inference = self.infer_for(function, argtypes)
            entry = (inference, self.snapshot(inference))
            if index is None:
                index = table[classes] = len(specs)
                specs.append(entry)
                self.specs[fn].append(_rows(inference))
            else:
                specs[index] = entry
                self.specs[fn][index] = _rows(inference)
        self.entered.add(fn)
        return [index]

    def check(self, fn: int, index: int, line: int, specs: list[int] | None, *values: Any
              ) -> None:
        if specs is None:
            return
        state = self._state
        if getattr(state, "busy", False):
            return
        state.busy = True
        try:
            self._check(fn, index, line, specs[0], values)
        except Exception as exc:  # the oracle must never change the program's run
            self.errors.append(f"check in {self.functions[fn].__qualname__}: "
                               f"{type(exc).__name__}: {exc}"[:300])
        finally:
            state.busy = False

    def _check(self, fn: int, index: int, line: int, spec: int, values: tuple[Any, ...]
               ) -> None:
        row = self.specs[fn][spec][1][index]
        for abstract, value in zip(row, values, strict=False):
            self.report.checks += 1
            if abstract.accepts(value):
                continue
            inference, holds = self.inferences[fn][spec]
            if not holds():
                self.stale += 1
                self._stale_specs.add((fn, spec))  # inferred again at the next call
                continue
            name = self.functions[fn].__qualname__
            key = (f"{self.functions[fn].__module__}.{name}", line, str(abstract))
            self.counts[key] = self.counts.get(key, 0) + 1
            if self.counts[key] == 1:
                args = ", ".join(map(str, inference.argtypes))
                self.report.violations.append(Violation(
                    f"{key[0]}({args})", line, _short(value), str(abstract)))


def _fresh_inference(fn: Any, argtypes: tuple[Abstract, ...],
                     params: InferenceParams | None = None) -> Inference:
    from splice.infer.interpreter import AbstractInterpreter

    return AbstractInterpreter(params).infer(fn, argtypes)


def _always(inference: Inference) -> Callable[[], bool]:
    return lambda: True


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
                stands_for(code, function.__code__)
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
