"""Differential harness: run a function natively and round-tripped through splice's IR
(``splice.ir.roundtrip(fn, renest=...)``) and compare everything a program can observe.

What is compared, per run:

- the return value (its type and value, recursively through containers; functions, classes,
  generators and exceptions by their observable attributes), or the exception: its type, args,
  ``str``, notes, ``__cause__``, ``__context__``, ``__suppress_context__`` (recursively) and its
  traceback, the list of ``(filename, lineno, function name)`` of the frames from the function
  under test downward, every frame included: under a plugin a frame of splice's is a
  divergence;
- the side effects, in order: every event recorded through the global recorder ``log``, which
  the helper classes below (``R``, ``Ctx``, ``Desc``, ...) also call from their dunder methods;
- for generators, coroutines and async generators: the whole protocol, step by step, on
  several scripts (``next``, ``send``, ``throw`` at various points, ``close``,
  ``StopIteration.value``; ``asend``, ``athrow``, ``aclose``, ``async for``; ``asyncio.run``),
  with the events of each step and the frame state after it;
- ``locals()``: a case that returns ``locals()`` is compared key for key in renest mode; in
  literal mode (``renest=False``) hidden temporaries may appear (docs/ir.md), so there the
  identifier keys must be exactly the native ones and every extra key must not be an
  identifier.

Cases are declared in modules under ``tests/ir/cases/`` with the ``case`` decorator (one per
argument set) and collected by ``tests/ir/test_roundtrip_*.py``; ``tests/conftest.py``
provides the ``mode`` fixture (renest / literal) every case runs in.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import gc
import inspect
import re
import traceback
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import splice
import splice.ir
from splice.runtime import native

_MISSING: Any = object()
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: in literal mode, a case returning ``locals()`` may show hidden (non-identifier) names
_HIDE_HIDDEN: contextvars.ContextVar[bool] = contextvars.ContextVar("hide_hidden", default=False)
#: the files of the code under test: traceback frames before the first of them are the
#: harness's own and are left out
_ORIGIN: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "origin", default=frozenset())

#: whether R values log their finalisation (while a case runs, between the harness's
#: calls): a value dying at another point than natively is a divergence
_LOG_DEATHS: contextvars.ContextVar[bool] = contextvars.ContextVar("log_deaths", default=False)

# CO_* flags that change how a function object behaves
_BEHAVIOUR_FLAGS = (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR
                    | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
                    | inspect.CO_ITERABLE_COROUTINE)


# ------------------------------------------------------------------ describing values


def frames_of(tb: types.TracebackType | None, *, strip: bool = True) -> list[tuple[str, int, str]]:
    """(filename, line, function) of every frame of ``tb``, splice's included; with
    ``strip``, starting at the first frame of the code under test (if any: otherwise the
    harness's own frames, which are the same for both runs)."""
    frames = [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(tb)]
    origin = _ORIGIN.get()
    if strip:
        for i, (filename, _, _) in enumerate(frames):
            if filename in origin:
                return frames[i:]
    return frames


def describe_exception(exc: BaseException, depth: int = 0, *, strip: bool = True) -> object:
    if depth > 8:
        return ("exception", "...")
    return ("exception", type(exc).__module__, type(exc).__qualname__,
            describe(exc.args, depth + 1), _safe_str(exc),
            describe(getattr(exc, "__notes__", None), depth + 1),
            frames_of(exc.__traceback__, strip=strip),
            None if exc.__cause__ is None
            else describe_exception(exc.__cause__, depth + 1, strip=False),
            None if exc.__context__ is None
            else describe_exception(exc.__context__, depth + 1, strip=False),
            exc.__suppress_context__)


def _safe_str(value: object) -> str:
    try:
        return _ADDRESS.sub("", str(value))
    except Exception as exc:  # noqa: BLE001 - a failing __str__ is part of the description
        return f"<str failed: {type(exc).__name__}>"


def describe_function(fn: types.FunctionType, depth: int) -> object:
    code = fn.__code__
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return ("function", fn.__module__, fn.__qualname__, fn.__name__, fn.__doc__,
            describe(fn.__defaults__, depth + 1), describe(fn.__kwdefaults__, depth + 1),
            describe(fn.__annotations__, depth + 1), describe(fn.__dict__, depth + 1),
            code.co_filename, code.co_firstlineno, code.co_name, code.co_argcount,
            code.co_posonlyargcount, code.co_kwonlyargcount, code.co_varnames[:nargs],
            code.co_flags & _BEHAVIOUR_FLAGS)


def describe_class(cls: type, depth: int) -> object:
    namespace = [(key, describe(value, depth + 2)) for key, value in vars(cls).items()
                 if key not in ("__dict__", "__weakref__")]
    return ("class", cls.__module__, cls.__qualname__, cls.__name__,
            [(b.__module__, b.__qualname__) for b in cls.__mro__],
            (type(cls).__module__, type(cls).__qualname__), namespace)


def describe(value: object, depth: int = 0) -> object:
    """A plain, comparable description of ``value`` (no identities, no addresses)."""
    if depth > 10:
        return ("...",)
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes, type(Ellipsis)):
        return (kind.__name__, value)
    if kind in (float, complex):
        return (kind.__name__, repr(value))  # nan == nan, 0.0 != -0.0
    if kind in (tuple, list) or (isinstance(value, tuple) and hasattr(value, "_fields")):
        return (kind.__qualname__, [describe(v, depth + 1) for v in value])  # type: ignore[attr-defined]
    if isinstance(value, dict):
        items = list(value.items())
        if _HIDE_HIDDEN.get():
            hidden = [k for k, _ in items if isinstance(k, str) and not k.isidentifier()]
            items = [(k, v) for k, v in items if k not in hidden]
        return (kind.__qualname__, [(describe(k, depth + 1), describe(v, depth + 1))
                                    for k, v in items])
    if isinstance(value, set | frozenset):
        return (kind.__qualname__, sorted(repr(describe(v, depth + 1)) for v in value))
    if isinstance(value, BaseException):
        return describe_exception(value, depth, strip=False)
    if isinstance(value, types.FunctionType):
        return describe_function(value, depth)
    if isinstance(value, types.MethodType):
        return ("method", describe(value.__func__, depth + 1), describe(value.__self__, depth + 1))
    if isinstance(value, type):
        return describe_class(value, depth)
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, types.GeneratorType):
        return ("generator", value.__qualname__, inspect.getgeneratorstate(value))
    if isinstance(value, types.CoroutineType):
        return ("coroutine", value.__qualname__, inspect.getcoroutinestate(value))
    if isinstance(value, types.AsyncGeneratorType):
        return ("async_generator", value.__qualname__)
    if isinstance(value, slice | range):
        return (kind.__name__, describe((value.start, value.stop, value.step), depth + 1))
    if isinstance(value, staticmethod | classmethod | property):
        inner = value.fget if isinstance(value, property) else value.__func__
        return (kind.__name__, describe(inner, depth + 1))
    if isinstance(value, types.SimpleNamespace):
        return ("namespace", describe(vars(value), depth + 1))
    if isinstance(value, Helper):
        return (kind.__qualname__, value.describe())
    if kind.__module__ != "builtins" and hasattr(value, "__dict__") and depth < 6:
        return ("object", kind.__module__, kind.__qualname__,
                describe(dict(vars(value)), depth + 1))
    return ("object", kind.__module__, kind.__qualname__, _ADDRESS.sub("", repr(value)))


# ------------------------------------------------------------------ the recorder


class Recorder:
    """The global event log. ``log(tag)`` records ``tag`` and returns it; ``log(tag, value)``
    records ``tag`` and returns ``value``, so an operand can record its own evaluation:
    ``f(log("a", 1), log("b", 2))``. Events are described when recorded (a snapshot)."""

    def __init__(self) -> None:
        self.events: list[object] = []

    def __call__(self, tag: object, value: object = _MISSING) -> Any:
        self.events.append(describe(tag))
        return tag if value is _MISSING else value

    def append(self, event: object) -> None:
        self.events.append(describe(event))

    def clear(self) -> None:
        self.events.clear()

    def take(self) -> list[object]:
        """The events so far, and clear."""
        events, self.events = self.events, []
        return events


log = Recorder()


# ------------------------------------------------------------------ recording helpers


class Helper:
    """Base of the recording helpers: described by ``describe()``, copied fresh per run."""

    def describe(self) -> object:
        return repr(self)

    def __deepcopy__(self, memo: dict[int, object]) -> Any:
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in vars(self).items():
            object.__setattr__(new, key, copy.deepcopy(value, memo))
        return new


def _name(value: object) -> object:
    return value._n if isinstance(value, R) else describe(value)


_BINOPS = {"add": "+", "sub": "-", "mul": "*", "matmul": "@", "truediv": "/",
           "floordiv": "//", "mod": "%", "pow": "**", "lshift": "<<", "rshift": ">>",
           "and": "&", "or": "|", "xor": "^"}
_COMPARES = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


class R(Helper):
    """A value whose every implicit call is recorded in ``log``.

    ``truth``: what ``bool()`` answers; ``items``: what iteration yields and what ``len``
    counts; ``ni``: names of operators (``"add"``, ``"radd"``, ``"iadd"``, ``"lt"``, ...) that
    return ``NotImplemented``; ``cmp_bool``: comparisons return plain bools (by name order)
    instead of new ``R`` values; ``missing``: attribute names whose ``__getattr__`` raises
    AttributeError. Results of operators are new ``R`` values named after the expression.
    """

    def __init__(self, name: str, truth: bool = True, items: Sequence[object] = (1, 2, 3), *,
                 ni: Iterable[str] = (), cmp_bool: bool = False,
                 missing: Iterable[str] = ()) -> None:
        for key, value in (("_n", name), ("_truth", truth), ("_items", list(items)),
                           ("_ni", frozenset(ni)), ("_cmp_bool", cmp_bool),
                           ("_missing", frozenset(missing)), ("_attrs", {})):
            object.__setattr__(self, key, value)

    def __repr__(self) -> str:
        return f"R({self._n})"

    def __del__(self) -> None:
        # object lifetimes are part of what is compared: an R made while a case runs
        # logs its death where it happens (the harness's own copies die outside the log)
        if _LOG_DEATHS.get():
            log.events.append(("del", self._n))

    def describe(self) -> object:
        return ("R", self._n, describe(self._attrs))

    def __hash__(self) -> int:
        return hash(self._n)

    # truth, conversions, formatting
    def __bool__(self) -> bool:
        log(("bool", self._n))
        return self._truth

    def __len__(self) -> int:
        log(("len", self._n))
        return len(self._items)

    def __index__(self) -> int:
        log(("index", self._n))
        return len(self._n)

    def __format__(self, spec: str) -> str:
        log(("format", self._n, spec))
        return f"<{self._n}:{spec}>"

    def __str__(self) -> str:
        log(("str", self._n))
        return f"str-{self._n}"

    # attributes
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # copy/pickle/inspect probes: not user events
        log(("getattr", self._n, attr))
        if attr in self._missing:
            raise AttributeError(f"R has no {attr}")
        if attr in self._attrs:
            return self._attrs[attr]
        return R(f"{self._n}.{attr}", self._truth)

    def __setattr__(self, attr: str, value: object) -> None:
        log(("setattr", self._n, attr, _name(value)))
        self._attrs[attr] = value

    def __delattr__(self, attr: str) -> None:
        log(("delattr", self._n, attr))
        self._attrs.pop(attr, None)

    # items
    def __getitem__(self, key: object) -> Any:
        log(("getitem", self._n, _name(key)))
        return R(f"{self._n}[{_name(key)}]", self._truth)

    def __setitem__(self, key: object, value: object) -> None:
        log(("setitem", self._n, _name(key), _name(value)))

    def __delitem__(self, key: object) -> None:
        log(("delitem", self._n, _name(key)))

    def __contains__(self, item: object) -> bool:
        log(("contains", self._n, _name(item)))
        return item in self._items

    # iteration, calls, context management
    def __iter__(self) -> Any:
        log(("iter", self._n))
        return RecIter(self._n, self._items)

    def __call__(self, *args: object, **kwargs: object) -> Any:
        log(("call", self._n, [_name(a) for a in args],
             [(k, _name(v)) for k, v in kwargs.items()]))
        return R(f"{self._n}()", self._truth)

    def __enter__(self) -> Any:
        log(("enter", self._n))
        return R(f"{self._n}-entered", self._truth)

    def __exit__(self, *exc: object) -> bool:
        log(("exit", self._n, exc[0] and exc[0].__name__))  # type: ignore[attr-defined]
        return False

    # unary
    def __neg__(self) -> Any:
        log(("neg", self._n))
        return R(f"-{self._n}")

    def __pos__(self) -> Any:
        log(("pos", self._n))
        return R(f"+{self._n}")

    def __invert__(self) -> Any:
        log(("invert", self._n))
        return R(f"~{self._n}")

    def __abs__(self) -> Any:
        log(("abs", self._n))
        return R(f"abs({self._n})")


def _make_binop(op: str, symbol: str) -> None:
    def forward(self: R, other: object) -> Any:
        log((op, self._n, _name(other)))
        if op in self._ni:
            return NotImplemented
        return R(f"({self._n}{symbol}{_name(other)})", self._truth)

    def reflected(self: R, other: object) -> Any:
        log(("r" + op, self._n, _name(other)))
        if "r" + op in self._ni:
            return NotImplemented
        return R(f"({_name(other)}{symbol}{self._n})", self._truth)

    def inplace(self: R, other: object) -> Any:
        log(("i" + op, self._n, _name(other)))
        if "i" + op in self._ni:
            return NotImplemented
        return R(f"({self._n}{symbol}={_name(other)})", self._truth)

    for name, method in ((f"__{op}__", forward), (f"__r{op}__", reflected),
                         (f"__i{op}__", inplace)):
        method.__name__ = method.__qualname__ = name
        setattr(R, name, method)


def _make_compare(op: str, symbol: str) -> None:
    def compare(self: R, other: object) -> Any:
        log((op, self._n, _name(other)))
        if op in self._ni:
            return NotImplemented
        if self._cmp_bool:
            return bool(eval(f"a {symbol} b", {"a": self._n, "b": str(_name(other))}))
        return R(f"({self._n}{symbol}{_name(other)})", self._truth)

    compare.__name__ = compare.__qualname__ = f"__{op}__"
    setattr(R, f"__{op}__", compare)


for _op, _symbol in _BINOPS.items():
    _make_binop(_op, _symbol)
for _op, _symbol in _COMPARES.items():
    _make_compare(_op, _symbol)


class RecIter(Helper):
    """An iterator recording every ``__next__`` (and its end)."""

    def __init__(self, name: str, items: Iterable[object]) -> None:
        self.name, self.items, self.i = name, list(items), 0

    def __repr__(self) -> str:
        return f"RecIter({self.name})"

    def __iter__(self) -> RecIter:
        log(("iter-of-iterator", self.name))
        return self

    def __next__(self) -> object:
        if self.i >= len(self.items):
            log(("next-end", self.name))
            raise StopIteration
        item = self.items[self.i]
        self.i += 1
        log(("next", self.name, _name(item)))
        return item


class RecMap(Helper):
    """A mapping recording ``keys()`` and ``__getitem__`` (what ``**m`` calls)."""

    def __init__(self, name: str, data: dict[str, object]) -> None:
        self.name, self.data = name, dict(data)

    def __repr__(self) -> str:
        return f"RecMap({self.name})"

    def keys(self) -> list[str]:
        log(("keys", self.name))
        return list(self.data)

    def __getitem__(self, key: str) -> object:
        log(("getitem", self.name, key))
        return self.data[key]

    def __iter__(self) -> Any:
        log(("iter", self.name))
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


class Ctx(Helper):
    """A context manager recording enter and exit. ``suppress``: ``__exit__`` returns True;
    ``fail_enter``/``fail_exit``: raise there; ``value``: what ``__enter__`` returns (default:
    a tuple ``(name, 1)``, handy for unpacking targets)."""

    def __init__(self, name: str, *, suppress: bool = False, fail_enter: bool = False,
                 fail_exit: bool = False, value: object = _MISSING) -> None:
        self.name, self.suppress = name, suppress
        self.fail_enter, self.fail_exit = fail_enter, fail_exit
        self.value = (name, 1) if value is _MISSING else value

    def __repr__(self) -> str:
        return f"Ctx({self.name})"

    def __enter__(self) -> object:
        log(("enter", self.name))
        if self.fail_enter:
            raise RuntimeError("enter failed", self.name)
        return self.value

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: types.TracebackType | None) -> bool:
        log(("exit", self.name, typ and typ.__name__, exc and exc.args,
             tb is not None and frames_of(tb)))
        if self.fail_exit:
            raise RuntimeError("exit failed", self.name)
        return self.suppress


class ACtx(Ctx):
    """The async counterpart of ``Ctx`` (each method pauses once)."""

    def __repr__(self) -> str:
        return f"ACtx({self.name})"

    async def __aenter__(self) -> object:
        log(("aenter", self.name))
        await Pause(("aenter", self.name))
        if self.fail_enter:
            raise RuntimeError("aenter failed", self.name)
        return self.value

    async def __aexit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                        tb: types.TracebackType | None) -> bool:
        log(("aexit", self.name, typ and typ.__name__, exc and exc.args))
        await Pause(("aexit", self.name))
        if self.fail_exit:
            raise RuntimeError("aexit failed", self.name)
        return self.suppress


class Pause(Helper):
    """An awaitable that suspends once, yielding None (so it also works under asyncio), and
    records the value it is resumed with."""

    def __init__(self, tag: object = None) -> None:
        self.tag = tag

    def __repr__(self) -> str:
        return f"Pause({self.tag!r})"

    def __await__(self) -> Any:
        log(("pause", _name(self.tag)))
        got = yield None
        log(("resumed", _name(self.tag), _name(got)))
        return got if got is not None else self.tag


class AIter(Helper):
    """An async iterator recording ``__aiter__``/``__anext__``, pausing in each step."""

    def __init__(self, name: str, items: Iterable[object] = (1, 2, 3)) -> None:
        self.name, self.items, self.i = name, list(items), 0

    def __repr__(self) -> str:
        return f"AIter({self.name})"

    def __aiter__(self) -> AIter:
        log(("aiter", self.name))
        return self

    async def __anext__(self) -> object:
        await Pause(("anext", self.name))
        if self.i >= len(self.items):
            log(("anext-end", self.name))
            raise StopAsyncIteration
        item = self.items[self.i]
        self.i += 1
        log(("anext", self.name, _name(item)))
        return item


class Desc(Helper):
    """A data descriptor recording ``__set_name__``, ``__get__``, ``__set__``, ``__delete__``."""

    def __init__(self, tag: str = "desc") -> None:
        self.tag = tag
        self.name: str | None = None

    def __repr__(self) -> str:
        return f"Desc({self.tag})"

    def __set_name__(self, owner: type, name: str) -> None:
        log(("set_name", self.tag, owner.__qualname__, name))
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> object:
        log(("get", self.tag, self.name, obj is None))
        if obj is None:
            return self
        return vars(obj).get("_" + str(self.name), 0)

    def __set__(self, obj: object, value: object) -> None:
        log(("set", self.tag, self.name, _name(value)))
        vars(obj)["_" + str(self.name)] = value

    def __delete__(self, obj: object) -> None:
        log(("delete", self.tag, self.name))
        vars(obj).pop("_" + str(self.name), None)


# ------------------------------------------------------------------ running and comparing


@dataclass(frozen=True)
class Step:
    """One protocol step: the operation, its outcome, the events it caused, the state after."""

    op: object
    outcome: object
    events: list[object]
    state: object


def _capture(thunk: Callable[[], object]) -> object:
    """Run ``thunk`` (which returns a description) and describe how it ended."""
    try:
        return ("returned", thunk())
    except BaseException as exc:  # noqa: BLE001 - every exception is part of the outcome
        return ("raised", describe_exception(exc))


Driver = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], object]


def call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
    """The plain driver: call and describe the result."""
    return describe(fn(*args, **kwargs))


Op = tuple[Any, ...]


def _thrown(op: Op) -> BaseException:
    typ, *args = op[1:]
    return typ(*args)  # type: ignore[no-any-return]


def _generator_step(gen: Any, op: Op) -> object:
    name = op[0]
    if name == "next":
        return ("yielded", describe(gen.send(None) if inspect.iscoroutine(gen) else next(gen)))
    if name == "send":
        return ("yielded", describe(gen.send(op[1])))
    if name == "throw":
        return ("yielded", describe(gen.throw(_thrown(op))))
    if name == "close":
        return ("closed", describe(gen.close()))
    raise ValueError(op)


def _describe_op(op: Op) -> object:
    return tuple(v.__qualname__ if isinstance(v, type) else describe(v) for v in op)


def _state(gen: Any) -> object:
    if inspect.iscoroutine(gen):
        awaiting = gen.cr_await
        return (inspect.getcoroutinestate(gen), describe(awaiting))
    return (inspect.getgeneratorstate(gen), type(gen.gi_yieldfrom).__qualname__)


def _step(gen: Any, op: Op) -> Step:
    log.clear()
    try:
        outcome = _generator_step(gen, op)
    except StopIteration as stop:
        outcome = ("stopped", describe(stop.value), frames_of(stop.__traceback__))
    except BaseException as exc:  # noqa: BLE001 - every exception is part of the outcome
        outcome = ("raised", describe_exception(exc))
    return Step(_describe_op(op), outcome, log.take(), _state(gen))


def _finished(outcome: object) -> bool:
    return isinstance(outcome, tuple) and outcome[0] in ("stopped", "raised")


GEN_SCRIPTS: list[list[Op]] = [
    [("drain",)],
    [("next",), ("send", 10), ("send", "twenty"), ("drain",)],
    [("send", None), ("send", 1), ("send", None), ("send", 2), ("drain",)],
    [("send", 1)],  # a non-None value into a just-started generator: TypeError
    [("throw", ValueError, "at start"), ("next",)],
    [("next",), ("throw", ValueError, "first"), ("drain",)],
    [("next",), ("next",), ("throw", KeyError, "second"), ("drain",)],
    [("next",), ("next",), ("next",), ("throw", ZeroDivisionError, "third"), ("drain",)],
    [("next",), ("throw", GeneratorExit), ("next",)],
    [("next",), ("throw", StopIteration, "inside"), ("next",)],
    [("close",), ("next",)],
    [("next",), ("close",), ("next",), ("close",)],
    [("next",), ("next",), ("close",)],
    [("next",), ("next",), ("next",), ("close",)],
]


def run_script(gen: Any, script: Sequence[Op], limit: int = 40) -> list[Step]:
    """Run ``script`` on a generator or coroutine; ``("drain",)`` steps with ``next`` until
    it finishes. Ends with ``close()`` (so no generator is left for the garbage collector)."""
    steps: list[Step] = []
    for op in script:
        if op[0] == "drain":
            for _ in range(limit):
                steps.append(_step(gen, ("next",)))
                if _finished(steps[-1].outcome):
                    break
        else:
            steps.append(_step(gen, op))
    steps.append(_step(gen, ("close",)))
    return steps


def drive_generator(scripts: Sequence[Sequence[Op]] = tuple(GEN_SCRIPTS)) -> Driver:
    """A driver running each script on a fresh generator (or coroutine, whose ``next`` is
    ``send(None)``) from the function under test."""

    def drive(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
        runs = []
        for script in scripts:
            log.clear()
            gen = fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            created = log.take()
            runs.append((created, describe(gen), run_script(gen, script)))
        return runs

    return drive


COROUTINE_SCRIPTS: list[list[Op]] = [
    [("drain",)],
    [("next",), ("send", "a"), ("send", "b"), ("drain",)],
    [("send", 1)],
    [("throw", ValueError, "at start")],
    [("next",), ("throw", ValueError, "first"), ("drain",)],
    [("next",), ("next",), ("throw", KeyError, "second"), ("drain",)],
    [("next",), ("throw", GeneratorExit)],
    [("close",), ("next",)],
    [("next",), ("close",), ("next",)],
    [("next",), ("next",), ("close",)],
]


def drive_coroutine(scripts: Sequence[Sequence[Op]] = tuple(COROUTINE_SCRIPTS)) -> Driver:
    """Drive coroutines by hand (``send``/``throw``/``close``), then under ``asyncio.run``."""
    manual = drive_generator(scripts)

    def drive(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
        by_hand = manual(fn, args, kwargs)
        log.clear()
        under_asyncio = _capture(lambda: describe(asyncio.run(
            fn(*copy.deepcopy(args), **copy.deepcopy(kwargs)))))
        return by_hand, under_asyncio, log.take()

    return drive


def drive_asyncio(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                  ) -> object:
    """Run a coroutine function under ``asyncio.run``."""
    return describe(asyncio.run(fn(*args, **kwargs)))


def _await_by_hand(awaitable: Any, limit: int = 40) -> object:
    """Step an awaitable with ``send(None)`` until it completes; pauses are recorded."""
    pauses = 0
    try:
        for _ in range(limit):
            awaitable.send(None)
            pauses += 1
        awaitable.close()
        return ("too many pauses",)
    except StopIteration as stop:
        return ("yielded", describe(stop.value), pauses)
    except StopAsyncIteration as stop:
        return ("stop-async", describe(stop.args), pauses)
    except BaseException as exc:  # noqa: BLE001 - every exception is part of the outcome
        return ("raised", describe_exception(exc), pauses)


def _agen_step(agen: Any, op: Op) -> Step:
    log.clear()
    name = op[0]
    try:
        if name == "anext":
            awaitable = agen.__anext__()
        elif name == "asend":
            awaitable = agen.asend(op[1])
        elif name == "athrow":
            awaitable = agen.athrow(_thrown(op))
        elif name == "aclose":
            awaitable = agen.aclose()
        else:
            raise ValueError(op)
        outcome = _await_by_hand(awaitable)
    except BaseException as exc:  # noqa: BLE001 - every exception is part of the outcome
        outcome = ("raised creating the awaitable", describe_exception(exc))
    state = (agen.ag_running, agen.ag_frame is None, describe(agen.ag_await))
    return Step(_describe_op(op), outcome, log.take(), state)


AGEN_SCRIPTS: list[list[Op]] = [
    [("drain",)],
    [("anext",), ("asend", "x"), ("asend", "y"), ("drain",)],
    [("asend", None), ("asend", 1), ("drain",)],
    [("asend", 1)],
    [("athrow", ValueError, "at start"), ("anext",)],
    [("anext",), ("athrow", ValueError, "first"), ("drain",)],
    [("anext",), ("anext",), ("athrow", KeyError, "second"), ("drain",)],
    [("anext",), ("athrow", GeneratorExit), ("anext",)],
    [("aclose",), ("anext",)],
    [("anext",), ("aclose",), ("anext",), ("aclose",)],
    [("anext",), ("anext",), ("aclose",)],
]


def drive_async_generator(scripts: Sequence[Sequence[Op]] = tuple(AGEN_SCRIPTS)) -> Driver:
    """Drive async generators by hand (``__anext__``/``asend``/``athrow``/``aclose``, their
    awaitables stepped with ``send(None)``), then with ``async for`` under ``asyncio.run``
    (first fully, then breaking out after one item and closing)."""

    def drive(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
        runs = []
        for script in scripts:
            log.clear()
            agen = fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            steps = []
            for op in script:
                if op[0] == "drain":
                    for _ in range(40):
                        steps.append(_agen_step(agen, ("anext",)))
                        if steps[-1].outcome[0] != "yielded":  # type: ignore[index]
                            break
                else:
                    steps.append(_agen_step(agen, op))
            steps.append(_agen_step(agen, ("aclose",)))
            runs.append(steps)

        async def collect() -> object:
            items = [item async for item in fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))]
            agen = fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            first = []
            async for item in agen:
                first.append(item)
                break
            await agen.aclose()
            return items, first

        log.clear()
        under_asyncio = _capture(lambda: describe(asyncio.run(collect())))
        return runs, under_asyncio, log.take()

    return drive


# ------------------------------------------------------------------ rebuilding classes


def _rebuild_function(fn: Any, renest: bool) -> Any:
    splice.ir.verify(splice.ir.lower(fn))
    return splice.ir.roundtrip(fn, renest=renest)


def _rebuild_attribute(value: object, renest: bool) -> object:
    if isinstance(value, types.FunctionType):
        return _rebuild_function(value, renest)
    if isinstance(value, staticmethod):
        return staticmethod(_rebuild_function(value.__func__, renest))
    if isinstance(value, classmethod):
        return classmethod(_rebuild_function(value.__func__, renest))
    if isinstance(value, property):
        # copies made with getter/setter/deleter keep the property's name (error messages)
        prop = value
        if value.fget is not None:
            prop = prop.getter(_rebuild_function(value.fget, renest))
        if value.fset is not None:
            prop = prop.setter(_rebuild_function(value.fset, renest))
        if value.fdel is not None:
            prop = prop.deleter(_rebuild_function(value.fdel, renest))
        return prop
    return _MISSING


def rebuild_class(cls: type, renest: bool) -> type:
    """A subclass of ``cls`` (same name, qualified name and module) whose methods (plain,
    static, class, property accessors) are ``cls``'s own, each round-tripped one by one.
    A subclass, not a copy: zero-argument ``super()`` and ``__class__`` in the rebuilt methods
    still refer to ``cls`` (their cell is shared), so instances must be instances of it."""
    namespace: dict[str, object] = {}
    for key, value in vars(cls).items():
        new = _rebuild_attribute(value, renest)
        if new is not _MISSING:
            namespace[key] = new
    namespace["__qualname__"] = cls.__qualname__
    namespace["__module__"] = cls.__module__
    namespace["__doc__"] = cls.__doc__
    sub = types.new_class(cls.__name__, (cls,), {"metaclass": type(cls)},
                          lambda ns: ns.update(namespace))
    log.clear()  # what creating the subclass recorded (__init_subclass__, metaclass)
    return sub


# ------------------------------------------------------------------ cases


@dataclass
class Case:
    """One argument set of one function under test. ``target`` is what is round-tripped: the
    function itself, or (``rebuild=cls``) the methods of a class, in which case ``fn`` runs
    natively and receives the original class, or its rebuilt subclass, as first argument."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    make: Callable[[], tuple[Any, ...]] | None = None
    drive: Driver = call
    rebuild: type | None = None
    locals_result: bool = False
    xfail: dict[str, str] = field(default_factory=dict)  # mode -> reason
    label: str = ""

    @property
    def id(self) -> str:
        return f"{self.fn.__name__}-{self.label}" if self.label else self.fn.__name__

    @property
    def key(self) -> tuple[str, str]:
        """(the case module's short name, the case's id)."""
        return self.fn.__module__.rsplit(".", 1)[-1], self.id

    def fresh_args(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self.make is not None:
            return self.make(), copy.deepcopy(self.kwargs)
        return copy.deepcopy(self.args), copy.deepcopy(self.kwargs)


REGISTRY: dict[str, list[Case]] = {}
#: renest / literal: the function round-tripped; context: run under a plugin that recurses
#: everywhere; hooked: the same with (no-op) prehook and posthook on every call
MODES = ("renest", "literal", "context", "hooked")
CONTEXT_MODES = ("context", "hooked")
#: modes where temporaries that cannot be re-nested are hidden locals (``%n``) that
#: ``locals()`` shows (docs/ir.md): literal mode, and code routed through a context, whose
#: method-call dispatch reads the bound method several times
HIDDEN_TEMP_MODES = ("literal", "context", "hooked")


class IdentityPlugin(splice.Plugin):
    """Recurses into everything and changes nothing."""


class HookedIdentityPlugin(splice.Plugin):
    """Recurses into everything, with hooks around every call that change nothing."""

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass

    def posthook(self, result: Any, fn: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        pass


PLUGINS: dict[str, splice.Plugin] = {"context": IdentityPlugin(),
                                     "hooked": HookedIdentityPlugin()}


def case(*args: Any, kw: dict[str, Any] | None = None,
         make: Callable[[], tuple[Any, ...]] | None = None, drive: Driver = call,
         rebuild: type | None = None, locals_result: bool = False,
         xfail: str | None = None, xfail_literal: str | None = None,
         xfail_renest: str | None = None, xfail_context: str | None = None,
         xfail_hooked: str | None = None, label: str = "") -> Callable[[Any], Any]:
    """Declare a differential case: ``fn(*args, **kw)`` natively vs round-tripped. Arguments
    are deep-copied for every run (the recording helpers copy fresh); ``make`` builds them
    instead. ``xfail*``: a known divergence (reason), strict, in both or one mode. Stack
    several ``@case`` for several argument sets; the function itself is returned unchanged."""

    def register(fn: Any) -> Any:
        marks = {}
        if xfail:
            marks = {"renest": xfail, "literal": xfail}
        if xfail_literal:
            marks["literal"] = xfail_literal
        if xfail_renest:
            marks["renest"] = xfail_renest
        if xfail_context:
            marks.update(dict.fromkeys(CONTEXT_MODES, xfail_context))
        if xfail_hooked:  # (and under any plugin routing implicit calls)
            marks["hooked"] = xfail_hooked
        cases = REGISTRY.setdefault(fn.__module__, [])
        n = sum(c.fn is fn for c in cases)
        cases.append(Case(fn, args, dict(kw or {}), make, drive, rebuild, locals_result,
                          marks, label or (str(n) if n else "")))
        return fn

    return register


def collect(module: types.ModuleType) -> list[Case]:
    """The cases a case module declared (ids are checked unique)."""
    cases = REGISTRY.get(module.__name__, [])
    seen: dict[str, int] = {}
    for c in cases:
        seen[c.id] = seen.get(c.id, 0) + 1
    assert all(n == 1 for n in seen.values()), f"duplicate case ids in {module.__name__}"
    return list(cases)


def observe(case: Case, target: Any, deaths: bool = True) -> object:
    """Run ``case`` with ``target`` (the function under test or its round trip, or the class
    or its rebuilt subclass) and describe everything it did (``deaths``: including when R
    values die)."""
    args, kwargs = case.fresh_args()
    log.clear()
    if case.rebuild is not None and target is not case.rebuild and \
            not isinstance(target, type):
        # context modes: the case function itself runs under the plugin, on the class
        def thunk() -> object:
            return case.drive(target, (case.rebuild, *args), kwargs)
    elif case.rebuild is not None:
        def thunk() -> object:
            return case.drive(case.fn, (target, *args), kwargs)
    else:
        def thunk() -> object:
            return case.drive(target, args, kwargs)
    enabled = gc.isenabled()
    gc.disable()  # deaths by reference counting only, at the same points in every run
    logging = _LOG_DEATHS.set(deaths)
    try:
        outcome = _capture(thunk)
    finally:
        _LOG_DEATHS.reset(logging)
        if enabled:
            gc.enable()
    return outcome, log.take()


def origin_files(case: Case) -> frozenset[str]:
    fn = case.rebuild if case.rebuild is not None else case.fn
    module = inspect.getmodule(fn)
    files = {getattr(module, "__file__", None)}
    if isinstance(fn, types.FunctionType):
        files.add(fn.__code__.co_filename)
    return frozenset(f for f in files if f)


def rebuilt(case: Case, mode: str) -> Any:
    if mode in CONTEXT_MODES:
        # the function under test entered under the plugin: its transformed version, with
        # everything it calls dispatched under the plugin too
        return PLUGINS[mode].context.enter(case.fn)
    renest = mode == "renest"
    if case.rebuild is not None:
        return rebuild_class(case.rebuild, renest)
    assert isinstance(case.fn, types.FunctionType), case.fn
    return _rebuild_function(case.fn, renest)


def check(case: Case, mode: str) -> None:
    """The differential check of one case in one mode (``"renest"`` or ``"literal"``)."""
    assert mode in MODES
    target = rebuilt(case, mode)
    origin = _ORIGIN.set(origin_files(case))
    hide = _HIDE_HIDDEN.set(case.locals_result and mode in HIDDEN_TEMP_MODES)
    deaths = case.key not in LIFETIME_GAPS
    try:
        native = observe(case, case.rebuild if case.rebuild is not None else case.fn, deaths)
        again = observe(case, case.rebuild if case.rebuild is not None else case.fn, deaths)
        assert again == native, "the case is not deterministic natively"
        round_tripped = observe(case, target, deaths)
    finally:
        _ORIGIN.reset(origin)
        _HIDE_HIDDEN.reset(hide)
    assert round_tripped == native
    if case.locals_result and mode in HIDDEN_TEMP_MODES:
        check_hidden_locals(case, target)


#: (case module, case id) -> why an R value dies at another point than natively in some
#: mode. These cases compare everything but deaths; tests/ir/test_roundtrip_harness.py
#: checks each still differs in deaths somewhere.
_CLOSURE_IN_TABLE = ("without the C extensions, under per-call hooks a context's dispatch "
                     "table keeps the Python hooks wrapper of a lambda or closure it "
                     "called, which holds the function (and so its cells), until the table "
                     "is swept")
LIFETIME_GAPS: dict[tuple[str, str], str] = {
    ("rt_expressions", "nested_boolop_not_threaded"): _CLOSURE_IN_TABLE,
    ("rt_expressions", "nested_boolop_not_threaded-1"): _CLOSURE_IN_TABLE,
} if native.HELD_CALL is None else {}


HIDDEN_NAME = re.compile(r"%\d+|@\w+")


def check_hidden_locals(case: Case, target: Any) -> None:
    """Literal mode: the names of ``locals()`` left out of the comparison (not identifiers)
    are splice's hidden temporaries and cells, ``%n`` and ``@name`` (docs/ir.md)."""
    args, kwargs = case.fresh_args()
    if case.rebuild is not None:
        result = case.drive(case.fn, (target, *args), kwargs)
    else:
        result = target(*args, **kwargs)
    log.clear()
    dicts = _dicts_in(result)
    assert dicts, "a locals_result case returns locals() (or a tuple/list of them)"
    for value in dicts:
        for key in value:
            assert isinstance(key, str)
            assert key.isidentifier() or HIDDEN_NAME.fullmatch(key), key


def _dicts_in(value: object) -> list[dict[Any, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, tuple | list):
        return [d for v in value for d in _dicts_in(v)]
    return []
