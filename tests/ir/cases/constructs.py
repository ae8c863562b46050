"""One function per construct; each records what it does in LOG (side-effect order)."""

import asyncio
import contextlib

LOG = []


def rec(tag, value=None):
    LOG.append(tag)
    return tag if value is None else value


class Rec:
    """A value whose every implicit call is recorded."""

    def __init__(self, name, truth=True):
        self.name, self.truth = name, truth

    def __bool__(self):
        LOG.append(("bool", self.name))
        return self.truth

    def __lt__(self, other):
        LOG.append(("lt", self.name))
        return Rec(f"{self.name}<", self.truth)

    def __add__(self, other):
        LOG.append(("add", self.name))
        return NotImplemented if other == "ni" else Rec(self.name + "+")

    def __radd__(self, other):
        LOG.append(("radd", self.name))
        return Rec("r" + self.name)

    def __iadd__(self, other):
        LOG.append(("iadd", self.name))
        return self

    def __getitem__(self, key):
        LOG.append(("getitem", self.name, key))
        return 10

    def __setitem__(self, key, value):
        LOG.append(("setitem", self.name, key, value))

    def __delitem__(self, key):
        LOG.append(("delitem", self.name, key))

    def __getattr__(self, attr):
        LOG.append(("getattr", self.name, attr))
        return 1

    def __iter__(self):
        LOG.append(("iter", self.name))
        return iter([1, 2, 3])

    def __format__(self, spec):
        LOG.append(("format", self.name, spec))
        return f"<{spec}>"

    def __repr__(self):
        return f"Rec({self.name!r})"

    def __enter__(self):
        LOG.append(("enter", self.name))
        return (1, 2)

    def __exit__(self, *exc):
        LOG.append(("exit", self.name, exc[0] and exc[0].__name__))
        return self.name == "suppress"


# ------------------------------------------------------------------ scoping and functions

G = 0


def closures(n):
    count = 0

    def bump(k=rec("default")):
        nonlocal count
        count += k
        return count

    fns = [lambda i=i: i * n for i in range(3)]
    bump(1)
    return bump(n), [f() for f in fns]


def global_in_nested():
    def inner():
        global G
        G += 1
        return G

    return inner() + inner()


def arguments(a, /, b=2, *args, c, d=rec("kwdefault-not-evaluated-at-call"), **kw):
    return a, b, args, c, d, sorted(kw.items())


def decorators_order():
    def deco(tag):
        rec(("deco-expr", tag))

        def apply(f):
            rec(("apply", tag))
            return f

        return apply

    @deco(1)
    @deco(2)
    def f(x=rec("default"), *, y: rec("annotation") = rec("kwdefault")) -> rec("return"):
        return x

    return f(), sorted(f.__annotations__)


def nested_class():
    seen = []

    class Meta(type):
        def __new__(mcls, name, bases, ns, **kw):
            seen.append(("meta", name, sorted(kw)))
            return super().__new__(mcls, name, bases, ns)

    class Field:
        def __set_name__(self, owner, name):
            seen.append(("set_name", name))

    class Base(metaclass=Meta, flag=rec("kw")):
        x: int = 1
        f = Field()

        def __init_subclass__(cls, **kw):
            seen.append(("subclass", cls.__name__))

        def who(self):
            return "base"

    class Child(Base, flag=2):
        def who(self):
            return "child/" + super().who() + "/" + __class__.__name__

    return seen, Child().who(), Base.__annotations__


class Private:
    def __secret(self):
        return 41

    def uses_private(self):
        return self.__secret() + 1


# ------------------------------------------------------------------ expressions

def short_circuit(a, b):
    r1 = a and b
    r2 = a or b
    if a and b:
        rec("both")
    if not (a or b):
        rec("neither")
    return r1, r2, (rec("x") if a else rec("y"))


def chained(a, b, c):
    x = a < b < c
    if a < b < c:
        rec("chain-true")
    return x


def walrus(xs):
    ys = [y for x in xs if (y := x * 2) > 2]
    if (n := len(ys)) > 1:
        rec(("n", n))
    return ys, y, n


def fstrings(v, w):
    return f"{v!r} {v!s:>{w}} {v!a} {v=} {w:{w}.{w}} {rec('x')!r:^{w}}"


def operators(a, b):
    out = [a + b, b + a, a + "ni" if False else 0, -1 ** 2, 7 // -2, 7 % -3, 2 ** -1]
    out += [a is b, a is not b, 1 in [1], 2 not in {1}, ~5, +a.name]
    return out


def calls_order(f):
    return f(rec("a"), *rec("star", [1]), k=rec("kw"), **rec("dstar", {"z": 1}))


def keyword_before_star(f):
    return f(k=rec("kw"), *rec("star", [1]))


def subscripts(r):
    x = r[1:2, ::3]
    r[rec("k")] = rec("v")
    del r[rec("d")]
    return x


def displays(d, xs):
    return {rec("k1"): rec("v1"), **d, "k": rec("v2")}, [*xs, rec("e")], {*xs}, (*xs,)


# ------------------------------------------------------------------ assignments

def unpacking(value):
    a, *b, c = value
    (d, e), f = (1, 2), 3
    return a, b, c, d, e, f


def targets_order(r):
    r[rec("i")], r.attr, *rest = rec("value", [1, 2, 3, 4])
    x = r[rec("j")] = rec("w")
    return rest, x


def augmented(r, d, i):
    total = 0
    total += i
    r += 1
    d[rec("key")] += i
    r.attr = 1
    return total, d


def deletes():
    a = b = [1, 2, 3]
    del a[0], b[0]
    c = {}
    c["k"] = 1
    del c["k"], a
    return b, c


def asserting(x):
    assert x > 0, rec("message")
    assert x, "never"
    return x


# ------------------------------------------------------------------ control flow

def loops(n):
    out = []
    for i in range(n):
        if i == 1:
            continue
        if i == 4:
            break
        out.append(i)
    else:
        out.append("for-else")
    while n > 0:
        n -= 1
    else:
        out.append("while-else")
    return out


def exceptions(kind):
    try:
        try:
            if kind == 1:
                raise ValueError("v")
            if kind == 2:
                raise KeyError("k") from ValueError("cause")
            if kind == 3:
                return "returned"
        except ValueError as e:
            rec(("caught", str(e)))
            raise
        else:
            rec("else")
        finally:
            rec("finally")
    except (KeyError, ValueError) as outer:
        return type(outer).__name__, repr(outer.__cause__), outer.__context__ is None
    return "end"


def finally_return():
    for i in range(3):
        try:
            if i == 1:
                raise RuntimeError
        finally:
            if i == 1:
                break
    try:
        return "try"
    finally:
        rec("finally-runs")


def except_star():
    try:
        raise ExceptionGroup("g", [ValueError(1), KeyError(2)])
    except* ValueError as eg:
        rec(("value", len(eg.exceptions)))
    except* KeyError as eg:
        rec(("key", len(eg.exceptions)))
    return "done"


def withs(a, b):
    with a as (x, y), b:
        rec(("body", x, y))
        raise ValueError("inside")
    return "after"


def matching(value):
    class Point:
        __match_args__ = ("x", "y")

        def __init__(self, x, y):
            self.x, self.y = x, y

    match value:
        case 0 | 1:
            return "small"
        case [first, *rest] if first > 0:
            return ("seq", first, rest)
        case {"k": v, **others}:
            return ("map", v, others)
        case (2, 3) as pair:
            return ("pair", pair)
        case str() as s:
            return ("str", s)
        case {"point": (px, py)}:
            return Point(px, py).x
        case _:
            p = Point(1, 2)
            match p:
                case Point(1, y=yy):
                    return ("point", yy)
    return None


def imports():
    import os.path
    import os.path as osp
    from collections import OrderedDict as OD
    return os.path is osp, OD.__name__


def uses_locals(a):
    b = a + 1
    return sorted(locals()), sorted(vars())


# ------------------------------------------------------------------ generators and async

def generator(n):
    total = 0
    for i in range(n):
        got = yield i
        if got:
            total += got
    return total


def delegating(n):
    result = yield from generator(n)
    yield ("result", result)
    return result


async def coroutine(n):
    await asyncio.sleep(0)
    total = 0
    async with AsyncRec("cm") as v:
        async for x in agen(n):
            total += x
    return total, v, [x async for x in agen(2)]


class AsyncRec:
    def __init__(self, name):
        self.name = name

    async def __aenter__(self):
        LOG.append(("aenter", self.name))
        return self.name

    async def __aexit__(self, *exc):
        LOG.append(("aexit", self.name))
        return False


async def agen(n):
    for i in range(n):
        yield i
        await asyncio.sleep(0)


def raises_deep(n):
    def level(k):
        if k == 0:
            return {}["missing"]
        return level(k - 1)

    return level(n)


def raises_in_comprehension(xs):
    return [1 / x for x in xs]


def raises_in_lambda():
    f = lambda x: x.missing  # noqa: E731
    return f(1)


@contextlib.contextmanager
def managed(tag):
    rec(("open", tag))
    try:
        yield tag
    finally:
        rec(("close", tag))
