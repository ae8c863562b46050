"""Functions typed at the plain interactive interpreter run under plugins (issue 14, 4).

Each test starts this interpreter's own interactive loop in a child process and types a
session into it: under a pseudo-terminal (as a user at a terminal: lines go through
readline), from a pipe, and from a regular file. At the prompt the session defines
functions (a ``def``, a lambda, a method, a closure, a caller of another, a redefinition,
one under ``from __future__ import annotations``) and runs each natively and under the
identity, hooked, ``Tracer`` and typed plugins (``tests/runtime/repl_session.py``, which
writes what happened to a file). Results must equal the native ones everywhere; each
function must be entered under every plugin where its text is known, and run natively with
the exact reason where it is not:

* 3.13 keeps every statement in ``linecache``: everything is entered, whatever stdin is.
* 3.11 and 3.12 (``splice.ir.repl_sources``): at a terminal, the statement is read back
  from readline's history and verified; two functions whose statement lost a line there
  (readline does not add an empty line, nor a line repeating the one before) are refused,
  not matched to the text as the history has it, which would run another body. From a
  regular file, the file is read again: everything is entered. From a pipe, or at a
  terminal without readline (``python -I``), nothing is kept: everything runs natively,
  saying that REPL input is not recorded on this Python, and why.

3.13's new REPL (``_pyrepl``, at a capable terminal) is typed into too. Every session has a
time limit (``TIMEOUT``): a child that hangs is killed and the test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from splice.compat import REPL_INPUT_IN_LINECACHE, VERSION

ROOT = Path(__file__).resolve().parents[2]

#: the session typed at the prompt (each check's label names what it covers)
SESSION = '''\
from tests.runtime.repl_session import check
def f(x):
    return x + 1

check("def", f, 1)
g = lambda x: [x] * 2
check("lambda", g, 3)
class A:
    def m(self, y):
        return y - 1

check("method", A().m, 5)
def outer(k):
    def inner(v):
        return v + k
    return inner

check("closure", outer(10), 1)
def h(x):
    return f(x) * 10

check("caller", h, 2, callees=[f])
old = f
def f(x):
    return x + 2

check("redefined", f, 1)
check("first definition", old, 1)
def repeated():
    x = [1]
    x = x + x
    x = x + x
    return x

check("repeated line", repeated)
def blank():
    return """a

b"""

check("empty line in a string", blank)
from __future__ import annotations
def annotated(x: int) -> int:
    return x * 3

check("future flags", annotated, 2)
'''

LABELS = ["def", "lambda", "method", "closure", "caller", "redefined", "first definition",
          "repeated line", "empty line in a string", "future flags"]

#: what a lossy readline history cannot give back (3.11, 3.12 at a terminal)
LOSSY = {"repeated line", "empty line in a string"}

#: the natively computed results, as ``repr``
NATIVE = {"def": "2", "lambda": "[3, 3]", "method": "4", "closure": "11", "caller": "30",
          "redefined": "3", "first definition": "2", "repeated line": "[1, 1, 1, 1]",
          "empty line in a string": "'a\\n\\nb'", "future flags": "6"}

_NOT_IN_HISTORY = "no text in readline's history compiles to its code"
_NOT_RECORDED = f"REPL input is not recorded on Python {VERSION[0]}.{VERSION[1]}"

#: a whole session's limit (each check compiles its function under four plugins)
TIMEOUT = 240


def _environment(tmp_path: Path, out: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1", SPLICE_REPL_OUT=str(out),
        # no history file of the user's, no readline configuration, no colours
        HOME=str(tmp_path), INPUTRC=os.devnull, TERM="dumb", NO_COLOR="1",
        # 3.13's new REPL needs a capable terminal; its basic one is the C loop
        PYTHON_BASIC_REPL="1")
    return env


def _reports(out: Path) -> dict[str, Any]:
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    return {report["label"]: report for report in map(json.loads, lines)}


def _written(out: Path) -> int:
    """How many reports are written whole (a line being written has no newline yet)."""
    return out.read_bytes().count(b"\n") if out.exists() else 0


@contextlib.contextmanager
def _spawned_on_terminal(command: list[str], env: dict[str, str]
                         ) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """Start ``command`` in a session of its own with a new pseudo-terminal as its stdin,
    stdout and stderr; yield the child and the terminal's master end. If the block raises,
    the child is killed (and waited for); the master end is closed on leaving."""
    master, slave = os.openpty()
    try:
        child = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env,
                                 cwd=ROOT, close_fds=True, start_new_session=True)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    try:
        yield child, master
    except BaseException:
        child.kill()
        child.wait()
        raise
    finally:
        os.close(master)


def _type_at_terminal(command: list[str], env: dict[str, str], lines: list[str]) -> str:
    """Run ``command`` on a new pseudo-terminal and type ``lines``, each after the prompt
    that asks for it (``>>> `` or ``... ``); return what the terminal showed."""
    with _spawned_on_terminal(command, env) as (child, master):
        shown = b""
        deadline = time.monotonic() + TIMEOUT

        def read(until_prompts: int | None) -> None:
            nonlocal shown
            while until_prompts is None or \
                    shown.count(b">>> ") + shown.count(b"... ") < until_prompts:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(shown.decode(errors="replace"))
                ready, _, _ = select.select([master], [], [], min(left, 1.0))
                if not ready:
                    if child.poll() is not None and until_prompts is not None:
                        raise AssertionError("the interpreter exited:\n" +
                                             shown.decode(errors="replace"))
                    continue
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    return
                shown += chunk

        for typed, line in enumerate([*lines, "exit()"]):
            read(typed + 1)  # the first prompt, then one after each line typed
            os.write(master, line.encode() + b"\n")
        read(None)
        child.wait(timeout=max(1.0, deadline - time.monotonic()))
    return shown.decode(errors="replace")


#: the session for 3.13's new REPL, which indents a block's lines itself and ends the
#: block at an empty line
NEW_REPL_SESSION = [
    "from tests.runtime.repl_session import check",
    "def f(x):", "return x + 1", "",
    'check("def", f, 1)',
    "g = lambda x: [x] * 2",
    'check("lambda", g, 3)',
    "class A:", "def m(self, y):", "return y - 1", "",
    'check("method", A().m, 5)',
    "def h(x):", "return f(x) * 10", "",
    'check("caller", h, 2, callees=[f])',
]


def _type_at_new_repl(command: list[str], env: dict[str, str], lines: list[str],
                      out: Path) -> str:
    """Type ``lines`` into 3.13's new REPL on a pseudo-terminal. It draws its prompts with
    escape sequences, so a line is typed when the terminal has been quiet for a moment,
    and the line after a ``check`` once its report is written."""
    with _spawned_on_terminal(command, env) as (child, master):
        shown = b""
        deadline = time.monotonic() + TIMEOUT

        def read(quiet: float, reports: int = 0) -> None:
            nonlocal shown
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(shown.decode(errors="replace"))
                ready, _, _ = select.select([master], [], [], min(left, quiet))
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        return
                    if not chunk:
                        return
                    shown += chunk
                elif _written(out) >= reports or child.poll() is not None:
                    return

        read(1.0)
        checks = 0
        for line in [*lines, "exit()"]:
            os.write(master, line.encode() + b"\r")
            checks += line.startswith("check(")
            read(0.3, checks)
        child.wait(timeout=max(1.0, deadline - time.monotonic()))
    return shown.decode(errors="replace")


def _check(reports: dict[str, Any], shown: str, refused: set[str], reason: str) -> None:
    for label, report in reports.items():
        assert report["native"] == NATIVE[label], (label, report)
        for mode, run in report["runs"].items():
            assert run["result"] == report["native"], (label, mode, run)
            for index, (name, reached) in enumerate(run["reached"].items()):
                if label in refused:
                    # a callee of a function run natively is not reached at all
                    assert not reached["entered"], (label, mode, name, reached)
                    assert index or any(reason in r for r in reached["reasons"]), (
                        label, mode, name, reached)
                elif mode == "typed" and index:
                    # typed code calls a callee's code instance directly: it is compiled
                    # (its typed IR seen) but not listed by splice.explain
                    assert name in run["typed"], (label, mode, name, run)
                else:
                    assert reached["entered"], (label, mode, name, reached)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals")
def test_typed_at_a_terminal(tmp_path: Path) -> None:
    """At a terminal: entered under every plugin, results as native; on 3.11 and 3.12 a
    statement the history lost a line of is refused, not matched to what is left."""
    out = tmp_path / "reports.jsonl"
    shown = _type_at_terminal([sys.executable, "-q"], _environment(tmp_path, out),
                              SESSION.splitlines())
    refused = set() if REPL_INPUT_IN_LINECACHE else LOSSY
    reports = _reports(out)
    assert sorted(reports) == sorted(LABELS), shown
    _check(reports, shown, refused, _NOT_IN_HISTORY)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals")
def test_typed_at_a_terminal_without_readline(tmp_path: Path) -> None:
    """``python -I`` loads no readline: on 3.11 and 3.12 nothing keeps the lines, and the
    function runs natively saying so; 3.13 keeps them in linecache."""
    out = tmp_path / "reports.jsonl"
    lines = ["import sys", f"sys.path.insert(0, {str(ROOT)!r})", *SESSION.splitlines()[:5]]
    shown = _type_at_terminal([sys.executable, "-I", "-q"], _environment(tmp_path, out),
                              lines)
    reports = _reports(out)
    assert sorted(reports) == ["def"], shown
    refused = set() if REPL_INPUT_IN_LINECACHE else {"def"}
    _check(reports, shown, refused, f"{_NOT_RECORDED} (the interactive loop")
    assert REPL_INPUT_IN_LINECACHE or "readline, whose history would hold the lines, is " \
        "not loaded" in reports["def"]["runs"]["identity"]["reached"]["f"]["reasons"][0]


def test_piped_into_the_prompt(tmp_path: Path) -> None:
    """From a pipe (``... | python -i``): on 3.11 and 3.12 nothing of the input is kept,
    so every function runs natively with the reason; on 3.13 they are entered."""
    out = tmp_path / "reports.jsonl"
    done = subprocess.run([sys.executable, "-i", "-q"], input=SESSION, text=True,
                          capture_output=True, env=_environment(tmp_path, out), cwd=ROOT,
                          timeout=TIMEOUT)
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    refused = set() if REPL_INPUT_IN_LINECACHE else set(LABELS)
    reports = _reports(out)
    assert sorted(reports) == sorted(LABELS), shown
    _check(reports, shown, refused, _NOT_RECORDED)


def test_redirected_from_a_file(tmp_path: Path) -> None:
    """From a regular file (``python -i < session.py``): the file is read again and
    verified, so every function is entered, on every version."""
    out = tmp_path / "reports.jsonl"
    session = tmp_path / "session.py"
    session.write_text(SESSION, encoding="utf-8")
    with session.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-i", "-q"], stdin=stdin, text=True,
                              capture_output=True, env=_environment(tmp_path, out), cwd=ROOT,
                              timeout=TIMEOUT)
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    reports = _reports(out)
    assert sorted(reports) == sorted(LABELS), shown
    _check(reports, shown, set(), "")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals")
@pytest.mark.skipif(not REPL_INPUT_IN_LINECACHE, reason="the new REPL is 3.13's")
def test_typed_at_the_new_repl(tmp_path: Path) -> None:
    """3.13's new REPL (``_pyrepl``) keeps each input in linecache as
    ``<python-input-N>``: entered under every plugin, results as native."""
    out = tmp_path / "reports.jsonl"
    env = {**_environment(tmp_path, out), "TERM": "xterm"}
    del env["PYTHON_BASIC_REPL"]
    shown = _type_at_new_repl([sys.executable, "-q"], env, NEW_REPL_SESSION, out)
    if "can't use pyrepl" in shown:
        pytest.skip("this 3.13 cannot run its new REPL here (no curses or terminfo)")
    reports = _reports(out)
    assert sorted(reports) == ["caller", "def", "lambda", "method"], shown
    _check(reports, shown, set(), "")
