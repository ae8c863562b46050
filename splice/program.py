"""Run a whole program (a script or a module, as ``python script.py`` / ``python -m module``
would) under a plugin: what ``splice trace`` and ``splice run`` do.

splice transforms functions, not module top-level code, so a program runs like this: its
top-level code runs natively, as the ``__main__`` module, and every call it makes runs under
the plugin. To reach those calls, the top-level code is compiled from its syntax tree with
each explicit call ``f(args)`` made ``SPLICE_CALL(f, args)`` (a hidden global of the module,
named ``splice:call`` so no code can name it), which calls ``f`` as the plugin's context
enters it. Calls inside class bodies and comprehensions at top level count as top-level
calls. Line numbers and the file name are the program's, so tracebacks point at its source.

Limits (what runs natively): implicit calls of top-level code (operators, iteration,
``with``, decorators applied with ``@``, attribute access), calls of ``locals()``, ``vars()``,
``globals()``, ``dir()``, ``eval()``, ``exec()``, ``super()``, ``breakpoint()``,
``sys._getframe()`` and ``inspect.currentframe()`` (they read the calling frame), and code
that runs before the program starts (``sitecustomize``, ``.pth`` files). Between the
``<module>`` frame and each function it calls there is no frame of splice's (C code,
``splice.runtime._hooks.Chosen``, finds the callee's entry and calls it; without the C
extension, a frame named ``splice_call``).
"""

from __future__ import annotations

import ast
import builtins
import importlib.machinery
import importlib.util
import linecache
import os
import runpy
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from splice.compat import COMMAND_SOURCE_IN_LINECACHE, ast_conversion
from splice.exec_sources import EXEC_SOURCES
from splice.plugin import Plugin
from splice.pristine import BUILTINS
from splice.runtime.native import CHOSEN

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["CALL_NAME", "NotRunnable", "Program", "find_code", "find_module", "find_script",
           "find_stdin", "instrument", "program_traceback", "route_top_level_calls",
           "run_program", "top_level_caller"]

#: the module global through which instrumented top-level code calls
CALL_NAME = "splice:call"

#: functions that read their caller's frame: calling them through a helper would show them
#: the helper's frame, so top-level calls of these names stay native
FRAME_READERS = frozenset({"locals", "vars", "globals", "dir", "eval", "exec", "super",
                           "breakpoint", "_getframe", "currentframe"})


#: the code of runpy's ``_run_module_as_main``: what ``python -m`` calls, so the outermost
#: frame of a ``-m`` program's traceback (``File "<frozen runpy>", line ..., in
#: _run_module_as_main``)
RUNPY_MAIN: types.CodeType = runpy._run_module_as_main.__code__  # type: ignore[attr-defined]


@dataclass
class Program:
    """A program to run as ``__main__``: its source, file, ``sys.argv[0]`` and
    ``sys.path[0]``, and for ``-m`` (and a folder or zip file) its module spec."""

    source: str
    filename: str
    argv0: str
    path0: str
    spec: importlib.machinery.ModuleSpec | None = None
    #: whether the program has a file (``-c`` and stdin programs have none: their source
    #: is the text; ``python -c`` sets no ``__file__``, ``python -`` sets ``'<stdin>'``)
    has_file: bool = True
    #: the name runpy's ``_run_module_as_main`` is given for a program python runs through
    #: runpy: the module of ``-m``, ``"__main__"`` for a folder or zip file; None for a
    #: script, ``-c`` and standard input, which python runs itself
    runpy_name: str | None = None


class NotRunnable(Exception):
    """``python`` cannot start the program: it prints ``message`` after its own name (for
    ``-m``, a folder and a zip file, runpy's message after ``sys.executable``) and exits
    with ``status``, before any of the program runs."""

    def __init__(self, message: str, status: int, by_runpy: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        #: whether runpy says it (``sys.executable: message``), not the interpreter
        self.by_runpy = by_runpy


def _importer(path: str) -> Any:
    """What ``python path`` finds ``path`` to be importable by (a folder's or a zip
    file's importer, as ``sys.path_hooks`` make them), or None: a script."""
    for hook in sys.path_hooks:
        try:
            return hook(path)
        except ImportError:
            continue
    return None


def _find_with_runpy(name: str, path0: str) -> importlib.machinery.ModuleSpec:
    """The spec of the module ``python -m name`` runs (``name == "__main__"``: the
    ``__main__`` module of the folder or zip file ``path0``), found by runpy's own
    ``_run_module_as_main`` with ``path0`` first on ``sys.path``, its ``_run_code`` made to
    keep the spec instead of running the module. So the module is found, and the packages
    it is in imported, as python does it, and a failure is python's: ``NotRunnable`` for
    what runpy reports as a message, else the exception (a ``SyntaxError``, one raised by a
    package's ``__init__``) raised through runpy's frames, as natively."""
    found: list[importlib.machinery.ModuleSpec] = []

    def keep(code: Any, run_globals: Any, init_globals: Any = None, mod_name: Any = None,
             mod_spec: Any = None, pkg_name: Any = None, script_name: Any = None) -> None:
        found.append(mod_spec)
    namespace = dict(vars(runpy))
    namespace["_run_code"] = keep
    finder = types.FunctionType(RUNPY_MAIN, namespace, "_run_module_as_main")
    saved_argv = list(sys.argv)
    sys.path.insert(0, path0)
    try:
        finder(name, name != "__main__")
    except SystemExit as exc:  # runpy: sys.exit(f"{sys.executable}: {message}")
        text = str(exc.code)
        prefix = f"{sys.executable}: "
        raise NotRunnable(text[len(prefix):] if text.startswith(prefix) else text, 1,
                          by_runpy=True) from None
    finally:
        del sys.path[0]
        sys.argv[:] = saved_argv
    return found[0]


def _source_of(spec: importlib.machinery.ModuleSpec) -> str:
    """The source text of the module ``spec`` finds (``ImportError`` if it has none: splice
    transforms source, and a module of bytecode only cannot run under it)."""
    get_source = getattr(spec.loader, "get_source", None)
    source = get_source(spec.name) if get_source is not None else None
    if source is None or spec.origin is None:
        raise ImportError(f"{spec.name} has no Python source to run under splice "
                          f"({spec.origin})")
    return str(source)


def find_script(path: str) -> Program:
    """The program ``python path`` runs: a file, or the ``__main__`` module of a folder or
    zip file (run as python runs it, through runpy, with ``path`` first on ``sys.path``).
    ``NotRunnable`` if python could not start it; the ``SyntaxError`` python reports for a
    file it cannot decode."""
    if os.path.exists(path) and _importer(path) is not None:
        folder = os.path.abspath(path)
        spec = _find_with_runpy("__main__", folder)
        return Program(_source_of(spec), str(spec.origin), path, folder, spec,
                       runpy_name="__main__")
    filename = os.path.abspath(path)
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as exc:
        raise NotRunnable(f"can't open file {filename!r}: [Errno {exc.errno}] "
                          f"{exc.strerror}", 2) from None
    try:
        source = importlib.util.decode_source(raw)
    except (UnicodeDecodeError, SyntaxError) as exc:
        undecodable: BaseException = exc
    else:
        return Program(source, filename, path, os.path.dirname(filename))
    # the compiler's own error for undecodable source (python's, reading the file, is worded
    # a little differently), without the decoder's as its context
    compile(raw, filename, "exec", dont_inherit=True)
    raise undecodable


def find_code(code: str) -> Program:
    """The program ``python -c code`` runs."""
    return Program(code, "<string>", "-c", "", has_file=False)


def find_stdin() -> Program:
    """The program ``python -`` runs: standard input, read to its end."""
    return Program(sys.stdin.read(), "<stdin>", "-", "", has_file=False)


def find_module(name: str) -> Program:
    """The program ``python -m name`` runs, found as python finds it (by runpy, with the
    working directory first on ``sys.path``): ``NotRunnable`` with python's message if
    there is none, ``ImportError`` if it has no source."""
    spec = _find_with_runpy(name, os.getcwd())
    return Program(_source_of(spec), str(spec.origin), str(spec.origin), os.getcwd(), spec,
                   runpy_name=name)


class _CallsAtTopLevel(ast.NodeTransformer):
    """``f(args)`` → ``SPLICE_CALL(f, args)`` outside function and lambda bodies."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        # decorators, defaults and annotations are evaluated at top level; the body is not
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self._arguments(node.args)
        if node.returns is not None:
            node.returns = self.visit(node.returns)
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self._arguments(node.args)
        if node.returns is not None:
            node.returns = self.visit(node.returns)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node.args = self._arguments(node.args)
        return node

    def _arguments(self, args: ast.arguments) -> ast.arguments:
        args.defaults = [self.visit(d) for d in args.defaults]
        args.kw_defaults = [None if d is None else self.visit(d) for d in args.kw_defaults]
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                    *filter(None, [args.vararg, args.kwarg])]:
            if arg.annotation is not None:
                arg.annotation = self.visit(arg.annotation)
        return args

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        name = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) else None
        if name in FRAME_READERS:
            return node
        helper = ast.copy_location(ast.Name(CALL_NAME, ast.Load()), func)
        ast.copy_location(helper, node)
        helper.end_lineno, helper.end_col_offset = func.end_lineno, func.end_col_offset
        return ast.copy_location(ast.Call(helper, [func, *node.args], node.keywords), node)


def route_top_level_calls(tree: ast.Module) -> ast.Module:
    """``tree`` (a module's syntax) with its top-level calls made through ``CALL_NAME``,
    in place."""
    routed: ast.Module = _CallsAtTopLevel().visit(tree)
    ast.fix_missing_locations(routed)
    return routed


def instrument(source: str, filename: str) -> types.CodeType:
    """The module code of ``source`` with its top-level calls made through ``CALL_NAME``."""
    with ast_conversion():
        tree = route_top_level_calls(ast.parse(source, filename))
        code: types.CodeType = compile(tree, filename, "exec", dont_inherit=True)
    return code


def top_level_caller(plugin: Plugin) -> Callable[..., Any]:
    """What ``CALL_NAME`` must be bound to for top-level code run under ``plugin``.

    A top-level call enters the context as ``Plugin.run`` would, but without
    ``Context.run``, which merges what the plugins' copies in worker processes reported
    when it ends (``splice.runtime.processes``): so each top-level call first merges what
    arrived since the last one (one ``stat`` of the spool when work was sent to other
    processes, nothing otherwise), and ``run_program`` merges the rest when the program
    ends."""
    context = plugin.context
    enter = context.enter
    collect = context.process_channel.collect
    plain = (types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)

    def splice_call(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        """What runs the top-level call ``fn(*args, **kwargs)``: ``fn``'s entry."""
        collect(if_changed=True)
        if type(fn) in plain or isinstance(fn, type):
            return enter(fn)
        try:
            return enter(fn)
        except TypeError:  # unhashable callable object
            return fn
    if CHOSEN is not None:
        # C code calls the entry without ``fn``: no frame between <module> and the callee
        return CHOSEN(splice_call, splice_call, 1)  # type: ignore[no-any-return]

    def call_in_python(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        return splice_call(fn)(*args, **kwargs)
    call_in_python.__name__ = call_in_python.__qualname__ = "splice_call"
    return call_in_python


@contextmanager
def _as_main(program: Program, args: Sequence[str], module: types.ModuleType
             ) -> Iterator[None]:
    """``sys.argv``, ``sys.path[0]`` and ``sys.modules['__main__']`` as for the program,
    restored afterwards."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_main = sys.modules.get("__main__")
    sys.argv = [program.argv0, *args]
    sys.path.insert(0, program.path0)
    sys.modules["__main__"] = module
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def _run_with_runpy(program: Program, code: types.CodeType) -> None:
    """Run ``code`` in ``sys.modules['__main__']`` as ``python -m`` runs a module: by
    runpy's own ``_run_module_as_main`` and ``_run_code``, so the program's traceback has
    their two frames, as natively, and its ``__main__`` globals are the ones runpy sets.
    ``_run_module_as_main``'s code runs with globals of its own (a copy of runpy's) in which
    finding the module gives the module found before and ``code``, its top-level calls
    routed; runpy itself is not changed."""
    spec, name = program.spec, program.runpy_name
    assert spec is not None and name is not None
    found = (spec.name, spec, code)
    namespace = dict(vars(runpy))
    namespace["_get_module_details"] = lambda name, error=ImportError: found
    namespace["_get_main_module_details"] = lambda error=ImportError: found
    runner = types.FunctionType(RUNPY_MAIN, namespace, "_run_module_as_main")
    # a folder or zip file: ``_run_module_as_main("__main__", False)``, as python calls it
    runner(name, name != "__main__")


def program_traceback(exc: BaseException, program: Program) -> types.TracebackType | None:
    """The part of ``exc``'s traceback that ``python`` would print for ``program``: from
    the program's ``<module>`` frame on (from runpy's ``_run_module_as_main`` for ``-m``),
    without the frames of splice's that ran it."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code is RUNPY_MAIN if program.runpy_name is not None else \
                (code.co_filename == program.filename and code.co_name == "<module>"):
            return tb
        tb = tb.tb_next
    return exc.__traceback__


def run_program(plugin: Plugin, program: Program, args: Sequence[str] = ()) -> None:
    """Run ``program`` as ``__main__`` with ``args``, its calls under ``plugin``.

    Exceptions (``SystemExit`` included) propagate. ``sys.argv``, ``sys.path`` and
    ``sys.modules['__main__']`` are restored afterwards.
    """
    code = instrument(program.source, program.filename)
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    # python's __main__ starts with an empty ``__annotations__`` (pylifecycle.c)
    namespace.update({"__annotations__": {}, "__builtins__": builtins,
                      CALL_NAME: top_level_caller(plugin)})
    try:
        _run(program, args, module, code)
    finally:
        # what workers reported: merged as at the end of ``Context.run`` (the program's
        # top-level calls were entered without it)
        plugin.context.process_channel.collect()


def _run(program: Program, args: Sequence[str], module: types.ModuleType,
         code: types.CodeType) -> None:
    namespace = module.__dict__
    if program.runpy_name is not None:
        with _as_main(program, args, module):
            _run_with_runpy(program, code)
        return
    if not program.has_file:
        # no file to read the source from: the functions it defines are lowered from the
        # text (splice.exec_sources), as those of ``python -c`` are
        EXEC_SOURCES.record(code, program.source)
        if program.argv0 == "-c" and COMMAND_SOURCE_IN_LINECACHE:
            linecache.cache[program.filename] = (
                len(program.source), None, program.source.splitlines(True), program.filename)
        namespace.update({"__loader__": importlib.machinery.BuiltinImporter,
                          "__spec__": None, "__package__": None})
        if program.argv0 == "-":  # ``python -`` names the file, as the compiler does
            namespace.update({"__file__": program.filename, "__cached__": None})
    else:
        namespace.update({"__file__": program.filename, "__cached__": None,
                          "__loader__": importlib.machinery.SourceFileLoader(
                              "__main__", program.filename), "__package__": None})
    with _as_main(program, args, module):
        exec(code, namespace)
