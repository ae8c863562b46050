"""Typed code instances on disk (splice/cache/stored_instances.py, owners.py,
splice/runtime/instance_sharing.py): a later process loads what an earlier one built under
an equal FastMath, infers nothing and runs the same; what an instance relied on is checked
against the program before its code runs (an edited callee, a rebound global: rebuilt);
saving enters no hook and no inference; an entry whose code part cannot be used is
generated again from its IR, without inference."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from splice.cache.disk import MAGIC

PROGRAM = """
    import math

    SCALE = 2.0

    def fast_sin(x):
        return x - x ** 3 / 6

    def wave(x):
        return math.sin(x) * SCALE

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def offset(k=0, depth=0):
        # (recursive with a default: its instance checks the default when bound)
        return offset(k, depth + 1) if depth < 2 else k

    def total(n):
        acc = 0.0
        for i in range(n):
            acc += wave(i / n)
        return acc + fib(10) + offset()
"""

#: runs prog.total under a counting FastMath and reports what happened, as JSON
DRIVER = """
    import importlib.abc, json, sys
    sys.path.insert(0, sys.argv[1])
    import math
    import splice
    from splice.cache.owners import Owner
    from splice.plugins import FastMath
    import prog

    if len(sys.argv) > 2:
        exec(sys.argv[2])  # what the test changes in the program first

    counts = {"inferences": 0, "typed": 0, "during_save": 0}
    saving = [False]

    def count_inferences(stages):
        infer = stages.infer_under

        def counted_infer(*args, **kwargs):
            counts["inferences"] += 1
            counts["during_save"] += saving[0]
            return infer(*args, **kwargs)
        stages.infer_under = counted_infer

    class CountOnceLoaded(importlib.abc.MetaPathFinder):
        # (the stages are patched when they load: a run loading no compiler infers nothing)
        def find_spec(self, name, path, target=None):
            if name != "splice.compiler.stages":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                count_inferences(module)
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, CountOnceLoaded())
    save = Owner.save_instance

    def counted_save(self, fn, shared):
        saving[0] = True
        try:
            return save(self, fn, shared)
        finally:
            saving[0] = False

    Owner.save_instance = counted_save

    class Counting(FastMath):
        def typed(self, ir):
            counts["typed"] += 1
            counts["during_save"] += saving[0]
            return super().typed(ir)

    plugin = Counting({math.sin: prog.fast_sin})
    result = plugin.run(prog.total, 20)
    # (before rewrites and explain below, which read the instances' IR)
    modules = sorted(m for m in sys.modules if m.startswith("splice."))
    owner = plugin.context.owner
    disk = owner.disk
    instances = plugin.context.instances
    # a second plugin binds what the first loaded (its checks include total's default)
    again = Counting({math.sin: prog.fast_sin}).run(prog.total, 20)
    modules_again = sorted(m for m in sys.modules if m.startswith("splice."))
    print(json.dumps({
        "again": again, "modules_again": modules_again,
        "result": result, "native": prog.total(20),
        "by_hand": sum(prog.fast_sin(i / 20) * prog.SCALE for i in range(20)) + prog.fib(10),
        "built": instances.builds, "bound": instances.bound,
        "loaded": disk.loaded, "written": disk.written,
        "ignored": [why for _, why in disk.ignored],
        "origins": sorted(ci.origin for ci in instances),
        "rewrites": sorted({r.function for r in plugin.rewrites}),
        "explain": str(splice.explain(plugin)), **counts,
        "modules": modules,
    }))
"""


@pytest.fixture
def workspace(tmp_path: Path) -> dict[str, Path]:
    program = tmp_path / "program"
    program.mkdir()
    (program / "prog.py").write_text(textwrap.dedent(PROGRAM))
    (tmp_path / "driver.py").write_text(textwrap.dedent(DRIVER))
    return {"program": program, "driver": tmp_path / "driver.py", "cache": tmp_path / "cache"}


def _run(workspace: dict[str, Path], change: str = "") -> dict[str, Any]:
    environment = {**os.environ, "SPLICE_CACHE": "1",
                   "SPLICE_CACHE_DIR": str(workspace["cache"])}
    command = [sys.executable, str(workspace["driver"]), str(workspace["program"])]
    done = subprocess.run([*command, *([change] if change else [])], capture_output=True,
                          text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert report["result"] == report["by_hand"] != report["native"], "not rewritten"
    return report


def _instance_entries(cache: Path) -> list[Path]:
    found = []
    for path in sorted(cache.glob("*/*/*.entry")):
        data = path.read_bytes()
        start = len(MAGIC) + 32 + 4
        size = int.from_bytes(data[start - 4:start], "little")
        if "instance" in marshal.loads(data[start:start + size]):
            found.append(path)
    return found


def test_a_later_process_loads_the_instances_and_infers_nothing(
        workspace: dict[str, Path]) -> None:
    cold = _run(workspace)
    assert cold["built"] >= 4 and cold["written"] == cold["built"] and cold["inferences"]
    assert cold["during_save"] == 0, "saving entered a hook or an inference"
    warm = _run(workspace)
    assert warm["built"] == 0 and warm["loaded"] == cold["built"] == warm["bound"]
    assert warm["inferences"] == warm["typed"] == 0
    assert warm["rewrites"] == cold["rewrites"] == ["wave"]
    assert warm["ignored"] == []
    # what runs loaded code loads none of the compiler, the IR's nodes or inference
    heavy = {"splice.compiler.pipeline", "splice.compiler.stages", "splice.ir.nodes",
             "splice.ir.codegen", "splice.ir.lowering", "splice.infer.interpreter",
             "splice.cache.stored_ir"}
    assert heavy <= set(cold["modules"]), heavy - set(cold["modules"])
    assert not heavy & set(warm["modules"]), heavy & set(warm["modules"])
    # nor does a second plugin binding the loaded instances (checking defaults included)
    assert warm["again"] == warm["result"]
    assert not heavy & set(warm["modules_again"]), heavy & set(warm["modules_again"])


def _edit(workspace: dict[str, Path], old: str, new: str) -> None:
    source = workspace["program"] / "prog.py"
    text = source.read_text()
    assert old in text
    source.write_text(text.replace(old, new))


def test_an_edited_callee_is_rebuilt_with_what_relied_on_it(
        workspace: dict[str, Path]) -> None:
    cold = _run(workspace)
    # the replacement: wave's instance relied on it (its typed IR calls it), total's on
    # wave's code only (it calls wave's instance, which is checked when bound)
    _edit(workspace, "return x - x ** 3 / 6", "return x - x ** 3 / 6.0")
    edited = _run(workspace)
    assert edited["built"] == 1 and edited["loaded"] == cold["built"] - 1
    assert any("prog.fast_sin changed since the entry was written" in why
               for why in edited["ignored"])
    # fib: its own instance (its code has another fingerprint: another entry) and total's
    # two (generic and for an int), which inferred what fib returns; wave's still loads
    _edit(workspace, "return n if n < 2 else", "return n if n <= 1 else")
    again = _run(workspace)
    assert again["built"] == 3 and again["loaded"] == cold["built"] - 3
    assert sum("prog.fib changed since the entry was written" in why
               for why in again["ignored"]) == 2, again["ignored"]


def test_a_global_rebound_to_another_class_is_not_run_from_stale_code(
        workspace: dict[str, Path]) -> None:
    cold = _run(workspace)
    same_class = _run(workspace, "prog.SCALE = 3.0")  # inference read its class only
    assert same_class["built"] == 0 and same_class["loaded"] == cold["built"]
    other_class = _run(workspace, "prog.SCALE = 3")
    assert other_class["built"] >= 1
    assert any("the class of global" in why and "SCALE" in why
               for why in other_class["ignored"]), other_class["ignored"]


def test_a_bad_code_part_is_generated_again_from_the_ir(workspace: dict[str, Path]) -> None:
    cold = _run(workspace)
    entries = _instance_entries(workspace["cache"])
    assert len(entries) == cold["built"]
    for entry in entries:
        data = bytearray(entry.read_bytes())
        data[-3] ^= 0xFF  # in the code part (marshal's payload is last)
        entry.write_bytes(bytes(data))
    cured = _run(workspace)
    assert cured["built"] == 0 and cured["inferences"] == cured["typed"] == 0
    assert cured["origins"].count("cured") == cold["built"]
    assert "cured: its code in the cache could not be used (its code part is corrupt" in \
        cured["explain"]
    again = _run(workspace)
    assert again["origins"] == ["bound"] * cold["built"] and again["written"] == 0


def test_a_function_calling_a_function_it_defines_is_loaded(
        workspace: dict[str, Path]) -> None:
    # inference calls a nested def through a template of its code, which no program code
    # can reach: what the instance relies on is the code it holds, not that object
    _edit(workspace, "    acc = 0.0\n    for i in range(n):\n        acc += wave(i / n)",
          "    def step(i):\n        return wave(i / n)\n    acc = 0.0\n"
          "    for i in range(n):\n        acc += step(i)")
    cold = _run(workspace)
    assert cold["written"] == cold["built"] > 4
    warm = _run(workspace)
    assert warm["built"] == 0 and warm["loaded"] == cold["built"], warm["ignored"]


def test_a_function_reading_an_object_a_class_attribute_holds_is_loaded(
        workspace: dict[str, Path]) -> None:
    # what it relied on is the class of what Scale.DEFAULT holds, which another process
    # checks (an object's identity it could not)
    _edit(workspace, "SCALE = 2.0\n",
          "SCALE = 2.0\n\nclass Scale:\n    def __init__(self, factor):\n"
          "        self.factor = factor\n\nScale.DEFAULT = Scale(SCALE)\n")
    _edit(workspace, "return math.sin(x) * SCALE", "return math.sin(x) * Scale.DEFAULT.factor")
    cold = _run(workspace)
    assert cold["written"] == cold["built"] >= 4
    warm = _run(workspace)
    assert warm["built"] == 0 and warm["loaded"] == cold["built"], warm["ignored"]
    other_class = _run(workspace, "prog.Scale.DEFAULT = prog.Scale(2.0); "
                                  "prog.Scale.DEFAULT.__class__ = type('S2', (prog.Scale,), {})")
    assert other_class["built"] >= 1
    assert any("the class of attribute" in why for why in other_class["ignored"]), \
        other_class["ignored"]


def test_a_caller_of_a_memoized_function_is_loaded(workspace: dict[str, Path]) -> None:
    # functools.wraps gives the wrapper the function's name, so a module names it; its cells
    # hold the memo dict (which no other process can check, and nothing relied on) and fib
    _edit(workspace, "def fib(n):",
          "import functools\n\ndef memoize(fn):\n    memo = {}\n\n"
          "    @functools.wraps(fn)\n    def wrapper(n):\n        if n not in memo:\n"
          "            memo[n] = fn(n)\n        return memo[n]\n    return wrapper\n\n"
          "@memoize\ndef fib(n):")
    cold = _run(workspace)
    warm = _run(workspace)
    assert warm["ignored"] == [], warm["ignored"]
    assert warm["loaded"] >= 2 and warm["built"] < cold["built"], (cold, warm)


def test_a_function_only_a_wrappers_cell_holds_is_found_and_checked(
        workspace: dict[str, Path]) -> None:
    # without functools.wraps, the module binds the wrapper under fib's name and nothing
    # binds fib itself: its only reference is the wrapper's cell (``fib.<cell:fn>``)
    _edit(workspace, "def fib(n):",
          "def memoize(fn):\n    memo = {}\n\n"
          "    def wrapper(n):\n        if n not in memo:\n"
          "            memo[n] = fn(n)\n        return memo[n]\n    return wrapper\n\n"
          "@memoize\ndef fib(n):")
    cold = _run(workspace)
    assert cold["written"] == cold["built"], cold
    warm = _run(workspace)
    assert warm["built"] == 0 and warm["loaded"] == cold["built"], warm["ignored"]
    # the function in the cell is checked by its content: an edit rebuilds what relied on it
    _edit(workspace, "return n if n < 2 else", "return n if n <= 1 else")
    edited = _run(workspace)
    assert edited["built"] >= 1 and edited["loaded"] < cold["built"]
    assert any("changed since the entry was written" in why or "does not" in why
               for why in edited["ignored"]), edited["ignored"]
