"""``SpecializingEntry``: what a context's dispatch table can hold for a function when its
plugins use the typed stages: one instance per exact argument classes (bounded), the generic
instance beyond, rebuilt when invalidated. Differential against native calls."""

from __future__ import annotations

import importlib.util
import itertools
import linecache
import math
import types
from pathlib import Path

import splice
from splice.hooks import HookTable
from splice.plugins import FastMath
from splice.runtime.specializing import SpecializingEntry

HERE = Path(__file__).resolve().parent
_counter = itertools.count()


def fresh() -> types.ModuleType:
    name = f"_splice_dispatch_program_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, HERE / "edges_program.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def marked_sin(x):  # type: ignore[no-untyped-def]
    return ("fast", x)


def sine(x):  # type: ignore[no-untyped-def]
    return math.sin(x)


def test_one_instance_per_exact_classes_and_native_results() -> None:
    program = fresh()
    entry = SpecializingEntry(splice.Plugin().context, program.uses_global)
    for value in (2, 2.5, "ab", 3, 4.0, True):
        assert entry(value) == program.uses_global(value)
    assert set(entry.instances) == {(int,), (float,), (str,), (bool,)}
    assert entry(x=3) == 9  # keywords: the generic instance
    assert entry.generic().argtypes == ()


def test_specializations_are_bounded() -> None:
    program = fresh()
    entry = SpecializingEntry(splice.Plugin().context, program.uses_nothing,
                              max_specializations=2)
    for value in (1, 1.5, "s", [1], (2,)):
        assert entry(value) == program.uses_nothing(value)
    assert len(entry.instances) == 2


def test_invalidated_instances_are_rebuilt() -> None:
    program = fresh()
    entry = SpecializingEntry(splice.Plugin().context, program.uses_global)
    assert entry(2) == 6
    first = entry.instances[(int,)]
    program.SCALE = 7          # another int: the instance relied on SCALE's class only
    assert entry(2) == 14
    assert first.valid and entry.instances[(int,)] is first
    program.SCALE = 7.5        # another class: rebuilt
    assert entry(2) == 15.0
    assert not first.valid and entry.instances[(int,)] is not first


def test_typed_rewrites_apply_per_specialization() -> None:
    plugin = FastMath({math.sin: marked_sin})
    assert HookTable.of((plugin,)).typed_stages
    assert not HookTable.of((splice.Plugin(),)).typed_stages
    entry = SpecializingEntry(plugin.context, sine)
    assert entry(0.5) == ("fast", 0.5)
    assert entry(1) == math.sin(1)  # an int: not rewritten


# ------------------------------------------------------------- wired into ``plugin.run``

def sine_caller(xs):  # type: ignore[no-untyped-def]
    return [sine(x) for x in xs]


def test_plugin_run_uses_the_typed_stages_across_the_call_graph() -> None:
    """``plugin.run`` with a typed-stage plugin: ``sine`` (reached from ``sine_caller``)
    runs an instance per argument class, rewritten only where the argument is a float."""
    plugin = FastMath({math.sin: marked_sin})
    assert plugin.run(sine_caller, [1.0, 2]) == [("fast", 1.0), math.sin(2)]
    assert sine_caller([1.0, 2]) == [math.sin(1.0), math.sin(2)]
    assert [r.entered for r in splice.explain(plugin, sine)] == [True]


def test_plugin_without_typed_stages_keeps_plain_entries() -> None:
    assert not HookTable.of((splice.Plugin(),)).typed_stages
    plugin = splice.Plugin()
    assert plugin.run(sine_caller, [1.0]) == [math.sin(1.0)]


def test_specializing_entries_die_with_their_functions() -> None:
    """Closures made in a loop and called under a typed-stage plugin are freed once the
    dispatch table sweeps their entries (nothing else of splice holds them: a full
    collection sweeps), and they share their code's instances instead of each building its
    own."""
    import gc
    import weakref

    from splice.cache.instances import cache_of

    plugin = FastMath({math.sin: marked_sin})
    refs = []

    def make(k):  # type: ignore[no-untyped-def]
        def inner(x):  # type: ignore[no-untyped-def]
            return x + k
        return inner

    def run():  # type: ignore[no-untyped-def]
        total = 0
        for k in range(300):
            f = make(k)
            refs.append(weakref.ref(f))
            total += f(1)
        return total

    assert plugin.run(run) == sum(k + 1 for k in range(300))
    gc.collect()  # a full collection sweeps the dispatch tables
    gc.collect()
    assert sum(r() is not None for r in refs) < 5
    inner_code = make.__code__.co_consts[1]
    assert isinstance(inner_code, types.CodeType) and inner_code.co_name == "inner"
    # one generic and one (int,) instance of inner, shared by all 300 closures
    assert len(cache_of(plugin.context).of_code(inner_code)) == 2


def test_closures_sharing_code_run_with_their_own_cells_and_defaults() -> None:
    """Instances belong to one function object: closures (and defaults) of another
    function with the same code are never those an instance was compiled for."""
    plugin = FastMath({math.sin: marked_sin})

    def make(k):  # type: ignore[no-untyped-def]
        def inner(x, d=k):  # type: ignore[no-untyped-def]
            return x + k + d
        return inner

    def run():  # type: ignore[no-untyped-def]
        return [make(k)(1) for k in (1, 2.5, 3)] + [make("a")("b")]

    assert plugin.run(run) == run() == [3, 6.0, 7, "baa"]


# ------------------------------------------------- instances shared between closures

def test_closures_capturing_different_functions_get_their_own_variants() -> None:
    """Inference reads a cell holding a function: closures whose cells hold other functions
    do not share that instance (each variant is rewritten for what its cell holds), and past
    ``max_variants`` one instance that reads no cell serves them all."""
    from splice.cache.instances import cache_of
    from splice.compiler.params import CompileParams

    plugin = FastMath({math.sin: marked_sin})

    def make(helper):  # type: ignore[no-untyped-def]
        def inner(x):  # type: ignore[no-untyped-def]
            return math.sin(helper(x))
        return inner

    helpers = [(lambda x: x * 0.5), (lambda x: x + 1), (lambda x: x / 2),
               (lambda x: x - 1)] * 3
    # distinct function objects: each closure's cell holds another helper
    helpers = [types.FunctionType(h.__code__, h.__globals__) for h in helpers]

    def run():  # type: ignore[no-untyped-def]
        return [make(h)(3) for h in helpers]

    def expected():  # type: ignore[no-untyped-def]
        out = []
        for h in helpers:
            value = h(3)
            out.append(("fast", value) if type(value) is float else math.sin(value))
        return out

    results = plugin.run(run)
    # rewritten exactly where the helper returns a float, except in the instance that
    # reads no cell (it cannot know): there, never rewritten
    for got, want, h in zip(results, expected(), helpers, strict=True):
        assert got == want or got == math.sin(h(3)), (got, want)
    assert results[:CompileParams().max_variants] == expected()[:CompileParams().max_variants]
    inner_code = make.__code__.co_consts[1]
    variants = [ci for ci in cache_of(plugin.context).of_code(inner_code) if ci.argtypes]
    assert len(variants) == CompileParams().max_variants + 1
    assert sum(1 for ci in variants if not ci.cells) == 1


def test_a_rebound_cell_is_seen_at_the_next_call() -> None:
    """The outer function rebinds a cell the instance read (``nonlocal``): the next call
    does not run the instance inferred for the old content."""
    plugin = FastMath({math.sin: marked_sin})

    def make():  # type: ignore[no-untyped-def]
        def helper():  # type: ignore[no-untyped-def]
            return 0.5

        def inner():  # type: ignore[no-untyped-def]
            return math.sin(helper())

        def rebind():  # type: ignore[no-untyped-def]
            nonlocal helper
            helper = lambda: 1  # noqa: E731
        return inner, rebind

    inner, rebind = make()
    assert plugin.run(inner) == ("fast", 0.5)
    rebind()
    assert plugin.run(inner) == math.sin(1)


def test_recursive_closures_share_one_instance() -> None:
    """A closure calling itself through its own cell: every such closure fits the instance
    (the cell holds the function itself), so they share it."""
    from splice.cache.instances import SELF, cache_of

    plugin = FastMath({math.sin: marked_sin})

    def make(k):  # type: ignore[no-untyped-def]
        def rec(n):  # type: ignore[no-untyped-def]
            return k if n == 0 else rec(n - 1) + 1
        return rec

    def run():  # type: ignore[no-untyped-def]
        return [make(k)(5) for k in range(50)]

    assert plugin.run(run) == run()
    rec_code = make.__code__.co_consts[1]
    found = [ci for ci in cache_of(plugin.context).of_code(rec_code) if ci.argtypes]
    assert len(found) == 1 and (rec_code.co_freevars.index("rec"), SELF) in found[0].cells


def test_recursive_closures_with_other_defaults_do_not_share() -> None:
    """A closure calling itself reads its own defaults (binding the recursive call):
    closures whose defaults differ in type get their own instances."""
    from splice.cache.instances import cache_of

    plugin = FastMath({math.sin: marked_sin})

    def make(step):  # type: ignore[no-untyped-def]
        def rec(n, step=step):  # type: ignore[no-untyped-def]
            if n == 0:
                return step
            return math.sin(rec(n - 1))
        return rec

    def run():  # type: ignore[no-untyped-def]
        return [make(1.5)(1), make(2)(1), make(0.5)(1)]

    # rewritten only where the recursive call returns the float default
    assert plugin.run(run) == [("fast", 1.5), math.sin(2), ("fast", 0.5)]
    rec_code = make.__code__.co_consts[1]
    found = [ci for ci in cache_of(plugin.context).of_code(rec_code) if ci.argtypes]
    # defaults are compared by their abstract values (plain constants by value)
    assert len(found) == 3 and all(ci.defaults is not None for ci in found)
    assert plugin.run(make(1.5), 1) == ("fast", 1.5)
    assert len([ci for ci in cache_of(plugin.context).of_code(rec_code) if ci.argtypes]) == 3


def test_functions_of_one_code_with_other_globals_do_not_share() -> None:
    plugin = FastMath({math.sin: marked_sin})
    namespace_a = {"math": math, "SCALE": 0.5}
    namespace_b = {"math": math, "SCALE": 2}
    source = "def scaled(x):\n    return math.sin(x * SCALE)\n"
    filename = "<splice-test-globals>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        exec(compile(source, filename, "exec"), namespace_a)
        scaled_b = types.FunctionType(namespace_a["scaled"].__code__, namespace_b, "scaled")
        assert plugin.run(namespace_a["scaled"], 1) == ("fast", 0.5)
        assert plugin.run(scaled_b, 1) == math.sin(2)
        assert plugin.run(namespace_a["scaled"], 1) == ("fast", 0.5)
    finally:
        del linecache.cache[filename]
