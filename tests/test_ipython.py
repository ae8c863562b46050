"""The notebook magics (``%load_ext splice``, splice/integrations/ipython.py), run by
IPython's own ``InteractiveShell``: functions defined in cells work under every kind of
plugin, listings render as HTML, cells run under a plugin or a Tracer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

CELL = """
import math

def leaf(x):
    return x + 1

class Box:
    def __init__(self, value):
        self.value = value

    def grown(self):
        return Box(leaf(self.value))

def main(n):
    return [Box(i).grown().value for i in range(n)] + [math.sin(0.5)]
"""


@pytest.fixture(scope="module")
def shell() -> Any:
    shell = InteractiveShell.instance()
    assert shell.run_cell("%load_ext splice").success
    assert shell.run_cell(CELL).success
    return shell


def _run(shell: Any, cell: str) -> Any:
    result = shell.run_cell(cell)
    assert result.success, result.error_in_exec or result.error_before_exec
    return result.result


def test_functions_of_cells_run_under_every_kind_of_plugin(shell: Any) -> None:
    native = _run(shell, "main(4)")
    _run(shell, """
import splice
from splice.plugins import FastMath, Patch, Tracer

class Hooked(splice.Plugin):
    seen = []
    def prehook(self, fn, *args, **kwargs):
        Hooked.seen.append(getattr(fn, "__name__", "?"))

def fast_sin(x):
    return math.sin(x)
""")
    for plugin in ("splice.Plugin()", "Hooked()", "Tracer()",
                   "FastMath({math.sin: fast_sin})", "Patch({leaf: lambda x: x + 1})"):
        assert _run(shell, f"({plugin}).run(main, 4)") == native, plugin
    assert "leaf" in shell.user_ns["Hooked"].seen
    _run(shell, "tracer = Tracer()\ntracer.run(main, 2)")
    entered = _run(shell, "[r.name for r in splice.explain(tracer) if r.entered]")
    assert any(name.endswith(".leaf") for name in entered)


def test_splice_show_renders_text_and_html(shell: Any) -> None:
    shown = _run(shell, "%splice_show main")
    assert "lowered IR" in str(shown) and "def main(n)" in str(shown)
    html = shown._repr_html_()
    assert html.startswith("<h4>") and "&lt;" not in html[:4] and "<pre>" in html
    typed = _run(shell, '%splice_show leaf --stage typed --types "int"')
    assert "typed IR" in str(typed) and "int" in str(typed)
    assert "Python" in str(_run(shell, "%splice_show Box.grown --stage python"))


def test_splice_run_runs_the_cell_under_a_plugin(shell: Any,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    value = _run(shell, "%%splice_run -p splice.plugins:Tracer\nfound = main(3)\nfound[:2]")
    assert value == shell.user_ns["found"][:2] == _run(shell, "main(3)")[:2]
    out = capsys.readouterr().out
    assert "main" in out and "leaf" in out, "the Tracer's report is printed"
    assert _run(shell, "%%splice_run\nmain(2)") == _run(shell, "main(2)")


def test_splice_trace_shows_a_table_and_writes_the_trace(
        shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "trace.json"
    value = _run(shell, f"%%splice_trace --top 5 -o {output}\nmain(5)")
    assert value == _run(shell, "main(5)")
    out = capsys.readouterr().out
    assert "ncalls" in out and "(leaf)" in out and str(output) in out
    events = json.loads(output.read_text())
    names = {e.get("name") for e in events.get("traceEvents", events)
             if isinstance(e, dict)}
    assert "main" in names and "leaf" in names


def test_bad_usage_is_a_usage_error(shell: Any) -> None:
    for cell in ("%%splice_run -p no.such:Plugin\nmain(1)", "%splice_show main --stage x",
                 "%%splice_trace --sort nothing\nmain(1)"):
        result = shell.run_cell(cell)
        assert not result.success
        error = result.error_in_exec or result.error_before_exec
        assert type(error).__name__ == "UsageError", cell
