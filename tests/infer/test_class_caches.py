"""Inference's caches of what it found about a class (``splice.infer.objects``): they hold
classes weakly, follow changes of the methods and are dropped when the world moves."""

from __future__ import annotations

import gc
import importlib
import weakref

from splice.infer import Exact, infer, join, objects
from tests.infer import class_cache_program as program

world = importlib.import_module("splice.cache.world")


def test_a_dropped_class_is_freed() -> None:
    counter = program.make_counter()
    assert infer(program.read_count, [counter]).return_type == Exact(int)
    assert objects._CLASSES.get(counter) is not None  # cached while the class lives
    ref = weakref.ref(counter)
    del counter
    gc.collect()
    assert ref() is None


def test_many_dropped_classes_leave_no_entries() -> None:
    gc.collect()
    before = len(objects._CLASSES)
    refs = []
    for _ in range(20):
        counter = program.make_counter()
        assert infer(program.read_count, [counter]).return_type == Exact(int)
        refs.append(weakref.ref(counter))
        del counter
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)
    assert len(objects._CLASSES) <= before


def test_a_method_added_to_a_class_is_seen() -> None:
    counter = program.make_counter()
    assert infer(program.read_count, [counter]).return_type == Exact(int)
    counter.relabel = program.Labels.relabel  # type: ignore[attr-defined]
    assert infer(program.read_count, [counter]).return_type == join(Exact(int), Exact(str))
    del counter.relabel  # type: ignore[attr-defined]
    assert infer(program.read_count, [counter]).return_type == Exact(int)


def test_a_changed_method_code_is_seen() -> None:
    counter = program.make_counter()
    assert infer(program.read_count, [counter]).return_type == Exact(int)
    counter.describe.__code__ = program.Labels.relabel.__code__  # type: ignore[attr-defined]
    assert infer(program.read_count, [counter]).return_type == join(Exact(int), Exact(str))


def test_entries_are_dropped_when_the_world_moves() -> None:
    counter = program.make_counter()
    infer(program.read_count, [counter])
    assert objects._CLASSES.get(counter) is not None
    assert objects._MODULE_ATTRIBUTES.get(program) is not None
    world.advance()
    assert objects._CLASSES.get(counter) is None
    assert objects._MODULE_ATTRIBUTES.get(program) is None
