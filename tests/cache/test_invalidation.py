"""Invalidation: when a definition an instance relied on changes, exactly the instances that
relied on it (directly, or through a callee) are invalidated, and the world moves.

Callee edges are seen as they change (audit hook on ``__code__``/``__defaults__``); global
and attribute edges are checked by guards when ``invoke`` enters an instance (CPython 3.11
has neither dict watchers nor an audit event for ``type.__setattr__``) or by
``revalidate()``."""

from __future__ import annotations

import importlib.util
import itertools
import types
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.cache.instances import CodeInstance, InvalidatedError, revalidate

HERE = Path(__file__).resolve().parent
_counter = itertools.count()


def load_fresh(path: Path) -> types.ModuleType:
    """A fresh module object for the program at ``path`` (its own globals and classes)."""
    name = f"_splice_{path.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_text(tmp_path: Path, name: str, text: str) -> types.ModuleType:
    """A fresh module of ``text``, from a file of its own (splice reads its source)."""
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load_fresh(path)


@pytest.fixture
def program() -> types.ModuleType:
    """A fresh copy of ``edges_program``."""
    return load_fresh(HERE / "edges_program.py")


def compile_all(program: types.ModuleType, *names: str) -> dict[str, CodeInstance]:
    plugin = splice.Plugin()
    return {name: splice.compile(plugin, getattr(program, name), int) for name in names}


def assert_only(instances: dict[str, CodeInstance], invalid: set[str]) -> None:
    revalidate()
    state = {name: ci.valid for name, ci in instances.items()}
    assert state == {name: name not in invalid for name in instances}


def edges_of(ci: CodeInstance, kind: str) -> list[object]:
    return [(e.target, getattr(e, "name", None)) for e in ci.edges if e.kind == kind]


def test_each_kind_of_edge_is_recorded(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_callee", "uses_global", "uses_attribute")
    assert any(target is program.helper for target, _ in edges_of(ci["uses_callee"], "callee"))
    # SCALE holds an int: inference typed it by its class, and relied on nothing more
    assert any(target is program.__dict__ and name == "SCALE"
               for target, name in edges_of(ci["uses_global"], "global class"))
    # Shape.sides too (an int: its class), Shape.area by its identity (a method it calls)
    assert any(target is program.Shape and name == "sides"
               for target, name in edges_of(ci["uses_attribute"], "attribute class"))
    method = compile_all(program, "uses_method")["uses_method"]
    assert any(target is program.Shape and name == "area"
               for target, name in edges_of(method, "attribute"))


def test_callee_redefinition(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_callee", "uses_other_callee", "uses_global", "outer")
    assert splice.invoke(ci["uses_callee"], 1) == 4
    before = splice.world()
    program.helper.__code__ = (lambda x: x + 100).__code__
    assert splice.world() > before  # seen at once, through the audit hook
    # outer relied on uses_callee, which relied on helper
    assert_only(ci, {"uses_callee", "outer"})
    with pytest.raises(InvalidatedError, match="helper"):
        splice.invoke(ci["uses_callee"], 1)
    fresh = splice.compile(ci["uses_callee"].owner.plugins[0], program.uses_callee, int)
    assert splice.invoke(fresh, 1) == program.uses_callee(1) == 202


def test_callee_defaults_change(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_callee", "uses_nothing")
    program.helper.__defaults__ = (5,)
    assert_only(ci, {"uses_callee"})


def test_global_rebinding(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_global", "uses_callee", "uses_nothing")
    assert splice.invoke(ci["uses_global"], 2) == 6
    # another int: the instance read SCALE as an int, and reads its value as it runs
    program.SCALE = 10
    assert splice.invoke(ci["uses_global"], 2) == program.uses_global(2) == 20
    assert_only(ci, set())
    before = splice.world()
    program.SCALE = 10.5
    with pytest.raises(InvalidatedError, match="the class of global .*SCALE"):
        splice.invoke(ci["uses_global"], 2)
    assert splice.world() > before
    assert_only(ci, {"uses_global"})
    fresh = splice.compile(None, program.uses_global, int)
    assert splice.invoke(fresh, 2) == program.uses_global(2) == 21.0


def test_rebinding_a_callee_name(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_callee", "uses_other_callee", "outer")
    program.helper = lambda x: x + 1000
    assert_only(ci, {"uses_callee", "outer"})


def test_class_attribute_change(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_attribute", "uses_global", "uses_other_class")
    assert splice.invoke(ci["uses_attribute"], 2) == 8
    program.Shape.sides = 6  # another int: inference relied on its class only
    assert splice.invoke(ci["uses_attribute"], 2) == 12
    assert_only(ci, set())
    program.Shape.sides = 6.5
    with pytest.raises(InvalidatedError, match="sides"):
        splice.invoke(ci["uses_attribute"], 2)
    assert_only(ci, {"uses_attribute"})
    fresh = splice.compile(None, program.uses_attribute, int)
    assert splice.invoke(fresh, 2) == 13.0


def test_method_replaced_on_the_class(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_method", "uses_other_class", "uses_nothing")
    assert splice.invoke(ci["uses_method"], 3) == 9
    program.Shape.area = lambda self, x: -x
    assert_only(ci, {"uses_method"})


def test_dependents_are_invalidated_with_their_dependency(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_nothing", "uses_global")
    ci["uses_nothing"].add_dependent(ci["uses_global"])
    ci["uses_nothing"].invalidate("test")
    assert not ci["uses_global"].valid
    assert "depends on" in str(ci["uses_global"].invalidated_because)


def test_splice_invalidate_reaches_instances(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_callee", "uses_nothing")
    splice.invalidate(program.helper)
    assert_only(ci, {"uses_callee"})


def test_unchanged_rebinding_to_the_same_object_keeps_instances(
        program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_callee", "uses_attribute")
    program.helper = program.helper
    program.Shape.sides = program.Shape.sides
    assert_only(ci, set())


def test_shadowing_a_builtin_with_a_global(program: types.ModuleType) -> None:
    ci = compile_all(program, "uses_builtin", "uses_nothing")
    assert splice.invoke(ci["uses_builtin"], 4) == 4
    program.len = lambda seq: -1
    assert_only(ci, {"uses_builtin"})
    fresh = splice.compile(None, program.uses_builtin, int)
    assert splice.invoke(fresh, 4) == program.uses_builtin(4) == -1


PER_RUN = """
class Planner:
    def __init__(self):
        self.steps = []

    def plan(self, n):
        self.steps.extend(range(n))
        return len(self.steps)

planner = None
LIMITS = (3, 4.5)

def work(n):
    total = 0
    for i in range(n):
        total += planner.plan(2) + LIMITS[0]
    return total

def main(n):
    global planner
    planner = Planner()
    return work(n)
"""


class CountsTypedBuilds(splice.Plugin):
    def __init__(self) -> None:
        self.built = 0

    def typed(self, ir):  # type: ignore[no-untyped-def]
        self.built += 1
        return ir


def _builds_per_run(plugin: CountsTypedBuilds, main: Any, runs: int = 4) -> list[int]:
    """How many instances each of ``runs`` runs of ``main(5)`` built, each run's result
    checked against native."""
    builds = []
    for _ in range(runs):
        plugin.built = 0
        assert plugin.run(main, 5) == main(5)
        builds.append(plugin.built)
    return builds


def test_a_global_rebound_to_a_new_object_each_run_builds_once(tmp_path: Path) -> None:
    # issue 15's storm: a program that rebinds a module global at the start of every run
    # (planner = Planner()) rebuilt every instance that read it, on every run
    module = load_text(tmp_path, "per_run", PER_RUN)
    plugin = CountsTypedBuilds()
    builds = _builds_per_run(plugin, module.main)
    assert builds[0] > 0 and builds[1:] == [0, 0, 0], builds
    # another class, or a tuple of other shape: rebuilt, and still right
    module.LIMITS = (3.5, 4.5)
    plugin.built = 0
    assert plugin.run(module.main, 3) == module.main(3) == 22.5
    assert plugin.built > 0


PER_RUN_CLASS_ATTRIBUTE = """
class Planner:
    current = None

    def __init__(self):
        self.steps = []

    def plan(self, n):
        self.steps.extend(range(n))
        return len(self.steps)

Planner.current = Planner()

def work(n):
    total = 0
    for i in range(n):
        total += Planner.current.plan(2)
    return total

def main(n):
    Planner.current = Planner()
    return work(n)
"""


def test_a_class_attribute_rebound_to_a_new_object_each_run_builds_once(
        tmp_path: Path) -> None:
    # the same storm through a class attribute (Planner.current = Planner()): inference
    # typed it by its class, so another object of that class keeps the instances
    module = load_text(tmp_path, "per_run_class_attribute", PER_RUN_CLASS_ATTRIBUTE)
    plugin = CountsTypedBuilds()
    builds = _builds_per_run(plugin, module.main)
    assert builds[0] > 0 and builds[1:] == [0, 0, 0], builds
    # an object of another class: rebuilt, and still right
    module.Planner.current = 7
    plugin.built = 0
    assert plugin.run(module.work, 0) == module.work(0) == 0
    assert plugin.built > 0


FRESH_CLOSURE = """
def make_scale(factor):
    def scale(x):
        return x * factor
    return scale

scale = None

def work(n):
    return sum(scale(i) for i in range(n))

def main(n, factor):
    globals()["scale"] = make_scale(factor)   # a new function object every run
    return work(n)
"""


def test_rebuilds_per_function_are_bounded(tmp_path: Path) -> None:
    # a global rebound to a new function each run invalidates what relied on its identity;
    # after CompileParams.max_rebuilds invalidations the function runs without its typed
    # stages instead of being built again, and splice.explain says why
    module = load_text(tmp_path, "fresh_closure", FRESH_CLOSURE)
    plugin = CountsTypedBuilds()
    builds = []
    for run in range(10):
        before = plugin.context.instances.builds if run else 0
        assert plugin.run(module.main, 20, run) == module.main(20, run)
        builds.append(plugin.context.instances.builds - before)
    bound = plugin.context.params.max_rebuilds
    assert sum(1 for b in builds[1:] if b) <= bound, builds
    assert builds[-3:] == [0, 0, 0], builds
    reasons = [r.reason for r in splice.explain(plugin) if r.name.endswith(".work")]
    assert reasons and all("without its typed stages" in r and "invalidated" in r and
                           f"max_rebuilds is {bound}" in r for r in reasons), reasons


DIRECT_CALLERS = """
hook = None

def report(x):
    if hook is not None:          # a global the program rebinds: an edge of report's
        return hook(x)
    return x

""" + "".join(f"def caller{i}(x):\n    return report(x) + {i}\n\n" for i in range(12))


def test_rebuilds_are_bounded_for_callees_of_direct_calls(tmp_path: Path) -> None:
    """A function many callers call directly (each new caller's compile builds an instance
    of its callee for the argument types), reading a global the program rebinds between
    calls (as pytest's assertion helper reads the hook it sets per test): built at most
    ``max_rebuilds`` times, then run without its typed stages from every caller."""
    module = load_text(tmp_path, "direct_callers", DIRECT_CALLERS)
    builds: list[str] = []

    class Counting(splice.Plugin):
        def typed(self, ir: Any) -> Any:
            builds.append(ir.name)
            return ir

    plugin = Counting()
    for i in range(12):
        module.hook = (lambda x: -x) if i % 2 else None
        caller = getattr(module, f"caller{i}")
        assert plugin.run(caller, 5) == caller(5)
    bound = plugin.context.params.max_rebuilds
    assert 1 <= builds.count("report") <= bound, builds
    [record] = [r for r in splice.explain(plugin) if r.name.endswith(".report")]
    assert record.entered and "without its typed stages" in record.reason
