"""How long contexts live (``splice.runtime.registry.context_of``): a stack's context is kept
by its newest plugin, so composing a short-lived plugin with a long-lived one leaves nothing
behind on the long-lived one once the short-lived one is dropped."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

import splice
from splice.runtime.plugin_state import state_of

RUNS = 50


def leaf(x: int) -> int:
    return x + 1


def entry(n: int) -> list[int]:
    return [leaf(i) for i in range(n)]


class LongLived(splice.Plugin):
    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass


class Short(splice.Plugin):
    pass


def _kept_by(plugin: splice.Plugin) -> int:
    """How many contexts ``plugin`` keeps."""
    return len(state_of(plugin).contexts)


@pytest.mark.parametrize("short_first", [False, True], ids=["inner", "outer"])
def test_short_lived_plugins_composed_with_a_long_lived_one_are_freed(
        short_first: bool) -> None:
    long_lived = LongLived()
    assert long_lived.run(entry, 3) == entry(3)  # it has a context of its own too
    plugins: list[weakref.ref[splice.Plugin]] = []
    contexts: list[weakref.ref[Any]] = []
    for _ in range(RUNS):
        short = Short()
        stack = (short, long_lived) if short_first else (long_lived, short)
        composed = splice.compose(*stack)
        assert composed.run(entry, 3) == entry(3)
        context = composed.context
        assert context.plugins == stack and all(
            a is b for a, b in zip(context.plugins, stack, strict=True))
        plugins.append(weakref.ref(short))
        contexts.append(weakref.ref(context))
        del short, stack, composed, context
    gc.collect()
    assert [r() for r in plugins] == [None] * RUNS
    assert [r() for r in contexts] == [None] * RUNS
    assert _kept_by(long_lived) <= 1  # its own context only


def test_nested_runs_of_short_lived_plugins_are_freed() -> None:
    long_lived = LongLived()
    plugins: list[weakref.ref[splice.Plugin]] = []
    for _ in range(RUNS):
        short = Short()
        assert long_lived.run(short.run, entry, 3) == entry(3)  # under both
        plugins.append(weakref.ref(short))
        del short
    gc.collect()
    assert [r() for r in plugins] == [None] * RUNS
    assert _kept_by(long_lived) <= 1


def test_a_composition_of_live_plugins_keeps_its_context() -> None:
    outer, inner = LongLived(), Short()
    context = splice.compose(outer, inner).context
    assert splice.compose(outer, inner).run(entry, 3) == entry(3)
    builds = context.code.builds
    ref = weakref.ref(context)
    del context
    gc.collect()
    assert ref() is not None  # both plugins live: the context is reused
    assert splice.compose(outer, inner).context is ref()
    assert splice.compose(outer, inner).run(entry, 4) == entry(4)
    assert ref().code.builds == builds  # nothing compiled again
    assert (_kept_by(outer), _kept_by(inner)) == (0, 1)  # kept by the newest plugin only
    assert splice.compose(inner, outer).context is not ref()  # another stack
    assert (_kept_by(outer), _kept_by(inner)) == (0, 2)


def test_plugins_take_no_arguments_unless_they_have_an_init() -> None:
    with pytest.raises(TypeError):
        splice.Plugin(1)  # type: ignore[call-arg]

    class Configured(splice.Plugin):
        def __init__(self, level: int) -> None:
            self.level = level

    assert Configured(3).level == 3
