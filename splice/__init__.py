"""splice: a compiler-plugin system for Python.

The pipeline (docs/architecture.md): Python function -> lower -> IR -> infer -> typed IR ->
optimize -> codegen -> code object; plugins run a whole call graph through it
(``Plugin.run``), and ``splice.compile``/``splice.invoke`` build and call one code instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from splice._version import __version__  # (pyproject.toml reads it from there)
from splice.errors import (
    ArgumentTypeError,
    InterpreterError,
    InvalidatedError,
    PluginError,
    PluginSendError,
    SpliceError,
    UnsupportedError,
)
from splice.lazy import exports
from splice.runtime.exec_watch import watch as _watch_exec_sources

if TYPE_CHECKING:
    from splice.cache.instances import CodeInstance, invoke
    from splice.cache.world import invalidate, world
    from splice.infer import AbstractInterpreter
    from splice.ir.verifier import VerifyError
    from splice.plugin import Plugin, compile, compose, explain, intercept, precompile
    from splice.reflection import code_lowered, code_python, code_stage, code_typed

#: public name -> the module defining it, imported when the name is first read (PEP 562):
#: ``import splice`` loads neither the compiler nor inference, so a script that imports
#: it, or ``splice run``, starts fast; inference loads only for a typed stage
_LAZY = {
    "CodeInstance": "splice.cache.instances", "invoke": "splice.cache.instances",
    "invalidate": "splice.cache.world", "world": "splice.cache.world",
    "AbstractInterpreter": "splice.infer", "VerifyError": "splice.ir.verifier",
    **dict.fromkeys(("Plugin", "compile", "compose", "explain", "intercept", "precompile"),
                    "splice.plugin"),
    **dict.fromkeys(("code_lowered", "code_python", "code_stage", "code_typed"),
                    "splice.reflection"),
}


__getattr__, __dir__ = exports(globals(), _LAZY)

# functions made by exec/eval from now on have a source, so they run under plugins too
# (a dataclass's __init__ made between ``import splice`` and the first run)
_watch_exec_sources()

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
