"""What splice keeps on a plugin object (``splice.runtime.plugin_state``): one declared
state, not copied with the plugin, and emptied by ``invalidate``."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from typing import Any

import splice
from splice.runtime.plugin_state import PluginState, state_of


def double(x: int) -> int:
    return 2 * x


def program(n: int) -> list[int]:
    return [double(i) for i in range(n)]


class Counting(splice.Plugin):
    def __init__(self) -> None:
        self.calls = 0

    def cache_token(self) -> None:
        return None

    @splice.intercept(double)
    def double(self, x: int) -> Any:
        self.calls += 1
        return self.recurse_call(double, x)


def test_splice_keeps_one_attribute_on_a_plugin() -> None:
    plugin = Counting()
    assert plugin.run(program, 4) == program(4)
    assert plugin.calls == 4
    ours = [name for name in vars(plugin) if name.startswith("_splice")]
    assert ours == ["_splice"]
    state = state_of(plugin)
    assert isinstance(state, PluginState)
    assert list(state.contexts) == [(id(plugin),)]
    assert double in state.bypass  # the first context intercepts through the bypass table


def test_copies_and_pickles_start_with_a_state_of_their_own() -> None:
    plugin = Counting()
    plugin.run(program, 2)
    for other in (copy.copy(plugin), pickle.loads(pickle.dumps(plugin))):
        assert "_splice" not in vars(other) or state_of(other) is not state_of(plugin)
        assert state_of(other).serial > state_of(plugin).serial
        assert state_of(other).contexts == {}
        assert other.run(program, 3) == program(3)
        assert other.calls == 2 + 3


def test_invalidate_lets_the_old_context_go() -> None:
    """Before, the first intercepting context stayed referenced from the plugin after
    ``invalidate`` (as the owner of its bypass table), with all its code."""
    plugin = Counting()
    plugin.run(program, 2)
    old = weakref.ref(plugin.context)
    plugin.invalidate()
    assert plugin.run(program, 3) == program(3)
    assert plugin.calls == 5
    gc.collect()
    assert old() is None
    assert state_of(plugin).bypass_owner is plugin.context
