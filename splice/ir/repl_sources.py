"""The source text of functions typed at the interactive prompt of CPython 3.11 and 3.12,
and of functions of a program read from stdin (``python < prog.py``, any version).

The interactive loop of 3.11 and 3.12 (``PyRun_InteractiveLoop``, in C) parses each
statement from its input and compiles it as ``<stdin>`` in ``single`` mode, with line
numbers starting at 1 for every statement: it raises no ``compile`` audit event with the
text (``splice.exec_sources`` never sees it) and puts nothing in ``linecache``. 3.13 does
(``splice.compat.REPL_INPUT_IN_LINECACHE``), so there the general lookup finds it.

What is left of the input is readline's history. When stdin and stdout are terminals and
``readline`` is loaded (``site`` loads it for the prompt), the loop reads each line through
readline, which adds it to the history, with two losses: an empty line is not added, nor
a line equal to the one before it (in this session or the last line of the history file
loaded at start). A statement's text is so a run of consecutive history items, or lost.
Otherwise the loop reads stdin with ``fgets`` and nothing keeps the lines, except when
stdin is a regular file (``python -i < session.py``): it is read again from its start with
``pread`` (the loop's position is not moved), every line there.

**Candidates are verified, never guessed.** For a code object of ``<stdin>``, whose line
numbers count from its statement's first line, every run of lines that starts at column 0
(or with a comment) and covers the code's last line is a candidate, newest first. Each is compiled
as the loop compiled its statement (``<stdin>``, ``single`` mode, the code's future flags,
nothing inherited) and accepted only if one of the code objects it makes has the
function's name, qualified name and first line and is equal to its code (``==`` on code
objects: flags, bytecode, names, constants and nested code, positions with columns, and
exception table; ``types.coroutine``'s ``CO_ITERABLE_COROUTINE`` set by ``code.replace``
aside, as in ``splice.ir.source``). A text that compiles to equal code runs as the
function does, whichever statement it really came from (a loss after the function's last
line in an enclosing function's body changes nothing the function runs); a history that
lost a line of the function or one before it in its statement (an empty line inside a
string or brackets, a line repeating the one before) gives code whose positions or
constants differ, and the function is refused (it runs natively). The accepted text is
recorded in ``splice.exec_sources`` for the code and the code nested in it, and then goes
through the same matching and verification as any source (``splice.ir.source``).

A run is extended line by line while the compiler reports only *incomplete input*
(``PyCF_ALLOW_INCOMPLETE_INPUT``, what ``codeop`` asks of it); another error ends it:
lines after a complete statement, which the loop compiled apart, only make more errors.
The search is bounded (``_MAX_COMPILES`` compiles a function, newest first); a refusal is
remembered until the history changes.

When there are no lines to read, the function runs natively with the exact reason: stdin
or stdout is not a terminal and stdin is a pipe (read once, by the loop), or ``readline``
is not loaded (``python -I``, a build without it: the interpreter loads it for a prompt
at a terminal otherwise, ``-S`` too).

**A program read from stdin** (``python < prog.py``, ``python - < prog.py``; no prompt, so
no ``sys.ps1``) is compiled by the interpreter as one module named ``<stdin>`` (``exec``
mode, no flags inherited) and leaves no text anywhere either. When stdin is a regular file
it is read again from its start with ``pread``, decoded as the interpreter decodes a source
file (its coding declaration, else UTF-8), compiled the same way, and accepted only if a
code object it makes is the function's equal, as above. A program piped in
(``cat prog.py | python``) has no text to read back: its functions run natively, saying so.
"""

from __future__ import annotations
import __future__

import os
import stat
import sys
import types
import weakref
from collections.abc import Callable
from importlib.util import decode_source

from splice.compat import REPL_INPUT_IN_LINECACHE, VERSION
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["NotRecorded", "PROMPT_FILENAME", "at_prompt", "from_stdin_script", "script_text",
           "typed_text"]

#: the file name the interactive loop of 3.11 and 3.12 compiles every statement under
PROMPT_FILENAME = "<stdin>"

#: ``codeop``'s flag: an unfinished statement raises ``SyntaxError("incomplete input")``
_ALLOW_INCOMPLETE_INPUT = 0x4000
_INCOMPLETE = "incomplete input"
#: ``types.coroutine`` sets it on a generator function's code (``code.replace``)
_CO_ITERABLE_COROUTINE = 0x100
#: compiles tried for one function before it is refused
_MAX_COMPILES = 5000
#: lines a candidate statement may run on after the code's last line
_MAX_TAIL = 400
#: the largest redirected stdin file searched (bytes)
_MAX_FILE = 1 << 22

_VERSION = f"{VERSION[0]}.{VERSION[1]}"

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

#: code objects refused, by id: (a reference to the code, the history's length and last
#: item then)
_refused: dict[int, tuple[weakref.ref[types.CodeType], tuple[int, str]]] = {}


def at_prompt(code: types.CodeType) -> bool:
    """Whether ``code`` was typed at the prompt of an interactive loop that keeps no text
    of its input (3.11, 3.12): compiled as ``<stdin>`` while the loop runs (it sets
    ``sys.ps1``; a program read from stdin without ``-i`` has no prompt)."""
    return (not REPL_INPUT_IN_LINECACHE and code.co_filename == PROMPT_FILENAME
            and hasattr(sys, "ps1"))


def from_stdin_script(code: types.CodeType) -> bool:
    """Whether ``code`` is of a program the interpreter read from stdin with no prompt
    running (``python < prog.py``): compiled as ``<stdin>``, no ``sys.ps1``."""
    return code.co_filename == PROMPT_FILENAME and not hasattr(sys, "ps1")


#: the last program read back from stdin: ((device, inode, size, mtime), text, its code)
_script: tuple[tuple[int, int, int, int], str, types.CodeType | None] | None = None


def script_text(code: types.CodeType) -> str:
    """The text of the program read from stdin that ``code`` is part of
    (``from_stdin_script(code)``), read back from the file stdin is redirected from and
    verified to compile to ``code``; ``NotRecorded`` when there is none."""
    global _script
    found = _redirected_bytes()
    if found is None:
        raise NotRecorded(
            "it is part of a program read from stdin, and stdin is not a regular file to "
            "read again (a pipe is read once), so its exact source is not known: run the "
            "program from a file (python prog.py) or redirect stdin from it "
            "(python < prog.py)")
    state, data = found
    if _script is None or _script[0] != state:
        try:
            text = decode_source(data)
            made: types.CodeType | None = compile(text, PROMPT_FILENAME, "exec",
                                                  dont_inherit=True)
        except (SyntaxError, UnicodeDecodeError, ValueError, OverflowError, MemoryError,
                RecursionError):
            text, made = "", None
        _script = (state, text, made)
    _, text, made = _script
    if made is not None and _holds(made, code):
        return text
    raise NotRecorded(
        "it is part of a program read from stdin, and the file stdin is redirected from no "
        "longer compiles to its code (it changed since it was read?), so its exact source is "
        "not known")


class NotRecorded(Exception):
    """The text of a function typed at the prompt cannot be known; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def typed_text(code: types.CodeType) -> str:
    """The text of the statement ``code`` was typed in (``at_prompt(code)``), read back
    from readline's history or the file stdin is redirected from, and verified to compile
    to ``code``; ``NotRecorded`` when there is none."""
    found = _history()
    if found is None:
        raise NotRecorded(_why_no_history())
    history, from_file = found
    state = (len(history), history[-1] if history else "")
    known = _refused.get(id(code))
    if known is None or known[0]() is not code or known[1] != state:
        text = _find(code, history)
        if text is not None:
            _refused.pop(id(code), None)
            return text
        _refused[id(code)] = (weakref.ref(code, _forget(id(code))), state)
    if from_file:
        raise NotRecorded(
            "it was run at the interactive prompt from the file stdin is redirected from, "
            "and no text in that file compiles to its code (the file changed since it was "
            "read?), so its exact source is not known")
    raise NotRecorded(
        "it was typed at the interactive prompt, and no text in readline's history "
        "compiles to its code (the history leaves out empty lines and a line equal to the "
        "one before it, and may have been cleared), so its exact source is not known")


def _why_no_history() -> str:
    head = (f"it was typed at the interactive prompt: REPL input is not recorded on Python "
            f"{_VERSION} (the interactive loop raises no compile audit event and keeps no "
            f"text in linecache; 3.13 does)")
    if not _terminal():
        return (f"{head}; stdin or stdout is not a terminal, so no line went through "
                f"readline's history, and stdin is not a regular file to read again (a pipe "
                f"is read once)")
    return (f"{head}; readline, whose history would hold the lines, is not loaded "
            f"(python -I, or a build without it)")


def _terminal() -> bool:
    """Whether the interactive loop reads its lines through readline: stdin and stdout
    are terminals (``PyOS_Readline`` tests the file descriptors)."""
    try:
        return os.isatty(0) and os.isatty(1)
    except OSError:
        return False


def _history() -> tuple[list[str], bool] | None:
    """The lines the loop may have read, oldest first, and whether they are those of the
    file stdin is redirected from (else readline's history); None when neither holds
    them."""
    if not _terminal():
        lines = _redirected_file()
        return None if lines is None else (lines, True)
    readline = sys.modules.get("readline")
    if readline is None:
        return None
    try:
        length = readline.get_current_history_length()
        return [readline.get_history_item(i) or "" for i in range(1, length + 1)], False
    except Exception:  # noqa: BLE001 - a stand-in module without these functions
        return None


def _redirected_bytes() -> tuple[tuple[int, int, int, int], bytes] | None:
    """What the regular file stdin is redirected from holds, read again from its start
    without moving stdin's position, with the file's identity and state (device, inode,
    size, modification time); None for a pipe, a device, or a file too large to search."""
    try:
        status = os.fstat(0)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_FILE:
            return None
        data = os.pread(0, status.st_size, 0)
    except (OSError, AttributeError):  # closed, or no pread
        return None
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns), data


def _redirected_file() -> list[str] | None:
    """The lines of the regular file stdin is redirected from (``python -i < file``), as
    ``_redirected_bytes`` reads them."""
    found = _redirected_bytes()
    if found is None:
        return None
    _, data = found
    encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
    try:
        return data.decode(encoding, "surrogateescape").splitlines()
    except LookupError:
        return None


def _forget(key: int) -> Callable[[weakref.ref[types.CodeType]], None]:
    def forget(ref: weakref.ref[types.CodeType]) -> None:
        item = _refused.get(key)
        if item is not None and item[0] is ref:
            del _refused[key]
    return forget


def _find(code: types.CodeType, lines: list[str]) -> str | None:
    """The newest run of ``lines`` that compiles as one interactive statement to a code
    object equal to ``code`` (see the module docstring), or None."""
    last, needs = _extent(code)
    sizes: dict[int, int] = {}

    def size(index: int) -> int:
        found = sizes.get(index)
        if found is None:
            found = sizes[index] = len(lines[index].encode("utf-8", "surrogateescape"))
        return found

    flags = (code.co_flags & _FUTURE_FLAGS) | _ALLOW_INCOMPLETE_INPUT
    budget = _MAX_COMPILES
    for start in range(len(lines) - last, -1, -1):
        head = lines[start]
        if not head or (head[0] in " \t\f" and not head.lstrip().startswith("#")):
            continue  # a statement starts at column 0 (or with a comment line)
        # each line of the code's positions must be long enough for its columns
        if any(size(start + line - 1) < column for line, column in needs):
            continue
        for end in range(start + last - 1, min(len(lines), start + last + _MAX_TAIL)):
            if budget <= 0:
                return None
            budget -= 1
            text = "\n".join(lines[start:end + 1]) + "\n"
            try:
                made = compile(text, PROMPT_FILENAME, "single", flags, dont_inherit=True)
            except SyntaxError as exc:
                if exc.msg == _INCOMPLETE:
                    continue
                break  # the statement ended before this line
            except (ValueError, OverflowError, MemoryError, RecursionError):
                break
            if _holds(made, code):
                return text
    return None


def _extent(code: types.CodeType) -> tuple[int, list[tuple[int, int]]]:
    """The last line of ``code`` and its nested code (relative to the statement), and for
    each line a column its text must reach (in UTF-8 bytes, as positions count)."""
    last = code.co_firstlineno
    reach: dict[int, int] = {}
    pending = [code]
    while pending:
        current = pending.pop()
        last = max(last, current.co_firstlineno)
        for line, end_line, column, end_column in current.co_positions():
            if line is None or end_line is None:
                continue
            last = max(last, line, end_line)
            if column is not None:
                reach[line] = max(reach.get(line, 0), column)
            if end_column is not None:
                reach[end_line] = max(reach.get(end_line, 0), end_column)
        pending.extend(c for c in current.co_consts if type(c) is types.CodeType)
    return last, [(line, column) for line, column in reach.items() if line >= 1]


def _holds(made: types.CodeType, code: types.CodeType) -> bool:
    """Whether ``made`` or a code object nested in it is ``code``'s equal, with its name,
    qualified name and first line."""
    key = (code.co_name, code.co_qualname, code.co_firstlineno)
    pending = [made]
    while pending:
        current = pending.pop()
        if (current.co_name, current.co_qualname, current.co_firstlineno) == key:
            if current.co_flags ^ code.co_flags == _CO_ITERABLE_COROUTINE:
                current = current.replace(co_flags=code.co_flags)
            if current == code:
                return True
        pending.extend(c for c in current.co_consts if type(c) is types.CodeType)
    return False
