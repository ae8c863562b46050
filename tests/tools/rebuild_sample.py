"""A module for the rebuild tests: one of each kind of slot ``rebuild_module`` handles.

Loaded fresh by each test (not imported by name)."""

import ast
import contextlib
import dataclasses
import functools
from textwrap import dedent  # noqa: F401 - another module's function: never replaced

CALLS: list[str] = []


def plain(x, y=2, *args, z=3, **kw):
    return (x, y, args, z, kw)


alias = plain


def decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        CALLS.append(fn.__name__)
        return fn(*args, **kwargs)
    return wrapper


@decorator
def decorated(x):
    return x * 2


_CACHES: dict = {}


def keyed_cache(fn):
    # typing._tp_cache's shape (3.12+): the cache is keyed by the decorated function,
    # which the wrapper reads back through its closure cell
    _CACHES[fn] = {}

    @functools.wraps(fn)
    def lookup(x):
        cache = _CACHES[fn]
        if x not in cache:
            cache[x] = fn(x)
        return cache[x]
    return lookup


@keyed_cache
def squared(x):
    return x * x


@contextlib.contextmanager
def managed(log):
    log.append("enter")
    yield 42
    log.append("exit")


@functools.lru_cache(maxsize=16)
def cached(n):
    return n * n


def gen(n):
    total = yield from range(n)
    return total


def uses_lambda(xs):
    return sorted(xs, key=lambda x: -x)


class Base:
    def __init__(self, v):
        self.v = v

    def method(self):
        return self.v + 1

    __call__ = method

    @staticmethod
    def static(a):
        return a * 3

    @classmethod
    def klass(cls):
        return cls.__name__

    @property
    def prop(self):
        return self.v * 10

    @prop.setter
    def prop(self, value):
        self.v = value

    @functools.cached_property
    def cached_prop(self):
        return [self.v]

    class Inner:
        def inner_method(self):
            return "inner"

    dispatch = {"m": method, "pair": (method, static)}  # noqa: RUF012


class Child(Base):
    def method(self):
        return super().method() * 2


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0

    def norm1(self):
        return abs(self.x) + abs(self.y)


_inst = Base(5)
bound = _inst.method
TABLE = [("plain", plain), ("decorated", decorated)]
partial_plain = functools.partial(plain, 1)

# a function of this module whose source cannot be found (compiled from a syntax tree:
# there is no text; one compiled from a string would be recorded): UnsupportedError
exec(compile(ast.parse("def no_source():\n    return 1\n"), __file__, "exec"))  # noqa: S102
