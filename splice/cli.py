"""The ``splice`` command line.

``splice show TARGET`` prints a function's IR at each stage (lowered; typed and optimized
for the argument types ``--types`` gives) and the Python source splice generates from it.
``splice trace`` and ``splice run`` run a program (``SCRIPT [ARGS]`` or ``-m MODULE [ARGS]``)
under the Tracer or any plugin (see :mod:`splice.program`).
Every failure the user can cause (a missing file, a module that does not import, a
name that is not there, a function splice cannot transform) is a one-paragraph message and
exit status 2, never a traceback; ``--traceback`` shows one for bug reports. A program that
``splice run``/``splice trace`` is given and python could not start (no such file or module,
a syntax error) is reported as python reports it, with python's exit status (1, or 2 for
a file that cannot be opened), before any of it runs.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.metadata
import importlib.util
import linecache
import os
import re
import sys
import traceback
import types
from pathlib import Path

import click

import splice
import splice.program as splice_program
from splice.errors import SpliceError
from splice.ir.printer import Listing
from splice.reflection import TypedListing


class CommandError(click.ClickException):
    """A clear error for the user (exit status 2, no traceback)."""

    exit_code = 2


def _describe(exc: BaseException) -> str:
    """``exc`` in one line, the way the user's own code would see it."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}, line {exc.lineno}" if exc.lineno else str(exc.filename)
        return f"SyntaxError: {exc.msg} ({where})"
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _module_name_for(path: Path) -> tuple[str, Path | None]:
    """The dotted name to import ``path`` under, and the folder to put on ``sys.path``.

    A file inside a package (folders with ``__init__.py``) is imported as part of that package,
    so its relative imports work; a standalone file is imported under its stem, like a script's
    sibling module (under a private name if the stem is taken, e.g. a file called ``json.py``).
    """
    path = path.resolve()
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    if path.stem == "__init__":
        parts.pop()
    if len(parts) > 1 and all(part.isidentifier() for part in parts):
        return ".".join(parts), folder
    name = path.stem if path.stem.isidentifier() else "_splice_show"
    if name in sys.modules:
        name = f"_splice_show_{name}"
    return name, None


def _import_file(where: str, traceback_: bool) -> types.ModuleType:
    path = Path(where)
    if not path.exists():
        raise CommandError(f"no such file: {where}")
    if not path.is_file():
        raise CommandError(f"not a Python file: {where}")
    name, root = _module_name_for(path)
    # Like ``python FILE``: the file's folder (or its package root) comes first on sys.path,
    # so the module's own imports of its siblings work.
    sys.path.insert(0, str(root if root is not None else path.resolve().parent))
    try:
        if root is not None:
            module = importlib.import_module(name)
            found = getattr(module, "__file__", None)
            if found is None or Path(found).resolve() != path.resolve():
                raise CommandError(f"{where} is module {name} of a package, but importing "
                                   f"{name} finds {found} (another copy comes first)")
            return module
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        if spec is None or spec.loader is None:
            raise CommandError(f"cannot import {where}: not a Python source file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        # The source is read through linecache, like every other function splice lowers.
        linecache.checkcache(str(path.resolve()))
        spec.loader.exec_module(module)
        return module
    except (Exception, SystemExit) as exc:
        if isinstance(exc, CommandError):
            raise
        if traceback_:
            raise
        raise CommandError(f"importing {where} failed: {_describe(exc)}") from None


def _import_module(where: str, traceback_: bool) -> types.ModuleType:
    if not all(part.isidentifier() for part in where.split(".")):
        raise CommandError(f"{where!r} is neither a .py file nor a module name")
    # ``python -m`` puts the working directory first; so does ``splice show``.
    sys.path.insert(0, "")
    try:
        return importlib.import_module(where)
    except (Exception, SystemExit) as exc:
        if traceback_:
            raise
        raise CommandError(f"cannot import {where}: {_describe(exc)}") from None


def load_function(spec: str, *, traceback_: bool = False) -> object:
    """The object that ``path/to/file.py:qualified.name`` or ``module:qualified.name`` names."""
    return load_target(spec, traceback_=traceback_)[0]


def load_target(spec: str, *, traceback_: bool = False) -> tuple[object, type | None]:
    """What ``spec`` names (as :func:`load_function`), and the class it is a method of
    (None for a function, a staticmethod or a classmethod). A name after a function is a
    function nested in it (``outer.inner``): made from its code, with empty cells."""
    fn, owner, kind = load_member(spec, traceback_=traceback_)
    return fn, owner if kind == "method" else None


def load_member(spec: str, *, traceback_: bool = False) -> tuple[object, type | None, str]:
    """What ``spec`` names, the class it is defined in (None for a function) and what it
    is there: ``"function"``, ``"method"``, ``"classmethod"`` or ``"staticmethod"``."""
    where, sep, qualname = spec.rpartition(":")
    if not sep or not where:
        raise CommandError(f"{spec!r} is not FILE.py:FUNCTION or MODULE:FUNCTION")
    if not qualname or not all(part.isidentifier() for part in qualname.split(".")):
        raise CommandError(f"{qualname!r} is not a function name (use NAME, Class.method "
                           "or outer.inner)")
    if where.endswith(".py") or "/" in where or "\\" in where:
        module = _import_file(where, traceback_)
    else:
        module = _import_module(where, traceback_)
    obj: object = module
    owner: type | None = None
    done: list[str] = []
    for part in qualname.split("."):
        # A class's own namespace first, so ``Class.method`` finds the staticmethod or
        # classmethod object itself (its function is what splice shows).
        namespace = getattr(obj, "__dict__", None)
        nested = _nested_function(obj, part)
        owner = obj if isinstance(obj, type) else None
        defined = next((vars(k)[part] for k in obj.__mro__ if part in vars(k)), None) \
            if isinstance(obj, type) else None
        if isinstance(obj, type) and namespace is not None and part in namespace:
            obj = namespace[part]
        elif isinstance(defined, (staticmethod, classmethod)):  # through a subclass
            obj = defined
        elif nested is not None:
            obj = nested
        elif hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            where_ = where if not done else f"{where}:{'.'.join(done)}"
            what = "attribute or nested function" if isinstance(obj, types.FunctionType) \
                else "attribute"
            raise CommandError(f"{where_} has no {what} {part!r}")
        done.append(part)
    kind = "method" if owner is not None else "function"
    if isinstance(obj, (staticmethod, classmethod)):
        kind = "staticmethod" if isinstance(obj, staticmethod) else "classmethod"
        obj = obj.__func__
    if isinstance(obj, types.MethodType):
        if isinstance(obj.__self__, type):  # a classmethod reached through a subclass
            kind, owner = "classmethod", obj.__self__
        obj = obj.__func__
    if isinstance(obj, property):
        raise CommandError(f"{spec} is a property: show {spec}.fget (or .fset, .fdel)")
    if isinstance(obj, (type, types.ModuleType)):
        kind = "a class" if isinstance(obj, type) else "a module"
        raise CommandError(f"{spec} is {kind}, not a function")
    if not isinstance(obj, types.FunctionType) or owner is None:
        owner, kind = None, "function"
    return obj, owner, kind


def _nested_function(obj: object, name: str) -> types.FunctionType | None:
    """The function named ``name`` defined in the body of the function ``obj`` (made from
    its code object, with empty cells: enough to lower, show and infer it)."""
    if not isinstance(obj, types.FunctionType):
        return None
    for const in obj.__code__.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            cells = tuple(types.CellType() for _ in const.co_freevars)
            function = types.FunctionType(const, obj.__globals__, name, None, cells or None)
            function.__qualname__ = const.co_qualname
            function.__module__ = obj.__module__
            return function
    return None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(splice.__version__, "--version", "-V", prog_name="splice")
def main() -> None:
    """splice: a compiler-plugin system for Python."""


@main.command()
@click.argument("target")
@click.option("--stage", type=click.Choice(["lowered", "typed", "optimized", "routed", "python",
                                           "all"]),
              default="all", show_default=True,
              help="Which stage to show: the lowered IR, the typed IR (every value with its "
              "inferred type), the IR after optimisation, the routed IR (calls through "
              "the context's dispatch table, as compiled), the generated Python, or all "
              "(lowered and Python; typed too with --types).")
@click.option("--types", "types_", metavar="TYPES",
              help="The argument types to specialize on, as Python expressions separated "
              "by commas (\"float, int\", \"int | None\"), evaluated with the target's "
              "module globals; parameters left out are Any.")
@click.option("-p", "--plugin", "plugin_spec", metavar="MODULE:CLASS",
              help="Show the stages under this plugin (created without arguments).")
@click.option("--literal", is_flag=True,
              help="Show the generated Python without re-nesting temporaries.")
@click.option("--traceback", "traceback_", is_flag=True,
              help="On an error, show the full traceback (for bug reports).")
def show(target: str, stage: str, types_: str | None, plugin_spec: str | None,
         literal: bool, traceback_: bool) -> None:
    """Show a function's IR at each stage and the Python splice generates from it.

    TARGET is FILE.py:FUNCTION or MODULE:FUNCTION, where FUNCTION may be a dotted name
    such as Class.method. The typed and optimized stages (and the Python, with --types)
    come from the code instance specialized on --types (splice.compile).

    \b
    Examples:
      splice show examples/shapes.py:total_area
      splice show examples/shapes.py:Circle.area --stage python
      splice show examples/shapes.py:total_area --stage typed --types "list"
      splice show json:dumps --stage lowered
    """
    fn, defined_in, kind = load_member(target, traceback_=traceback_)
    owner = defined_in if kind == "method" else None
    of_class = defined_in if kind == "classmethod" else None
    plugin = _load_plugin(plugin_spec) if plugin_spec else None
    typed_wanted = stage in ("typed", "optimized") or types_ is not None or plugin is not None
    sections: list[tuple[str, str]] = []
    if typed_wanted and isinstance(fn, types.FunctionType) and defined_in is not None:
        code = fn.__code__
        first = code.co_varnames[0] if code.co_argcount else None
        where = defined_in.__qualname__
        if kind == "method":
            click.echo(f"# {first or 'self'}: an instance of {where} (the class the method "
                       f"is defined in); --types gives the arguments after it", err=True)
        elif kind == "classmethod":
            click.echo(f"# {first or 'cls'}: the class {where} itself (a classmethod); "
                       f"--types gives the arguments after it", err=True)
        else:
            click.echo(f"# a staticmethod of {where}: no self or cls; --types gives its "
                       f"arguments from the first{f' ({first})' if first else ''}",
                       err=True)
    try:
        if stage in ("lowered", "all"):
            if typed_wanted:
                instance = _instance(fn, types_, plugin, target, owner, of_class)
                sections.append(("lowered IR", str(Listing(instance.lowered))))
            else:
                sections.append(("lowered IR", str(splice.code_lowered(fn))))
        if stage in ("typed", "optimized") or (stage == "all" and typed_wanted):
            instance = _instance(fn, types_, plugin, target, owner, of_class)
            for name in ("typed", "optimized"):
                if stage in (name, "all"):
                    listing = TypedListing(instance, name)
                    sections.append((f"{name} IR", str(listing)))
        if stage == "routed":
            if typed_wanted:
                instance = _instance(fn, types_, plugin, target, owner, of_class)
                sections.append(("routed IR", str(Listing(instance.routed))))
            else:
                sections.append(("routed IR", str(splice.code_stage(fn, "finish"))))
        if stage in ("python", "all"):
            if typed_wanted:
                instance = _instance(fn, types_, plugin, target, owner, of_class)
                sections.append(("generated Python", instance.source))
            else:
                sections.append(("regenerated Python",
                                 splice.code_python(fn, renest=not literal)))
    except (SpliceError, CommandError) as exc:
        if traceback_ or isinstance(exc, CommandError):
            raise
        hint = ""
        if getattr(fn, "__wrapped__", None) is not None:
            hint = f"\n{target} wraps a function: `splice show {target}.__wrapped__` shows it"
        raise CommandError(f"{exc}{hint}") from None
    except Exception as exc:
        if traceback_:
            raise
        detail = "".join(traceback.format_exception_only(exc)).strip()
        raise CommandError(f"internal error in splice while lowering {target}: {detail}\n"
                           "This is a bug in splice; `--traceback` shows where.") from None
    for index, (title, text) in enumerate(sections):
        if len(sections) > 1:
            click.secho(("\n" if index else "") + f"# {title}", bold=True)
        click.echo(text)


def _instance(fn: object, types_: str | None, plugin: splice.Plugin | None, target: str,
              owner: type | None = None, of_class: type | None = None
              ) -> splice.CodeInstance:
    """The code instance ``splice show`` displays (compiled once per command); a method's
    first parameter is an instance of ``owner``, its class; a classmethod's is the class
    ``of_class`` itself."""
    argtypes = _parse_types(fn, types_) if types_ else ()
    if owner is not None:
        argtypes = (owner, *argtypes)
    elif of_class is not None:
        from splice.infer.lattice import Const

        argtypes = (Const(of_class), *argtypes)
    try:
        return splice.compile(plugin, fn, *argtypes)
    except TypeError as exc:
        raise CommandError(f"cannot specialize {target} on ({types_}): {exc}") from None


def _parse_types(fn: object, text: str) -> tuple[object, ...]:
    """``--types "float, int | None"`` as a tuple of type objects."""
    namespace: dict[str, object] = dict(getattr(fn, "__globals__", {}))
    namespace.setdefault("typing", __import__("typing"))
    try:
        value = eval(f"({text},)", namespace)  # noqa: S307 (the user's own expression)
    except Exception as exc:
        raise CommandError(f"--types {text!r} is not a list of types: "
                           f"{_describe(exc)}") from None
    return tuple(value)


# ------------------------------------------------------------------- running programs

_PROGRAM_SETTINGS = {"ignore_unknown_options": True, "allow_interspersed_args": False,
                     "help_option_names": ["-h", "--help"]}


def _find_program(target: tuple[str, ...]) -> tuple[splice_program.Program, list[str]]:
    """The program and its arguments, read from what follows splice's own options as
    ``python`` reads its command line: ``-m MODULE``, ``-c CODE``, ``-`` (standard input) or
    ``SCRIPT``; everything after it belongs to the program. A program python could not
    start (a missing file or module, a syntax error) is reported as python reports it,
    with python's exit status, before any of it runs."""
    if not target:
        raise CommandError("give a program to run: SCRIPT [ARGS]..., -m MODULE [ARGS]..., "
                           "-c CODE [ARGS]... or - (standard input)")
    first, rest = target[0], list(target[1:])
    value = ""
    if first.startswith("-") and first != "-" and first[:2] not in ("-m", "-c"):
        raise CommandError(f"no such option: {first} (splice's options come before the "
                           "program, the program's own after it)")
    if first[:2] in ("-m", "-c"):
        if len(first) > 2:
            value = first[2:]
        elif rest:
            value, rest = rest[0], rest[1:]
        else:
            what = "a module name" if first == "-m" else "the code to run"
            raise CommandError(f"{first} needs an argument: {what}")
    try:
        if first.startswith("-c"):
            program = splice_program.find_code(value)
        elif first.startswith("-m"):
            program = splice_program.find_module(value)
        elif first == "-":
            program = splice_program.find_stdin()
        else:
            program = splice_program.find_script(first)
        splice_program.instrument(program.source, program.filename)  # its syntax, first
    except splice_program.NotRunnable as exc:
        click.echo(f"{_python_name(exc.by_runpy)}: {exc.message}", err=True)
        sys.exit(exc.status)
    except SyntaxError as exc:  # as python reports it: no traceback of splice's
        _print_exception(exc, _runpy_part(exc.__traceback__))
        sys.exit(1)
    except Exception as exc:
        tb = _runpy_part(exc.__traceback__)
        if tb is None:
            raise
        # raised through runpy while finding the module (a package's __init__ failed),
        # as with python -m
        _print_exception(exc, tb)
        sys.exit(1)
    return program, rest


def _python_name(by_runpy: bool) -> str:
    """The program name in a message python prints when it cannot start a program: as
    python would print it when splice runs as ``python -m splice`` (runpy's messages name
    ``sys.executable``, the interpreter's its command), else ``splice``."""
    if click.get_current_context().find_root().info_name == "python -m splice":
        return sys.executable if by_runpy else sys.orig_argv[0]
    return "splice"


def _runpy_part(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The part of ``tb`` from runpy's ``_run_module_as_main`` on (None if it has none)."""
    while tb is not None and tb.tb_frame.f_code is not splice_program.RUNPY_MAIN:
        tb = tb.tb_next
    return tb


def _format_of(path: str) -> str:
    """The trace format an output file's extension asks for."""
    suffix = Path(path).suffix.lower()
    return {".folded": "folded", ".collapsed": "folded", ".txt": "stats"}.get(suffix, "chrome")


def _check_output(path: str | None) -> None:
    """Fail before the program runs if ``path`` cannot be written."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CommandError(f"cannot write {path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise CommandError(f"cannot write {path}: it is a folder")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and
                                          not os.access(path, os.W_OK)):
        raise CommandError(f"cannot write {path}: permission denied")


def _report(plugin: splice.Plugin, output: str | None) -> None:
    """The plugin's ``report()`` (if it defines one and it returns something), to
    ``output`` or standard error."""
    report = getattr(plugin, "report", None)
    if not callable(report):  # (with -o, refused before the run)
        return
    text = report()
    if text is None:
        return
    if output is None:
        click.echo(str(text), err=True)
        return
    try:
        Path(output).write_text(f"{text}\n")
    except OSError as exc:
        raise CommandError(f"cannot write {output}: {_describe(exc)}") from None


def _run_program(plugin: splice.Plugin, program: splice_program.Program, args: list[str]
                 ) -> int:
    """Run the program; returns its exit status (a traceback was printed if it raised)."""
    try:
        splice_program.run_program(plugin, program, args)
    except SystemExit as exc:
        return _exit_status(exc)
    except BaseException as exc:  # the program's own error: report it as python does
        _print_program_traceback(exc, program)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        # the program may have closed or broken its standard output
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
    return 0


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    click.echo(str(exc.code), err=True)
    return 1


def _print_program_traceback(exc: BaseException, program: splice_program.Program) -> None:
    """The uncaught exception as ``python`` shows it: by ``sys.excepthook`` (the
    interpreter's own printer, or the one the program installed), with the traceback from
    the program's outermost frame on (its ``<module>``; runpy's for ``-m``), none of
    splice's."""
    _print_exception(exc, splice_program.program_traceback(exc, program))


def _print_exception(exc: BaseException, tb: types.TracebackType | None) -> None:
    """``exc`` with the traceback ``tb``, printed by ``sys.excepthook``, as python prints
    an exception nothing caught."""
    exc.__traceback__ = tb
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:  # a broken hook: python reports that, then the exception itself
        sys.stderr.write("Error in sys.excepthook:\n")
        traceback.print_exc()
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(exc), exc, exc.__traceback__)
    sys.stderr.flush()


#: how the arguments of ``-p MODULE:CLASS(ARGS)`` name things (README.md, "splice run")
PLUGIN_ARGUMENTS_RULE = (
    "A name in plugin arguments is a name of the plugin class's module, a builtin, or a "
    "module (imported, with the submodules of a dotted name: math.sin, os.path.join), the "
    "program's folder first on sys.path: name a function of the program by its module "
    "(helpers.fast_sin for fast_sin in helpers.py); the script's own functions are not "
    "defined until it runs.")


def _load_plugin(spec: str, path0: str | None = None) -> splice.Plugin:
    """The plugin ``MODULE:CLASS`` (or ``MODULE.CLASS``, ``FILE.py:CLASS``) names, created
    without arguments, or with those of ``MODULE:CLASS(ARGS)``: evaluated as a call, a
    name in them being one of the class's module's globals, a builtin, or a module, which
    is imported (and the submodules a dotted name goes through), with ``path0`` (the
    program's folder) first on ``sys.path`` (``PLUGIN_ARGUMENTS_RULE``)."""
    arguments = None
    if spec.endswith(")") and "(" in spec:
        spec, _, rest = spec.partition("(")
        arguments = "(" + rest
    where, sep, qualname = spec.rpartition(":")
    if not sep:
        where, _, qualname = spec.rpartition(".")
    if not where or not qualname or not all(p.isidentifier() for p in qualname.split(".")):
        raise CommandError(f"{spec!r} is not MODULE:CLASS (or MODULE.CLASS, FILE.py:CLASS), "
                           "optionally with arguments: MODULE:CLASS(ARGS)")
    if where.endswith(".py") or "/" in where or "\\" in where:
        owner: object = _import_file(where, False)
    else:
        owner = _import_module(where, False)
    namespace = dict(vars(owner)) if isinstance(owner, types.ModuleType) else {}
    for part in qualname.split("."):
        if not hasattr(owner, part):
            raise CommandError(f"{where} has no attribute {qualname!r}")
        owner = getattr(owner, part)
    if isinstance(owner, splice.Plugin) and arguments is None:
        return owner
    if not (isinstance(owner, type) and issubclass(owner, splice.Plugin)):
        raise CommandError(f"{spec} is not a splice.Plugin subclass")
    call = f"{spec}{arguments or '()'}"
    text = f"__splice_plugin__{arguments or '()'}"
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CommandError(f"cannot read the arguments {arguments}: {exc.msg}") from None
    if path0 is not None:
        sys.path.insert(0, path0)
    try:
        _import_named_modules(tree, namespace, call)
    finally:
        if path0 is not None:
            sys.path.remove(path0)
    namespace["__splice_plugin__"] = owner
    try:
        plugin = eval(compile(tree, "<plugin arguments>", "eval"), namespace)  # noqa: S307
    except NameError as exc:
        raise CommandError(f"cannot create {call}: {exc}.\n{PLUGIN_ARGUMENTS_RULE}") \
            from None
    except Exception as exc:
        raise CommandError(f"cannot create {call}: {_describe(exc)}") from None
    assert isinstance(plugin, splice.Plugin)
    return plugin


def _import_named_modules(tree: ast.Expression, namespace: dict[str, object], call: str
                          ) -> None:
    """Put in ``namespace`` the modules the arguments ``tree`` name (a free name that is
    neither in ``namespace`` nor a builtin, and is a module), importing the submodules that
    dotted names go through (``xml.etree.ElementTree.parse``)."""
    import builtins

    bound = {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    bound |= {node.id for node in ast.walk(tree)
              if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    chains: list[list[str]] = []
    for node in ast.walk(tree):
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                node.id not in bound:
            chains.append([node.id, *parts])
    for head, *rest in sorted(chains, key=len, reverse=True):
        value = namespace.get(head)
        if value is None and not hasattr(builtins, head):
            value = _import_named(head, call)
            if value is None:
                continue  # not a module: a NameError when evaluated, explained there
            namespace[head] = value
        if not isinstance(value, types.ModuleType):
            continue
        name = value.__name__
        for part in rest:  # the submodules the name goes through, while there are some
            if isinstance(getattr(value, part, None), types.ModuleType) or \
                    _import_named(f"{name}.{part}", call) is not None:
                value = getattr(value, part)
                name = f"{name}.{part}"
                continue
            break


def _import_named(name: str, call: str) -> types.ModuleType | None:
    """The module ``name``, imported, or None if there is none."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            return None
        raise CommandError(f"cannot create {call}: importing {name}, named in the "
                           f"arguments, failed: {_describe(exc)}") from None
    except Exception as exc:
        raise CommandError(f"cannot create {call}: importing {name}, named in the "
                           f"arguments, failed: {_describe(exc)}") from None


@main.command(context_settings=_PROGRAM_SETTINGS)
@click.option("-p", "--plugin", "plugin_spec", metavar="MODULE:CLASS[(ARGS)]",
              help="The plugin to run under: a class, created without arguments or with "
              "ARGS (a Python argument list, in which a name is one of the class's module, "
              "a builtin, or a module, imported with the program's folder first on "
              "sys.path: math.sin, mymodule.fast_sin); default: an identity plugin, which "
              "runs everything under splice unchanged.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the plugin's report() here when the run ends (default: standard "
              "error, if the plugin defines one); refused before the run for a plugin "
              "without report().")
@click.argument("target", nargs=-1, type=click.UNPROCESSED, metavar="PROGRAM")
def run(plugin_spec: str | None, output: str | None, target: tuple[str, ...]) -> None:
    """Run a program with every call it makes under a plugin.

    PROGRAM is what python runs: SCRIPT [ARGS]..., -m MODULE [ARGS]..., -c CODE [ARGS]...
    or - (standard input), run as python runs it (as __main__, with python's sys.argv,
    sys.path[0] and tracebacks). Everything after it belongs to the program, so splice's
    own options come first. Its top-level code runs natively and every call it makes
    runs under the plugin. Exit status: the program's.

    \b
    Examples:
      splice run examples/fib.py 20
      splice run -m json.tool --sort-keys data.json
      splice run -c "import textwrap; print(textwrap.fill('a b c', 3))"
      splice run -p "splice.plugins:Tracer(include=['json'])" -m json.tool data.json
    """
    _check_output(output)
    program, args = _find_program(target)
    plugin = _load_plugin(plugin_spec, program.path0) if plugin_spec else splice.Plugin()
    if output is not None and not callable(getattr(plugin, "report", None)):
        # checked before the program runs, like the output path
        what = "the identity plugin (no -p)" if plugin_spec is None else \
            type(plugin).__qualname__
        raise CommandError(f"-o {output}: {what} has no report() to write; -o writes the "
                           "report of a plugin that defines report() (splice trace -o "
                           "writes a trace)")
    status = _run_program(plugin, program, args)
    _report(plugin, output)
    sys.exit(status)


@main.command(context_settings=_PROGRAM_SETTINGS)
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the trace: Chrome trace-event JSON for a .json file (open it in "
              "https://ui.perfetto.dev or chrome://tracing), collapsed stacks for "
              ".folded/.collapsed (flame graphs: speedscope, flamegraph.pl), a pstats-like "
              "table for .txt; --format overrides.")
@click.option("--format", "format_", type=click.Choice(["chrome", "folded", "stats"]),
              help="The format of -o (default: from its extension).")
@click.option("--sort", type=click.Choice(["cumulative", "tottime", "ncalls", "name"]),
              default="cumulative", show_default=True,
              help="The order of the stats table (--format stats, or a .txt output).")
@click.option("--tree", is_flag=True, help="Print the call tree (the default without -o).")
@click.option("--full", is_flag=True, help="In the tree, every call on its own line "
              "(default: calls merged per path of callers, with counts).")
@click.option("--include", multiple=True, metavar="MODULE",
              help="Record only functions of these modules (and their submodules; "
              "wildcards allowed). Repeatable.")
@click.option("--exclude", multiple=True, metavar="MODULE",
              help="Do not record functions of these modules. Repeatable.")
@click.option("--args", "record_args", is_flag=True,
              help="Record argument and return value summaries (slower).")
@click.option("--implicit", is_flag=True,
              help="Also enter and record the dunders operators, subscripts, attribute "
              "access and formatting call on your objects (slower).")
@click.option("--max-depth", type=click.IntRange(min=1), help="Cut the printed tree.")
@click.option("--min-ms", type=click.FloatRange(min=0), default=0.0,
              help="Hide subtrees faster than this in the printed tree.")
@click.argument("target", nargs=-1, type=click.UNPROCESSED, metavar="PROGRAM")
def trace(output: str | None, format_: str | None, sort: str, tree: bool, full: bool,
          include: tuple[str, ...], exclude: tuple[str, ...], record_args: bool,
          implicit: bool, max_depth: int | None, min_ms: float, target: tuple[str, ...]
          ) -> None:
    """Run a program under the Tracer and report its call tree.

    PROGRAM is what python runs (SCRIPT, -m MODULE, -c CODE or -, then the program's own
    arguments), run as python runs it; every call it makes runs under
    splice.plugins.Tracer (like python -m cProfile). The tree is printed to standard
    error, after the program's own output; -o writes Chrome trace-event JSON. Exit
    status: the program's.

    \b
    Examples:
      splice trace examples/fib.py 20
      splice trace -o trace.json --exclude threading -m mypkg.cli --verbose
    """
    from splice.plugins import Tracer

    tracer = Tracer(include=include, exclude=exclude, args=record_args,
                    returns=record_args, implicit_calls=implicit)
    _check_output(output)
    program, args = _find_program(target)
    status = _run_program(tracer, program, args)
    if output is not None:
        kind = format_ or _format_of(output)
        try:
            if kind == "chrome":
                tracer.write_chrome_trace(
                    output, process_name=f"{program.argv0} (pid {os.getpid()})")
            else:
                text = tracer.collapsed_stacks() if kind == "folded" else \
                    tracer.format_stats(sort=sort)
                Path(output).write_text(text + "\n")
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {_describe(exc)}") from None
        calls = sum(tracer.counts().values())
        click.echo(f"splice: {calls} calls traced, written to {output}", err=True)
    if output is None or tree:
        click.echo(tracer.format_tree(aggregate=not full, max_depth=max_depth,
                                      min_ms=min_ms), err=True)
    sys.exit(status)


#: the folders of the cache's root that splice made (``splice.cache.disk.VERSION_TAG``, and the
#: same with a bytecode magic, as splice wrote them before)
_VERSION_FOLDER = re.compile(r"py\d+\.\d+(-[0-9a-f]+)?-splice[\w.+-]+")


@main.group()
def cache() -> None:
    """The code cache on disk (docs/cache.md): what is in it, and emptying it."""


@cache.command("info")
def cache_info() -> None:
    """Where the cache is and what it holds: entries and bytes per interpreter and splice
    version, and per owner (one per plugin configuration)."""
    from splice.cache.disk import VERSION_TAG, cache_root

    root = cache_root()
    if root is None:
        click.echo("splice: the code cache is off (SPLICE_CACHE=0)")
        return
    click.echo(f"cache: {root}")
    if not root.is_dir():
        click.echo("  (empty: nothing written yet)")
        return
    for version in sorted(p for p in root.iterdir()
                          if p.is_dir() and _VERSION_FOLDER.fullmatch(p.name)):
        owners = sorted(p for p in version.iterdir() if p.is_dir())
        entries = [e for o in owners for e in o.glob("*.entry")]
        size = sum(e.stat().st_size for e in entries)
        mark = " (this interpreter and splice)" if version.name == VERSION_TAG else ""
        click.echo(f"  {version.name}{mark}: {len(entries)} entries, {size / 1024:.0f} KiB, "
                   f"{len(owners)} owners")
        for owner in owners:
            found = list(owner.glob("*.entry"))
            click.echo(f"    {owner.name}: {len(found)} entries, "
                       f"{sum(e.stat().st_size for e in found) / 1024:.0f} KiB")


@cache.command("precompile")
@click.argument("target")
@click.option("-p", "--plugin", "plugin_spec", required=True, metavar="MODULE:CLASS[(ARGS)]",
              help="The plugin to compile for (its options as a run would give them).")
def cache_precompile(target: str, plugin_spec: str) -> None:
    """Compile every function and method that TARGET (a .py file or a module name)
    defines, under a plugin, ahead of a run; with a cache token, the plugin's code is
    written to the cache for later runs that import TARGET (a script run as ``__main__``
    fills the cache on its first run). The file's top-level code runs (it is imported)."""
    from splice.cache.disk import cache_root

    plugin = _load_plugin(plugin_spec)
    module = _import_file(target, False) if target.endswith(".py") or "/" in target \
        else _import_module(target, False)
    functions = _defined_functions(module)
    ready = 0
    with click.progressbar(functions, label=f"compiling {len(functions)} functions",
                           file=sys.stderr) as bar:
        for function in bar:
            try:
                ready += bool(splice.precompile(plugin, function))
            except SpliceError:
                continue
    owner = plugin.context.owner
    disk = None if owner is None else owner.disk
    if disk is None:
        why = "the cache is off" if cache_root() is None else \
            f"{type(plugin).__name__} has no cache token" if owner is None else \
            "the plugin has no name across processes (docs/cache.md)"
        click.echo(f"splice: {ready} of {len(functions)} functions compiled; nothing written "
                   f"({why})")
    else:
        click.echo(f"splice: {ready} of {len(functions)} functions compiled; {disk.written} "
                   f"entries written to {disk.folder}")


def _defined_functions(module: types.ModuleType) -> list[types.FunctionType]:
    """The functions ``module`` defines, and the methods (property accessors, static and
    class methods) of the classes it defines, in definition order."""
    found: list[types.FunctionType] = []
    name = module.__name__
    for value in list(vars(module).values()):
        if isinstance(value, types.FunctionType) and value.__module__ == name:
            found.append(value)
        elif isinstance(value, type) and value.__module__ == name:
            for member in vars(value).values():
                for part in (member, getattr(member, "__func__", None),
                             getattr(member, "fget", None), getattr(member, "fset", None)):
                    if isinstance(part, types.FunctionType) and part.__module__ == name:
                        found.append(part)
    return list(dict.fromkeys(found))


@cache.command("clear")
def cache_clear() -> None:
    """Delete every entry of the cache (entries are rebuilt when next needed)."""
    import shutil

    from splice.cache.disk import cache_root

    root = cache_root()
    if root is None or not root.is_dir():
        click.echo("splice: nothing to clear")
        return
    removed = 0
    # only splice's own folders: the root may be a folder the user keeps other things in
    for version in [p for p in root.iterdir() if p.is_dir() and _VERSION_FOLDER.fullmatch(p.name)]:
        removed += sum(1 for _ in version.glob("*/*.entry"))
        shutil.rmtree(version)
    click.echo(f"splice: removed {removed} entries from {root}")


if __name__ == "__main__":  # pragma: no cover
    main()
