"""A program read from stdin (``python < prog.py``) runs under plugins (issue 14, 4).

The interpreter compiles such a program as one module named ``<stdin>`` and keeps no text
of it; ``splice.ir.repl_sources`` reads the file stdin is redirected from again and accepts
it only when it compiles to the function's code. Each test runs a program in a child
process, its stdin redirected from a file (or a pipe), that runs its functions natively and
under an identity and a hooked plugin and prints what happened: results and tracebacks must
equal the native ones; every function is entered from a file, and runs natively with the
exact reason from a pipe or when the file no longer holds the program.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = '''\
# -*- coding: utf-8 -*-
import json, sys, traceback
import splice

def g(x):
    return x + 1

def f(x):
    return [g(v) for v in range(x)] + [lambda: "é"][0]().split()

def fails(x):
    return {"k": 1}[x]

class Identity(splice.Plugin):
    pass

class Hooked(splice.Plugin):
    def __init__(self):
        self.seen = []
    def prehook(self, fn, args, kwargs):
        self.seen.append(getattr(fn, "__name__", "?"))

def outcome(run, fn, *args):
    try:
        return ["ok", fn(*args) if run is None else run(fn, *args)]
    except Exception as exc:
        return ["raised", traceback.format_exception(exc)]

report = {"native": [outcome(None, f, 3), outcome(None, fails, "x")]}
for plugin in (Identity(), Hooked()):
    report[type(plugin).__name__] = [outcome(plugin.run, f, 3), outcome(plugin.run, fails, "x")]
    report[type(plugin).__name__ + " reached"] = {
        r.name: [r.entered, r.reason] for r in splice.explain(plugin)
        if r.name.startswith("__main__.")}
    if isinstance(plugin, Hooked):
        report["seen"] = sorted(set(plugin.seen))
json.dump(report, sys.stdout)
'''


def _run(program: Path, *, pipe: bool, change_after_start: bool = False) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    if pipe:
        done = subprocess.run([sys.executable], input=program.read_bytes(),
                              capture_output=True, env=env, timeout=120, cwd=ROOT)
    else:
        with program.open("rb") as stdin:
            done = subprocess.run([sys.executable], stdin=stdin, capture_output=True,
                                  env=env, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr.decode()
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _write(tmp_path: Path, text: str = PROGRAM) -> Path:
    program = tmp_path / "prog.py"
    program.write_text(text, encoding="utf-8")
    return program


def test_a_program_redirected_from_a_file_runs_under_the_plugins(tmp_path: Path) -> None:
    report = _run(_write(tmp_path), pipe=False)
    assert report["native"][0] == ["ok", [1, 2, 3, "é"]]
    assert report["native"][1][0] == "raised"
    for name in ("Identity", "Hooked"):
        # results and whole tracebacks (file "<stdin>", lines, no source lines) as native
        assert report[name] == report["native"], name
    # the hooks saw the callees of f, so f ran as transformed code
    assert {"g", "<lambda>"} <= set(report["seen"]), report["seen"]
    reached = report["Identity reached"]
    assert {"__main__.f", "__main__.g", "__main__.fails"} <= set(reached), reached
    assert all(entered for entered, _ in reached.values()), reached


def test_a_program_piped_in_runs_natively_saying_why(tmp_path: Path) -> None:
    report = _run(_write(tmp_path), pipe=True)
    for name in ("Identity", "Hooked"):
        assert report[name] == report["native"], name
    reached = report["Identity reached"]
    assert reached["__main__.f"][0] is False, reached
    assert "a pipe is read once" in reached["__main__.f"][1], reached
    assert "g" not in report["seen"], report["seen"]


def test_a_program_whose_file_changed_runs_natively_saying_why(tmp_path: Path) -> None:
    # before running anything, the program rewrites the file it was read from: g's body
    # there is no longer the one the interpreter compiled, so nothing is matched to it
    program = _write(tmp_path, PROGRAM.replace(
        "report = {", "import os\nopen(os.environ['PROG'], 'w').write(open(os.environ["
        "'PROG']).read().replace('x + 1', 'x + 2'))\nreport = {", 1))
    os.environ["PROG"] = str(program)
    try:
        report = _run(program, pipe=False)
    finally:
        del os.environ["PROG"]
    for name in ("Identity", "Hooked"):
        assert report[name] == report["native"], name
    reached = report["Identity reached"]
    assert reached["__main__.f"][0] is False, reached
    assert "no longer compiles to its code" in reached["__main__.f"][1], reached
