"""splice: a compiler-plugin system for Python.

The pipeline (docs/architecture.md): Python function -> lower -> IR -> infer -> typed IR ->
optimize -> codegen -> code object; plugins run a whole call graph through it
(``Plugin.run``), and ``splice.compile``/``splice.invoke`` build and call one code instance.
"""

from __future__ import annotations

from splice._version import __version__  # (pyproject.toml reads it from there)
from splice.cache.instances import CodeInstance, invoke
from splice.cache.world import invalidate, world
from splice.errors import (
    ArgumentTypeError,
    InterpreterError,
    InvalidatedError,
    PluginError,
    PluginSendError,
    SpliceError,
    UnsupportedError,
)
from splice.infer import AbstractInterpreter
from splice.ir.verify import VerifyError
from splice.plugin import Plugin, compile, compose, explain, intercept, precompile
from splice.reflection import code_lowered, code_python, code_stage, code_typed

__all__ = ["AbstractInterpreter", "ArgumentTypeError", "CodeInstance", "InterpreterError",
           "InvalidatedError", "Plugin", "PluginError", "PluginSendError", "SpliceError",
           "UnsupportedError", "VerifyError", "__version__", "code_lowered", "code_python",
           "code_stage", "code_typed", "compile", "compose", "explain", "intercept",
           "invalidate", "invoke", "precompile", "world"]


def load_ipython_extension(shell: object) -> None:
    """``%load_ext splice`` in IPython or Jupyter: the ``%splice_show``, ``%%splice_run``
    and ``%%splice_trace`` magics (``splice.integrations.ipython``)."""
    from splice.integrations.ipython import load_ipython_extension as load

    load(shell)
