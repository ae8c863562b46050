"""``splice show --types`` and ``--stage lowered|typed|optimized|python``; the FastMath
benchmark's quick mode (a smoke run: performance is measured, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from splice.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).resolve().parent / "edges_program.py"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_show_typed_stage_prints_types_and_return_type() -> None:
    result = run("show", f"{PROGRAM}:uses_global", "--stage", "typed", "--types", "int")
    assert result.exit_code == 0, result.output
    assert "typed IR of uses_global(int)" in result.output
    assert "::int" in result.output
    assert result.output.rstrip().splitlines()[-1] == "=> int"


def test_show_all_stages_with_types() -> None:
    result = run("show", f"{PROGRAM}:uses_callee", "--types", "float")
    assert result.exit_code == 0, result.output
    for title in ("# lowered IR", "# typed IR", "# optimized IR", "# generated Python"):
        assert title in result.output
    assert "def uses_callee(x):" in result.output


def test_show_optimized_and_python_stages() -> None:
    optimized = run("show", f"{PROGRAM}:uses_nothing", "--stage", "optimized",
                    "--types", "int")
    assert optimized.exit_code == 0 and "optimized IR of uses_nothing(int)" in optimized.output
    python = run("show", f"{PROGRAM}:uses_nothing", "--stage", "python", "--types", "int")
    assert python.exit_code == 0 and "return x * 5" in python.output


def test_show_typed_without_types_is_any() -> None:
    result = run("show", f"{PROGRAM}:uses_nothing", "--stage", "typed")
    assert result.exit_code == 0, result.output
    assert "uses_nothing()" in result.output


def test_show_bad_types_is_a_clean_error() -> None:
    result = run("show", f"{PROGRAM}:uses_nothing", "--stage", "typed", "--types", "nope")
    assert result.exit_code == 2
    assert "--types 'nope' is not a list of types" in result.output
    too_many = run("show", f"{PROGRAM}:uses_nothing", "--types", "int, int")
    assert too_many.exit_code == 2 and "cannot specialize" in too_many.output


def test_fastmath_benchmark_quick_run(tmp_path: Path) -> None:
    out = tmp_path / "fastmath.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fastmath.py"), "--quick",
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text())
    assert len(results["rewrites"]) == 3
    assert set(results["ratios"]) >= {"fastmath/hand", "fastmath/hand_native"}


def test_show_under_a_plugin() -> None:
    result = run("show", f"{PROGRAM}:uses_callee", "--stage", "optimized", "--types", "int",
                 "-p", "splice:Plugin")
    assert result.exit_code == 0, result.output
    assert "optimized IR of uses_callee(int)" in result.output
