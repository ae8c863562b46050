"""The ``splice`` command line: ``splice show`` on the bundled example, clean errors, and the
README commands staying in sync with the example and with ``.ci/run``."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import math
import os
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import splice
from splice.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "shapes.py"


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``splice show`` imports the target module and puts its folder on ``sys.path``; undo
    both so one test's files never shadow another's."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def load_example() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("_shapes_reference", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def function_ast(source: str) -> str:
    """The AST of the one function in ``source`` (constant spelling such as ``1e6`` versus
    ``1000000.0`` does not matter; structure, names and values do)."""
    tree = ast.parse(textwrap.dedent(source))
    assert len(tree.body) == 1
    return ast.dump(tree.body[0])


# --- splice show on the bundled example ------------------------------------------------------

EXAMPLE_FUNCTIONS = ["total_area", "areas", "countdown", "Circle.area", "Circle.__init__"]


@pytest.mark.parametrize("qualname", EXAMPLE_FUNCTIONS)
def test_show_python_regenerates_the_example(qualname: str) -> None:
    result = run("show", f"{EXAMPLE}:{qualname}", "--stage", "python")
    assert result.exit_code == 0, result.output
    fn: object = load_example()
    for part in qualname.split("."):
        fn = getattr(fn, part)
    assert function_ast(result.output) == function_ast(inspect.getsource(fn))  # type: ignore[arg-type]


def test_show_default_prints_both_stages() -> None:
    result = run("show", f"{EXAMPLE}:total_area")
    assert result.exit_code == 0, result.output
    lowered, _, python = result.output.partition("# regenerated Python")
    assert lowered.startswith("# lowered IR")
    assert python, result.output
    # The lowered listing: numbered statements, explicit implicit calls, nested loop.
    assert re.search(r"\b1 def total_area\(", lowered)
    assert "iter(shapes)" in lowered and "next(" in lowered
    assert "getattr(shape, 'radius')" in lowered
    assert "inplace(iadd" in lowered
    assert re.search(r"%\d+ = call ", lowered)
    assert str(splice.code_lowered(load_example().total_area)) in lowered
    # The regenerated source is a working copy of the function.
    namespace: dict[str, object] = {}
    exec(compile(python, str(EXAMPLE), "exec"), namespace)
    example = load_example()
    shapes = [example.Circle(r) for r in (0, 1.5, 2, 3e6)]
    regenerated = namespace["total_area"]
    assert callable(regenerated)
    assert regenerated(shapes, scale=2) == example.total_area(shapes, scale=2)


def test_show_lowered_only() -> None:
    result = run("show", f"{EXAMPLE}:countdown", "--stage", "lowered")
    assert result.exit_code == 0, result.output
    assert "# regenerated Python" not in result.output
    assert "# lowered IR" not in result.output
    assert "def countdown(" in result.output
    assert "yield(n)" in result.output


def test_show_literal_keeps_the_temporaries() -> None:
    result = run("show", f"{EXAMPLE}:Circle.area", "--stage", "python", "--literal")
    assert result.exit_code == 0, result.output
    assert re.search(r"^\s+%\d+ = self\.radius$", result.output, re.MULTILINE), result.output
    renested = run("show", f"{EXAMPLE}:Circle.area", "--stage", "python")
    assert "%" not in renested.output


def test_show_static_and_class_methods_and_modules(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "clipkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("def double(x):\n    return x * 2\n")
    (package / "mod.py").write_text(textwrap.dedent("""\
        import functools

        from . import helper

        class K:
            @staticmethod
            def s(x):
                return helper.double(x)

            @classmethod
            def c(cls, y):
                return [cls, y]

            @property
            def p(self):
                return 1

        @functools.cache
        def cached(n):
            return n + 1
        """))
    # A file inside a package is imported as part of it (its relative imports work) ...
    for qualname, line in [("K.s", "return helper.double(x)"), ("K.c", "return [cls, y]"),
                           ("K.p.fget", "return 1"), ("cached.__wrapped__", "return n + 1")]:
        result = run("show", f"{package / 'mod.py'}:{qualname}", "--stage", "python")
        assert result.exit_code == 0, result.output
        assert line in result.output
    # ... and MODULE:FUNCTION imports from the working directory, like ``python -m``.
    monkeypatch.chdir(tmp_path)
    result = run("show", "clipkg.helper:double", "--stage", "python")
    assert result.exit_code == 0, result.output
    assert result.output == "def double(x):\n    return x * 2\n"


def test_show_a_standard_library_function() -> None:
    result = run("show", "json:dumps", "--stage", "lowered")
    assert result.exit_code == 0, result.output
    assert "def dumps(" in result.output


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.output.startswith("splice, version ")


# --- errors: a message and exit status 2, never a traceback ----------------------------------

ERROR_CASES: list[tuple[str, dict[str, str], str, str]] = [
    # (id, files to write, target, expected text in the message)
    ("missing-file", {}, "nowhere.py:f", "no such file: nowhere.py"),
    ("directory", {"adir/x.txt": ""}, "adir/:f", "not a Python file"),
    ("syntax-error", {"bad.py": "def f(:\n    pass\n"}, "bad.py:f",
     "importing bad.py failed: SyntaxError"),
    ("raises-on-import", {"boom.py": "raise RuntimeError('boom')\n"}, "boom.py:f",
     "importing boom.py failed: RuntimeError: boom"),
    ("exits-on-import", {"quits.py": "import sys\nsys.exit(3)\n"}, "quits.py:f",
     "sys.exit(3)"),
    ("missing-function", {"ok.py": "def f():\n    pass\n"}, "ok.py:g", "has no attribute 'g'"),
    ("missing-method", {"ok.py": "class C:\n    pass\n"}, "ok.py:C.m",
     "ok.py:C has no attribute 'm'"),
    ("class", {"ok.py": "class C:\n    pass\n"}, "ok.py:C", "is a class, not a function"),
    ("module", {"ok.py": "import math\n"}, "ok.py:math", "is a module, not a function"),
    ("property", {"ok.py": "class C:\n    @property\n    def p(self):\n        return 1\n"},
     "ok.py:C.p", "is a property"),
    ("no-separator", {}, "examples/shapes.py", "is not FILE.py:FUNCTION or MODULE:FUNCTION"),
    ("empty-name", {"ok.py": ""}, "ok.py:", "is not a function name"),
    ("bad-module-name", {}, "not a module:f", "neither a .py file nor a module name"),
    ("missing-module", {}, "no_such_module_xyz:f", "cannot import no_such_module_xyz"),
    ("builtin", {}, "math:sin", "cannot transform math.sin"),
    ("no-source", {"gen.py": "import ast\nexec(compile(ast.parse('def h():\\n    return 2'), "
                             "'<ast>', 'exec'))\n"}, "gen.py:h",
     "cannot transform"),
    ("cached-wrapper", {"c.py": "import functools\n@functools.cache\ndef f():\n    pass\n"},
     "c.py:f", "c.py:f wraps a function: `splice show c.py:f.__wrapped__` shows it"),
]


@pytest.mark.parametrize(("files", "target", "expected"),
                         [case[1:] for case in ERROR_CASES],
                         ids=[case[0] for case in ERROR_CASES])
def test_errors_are_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          files: dict[str, str], target: str, expected: str) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path if files or not target.startswith("examples/") else ROOT)
    result = run("show", target)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.output.startswith("Error: "), result.output
    assert expected in result.output


def test_unsupported_error_is_reported_with_its_reason() -> None:
    with pytest.raises(splice.UnsupportedError) as info:
        splice.code_lowered(math.sin)
    result = run("show", "math:sin")
    assert result.exit_code == 2
    assert result.output == f"Error: {info.value}\n"


def test_internal_errors_are_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(fn: object) -> str:
        raise ValueError("something inside splice went wrong")

    monkeypatch.setattr(splice, "code_lowered", broken)
    result = run("show", f"{EXAMPLE}:total_area")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "internal error in splice" in result.output
    assert "ValueError: something inside splice went wrong" in result.output
    # --traceback lets it through, for a bug report.
    result = run("show", f"{EXAMPLE}:total_area", "--traceback")
    assert isinstance(result.exception, ValueError)


# --- as a program: python -m splice, and the README's commands --------------------------------

def _splice_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "splice", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_python_dash_m_splice() -> None:
    done = _splice_subprocess("show", "examples/shapes.py:total_area")
    assert done.returncode == 0, done.stderr
    assert "# lowered IR" in done.stdout and "# regenerated Python" in done.stdout
    failed = _splice_subprocess("show", "examples/shapes.py:no_such_function")
    assert failed.returncode == 2
    assert failed.stdout == ""
    assert failed.stderr.startswith("Error: ") and "Traceback" not in failed.stderr


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    return re.findall(r"^python3 -m venv .*$", readme, re.MULTILINE)


def test_readme_main_command_runs_the_bundled_example() -> None:
    commands = _readme_commands()
    assert len(commands) == 2, commands
    main_command = commands[0]
    match = re.search(r"&& splice (show \S+)$", main_command)
    assert match, main_command
    done = _splice_subprocess(*match.group(1).split())
    assert done.returncode == 0, done.stderr
    assert "# lowered IR" in done.stdout and "# regenerated Python" in done.stdout


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_command = _readme_commands()[1]
    assert "pytest" in test_command
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines() or any(
        line.startswith(test_command + " ") for line in ci.splitlines())


def test_readme_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", readme, re.MULTILINE | re.DOTALL)
    assert blocks
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    script = tmp_path / "readme_example.py"  # a file: splice reads the source it lowers
    script.write_text(blocks[0])
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "@fast_sin(i / n)" in done.stdout


# --- methods and nested functions ------------------------------------------------------------

MEMO = '''
class Memo:
    def fib(self, n):
        if n < 2:
            return n
        return self.fib(n - 1) + self.fib(n - 2)


def outer(k):
    def inner(x):
        return x * k
    return inner
'''


def test_types_of_a_method_start_after_self(tmp_path: Path) -> None:
    path = tmp_path / "memo_program.py"
    path.write_text(MEMO)
    result = run("show", f"{path}:Memo.fib", "--types", "int", "--stage", "typed")
    assert result.exit_code == 0, result.output
    assert "# self: an instance of Memo" in result.stderr
    assert "Memo.fib(memo_program.Memo, int)" in result.stdout
    assert "int, int" not in result.stdout


KINDS = '''
class Scaled:
    factor = 2

    @classmethod
    def scale(cls, n):
        return cls.factor * n

    @staticmethod
    def bump(x):
        return x + 1


class Child(Scaled):
    pass
'''


@pytest.mark.parametrize(("name", "note", "header"), [
    ("Scaled.scale", "# cls: the class Scaled itself (a classmethod); --types gives the "
     "arguments after it", "Scaled.scale(Const(Scaled), int)"),
    ("Child.scale", "# cls: the class Child itself (a classmethod)",
     "Scaled.scale(Const(Child), int)"),
    ("Scaled.bump", "# a staticmethod of Scaled: no self or cls; --types gives its "
     "arguments from the first (x)", "Scaled.bump(int)"),
    ("Child.bump", "# a staticmethod of Child", "Scaled.bump(int)"),
])
def test_types_of_class_and_static_methods_say_how_the_first_is_treated(
        tmp_path: Path, name: str, note: str, header: str) -> None:
    """A classmethod's first parameter is the class itself (not typed by --types, and
    said so); a staticmethod's is its first argument, typed by --types (said so)."""
    path = tmp_path / "kinds_program.py"
    path.write_text(KINDS)
    result = run("show", f"{path}:{name}", "--types", "int", "--stage", "typed")
    assert result.exit_code == 0, result.output
    assert note in result.stderr
    assert f"# typed IR of {header}" in result.stdout
    assert "=> int" in result.stdout


def test_nested_functions_are_addressable(tmp_path: Path) -> None:
    path = tmp_path / "nested_program.py"
    path.write_text(MEMO)
    result = run("show", f"{path}:outer.inner", "--stage", "lowered")
    assert result.exit_code == 0, result.output
    assert "def outer.<locals>.inner(x)" in result.stdout
    assert "binop(mul, x, k)" in result.stdout
    missing = run("show", f"{path}:outer.nope")
    assert missing.exit_code == 2 and "no attribute or nested function 'nope'" in missing.stderr
