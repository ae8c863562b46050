"""Assembly: generated syntax -> code object -> function object.

The generated ``def`` (or ``lambda``) is compiled inside a scaffold that reproduces what the
compiler needs to see around it: a function scope binding the original's free variables (so
they stay free variables) and the hidden cells, and the nearest enclosing class (for private
name mangling and ``__class__``). The scaffold never runs; the function's code object is taken
out of its constants and given the original's closure cells, globals and attributes.
"""

from __future__ import annotations

import ast
import functools
import sys
import types
from typing import Any

from splice.compat import NO_TYPE_PARAMS, ast_conversion
from splice.errors import UnsupportedError
from splice.ir.codegen import GenContext, fix_locations, generate_function
from splice.ir.compiled import CompiledCode, Released, instantiate
from splice.ir.functions import describe
from splice.ir.hidden import substitute, to_constants
from splice.ir.nodes import FunctionIR
from splice.ir.release import release_temps
from splice.ir.source import FunctionSource
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

SCAFFOLD = "__splice_scope__"
RUNTIME_FLAGS = 0x100  # CO_ITERABLE_COROUTINE
CO_NESTED = 0x10
CO_OPTIMIZED = 0x1


def scaffold(ir: FunctionIR, source: FunctionSource, node: ast.stmt | ast.expr,
             cell_names: list[str]) -> ast.Module:
    """The module that compiles ``node`` with the same scoping as the original."""
    stmt: ast.stmt = node if isinstance(node, ast.stmt) else ast.Expr(node)
    body: list[ast.stmt] = [stmt]
    cls = next((s for s in reversed(source.enclosing) if isinstance(s, ast.ClassDef)), None)
    if cls is not None:
        body = [ast.ClassDef(cls.name, [], [], body, [], **NO_TYPE_PARAMS)]
    if cell_names:
        # the scaffold's class statement binds the class name: keep it global unless the
        # original really closes over a variable of that name
        binds: list[ast.stmt] = []
        bound = [cls.name] if cls is not None else []
        if cls is None and isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            bound.append(stmt.name)
        bound = [name for name in bound if name not in cell_names]
        if bound:
            binds.append(ast.Global(bound))
        binds += [
            ast.Assign([ast.Name(name, ast.Store())], ast.Constant(None))
            for name in cell_names if name != "__class__" or cls is None
        ]
        args = ast.arguments([], [], None, [], [], None, [])
        body = [ast.FunctionDef(SCAFFOLD, args, [*binds, *body], [], None, None,
                                **NO_TYPE_PARAMS)]
    if source.module_imports:
        # declare the module's imports: CPython compiles ``mod.f()`` with LOAD_ATTR instead
        # of LOAD_METHOD when ``mod`` was imported at module level (``is_import_originated``)
        names = [ast.alias(name, None) for name in sorted(source.module_imports)]
        body.insert(0, ast.Import(names))
    module = ast.Module(body, [])
    fix_locations(module, ir.pos)
    return module


#: the filter that silences the compiler's warnings about placeholders
_QUIET = ("ignore", None, SyntaxWarning, None, 0)


def _compile_quietly(module: ast.Module, filename: str, flags: int) -> types.CodeType:
    """``compile`` without the SyntaxWarnings that calling or comparing a placeholder string
    raises ("'str' object is not callable"). ``warnings.catch_warnings`` would reset every
    warning registry of the program (it marks the filters as changed), so one filter goes
    first in the live list (the one of ``sys.modules['warnings']``, which the compiler reads)
    only while compiling, and nothing is marked changed."""
    filters = getattr(sys.modules.get("warnings"), "filters", None)
    code: types.CodeType
    if not isinstance(filters, list):
        with ast_conversion():
            code = compile(module, filename, "exec", flags=flags, dont_inherit=True)
        return code
    entry = _QUIET
    filters.insert(0, entry)
    try:
        with ast_conversion():
            code = compile(module, filename, "exec", flags=flags, dont_inherit=True)
        return code
    finally:
        for index, item in enumerate(filters):
            if item is entry:
                del filters[index]
                break


def find_code(module_code: types.CodeType, name: str, scaffolded: bool, in_class: bool
              ) -> types.CodeType | None:
    """The generated function's code object, found by the scaffold's structure (a search by
    name alone would find a class body named like the method)."""
    code = module_code
    levels = [SCAFFOLD] if scaffolded else []
    if in_class:
        levels.append("")  # the class body: the only code object at that level
    for level in levels:
        inner = [c for c in code.co_consts if isinstance(c, types.CodeType)]
        chosen = [c for c in inner if not level or c.co_name == level]
        if len(chosen) != 1:
            return None
        code = chosen[0]
    found = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name]
    return found[0] if len(found) == 1 else None


def rename_comprehensions(code: types.CodeType, names: dict[str, str]) -> types.CodeType:
    """``code`` with nested functions that stand for comprehensions given their names
    back (``%12`` -> ``<listcomp>``, in ``co_name`` and ``co_qualname``)."""
    if not names:
        return code
    consts = tuple(rename_comprehensions(c, names) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    name = names.get(code.co_name)
    if name is None:
        return code.replace(co_consts=consts)
    prefix, _, _ = code.co_qualname.rpartition(".")
    qualname = f"{prefix}.{name}" if prefix else name
    return code.replace(co_consts=consts, co_name=name, co_qualname=qualname)


def requalify(code: types.CodeType, old: str, new: str) -> types.CodeType:
    """Rename ``code``'s qualified name prefix ``old`` to ``new``, nested code included."""
    qualname = code.co_qualname
    if qualname == old:
        qualname = new
    elif qualname.startswith(old + "."):
        qualname = new + qualname[len(old):]
    class_body = not code.co_flags & CO_OPTIMIZED
    consts = tuple(requalify(c, old, new) if isinstance(c, types.CodeType)
                   # a class body stores its ``__qualname__`` from a constant
                   else qualname if class_body and type(c) is str and c == code.co_qualname
                   else c
                   for c in code.co_consts)
    return code.replace(co_consts=consts, co_qualname=qualname)


def _runs_program_code(cells: dict[str, Any], hidden: str) -> bool:
    """Whether the hidden name ``hidden`` is bound to a Python function that is not
    splice's own (a typed callee's instance, called directly)."""
    value = cells.get(hidden)
    return type(value) is types.FunctionType and \
        not (getattr(value, "__module__", None) or "").startswith("splice.")


def compile_code(ir: FunctionIR, original: types.FunctionType, *, renest: bool = True,
                 comprehension_functions: bool = False) -> CompiledCode:
    """Compile ``ir`` (lowered from ``original``) into a code object with ``original``'s
    names, flags and free variables (plus hidden cells for inserted objects).
    ``comprehension_functions``: a comprehension whose body a pass made statements is
    generated as a nested function (see ``ScopeGen.comprehension_call``)."""
    source: FunctionSource = ir.origin
    ctx = GenContext(renest=renest, comprehension_functions=comprehension_functions)
    node = generate_function(ir, ctx)
    release_temps(node, ctx.cell(BaseException, "BaseException"), ctx.cell(Released, "Released"),
                  functools.partial(_runs_program_code, ctx.cells))
    code = original.__code__
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        node.lineno = code.co_firstlineno  # the compiler derives co_firstlineno from it
    placeholders, kept = to_constants(node, ctx.cells)
    hidden = {name: value for name, value in ctx.cells.items() if name in kept}
    cell_names = list(code.co_freevars) + [n for n in hidden if n not in code.co_freevars]
    module = scaffold(ir, source, node, cell_names)
    try:
        module_code = _compile_quietly(module, source.filename, source.future_flags)
    except SyntaxError as exc:
        raise UnsupportedError(describe(original), f"the regenerated code does not compile: "
                               f"{exc.msg}", f"{source.filename}:{exc.lineno}") from None
    in_class = any(isinstance(s, ast.ClassDef) for s in source.enclosing)
    new_code = find_code(module_code, code.co_name, bool(cell_names), in_class)
    if new_code is None:  # pragma: no cover - the scaffold always contains it
        raise UnsupportedError(describe(original), "the regenerated code object is missing")
    new_code = requalify(new_code, new_code.co_qualname, code.co_qualname)
    # flags set on the code object at run time, not by the compiler (``types.coroutine``)
    flags = new_code.co_flags | (code.co_flags & RUNTIME_FLAGS)
    # CO_NESTED says where the def was; the scaffold's function must not change it
    flags = (flags & ~CO_NESTED) | (code.co_flags & CO_NESTED)
    new_code = substitute(new_code.replace(co_flags=flags), placeholders)
    new_code = rename_comprehensions(new_code, ctx.comprehension_names)
    for name in new_code.co_freevars:
        if name not in code.co_freevars and name not in hidden:
            raise UnsupportedError(describe(original),
                                   f"the regenerated code needs a free variable {name!r} "
                                   "the original does not have")
    return CompiledCode.of(new_code, hidden, code.co_freevars)


def assemble(ir: FunctionIR, original: types.FunctionType, *, renest: bool = True
             ) -> types.FunctionType:
    """Compile ``ir`` (lowered from ``original``) into a new function object that shares the
    original's globals and closure cells and copies its other attributes."""
    return instantiate(compile_code(ir, original, renest=renest), original)


def restore_nested_code(new: types.CodeType, original: types.CodeType) -> types.CodeType:
    """``new`` with the code objects of nested functions and lambdas replaced by the
    original's own (matched in order among those with the same name, qualified name and
    first line, and checked to have the same parameters and free variables); comprehension
    and class-body code, which run under the context, recurse."""
    originals: dict[tuple[str, str, int], list[types.CodeType]] = {}
    for const in original.co_consts:
        if isinstance(const, types.CodeType):
            originals.setdefault(_key(const), []).append(const)
    seen: dict[tuple[str, str, int], int] = {}
    consts = []
    changed = False
    for const in new.co_consts:
        if isinstance(const, types.CodeType):
            key = _key(const)
            index = seen.get(key, 0)
            seen[key] = index + 1
            group = originals.get(key, [])
            match = group[index] if index < len(group) else None
            replacement = const
            if match is not None and _runs_inline(const):
                replacement = restore_nested_code(const, match)
            elif match is not None and _same_interface(const, match):
                replacement = match
            if replacement is not const:
                changed = True
                const = replacement
        consts.append(const)
    return new.replace(co_consts=tuple(consts)) if changed else new


def _same_interface(a: types.CodeType, b: types.CodeType) -> bool:
    return (a.co_freevars == b.co_freevars and a.co_argcount == b.co_argcount
            and a.co_kwonlyargcount == b.co_kwonlyargcount
            and a.co_varnames[:a.co_argcount + a.co_kwonlyargcount]
            == b.co_varnames[:b.co_argcount + b.co_kwonlyargcount])


_INLINE_NAMES = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
_CO_OPTIMIZED = 0x1


def _runs_inline(code: types.CodeType) -> bool:
    # comprehensions, and class bodies (the only scopes without CO_OPTIMIZED)
    return code.co_name in _INLINE_NAMES or not code.co_flags & _CO_OPTIMIZED


def _key(code: types.CodeType) -> tuple[str, str, int]:
    return (code.co_name, code.co_qualname, code.co_firstlineno)
