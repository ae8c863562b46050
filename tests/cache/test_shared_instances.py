"""Code instances shared by the contexts of one owner (splice/cache/shared_instances.py,
splice/runtime/instance_sharing.py): typed plugins of one class with equal tokens build an
instance once per process; each context runs its own table, sites, plugin state and callee
instances; whatever the build relied on is checked before its code is bound again."""

from __future__ import annotations

import gc
import math
import sys
import weakref
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.infer.lattice import Exact
from splice.ir.nodes import Assign, Call, Const, FunctionIR, Return
from splice.ir.tools import insert_before
from splice.plugins import FastMath
from tests.modules import load

PROGRAM = """
    import math

    SCALE = 2.0

    def wave(x):
        return math.sin(x) * SCALE

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def total(n):
        acc = 0.0
        for i in range(n):
            acc += wave(i / n)
        return acc + fib(8)

    def make_adder(k):
        def add(x):
            return x + k
        return add

    def with_closure(n):
        return [make_adder(i)(2.5) for i in range(n)]
"""


def cheap_sin(x: float) -> float:
    return x - x ** 3 / 6


@pytest.fixture
def program(tmp_path: Path) -> Iterator[Any]:
    """A module of its own per test (held in sys.modules, as imported modules are: only
    functions a module holds by name are shared)."""
    module = load(tmp_path, "shared_instances_program", PROGRAM)
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def fastmath() -> FastMath:
    return FastMath({math.sin: cheap_sin})


def _counts(plugin: splice.Plugin) -> tuple[int, int]:
    instances = plugin.context.instances
    return instances.builds, instances.bound


def test_an_equal_fastmath_builds_nothing_and_runs_the_same(program: Any) -> None:
    first = fastmath()
    result = first.run(program.total, 50)
    built, bound = _counts(first)
    assert built >= 3 and bound == 0
    second = fastmath()
    assert second.context.owner is first.context.owner
    assert second.run(program.total, 50) == result
    assert _counts(second) == (0, built), "the second FastMath built instances again"
    # the rewrite really is in the bound code (the native result differs)
    assert result != program.total(50)
    assert {(r.function, r.original) for r in second.rewrites} == \
        {(r.function, r.original) for r in first.rewrites} == {("wave", "math.sin")}


def test_bound_direct_calls_run_the_binding_contexts_callee_instances(program: Any) -> None:
    first, second = fastmath(), fastmath()
    first.run(program.total, 10)
    second.run(program.total, 10)
    found = False
    for ci in second.context.instances:
        assert ci.owner is second.context
        for binding in ci.direct:
            found = True
            assert binding.instance.owner is second.context
            assert binding.instance in list(second.context.instances)
    assert found, "no direct call was made: the test shows nothing"


def test_a_recursive_function_calls_its_own_bound_instance(program: Any) -> None:
    first, second = fastmath(), fastmath()
    assert first.run(program.fib, 12) == program.fib(12)
    assert second.run(program.fib, 12) == program.fib(12)
    (ci,) = [ci for ci in second.context.instances if ci.specialization.argtypes ==
             (Exact(int),)]
    assert ci.origin == "bound" and ci.self_holders
    # the holder of its calls of itself points at its own function, not the first's
    holder = ci.self_holders[0]
    assert holder[0] is program.fib and holder[1] is not None
    assert all(holder[1] is not other.self_holders[0][1] for other in first.context.instances
               if other.self_holders)


class Tagging(splice.Plugin):
    """A typed pass configured by data: ``wave`` returns the tag and records each value
    in the plugin's own ``seen`` list (an attribute: each plugin's own)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.seen: list[Any] = []

    def cache_token(self) -> Hashable:
        return self.tag

    def typed(self, ir: FunctionIR) -> FunctionIR | None:
        if ir.name != "wave":
            return None
        for stmt in list(ir.walk()):
            if isinstance(stmt, Return) and stmt.value is not None:
                insert_before(ir, stmt, [Assign((), Call(Const(self.seen.append, stmt.pos),
                                                         [stmt.value], []), stmt.pos)])
                stmt.value = Const(self.tag, stmt.pos)
        return ir


def test_each_plugin_keeps_its_own_state_and_configuration(program: Any) -> None:
    a1, a2, b = Tagging("a"), Tagging("a"), Tagging("b")
    assert a1.run(program.wave, 0.5) == "a"
    assert a2.run(program.wave, 1.5) == "a"
    assert b.run(program.wave, 0.5) == "b"
    assert _counts(a2)[0] == 0 < _counts(a2)[1] and _counts(b)[0] == _counts(a1)[0]
    assert a1.seen == [math.sin(0.5) * 2.0] and a2.seen == [math.sin(1.5) * 2.0]
    assert b.context.owner is not a1.context.owner


def test_a_rebound_global_is_not_run_from_stale_code(program: Any) -> None:
    first = fastmath()
    first.run(program.total, 10)
    program.SCALE = 3  # an int now: inference read a float
    second = fastmath()
    assert second.run(program.total, 10) == \
        sum(cheap_sin(i / 10) * 3 for i in range(10)) + program.fib(8)
    built, _ = _counts(second)
    assert built >= 1, "code inferred with the old global was bound"


def test_a_callee_redefined_while_no_context_holds_it_is_rebuilt(program: Any) -> None:
    first = fastmath()
    first.run(program.total, 10)
    del first
    gc.collect()
    program.fib.__code__ = (lambda n: -1).__code__  # the audit hook sees it
    second = fastmath()
    assert second.run(program.total, 10) == pytest.approx(
        sum(cheap_sin(i / 10) * 2.0 for i in range(10)) - 1)
    assert _counts(second)[0] >= 1


def test_closures_share_instances_and_keep_their_own_data(program: Any) -> None:
    first, second = fastmath(), fastmath()
    assert first.run(program.with_closure, 3) == program.with_closure(3)
    assert second.run(program.with_closure, 4) == program.with_closure(4)
    adds = [ci for ci in second.context.instances
            if ci.specialization.code is program.make_adder(0).__code__]
    assert adds and all(ci.origin == "bound" for ci in adds)
    # what a closure captured is not kept by the owner: only functions and classes
    # inference read from its cells are (none here)
    assert all(not ci.shared.cells for ci in adds)


def test_a_closure_over_another_function_binds_only_where_its_cell_holds_it(
        tmp_path: Path) -> None:
    module = load(tmp_path, "closure_cells_program", """
        def double(x):
            return x * 2

        def square(x):
            return x * x

        def compose(f):
            def apply(x):
                return f(x) + 1
            return apply

        def main(which, x):
            return compose(double if which else square)(x)
    """)
    sys.modules[module.__name__] = module
    try:
        first, second = fastmath(), fastmath()
        assert first.run(module.main, True, 3) == 7
        # the closure's cell holds another function: inference read it (the instance calls
        # double's instance directly), so the instance built for double is not bound for
        # square (its guard would make it take the slow path at every call)
        assert second.run(module.main, False, 3) == 10
        applies = [ci for ci in second.context.instances if
                   ci.specialization.code.co_name == "apply"]
        assert applies and all(ci.cells == ((0, module.square),) for ci in applies)
        assert second.run(module.main, True, 3) == 7
    finally:
        del sys.modules[module.__name__]


def test_an_owner_keeps_no_plugin_alive(program: Any) -> None:
    plugin = Tagging("alive")
    plugin.run(program.wave, 5.0)
    owner = plugin.context.owner
    gone = weakref.ref(plugin)
    del plugin
    gc.collect()
    assert gone() is None, "the shared instances keep the plugin (and its state) alive"
    assert owner is not None and len(owner.instances) >= 2


def test_an_invalidated_instance_is_never_bound_again(program: Any) -> None:
    first = fastmath()
    first.run(program.total, 10)
    (ci,) = [ci for ci in first.context.instances if ci.specialization.code is
             program.wave.__code__ and ci.argtypes == (Exact(float),)]
    ci.invalidate("a test said so")
    assert ci.shared is not None and not ci.shared.valid
    second = fastmath()
    second.run(program.total, 10)
    rebuilt = [c for c in second.context.instances if c.specialization.code is
               program.wave.__code__ and c.argtypes == (Exact(float),)]
    assert rebuilt and all(c.origin == "built" for c in rebuilt)
