"""Owners by configuration (``Plugin.cache_token``, splice/cache/owners.py,
splice/runtime/sharing.py): plugins of one class with equal tokens share their compiled
code; each still runs its own hooks, tables and state; a changed configuration never runs
stale code; nothing an owner keeps holds a plugin alive."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.ir.nodes import Assign, Call, Const, FunctionIR, Return
from splice.ir.tools import insert_before
from splice.plugins import Tracer
from tests.modules import load

PROGRAM = """
    def leaf(x):
        return x * 2

    def middle(xs):
        return [leaf(x) for x in xs]

    class Box:
        def __init__(self, value):
            self.value = value

        def doubled(self):
            return leaf(self.value)

    def main(n):
        return sum(middle(range(n))) + Box(n).doubled()
"""


@pytest.fixture
def program(tmp_path: Path) -> Any:
    """A module of its own per test: no test shares compiled code with another."""
    return load(tmp_path, "owners_program", PROGRAM)


def _owner_builds(plugin: splice.Plugin) -> int:
    owner = plugin.context.owner
    assert owner is not None
    return owner.code.builds + owner.constructors.builds


def test_equal_tracers_build_once_and_record_apart(program: Any) -> None:
    first = Tracer()
    assert first.run(program.main, 5) == program.main(5)
    built = _owner_builds(first)
    assert built >= 3
    first_calls = sorted(c.name for c in first.calls())

    second = Tracer()
    assert second.run(program.main, 5) == program.main(5)
    assert second.context.owner is first.context.owner
    assert _owner_builds(second) == built, "the second Tracer compiled again"
    # each Tracer records its own run, in its own event lists
    assert sorted(c.name for c in second.calls()) == first_calls
    assert sorted(c.name for c in first.calls()) == first_calls
    second.run(program.main, 2)
    assert sorted(c.name for c in first.calls()) == first_calls


def test_other_options_get_other_code(program: Any) -> None:
    plain, with_args = Tracer(), Tracer(args=True)
    plain.run(program.main, 3)
    with_args.run(program.main, 3)
    assert plain.context.owner is not with_args.context.owner
    leaf_calls = [c for c in with_args.calls() if c.name == "leaf"]
    assert leaf_calls and all(c.args is not None for c in leaf_calls)
    assert all(c.args is None for c in plain.calls())


class Tagging(splice.Plugin):
    """A ``lowered`` pass configured by data: every ``return`` of ``leaf`` returns its
    value paired with the plugin's tag, and records it in the plugin's own ``seen`` list
    (an attribute: rebound to each plugin's own list)."""

    def __init__(self, tag: str, token: bool = True) -> None:
        self.tag = tag
        self.with_token = token
        self.seen: list[Any] = []

    def cache_token(self) -> Hashable:
        return self.tag if self.with_token else None

    def lowered(self, ir: FunctionIR) -> FunctionIR | None:
        if ir.name != "leaf":
            return None
        for stmt in list(ir.walk()):
            if isinstance(stmt, Return) and stmt.value is not None:
                pair = ir.new_temp()
                insert_before(ir, stmt, [
                    Assign((), Call(Const(self.seen.append, stmt.pos), [stmt.value], []),
                           stmt.pos),
                    Assign((pair,), Call(Const(tuple, stmt.pos),
                                         [Const((self.tag, "x"), stmt.pos)], []), stmt.pos)])
                stmt.value = pair
        return ir


def test_a_changed_token_never_runs_stale_code(program: Any) -> None:
    plugin = Tagging("a")
    assert plugin.run(program.leaf, 1) == ("a", "x")
    plugin.tag = "b"  # read when the next run starts
    assert plugin.run(program.leaf, 1) == ("b", "x")
    plugin.tag = "a"  # back: the code of "a" again, built once for both objects
    builds = _owner_builds(plugin)
    assert plugin.run(program.leaf, 1) == ("a", "x")
    assert _owner_builds(plugin) == builds


def test_plugin_attributes_in_code_are_each_plugins_own(program: Any) -> None:
    first, second = Tagging("t"), Tagging("t")
    first.run(program.leaf, 3)
    second.run(program.leaf, 4)
    second.run(program.leaf, 5)
    assert second.context.owner is first.context.owner
    assert first.seen == [6] and second.seen == [8, 10]


def test_without_a_token_invalidate_drops_stale_code(program: Any) -> None:
    plugin = Tagging("a", token=False)
    assert plugin.context.owner is None
    assert plugin.run(program.leaf, 1) == ("a", "x")
    plugin.tag = "b"
    assert plugin.run(program.leaf, 1) == ("a", "x"), "without a token: the plugin's code"
    plugin.invalidate()
    assert plugin.run(program.leaf, 1) == ("b", "x")
    # compositions holding the plugin are dropped too, whoever keeps them
    composed = splice.compose(plugin, Counting())
    assert composed.run(program.leaf, 1) == ("b", "x")
    plugin.tag = "c"
    plugin.invalidate()
    assert composed.run(program.leaf, 1) == ("c", "x")


class Counting(splice.Plugin):
    def __init__(self) -> None:
        self.count = 0

    def cache_token(self) -> Hashable:
        return ()

    def prehook(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        self.count += 1


def test_hooks_run_for_each_plugin(program: Any) -> None:
    first, second = Counting(), Counting()
    first.run(program.main, 4)
    second.run(program.main, 4)
    assert first.count == second.count > 5
    assert second.context.owner is first.context.owner
    assert _owner_builds(second) == _owner_builds(first)


class Capturing(splice.Plugin):
    """Inserts a closure over the plugin itself: code that cannot be shared."""

    def __init__(self) -> None:
        self.calls = 0

    def cache_token(self) -> Hashable:
        return "capturing"

    def lowered(self, ir: FunctionIR) -> FunctionIR | None:
        if ir.name != "leaf":
            return None

        def bump() -> None:
            self.calls += 1

        ir.body.insert(0, Assign((), Call(Const(bump, ir.pos), [], []), ir.pos))
        return ir


def test_code_holding_its_plugin_is_built_per_plugin(program: Any) -> None:
    first, second = Capturing(), Capturing()
    first.run(program.leaf, 1)
    second.run(program.leaf, 1)
    second.run(program.leaf, 1)
    assert (first.calls, second.calls) == (1, 2)


def test_an_owner_keeps_no_plugin_alive(program: Any) -> None:
    tracer = Tracer()
    tracer.run(program.main, 3)
    owner = tracer.context.owner
    gone = weakref.ref(tracer)
    del tracer
    gc.collect()
    assert gone() is None, "the shared code keeps the Tracer (and its events) alive"
    assert owner is not None and len(owner.code) >= 3


def test_equal_compositions_share(program: Any) -> None:
    a = splice.compose(Tracer(), Counting())
    b = splice.compose(Tracer(), Counting())
    a.run(program.main, 3)
    built = _owner_builds(a)
    assert b.run(program.main, 3) == program.main(3)
    assert b.context.owner is a.context.owner and _owner_builds(b) == built


def test_an_unhashable_token_is_a_clear_error(program: Any) -> None:
    class Listing(splice.Plugin):
        def cache_token(self) -> Any:
            return ["not", "hashable"]

    with pytest.raises(TypeError, match=r"cache_token\(\) must return a hashable"):
        Listing().run(program.leaf, 1)


def test_shipped_plugins_define_their_token() -> None:
    import math

    from splice.plugins import FastMath, Patch

    assert Tracer().cache_token() == Tracer().cache_token()
    assert Tracer(args=True).cache_token() != Tracer().cache_token()
    assert FastMath({math.sin: math.cos}).cache_token() == \
        FastMath({math.sin: math.cos}).cache_token()
    assert FastMath({math.sin: math.cos}).cache_token() != \
        FastMath({math.sin: math.tan}).cache_token()
    assert Patch().cache_token() is None  # a class and live replacements of its own
    for cls in (Tracer, FastMath, Patch):
        assert "cache_token" in vars(cls), cls


CALL_SHAPES = """
    import collections

    class Node:
        def __init__(self, value):
            self.value = value
            self.children = []

        def add(self, child):
            self.children.append(child)
            return self

        def total(self):
            return self.value + sum(c.total() for c in self.children)

        def __call__(self, k):
            return self.value * k

    def builtin_methods(n):
        xs = []
        for i in range(n):
            xs.append(i)
        ins = xs.insert
        ins(0, -1)
        d = {}
        d.setdefault("k", []).append(n)
        counts = collections.Counter("abca")
        return xs.count(-1), sorted(d.items()), counts.most_common(1), " ".join(["a", "b"])

    def methods_and_objects(n):
        root = Node(1)
        for i in range(n):
            root.add(Node(i)).add(Node(-i))
        leaf = root.children[0]
        return root.total(), leaf(3), str(root.value).zfill(3)

    def main(n):
        return builtin_methods(n), methods_and_objects(n)
"""


class Tokened(splice.Plugin):
    """The identity plugin with a token: its code is shared and written to disk."""

    def cache_token(self) -> Hashable:
        return "tokened"


class TokenedHooked(Tokened):
    def prehook(self, fn: Any, args: Any, kwargs: Any) -> None:
        pass


@pytest.mark.parametrize("make", [Tokened, TokenedHooked, Tracer],
                         ids=["plain", "hooked", "tracer"])
def test_code_of_every_call_shape_is_shared(tmp_path: Path, make: Any) -> None:
    """Whatever kind of call site code holds (method lookups, bound builtin methods in
    locals, callable objects, constructors), what one plugin built is bound by an equal
    one, not built again: nothing in it is an object of the context that built it that
    sharing cannot name (``splice.runtime.sharing``: such code would be rebuilt for every
    plugin object and never written to disk)."""
    program = load(tmp_path, "call_shapes_program", CALL_SHAPES)
    first = make()
    assert first.run(program.main, 4) == program.main(4)
    owner = first.context.owner
    assert owner is not None
    unshared = sorted(code.co_qualname for code, shared in owner.code.items()
                      if not isinstance(shared, Exception) and shared.template is None)
    assert unshared == [], f"code not shareable: {unshared}"
    built = _owner_builds(first)
    second = make()
    assert second.run(program.main, 4) == program.main(4)
    assert _owner_builds(second) == built, "the second plugin compiled again"
