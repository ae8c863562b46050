"""The source text of code made from strings: ``exec``, ``eval``, ``compile`` and ``-c``.

Functions defined by ``exec``/``eval`` have no file and no ``linecache`` entry, yet the
standard library makes many that way: a dataclass's ``__init__``, ``__eq__`` and
``__repr__``, a namedtuple's ``__new__``, functions of ``python -c`` programs. CPython
raises an audit event ``compile`` with the text (and file name) when it compiles a string,
then ``exec`` with the code object when it runs one. splice watches both (an audit hook in
C, splice/runtime/_hooks.c, installed once when splice is imported: audit hooks cannot be
removed) and records, for each code object run right after its text was compiled under the
same file name, that text for it and for every code object nested in it.

A record is a claim, not a proof: code compiled by ``compile()`` and run later, after
another string was compiled, is paired with the wrong text. That is safe because
``splice.ir.source`` matches a code object to its exact definition in the text (name,
first line, parameters and the column spans of its instructions) or refuses it: a wrong
text refuses the function (it runs natively, as it did before), it never picks another
function's body. Code compiled before splice was imported has no record (its functions
run natively), except a ``python -c`` program, whose text is in ``sys.orig_argv``.

Modules imported from source (not from a ``.pyc``) after splice are compiled the same way,
so their text is recorded too: a function of a module whose file was edited since it was
imported is then lowered from the text it was compiled from, not from the file as it is now.
The record wins over ``linecache`` for that reason, and because a pseudo-file name such as
``<string>`` is shared by many texts.

Records are keyed by the identity of code objects and dropped when they die (equal code
objects from different texts stay apart).

Code that arrives pickled *by value* has lost its file: ``cloudpickle`` (which Dask uses for
functions of ``__main__``, of notebook cells and of modules registered with
``register_pickle_by_value``) names every code object it rebuilds ``<dynamic-code>``. The
process that sends such code ships the texts it may come from (``shipped``); a code object
named ``<dynamic-code>`` is then matched against each of them, with the same exact matching
(a text it does not come from is refused).
"""

from __future__ import annotations

import sys
import threading
import types
import weakref
from collections.abc import Callable

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["BY_VALUE_FILENAME", "ExecSources", "EXEC_SOURCES"]


class ExecSources:
    """Code object -> the text it was compiled from, for code made from strings."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[weakref.ref[types.CodeType], str]] = {}
        self._lock = threading.Lock()
        #: texts another process sent with code pickled by value (their own order kept,
        #: each once)
        self._shipped: dict[str, None] = {}

    def ship(self, texts: tuple[str, ...]) -> None:
        """``texts`` may hold the definitions of code objects named
        :data:`BY_VALUE_FILENAME` (another process pickled them by value)."""
        with self._lock:
            for text in texts:
                self._shipped.setdefault(text)

    def shipped(self) -> list[str]:
        """The texts :meth:`ship` received, oldest first."""
        return list(self._shipped)

    def record(self, code: types.CodeType, source: str | bytes) -> None:
        """``code`` (run by ``exec``/``eval``) was compiled from ``source``: remember it for
        ``code`` and the code objects nested in it."""
        if isinstance(source, bytes):
            try:
                text = source.decode("utf-8")
            except UnicodeDecodeError:
                return  # a declared other encoding: positions would not match anyway
        else:
            text = source
        pending = [code]
        with self._lock:
            while pending:
                current = pending.pop()
                key = id(current)
                self._texts[key] = (weakref.ref(current, self._forget(key)), text)
                pending.extend(c for c in current.co_consts if type(c) is types.CodeType)

    def _forget(self, key: int) -> Callable[[weakref.ref[types.CodeType]], None]:
        texts = self._texts

        def forget(ref: weakref.ref[types.CodeType]) -> None:
            item = texts.get(key)
            if item is not None and item[0] is ref:
                del texts[key]
        return forget

    def text_of(self, code: types.CodeType) -> str | None:
        """The text ``code`` was compiled from, if it was recorded."""
        item = self._texts.get(id(code))
        if item is not None and item[0]() is code:
            return item[1]
        return None

    def discard(self, code: types.CodeType) -> None:
        """Forget the text of ``code`` (it then has the source of its file, if any)."""
        with self._lock:
            item = self._texts.get(id(code))
            if item is not None and item[0]() is code:
                del self._texts[id(code)]

    def __len__(self) -> int:
        return len(self._texts)


def command_text() -> str | None:
    """The program of ``python -c``, from the interpreter's own command line."""
    argv: list[str] = getattr(sys, "orig_argv", None) or []
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "-c":
            return argv[index + 1] if index + 1 < len(argv) else None
        if arg.startswith("-c"):
            return arg[2:]
        if arg in ("-X", "-W"):  # options whose value is the next argument
            index += 2
            continue
        if not arg.startswith("-") or arg.startswith("-m") or arg == "-":
            return None  # a script, a module or stdin: not a -c program
        index += 1
    return None


#: the file name ``cloudpickle`` gives every code object it pickles by value
BY_VALUE_FILENAME = "<dynamic-code>"

#: the records of this process (audit events are process-wide, as is this registry)
EXEC_SOURCES = ExecSources()
