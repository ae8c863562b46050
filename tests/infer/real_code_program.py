"""Patterns of real code (found by the oracle over CPython's test modules) that inference
once got wrong; each test in test_real_code.py runs one under the oracle."""


class Matcher:
    """difflib.SequenceMatcher's shape: ``__init__`` stores an attribute that a writer of
    another attribute reads before storing its own."""

    def __init__(self, a):
        self.a = None
        self.set_a(a)

    def set_a(self, a):
        if a is self.a:
            return
        self.a = a
        self.blocks = None

    def get_blocks(self):
        if self.blocks is not None:
            return self.blocks
        self.blocks = [len(self.a)]
        return self.blocks


def blocks_of(text):
    return Matcher(text).get_blocks()


def count_range(start, stop):
    """ipaddress's shape: iterating a range whose bounds do not fit a C long gives a
    ``longrange_iterator``."""
    iterator = iter(range(start, stop))
    return next(iterator), type(iterator).__name__


class Legacy:
    """configparser.LegacyInterpolation's shape: ``super().__init__`` in a class whose base
    is ``object`` is a method-wrapper."""

    def __init__(self):
        init = super().__init__
        self.kind = type(init).__name__
        init()


def legacy_kind():
    return Legacy().kind


class Encoder:
    """json.JSONEncoder's shape: ``__init__`` may store an instance attribute hiding a
    method."""

    def __init__(self, default=None):
        if default is not None:
            self.default = default

    def default(self, o):
        raise TypeError(o)

    def encode(self, o):
        hook = self.default
        return hook(o)


def encode_with(value):
    return Encoder(default=repr).encode(value)


class Field:
    """dataclasses.Field's shape: attributes set in ``__init__`` and then by a function of
    the module that is not a method."""

    __slots__ = ("name", "type")

    def __init__(self):
        self.name = None
        self.type = None


def make_field(name):
    field = Field()
    field.name = name
    return field


def field_name(field):
    return field.name


def named_field_name(name):
    return field_name(make_field(name))


def either(a, b):
    """json.detect_encoding's shape: ``x[0] or y[0]`` only tested. Such an ``or`` is written
    as statements when its operands are (the oracle's checks make them so), and its value is
    then only its truth; the oracle does not look at it."""
    if a[0] or b[0]:
        return "some"
    return "none"


def either_expression(a, b):
    return "some" if a[0] or b[0] else "none"


class Sorter:
    """graphlib.TopologicalSorter's shape: a container made in ``__init__`` and filled by
    another method (which inference must infer, or the container looks empty)."""

    def __init__(self):
        self._infos = {}
        self._ready = None

    def _info(self, node):
        if (found := self._infos.get(node)) is None:
            self._infos[node] = found = [node]
        return found

    def add(self, node):
        self._info(node)

    def first(self):
        for info in self._infos.values():
            return info
        return None


def sorter_first(node):
    sorter = Sorter()
    sorter.add(node)
    return sorter.first()


class Stack:
    """plistlib's and pulldom's shape: a list attribute that a function of the module
    (not a method) changes."""

    def __init__(self):
        self.items = []

    def top(self):
        return self.items[-1]


def push(stack, value):
    stack.items.append(value)


def stack_top(value):
    stack = Stack()
    push(stack, value)
    return stack.top()



class SlottedNumber:
    """decimal.Decimal / pathlib's pattern: ``__new__`` makes the object and stores its
    slots (test_decimal, test_datetime, test_pathlib: read as ``Never`` before)."""

    __slots__ = ("_sign", "_digits")

    def __new__(cls, text="0"):  # type: ignore[no-untyped-def]
        self = object.__new__(cls)
        self._sign = 1 if text.startswith("-") else 0
        self._digits = text.lstrip("-")
        return self

    def is_negative(self):  # type: ignore[no-untyped-def]
        return self._sign == 1


def stores_on_anything(target, value):  # type: ignore[no-untyped-def]
    target._sign = value


def characters(text):  # type: ignore[no-untyped-def]
    """traceback._display_width's pattern: iterating a str that may not be ASCII."""
    out = []
    for ch in text:
        out.append(ch)
    return iter(text), out


class Strength:
    """deltablue's shape: class attributes bound by module-level code after the class
    statement (``Strength.REQUIRED = Strength(0, "required")``)."""

    def __init__(self, strength, name):
        self.strength = strength
        self.name = name


Strength.REQUIRED = Strength(0, "required")
Strength.WEAKEST = Strength(6, "weakest")


def bump_weakest():
    Strength.WEAKEST = 6  # a store inference follows when it infers this


def required_and_weakest():
    return Strength.REQUIRED, Strength.WEAKEST


def weakest_after_bump():
    bump_weakest()
    return Strength.WEAKEST
