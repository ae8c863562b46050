"""IPython and Jupyter magics: ``%load_ext splice``.

* ``%splice_show FUNC [--stage STAGE] [--types TYPES] [-p PLUGIN]``: a function's stages, as
  ``splice show`` prints them (HTML in Jupyter, text in a terminal).
* ``%%splice_run [-p PLUGIN]``: the cell run under a plugin (``-p MODULE:CLASS(ARGS)``, as
  on the command line; default: an identity plugin). As with ``splice run``, the cell's
  top-level code runs natively and every call it makes runs under the plugin; the value of
  a last expression is the magic's value; a plugin's ``report()`` is printed after.
* ``%%splice_trace [--sort cumulative|tottime|ncalls|name] [--top N] [-o FILE]``: the
  cell run under a ``Tracer``; shows the slowest functions (a table like ``pstats``) and
  writes the whole trace (Chrome JSON: ui.perfetto.dev; default
  ``splice-trace-<n>.json``), linked in Jupyter.

Functions defined in cells are ordinary functions whose source IPython keeps in
``linecache``: splice lowers and runs them under every plugin like any other.
"""

from __future__ import annotations

import argparse
import ast
import shlex
from typing import Any

import splice
from splice.pristine import BUILTINS
from splice.program import CALL_NAME, route_top_level_calls, top_level_caller

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["load_ipython_extension"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        from IPython.core.error import UsageError

        raise UsageError(f"{self.prog}: {message}")


def _parser(name: str) -> _Parser:
    return _Parser(prog=f"%{name}", add_help=False)


class Shown:
    """Sections of listings: text in a terminal, HTML in Jupyter."""

    def __init__(self, sections: list[tuple[str, str]]) -> None:
        self.sections = sections

    def __str__(self) -> str:
        return "\n\n".join(f"# {title}\n{text}" for title, text in self.sections)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        return "".join(f"<h4>{html.escape(title)}</h4><pre>{html.escape(text)}</pre>"
                       for title, text in self.sections)


def _plugin(spec: str | None) -> splice.Plugin:
    if not spec:
        return splice.Plugin()
    from splice.cli import CommandError, _load_plugin

    try:
        return _load_plugin(spec)
    except CommandError as exc:
        from IPython.core.error import UsageError

        raise UsageError(str(exc)) from None


class _Magics:
    """The magics of one IPython shell."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.traces = 0

    def show(self, line: str) -> Shown:
        parser = _parser("splice_show")
        parser.add_argument("function")
        parser.add_argument("--stage", default="all",
                            choices=["lowered", "python", "typed", "routed", "all"])
        parser.add_argument("--types", default=None)
        parser.add_argument("-p", "--plugin", default=None)
        options = parser.parse_args(shlex.split(line))
        fn = self.shell.ev(options.function)
        plugin = _plugin(options.plugin) if options.plugin else None
        argtypes = () if options.types is None else \
            tuple(self.shell.ev(f"({options.types},)"))
        sections: list[tuple[str, str]] = []
        if options.stage in ("lowered", "all"):
            sections.append(("lowered IR", str(splice.code_lowered(fn, plugin=plugin))))
        if options.stage == "typed" or (options.stage == "all" and options.types):
            sections.append(("typed IR", str(splice.code_typed(fn, *argtypes,
                                                                 plugin=plugin))))
        if options.stage == "routed":
            sections.append(("routed IR", str(splice.code_stage(fn, "finish",
                                                                  plugin=plugin))))
        if options.stage in ("python", "all"):
            sections.append(("Python", splice.code_python(fn, plugin=plugin)))
        return Shown(sections)

    def run(self, line: str, cell: str) -> Any:
        parser = _parser("splice_run")
        parser.add_argument("-p", "--plugin", default=None)
        options = parser.parse_args(shlex.split(line))
        plugin = _plugin(options.plugin)
        value = self.run_cell_under(plugin, cell)
        report = getattr(plugin, "report", None)
        if callable(report):
            text = report()
            if text:
                print(text)
        return value

    def trace(self, line: str, cell: str) -> Any:
        from splice.plugins import Tracer

        parser = _parser("splice_trace")
        parser.add_argument("--sort", default="cumulative",
                            choices=["cumulative", "tottime", "ncalls", "name"])
        parser.add_argument("--top", type=int, default=15)
        parser.add_argument("-o", "--output", default=None)
        options = parser.parse_args(shlex.split(line))
        tracer = Tracer()
        try:
            return self.run_cell_under(tracer, cell)
        finally:
            self.traces += 1
            output = options.output or f"splice-trace-{self.traces}.json"
            tracer.write_chrome_trace(output)
            print(tracer.format_stats(sort=options.sort, limit=options.top))
            print(f"splice: the whole trace is in {output} (open it in ui.perfetto.dev)")
            self._link(output)

    def _link(self, path: str) -> None:
        try:
            from IPython.display import FileLink, display
        except ImportError:  # pragma: no cover
            return
        if getattr(self.shell, "kernel", None) is not None:  # Jupyter: a link to the file
            display(FileLink(path))  # type: ignore[no-untyped-call]

    def run_cell_under(self, plugin: splice.Plugin, cell: str) -> Any:
        """Run ``cell`` in the user's namespace: its top-level code natively, every call it
        makes under ``plugin``; the value of a last expression is returned."""
        shell = self.shell
        filename = shell.compile.cache(cell)  # in linecache: tracebacks and splice see it
        tree = ast.parse(shell.transform_cell(cell), filename)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        namespace = shell.user_ns
        namespace[CALL_NAME] = top_level_caller(plugin)
        try:
            exec(compile(route_top_level_calls(tree), filename, "exec"), namespace)
            if last is not None:
                routed = route_top_level_calls(ast.Module([ast.Expr(last.body)], []))
                expression = ast.Expression(routed.body[0].value)  # type: ignore[attr-defined]
                return eval(compile(expression, filename, "eval"), namespace)
            return None
        finally:
            namespace.pop(CALL_NAME, None)


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext splice``: register the magics with ``shell``."""
    magics = _Magics(shell)

    def splice_show(line: str) -> Shown:
        return magics.show(line)

    def splice_run(line: str, cell: str) -> Any:
        return magics.run(line, cell)

    def splice_trace(line: str, cell: str) -> Any:
        return magics.trace(line, cell)

    shell.register_magic_function(splice_show, "line", "splice_show")
    shell.register_magic_function(splice_run, "cell", "splice_run")
    shell.register_magic_function(splice_trace, "cell", "splice_trace")
