"""A callable object of an immutable C class (``operator.itemgetter(0)``) is its own entry
under a context without hooks or intercepts: after its first call, the table's C lookup (and
``_slow_entry``) answers it by its class (``DispatchTable.native_callables``) without
resolving it again; under hooks or intercepts every call still goes through them."""

from __future__ import annotations

import operator
from typing import Any

import splice


def calls(getter: Any, n: int) -> list[Any]:
    return [getter((i, -i)) for i in range(n)]


class Counting(splice.Plugin):
    def __init__(self) -> None:
        self.seen = 0

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if type(fn) is operator.itemgetter:
            self.seen += 1


def test_answered_by_its_class_after_the_first_call() -> None:
    plugin = splice.Plugin()
    getter = operator.itemgetter(1)
    assert plugin.run(calls, getter, 5) == calls(getter, 5)
    table = plugin.context.table
    assert table.native_callables.get(operator.itemgetter) is operator.itemgetter
    # another object of the class: answered the same way, with its own behaviour
    other = operator.itemgetter(0)
    assert plugin.run(calls, other, 3) == calls(other, 3)


def test_hooks_still_see_every_call() -> None:
    plugin = Counting()
    getter = operator.itemgetter(0)
    assert plugin.run(calls, getter, 7) == calls(getter, 7)
    assert plugin.seen == 7
    assert plugin.context.table.native_callables == {}
