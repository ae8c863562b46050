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


# ------------------------------------------------------------------ the live oracle

LIVE_SCALE = 2


def live_scaled(x):  # type: ignore[no-untyped-def]
    return x * LIVE_SCALE


def live_words(text):  # type: ignore[no-untyped-def]
    return str(len(text.split()))


def live_oracle_of(**options):  # type: ignore[no-untyped-def]
    from splice.tools.cpython_tests import live_oracle

    oracle = live_oracle()
    for name, value in options.items():
        setattr(oracle, name, value)
    return oracle


def test_live_oracle_checks_each_call_against_its_argument_classes() -> None:
    oracle = live_oracle_of()
    scaled = oracle.instrument(live_scaled)
    assert [scaled(3), scaled(1.5), scaled("ab"), scaled(4)] == [6, 3.0, "abab", 8]
    assert oracle.report.checks > 0 and not oracle.report.violations
    (key,) = oracle.inferences
    assert [inf.argtypes for inf, _ in oracle.inferences[key]] == [
        (Exact(int),), (Exact(float),), (Exact(str),)]


def test_live_oracle_catches_a_wrong_inference() -> None:
    oracle = live_oracle_of(infer_for=lambda fn, argtypes: infer(fn, argtypes,
                                                                 interpreter=_Liar()))
    words = oracle.instrument(live_words)
    assert words("a b c") == "3"
    assert oracle.report.violations
    assert "live_words" in oracle.report.violations[0].function


def test_live_oracle_counts_values_after_a_rebinding_as_stale_and_infers_again() -> None:
    oracle = live_oracle_of()
    scaled = oracle.instrument(live_scaled)
    namespace = globals()  # (no ``global`` statement: inference would not trust the name)
    try:
        assert scaled(3) == 6
        namespace["LIVE_SCALE"] = 2.5  # the global the inference relied on (an int)
        assert scaled(2) == 5.0  # a float where an int was inferred, the edge broken: stale
        assert oracle.stale == 1 and not oracle.report.violations
        (key,) = oracle.inferences
        first = oracle.inferences[key][0][0]
        assert scaled(4) == 10.0  # inferred again (with the float): it fits
        assert oracle.stale == 1 and not oracle.report.violations
        assert len(oracle.inferences[key]) == 1 and oracle.inferences[key][0][0] is not first
    finally:
        namespace["LIVE_SCALE"] = 2


def test_live_oracle_never_changes_the_program() -> None:
    """Inference that raises, and values whose checks raise, leave the run as it is."""
    def broken(fn, argtypes):  # type: ignore[no-untyped-def]
        raise RuntimeError("inference failed")

    oracle = live_oracle_of(infer_for=broken)
    scaled = oracle.instrument(live_scaled)
    assert scaled(3) == 6
    assert oracle.errors and not oracle.report.violations


def test_cpython_test_modules_under_the_oracle() -> None:
    """The bounded version of ``python -m splice.tools.cpython_tests --mode oracle``: a few
    fast CPython test modules run natively and with the functions of the modules under
    test checked by the live oracle: the same outcomes, values checked, no violation."""
    from splice.tools.cpython_tests import run_many

    for c in run_many(["test_colorsys", "test_bisect"], jobs=2, timeout=240,
                      modes=("oracle",)):
        assert c.native.status == c.other.status == "ran", c.other.detail
        assert c.identical, c.differences()
        oracle = c.other.oracle
        assert oracle["instrumented"] > 0 and oracle["entered"] > 0, oracle
        assert oracle["checks"] > 1000, oracle
        assert oracle["violations"] == [] and oracle["errors"] == 0, oracle
