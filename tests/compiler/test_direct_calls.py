"""Guarded direct calls: a call whose callee inference resolved runs the callee's own typed
instance behind a guard, so the typed stages (FastMath) reach the call graph; a rebound
name or a swapped ``__code__`` takes the generic path at once. Differential throughout."""

from __future__ import annotations

import importlib.util
import itertools
import math
import types
from pathlib import Path

import pytest

import splice
from splice.cache.instances import instances_of
from splice.plugins import FastMath

HERE = Path(__file__).resolve().parent
_counter = itertools.count()


def fresh() -> types.ModuleType:
    name = f"_splice_direct_program_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, HERE / "direct_program.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cheap_sin(x):  # type: ignore[no-untyped-def]
    return x


def test_callee_gets_its_own_typed_instance() -> None:
    program = fresh()
    plugin = FastMath({math.sin: cheap_sin})
    ci = splice.compile(plugin, program.outer, float)
    assert any("direct call of" in line and "inner(float)" in line
               for line in ci.optimizations)
    assert [r.function for r in plugin.rewrites] == ["inner"]  # rewritten in the callee
    assert splice.invoke(ci, 0.5) == 0.5 * 2.0 + 1.0
    assert program.outer(0.5) == math.sin(0.5) * 2.0 + 1.0  # native: untouched
    inner_instances = [i for i in instances_of(plugin.context) if i.fn is program.inner]
    assert inner_instances and inner_instances[0].argtypes[0] <= float


def test_rebinding_the_callee_during_the_run_takes_the_generic_path() -> None:
    native, program = fresh(), fresh()
    ci = splice.compile(None, program.rebinds_midway, float)
    assert any("direct call" in line for line in ci.optimizations)
    assert splice.invoke(ci, 0.5) == native.rebinds_midway(0.5)


def test_swapping_the_callee_code_during_the_run_takes_the_generic_path() -> None:
    native, program = fresh(), fresh()
    ci = splice.compile(None, program.swaps_code_midway, float)
    assert any("direct call" in line for line in ci.optimizations)
    assert splice.invoke(ci, 0.5) == native.swaps_code_midway(0.5)


def test_a_function_calling_itself_with_its_own_types_runs_its_own_instance() -> None:
    program = fresh()
    ci = splice.compile(None, program.sums, int)
    assert splice.invoke(ci, 15) == program.sums(15)
    fib_instance = next(i for i in instances_of(ci.owner) if i.fn is program.fib)
    assert any("direct call of" in line and "(itself)" in line
               for line in fib_instance.optimizations), fib_instance.optimizations


def test_a_function_rebinding_itself_while_it_recurses_takes_the_generic_path() -> None:
    native, program = fresh(), fresh()
    ci = splice.compile(None, program.countdown, int)
    assert any("(itself)" in line for line in ci.optimizations), ci.optimizations
    assert splice.invoke(ci, 6) == native.countdown(6) == [6, 5, 4, 3, "replaced", 2]


def test_a_call_of_itself_with_other_types_stays_an_ordinary_call() -> None:
    native, program = fresh(), fresh()
    ci = splice.compile(None, program.mixed, int)
    assert not any("(itself)" in line for line in ci.optimizations), ci.optimizations
    assert splice.invoke(ci, 3) == native.mixed(3)


def test_a_generator_calling_itself_stays_an_ordinary_call() -> None:
    native, program = fresh(), fresh()
    ci = splice.compile(None, program.walk, int)
    assert not any("(itself)" in line for line in ci.optimizations), ci.optimizations
    assert list(splice.invoke(ci, 4)) == list(native.walk(4)) == [4, 3, 2, 1]


def test_a_recursive_function_under_a_typed_plugin_agrees_with_native() -> None:
    class Typed(splice.Plugin):
        def typed(self, ir: object) -> object:
            return ir

    native, program = fresh(), fresh()
    plugin = Typed()
    assert plugin.run(program.sums, 12) == native.sums(12)
    assert plugin.run(program.sums, 12) == native.sums(12)  # the code the first run made
    assert plugin.run(program.countdown, 6) == native.countdown(6)


def test_a_call_that_reads_a_default_is_not_direct() -> None:
    program = fresh()
    ci = splice.compile(None, program.calls_with_default, float)
    assert not any("direct call" in line for line in ci.optimizations)
    assert splice.invoke(ci, 1.5) == 3.0


def test_callee_redefinition_invalidates_the_caller() -> None:
    program = fresh()
    ci = splice.compile(None, program.outer, float)
    program.inner.__code__ = program.replaced_inner.__code__
    assert not ci.valid
    with pytest.raises(splice.SpliceError):
        splice.invoke(ci, 0.5)
    again = splice.compile(None, program.outer, float)
    assert splice.invoke(again, 0.5) == program.outer(0.5) == 0.5


def test_specializations_per_callee_are_bounded() -> None:
    from splice.compiler.params import CompileParams

    program = fresh()
    plugin = splice.Plugin()
    kinds = [int, float, bool, str, bytes, complex, list, tuple, dict, set, frozenset]
    for kind in kinds:
        ci = splice.compile(plugin, program.outer, kind)
        assert any("direct call" in line for line in ci.optimizations)
    inner = [i for i in instances_of(plugin.context) if i.fn is program.inner]
    assert len(inner) == CompileParams().max_specializations + 1  # the last ones share the generic
    assert any(i.argtypes == () for i in inner)


def test_code_python_of_an_instance() -> None:
    program = fresh()
    source = splice.code_python(program.outer, float, plugin=FastMath({math.sin: cheap_sin}))
    assert "def outer(x):" in source
    assert splice.code_python(program.outer).startswith("def outer(x):")


def returns_complex(x):  # type: ignore[no-untyped-def]
    return 1j * x


def test_a_typed_pass_changing_a_return_type_is_reinferred_and_not_made_direct() -> None:
    program = fresh()
    plugin = FastMath({math.sin: returns_complex})
    ci = splice.compile(plugin, program.outer, float)
    # inner's own instance is rewritten and now returns a complex: the caller assumed float
    # (inner as the context runs it), so its call of inner is not made direct
    inner = next(i for i in instances_of(plugin.context) if i.fn is program.inner)
    # inferred on the rewritten program: the replacement where its check holds, else the
    # program's own call
    assert complex <= inner.return_type and not inner.preserves_return_type
    assert not any("direct call of" in line and "inner" in line for line in ci.optimizations)
    # the instance calls inner as the context runs it: rewritten too, as under plugin.run
    assert splice.invoke(ci, 0.5) == plugin.run(program.outer, 0.5) != program.outer(0.5)
    assert splice.invoke(inner, 0.5) == 1j * 0.5 * 2.0
