"""The entry points of ``splice.ir`` (``splice.ir.lower``, ``generate``, ``compile_ir``,
``roundtrip``), defined here so that the package itself loads none of the compiler until one
is first used (``splice.lazy``)."""

from __future__ import annotations

import ast
import types

from splice.ir.assemble import assemble
from splice.ir.codegen import GenContext, fix_locations, generate_function
from splice.ir.functions import function_of
from splice.ir.lowering import lower_source
from splice.ir.nodes import FunctionIR
from splice.ir.source import find_source
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["compile_ir", "generate", "lower", "roundtrip"]


def lower(fn: object) -> FunctionIR:
    """Lower a Python function (or bound method) to IR. Raises ``UnsupportedError`` for
    functions without source and constructs splice does not handle."""
    function = function_of(fn)
    source = find_source(function)
    ir = lower_source(source, function.__qualname__)
    ir.origin = source
    ir.function = function
    return ir


def generate(ir: FunctionIR, *, renest: bool = True) -> str:
    """The Python source splice generates for ``ir`` (a comprehension whose body a pass
    made statements, as routing does, is shown as the nested function compiled for it)."""
    node = generate_function(ir, GenContext(renest=renest, comprehension_functions=True),
                             display=True)
    fix_locations(node, ir.pos)
    return ast.unparse(node)


def compile_ir(ir: FunctionIR, original: object, *, renest: bool = True
               ) -> types.FunctionType:
    """Compile ``ir`` (lowered from ``original``) into a new function object sharing the
    original's globals and closure cells."""
    return assemble(ir, function_of(original), renest=renest)


def roundtrip(fn: object, *, renest: bool = True) -> types.FunctionType:
    """Lower ``fn`` and generate it back: a new function that behaves exactly like ``fn``.
    ``renest=False`` keeps every temporary as a hidden local (tests lowering alone)."""
    function = function_of(fn)
    return assemble(lower(function), function, renest=renest)
