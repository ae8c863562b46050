"""``splice run`` is a drop-in for ``python``: the same command line after ``splice run``
gives the same standard output, standard error and exit status, for standard-library
command lines and programs given as a file, ``-c`` and standard input.

Each case runs ``python ARGS`` and ``python -m splice run ARGS`` in the same folder and
compares; timings (``timeit``, ``unittest``'s "Ran 1 test in 0.001s") are the only text
normalised.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: numbers that measure time, in the outputs of timeit and unittest
_TIMES = re.compile(r"\d+(\.\d+)? ?(usec|msec|sec|nsec|s)\b")


def _run(command: list[str], folder: Path, stdin: str | None) -> tuple[str, str, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("COLUMNS", None)
    done = subprocess.run(command, cwd=folder, env=env, input=stdin, capture_output=True,
                          text=True, timeout=120)
    return _TIMES.sub("TIME", done.stdout), _TIMES.sub("TIME", done.stderr), done.returncode


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("dropin")
    (where / "data.json").write_text('{"b": [1, 2], "a": {"c": null}}')
    with zipfile.ZipFile(where / "archive.zip", "w") as archive:
        archive.writestr("inner/readme.txt", "hello")
    tests = where / "suite"
    tests.mkdir()
    (tests / "check_numbers.py").write_text(
        "import unittest\n\n"
        "class Numbers(unittest.TestCase):\n"
        "    def test_sum(self):\n"
        "        self.assertEqual(sum([1, 2]), 3)\n\n"
        "    def test_fails(self):\n"
        "        self.assertEqual(sorted([2, 1]), [2, 1])\n")
    (tests / "test_ignored.py").write_text("raise SystemExit('not collected with -p')\n")
    (where / "fails.py").write_text(
        "import sys\n\n"
        "def divide(a, b):\n"
        "    return a / b\n\n"
        "print('argv', sys.argv[1:])\n"
        "divide(1, 0)\n")
    (where / "exits.py").write_text("import sys\nsys.exit('bad input: ' + sys.argv[1])\n")
    (where / "top_raises.py").write_text("import json\njson.loads('{')\n")
    package = where / "failing_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(
        "def check(x):\n"
        "    if x:\n"
        "        raise ValueError(f'bad {x}')\n\n"
        "check(__name__ == '__main__')\n")
    (where / "probe.py").write_text(PROBE)
    for name in ("probe_pkg", "probe_folder"):
        (where / name).mkdir()
        (where / name / "__main__.py").write_text(PROBE)
    (where / "probe_pkg" / "__init__.py").write_text("")
    with zipfile.ZipFile(where / "probe_app.zip", "w") as archive:
        archive.writestr("__main__.py", PROBE)
    with zipfile.ZipFile(where / "failing_app.zip", "w") as archive:
        archive.writestr("__main__.py", "def f():\n    raise ValueError(1)\n\nf()\n")
    (where / "own_hook.py").write_text(
        "import sys\n\n"
        "def hook(kind, exc, tb):\n"
        "    print('hooked', kind.__name__, exc, tb.tb_frame.f_code.co_name)\n\n"
        "sys.excepthook = hook\n"
        "int('x')\n")
    (where / "broken.py").write_text("def f(:\n    pass\n")
    (where / "empty_folder").mkdir()
    (where / "no_main_pkg").mkdir()
    (where / "no_main_pkg" / "__init__.py").write_text("")
    (where / "init_fails").mkdir()
    (where / "init_fails" / "__init__.py").write_text("raise RuntimeError('init')\n")
    (where / "init_fails" / "tool.py").write_text("print('never')\n")
    (where / "recording.py").write_text(
        "import splice\n\n"
        "class Remember(splice.Plugin):\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        self.given = [*args, *kwargs.values()]\n\n"
        "    def report(self):\n"
        "        return [getattr(a, '__module__', None) and\n"
        "                f'{a.__module__}.{a.__qualname__}' or a for a in self.given]\n")
    (where / "fails_on_import.py").write_text("raise RuntimeError('not today')\n")
    return where


#: prints what a program sees of how it was started
PROBE = """\
import sys
names = ["__name__", "__file__", "__cached__", "__doc__", "__package__", "__annotations__"]
print("argv", sys.argv, "path0", sys.path[0])
print({name: globals().get(name, "<unset>") for name in names})
spec = globals().get("__spec__")
print("spec", None if spec is None else (spec.name, spec.origin, spec.parent, spec.cached))
print("loader", type(__loader__).__name__, getattr(__loader__, "__name__", None))
print("main", sys.modules["__main__"].__dict__ is globals())
print("dunders", [name for name in globals() if name.startswith("__")])
"""

#: the ways python starts a program, each with an argument
STARTS: list[tuple[str, list[str], str | None]] = [
    ("script", ["probe.py", "a"], None),
    ("-m module", ["-m", "probe", "a"], None),
    ("-m package", ["-m", "probe_pkg", "a"], None),
    ("folder", ["probe_folder", "a"], None),
    ("zip file", ["probe_app.zip", "a"], None),
    ("-c", ["-c", PROBE, "a"], None),
    ("stdin", ["-", "a"], PROBE),
]


@pytest.mark.parametrize(("name", "args", "stdin"), STARTS, ids=[c[0] for c in STARTS])
def test_the_program_sees_how_python_started_it(folder: Path, name: str, args: list[str],
                                                stdin: str | None) -> None:
    """``sys.argv``, ``sys.path[0]`` and ``__main__``'s globals (``__file__``,
    ``__spec__``, ``__cached__``...) as python sets them."""
    native = _run([sys.executable, *args], folder, stdin)
    assert native[2] == 0, native
    assert _run([sys.executable, "-m", "splice", "run", *args], folder, stdin) == native


CASES: list[tuple[str, list[str], str | None]] = [
    ("json.tool", ["-m", "json.tool", "--sort-keys", "data.json"], None),
    ("json.tool -h", ["-m", "json.tool", "-h"], None),
    ("json.tool stdin", ["-m", "json.tool", "--indent", "1"], '{"x": [1, {"y": 2}]}'),
    ("zipfile -l", ["-m", "zipfile", "-l", "archive.zip"], None),
    # one repeat: no warning that the worst repeat was much slower than the best
    ("timeit", ["-m", "timeit", "-n", "5", "-r", "1", "sorted(range(50))"], None),
    ("unittest -p", ["-m", "unittest", "discover", "-s", "suite", "-p", "check_*.py"], None),
    ("calendar", ["-m", "calendar", "2024", "2"], None),
    ("base64", ["-m", "base64", "data.json"], None),
    ("tokenize", ["-m", "tokenize", "exits.py"], None),
    ("ast", ["-m", "ast", "exits.py"], None),
    ("-c", ["-c", "import sys, textwrap; print(sys.argv, textwrap.fill('a b c d', 3))",
            "x", "-y"], None),
    ("-c raises", ["-c", "def f(n):\n    return 10 // n\nprint(f(2))\nf(0)"], None),
    ("stdin", ["-", "arg"], "import sys\ndef twice(x):\n    return 2 * x\n"
                            "print(twice(21), sys.argv, __name__)\n"),
    ("script raises", ["fails.py", "--flag"], None),
    ("sys.exit message", ["exits.py", "oops"], None),
    # python -m's tracebacks start with runpy's two frames (<frozen runpy>)
    ("-m raises", ["-m", "fails", "--flag"], None),
    ("-m raises in a library", ["-m", "top_raises"], None),
    ("-m package raises", ["-m", "failing_pkg"], None),
    ("-m sys.exit message", ["-m", "exits", "oops"], None),
    ("folder raises", ["failing_pkg"], None),
    # printed as by python's own printer: no source lines from a zip file (3.11, 3.12)
    ("zip file raises", ["failing_app.zip"], None),
    ("the program's sys.excepthook", ["own_hook.py"], None),
    # programs python cannot start: its message, its exit status, nothing run
    ("no such script", ["missing.py", "x"], None),
    ("no such module", ["-m", "nonexistent_mod_xyz"], None),
    ("no such submodule", ["-m", "failing_pkg.nope"], None),
    ("no such package", ["-m", "nope_pkg.tool"], None),
    ("a package without __main__", ["-m", "no_main_pkg"], None),
    ("a folder without __main__", ["empty_folder"], None),
    ("a package's __init__ raises", ["-m", "init_fails.tool"], None),
    ("script syntax error", ["broken.py"], None),
    ("-m syntax error", ["-m", "broken"], None),
    ("-c syntax error", ["-c", "print(1)\nif"], None),
    ("stdin syntax error", ["-"], "x = (\n"),
]


@pytest.mark.parametrize(("name", "args", "stdin"), CASES, ids=[c[0] for c in CASES])
def test_splice_run_matches_python(folder: Path, name: str, args: list[str],
                                   stdin: str | None) -> None:
    native = _run([sys.executable, *args], folder, stdin)
    spliced = _run([sys.executable, "-m", "splice", "run", *args], folder, stdin)
    assert spliced == native


def test_program_options_are_the_programs(folder: Path) -> None:
    """Options after the program are not splice's, even where splice has one by that
    name (``-p``, ``-o``, ``-h``)."""
    args = ["-c", "import sys; print(sys.argv)", "-p", "x", "-o", "y", "-h"]
    assert _run([sys.executable, "-m", "splice", "run", *args], folder, None) == \
        _run([sys.executable, *args], folder, None)


def test_functions_of_a_c_program_run_under_the_plugin(folder: Path, tmp_path: Path) -> None:
    """``python -c`` code has no file: the function its top level calls and the one that
    function calls both run under the plugin (issue 14, point 4), the second reached only
    if the first ran transformed."""
    code = ("def inner(x):\n    return x + 1\n\n"
            "def outer(x):\n    return inner(x) * 2\n\n"
            "print(outer(3))\n")
    names = tmp_path / "names.txt"
    assert _run([sys.executable, "-c", code], folder, None) == ("8\n", "", 0)
    assert _run([sys.executable, "-m", "splice", "run", "-p",
                 "tests.cli_names_plugin:CalledNames", "-o", str(names), "-c", code],
                folder, None) == ("8\n", "", 0)
    assert names.read_text().split() == ["outer", "inner"]


def test_plugin_arguments_and_report(folder: Path) -> None:
    out, err, status = _run([sys.executable, "-m", "splice", "run", "-p",
                             "splice.plugins:Tracer(include=['json.decoder'])",
                             "-m", "json.tool", "data.json"], folder, None)
    assert status == 0 and '"b"' in out
    assert "JSONDecoder.decode" in err  # the Tracer's report, after the run


def test_plugin_arguments_name_modules(folder: Path) -> None:
    """A name in ``-p CLASS(ARGS)`` is a module, imported (submodules of dotted names
    too), with the program's folder first on ``sys.path``: the README's FastMath line."""
    simulate = str(ROOT / "examples" / "simulate.py")
    native = _run([sys.executable, simulate, "100"], folder, None)
    fast = _run([sys.executable, "-m", "splice", "run", "-p",
                 "splice.plugins:FastMath({math.sin: fastfns.fast_sin})", simulate, "100"],
                folder, None)
    assert native == ("45.549\n", "", 0) and fast == ("45.416\n", "", 0)
    out, err, status = _run(
        [sys.executable, "-m", "splice", "run", "-p",
         "recording.py:Remember(math.sin, os.path.join, xml.etree.ElementTree.parse, "
         "[m.upper() for m in 'ab'], key=(lambda fastfns: fastfns)(1), name=splice.Plugin)",
         "-c", "print('ran')"], folder, None)
    assert (out, status) == ("ran\n", 0), err
    assert err == ("['math.sin', 'posixpath.join', 'xml.etree.ElementTree.parse', "
                   "['A', 'B'], 1, 'splice.plugin.Plugin']\n")


@pytest.mark.parametrize(("args", "message"), [
    (["-p", "splice.plugins:Tracer(include=[", "-c", "1"], "optionally with arguments"),
    (["-p", "splice.plugins:Tracer(bogus=1)", "-c", "1"], "cannot create"),
    (["-x", "prog.py"], "no such option: -x"),
    (["-m"], "-m needs an argument"),
    ([], "give a program to run"),
    (["-o", "missing/folder/out.txt", "-c", "print('ran')"], "does not exist"),
    (["-o", "r.txt", "-c", "print('ran')"], "the identity plugin (no -p) has no report()"),
    (["-p", "splice.plugins:Patch", "-o", "r.txt", "-c", "print('ran')"],
     "Patch has no report() to write"),
    (["-p", "splice.plugins:FastMath({math.sin: fast_sin})", "-c", "print('ran')"],
     "name 'fast_sin' is not defined.\nA name in plugin arguments is a name of the plugin "
     "class's module, a builtin, or a module"),
    (["-p", "splice.plugins:Tracer(include=[fails_on_import.x])", "-c", "print('ran')"],
     "importing fails_on_import, named in the arguments, failed: RuntimeError: not today"),
])
def test_command_line_errors_are_clear(folder: Path, args: list[str], message: str) -> None:
    out, err, status = _run([sys.executable, "-m", "splice", "run", *args], folder, None)
    assert status == 2 and message in err and "Traceback" not in err
    assert "ran" not in out  # checked before the program runs
