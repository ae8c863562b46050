"""Inference's caches of what it found about a class (``splice.infer.objects``): they hold
classes weakly, follow changes of the methods and are dropped when the world moves. An
interpreter's own caches hold the classes it looked at until it forgets them, which it does
when a compile using it ends: a plugin's long-lived interpreter keeps none."""

from __future__ import annotations

import gc
import importlib
import weakref

import splice
from splice.infer import AbstractInterpreter, Exact, infer, join, objects
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


#: an interpreter that lives as long as the tests, as a plugin's lives as long as the plugin
LONG_LIVED = AbstractInterpreter()


class _Choosing(splice.Plugin):
    interpreter = LONG_LIVED


def _compiled_under_the_long_lived_interpreter() -> weakref.ref[type]:
    counter = program.make_counter()
    instance = splice.compile(_Choosing(), program.read_count, counter)
    assert instance.return_type == Exact(int)
    return weakref.ref(counter)


def test_a_plugins_interpreter_keeps_no_class_after_the_compile() -> None:
    ref = _compiled_under_the_long_lived_interpreter()
    gc.collect()
    assert ref() is None
    assert LONG_LIVED.cache == {} and LONG_LIVED.attr_table == {}


def test_an_interpreter_that_forgets_holds_no_class() -> None:
    interpreter = AbstractInterpreter()
    counter = program.make_counter()
    assert interpreter.infer(program.read_count, [counter]).return_type == Exact(int)
    ref = weakref.ref(counter)
    del counter
    interpreter.forget()
    gc.collect()
    assert ref() is None
    # and it goes on working, from scratch
    assert interpreter.infer(program.read_count, [program.make_counter()]).return_type == \
        Exact(int)
