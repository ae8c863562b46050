"""Sample code for tests/runtime/test_hookless_code.py: every construct the implicit-call
routing touches (attributes, chained comparisons, async for, class statements, operators),
whose code under a context without per-call hooks must not change."""

from __future__ import annotations


class Base:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)


def attributes(obj, other, value):
    total = obj.size + other.size
    obj.size = value
    del obj.old
    obj.count += 1
    name = obj.__private
    return obj.method(total, name), other.items[0], getattr(obj, "x", None)


def chains(a, b, c):
    if a < b < c:
        return a <= b == c != a
    return [x for x in (a, b) if a < x < c]


async def async_loops(source):
    out = []
    async for item in source:
        out.append(item)
    return out, [x async for x in source]


def classes(field):
    class Plain:
        size = field

    class Derived(Base, flag=True):
        "doc"
        other = field

        def method(self):
            return __class__

    return Plain, Derived


def operators(a, b):
    with a:
        for x in b:
            a += x
    return f"{a!r:>4}" if a else -b


class Private:
    def __init__(self):
        self.__secret = 1

    def reveal(self, other):
        return self.__secret + other.__secret, super().__init__()
