"""The soundness oracle over the benchmark programs and the reach programs; and a check
that the oracle does catch a wrong inference."""

from __future__ import annotations

import importlib.util
import os
import sys
import types

import pytest

from splice.infer import Exact, Inference, infer
from splice.infer.interpreter import AbstractInterpreter
from splice.infer.oracle import check_run
from tests.runtime import reach_programs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAMS = os.path.join(ROOT, "benchmarks", "programs")
SIZES = {"nbody": 5, "raytrace": 3, "spectral_norm": 5, "recursion": 8, "closures": 20,
         "dicts": 20, "exceptions": 20, "generators": 20, "scheduler": 10, "text": 5}


def _load(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"splice_infer_test_{name}",
                                                  os.path.join(PROGRAMS, name + ".py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(SIZES))
def test_benchmark_program_is_sound(name: str) -> None:
    module = _load(name)
    inference = infer(module.main, [int])
    report = check_run(inference, module.main, SIZES[name])
    assert report.instrumented >= 1 and report.checks > 1
    assert not report.violations, [str(v) for v in report.violations]


REACH = [getattr(reach_programs, n) for n in dir(reach_programs)
         if n.startswith("program_") and n != "program_async"]


@pytest.mark.parametrize("program", REACH, ids=[p.__name__ for p in REACH])
def test_reach_program_is_sound(program: types.FunctionType) -> None:
    inference = infer(program, [])
    report = check_run(inference, program)
    assert not report.violations, [str(v) for v in report.violations]


class _Liar(AbstractInterpreter):
    """Claims every builtin call returns an int: wrong, and the oracle must say so."""

    def call_builtin(self, fn, args, kwargs):  # type: ignore[no-untyped-def]
        return Exact(int)


def test_oracle_catches_a_wrong_inference() -> None:
    def f(words):
        return str(len(words))

    inference: Inference = infer(f, [list], interpreter=_Liar())
    report = check_run(inference, f, ["a", "b"])
    assert report.violations


@pytest.mark.parametrize("seed", range(12))
def test_random_program_is_sound(seed: int) -> None:
    from splice.tools.genprog import forget_source, generate_program
    from splice.tools.genprog import load as load_program

    filename = f"<infer-oracle-{seed}>"
    try:
        namespace = load_program(generate_program(seed), filename, f"infer_oracle_{seed}")
        inference = infer(namespace["main"], [])
        report = check_run(inference, namespace["main"])
    finally:
        forget_source(filename)
    assert report.instrumented >= 1
    assert not report.violations, [str(v) for v in report.violations]
