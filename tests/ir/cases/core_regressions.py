"""Functions that once broke the round trip (each is compared natively vs round-tripped)."""

import types


class Named:
    def Named(self, x):  # a method named like its class
        return x + 1


@types.coroutine
def legacy_coroutine():  # CO_ITERABLE_COROUTINE is set at run time, not by the compiler
    value = yield "suspended"
    return value


async def await_legacy(make):
    return await make()


def chain_of_names(expon, himant, lomant):  # chained comparison whose middles are names
    if expon == himant == lomant == 0:
        return "zero"
    return "nonzero"


def genexp_with_set_display(group):  # repeated ``_`` targets, a set display in the element
    return any(tag in {"replace", "delete"} for tag, _, _ in group)


def recursive(n):  # refers to itself by its global name
    return 1 if n <= 1 else n * recursive(n - 1)


class Fraction:
    def make(cls, x):  # refers to its class by its global name
        return super().__new__(cls) if x else Fraction


def augmented_everywhere(obj, items, key):
    total = 0
    for value in items:
        total += value * obj.scale
    obj.count += 1
    items[key] -= total
    return total, obj.count, items
