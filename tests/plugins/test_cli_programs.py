"""``splice trace`` and ``splice run``: programs (scripts, ``-m`` modules) run under a plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from splice import program as splice_program
from splice.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIB = ROOT / "examples" / "fib.py"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Programs import modules of their folder; forget them after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    main_module = sys.modules.get("__main__")
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]
    assert sys.modules.get("__main__") is main_module


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


# --- splice trace ----------------------------------------------------------------------------


def test_trace_prints_the_tree_after_the_program() -> None:
    result = invoke("trace", str(FIB), "6")
    assert result.exit_code == 0, result.output
    assert result.stdout == "(8, 8, 1, None)\n"
    lines = result.stderr.splitlines()
    assert lines[0].startswith("MainThread (thread ")
    assert lines[1].split()[2] == "main"
    assert any(line.split()[2:4] == ["fib", "×3"] for line in lines[2:]), result.stderr
    assert any("Memo.fib" in line for line in lines)
    assert any("parse" in line and "raised" not in line for line in lines)


def test_trace_writes_chrome_json(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    result = invoke("trace", "-o", str(out), str(FIB), "5")
    assert result.exit_code == 0, result.output
    assert result.stdout == "(5, 5, 0, None)\n"
    assert f"written to {out}" in result.stderr
    assert "MainThread" not in result.stderr  # no tree unless --tree
    data = json.loads(out.read_text())
    complete = [e for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] != "splice"]
    compiles = [e for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] == "splice"]
    # splice compiled main before it started: the trace starts with that compile span
    assert min(e["ts"] for e in compiles) == 0 and complete[0]["name"] == "main"
    assert {e["name"] for e in complete} == {"main", "fib", "Memo.__init__", "Memo.fib",
                                             "evens", "parse"}
    assert all(e["args"]["file"] == str(FIB) for e in complete)
    process = next(e for e in data["traceEvents"] if e["name"] == "process_name")
    assert process["args"]["name"].startswith(f"{FIB} (pid ")


def test_trace_options(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    result = invoke("trace", "--tree", "--full", "--args", "--max-depth", "2", "-o", str(out),
                    str(FIB), "3")
    assert result.exit_code == 0, result.output
    assert "main(n=3) -> (2, 2, 0, None)" in result.stderr
    assert "fib(n=3) -> 2" in result.stderr
    assert "fib(n=2)" not in result.stderr  # depth 2: main and its callees
    assert out.exists()


def test_trace_include_and_exclude(tmp_path: Path) -> None:
    write(tmp_path, "helpers.py", """
        def double(x):
            return 2 * x
    """)
    script = write(tmp_path, "prog.py", """
        import helpers

        def main():
            return [helpers.double(i) for i in range(3)]

        print(main())
    """)
    only = invoke("trace", "--include", "helpers", str(script))
    assert only.exit_code == 0, only.output
    assert "double ×3" in only.stderr and " main " not in only.stderr
    without = invoke("trace", "--exclude", "helpers", str(script))
    assert " main " in without.stderr and "double" not in without.stderr


def test_trace_a_module_with_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    write(tmp_path, "tool/__init__.py", "")
    write(tmp_path, "tool/__main__.py", """
        import sys
        from tool.core import run

        print(run(sys.argv[1:]), sys.argv[0].endswith("__main__.py"), __name__)
    """)
    write(tmp_path, "tool/core.py", """
        def run(args):
            return [shout(a) for a in args]

        def shout(text):
            return text.upper()
    """)
    monkeypatch.chdir(tmp_path)
    result = invoke("trace", "-m", "tool", "a", "--flag")
    assert result.exit_code == 0, result.output
    assert result.stdout == "['A', '--FLAG'] True __main__\n"
    assert "run" in result.stderr and "shout ×2" in result.stderr
    for name in [n for n in sys.modules if n == "tool" or n.startswith("tool.")]:
        del sys.modules[name]  # a new process's view (runpy warns of a module imported)
    plain = invoke("trace", "-m", "tool.core")
    assert plain.exit_code == 0, plain.output


def test_program_arguments_are_not_splice_options(tmp_path: Path) -> None:
    script = write(tmp_path, "args.py", """
        import sys
        print(sys.argv[1:])
    """)
    result = invoke("trace", str(script), "-o", "x", "--tree", "-m")
    assert result.exit_code == 0, result.output
    assert result.stdout == "['-o', 'x', '--tree', '-m']\n"
    assert not (tmp_path / "x").exists()


def test_trace_a_failing_program(tmp_path: Path) -> None:
    script = write(tmp_path, "fails.py", """
        def check(x):
            if x > 1:
                raise ValueError("too big")
            return x

        def main():
            return [check(i) for i in range(3)]

        main()
    """)
    out = tmp_path / "t.json"
    result = invoke("trace", "-o", str(out), str(script))
    assert result.exit_code == 1
    stderr = result.stderr
    assert stderr.startswith("Traceback (most recent call last):\n")
    assert f'File "{script}", line 10, in <module>' in stderr
    assert f'File "{script}", line 4, in check' in stderr
    assert "ValueError: too big" in stderr
    assert "cli.py" not in stderr and "click" not in stderr
    events = json.loads(out.read_text())["traceEvents"]
    failed = [e for e in events if e.get("args", {}).get("exception")]
    assert [e["name"] for e in failed] == ["main", "check"]


def test_trace_exit_status_is_the_programs(tmp_path: Path) -> None:
    script = write(tmp_path, "exits.py", """
        import sys

        def main():
            sys.exit(3)

        main()
    """)
    result = invoke("trace", str(script))
    assert result.exit_code == 3
    assert " main " in result.stderr
    message = write(tmp_path, "message.py", "import sys\nsys.exit('bye')\n")
    assert invoke("run", str(message)).exit_code == 1


def test_trace_threads(tmp_path: Path) -> None:
    script = write(tmp_path, "threads.py", """
        import threading

        def work(n):
            return sum(range(n))

        def main():
            threads = [threading.Thread(target=work, args=(10,), name=f"w{i}")
                       for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        main()
    """)
    result = invoke("trace", "--exclude", "threading", str(script))
    assert result.exit_code == 0, result.output
    assert result.stderr.count(" work ") == 2
    assert "w0 (thread " in result.stderr and "w1 (thread " in result.stderr


def test_errors_are_clean(tmp_path: Path) -> None:
    """What python cannot start is reported as python reports it (tests/test_cli_dropin.py
    compares the exact text), never with a traceback of splice's."""
    missing = invoke("trace", str(tmp_path / "missing.py"))
    assert missing.exit_code == 2 and "can't open file" in missing.stderr
    assert missing.stderr.startswith("splice: ") and "[Errno 2]" in missing.stderr
    assert "Traceback" not in missing.output
    nothing = invoke("trace")
    assert nothing.exit_code == 2 and "give a program to run" in nothing.stderr
    no_module = invoke("trace", "-m", "no_such_module_here")
    assert no_module.exit_code == 1
    assert no_module.stderr == "splice: No module named no_such_module_here\n"
    broken = write(tmp_path, "broken.py", "def f(:\n")
    syntax = invoke("trace", str(broken))
    assert syntax.exit_code == 1 and "SyntaxError" in syntax.stderr
    assert "Traceback" not in syntax.stderr and "splice" not in syntax.stderr
    folder = invoke("trace", str(tmp_path))
    assert folder.exit_code == 1 and "can't find '__main__' module" in folder.stderr
    # nothing ran: no tree printed
    assert all("top-level call" not in r.stderr for r in (missing, no_module, syntax, folder))


# --- splice run --------------------------------------------------------------------------------


def test_run_with_the_identity_plugin() -> None:
    result = invoke("run", str(FIB), "7")
    assert result.exit_code == 0, result.output
    assert result.stdout == "(13, 13, 1, None)\n"
    assert result.stderr == ""


def test_run_with_a_plugin_class(tmp_path: Path) -> None:
    write(tmp_path, "lib.py", """
        def greet(name):
            return "hello " + name
    """)
    write(tmp_path, "plug.py", """
        import splice
        import lib

        class Shout(splice.Plugin):
            @splice.intercept(lib.greet)
            def greet(self, name):
                return self.recurse_call(lib.greet, name).upper()
    """)
    script = write(tmp_path, "hello.py", """
        import lib

        def main():
            return lib.greet("you")

        print(main(), lib.greet("native") if False else "")
    """)
    result = invoke("run", "-p", f"{tmp_path / 'plug.py'}:Shout", str(script))
    assert result.exit_code == 0, result.output
    assert result.stdout.split()[:2] == ["HELLO", "YOU"]
    by_module = invoke("run", "-p", "splice.plugins:Tracer", str(FIB), "3")
    assert by_module.exit_code == 0 and by_module.stdout == "(2, 2, 0, None)\n"
    dotted = invoke("run", "-p", "splice.plugins.Tracer", str(FIB), "3")
    assert dotted.exit_code == 0, dotted.output


def test_run_plugin_errors(tmp_path: Path) -> None:
    not_plugin = invoke("run", "-p", "json:JSONDecoder", str(FIB))
    assert not_plugin.exit_code == 2 and "not a splice.Plugin" in not_plugin.stderr
    missing = invoke("run", "-p", "json:Nope", str(FIB))
    assert missing.exit_code == 2 and "no attribute" in missing.stderr
    bad = invoke("run", "-p", "nonsense", str(FIB))
    assert bad.exit_code == 2


# --- the program runner ---------------------------------------------------------------------


def test_top_level_calls_run_under_the_plugin(tmp_path: Path) -> None:
    from splice.plugins import Tracer

    script = write(tmp_path, "top.py", """
        def a():
            return 1

        class K:
            value = a()             # a call in a class body at top level

        values = [a() for _ in range(2)]
        names = sorted(vars())      # frame readers stay native: the module's own names
        result = K.value + sum(values)
    """)
    tracer = Tracer()
    program = splice_program.find_script(str(script))
    splice_program.run_program(tracer, program, [])
    assert [c.name for c in tracer.roots()] == ["a", "a", "a"]


def test_top_level_calls_add_no_frame(tmp_path: Path) -> None:
    """Between the program's ``<module>`` frame and what it calls there is no frame of
    splice's: the stack from ``<module>`` down is the native one, under hooks too."""
    import splice

    class Hooked(splice.Plugin):
        def prehook(self, fn: object, args: object, kwargs: object) -> None:
            pass

    write(tmp_path, "sink.py", "STACKS = []\n")
    script = write(tmp_path, "stack.py", """
        import traceback
        import sink

        def inner():
            names = [frame.name for frame in traceback.extract_stack()]
            return names[len(names) - 1 - names[::-1].index("<module>"):]

        def outer():
            return inner()

        sink.STACKS.append([outer(), inner()])
    """)
    sys.path.insert(0, str(tmp_path))
    import sink  # type: ignore[import-not-found]

    exec(compile(script.read_text(), str(script), "exec"), {"__name__": "__main__"})
    for plugin in (splice.Plugin(), Hooked()):
        splice_program.run_program(plugin, splice_program.find_script(str(script)), [])
    expected = [["<module>", "outer", "inner"], ["<module>", "inner"]]
    assert [expected] * 3 == sink.STACKS


def test_instrumented_code_keeps_lines() -> None:
    code = splice_program.instrument("x = 1\n\nprint(\n  x)\n", "prog.py")
    assert code.co_filename == "prog.py"
    assert {line for _, _, line in code.co_lines() if line} == {1, 3, 4}


def test_python_dash_m_splice_trace(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "splice", "trace", "-o", str(out),
                           "examples/fib.py", "4"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "(3, 3, 0, None)\n"
    assert json.loads(out.read_text())["traceEvents"]


def test_a_program_that_closes_its_output(tmp_path: Path) -> None:
    """``python -m json.tool`` closes standard output when it is done."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "splice", "trace", "--max-depth", "1",
                           "-m", "json.tool"], input='{"a": [1]}', cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"a": [1]}
    assert " main " in done.stderr


def test_trace_implicit_calls(tmp_path: Path) -> None:
    script = write(tmp_path, "ops.py", """
        class Money:
            def __init__(self, cents):
                self.cents = cents

            def __add__(self, other):
                return Money(self.cents + other.cents)

        def total():
            return (Money(1) + Money(2)).cents

        print(total())
    """)
    plain = invoke("trace", str(script))
    assert plain.exit_code == 0 and "__add__" not in plain.stderr
    implicit = invoke("trace", "--implicit", str(script))
    assert implicit.exit_code == 0 and "Money.__add__" in implicit.stderr


@pytest.mark.parametrize(("name", "options", "first"), [
    ("trace.folded", [], "MainThread;"),
    ("trace.collapsed", [], "MainThread;"),
    ("trace.txt", ["--sort", "tottime"], "   ncalls  tottime"),
    ("trace.out", ["--format", "stats"], "   ncalls  tottime"),
])
def test_trace_writes_profiles(tmp_path: Path, name: str, options: list[str],
                               first: str) -> None:
    out = tmp_path / name
    result = invoke("trace", "-o", str(out), *options, str(FIB), "5")
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith(first)
