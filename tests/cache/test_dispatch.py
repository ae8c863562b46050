"""``SpecializingEntry``: what a context's dispatch table can hold for a function when its
plugins use the typed stages: one instance per exact argument classes (bounded), the generic
instance beyond, rebuilt when invalidated. Differential against native calls."""

from __future__ import annotations

import importlib.util
import itertools
import math
import types
from pathlib import Path

import splice
from splice.cache.dispatch import SpecializingEntry, wants_typed_stages
from splice.plugins import FastMath

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
    program.SCALE = 7
    assert entry(2) == 14
    assert not first.valid and entry.instances[(int,)] is not first


def test_typed_rewrites_apply_per_specialization() -> None:
    plugin = FastMath({math.sin: marked_sin})
    assert wants_typed_stages((plugin,)) and not wants_typed_stages((splice.Plugin(),))
    entry = SpecializingEntry(plugin.context, sine)
    assert entry(0.5) == ("fast", 0.5)
    assert entry(1) == math.sin(1)  # an int: not rewritten
