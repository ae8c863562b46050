"""Objects die under a plugin when they die natively.

CPython frees an object the moment its last reference goes, and programs rely on it: a file
written through a temporary is flushed and closed before the next statement reads it back,
a ``finally`` of a generator abandoned by ``break`` runs before the code after the loop, a
weak reference is dead right after ``del``. Each program below records, in order, what it
does and when its objects are finalised (``__del__`` appends to the same log); the log under
every plugin must equal the native one, event for event.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import os
import sys
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.plugins import FastMath, Tracer
from splice.runtime import native
from tests.differential import HookedIdentityPlugin, IdentityPlugin

LOG: list[str] = []


class Obj:
    """Appends ``del NAME`` to the log when finalised."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        LOG.append(f"del {self.name}")

    def method(self, *args: Any) -> str:
        LOG.append(f"{self.name}.method")
        return self.name

    def fail(self) -> None:
        raise ValueError(self.name)

    def __enter__(self) -> Obj:
        return self

    def __exit__(self, *exc: object) -> None:
        LOG.append(f"exit {self.name}")

    @property
    def prop(self) -> str:
        return self.name

    def __iter__(self) -> Iterator[int]:
        return iter([1, 2])

    def __lt__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return False


def consume(value: object) -> None:
    LOG.append("consume")


def make(name: str) -> Obj:
    return Obj(name)


def gen(name: str) -> Iterator[int]:
    try:
        yield 1
        yield 2
    finally:
        LOG.append(f"finally {name}")


# ------------------------------------------------------------------ the programs


def method_on_temporary() -> None:
    Obj("a").method()
    LOG.append("after")


def method_on_local_then_del() -> None:
    c = Obj("a")
    c.method()
    del c
    LOG.append("after")


def method_with_temporary_arguments() -> None:
    keep = Obj("keep")
    keep.method(Obj("arg"), make("made"))
    LOG.append("after")
    del keep
    LOG.append("end")


def call_with_temporary_argument() -> None:
    consume(Obj("a"))
    LOG.append("after")


def nested_calls() -> None:
    consume(make("a").method(make("b").method()))
    LOG.append("after")


def attribute_of_temporary() -> None:
    value = Obj("a").prop
    LOG.append(f"after {value}")


def weak_reference_after_del() -> None:
    c = Obj("a")
    c.method()
    ref = weakref.ref(c)
    del c
    LOG.append(f"alive {ref() is not None}")


def generator_abandoned_by_break() -> None:
    for _ in gen("g"):
        break
    LOG.append("after")


def generator_abandoned_in_loop() -> None:
    for i in range(2):
        for _ in gen(f"g{i}"):
            if i == 0:
                break
            continue
        LOG.append(f"iteration {i}")
    LOG.append("after")


def generator_abandoned_by_any() -> None:
    found = any(x == 1 for x in gen("g"))
    LOG.append(f"after {found}")


def generator_abandoned_by_next() -> None:
    first = next(iter(gen("g")))
    LOG.append(f"after {first}")


def with_temporary() -> None:
    with Obj("a"):
        LOG.append("body")
    LOG.append("after")


def comparison_of_temporaries() -> None:
    result = Obj("a") < Obj("b") < Obj("c")
    LOG.append(f"after {result}")


def comparison_chain_cut_short() -> None:
    # ``a > b`` is false: ``b``, kept for the next comparison, dies before the statement
    # goes on
    result = Obj("a") > Obj("b") < Obj("c")
    LOG.append(f"after {result}")


def comparison_chain_as_a_condition() -> None:
    # the operands of the last comparison die before the branch runs
    if Obj("a") < Obj("b") < Obj("c"):
        LOG.append("branch")
    LOG.append("after")


def loop_over_temporary() -> None:
    for _ in Obj("a"):
        pass
    LOG.append("after")


def exception_from_method_of_temporary() -> None:
    try:
        Obj("a").fail()
    except ValueError:
        LOG.append("handler")
    LOG.append("after")


def _raises_through() -> None:
    make("inner").method(Obj("arg"), {}.fail)  # type: ignore[attr-defined]


def exception_out_of_a_callee() -> None:
    try:
        _raises_through()
    except AttributeError:
        LOG.append("handler")
    LOG.append("after")


def exception_caught_where_raised() -> None:
    # operands of two calls wait on the stack when the innermost argument raises: they die
    # from the top (the last pushed first), before the handler runs
    try:
        make("outer").method(make("inner").method(Obj("arg"), {}.fail))  # type: ignore
    except AttributeError:
        LOG.append("handler")
    LOG.append("after")


def method_in_loop() -> None:
    for i in range(3):
        Obj(f"a{i}").method()
        LOG.append(f"iteration {i}")


def conditional_method() -> None:
    for flag in (True, False):
        value = Obj("t").method() if flag else Obj("f").method()
        LOG.append(f"after {value}")


def builtin_method_on_temporary() -> None:
    items = [Obj("a")]
    items.pop().method()
    LOG.append("after")
    {"k": Obj("b")}.get("k")
    LOG.append("end")


def drop_parameter(value: object) -> None:
    del value
    LOG.append("dropped")


class Dropper:
    def drop(self, value: object) -> None:
        value = None  # noqa: F841 - dropping the reference is the point
        LOG.append("dropped")


def function_drops_its_parameter() -> None:
    # typed stages call the callee's instance directly: its frame takes the argument over
    drop_parameter(Obj("a"))
    LOG.append("after")


def callee_drops_its_parameter() -> None:
    drop_parameter(Obj("a"))
    Dropper().drop(Obj("b"))
    LOG.append("after")


@contextlib.contextmanager
def manager_dropping(a: object, b: object) -> Iterator[None]:
    del a, b
    gc.collect()
    LOG.append("entered")
    yield


def with_manager_made_from_temporaries() -> None:
    # (contextlib's test_nokeepref: the manager's arguments die before __enter__ runs)
    with manager_dropping(Obj("a"), b=make("b")):
        LOG.append("body")
    LOG.append("after")


def loop_over_call_of_temporaries() -> None:
    for x in consume_and_count(Obj("a"), make("b")):
        LOG.append(f"item {x}")
    LOG.append("after")


def consume_and_count(*objs: object) -> list[int]:
    return list(range(len(objs)))


def branch_on_call_of_temporaries() -> None:
    if consume_and_count(Obj("a"), make("b")):
        LOG.append("then")
    LOG.append("after")


def file_roundtrip(path: str) -> str:
    open(path, "w").write("hello")  # noqa: SIM115 - relying on refcounting is the point
    return open(path).read()  # noqa: SIM115


def file_roundtrip_program() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        LOG.append(file_roundtrip(os.path.join(directory, "f")))


def make_closure() -> Callable[[], str]:
    captured = Obj("captured")

    def inner() -> str:
        return captured.name
    return inner


def closure_called_then_dropped() -> None:
    # the closure (and its cell, and what the cell holds) dies at ``del``: a context's
    # table must not keep a nested function it entered
    for _ in range(2):  # the first closure of a code compiles it, the second reuses it
        fn = make_closure()
        fn()
        del fn
        LOG.append("after")


# --- the hand-over of arguments to the callee's frame, and the calls that must not hand over

def drop_keyword(value: object, *, other: object) -> None:
    del value, other
    LOG.append("dropped")


def dropping_through_forwarders() -> None:
    # natively only a call the interpreter makes itself moves the arguments into the
    # callee's frame: through functools.partial, f(*args), map and a bound method kept in a
    # local the caller's stack or a C caller's array still holds them until the call returns
    functools.partial(drop_parameter)(Obj("partial"))
    LOG.append("after partial")
    list(map(drop_parameter, [Obj("map")]))
    LOG.append("after map")
    method = Dropper().drop
    method(Obj("bound"))
    LOG.append("after bound")
    drop_keyword(Obj("positional"), other=Obj("keyword"))
    LOG.append("after keywords")


def dropping_star_arguments() -> None:
    # f(*args): the tuple holds the arguments (3.12 on: CALL_FUNCTION_EX gives the callee's
    # frame the tuple's items and frees the tuple before the callee runs)
    drop_parameter(*[Obj("star")])
    LOG.append("after star")


def failing_to_bind_arguments() -> None:
    # the call fails binding its arguments: natively they die in the failed call
    try:
        drop_parameter(Obj("a"), Obj("b"))  # type: ignore[call-arg]
    except TypeError:
        LOG.append("caught")
    LOG.append("after")


PROGRAMS: list[Callable[[], None]] = [
    method_on_temporary, method_on_local_then_del, method_with_temporary_arguments,
    call_with_temporary_argument, nested_calls, attribute_of_temporary,
    weak_reference_after_del, generator_abandoned_by_break, generator_abandoned_in_loop,
    generator_abandoned_by_any, generator_abandoned_by_next, with_temporary,
    comparison_of_temporaries, comparison_chain_cut_short, comparison_chain_as_a_condition,
    loop_over_temporary, exception_from_method_of_temporary,
    exception_out_of_a_callee, exception_caught_where_raised, method_in_loop, conditional_method,
    builtin_method_on_temporary, callee_drops_its_parameter, file_roundtrip_program,
    with_manager_made_from_temporaries, loop_over_call_of_temporaries, function_drops_its_parameter,
    branch_on_call_of_temporaries, closure_called_then_dropped, dropping_through_forwarders,
    dropping_star_arguments, failing_to_bind_arguments,
]

#: (program, plugin) -> why its objects die at another point than natively (strict xfails)
#: the C entries (per-call hooks without a posthook, typed stages' specializing entry) hand
#: the caller's arguments over to the callee's frame, as CPython's own call does
#: (splice/runtime/_cstack.h); their pure-Python forms are lent them
_HANDED_OVER = native.HANDS_OVER
_LENDING = () if _HANDED_OVER else ("prehook", "typed", "fastmath")
_ENTRY = ("without the C extensions, the call goes through a Python entry of splice's (the "
          "hooks' splice_call, or under typed stages a specializing entry's for a method or "
          "a *args callee), whose frame holds the arguments until the call returns, so a "
          "parameter the callee deletes is freed after the call, not where it is deleted")
_PACKED = ("the callee takes its arguments as *args: natively that tuple is their last "
           "holder and frees them last to first; " + ("under per-call hooks with a posthook "
           "the hooks' argument tuple holds them until the posthook ran, and frees them first "
           "to last" if _HANDED_OVER else "through a Python entry of splice's its frame "
           "holds them to the end of the call and frees them first to last"))
_HOLDS_CALLEE = ("without the C extensions, under per-call hooks or typed stages the entry of "
                 "a nested function (the Python hooks wrapper, a specializing entry) holds "
                 "the function itself, so the context's table keeps it until a sweep or the "
                 "next full collection")
_POSTHOOK = ("a posthook is given the call's arguments (``posthook(result, fn, args, "
             "kwargs)``): they live until it has run, after the callee returned, so a "
             "parameter the callee deletes is freed after the call")
_STAR_HANDED_OVER = (
    "3.12 on: natively f(*args) of a Python function gives the callee's frame the items of the "
    "tuple it made and frees the tuple before the callee runs (CALL_FUNCTION_EX); a C entry "
    "of splice's is called with the tuple's items (PyObject_Call), which it cannot take over")
#: the plugins whose entries hold what they run, unless the C entries hold it weakly
_HOLDING = ("hooked", "prehook", "typed", "fastmath") if native.HELD_CALL is None else ()
KNOWN: dict[tuple[str, str], str] = {
    **{("closure_called_then_dropped", p): _HOLDS_CALLEE for p in _HOLDING},
    **{("method_with_temporary_arguments", p): _PACKED for p in ("hooked", *_LENDING)},
    **{(program, "hooked"): _POSTHOOK
       for program in ("function_drops_its_parameter", "callee_drops_its_parameter",
                       "loop_over_call_of_temporaries", "branch_on_call_of_temporaries",
                       "dropping_through_forwarders", "failing_to_bind_arguments")},
    **({("dropping_star_arguments", p): _STAR_HANDED_OVER
        for p in ("hooked", "prehook", "typed", "fastmath")} if sys.version_info >= (3, 12)
       else {}),
    **{(program, p): _ENTRY for p in _LENDING
       for program in ("function_drops_its_parameter", "callee_drops_its_parameter",
                       "loop_over_call_of_temporaries", "branch_on_call_of_temporaries")
       if (program, p) != ("function_drops_its_parameter", "typed")
       and (program, p) != ("function_drops_its_parameter", "fastmath")},
}


def _cases() -> list[Any]:
    cases = []
    for program in PROGRAMS:
        for plugin in sorted(PLUGINS):
            reason = KNOWN.get((program.__name__, plugin))
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            cases.append(pytest.param(program, plugin, marks=marks,
                                      id=f"{program.__name__}-{plugin}"))
    return cases


class Typed(splice.Plugin):
    """A typed-stage plugin that changes nothing (its code runs as code instances)."""

    def typed(self, ir: Any) -> None:
        return None


class Prehooked(splice.Plugin):
    """A plugin with only a prehook: unlike a posthook, it asks for nothing of the call
    after the callee returned."""

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        return None


PLUGINS: dict[str, Callable[[], splice.Plugin]] = {
    "identity": IdentityPlugin,
    "hooked": HookedIdentityPlugin,
    "prehook": Prehooked,
    "tracer": Tracer,
    "tracer-implicit": lambda: Tracer(implicit_calls=True),
    "typed": Typed,
    "fastmath": lambda: FastMath({}),
}


def events(run: Callable[[], object]) -> list[str]:
    gc.collect()  # what earlier tests left in cycles (plugins and their contexts) dies now
    LOG.clear()
    gc.disable()  # a collection in the middle would free cycles natively too: none here
    try:
        run()
    finally:
        gc.enable()
    return list(LOG)


@pytest.mark.parametrize(("program", "plugin"), _cases())
def test_objects_die_when_they_die_natively(program: Callable[[], None], plugin: str) -> None:
    native = events(program)
    assert native == events(program), "not deterministic natively"
    instance = PLUGINS[plugin]()
    assert events(lambda: instance.run(program)) == native
    # a second run goes through the code made by the first
    assert events(lambda: instance.run(program)) == native


def refcount_of_argument(value: object) -> int:
    return sys.getrefcount(value)


def refcount_program() -> list[int]:
    target = object()
    holder = [target]
    counts = [refcount_of_argument(target), sys.getrefcount(target)]
    holder.clear()
    counts.append(sys.getrefcount(target))
    obj = Obj("r")
    obj.method()
    counts.append(sys.getrefcount(obj))
    return counts


_COUNTED_THROUGH_HOOKS = (
    "under per-call hooks with a posthook, the hooks' argument tuple, which the posthook is "
    "given after the call, is one more reference to what the program counts while the "
    "callee runs" + ("" if _HANDED_OVER else "; without the C extensions the Python "
                     "entries hold the arguments too"))


@pytest.mark.parametrize("plugin", [
    pytest.param(p, marks=[pytest.mark.xfail(reason=_COUNTED_THROUGH_HOOKS, strict=True)]
                 if p == "hooked" or (p == "prehook" and not _HANDED_OVER) else [])
    for p in sorted(PLUGINS)])
def test_reference_counts_are_native(plugin: str) -> None:
    native = refcount_program()
    assert PLUGINS[plugin]().run(refcount_program) == native


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_file_written_through_a_temporary_reads_back(plugin: str, tmp_path: Path) -> None:
    path = str(tmp_path / "f")
    assert PLUGINS[plugin]().run(file_roundtrip, path) == "hello"


# --- a callee that only the call holds ----------------------------------------------------------

def _made_then_called() -> bool:
    def make():  # type: ignore[no-untyped-def]
        def inner():  # type: ignore[no-untyped-def]
            return ref() is not None  # the function is alive while it runs
        ref = weakref.ref(inner)
        return inner
    return bool(make()())


_CALLEE_RELEASED = ("without the C extensions, a callee only a temporary holds (make()()) is "
                    "looked up in the dispatch table and the temporary is released after "
                    "the lookup, before the call runs: natively the call keeps the callable "
                    "on its stack until it returns, and the entry (a function rebuilt from "
                    "transformed code) does not hold it")


@pytest.mark.parametrize("plugin", [
    pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=_CALLEE_RELEASED)]
                 if native.METHODS is None and name in ("identity", "tracer",
                                                        "tracer-implicit") else [])
    for name in sorted(PLUGINS)])
def test_a_function_made_and_called_at_once_lives_through_its_call(plugin: str) -> None:
    assert _made_then_called() is True
    assert PLUGINS[plugin]().run(_made_then_called) is True


class _Dying:
    log: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        _Dying.log.append(self.name)


class _CallableDying(_Dying):
    def __call__(self, *args: object) -> None:
        _Dying.log.append("call")


def _temporaries_around_a_call() -> list[str]:
    _Dying.log = []
    _CallableDying("callee")(_Dying("a1"), _Dying("a2"))
    return _Dying.log


def test_temporaries_of_a_call_die_in_native_order_natively() -> None:
    assert _temporaries_around_a_call() == ["call", "callee", "a1", "a2"]


@pytest.mark.xfail(native.SLOT_CALL is None, strict=True, reason=(
    "without the C extension a callable object's entry is a bound method, whose callee's "
    "frame takes over the caller's argument references"))
@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_temporaries_of_a_call_die_in_native_order(plugin: str) -> None:
    native = _temporaries_around_a_call()
    assert PLUGINS[plugin]().run(_temporaries_around_a_call) == native


# --- a wrapper function made per object, named like what it wraps ------------------------------

class _Closer:
    def __del__(self) -> None:
        LOG.append("closer died")


class _FileWrapper:
    """``tempfile``'s ``_TemporaryFileWrapper`` in small: each method read makes a wrapper
    function (``functools.wraps``: it takes the wrapped method's name) that keeps the
    closer alive, cached on the object; the closer's finaliser deletes the file."""

    def __init__(self) -> None:
        self._closer = _Closer()
        self.file = io.BytesIO()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.__dict__["file"], name)
        if callable(found):
            method = found

            @functools.wraps(method)
            def method_wrapper(*args: Any, **kwargs: Any) -> Any:
                return method(*args, **kwargs)
            method_wrapper._closer = self._closer  # type: ignore[attr-defined]
            found = method_wrapper
        setattr(self, name, found)
        return found


def _write_through_a_wrapper() -> None:
    def use() -> None:
        wrapper = _FileWrapper()
        wrapper.write(b"blat")
    use()
    LOG.append("returned")


_WRAPPER_HELD = ("without the C extensions, the dispatch table keys a hooked or specializing "
                 "entry by the callee itself (the entry holds it): a wrapper function made "
                 "per object stays alive, with what it holds, until the context goes "
                 "(tempfile's NamedTemporaryFile then deletes its file late)")


@pytest.mark.parametrize("plugin", [
    pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=_WRAPPER_HELD)]
                 if name in _HOLDING else [])
    for name in sorted(PLUGINS)])
def test_a_wrapper_made_per_object_dies_with_it(plugin: str) -> None:
    native = events(_write_through_a_wrapper)
    assert native == ["closer died", "returned"]
    assert events(lambda: PLUGINS[plugin]().run(_write_through_a_wrapper)) == native


# --- a function only a dropped receiver holds ---------------------------------------------------

class _Box:
    """Keeps a closure in its instance ``__dict__``: ``_Box().cb()`` drops the box at the
    attribute read, and the stack alone holds the closure through its call."""

    def __init__(self) -> None:
        def cb(*, fail: bool = False) -> bool:
            if fail:
                raise ValueError("asked to fail")
            return ref() is not None  # the function is alive while it runs
        ref = weakref.ref(cb)
        self.cb = cb


def _called_from_a_dropped_receiver() -> bool:
    return bool(_Box().cb()) and bool(_Box().cb(fail=False))


def _failing_from_a_dropped_receiver() -> str:
    try:
        _Box().cb(fail=True)
    except ValueError as exc:
        return str(exc)
    return "no error"


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_a_function_only_a_dropped_receiver_holds_lives_through_its_call(plugin: str) -> None:
    assert _called_from_a_dropped_receiver() is True
    instance = PLUGINS[plugin]()
    assert instance.run(_called_from_a_dropped_receiver) is True
    assert instance.run(_called_from_a_dropped_receiver) is True
    assert instance.run(_failing_from_a_dropped_receiver) == "asked to fail"
