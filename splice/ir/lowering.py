"""Lowering: Python source AST -> IR, with Python's exact evaluation order and scoping.

Corners decided here (each mirrors what CPython 3.11's compiler does):

* Operands are evaluated left to right. A name whose read is followed by a sibling that runs
  code is captured first with ``Load`` (``f(x, g())`` reads ``f`` and ``x`` before calling
  ``g``); names and constants followed only by names and constants stay plain operands.
* ``a[i] = v`` and ``a.b = v`` evaluate ``v`` first, then the target's parts.
* ``*x`` and ``**m`` in calls, class statements and displays are iterated (``Splat``/
  ``DoubleSplat``) at their place in the sequence, before later arguments are evaluated,
  except the lone ``*x`` of a call (``f(*x, k=v, **m)``): ``x`` is evaluated in place and the
  call iterates it, after its keyword arguments and ``**`` mappings, as CPython's
  ``CALL_FUNCTION_EX`` does; the ``Call`` holds ``Starred(x)`` with no ``Splat``.
* Keyword arguments are evaluated after all positional ones, whatever the source order
  (``f(a=g(), *h())`` calls ``h`` first), because the AST keeps them apart.
* ``x op= v`` reads the target (and a subscript's object and index) once.
* Function annotations are evaluated in the order: positional (``args``), positional-only,
  ``*args``, keyword-only, ``**kwargs``, return; annotations of local variables in a function
  are never evaluated; under ``from __future__ import annotations`` none are.
* ``and``/``or``/chained comparisons in a condition (``if``, ``while``, ``assert``, comprehension
  ``if``, conditional expression test, ``not`` in a condition) are marked ``in_test``.
* Elsewhere, an ``and``/``or`` whose value another one tests next (``(a or b) and c``, also
  through last operands: ``(a and (b or c)) or d``) is ``threaded`` when both start on one
  line, under 3.11 only (``splice.compat.JUMP_THREADING``): its deciding test is not made
  again. A conditional expression, ``not``, ``:=`` or a chained comparison between them
  stops it.
* A class body's docstring, ``__module__``/``__qualname__`` and the like are left to the
  compiler, which regenerates them from the class statement.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from splice.compat import JUMP_THREADING
from splice.errors import UnsupportedError
from splice.ir.nodes import (
    BINARY_OPS,
    COMPARE_OPS,
    UNARY_OPS,
    AnnotateName,
    Arguments,
    Assert,
    Assign,
    Await,
    BinOp,
    BoolOp,
    Break,
    BuildDict,
    BuildList,
    BuildSet,
    BuildSlice,
    BuildTuple,
    Call,
    Case,
    ClassDef,
    Compare,
    ComprehensionAppend,
    Const,
    Continue,
    Copy,
    Declare,
    DelAttr,
    DeleteVar,
    DelItem,
    DoubleSplat,
    For,
    Format,
    FunctionDef,
    FunctionIR,
    GetAttr,
    GetItem,
    Handler,
    If,
    IfExp,
    Import,
    ImportFrom,
    InPlace,
    Iter,
    JoinStr,
    Keyword,
    Load,
    MakeComprehension,
    MakeLambda,
    Match,
    Op,
    Operand,
    Pass,
    Pos,
    Raise,
    Region,
    Return,
    SetAttr,
    SetItem,
    Splat,
    Starred,
    Stmt,
    Store,
    Temp,
    Try,
    TypeAlias,
    UnaryOp,
    Unpack,
    Var,
    Walrus,
    While,
    With,
    Yield,
    YieldFrom,
)
from splice.ir.source import FunctionSource
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

FUTURE_ANNOTATIONS = 0x1000000  # CO_FUTURE_ANNOTATIONS

COMPREHENSION_NAMES = {
    ast.ListComp: ("list", "<listcomp>"),
    ast.SetComp: ("set", "<setcomp>"),
    ast.DictComp: ("dict", "<dictcomp>"),
    ast.GeneratorExp: ("genexp", "<genexpr>"),
}


def lower_source(source: FunctionSource, qualname: str) -> FunctionIR:
    """Lower the function found by :func:`splice.ir.source.find_source`."""
    node = source.node
    in_class = bool(source.enclosing) and isinstance(source.enclosing[-1], ast.ClassDef)
    return _lower_function(node, qualname, source.filename, source.future_flags,
                           source.module_imports, in_class)


def _lower_function(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                    qualname: str, filename: str, future_flags: int,
                    module_imports: frozenset[str], in_class: bool = False) -> FunctionIR:
    is_lambda = isinstance(node, ast.Lambda)
    ir = FunctionIR(
        name="<lambda>" if is_lambda else node.name,  # type: ignore[union-attr]
        qualname=qualname,
        kind="lambda" if is_lambda else "function",
        args=_arguments(node.args),
        body=[],
        filename=filename,
        pos=Pos.of(node),
        is_async=isinstance(node, ast.AsyncFunctionDef),
        future_flags=future_flags,
        module_imports=module_imports,
        type_params=copy.deepcopy(getattr(node, "type_params", None) or []),
    )
    lowerer = Lowerer(ir)
    if isinstance(node, ast.Lambda):
        value = lowerer.expr(node.body)
        lowerer.emit(Return(value, Pos.of(node.body)))
    else:
        lowerer.body(node.body, allow_docstring=True)
    return ir


def _arguments(args: ast.arguments) -> Arguments:
    return Arguments(
        posonly=[a.arg for a in args.posonlyargs],
        args=[a.arg for a in args.args],
        vararg=args.vararg.arg if args.vararg else None,
        kwonly=[a.arg for a in args.kwonlyargs],
        kwarg=args.kwarg.arg if args.kwarg else None,
        source=args,  # shared with the parsed source: read it, never mutate it
    )


def _trivial(node: ast.expr | None) -> bool:
    """Lowers to a plain operand (reading it runs no code other than a name lookup)."""
    if node is None:
        return True
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    return _constant_value(node) is not _NOT_CONSTANT


class _NotConstant:
    pass


_NOT_CONSTANT = _NotConstant()


def _constant_value(node: ast.expr) -> object:
    """The value of a constant expression the compiler folds (tuples of constants, -1)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load):
        values = [_constant_value(e) for e in node.elts]
        if any(v is _NOT_CONSTANT for v in values):
            return _NOT_CONSTANT
        return tuple(values)
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) in (int, float, complex)):
        return -node.operand.value  # type: ignore[operator]
    return _NOT_CONSTANT


class Lowerer:
    """Lowers the statements and expressions of one scope into ``ir``."""

    def __init__(self, ir: FunctionIR) -> None:
        self.ir = ir
        self.block: list[Stmt] = ir.body
        #: an and/or operand of an and/or (by ``id``) -> the line of the and/or that tests
        #: its value next (``BoolOp.threaded``)
        self.testers: dict[int, int] = {}

    # ----------------------------------------------------------------------------- emitting

    def emit(self, stmt: Stmt) -> None:
        self.block.append(stmt)

    def op(self, op: Op, node: ast.AST | Pos) -> Temp:
        temp = self.ir.new_temp()
        pos = node if isinstance(node, Pos) else Pos.of(node)
        self.emit(Assign((temp,), op, pos))
        return temp

    @contextmanager
    def into(self, block: list[Stmt]) -> Iterator[None]:
        saved, self.block = self.block, block
        try:
            yield
        finally:
            self.block = saved

    def region(self, node: ast.expr, in_test: bool = False) -> Region:
        body: list[Stmt] = []
        with self.into(body):
            value = self.expr(node, in_test)
        return Region(body, value)

    def unsupported(self, node: ast.AST, reason: str) -> UnsupportedError:
        pos = f"{self.ir.filename}:{getattr(node, 'lineno', '?')}"
        return UnsupportedError(self.ir.qualname, reason, pos)

    # ------------------------------------------------------------------------- statements

    def body(self, stmts: list[ast.stmt], allow_docstring: bool = False) -> None:
        if (allow_docstring and stmts and isinstance(stmts[0], ast.Expr)
                and isinstance(stmts[0].value, ast.Constant)
                and isinstance(stmts[0].value.value, str)):
            self.ir.docstring = stmts[0].value.value
            stmts = stmts[1:]
        for stmt in stmts:
            self.stmt(stmt)

    def stmts(self, stmts: list[ast.stmt]) -> list[Stmt]:
        block: list[Stmt] = []
        with self.into(block):
            for stmt in stmts:
                self.stmt(stmt)
        return block

    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.unsupported(node, f"statement {type(node).__name__} is not supported")
        method(node)

    def stmt_Expr(self, node: ast.Expr) -> None:
        value = node.value
        if isinstance(value, ast.Constant):
            self.emit(Pass(Pos.of(node)))
            return
        result = self.expr(value)
        last = self.block[-1] if self.block else None
        if isinstance(last, Assign) and last.results == (result,):
            last.results = ()
        elif isinstance(result, Var):
            self.emit(Assign((), Load(result), Pos.of(value)))
        else:  # a folded constant such as (1, 2)
            self.emit(Pass(Pos.of(node)))

    def stmt_Pass(self, node: ast.Pass) -> None:
        self.emit(Pass(Pos.of(node)))

    def stmt_Break(self, node: ast.Break) -> None:
        self.emit(Break(Pos.of(node)))

    def stmt_Continue(self, node: ast.Continue) -> None:
        self.emit(Continue(Pos.of(node)))

    def stmt_Global(self, node: ast.Global) -> None:
        self.ir.globals.extend(n for n in node.names if n not in self.ir.globals)

    def stmt_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.ir.nonlocals.extend(n for n in node.names if n not in self.ir.nonlocals)

    def stmt_Return(self, node: ast.Return) -> None:
        value = None if node.value is None else self.expr(node.value)
        self.emit(Return(value, Pos.of(node)))

    def stmt_Raise(self, node: ast.Raise) -> None:
        exc, cause = self.sequence_opt([node.exc, node.cause])
        self.emit(Raise(exc, cause, Pos.of(node)))

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        if isinstance(value, Var) and (
            len(node.targets) > 1 or not _simple_target(node.targets[0])
        ):
            value = self.load(value, node.value)
        elif isinstance(value, Const) and len(node.targets) > 1:
            value = self.op(Copy(value), node.value)  # one value, stored to each target
        for target in node.targets:
            self.store(target, value, Pos.of(node))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        opname = "i" + BINARY_OPS[type(node.op)].rstrip("_")
        target = node.target
        pos = Pos.of(node)
        if isinstance(target, ast.Name):
            var = Var(target.id, Pos.of(target))
            current: Operand = var if _trivial(node.value) else self.load(var, target)
            value = self.expr(node.value)
            result = self.op(InPlace(opname, current, value), pos)
            self.emit(Store(var, result, pos))
        elif isinstance(target, ast.Attribute):
            obj = self.as_temp(self.expr(target.value), target.value)
            current = self.op(GetAttr(obj, target.attr), target)
            value = self.expr(node.value)
            result = self.op(InPlace(opname, current, value), pos)
            self.emit(Assign((), SetAttr(result, obj, target.attr, Pos.of(target)), pos))
        elif isinstance(target, ast.Subscript):
            obj, index = self.sequence([target.value, target.slice], force={0, 1})
            obj = self.as_temp(obj, target.value)
            index = self.as_temp(index, target.slice)
            current = self.op(GetItem(obj, index), target)
            value = self.expr(node.value)
            result = self.op(InPlace(opname, current, value), pos)
            self.emit(Assign((), SetItem(result, obj, index, Pos.of(target)), pos))
        else:
            raise self.unsupported(node, "augmented assignment to this target")

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        target = node.target
        pos = Pos.of(node)
        evaluated = self.ir.kind == "class" and not self.ir.future_flags & FUTURE_ANNOTATIONS
        if self.ir.kind != "class":
            # A function never evaluates the annotations of its variables.
            if node.value is not None:
                stored = self.expr(node.value)
                if isinstance(target, ast.Name) and node.simple:
                    self.emit(Store(Var(target.id, Pos.of(target)), stored, pos,
                                    annotation=copy.deepcopy(node.annotation)))
                else:
                    if isinstance(stored, Var) and not _simple_target(target):
                        stored = self.load(stored, node.value)
                    self.store(target, stored, pos)
            elif isinstance(target, ast.Name):
                self.emit(Declare(Var(target.id, Pos.of(target)),
                                  copy.deepcopy(node.annotation), pos))
            else:  # ``a.b: int`` still evaluates ``a`` (and a subscript's index)
                parts = ([target.value] if isinstance(target, ast.Attribute)
                         else [target.value, target.slice])
                for part in self.sequence(parts):
                    if isinstance(part, Var):
                        self.emit(Assign((), Load(part), pos))
            return
        if isinstance(target, ast.Name):
            value: Operand | None = None if node.value is None else self.expr(node.value)
            annotation: Operand | ast.expr
            if evaluated:
                if value is not None and isinstance(value, Var) and not _trivial(
                        node.annotation):
                    value = self.load(value, node.value)  # type: ignore[arg-type]
                annotation = self.expr(node.annotation)
            else:
                annotation = copy.deepcopy(node.annotation)
            self.emit(AnnotateName(Var(target.id, Pos.of(target)), annotation, value,
                                   bool(node.simple), pos))
            return
        if node.value is not None:
            value = self.expr(node.value)
            if isinstance(value, Var):
                value = self.load(value, node.value)
            self.store(target, value, pos)
        if evaluated:
            self.effect(node.annotation)

    def stmt_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.delete(target, Pos.of(node))

    def delete(self, target: ast.expr, pos: Pos) -> None:
        if isinstance(target, ast.Name):
            self.emit(DeleteVar(Var(target.id, Pos.of(target)), pos))
        elif isinstance(target, ast.Attribute):
            obj = self.expr(target.value)
            self.emit(Assign((), DelAttr(obj, target.attr, Pos.of(target)), pos))
        elif isinstance(target, ast.Subscript):
            obj, index = self.sequence([target.value, target.slice])
            self.emit(Assign((), DelItem(obj, index, Pos.of(target)), pos))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.delete(elt, pos)
        else:
            raise self.unsupported(target, f"del of {type(target).__name__}")

    def stmt_If(self, node: ast.If) -> None:
        test = self.expr(node.test, in_test=True)
        self.emit(If(test, self.stmts(node.body), self.stmts(node.orelse), Pos.of(node)))

    def stmt_While(self, node: ast.While) -> None:
        test = self.region(node.test, in_test=True)
        self.emit(While(test, self.stmts(node.body), self.stmts(node.orelse), Pos.of(node)))

    def stmt_For(self, node: ast.For | ast.AsyncFor) -> None:
        is_async = isinstance(node, ast.AsyncFor)
        iterable = self.expr(node.iter)
        iterator = self.op(Iter(iterable, is_async), node.iter)
        target = self.ir.new_temp()
        body: list[Stmt] = []
        with self.into(body):
            self.store(node.target, target, Pos.of(node.target))
            for stmt in node.body:
                self.stmt(stmt)
        self.emit(For(iterator, target, body, self.stmts(node.orelse), is_async, Pos.of(node)))

    stmt_AsyncFor = stmt_For

    def stmt_With(self, node: ast.With | ast.AsyncWith) -> None:
        self.with_items(node, node.items, joined=False)

    stmt_AsyncWith = stmt_With

    def with_items(self, node: ast.With | ast.AsyncWith, items: list[ast.withitem],
                   joined: bool) -> None:
        item = items[0]
        manager = self.expr(item.context_expr)
        target = self.ir.new_temp() if item.optional_vars is not None else None
        body: list[Stmt] = []
        with self.into(body):
            if target is not None and item.optional_vars is not None:
                self.store(item.optional_vars, target, Pos.of(item.optional_vars))
            if len(items) > 1:
                self.with_items(node, items[1:], joined=True)
            else:
                for stmt in node.body:
                    self.stmt(stmt)
        self.emit(With(manager, target, body, isinstance(node, ast.AsyncWith), Pos.of(node),
                       joined=joined))

    def stmt_Try(self, node: ast.Try | ast.TryStar) -> None:
        body = self.stmts(node.body)
        handlers = []
        for handler in node.handlers:
            type_ = None if handler.type is None else self.region(handler.type)
            handlers.append(Handler(type_, handler.name, self.stmts(handler.body),
                                    Pos.of(handler)))
        self.emit(Try(body, handlers, self.stmts(node.orelse), self.stmts(node.finalbody),
                      isinstance(node, ast.TryStar), Pos.of(node)))

    stmt_TryStar = stmt_Try

    def stmt_Assert(self, node: ast.Assert) -> None:
        test = self.region(node.test, in_test=True)
        msg = None if node.msg is None else self.region(node.msg)
        self.emit(Assert(test, msg, Pos.of(node)))

    def stmt_Import(self, node: ast.Import) -> None:
        self.emit(Import([(a.name, a.asname) for a in node.names], Pos.of(node)))

    def stmt_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.emit(ImportFrom(node.module, [(a.name, a.asname) for a in node.names],
                             node.level or 0, Pos.of(node)))

    def stmt_Match(self, node: ast.Match) -> None:
        subject = self.expr(node.subject)
        cases = []
        for case in node.cases:
            guard = None if case.guard is None else self.region(case.guard, in_test=True)
            cases.append(Case(copy.deepcopy(case.pattern), guard, self.stmts(case.body)))
        self.emit(Match(subject, cases, Pos.of(node)))

    def stmt_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        future = self.ir.future_flags & FUTURE_ANNOTATIONS
        items: list[ast.expr | tuple[str, ast.expr]] = list(node.decorator_list)
        ndec = len(items)
        items += node.args.defaults
        kw_present = [d is not None for d in node.args.kw_defaults]
        items += [d for d in node.args.kw_defaults if d is not None]
        annotation_names: list[str] = []
        annotation_nodes: list[ast.expr] = []
        for name, annotation in _annotations(node.args, node.returns):
            annotation_names.append(name)
            annotation_nodes.append(annotation)
        # PEP 695: a generic function's annotations are evaluated in the scope of its type
        # parameters (they may name them); kept as source AST, so the regenerated ``def``
        # evaluates them there, at the same point
        scoped = bool(getattr(node, "type_params", None))
        if not future and not scoped:
            # ``*args: *Ts`` evaluates ``Ts`` and unpacks exactly one value from it
            items += [("*1", a.value) if isinstance(a, ast.Starred) else a
                      for a in annotation_nodes]
        values = self.sequence(items)
        decorators = values[:ndec]
        ndef = len(node.args.defaults)
        defaults = values[ndec:ndec + ndef]
        rest = iter(values[ndec + ndef:])
        kwdefaults: list[Operand | None] = [next(rest) if p else None for p in kw_present]
        annotations: list[tuple[str, Operand | ast.expr]]
        if future or scoped:
            annotations = [(n, copy.deepcopy(a))
                           for n, a in zip(annotation_names, annotation_nodes, strict=True)]
        else:
            annotations = list(zip(annotation_names, rest, strict=True))
        inner = _lower_function(node, self.child_qualname(node.name), self.ir.filename,
                                self.ir.future_flags, self.ir.module_imports)
        self.emit(FunctionDef(inner, decorators, defaults, kwdefaults, annotations,
                              Pos.of(node), [Pos.of(d) for d in node.decorator_list]))

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node: ast.ClassDef) -> None:
        # PEP 695: a generic class evaluates its bases and keywords in the scope of its
        # type parameters (they may name them): kept as source AST, evaluated there by the
        # regenerated ``class``
        type_params = copy.deepcopy(getattr(node, "type_params", None) or [])
        scoped_bases = [copy.deepcopy(b) for b in node.bases] if type_params else []
        scoped_keywords = [copy.deepcopy(k) for k in node.keywords] if type_params else []
        evaluated_bases = [] if type_params else node.bases
        evaluated_keywords = [] if type_params else node.keywords
        items: list[ast.expr | tuple[str, ast.expr]] = list(node.decorator_list)
        ndec = len(items)
        items += evaluated_bases
        items += [kw.value if kw.arg else ("**", kw.value) for kw in evaluated_keywords]
        values = self.sequence(items)
        decorators = values[:ndec]
        bases: list[Operand | Starred] = []
        for base, value in zip(evaluated_bases, values[ndec:ndec + len(evaluated_bases)],
                               strict=True):
            bases.append(Starred(value) if isinstance(base, ast.Starred) else value)
        keywords = [Keyword(kw.arg, value) for kw, value in
                    zip(evaluated_keywords, values[ndec + len(evaluated_bases):], strict=True)]
        body = FunctionIR(
            name=node.name, qualname=self.child_qualname(node.name), kind="class",
            args=Arguments(), body=[], filename=self.ir.filename, pos=Pos.of(node),
            future_flags=self.ir.future_flags, module_imports=self.ir.module_imports,
            type_params=type_params,
        )
        Lowerer(body).body(node.body, allow_docstring=True)
        self.emit(ClassDef(body, decorators, bases, keywords, Pos.of(node),
                           [Pos.of(d) for d in node.decorator_list],
                           scoped_bases, scoped_keywords))

    def stmt_TypeAlias(self, node: ast.stmt) -> None:
        # (``ast.TypeAlias`` exists from 3.12 only; no other version parses the statement)
        name: ast.Name = node.name  # type: ignore[attr-defined]
        self.emit(TypeAlias(Var(name.id, Pos.of(name)),
                            copy.deepcopy(node.type_params),  # type: ignore[attr-defined]
                            copy.deepcopy(node.value),  # type: ignore[attr-defined]
                            Pos.of(node)))

    def child_qualname(self, name: str) -> str:
        if self.ir.kind == "class":
            return f"{self.ir.qualname}.{name}"
        return f"{self.ir.qualname}.<locals>.{name}"

    # ------------------------------------------------------------------------------ stores

    def store(self, target: ast.expr, value: Operand, pos: Pos) -> None:
        """Bind ``value`` to an assignment target (evaluating the target's parts now)."""
        if isinstance(target, ast.Name):
            self.emit(Store(Var(target.id, Pos.of(target)), value, pos))
        elif isinstance(target, ast.Attribute):
            obj = self.expr(target.value)
            self.emit(Assign((), SetAttr(value, obj, target.attr, Pos.of(target)), pos))
        elif isinstance(target, ast.Subscript):
            obj, index = self.sequence([target.value, target.slice])
            self.emit(Assign((), SetItem(value, obj, index, Pos.of(target)), pos))
        elif isinstance(target, (ast.Tuple, ast.List)):
            stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
            n = len(target.elts)
            star = bool(stars)
            before = stars[0] if star else n
            after = n - before - 1 if star else 0
            results = tuple(self.ir.new_temp() for _ in target.elts)
            self.emit(Assign(results, Unpack(value, before, star, after, Pos.of(target)), pos))
            for elt, result in zip(target.elts, results, strict=True):
                inner = elt.value if isinstance(elt, ast.Starred) else elt
                self.store(inner, result, pos)
        elif isinstance(target, ast.Starred):
            self.store(target.value, value, pos)
        else:
            raise self.unsupported(target, f"assignment to {type(target).__name__}")

    # ------------------------------------------------------------------------- expressions

    def load(self, var: Var, node: ast.AST) -> Temp:
        return self.op(Load(var), node)

    def as_temp(self, operand: Operand, node: ast.AST) -> Operand:
        """An operand that can be read twice with the same result."""
        if isinstance(operand, Var):
            return self.load(operand, node)
        return operand

    def effect(self, node: ast.expr) -> None:
        """Evaluate ``node`` for its effects only."""
        result = self.expr(node)
        last = self.block[-1] if self.block else None
        if isinstance(last, Assign) and last.results == (result,):
            last.results = ()
        elif isinstance(result, Var):
            self.emit(Assign((), Load(result), Pos.of(node)))

    def sequence(self, items: Sequence[ast.expr | tuple[str, ast.expr]],
                 force: set[int] | frozenset[int] = frozenset()) -> list[Operand]:
        """Lower ``items`` left to right. Items are expressions, ``ast.Starred`` (iterated
        with ``Splat``), ``("**", expr)`` (read with ``DoubleSplat``) or ``("*1", expr)``
        (unpacked into exactly one value, as a starred ``*args`` annotation is). A name is
        captured when a later item runs code; indexes in ``force`` count as running code."""
        def runs_code(i: int, item: ast.expr | tuple[str, ast.expr]) -> bool:
            return i in force or isinstance(item, tuple) or not _trivial(item)

        last = max((i for i, item in enumerate(items) if runs_code(i, item)), default=-1)
        values: list[Operand] = []
        for i, item in enumerate(items):
            if isinstance(item, tuple) and item[0] == "*1":
                inner = self.expr(item[1])
                one = self.ir.new_temp()
                self.emit(Assign((one,), Unpack(inner, 1, False, 0, Pos.of(item[1])),
                                 Pos.of(item[1])))
                values.append(one)
            elif isinstance(item, tuple):
                inner = self.expr(item[1])
                values.append(self.op(DoubleSplat(inner), item[1]))
            elif isinstance(item, ast.Starred):
                inner = self.expr(item.value)
                values.append(self.op(Splat(inner), item))
            elif isinstance(item, ast.Name) and (i < last or i in force):
                values.append(self.load(Var(item.id, Pos.of(item)), item))
            else:
                values.append(self.expr(item))
        return values

    def sequence_opt(self, items: list[ast.expr | None]) -> list[Operand | None]:
        present = [i for i in items if i is not None]
        values = iter(self.sequence(present))
        return [None if i is None else next(values) for i in items]

    def expr(self, node: ast.expr, in_test: bool = False) -> Operand:
        """Lower ``node``, emitting the statements that compute it; return its operand.
        ``in_test``: the value is only used by a truth test."""
        constant = _constant_value(node)
        if constant is not _NOT_CONSTANT:
            return Const(constant, Pos.of(node))
        if isinstance(node, ast.Name):
            return Var(node.id, Pos.of(node))
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.unsupported(node, f"expression {type(node).__name__} is not supported")
        if type(node) in (ast.BoolOp, ast.UnaryOp, ast.IfExp, ast.Compare):
            result: Operand = method(node, in_test)
        else:
            result = method(node)
        return result

    def expr_Attribute(self, node: ast.Attribute) -> Operand:
        obj = self.expr(node.value)
        return self.op(GetAttr(obj, node.attr), node)

    def expr_Subscript(self, node: ast.Subscript) -> Operand:
        obj, index = self.sequence([node.value, node.slice])
        return self.op(GetItem(obj, index), node)

    def expr_Slice(self, node: ast.Slice) -> Operand:
        lower, upper, step = self.sequence_opt([node.lower, node.upper, node.step])
        return self.op(BuildSlice(lower, upper, step), node)

    def expr_Call(self, node: ast.Call) -> Operand:
        items: list[ast.expr | tuple[str, ast.expr]] = [node.func]
        lone = _lone_star(node)
        if lone is not None:
            # evaluated in place, iterated by the call itself after the keyword arguments:
            # ``Starred(x)`` with no ``Splat`` (see the module docstring)
            items.append(lone)
        else:
            items += node.args
        items += [kw.value if kw.arg else ("**", kw.value) for kw in node.keywords]
        values = self.sequence(items)
        func = values[0]
        args: list[Operand | Starred] = []
        for arg, value in zip(node.args, values[1:1 + len(node.args)], strict=True):
            args.append(Starred(value) if isinstance(arg, ast.Starred) else value)
        keywords = [Keyword(kw.arg, value) for kw, value in
                    zip(node.keywords, values[1 + len(node.args):], strict=True)]
        return self.op(Call(func, args, keywords), node)

    def expr_BinOp(self, node: ast.BinOp) -> Operand:
        left, right = self.sequence([node.left, node.right])
        return self.op(BinOp(BINARY_OPS[type(node.op)], left, right), node)

    def expr_UnaryOp(self, node: ast.UnaryOp, in_test: bool) -> Operand:
        is_not = isinstance(node.op, ast.Not)
        operand = self.expr(node.operand, in_test=in_test and is_not)
        return self.op(UnaryOp(UNARY_OPS[type(node.op)], operand), node)

    def expr_Compare(self, node: ast.Compare, in_test: bool) -> Operand:
        ops = [COMPARE_OPS[type(op)] for op in node.ops]
        if len(ops) == 1:
            left, right = self.sequence([node.left, node.comparators[0]])
            return self.op(Compare(ops[0], left, right), node)
        # a < b < c: (a < b) and (b < c), with b evaluated once (a temp shared by two links)
        left, middle = self.sequence([node.left, node.comparators[0]], force={1})
        first = self.op(Compare(ops[0], left, middle), node)
        rest = []
        previous = middle
        for i in range(1, len(ops)):
            comparator = node.comparators[i]
            body: list[Stmt] = []
            with self.into(body):
                value = self.expr(comparator)
                if i < len(ops) - 1:
                    value = self.as_temp(value, comparator)
                link = self.op(Compare(ops[i], previous, value), node)
            rest.append(Region(body, link))
            previous = value
        return self.op(BoolOp("and", first, rest, in_test, chain=True), node)

    def expr_BoolOp(self, node: ast.BoolOp, in_test: bool) -> Operand:
        threaded = False
        if not in_test and JUMP_THREADING:
            # the line of the and/or testing this one's value next (if one does)
            tester = self.testers.pop(id(node), None)
            threaded = tester == node.lineno
            last = len(node.values) - 1
            for i, value in enumerate(node.values):
                line = node.lineno if i < last else tester  # the last: tested with ours
                if isinstance(value, ast.BoolOp) and line is not None:
                    self.testers[id(value)] = line
        first = self.expr(node.values[0], in_test)
        rest = [self.region(value, in_test) for value in node.values[1:]]
        kind = "and" if isinstance(node.op, ast.And) else "or"
        return self.op(BoolOp(kind, first, rest, in_test, threaded=threaded), node)

    def expr_IfExp(self, node: ast.IfExp, in_test: bool) -> Operand:
        test = self.expr(node.test, in_test=True)
        body = self.region(node.body, in_test)
        orelse = self.region(node.orelse, in_test)
        return self.op(IfExp(test, body, orelse), node)

    def expr_NamedExpr(self, node: ast.NamedExpr) -> Operand:
        value = self.expr(node.value)
        target = node.target
        assert isinstance(target, ast.Name)
        return self.op(Walrus(Var(target.id, Pos.of(target)), value), node)

    def expr_Tuple(self, node: ast.Tuple) -> Operand:
        return self.op(BuildTuple(self.items(node.elts)), node)

    def expr_List(self, node: ast.List) -> Operand:
        return self.op(BuildList(self.items(node.elts)), node)

    def expr_Set(self, node: ast.Set) -> Operand:
        return self.op(BuildSet(self.items(node.elts)), node)

    def items(self, elts: list[ast.expr]) -> list[Operand | Starred]:
        values = self.sequence(elts)
        return [Starred(v) if isinstance(e, ast.Starred) else v
                for e, v in zip(elts, values, strict=True)]

    def expr_Dict(self, node: ast.Dict) -> Operand:
        items: list[ast.expr | tuple[str, ast.expr]] = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                items.append(("**", value))
            else:
                items += [key, value]
        values = iter(self.sequence(items))
        pairs: list[tuple[Operand | None, Operand]] = []
        for key in node.keys:
            pairs.append((None, next(values)) if key is None else (next(values), next(values)))
        return self.op(BuildDict(pairs), node)

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Operand:
        parts: list[Operand] = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                parts.append(self.formatted(value))
            else:
                assert isinstance(value, ast.Constant)
                parts.append(Const(value.value, Pos.of(value)))
        if all(isinstance(p, Const) for p in parts):
            # a lone constant is loaded where it is (from 3.12, PEP 701, its span is its
            # own, inside the f-string's or the format spec's)
            pos = parts[0].pos if len(parts) == 1 else Pos.of(node)  # type: ignore[union-attr]
            return Const("".join(p.value for p in parts), pos)  # type: ignore[union-attr]
        return self.op(JoinStr(parts), node)

    def formatted(self, node: ast.FormattedValue) -> Operand:
        spec_node = node.format_spec
        if spec_node is None:
            value = self.expr(node.value)
            spec = None
        else:
            assert isinstance(spec_node, ast.JoinedStr)
            runs = not all(isinstance(v, ast.Constant) for v in spec_node.values)
            value, spec = self.sequence([node.value, spec_node], force={1} if runs else set())
        return self.op(Format(value, node.conversion, spec), node)

    def expr_Await(self, node: ast.Await) -> Operand:
        return self.op(Await(self.expr(node.value)), node)

    def expr_Yield(self, node: ast.Yield) -> Operand:
        value = None if node.value is None else self.expr(node.value)
        return self.op(Yield(value), node)

    def expr_YieldFrom(self, node: ast.YieldFrom) -> Operand:
        return self.op(YieldFrom(self.expr(node.value)), node)

    def expr_Lambda(self, node: ast.Lambda) -> Operand:
        items: list[ast.expr] = list(node.args.defaults)
        kw_present = [d is not None for d in node.args.kw_defaults]
        items += [d for d in node.args.kw_defaults if d is not None]
        values = self.sequence(items)
        ndef = len(node.args.defaults)
        rest = iter(values[ndef:])
        kwdefaults: list[Operand | None] = [next(rest) if p else None for p in kw_present]
        inner = _lower_function(node, self.child_qualname("<lambda>"), self.ir.filename,
                                self.ir.future_flags, self.ir.module_imports)
        return self.op(MakeLambda(inner, values[:ndef], kwdefaults), node)

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp
                      | ast.GeneratorExp) -> Operand:
        kind, name = COMPREHENSION_NAMES[type(node)]
        generators = node.generators
        iterable = self.expr(generators[0].iter)
        iterator = self.op(Iter(iterable, bool(generators[0].is_async)), generators[0].iter)
        fn = FunctionIR(
            name=name, qualname=self.child_qualname(name), kind="comprehension",
            args=Arguments(args=[".0"]), body=[], filename=self.ir.filename,
            pos=Pos.of(node), future_flags=self.ir.future_flags,
            module_imports=self.ir.module_imports,
        )
        inner = Lowerer(fn)
        inner.comprehension_loop(node, generators, 0)
        return self.op(MakeComprehension(kind, fn, iterator), node)

    expr_ListComp = expr_SetComp = expr_DictComp = expr_GeneratorExp = comprehension

    def comprehension_loop(self, node: ast.ListComp | ast.SetComp | ast.DictComp
                           | ast.GeneratorExp, generators: list[ast.comprehension],
                           index: int) -> None:
        generator = generators[index]
        if index == 0:
            iterator: Operand = Var(".0", Pos.of(generator.iter))
        else:
            iterable = self.expr(generator.iter)
            iterator = self.op(Iter(iterable, bool(generator.is_async)), generator.iter)
        target = self.ir.new_temp()
        body: list[Stmt] = []
        self.emit(For(iterator, target, body, [], bool(generator.is_async), Pos.of(node)))
        with self.into(body):
            self.store(generator.target, target, Pos.of(generator.target))
            for condition in generator.ifs:
                test = self.expr(condition, in_test=True)
                inner: list[Stmt] = []
                self.emit(If(test, inner, [], Pos.of(condition)))
                self.block = inner
            if index + 1 < len(generators):
                self.comprehension_loop(node, generators, index + 1)
            elif isinstance(node, ast.DictComp):
                key, value = self.sequence([node.key, node.value])
                self.emit(Assign((), ComprehensionAppend([key, value]), Pos.of(node.value)))
            elif isinstance(node, ast.GeneratorExp):
                value = self.expr(node.elt)
                self.emit(Assign((), Yield(value), Pos.of(node.elt)))
            else:
                value = self.expr(node.elt)
                self.emit(Assign((), ComprehensionAppend([value]), Pos.of(node.elt)))


def _lone_star(node: ast.Call) -> ast.expr | None:
    """``x`` of ``f(*x, ...)`` (one positional argument, starred), else None. CPython (3.11
    to 3.13 alike, ``compiler_call_helper``: ``n == 0 && nelts == 1 && Starred``) pushes ``x`` and
    ``CALL_FUNCTION_EX`` turns it into a tuple at the call, after the keyword arguments and
    ``**`` mappings are evaluated; any other ``*`` argument is iterated in place
    (``BUILD_LIST``/``LIST_EXTEND``), and so is every ``*`` base of a class statement (the
    class call has two arguments pushed before them)."""
    if len(node.args) == 1 and isinstance(node.args[0], ast.Starred):
        return node.args[0].value
    return None


def _simple_target(target: ast.expr) -> bool:
    """Storing to ``target`` evaluates nothing before the store itself."""
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, ast.Attribute):
        return _trivial(target.value)
    if isinstance(target, ast.Subscript):
        return _trivial(target.value) and _trivial(target.slice)
    return isinstance(target, (ast.Tuple, ast.List, ast.Starred))


def _annotations(args: ast.arguments, returns: ast.expr | None
                 ) -> Iterator[tuple[str, ast.expr]]:
    """Annotations in the order CPython 3.11 evaluates them."""
    for arg in [*args.args, *args.posonlyargs]:
        if arg.annotation is not None:
            yield arg.arg, arg.annotation
    if args.vararg is not None and args.vararg.annotation is not None:
        yield args.vararg.arg, args.vararg.annotation
    for arg in args.kwonlyargs:
        if arg.annotation is not None:
            yield arg.arg, arg.annotation
    if args.kwarg is not None and args.kwarg.annotation is not None:
        yield args.kwarg.arg, args.kwarg.annotation
    if returns is not None:
        yield "return", returns
