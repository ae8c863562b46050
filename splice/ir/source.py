"""Find the source AST of a function object.

Source comes from ``linecache`` (so functions from IPython cells and other registered
sources work), or, for code made by ``exec``/``eval`` from a string (a dataclass's
``__init__``, a namedtuple's ``__new__``, ``python -c``), from the text recorded when it
was compiled (``splice.exec_sources``), or, for a function typed at the prompt of 3.11 or
3.12, from the statement read back from readline's history or a redirected stdin file and
verified there against its code (``splice.ir.repl_sources``); the whole text is parsed
once and indexed by name and first line.

A code object is matched to its exact definition or refused (``UnsupportedError``: the
function then runs natively), never guessed. Name, first line and parameter names do not
identify a lambda (``lambda: (lambda: 1)``, ``a, b = (lambda: 1), (lambda: 1)``), so the
match is made on the source spans code objects carry from Python 3.11 on
(``co_positions``):

* Every instruction of a function's code comes from its body, the statements of a ``def``
  or the expression of a ``lambda``. Decorators, default values and annotations run in
  the enclosing scope, and nested functions, lambdas and class bodies are code objects of
  their own; the code only makes them, at their node's own span, and evaluates their
  decorators, defaults, annotations, bases and keywords (the *windows*, which may hold
  scopes again). So each *located* position of the code (with columns and a nonzero
  width) lies in the definition's body and, inside a nested scope's extent (its first
  decorator to its end), only on that scope's span or in one of its windows. Comprehensions
  are not scopes here: their spans lie in the enclosing body whether they are code objects
  of their own (3.11) or inlined (3.12+), and no function is matched to a comprehension's
  code.
* The regions so allowed to two definitions are disjoint: a nested scope's body is
  disjoint from its windows, which precede it, and its own span is not inside its body. So
  a code object with one located position at least belongs to at most one definition. It
  is matched when that definition also has the code's name, first line and parameter
  names, and refused otherwise. Artificial positions have no columns or zero width, as no
  source node does (``RESUME`` and a 3.11 lambda's ``RETURN_VALUE`` sit at column 0 of
  the first line; splice's own prologues at the ``def`` line): they are skipped.
* A code object without located positions (a body of ``pass`` or a docstring; every
  function under ``python -X no_debug_ranges``) is matched on name, first line and
  parameter names alone when that leaves one definition, and refused when it leaves
  several. That is exact for a ``def``: a compound statement starts its own line, so no
  two share a first line (``co_firstlineno`` is the first decorator's line). It refuses
  lambdas that share a line and parameters, except on 3.12, where the code of a lambda
  returning a constant has no located position (``splice.compat.RETURN_CONST_UNLOCATED``):
  it is matched to the lambdas whose body is that constant, and of several equal ones
  (interchangeable: a constant does not see its scope) to the first.

The match found is then **verified**: the text is compiled (once per file and set of future
flags) and the function's code must equal a code object of that compile with its name and
first line (``==`` on code objects: names, flags, bytecode, constants, positions and
exception table). So a function whose ``__code__`` was replaced (``code.replace``, a
bytecode tool) or whose file was edited since it was imported (a module loaded from its
``.pyc`` is read as the file is now) is refused and runs natively, where a copy made from the
source would do something else. Three other compiles of the same text are accepted, as they
run the same source: statement by statement (IPython and the REPL compile each top-level
statement alone, so a module imported in one statement is not known as one in the next:
``LOAD_METHOD`` where a whole-module compile has ``LOAD_ATTR``), pytest's assertion
rewriting of a module it loaded, and ``types.coroutine``'s flag
(``CO_ITERABLE_COROUTINE``, set on the code by ``code.replace``). Code splice itself put in
place of a function's (the dynamic scope's prologue, the oracle's checks) is verified as the
code it stands for (``splice.ir.stand_ins``). Code pytest compiled is copied from the
tree pytest compiled (the text with its assertions rewritten, indexed as the text is), not
from the text: a rewritten ``assert`` keeps each operand in a local until the assertion is
decided and builds its failure message from them, so a plain ``assert`` would free objects
earlier (``assert hash(C()) != hash(C())`` holds natively under pytest, as the first
object is still alive when the second is made) and fail with another message. What this
cannot see: code equal to what the text compiles to but made otherwise, which then behaves
as that text does.

A definition's enclosing scopes are those whose body holds it: a lambda in a decorator or a
default value belongs to the scope around the ``def`` or ``class`` (no name mangling by
that class).
"""

from __future__ import annotations
import __future__

import ast
import bisect
import dis
import linecache
import sys
import types
from dataclasses import dataclass, field
from typing import Literal

from splice.compat import RETURN_CONST_UNLOCATED, ast_conversion
from splice.errors import UnsupportedError
from splice.exec_sources import BY_VALUE_FILENAME, EXEC_SOURCES, command_text
from splice.ir.functions import describe
from splice.ir.repl_sources import (
    PROMPT_FILENAME,
    NotRecorded,
    at_prompt,
    from_stdin_script,
    script_text,
    typed_text,
)
from splice.ir.stand_ins import original_of
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


#: a source span: (line, column, end line, end column), columns in UTF-8 bytes as in ``ast``
Span = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class _Scope:
    """A function, lambda or class as the code of its enclosing scope sees it."""

    #: from its first decorator to its end
    extent: Span
    #: the node's own span: the enclosing code's instructions that make and bind it
    span: Span
    #: the parts the enclosing code evaluates (decorators, default values, annotations,
    #: bases and keywords of a class), each with the scopes in it (sorted by extent)
    windows: tuple[tuple[Span, tuple[_Scope, ...]], ...]


@dataclass(frozen=True, slots=True)
class _Definition:
    node: FunctionNode
    enclosing: tuple[ScopeNode, ...]
    #: the span of the body: the code's located positions are all inside it
    body: Span
    #: the outermost scopes in the body, sorted by extent (their extents are disjoint)
    nested: tuple[_Scope, ...]
    #: defined in a generic class's header (type parameters, bases, keywords: PEP 695),
    #: whose scope mangles private names by version-specific rules (3.12: the type
    #: parameters only; 3.13: every name), which a regenerated copy would not reproduce
    in_generic_class_header: bool = False


@dataclass(slots=True)
class _ParsedFile:
    text: str
    tree: ast.Module
    by_line: dict[tuple[str, int], list[_Definition]]
    imports: frozenset[str]
    #: the code objects the text compiles to, by how it was compiled and future flags,
    #: then by name and first line
    compiled: dict[tuple[str, int], dict[tuple[str, int], list[types.CodeType]]] = field(
        default_factory=dict)
    #: the text as pytest's assertion rewriting made it, parsed and indexed (``False``: not
    #: made yet; ``None``: pytest did not load the module, or cannot rewrite it)
    rewritten: _ParsedFile | None | Literal[False] = False

    def compiled_how(self, code: types.CodeType, filename: str,
                     module_globals: dict[str, object]) -> str | None:
        """How the text compiles to ``code`` (equal names, flags, bytecode, constants,
        positions and exception table), or None: ``"module"``, as a module;
        ``"statements"``, statement by statement (as IPython and the REPL compile cells: a
        module imported in an earlier statement makes no ``LOAD_ATTR`` of the later ones);
        ``"pytest"``, after pytest's assertion rewriting of its module (the definition is
        then the one in :meth:`rewritten_by_pytest`)."""
        flags = code.co_flags & FUTURE_FLAGS_MASK
        for how in ("module", "statements", "pytest"):
            made = self._compiled(how, flags, filename, module_globals)
            if any(_compiled_as(m, code) for m in made.get(
                    (code.co_name, code.co_firstlineno), ())):
                return how
        return None

    def rewritten_by_pytest(self, filename: str, module_globals: dict[str, object]
                            ) -> _ParsedFile | None:
        """The text as pytest compiled it when it loaded the module (its assertion
        rewriting: an ``assert`` becomes statements that keep each operand in a local until
        the assertion is decided, and a failure message built from them), indexed as
        parsed text is; None for a module pytest did not load."""
        if self.rewritten is False:
            tree = _rewritten_by_pytest(self.text, filename, module_globals)
            if tree is None:
                self.rewritten = None
            else:
                by_line: dict[tuple[str, int], list[_Definition]] = {}
                _index(tree, (), by_line)
                self.rewritten = _ParsedFile(self.text, tree, by_line,
                                             frozenset(_top_level_imports(tree)), rewritten=None)
        return self.rewritten

    def _compiled(self, how: str, flags: int, filename: str, module_globals: dict[str, object]
                  ) -> dict[tuple[str, int], list[types.CodeType]]:
        found = self.compiled.get((how, flags))
        if found is not None:
            return found
        found = self.compiled[how, flags] = {}
        trees: list[ast.Module] = [self.tree]
        if how == "statements":
            trees = [ast.Module([statement], []) for statement in self.tree.body]
        elif how == "pytest":
            rewritten = self.rewritten_by_pytest(filename, module_globals)
            trees = [rewritten.tree] if rewritten is not None else []
        pending: list[types.CodeType] = []
        for tree in trees:
            try:
                with ast_conversion():
                    pending.append(compile(tree, filename, "exec", flags=flags,
                                           dont_inherit=True))
            except (SyntaxError, ValueError):  # not how it was compiled
                pass
        while pending:
            made = pending.pop()
            found.setdefault((made.co_name, made.co_firstlineno), []).append(made)
            pending.extend(c for c in made.co_consts if type(c) is types.CodeType)
        return found


#: ``types.coroutine`` sets it on a generator function's code (``code.replace``): the code
#: is still the source's
CO_ITERABLE_COROUTINE = 0x100


def _compiled_as(made: types.CodeType, code: types.CodeType) -> bool:
    if made.co_flags ^ code.co_flags == CO_ITERABLE_COROUTINE:
        made = made.replace(co_flags=code.co_flags)
    return made == code


def _rewritten_by_pytest(text: str, filename: str, module_globals: dict[str, object]
                         ) -> ast.Module | None:
    """The syntax tree pytest compiled a module it loaded from (its assertion rewriting),
    or None for a module it did not load."""
    loader = module_globals.get("__loader__")
    rewrite = sys.modules.get(type(loader).__module__)
    if type(loader).__name__ != "AssertionRewritingHook" or rewrite is None:
        return None
    try:
        with ast_conversion():
            tree = ast.parse(text, filename)
        rewrite.rewrite_asserts(tree, text.encode(), filename, getattr(loader, "config", None))
    except Exception:  # noqa: BLE001 - another pytest: not verified that way
        return None
    return tree


#: parsed sources by file name (by file name and text for texts run by exec/eval)
_parsed: dict[str, _ParsedFile] = {}
#: a bound on the texts kept parsed (every dataclass has a few)
_MAX_PARSED = 512


def find_source(fn: types.FunctionType) -> FunctionSource:
    """Locate ``fn``'s definition in its source file, or raise ``UnsupportedError``."""
    code = fn.__code__
    filename = code.co_filename
    if filename == BY_VALUE_FILENAME and EXEC_SOURCES.text_of(code) is None:
        shipped = EXEC_SOURCES.shipped()
        if shipped:
            return _find_shipped(fn, shipped)
    return _find_in(fn, _parse(filename, fn.__globals__, fn))


def _find_shipped(fn: types.FunctionType, texts: list[str]) -> FunctionSource:
    """``fn``'s definition in one of the texts shipped with code pickled by value
    (``splice.exec_sources``): the first that holds exactly its code."""
    for text in texts:
        try:
            return _find_in(fn, _parse_text(BY_VALUE_FILENAME, text, fn))
        except UnsupportedError:
            continue
    raise UnsupportedError(
        describe(fn),
        f"it was pickled by value (its file is named {BY_VALUE_FILENAME}), and none of the "
        f"{len(texts)} source text(s) its sender shipped holds its definition",
        f"{BY_VALUE_FILENAME}:{fn.__code__.co_firstlineno}")


def _find_in(fn: types.FunctionType, parsed: _ParsedFile) -> FunctionSource:
    """``fn``'s definition in ``parsed`` (its code matched exactly), or
    ``UnsupportedError``."""
    code = fn.__code__
    filename = code.co_filename
    where = f"{filename}:{code.co_firstlineno}"
    found = _definition_in(fn, parsed)
    how = parsed.compiled_how(original_of(code), filename, fn.__globals__)
    if how is None:
        raise UnsupportedError(
            describe(fn),
            "its code is not what its source compiles to (replaced by code.replace or a "
            "bytecode tool, or compiled from a rewritten syntax tree); a copy made from the "
            "source would do something else",
            where,
        )
    if how == "pytest":
        # the copy runs the assertions as pytest rewrote them (the same lifetimes of the
        # operands, the same failure messages), so it is made from the rewritten text
        parsed = parsed.rewritten_by_pytest(filename, fn.__globals__) or parsed
        found = _definition_in(fn, parsed)
    if found.in_generic_class_header:
        raise UnsupportedError(
            describe(fn), "it is defined in the type parameters, bases or keywords of a "
            "generic class (PEP 695), whose private-name mangling is not modelled", where)
    return FunctionSource(found.node, found.enclosing, filename,
                          code.co_flags & FUTURE_FLAGS_MASK, parsed.imports)


def _definition_in(fn: types.FunctionType, parsed: _ParsedFile) -> _Definition:
    """The one definition in ``parsed`` that ``fn``'s code can come from (by name, first
    line, parameters and the spans of its instructions), or ``UnsupportedError``."""
    code = fn.__code__
    filename = code.co_filename
    line = code.co_firstlineno
    where = f"{filename}:{line}"
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    params = code.co_varnames[:nargs]
    candidates = [d for d in parsed.by_line.get((code.co_name, line), [])
                  if tuple(_code_order(d.node.args)) == params]
    positions = located_positions(code)
    if positions:
        candidates = [d for d in candidates if _owns(d, positions)]
    elif len(candidates) > 1 and RETURN_CONST_UNLOCATED and _has_columns(code):
        candidates = _constant_lambdas(candidates, code)
    if not candidates:
        raise UnsupportedError(
            describe(fn),
            "its definition was not found in the source (the file may have changed since it "
            "was imported; reload the module)",
            where,
        )
    if len(candidates) > 1:
        raise UnsupportedError(
            describe(fn),
            f"{len(candidates)} definitions on its line have its name and parameters, and its "
            "code carries no column positions to tell which one it is (python -X "
            "no_debug_ranges?)",
            where,
        )
    return candidates[0]


def _has_columns(code: types.CodeType) -> bool:
    """Whether ``code`` carries column positions at all (not ``python -X no_debug_ranges``)."""
    return any(col is not None for _, _, col, _ in code.co_positions())


def _constant_lambdas(candidates: list[_Definition], code: types.CodeType
                      ) -> list[_Definition]:
    """The lambdas among ``candidates`` whose body is the constant ``code`` returns, when
    ``code`` only returns a constant (``splice.compat.RETURN_CONST_UNLOCATED``): several
    left are interchangeable when their nodes are equal (the body is a constant, so the
    enclosing scopes play no part), and the first is taken."""
    body = [i for i in dis.get_instructions(code) if i.opname not in _PROLOGUE]
    if len(body) != 1 or body[0].opname != "RETURN_CONST":
        return candidates
    value = body[0].argval
    found = [d for d in candidates if isinstance(d.node, ast.Lambda)
             and _same_constant(_literal(d.node.body), value)]
    if len(found) > 1 and len({ast.dump(d.node) for d in found}) == 1:
        return found[:1]
    return found


_PROLOGUE = frozenset({"RESUME", "NOP", "CACHE"})
_NOT_LITERAL = object()


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _same_constant(a: object, b: object) -> bool:
    """Equal constants of the same types (``1``, ``1.0`` and ``True`` differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(_same_constant, a, b))
    return bool(a == b) or (a != a and b != b)


def located_positions(code: types.CodeType) -> set[Span]:
    """The source spans of ``code``'s instructions, leaving out artificial ones (without
    columns, or of zero width: no source node has zero width)."""
    spans: set[Span] = set()
    for line, end_line, col, end_col in code.co_positions():
        if line is None or end_line is None or col is None or end_col is None:
            continue
        if (end_line, end_col) > (line, col):
            spans.add((line, col, end_line, end_col))
    return spans


def _owns(definition: _Definition, positions: set[Span]) -> bool:
    """Whether every position lies in the definition's body where its code evaluates (see
    the module docstring): then the code is this definition's."""
    return all(_within(span, definition.body) and _evaluated_here(span, definition.nested)
               for span in positions)


def _evaluated_here(span: Span, scopes: tuple[_Scope, ...]) -> bool:
    """Whether code evaluated where ``scopes`` are defined can have an instruction at
    ``span``: outside each of them, on its own span, or in a part of it that code evaluates
    (recursively: a default value may hold a lambda)."""
    # the extents are disjoint and sorted: only the last one starting at or before the
    # position can hold it
    index = bisect.bisect_right(scopes, span[:2], key=_start) - 1
    if index < 0 or not _within(span, scopes[index].extent):
        return True
    scope = scopes[index]
    if span == scope.span:
        return True
    for window, inner in scope.windows:
        if _within(span, window):
            return _evaluated_here(span, inner)
    return False


def _start(scope: _Scope) -> tuple[int, int]:
    return scope.extent[:2]


def _within(inner: Span, outer: Span) -> bool:
    return outer[:2] <= inner[:2] and inner[2:] <= outer[2:]


def _parse(filename: str, module_globals: dict[str, object], fn: types.FunctionType
           ) -> _ParsedFile:
    # made by exec/eval from a string (a dataclass's __init__): the text recorded for this
    # very code object from the audit events comes first (file names such as "<string>"
    # are shared by many texts, and a linecache entry of that name may be another's)
    text = EXEC_SOURCES.text_of(fn.__code__)
    if text is None:
        lines = linecache.getlines(filename, module_globals)
        if not lines and filename.startswith("<frozen "):
            # frozen stdlib modules keep their source file beside the frozen code
            path = module_globals.get("__file__")
            if isinstance(path, str):
                lines = linecache.getlines(path)
        if lines:
            text = "".join(lines)
        elif filename == "<string>":
            text = command_text()  # a function of the python -c program
        elif filename == PROMPT_FILENAME:
            # typed at the prompt of 3.11/3.12 (read back from readline's history), or a
            # program read from stdin (read back from the file): verified
            code = original_of(fn.__code__)
            read_back = typed_text if at_prompt(code) else \
                script_text if from_stdin_script(code) else None
            if read_back is not None:
                try:
                    text = read_back(code)
                except NotRecorded as exc:
                    raise UnsupportedError(describe(fn), exc.reason, filename) from None
                EXEC_SOURCES.record(code, text)
    if text is None:
        raise UnsupportedError(
            describe(fn),
            "its source is not available (made by exec/eval before splice was imported, "
            "or from a syntax tree, or the file is missing)",
            filename,
        )
    return _parse_text(filename, text, fn)


def _parse_text(filename: str, text: str, fn: types.FunctionType) -> _ParsedFile:
    """``text`` (the source of ``filename``) parsed and indexed, cached."""
    key = filename
    if filename.startswith("<"):
        # texts of pseudo-files are keyed by themselves too (one name, many texts)
        key = f"{filename}\0{text}"
        if len(_parsed) > _MAX_PARSED:
            _parsed.clear()
    cached = _parsed.get(key)
    if cached is not None and cached.text == text:
        return cached
    try:
        with ast_conversion():
            tree = ast.parse(text, filename)
    except SyntaxError as exc:
        raise UnsupportedError(describe(fn), f"its source file does not parse: {exc}",
                               filename) from None
    by_line: dict[tuple[str, int], list[_Definition]] = {}
    _index(tree, (), by_line)
    result = _ParsedFile(text, tree, by_line, frozenset(_top_level_imports(tree)))
    _parsed[key] = result
    return result


_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _index(node: ast.AST, enclosing: tuple[ScopeNode, ...],
           by_line: dict[tuple[str, int], list[_Definition]],
           in_generic_class_header: bool = False) -> list[_Scope]:
    """Index the functions and lambdas in ``node`` (``node`` included); return the
    outermost scopes (functions, lambdas, classes) in it, which the code evaluating
    ``node`` defines."""
    if not isinstance(node, _SCOPE_NODES):
        scopes: list[_Scope] = []
        for child in ast.iter_child_nodes(node):
            scopes += _index(child, enclosing, by_line, in_generic_class_header)
        return scopes
    # the body is evaluated in the scope; the rest (decorators, default values,
    # annotations, bases) in the enclosing scope, and may hold scopes of their own
    statements: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    inside: list[_Scope] = []
    windows: list[tuple[Span, tuple[_Scope, ...]]] = []
    generic_class = isinstance(node, ast.ClassDef) and bool(getattr(node, "type_params", None))
    for child in ast.iter_child_nodes(node):
        if any(child is statement for statement in statements):
            inside += _index(child, (*enclosing, node), by_line)
        else:
            header = in_generic_class_header or (generic_class and not any(
                child is decorator for decorator in node.decorator_list))  # type: ignore[union-attr]
            windows += _windows(child, enclosing, by_line, header)
    if not isinstance(node, ast.ClassDef):
        if isinstance(node, ast.Lambda):
            key = ("<lambda>", node.lineno)
        else:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            key = (node.name, first)
        by_line.setdefault(key, []).append(
            _Definition(node, enclosing, _body_span(node), tuple(sorted(inside, key=_start)),
                        in_generic_class_header))
    span = _span(node)
    decorators = [] if isinstance(node, ast.Lambda) else node.decorator_list
    start = min([span[:2], *(_span(d)[:2] for d in decorators)])
    return [_Scope((*start, *span[2:]), span, tuple(windows))]


def _windows(node: ast.AST, enclosing: tuple[ScopeNode, ...],
             by_line: dict[tuple[str, int], list[_Definition]],
             in_generic_class_header: bool = False
             ) -> list[tuple[Span, tuple[_Scope, ...]]]:
    """The positioned nodes under a scope's header part ``node`` (``arguments`` has no
    position: its ``arg`` nodes and default values do), each with the scopes in it."""
    if "lineno" in node._attributes:
        inner = _index(node, enclosing, by_line, in_generic_class_header)
        return [(_span(node), tuple(sorted(inner, key=_start)))]
    windows: list[tuple[Span, tuple[_Scope, ...]]] = []
    for child in ast.iter_child_nodes(node):
        windows += _windows(child, enclosing, by_line, in_generic_class_header)
    return windows


def _body_span(node: ScopeNode) -> Span:
    if isinstance(node, ast.Lambda):
        return _span(node.body)
    first, last = node.body[0], node.body[-1]
    start = _span(first)
    if isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        # a decorated statement's span starts at ``def``/``class``, after its decorators
        start = min([start, *(_span(d) for d in first.decorator_list)])
    return (start[0], start[1], *_span(last)[2:])


def _span(node: ast.AST) -> Span:
    line: int = getattr(node, "lineno", 0)
    col: int = getattr(node, "col_offset", 0)
    return (line, col, getattr(node, "end_lineno", None) or line,
            getattr(node, "end_col_offset", None) or col)


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
