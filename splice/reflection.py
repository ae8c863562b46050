"""Reflection: look at a function at each stage of the pipeline."""

from __future__ import annotations

import types
from typing import Any

from splice.ir import generate, lower
from splice.ir.functions import function_of
from splice.ir.nodes import Assign, BinOp, Call, Compare, Const, FunctionIR, InPlace, Stmt, UnaryOp
from splice.ir.printer import Listing, Printer, operand_text
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


def code_lowered(fn: object, *, plugin: Any = None) -> Listing:
    """The lowered IR of ``fn`` (with ``plugin``: after its ``lowered`` hooks); ``str()``
    gives the listing, Jupyter renders it."""
    if plugin is None:
        return Listing(lower(fn))
    return code_stage(fn, "lowered", plugin=plugin)


def code_stage(fn: object, stage: str, *, plugin: Any = None) -> Listing:
    """``fn``'s IR after the pipeline stage ``stage`` as a context of ``plugin`` (None: an
    identity plugin) compiles it: ``lower``, ``lowered`` (after the plugins' hooks),
    ``route`` (calls through the context's dispatch table) or ``finish``. The typed stages
    need argument types: ``code_typed`` shows them."""
    from splice.compiler.pipeline import ir_after
    from splice.plugin import Plugin

    owner = (plugin if plugin is not None else Plugin()).context
    return Listing(ir_after(owner, function_of(fn), stage))


def code_python(fn: object, *argtypes: Any, plugin: Any = None, renest: bool = True) -> str:
    """The Python source splice regenerates for ``fn``; with argument types or a plugin,
    the source generated for that code instance (after its typed and optimisation stages,
    see ``splice.compile``)."""
    if argtypes or plugin is not None:
        from splice.plugin import compile

        return str(compile(plugin, fn, *argtypes).source)
    return generate(lower(fn), renest=renest)


def _operand(operand: object) -> str:
    """An operand, with known functions, classes and modules shown by name."""
    if isinstance(operand, Const):
        value = operand.value
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
            return str(getattr(value, "__qualname__", value))
        if isinstance(value, types.ModuleType):
            return value.__name__
    return operand_text(operand)


class _TypedPrinter(Printer):
    """The IR printer, with operators as calls of their ``operator`` names
    (``%3 = add(%1, %2)::float``) and constant callees by name."""

    def stmt(self, stmt: Stmt, depth: int) -> None:
        if isinstance(stmt, Assign) and len(stmt.results) == 1:
            op = stmt.op
            text = None
            if isinstance(op, (BinOp, Compare, UnaryOp)):
                text = f"{op.op}({', '.join(_operand(o) for o in op.operands())})"
            elif isinstance(op, InPlace):
                text = f"i{op.op}({', '.join(_operand(o) for o in op.operands())})"
            elif isinstance(op, Call) and isinstance(op.func, Const):
                args = [_operand(a) for a in op.args]
                args += [operand_text(k) for k in op.keywords]
                text = f"call {_operand(op.func)}({', '.join(args)})"
            if text is not None:
                annotation = stmt.results[0].annotation
                suffix = f"::{annotation}" if annotation is not None else ""
                self.add(stmt.pos.lineno, depth, f"{stmt.results[0]!r} = {text}{suffix}")
                return
        super().stmt(stmt, depth)


def format_typed(ir: FunctionIR) -> str:
    """The listing of typed IR (see ``code_typed``)."""
    printer = _TypedPrinter()
    printer.function(ir)
    return printer.render()


class TypedListing(Listing):
    """What ``splice.code_typed`` returns: the typed IR listing (every value shown with its
    abstract value, ``%3 = add(%1, %2)::float``) and the inferred return type."""

    def __init__(self, instance: Any, stage: str = "typed") -> None:
        super().__init__(getattr(instance, stage))
        self.instance = instance
        self.stage = stage

    @property
    def return_type(self) -> Any:
        return self.instance.return_type

    def __str__(self) -> str:
        spec = self.instance.specialization
        header = f"# {self.stage} IR of {spec}"
        return f"{header}\n{format_typed(self.ir)}\n=> {self.instance.return_type}"


def code_typed(fn: object, *argtypes: Any, plugin: Any = None, optimize: bool = False
               ) -> TypedListing:
    """The typed IR of ``fn`` for arguments of types ``argtypes`` (classes, typing forms or
    abstract values) under ``plugin`` (after its ``typed`` hook; ``optimize=True``: after
    the optimisation stage and the ``optimized`` hook), like Julia's ``@code_typed``."""
    from splice.plugin import compile

    instance = compile(plugin, fn, *argtypes)
    return TypedListing(instance, "optimized" if optimize else "typed")
