"""Find the source AST of a function object.

Source comes from ``linecache`` (so functions from IPython cells and other registered
sources work), the whole file is parsed once and indexed, and the node is matched to the
code object by name, first line and parameter names.
"""

from __future__ import annotations
import __future__

import ast
import linecache
import types
from dataclasses import dataclass

from splice.errors import UnsupportedError
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
ScopeNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef

FUTURE_FLAGS_MASK = 0
for _name in __future__.all_feature_names:
    FUTURE_FLAGS_MASK |= getattr(__future__, _name).compiler_flag


@dataclass(frozen=True, slots=True)
class FunctionSource:
    """Where a function's source is and what surrounds it."""

    node: FunctionNode
    #: enclosing scopes, outermost first (classes matter for name mangling)
    enclosing: tuple[ScopeNode, ...]
    filename: str
    future_flags: int
    #: names the module binds by import at top level (the compiler treats attribute calls on
    #: them differently, so the scaffold must declare them too)
    module_imports: frozenset[str] = frozenset()


@dataclass(slots=True)
class _ParsedFile:
    text: str
    by_line: dict[tuple[str, int], list[tuple[FunctionNode, tuple[ScopeNode, ...]]]]
    imports: frozenset[str]


_parsed: dict[str, _ParsedFile] = {}


def describe(fn: object) -> str:
    """A human name for a function-like object, for error messages."""
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    module = getattr(fn, "__module__", None)
    if qualname:
        return f"{module}.{qualname}" if module else str(qualname)
    return repr(fn)


def function_of(fn: object) -> types.FunctionType:
    """The plain Python function behind ``fn`` (bound methods are unwrapped)."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        kind = type(fn).__name__
        raise UnsupportedError(
            describe(fn), f"not a Python function (a {kind}); only functions defined in "
            "Python source can be transformed"
        )
    return fn


def find_source(fn: types.FunctionType) -> FunctionSource:
    """Locate ``fn``'s definition in its source file, or raise ``UnsupportedError``."""
    code = fn.__code__
    filename = code.co_filename
    where = f"{filename}:{code.co_firstlineno}"
    parsed = _parse(filename, fn.__globals__, fn)
    name = "<lambda>" if code.co_name == "<lambda>" else code.co_name
    candidates = parsed.by_line.get((name, code.co_firstlineno), [])
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    params = code.co_varnames[:nargs]
    candidates = [c for c in candidates if tuple(_code_order(c[0].args)) == params]
    if not candidates:
        raise UnsupportedError(
            describe(fn),
            "its definition was not found in the source (the file may have changed since it "
            "was imported; reload the module)",
            where,
        )
    if len(candidates) > 1:
        candidates.sort(key=lambda c: -_overlap(code, c[0]))
    node, enclosing = candidates[0]
    return FunctionSource(node, enclosing, filename, code.co_flags & FUTURE_FLAGS_MASK,
                          parsed.imports)


def _parse(filename: str, module_globals: dict[str, object], fn: object) -> _ParsedFile:
    lines = linecache.getlines(filename, module_globals)
    if not lines and filename.startswith("<frozen "):
        # frozen stdlib modules keep their source file beside the frozen code
        path = module_globals.get("__file__")
        if isinstance(path, str):
            lines = linecache.getlines(path)
    if not lines:
        raise UnsupportedError(
            describe(fn),
            "its source is not available (defined by exec/eval without a linecache entry, "
            "or the file is missing)",
            filename,
        )
    text = "".join(lines)
    cached = _parsed.get(filename)
    if cached is not None and cached.text == text:
        return cached
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as exc:
        raise UnsupportedError(describe(fn), f"its source file does not parse: {exc}",
                               filename) from None
    by_line: dict[tuple[str, int], list[tuple[FunctionNode, tuple[ScopeNode, ...]]]] = {}
    _index(tree, (), by_line)
    result = _ParsedFile(text, by_line, frozenset(_top_level_imports(tree)))
    _parsed[filename] = result
    return result


def _index(node: ast.AST, enclosing: tuple[ScopeNode, ...],
           by_line: dict[tuple[str, int], list[tuple[FunctionNode, tuple[ScopeNode, ...]]]]
           ) -> None:
    for child in ast.iter_child_nodes(node):
        inner = enclosing
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = child.decorator_list[0].lineno if child.decorator_list else child.lineno
            by_line.setdefault((child.name, first), []).append((child, enclosing))
            inner = (*enclosing, child)
        elif isinstance(child, ast.Lambda):
            by_line.setdefault(("<lambda>", child.lineno), []).append((child, enclosing))
            inner = (*enclosing, child)
        elif isinstance(child, ast.ClassDef):
            inner = (*enclosing, child)
        _index(child, inner, by_line)


def _top_level_imports(node: ast.AST) -> list[str]:
    """Names bound by ``import`` statements in the module scope (not inside functions or
    classes, but inside module-level ``if``/``try``/``with`` blocks)."""
    names: list[str] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            names += [a.asname or a.name.split(".")[0] for a in child.names]
        elif isinstance(child, ast.ImportFrom):
            names += [a.asname or a.name for a in child.names if a.name != "*"]
        elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)) and not \
                isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names += _top_level_imports(child)
    return names


def _code_order(args: ast.arguments) -> list[str]:
    # co_varnames order: positional, keyword-only, then *args, then **kwargs
    names = [a.arg for a in args.posonlyargs] + [a.arg for a in args.args]
    names += [a.arg for a in args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def _overlap(code: types.CodeType, node: ast.AST) -> int:
    """How many instruction positions of ``code`` fall inside ``node``'s span."""
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", None) or start[0],
           getattr(node, "end_col_offset", None) or 0)
    count = 0
    for line, _, col, _ in code.co_positions():
        if line is not None and col is not None and start <= (line, col) <= end:
            count += 1
    return count
