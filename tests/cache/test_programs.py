"""Differential: each benchmark program's ``main`` compiled as a code instance (typed stages,
optimisation, codegen) and invoked gives the native result, which its inferred return type
accepts. Each program is loaded fresh, once for the native run and once for the instance."""

from __future__ import annotations

import importlib.util
import itertools
import types
from pathlib import Path

import pytest

import splice
from splice.compiler.pipeline import build_instance

PROGRAMS = Path(__file__).resolve().parents[2] / "benchmarks" / "programs"
SIZES = {"closures": 2000, "dicts": 40, "exceptions": 2000, "generators": 5000, "nbody": 40,
         "raytrace": 6, "recursion": 12, "scheduler": 300, "spectral_norm": 8, "text": 20}
_counter = itertools.count()


def load(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"_splice_instance_program_{name}_{next(_counter)}", PROGRAMS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(SIZES))
def test_program_instance_matches_native(name: str) -> None:
    n = SIZES[name]
    expected = load(name).main(n)
    program = load(name)
    ci = splice.compile(None, program.main, int)
    got = splice.invoke(ci, n)
    assert got == expected
    assert ci.return_type.accepts(got), (ci.return_type, got)


def test_build_instance_is_the_generic_instance_with_no_types() -> None:
    program = load("recursion")
    ci = build_instance(splice.Plugin().context, program.fib, ())
    assert ci.argtypes == () and ci.compiled(15) == program.fib(15)
