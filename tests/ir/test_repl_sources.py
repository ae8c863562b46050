"""Reading back functions typed at the prompt of 3.11 and 3.12 (``splice.ir.repl_sources``).

The interactive sessions themselves are in tests/runtime/test_repl_source.py; here the
search is given histories directly, with code compiled as the interactive loop compiles a
statement (``<stdin>``, ``single`` mode), on every version (3.13 does not need it, but the
search is the same). A candidate is accepted only when it compiles to the function's very
code: a redefinition is matched to its own text, a history that lost a line, or a text that
differs only in a column, is refused, and a refused function runs natively with its reason.
"""

from __future__ import annotations
import __future__

import sys
import types
from typing import Any

import pytest

import splice
import splice.ir
from splice.compat import VERSION
from splice.errors import UnsupportedError
from splice.exec_sources import EXEC_SOURCES
from splice.ir import repl_sources
from splice.ir.repl_sources import NotRecorded, _find, typed_text
from splice.ir.source import find_source


def _typed(text: str, qualname: str, flags: int = 0) -> types.CodeType:
    """The code object ``qualname`` of ``text`` compiled as the loop compiles a statement."""
    pending = [compile(text, "<stdin>", "single", flags, dont_inherit=True)]
    while pending:
        code = pending.pop()
        if code.co_qualname == qualname:
            return code
        pending.extend(c for c in code.co_consts if type(c) is types.CodeType)
    raise LookupError(qualname)


def _lines(text: str) -> list[str]:
    """``text`` as readline's history keeps it: no empty line, no line equal to the one
    before it."""
    kept: list[str] = []
    for line in text.splitlines():
        if line and (not kept or kept[-1] != line):
            kept.append(line)
    return kept


FIRST = "def f(x):\n    return x + 1\n"
SECOND = "def f(x):\n    return x + 2\n"


def test_each_definition_gets_its_own_text() -> None:
    history = _lines("import math\n" + FIRST + "\nf(1)\n" + SECOND + "\nf(1)\n")
    assert _find(_typed(FIRST, "f"), history) == FIRST
    assert _find(_typed(SECOND, "f"), history) == SECOND


def test_a_method_and_a_closure() -> None:
    text = ("class A:\n    def m(self):\n        return 1\n"
            "    def n(self):\n        return 2\n")
    history = _lines("x = 1\n" + text + "\nA().m()\n")
    found = _find(_typed(text, "A.m"), history)
    assert found is not None and found.startswith("class A:\n    def m(self):")
    closure = ("def outer(k):\n    def inner(v):\n        return v + k\n"
               "    k = k * 2\n    return inner\n")
    history = _lines(closure + "\nouter(1)\n")
    assert _find(_typed(closure, "outer.<locals>.inner"), history) is not None
    # the same body as a function of its own (``k`` global, not a cell) is other code
    assert _find(_typed("def inner(v):\n    return v + k\n", "inner"), history) is None


def test_a_lost_line_is_refused() -> None:
    # readline does not add a line equal to the one before it: the text it gives back
    # runs ``x = x + x`` once, the function twice
    text = "def d():\n    x = [1]\n    x = x + x\n    x = x + x\n    return x\n"
    assert _find(_typed(text, "d"), _lines(text)) is None
    assert _find(_typed(text, "d"), text.splitlines()) == text
    # an empty line inside a string is not added either
    text = 'def s():\n    return """a\n\nb"""\n'
    assert _find(_typed(text, "s"), _lines(text)) is None


def test_columns_are_verified() -> None:
    typed = "g = lambda x: x + 1\n"
    assert _find(_typed(typed, "<lambda>"), ["g = lambda x:  x + 1"]) is None
    assert _find(_typed(typed, "<lambda>"), ["g = lambda x: x + 1"]) == typed
    both = "a, b = (lambda: y), (lambda: y)\n"
    first, second = (c for c in compile(both, "<stdin>", "single").co_consts
                     if type(c) is types.CodeType)
    assert first != second  # only their columns differ
    assert _find(first, [both.strip()]) == both
    assert _find(second, [both.strip()]) == both


def test_future_flags_are_the_codes() -> None:
    flag = __future__.annotations.compiler_flag
    text = "def a(x: int) -> int:\n    return x\n"
    with_flag, without = _typed(text, "a", flag), _typed(text, "a")
    assert _find(with_flag, _lines(text)) == text
    assert _find(without, _lines(text)) == text
    assert with_flag.co_flags != without.co_flags


class _History(types.ModuleType):
    """A stand-in for readline holding a history."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("readline")
        self.lines = lines

    def get_current_history_length(self) -> int:
        return len(self.lines)

    def get_history_item(self, index: int) -> str | None:
        return self.lines[index - 1] if 0 < index <= len(self.lines) else None


@pytest.fixture
def prompt(monkeypatch: pytest.MonkeyPatch) -> _History:
    """This process at a prompt of 3.11/3.12 at a terminal, with an empty history."""
    history = _History([])
    monkeypatch.setattr(repl_sources, "REPL_INPUT_IN_LINECACHE", False)
    monkeypatch.setattr(repl_sources, "_terminal", lambda: True)
    monkeypatch.setattr(sys, "ps1", ">>> ", raising=False)
    monkeypatch.setitem(sys.modules, "readline", history)
    return history


def _function(text: str, qualname: str, namespace: dict[str, Any]) -> Any:
    return types.FunctionType(_typed(text, qualname), namespace)


class Typed(splice.Plugin):
    def typed(self, ir: Any) -> None:
        return None


def test_a_function_typed_at_the_prompt_runs_under_plugins(prompt: _History) -> None:
    text = "def f(x):\n    return [x] * 2\n"
    prompt.lines += _lines(text)
    fn = _function(text, "f", {"__name__": "__main__"})
    assert find_source(fn).node.name == "f"
    assert splice.ir.roundtrip(fn)(3) == [3, 3]
    for plugin in (splice.Plugin(), Typed()):
        assert plugin.run(fn, 3) == [3, 3]
        assert [r.entered for r in splice.explain(plugin, fn)] == [True]
    # two lambdas of one statement: each runs its own body
    pair = 'a, b = (lambda: "first"), (lambda: "second")\n'
    prompt.lines += _lines(pair)
    namespace = {"__name__": "__main__"}
    exec(compile(pair, "<stdin>", "single"), namespace)  # noqa: S102
    for name, expected in (("a", "first"), ("b", "second")):
        EXEC_SOURCES.discard(namespace[name].__code__)  # read back from the history
        plugin = splice.Plugin()
        assert plugin.run(namespace[name]) == expected
        assert [r.entered for r in splice.explain(plugin, namespace[name])] == [True]


def test_refusals_say_why(prompt: _History, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "def d():\n    x = [1]\n    x = x + x\n    x = x + x\n    return x\n"
    prompt.lines += _lines(text)
    fn = _function(text, "d", {"__name__": "__main__"})
    with pytest.raises(UnsupportedError, match="no text in readline's history compiles"):
        find_source(fn)
    plugin = splice.Plugin()
    assert plugin.run(fn) == [1, 1, 1, 1]
    assert [r.entered for r in splice.explain(plugin, fn)] == [False]
    # remembered until the history changes: then searched again
    with pytest.raises(NotRecorded):
        typed_text(fn.__code__)
    prompt.lines += text.splitlines()  # every line there (as read from a file)
    assert typed_text(fn.__code__) == text

    version = f"{VERSION[0]}.{VERSION[1]}"
    monkeypatch.delitem(sys.modules, "readline")
    with pytest.raises(NotRecorded, match=f"not recorded on Python {version}.*readline"):
        typed_text(_typed(text, "d"))
    monkeypatch.setattr(repl_sources, "_terminal", lambda: False)
    monkeypatch.setattr(repl_sources, "_redirected_file", lambda: None)
    with pytest.raises(NotRecorded, match=f"not recorded on Python {version}.*a pipe"):
        typed_text(_typed(text, "d"))
