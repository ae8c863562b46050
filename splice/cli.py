"""The ``splice`` command line."""

from __future__ import annotations

import importlib.util
import linecache
import sys
from pathlib import Path

import click

import splice
from splice.errors import SpliceError


class CommandError(click.ClickException):
    """A clear error for the user (exit status 2, no traceback)."""

    exit_code = 2


def load_function(spec: str) -> object:
    """``path/to/file.py:qualified.name`` or ``package.module:qualified.name``."""
    if ":" not in spec:
        raise click.BadParameter(f"{spec!r} is not FILE.py:FUNCTION or MODULE:FUNCTION",
                                 param_hint="TARGET")
    where, _, qualname = spec.rpartition(":")
    if where.endswith(".py") or "/" in where:
        path = Path(where)
        if not path.is_file():
            raise click.BadParameter(f"no such file: {where}", param_hint="TARGET")
        name = f"_splice_show_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise click.BadParameter(f"cannot import {where}", param_hint="TARGET")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        linecache.checkcache(str(path))
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise click.BadParameter(f"cannot import {where}: {exc}",
                                     param_hint="TARGET") from None
    obj: object = module
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise click.BadParameter(f"{where} has no {qualname!r}",
                                     param_hint="TARGET") from None
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    return obj


@click.group()
@click.version_option(package_name="splice")
def main() -> None:
    """splice: a compiler-plugin system for Python."""


@main.command()
@click.argument("target")
@click.option("--stage", type=click.Choice(["lowered", "python", "all"]), default="all",
              help="Which stage to show (default: both).")
@click.option("--literal", is_flag=True,
              help="Show the generated Python without re-nesting temporaries.")
def show(target: str, stage: str, literal: bool) -> None:
    """Show a function's lowered IR and regenerated Python.

    TARGET is FILE.py:FUNCTION or MODULE:FUNCTION (a dotted name such as Class.method).
    """
    fn = load_function(target)
    try:
        lowered = str(splice.code_lowered(fn)) if stage in ("lowered", "all") else None
        python = (splice.code_python(fn, renest=not literal)
                  if stage in ("python", "all") else None)
    except SpliceError as exc:
        raise CommandError(str(exc)) from None
    if lowered is not None:
        if stage == "all":
            click.secho("# lowered IR", bold=True)
        click.echo(lowered)
    if python is not None:
        if stage == "all":
            click.secho("\n# regenerated Python", bold=True)
        click.echo(python)


if __name__ == "__main__":  # pragma: no cover
    main()
