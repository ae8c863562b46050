"""Small but real programs for the reach oracle (tests/runtime/test_reach.py).

Each ``program_*`` function takes no argument and returns a value that is compared with the
native run. The programs are deterministic and use only this file's code plus the standard
library, so the profiler's 'call' events filtered to this file are exactly the calls of the
program's own Python functions.

Rules that keep the oracle exact: every generator or coroutine that is created is also
started (the profiler only sees frames that run), and no call fails before its frame starts
(an argument error would be counted by the prehook but not by the profiler).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import enum
import functools
import itertools
import linecache
import re
import types
import typing

# ----------------------------------------------------------------- 1. object-oriented


class Account:
    opened = 0

    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        Account.register()

    @classmethod
    def register(cls):
        cls.opened += 1

    @classmethod
    def from_pair(cls, pair):
        return cls(pair[0], pair[1])

    @staticmethod
    def fee(amount):
        return amount // 100

    def deposit(self, amount):
        self.balance += amount - self.fee(amount)
        return self.balance

    def kind(self):
        return "plain"

    def summary(self):
        return self.owner + "/" + self.kind() + "/" + repr(self.balance)


class Savings(Account):
    def __init__(self, owner, balance=0, rate=2):
        super().__init__(owner, balance)
        self.rate = rate

    def kind(self):
        return "savings:" + super().kind()

    def accrue(self):
        return self.deposit(self.balance * self.rate // 100)


class Premium(Savings):
    @staticmethod
    def fee(amount):
        return 0

    def kind(self):
        return "premium+" + super().kind()


def program_oo():
    Account.opened = 0
    accounts = [Account("ann", 10), Savings("bob", 1000), Premium.from_pair(("cy", 500)),
                Savings.from_pair(("di", 7))]
    out = []
    for acct in accounts:
        acct.deposit(300)
        if isinstance(acct, Savings):
            acct.accrue()
        out.append(acct.summary())
    bound = accounts[1].summary
    out.append(bound())
    out.append(Account.summary(accounts[2]))
    out.append(Account.opened)
    return out


# --------------------------------------------------------- 2. closures and decorators

def logged(tag):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            calls.append(tag + ":" + fn.__name__)
            return fn(*args, **kwargs)
        return wrapper
    return decorate


calls: list[str] = []


def memo(fn):
    cache = {}

    def inner(n):
        if n not in cache:
            cache[n] = fn(n)
        return cache[n]
    return inner


@logged("a")
def scale(x, factor=2):
    return x * factor


@memo
def tri(n):
    return 0 if n == 0 else n + tri(n - 1)


def counter(start):
    value = start

    def step(by=1):
        nonlocal value
        value += by
        return value
    return step


def power(base, exp):
    return base ** exp


def program_closures():
    calls.clear()
    step = counter(10)
    out = [step(), step(5), scale(4), scale(3, factor=5), tri(6), tri(4)]
    square = functools.partial(power, exp=2)
    cube = functools.partial(power, exp=3)
    out += [square(7), cube(2)]
    double = functools.partial(functools.partial(scale, factor=3), 11)
    out.append(double())
    add = (lambda k: (lambda v: v + k))(100)
    out.append(add(1))
    traced_power = logged("p")(power)
    out.append(traced_power(2, 10))
    out.append(list(calls))
    return out


def register(fn):
    registered.append(fn.__name__)
    return fn


registered: list[str] = []


def program_decorators_applied_in_run():
    """Decorators applied while the program runs (to nested functions and classes)."""
    registered.clear()

    @register
    @logged("n")
    def nested(x):
        return x + 1

    @register
    class Widget:
        @staticmethod
        @register
        def make():
            return nested(1)

    return [nested(2), Widget.make(), list(registered)]


# ----------------------------------------------------------------------- 3. generators

def naturals(limit):
    n = 0
    while n < limit:
        yield n
        n += 1


def evens(source):
    for n in source:
        if n % 2 == 0:
            yield n


def chained(limit):
    yield from evens(naturals(limit))
    result = yield from summing()
    yield result


def summing():
    total = 0
    for value in naturals(4):
        total += value
        yield -value
    return total


def averager():
    total = count = 0
    average = None
    while True:
        value = yield average
        if value is None:
            return average
        total += value
        count += 1
        average = total / count


def squares(limit):
    return (double_it(n) for n in naturals(limit))


def double_it(n):
    return n * 2


def program_generators():
    out = list(chained(9))
    avg = averager()
    next(avg)
    out += [avg.send(4), avg.send(8)]
    try:
        avg.send(None)
    except StopIteration as stop:
        out.append(stop.value)
    out.append(sum(squares(5)))
    out.append([x for x in evens(naturals(7)) if x])
    return out


# ------------------------------------------------------------------------ 4. recursion

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def depth(tree):
    if not isinstance(tree, list):
        return 0
    return 1 + max([depth(t) for t in tree], default=0)


def flatten(tree):
    if isinstance(tree, list):
        for t in tree:
            yield from flatten(t)
    else:
        yield tree


def program_recursion():
    tree = [1, [2, [3, [4]], 5], [[6]]]
    return [fib(12), is_even(15), is_odd(9), ackermann(2, 2), depth(tree),
            list(flatten(tree))]


# ------------------------------------------------------------------------ 5. callbacks

def by_length(word):
    return len(word)


def compare_last(a, b):
    return (a[-1] > b[-1]) - (a[-1] < b[-1])


def is_long(word):
    return len(word) > 3


def shout(word):
    return word.upper()


def join2(a, b):
    return a + "-" + b


def first_letter(word):
    return word[0]


def pair_sum(a, b):
    return a + b


def program_callbacks():
    words = ["pear", "fig", "banana", "kiwi", "apple", "date", "plum"]
    out = [sorted(words, key=by_length), min(words, key=by_length), max(words, key=by_length)]
    out.append(list(map(shout, filter(is_long, words))))
    out.append(functools.reduce(join2, words[:3]))
    copy = list(words)
    copy.sort(key=first_letter)
    out.append(copy)
    out.append([(k, list(g)) for k, g in itertools.groupby(sorted(words), key=first_letter)])
    out.append(list(itertools.accumulate([1, 2, 3, 4], pair_sum)))
    out.append(list(itertools.starmap(pair_sum, [(1, 2), (3, 4)])))
    out.append(list(itertools.takewhile(is_long, words)))
    out.append(list(itertools.dropwhile(is_long, words)))
    out.append(list(itertools.filterfalse(is_long, words)))
    out.append(sorted(words, key=lambda w: (len(w), w)))
    return out


def program_cmp_to_key():
    words = ["pear", "fig", "banana", "kiwi"]
    key = functools.cmp_to_key(compare_last)
    return [sorted(words, key=key), sorted(words, key=functools.cmp_to_key(compare_last)),
            key("ab") < key("ba")]


# ------------------------------------------------------------------ 6. callable objects

class Multiplier:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


class Chain:
    def __init__(self, *steps):
        self.steps = steps

    def __call__(self, x):
        for step in self.steps:
            x = step(x)
        return x


class Inc(Multiplier):
    def __call__(self, x):
        return super().__call__(x) + 1


def program_callables():
    triple = Multiplier(3)
    pipeline = Chain(triple, Inc(2), abs, Multiplier(-1))
    out = [triple(4), pipeline(5), list(map(triple, [1, 2])), sorted([3, -1, 2], key=Inc(-1))]
    method = triple.__call__
    out.append(method(10))
    out.append(functools.reduce(lambda acc, f: f(acc), [triple, Inc(1)], 1))
    return out


# ------------------------------------------------------------------------ 7. exceptions

class ValidationError(ValueError):
    def __init__(self, field, problem):
        super().__init__(field + ": " + problem)
        self.field = field


def check_age(age):
    if age < 0:
        raise ValidationError("age", "negative")
    return age


def parse(text):
    try:
        return check_age(int(text))
    except ValueError as exc:
        if isinstance(exc, ValidationError):
            raise
        raise ValidationError("age", "not a number") from exc


def cleanup(log):
    log.append("cleanup")


def guarded(text, log):
    try:
        return parse(text)
    except ValidationError as exc:
        log.append(exc.field + "|" + exc.args[0] + "|" + repr(type(exc.__cause__)))
        return None
    finally:
        cleanup(log)


def program_exceptions():
    log = []
    out = [guarded("12", log), guarded("-3", log), guarded("x", log)]
    try:
        try:
            check_age(-1)
        finally:
            cleanup(log)
    except ValidationError as exc:
        out.append(exc.args)
    out.append(log)
    return out


# ------------------------------------------------------------------- 8. instantiation

class Registry(type):
    made: list[str] = []

    def __call__(cls, *args, **kwargs):
        Registry.made.append(cls.__name__)
        return super().__call__(*args, **kwargs)


class Tracked(metaclass=Registry):
    def __init__(self, value):
        self.value = value


class Interned:
    _pool: dict[int, Interned] = {}

    def __new__(cls, key):
        found = cls._pool.get(key)
        if found is None:
            found = super().__new__(cls)
            found.key = key
            cls._pool[key] = found
        return found

    def __init__(self, key):
        self.inits = getattr(self, "inits", 0) + 1


class Other:
    def __init__(self, tag):
        self.tag = tag


class Factory:
    def __new__(cls, tag):
        return Other(tag)  # not an instance of cls: __init__ is skipped

    def __init__(self, tag):
        raise AssertionError("never runs")


def program_metaclass():
    Registry.made = []
    a, b = Tracked(1), Tracked(2)
    return [a.value + b.value, list(Registry.made)]


def make_point_class(dims):
    class Point:
        def __init__(self, *coords):
            self.coords = coords[:dims]
    return Point


def program_instantiation():
    Interned._pool = {}
    i1, i2, i3 = Interned(1), Interned(1), Interned(2)
    f = Factory("t")
    point = make_point_class(2)(1, 2, 3)
    return [i1 is i2, i1.inits, i3.inits,
            type(f).__name__, f.tag, point.coords]


# ------------------------------------------------------------------------------ 9. async
# (program_implicit_async below covers async with / async for over Python classes)

async def fetch(n):
    await asyncio.sleep(0)
    return square_of(n)


def square_of(n):
    return n * n


async def gather_all(limit):
    results = await asyncio.gather(*[fetch(i) for i in range(limit)])
    return sum(results)


async def ticker(limit):
    for i in range(limit):
        await asyncio.sleep(0)
        yield square_of(i)


async def consume(limit):
    out = [v async for v in ticker(limit)]
    out.append(await gather_all(limit))
    return out


def program_async():
    return asyncio.run(consume(4))


# ------------------------------------------------------------------ 10. implicit calls
# Operators, subscripts, containment, f-string fields and str()/repr() reach Python dunders
# (routed); dict lookups call __hash__/__eq__ from C (out of reach by design).

class Vec:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return Vec(self.x + other.x, self.y + other.y)

    def __radd__(self, other):
        return Vec(self.x + other, self.y + other)

    def __iadd__(self, other):
        return self + other

    def __mul__(self, k):
        return Vec(self.x * k, self.y * k)

    def __neg__(self):
        return Vec(-self.x, -self.y)

    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)

    def __lt__(self, other):
        return (self.x, self.y) < (other.x, other.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __repr__(self):
        return "Vec(" + str(self.x) + ", " + str(self.y) + ")"

    def __format__(self, spec):
        return format(self.x, spec) + "," + format(self.y, spec)


class Grid:
    def __init__(self):
        self.cells = {}

    def __setitem__(self, key, value):
        self.cells[key] = value

    def __getitem__(self, key):
        return self.cells[key]

    def __delitem__(self, key):
        del self.cells[key]

    def __contains__(self, key):
        return key in self.cells


def program_implicit_routed():
    a, b = Vec(1, 2), Vec(3, -4)
    c = a + b * 2
    c += a
    out = [repr(c), c == Vec(8, -4), a < b, repr(-a), repr(10 + a), f"{a!r} {b:03d}"]
    grid = Grid()
    grid["k"] = 1
    grid["j"] = grid["k"] + 1
    del grid["k"]
    out += ["k" in grid, "j" in grid, "z" not in grid]
    seen = {a: 1}              # Vec.__hash__ called by the dict, from C
    out.append(seen.get(Vec(1, 2)))  # Vec.__hash__, then Vec.__eq__ (a different object)
    return out


@functools.cache
def cached_steps(n):
    return 0 if n < 2 else 1 + cached_steps(n // 2)


def upper_match(match):
    return match.group(0).upper()


def fresh_list():
    return []


def program_native_callbacks():
    """Python code called back from C functions that no overlay covers."""
    cached_steps.cache_clear()
    grouped = collections.defaultdict(fresh_list)
    grouped["a"].append(1)
    grouped["b"].append(2)
    return [cached_steps(16), re.sub("[aeiou]", upper_match, "banana"), dict(grouped),
            [repr(v) for v in sorted([Vec(2, 0), Vec(1, 0)])]]


class Celsius:
    def __init__(self, degrees):
        self._degrees = degrees

    @property
    def fahrenheit(self):
        return self._degrees * 9 / 5 + 32

    @fahrenheit.setter
    def fahrenheit(self, value):
        self._degrees = (value - 32) * 5 / 9


class Lazy:
    def __getattr__(self, name):
        return name.upper()


class Positive:
    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, obj, owner=None):
        return getattr(obj, self.slot)

    def __set__(self, obj, value):
        setattr(obj, self.slot, abs(value))


class Guarded:
    size = Positive()

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)


def program_implicit_attributes():
    t = Celsius(100)
    out = [t.fahrenheit]
    t.fahrenheit = 32
    out += [t._degrees, t.fahrenheit, Lazy().missing]
    g = Guarded()
    g.size = -3
    out.append(g.size)
    return out


class Countdown:
    def __init__(self, start):
        self.current = start

    def __iter__(self):
        return self

    def __next__(self):
        if self.current <= 0:
            raise StopIteration
        self.current -= 1
        return self.current


def program_implicit_iteration():
    out = []
    for n in Countdown(2):          # __iter__ once, __next__ three times
        out.append(n)
    first, second = Countdown(2)    # __iter__ once, __next__ three times
    out += [first, second]
    return out


class Recorder:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append("exit")
        return False


def program_implicit_with():
    with Recorder() as rec:
        rec.events.append("body")
    return rec.events


class Bag:
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)


class Flag:
    def __init__(self, on):
        self.on = on

    def __bool__(self):
        return self.on


def program_implicit_truth():
    out = []
    if Bag([1]):
        out.append("bag")
    out.append("flag" if Flag(False) else "no flag")
    out.append(bool(Flag(True)) and not Bag([]))
    return out


def program_implicit_str_fallback():
    return [str(Vec(1, 2)), f"{Vec(3, 4)!s}"]  # object.__str__ (C) calls Vec.__repr__


class Session:
    def __init__(self):
        self.log = []

    async def __aenter__(self):
        self.log.append("open")
        return self

    async def __aexit__(self, *exc):
        self.log.append("close")
        return False


class Ticks:
    def __init__(self, n):
        self.n = n

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self.n == 0:
            raise StopAsyncIteration
        self.n -= 1
        return self.n


async def use_session():
    async with Session() as session:
        async for tick in Ticks(2):
            session.log.append(square_of(tick))
    return session.log


def program_implicit_async():
    return asyncio.run(use_session())


def program_implicit_chained():
    a, b, c = Vec(1, 0), Vec(2, 0), Vec(3, 0)
    return [a < b < c, c < b < a]


class Field:
    def __set_name__(self, owner, name):
        self.name = name


class Plugged:
    registry: list[str] = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Plugged.registry.append(cls.__name__)


def program_implicit_class_creation():
    Plugged.registry = []

    class Gadget(Plugged):
        size = Field()

    return [Gadget.size.name, list(Plugged.registry)]


class Meter(type):
    """A metaclass with a property: read through the classes."""

    @property
    def unit(cls):
        return cls.__name__.lower()


class Gauge(metaclass=Meter):
    def __init__(self, value):
        self.value = value

    @property
    def reading(self):
        return self.value

    @functools.cached_property
    def squared(self):
        return self.value * self.value

    @classmethod
    @property
    def kind(cls):
        return "gauge"


class Dial(Gauge):
    @property
    def reading(self):
        return super().reading + 1

    def __setattr__(self, name, value):
        super().__setattr__(name, value)

    def __getattribute__(self, name):
        return object.__getattribute__(self, name)


def _module_fallback(name):
    return "lazy " + name


def program_implicit_attribute_corners():
    dial = Dial(2)                  # Dial.__setattr__ (self.value = value)
    module = types.ModuleType("lazy_module")
    module.__getattr__ = _module_fallback
    out = [Dial.unit, dial.reading, dial.squared, dial.squared, Dial.kind, module.anything,
           getattr(dial, "reading"), hasattr(dial, "nothing")]  # noqa: B009 - the builtins
    setattr(dial, "value", 5)  # noqa: B010 - the builtin: Dial.__setattr__ again
    return out


class Countup:
    def __init__(self, limit):
        self.limit = limit

    def __aiter__(self):
        return Ticks(self.limit)    # __aiter__ gives another iterator


async def use_countup():
    return [tick async for tick in Countup(2)] + [t async for t in Ticks(1)]


def program_implicit_async_delegating():
    return asyncio.run(use_countup())


def program_implicit_chained_values():
    a, b, c = Vec(1, 0), Vec(2, 0), Vec(3, 0)
    # as values inside other boolean operations, and as tests
    out = [(a < b < c) or a, (c < b < a) or b, not a < b < c]
    if b < c < a:
        out.append("no")
    return [repr(v) if isinstance(v, Vec) else v for v in out]


class Labelled:
    def __set_name__(self, owner, name):
        self.label = owner.__name__ + "." + name


def program_implicit_set_name():
    class Panel:
        title = Labelled()
        footer = Labelled()

        class Inner:
            body = Labelled()

    return [Panel.title.label, Panel.footer.label, Panel.Inner.body.label]


# ------------------------------------------- generated methods and exec-defined functions
# (made when this module is imported, after splice: their texts come from the audit
# events, splice/exec_sources.py; an attrs-style method registers its text in linecache)


def _default_tags():
    return ["default"]


@dataclasses.dataclass(order=True)
class Point:
    x: int
    y: int = 0
    tags: list = dataclasses.field(default_factory=_default_tags, compare=False)

    def __post_init__(self):
        self.norm = abs(self.x) + abs(self.y)


class Pair(typing.NamedTuple):
    left: int
    right: int = 0

    def total(self):
        return self.left + self.right


class Color(enum.Enum):
    RED = 1
    GREEN = 2

    def describe(self):
        return self.name.lower()


@functools.total_ordering
class Version:
    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return self.n == other.n

    def __lt__(self, other):
        return self.n < other.n

    __hash__ = None


def _exec_helper(value):
    return value + 1


_EXEC_NAMESPACE: dict = {}
exec("def scaled(value, k=2):\n    return helper(value) * k\n",  # noqa: S102
     {"helper": _exec_helper}, _EXEC_NAMESPACE)


def _attrs_style_init(cls):
    """A generated ``__init__`` as attrs makes one: compiled under a unique file name whose
    text is registered in ``linecache``."""
    filename = f"<generated init {cls.__qualname__}>"
    text = "def __init__(self, value):\n    self.value = check(value)\n"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(text, filename, "exec"), {"check": _check_value}, namespace)  # noqa: S102
    cls.__init__ = namespace["__init__"]
    return cls


def _check_value(value):
    return abs(value)


@_attrs_style_init
class Boxed:
    pass


def program_generated_methods():
    p, q = Point(3, -4), Point(1)
    out = [p.norm, q.tags, p == q, p < q, repr(p)]
    pair = Pair(2)
    out += [pair.total(), repr(pair), pair._replace(right=5).total()]
    out += [Color(1).describe(), Color["GREEN"].describe()]
    out += [Version(2) > Version(1), Version(1) >= Version(1)]
    out += [_EXEC_NAMESPACE["scaled"](4), Boxed(-3).value]
    return out


PROGRAMS = {name[len("program_"):]: fn for name, fn in sorted(globals().items())
            if name.startswith("program_")}
