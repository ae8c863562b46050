"""Hand-written functions, one per construct, for inference tests and the oracle."""

from __future__ import annotations

import math


def loop_sum(n):
    total = 0
    for i in range(n):
        total += i * 2
    return total


def while_float(n):
    x = 1.0
    k = 0
    while k < n:
        x = x * 1.5 + k
        k += 1
    return x


def narrowing(x):
    if x is None:
        return 0
    return x + 1


def isinstance_narrowing(x):
    if isinstance(x, str):
        return len(x)
    return x * 2.0


def type_is(x):
    if type(x) is int:
        return x
    return 0


def try_finally(n):
    result = "start"
    try:
        if n > 3:
            raise ValueError(n)
        result = n
    except ValueError as exc:
        result = str(exc)
    finally:
        done = True
    return result, done


def gen(n):
    for i in range(n):
        yield i * 0.5


def use_gen(n):
    total = 0.0
    for v in gen(n):
        total += v
    return total


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


class Point:
    scale = 2

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return math.sqrt(self.x * self.x + self.y * self.y)

    def __add__(self, other):
        return Point(self.x + other.x, self.y + other.y)


def points(n):
    p = Point(0.0, 1.0)
    for i in range(n):
        p = p + Point(float(i), 1.0)
    return p.norm(), p.scale


def strings(words):
    text = ",".join(words)
    parts = text.split(",")
    return text.upper(), len(parts), f"{len(parts)} parts"


def folding():
    return 2 ** 10 + len("abc"), math.floor(2.5), abs(-3)


def unpacking(n):
    a, b = n, n * 1.0
    (c, d), e = (a, "x"), b
    return c, d, e


COUNTER = 0


def bump():
    global COUNTER
    COUNTER += 1
    return COUNTER


def uses_bump(n):
    for _ in range(n):
        bump()
    return COUNTER


def comprehension(n):
    squares = [i * i for i in range(n)]
    total = sum(x for x in squares)
    return squares, total


def nonlocal_counter(n):
    count = 0

    def inc():
        nonlocal count
        count += 1

    for _ in range(n):
        inc()
    return count


def with_block(n):
    import contextlib
    value = 0
    with contextlib.suppress(ZeroDivisionError):
        value = 1 / n
        value = "after"
    return value


def boolops(x, y):
    a = x and y
    b = x or "default"
    return a, b, not x


def match_stmt(v):
    match v:
        case (a, b):
            return a, b
        case int():
            return v
        case _:
            return None


ALL = [(loop_sum, [int], (10,)), (while_float, [int], (5,)), (narrowing, [int | None], (None,)),
       (narrowing, [int | None], (4,)), (isinstance_narrowing, [int | str], ("ab",)),
       (isinstance_narrowing, [int | str], (3,)), (type_is, [int | bool], (True,)),
       (try_finally, [int], (2,)), (try_finally, [int], (7,)), (use_gen, [int], (4,)),
       (fib, [int], (10,)), (is_even, [int], (7,)), (points, [int], (3,)),
       (strings, [list], (["a", "b"],)), (folding, [], ()), (unpacking, [int], (3,)),
       (uses_bump, [int], (3,)), (comprehension, [int], (5,)),
       (nonlocal_counter, [int], (4,)), (with_block, [int], (0,)), (with_block, [int], (2,)),
       (boolops, [int, str], (0, "s")), (boolops, [int, str], (3, "")),
       (match_stmt, [object], ((1, 2),)), (match_stmt, [object], (5,)),
       (match_stmt, [object], ("z",))]


# ----------------------------------------------------------- containers (aliasing, escapes)


def alias_mutation(n):
    xs = [1.0, 2.0]
    ys = xs
    ys.append("s")
    return xs[-1]


def closure_mutation(n):
    xs = [1, 2]

    def add():
        xs.append("x")

    add()
    return xs[-1]


def opaque_mutation(n):
    xs = [1, 2]
    name = "append"
    helper = getattr(xs, name)
    helper("z")
    return xs[-1]


def key_mutation(n):
    xs = [3, 1, 2]
    sink = [0]
    sorted(xs, key=lambda v: sink.append("q") or v)
    return sink[-1]


def nested_lists(n):
    grid = [[0] * n for _ in range(n)]
    for row in grid:
        row.append("end")
    return grid[0][-1], grid[0][0]


class Holder:
    def __init__(self):
        self.items = []

    def add(self, v):
        self.items.append(v)


def via_object(n):
    h = Holder()
    h.add(1)
    h.add("two")
    return h.items[-1]


def via_dict(n):
    xs = [1]
    d = {"k": xs}
    d["k"].append("s")
    return xs[-1]


STORE = []


def mutate_store():
    for xs in STORE:
        xs.append(b"bytes")


def via_global(n):
    xs = [1]
    STORE.append(xs)
    mutate_store()
    return xs[-1]


def list_ops(n):
    a = [1, 2] + [3.0]
    b = a * 2
    b[0] = "s"
    c = a[:]
    c.extend(["x"])
    a += [None]
    return a[0], b[0], c[-1], a[-1]


def star_unpack(n):
    first, *rest = [1, "a", 2.0]
    rest.append(None)
    return first, rest[-1]


def set_ops(n):
    s = {1, 2}
    s.add("x")
    t = s | {2.5}
    return sorted(map(str, t)), len(s)


def in_tuple(n):
    xs = [1]
    pair = (xs, 2)
    pair[0].append("t")
    return xs[-1]


CONTAINERS = [(f, [int], (3,)) for f in (
    alias_mutation, closure_mutation, opaque_mutation, key_mutation, nested_lists,
    via_object, via_dict, via_global, list_ops, star_unpack, set_ops, in_tuple)]
ALL += CONTAINERS


def inplace_bits(a, b):
    a |= b
    a &= 3
    a ^= 1
    return a


def dict_ops(n):
    d = {"a": 1}
    d["b"] = 2.5
    e = dict(d)
    e.setdefault("c", None)
    counts = {}
    for word in ("x", "y", "x"):
        counts[word] = counts.get(word, 0) + 1
    return d["a"], e.get("c"), sorted(counts.items()), {k: v for k, v in d.items()}


def dict_escape(n):
    inner = [1]
    d = {"k": inner}
    alias = d.copy()
    alias["k"].append("s")
    return inner[-1]


ALL += [(inplace_bits, [int, int], (6, 1)), (inplace_bits, [bool, bool], (True, False)),
        (dict_ops, [int], (1,)), (dict_escape, [int], (1,))]


def by_length(word):
    return len(word)


def callbacks(n):
    words = ["bb", "a", "ccc"]
    ordered = sorted(words, key=by_length)
    longest = max(words, key=by_length)
    lengths = list(map(by_length, words))
    short = list(filter(is_short, words))
    return ordered[0], longest, lengths[0], short[0]


def is_short(word):
    return len(word) < 3


def lambda_escape(n):
    words = ["bb", "a"]
    short = list(filter(lambda w: words.append(3) or len(w) < 3, words[:]))
    return words[-1], short


SEEN = []


def remember(item):
    SEEN.append(item)
    return item


def callback_effects(n):
    xs = [[1], [2]]
    ys = sorted(xs, key=remember)
    SEEN[0].append("s")
    return xs[0][-1], ys


ALL += [(callbacks, [int], (1,)), (callback_effects, [int], (1,)),
        (lambda_escape, [int], (1,))]


def stale_fact(x, flag):
    test = x is None
    if flag:
        x = 5
    if test:
        return x
    return 0


def stale_fact_2(x, flag):
    test = x is None
    if flag:
        pass
    else:
        x = 5
    if test:
        return x
    return 0


ALL += [(stale_fact, [int | None, bool], (None, True)),
        (stale_fact_2, [int | None, bool], (None, False))]


class Celsius:
    def __init__(self):
        self._kelvin = 273.15
        self.log = []

    @property
    def degrees(self):
        return self._kelvin - 273.15

    @degrees.setter
    def degrees(self, value):
        self.log.append(value)
        self._kelvin = value + 273.15


class Truthy:
    def __init__(self, items):
        self.items = items

    def __len__(self):
        self.items.append("len")
        return len(self.items)


def properties(n):
    c = Celsius()
    c.degrees = 20
    return c.degrees, c.log[-1]


def truth_runs_len(n):
    xs = [1]
    t = Truthy(xs)
    if t:
        pass
    return xs[-1]


ALL += [(properties, [int], (1,)), (truth_runs_len, [int], (1,))]


class Base:
    def greet(self):
        return "hi"


class Derived(Base):
    pass


def inherited(n):
    return Derived().greet()


ALL += [(inherited, [int], (1,))]


def local_functions(x):
    """A local function and lambdas, called where they are made."""
    def helper(a, scale=2.0):
        return a * scale
    twice = lambda t: t + t  # noqa: E731
    keyed = [len(s) for s in map(lambda v: str(v), [x, 1])]  # noqa: C417
    return helper(x), twice(3), keyed


def closure_reads_a_cell(x):
    """A closure's free variable: ``Any`` for inference (what the cell holds when the
    closure is called is not known)."""
    offset = 1.5

    def shifted(a):
        return a + offset
    return shifted(x)


def two_lambdas_on_a_line(x):
    first, second = (lambda: x), (lambda: 2)  # noqa: E731
    return first(), second()
