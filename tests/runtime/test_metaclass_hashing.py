"""A class whose metaclass defines ``__eq__`` or ``__hash__`` is never hashed by splice.

CPython hashes a class only when the program puts it in a set or a dict: attribute access,
calls, operators, ``isinstance`` never do. splice keys many tables by class (dispatch by
argument classes, attribute lookups, the abstract interpreter's facts) and tests classes
against sets of builtin types. Hashing a class runs its metaclass's ``__hash__``: a side
effect the program never asked for, and ``TypeError: unhashable type`` when the metaclass
defines ``__eq__`` alone (which sets ``__hash__`` to None). Each program below uses classes
of such metaclasses every way a program can; under every plugin the result and the number
of the metaclasses' ``__hash__``/``__eq__`` calls must equal the native ones.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import splice
from splice.keys import ClassSet, _PythonClassSet, keyable_class, keyable_classes
from splice.plugins import FastMath, Tracer
from tests.differential import HookedIdentityPlugin
from tests.runtime.test_hooks import InterceptsLen, TypedNoop

CALLS: list[str] = []


class Counting(type):
    """A metaclass whose classes count their hashes and comparisons (hashable)."""

    def __hash__(cls) -> int:
        CALLS.append(f"hash {cls.__name__}")
        return 1

    def __eq__(cls, other: object) -> bool:
        CALLS.append(f"eq {cls.__name__}")
        return cls is other


class Unhashable(type):
    """A metaclass defining ``__eq__`` alone: its classes cannot be hashed."""

    def __eq__(cls, other: object) -> bool:
        CALLS.append(f"eq {cls.__name__}")
        return cls is other


class Point(metaclass=Counting):
    scale = 2

    def __init__(self, x: float, y: float) -> None:
        self.x = x
        self.y = y

    def norm(self) -> float:
        return self.x * self.x + self.y * self.y

    @property
    def doubled(self) -> float:
        return self.x * self.scale

    @classmethod
    def origin(cls) -> Point:
        return cls(0.0, 0.0)

    @staticmethod
    def unit() -> float:
        return 1.0

    def __add__(self, other: Point) -> Point:
        return Point(self.x + other.x, self.y + other.y)

    def __lt__(self, other: Point) -> bool:
        return self.norm() < other.norm()

    def __len__(self) -> int:
        return 2

    def __iter__(self) -> Iterator[float]:
        yield self.x
        yield self.y

    def __getitem__(self, i: int) -> float:
        return self.x if i == 0 else self.y

    def __contains__(self, value: object) -> bool:
        return value in (self.x, self.y)


class Bag(metaclass=Unhashable):
    def __init__(self, *items: int) -> None:
        self.items = list(items)

    def total(self) -> int:
        return sum(self.items)

    def __call__(self, extra: int) -> int:
        return self.total() + extra

    def __enter__(self) -> Bag:
        self.items.append(100)
        return self

    def __exit__(self, *exc: object) -> None:
        self.items.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bag) and self.items == other.items

    def __bool__(self) -> bool:
        return bool(self.items)


class SmallBag(Bag):
    def total(self) -> int:
        return super().total() - 1


class Failure(Exception, metaclass=Counting):
    # hashable: libraries register every exception class in dicts (tblib's pickling support
    # walks Exception's subclasses into copyreg), and this one is visible to them all
    pass


class Doubling(metaclass=Unhashable):
    """A data descriptor (its class's metaclass cannot hash it)."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else obj.__dict__["_value"] * 2

    def __set__(self, obj: Any, value: int) -> None:
        obj.__dict__["_value"] = value


class Holder:
    value = Doubling()


class Slotted(metaclass=Unhashable):
    __slots__ = ("a",)

    def __init__(self, a: int) -> None:
        self.a = a


def add_points(p: Point, q: Point) -> float:
    return (p + q).norm()


def total_of(bag: Bag) -> int:
    return bag.total()


def make(cls: Any, *args: Any) -> Any:
    return cls(*args)


def attributes_and_methods() -> object:
    p = Point(1.0, 2.0)
    p.x = p.x + 1
    return (p.norm(), p.doubled, Point.origin().norm(), Point.unit(), p.scale, Point.scale)


def operators_and_protocols() -> object:
    p, q = Point(1.0, 1.0), Point(2.0, 3.0)
    r = p + q
    return (r.x, p < q, len(p), list(p), p[1], 2.0 in p, sorted([q, p])[0].x, [*r])


def calls_with_instances_as_arguments() -> object:
    out = []
    for i in range(3):  # a few calls, so typed stages reuse what the first one built
        out.append(add_points(Point(i, 1.0), Point(1.0, i)))
        out.append(total_of(Bag(i, 2)))
        out.append(total_of(SmallBag(i, 2)))
    return out


def classes_as_values() -> object:
    kinds = [Point, Bag, SmallBag]
    made = [make(k, 1, 2) for k in kinds]
    return ([type(m) is k for m, k in zip(made, kinds, strict=True)], isinstance(made[2], Bag),
            issubclass(SmallBag, Bag), type(made[0]).__name__, made[1] == Bag(1, 2))


def callable_instances_and_with() -> object:
    bag = Bag(1, 2)
    with bag as entered:
        inside = entered(3)
    holder = Holder()
    holder.value = 5
    return (inside, bag(3), bool(bag), bool(Bag()), Slotted(4).a, holder.value)


def exceptions_of_such_classes() -> object:
    try:
        raise Failure("boom")
    except Failure as exc:
        caught = str(exc)
    try:
        Slotted(1).b = 2  # type: ignore[attr-defined]
    except AttributeError:
        caught += " no b"
    return caught


def comprehension_and_generators() -> object:
    bags = [Bag(i) for i in range(4)]
    totals = (b.total() for b in bags if b)
    return (sum(totals), {b.total(): b.items for b in bags}, max(bags, key=Bag.total).items)


PROGRAMS: list[Callable[[], object]] = [
    attributes_and_methods, operators_and_protocols, calls_with_instances_as_arguments,
    classes_as_values, callable_instances_and_with, exceptions_of_such_classes,
    comprehension_and_generators,
]


PLUGINS: dict[str, Callable[[], splice.Plugin]] = {
    "plain": splice.Plugin,
    "hooked": HookedIdentityPlugin,
    "intercepting": InterceptsLen,
    "tracer": Tracer,
    "tracer-implicit": lambda: Tracer(implicit_calls=True),
    "typed": TypedNoop,
    "fastmath": lambda: FastMath({}),
}


def outcome(run: Callable[[], object]) -> tuple[object, list[str]]:
    CALLS.clear()
    try:
        result: object = run()
    except Exception as exc:  # compared, so a divergence shows what was raised
        result = f"raised {type(exc).__name__}: {exc}"
    return result, list(CALLS)


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_classes_are_hashed_only_where_the_program_hashes_them(
        program: Callable[[], object], plugin: str) -> None:
    native = outcome(program)
    instance = PLUGINS[plugin]()
    for _ in range(2):  # the second run goes through what the first built
        assert outcome(lambda: instance.run(program)) == native


# ---------------------------------------------------------------- the sets and the checks

@pytest.mark.parametrize("form", ["C", "python"])
def test_a_class_set_tests_membership_by_identity(form: str) -> None:
    if form == "C" and ClassSet is _PythonClassSet:
        pytest.fail("splice._classes (splice/_classes.c) is not built: install splice with a "
                    "C compiler and the Python headers")
    kind: Any = ClassSet if form == "C" else _PythonClassSet
    both = kind([int, Point, Bag, int])
    assert list(both) == [int, Point, Bag] and len(both) == 3
    CALLS.clear()
    assert Point in both and Bag in both and int in both
    assert SmallBag not in both and float not in both and 1 not in both
    assert CALLS == []  # neither metaclass ran
    wider = frozenset({str}) | both
    assert list(wider) == [str, int, Point, Bag] and list(both | [float]) == [
        int, Point, Bag, float]
    assert len(kind()) == 0 and list(kind()) == []
    assert list(kind(*both.__splice_persist__())) == list(both)
    assert list(pickle.loads(pickle.dumps(both))) == list(both)
    assert "Point" in repr(both)
    with pytest.raises(TypeError, match="ClassSet holds classes only, not 1"):
        kind([int, 1])


def test_keyable_classes_are_those_whose_metaclass_hashes_as_type_does() -> None:
    import abc
    import enum

    class Abstract(abc.ABC):  # noqa: B024 - its metaclass is the point
        pass

    class Color(enum.Enum):
        RED = 1

    CALLS.clear()
    assert keyable_class(int) and keyable_class(Abstract) and keyable_class(Color)
    assert not keyable_class(Point) and not keyable_class(Bag) and not keyable_class(Failure)
    assert keyable_classes((int, Abstract)) and not keyable_classes((int, Point))
    assert keyable_classes(())
    assert CALLS == []
