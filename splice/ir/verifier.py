"""The IR verifier: checks the invariants every stage relies on."""

from __future__ import annotations

from splice.errors import SpliceError
from splice.ir.nodes import (
    NOPOS,
    Assign,
    BoolOp,
    Const,
    For,
    FunctionIR,
    Op,
    Region,
    Stmt,
    Temp,
    Try,
    Unpack,
    Var,
    With,
    walk_block,
)
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

NO_RESULT_OPS = ("SetAttr", "SetItem", "DelAttr", "DelItem", "ComprehensionAppend")


class VerifyError(SpliceError):
    """The IR breaks an invariant (a bug in a pass or in a plugin's rewrite)."""


def verify(ir: FunctionIR) -> None:
    """Check ``ir`` (and nested scopes): every temp is defined before it is used, on every
    path that reaches the use; every statement has a position; operands are simple; results
    fit their ops. Raises :class:`VerifyError` naming the statement."""
    _Verifier(ir).block(ir.body, set())
    for stmt in walk_block(ir.body):
        for nested in _nested_scopes(stmt):
            verify(nested)


def _nested_scopes(stmt: Stmt) -> list[FunctionIR]:
    found: list[FunctionIR] = []
    fn = getattr(stmt, "fn", None)
    if isinstance(fn, FunctionIR):
        found.append(fn)
    if isinstance(stmt, Assign):
        inner = getattr(stmt.op, "fn", None)
        if isinstance(inner, FunctionIR):
            found.append(inner)
    return found


class _Verifier:
    def __init__(self, ir: FunctionIR) -> None:
        self.ir = ir
        self.seen: set[int] = set()

    def error(self, stmt: Stmt | None, message: str) -> VerifyError:
        where = f" at line {stmt.pos.lineno}" if stmt is not None else ""
        return VerifyError(f"{self.ir.qualname}{where}: {message}")

    def block(self, stmts: list[Stmt], defined: set[Temp]) -> set[Temp]:
        """Check a block; return the temps defined after it (when it falls through)."""
        defined = set(defined)
        for stmt in stmts:
            self.stmt(stmt, defined)
        return defined

    def use(self, stmt: Stmt, operand: object, defined: set[Temp]) -> None:
        if isinstance(operand, Temp):
            if operand not in defined:
                raise self.error(stmt, f"{operand!r} is used before it is defined")
        elif not isinstance(operand, (Var, Const)):
            raise self.error(stmt, f"operand {operand!r} is not a Temp, Var or Const")

    def region(self, stmt: Stmt, region: Region, defined: set[Temp]) -> set[Temp]:
        inner = self.block(region.body, defined)
        self.use(stmt, region.value, inner)
        return inner

    def stmt(self, stmt: Stmt, defined: set[Temp]) -> None:
        if stmt.id in self.seen:
            raise self.error(stmt, "the same statement object appears twice")
        self.seen.add(stmt.id)
        if stmt.pos == NOPOS:
            raise self.error(stmt, f"{type(stmt).__name__} has no source position")
        for operand in stmt.operands():
            self.use(stmt, operand, defined)
        if isinstance(stmt, Assign):
            self.assign(stmt, defined)
        else:
            for region in stmt.regions():
                self.region(stmt, region, defined)
        if isinstance(stmt, For):
            if not isinstance(stmt.target, Temp):
                raise self.error(stmt, "a for loop's target must be a Temp")
            self.block(stmt.body, defined | {stmt.target})
            self.block(stmt.orelse, defined)
            return
        if isinstance(stmt, With):
            inner = defined | ({stmt.target} if stmt.target is not None else set())
            self.block(stmt.body, inner)
            return
        if isinstance(stmt, Try):
            body = self.block(stmt.body, defined)
            for handler in stmt.handlers:
                self.block(handler.body, defined)
            orelse = self.block(stmt.orelse, body)
            final = self.block(stmt.finalbody, defined)
            if not stmt.handlers:
                # a ``try`` without handlers falls through only once its body (and else)
                # ran to the end: what they and the ``finally`` define is defined after it
                # (a plugin may wrap a statement so: the Tracer wraps each ``yield``)
                defined |= orelse | final
            return
        for inner_block in stmt.blocks():
            self.block(inner_block, defined)

    def assign(self, stmt: Assign, defined: set[Temp]) -> None:
        op = stmt.op
        if not isinstance(op, Op):
            raise self.error(stmt, f"{op!r} is not an op")
        if isinstance(op, BoolOp):
            if op.threaded and (op.in_test or op.chain):
                raise self.error(stmt, "a threaded boolop is neither in_test nor a chain")
            # later regions run only after earlier ones: their definitions stay visible
            current = set(defined)
            for region in op.rest:
                current = self.region(stmt, region, current)
        else:
            for region in op.regions():
                self.region(stmt, region, defined)
        name = type(op).__name__
        if isinstance(op, Unpack):
            expected = op.before + op.after + int(op.star)
            if len(stmt.results) != expected:
                raise self.error(stmt, f"unpack into {expected} values has "
                                 f"{len(stmt.results)} results")
        elif name in NO_RESULT_OPS and stmt.results:
            raise self.error(stmt, f"{name} has no result")
        elif len(stmt.results) > 1:
            raise self.error(stmt, f"{name} has one result, not {len(stmt.results)}")
        for result in stmt.results:
            if not isinstance(result, Temp):
                raise self.error(stmt, f"result {result!r} is not a Temp")
            defined.add(result)
