"""Method calls under a context without a bound method (``splice/runtime/_methods.c``):
``obj.m(args)`` becomes ``@Methods(obj, 'm')(obj, args)``, the attribute looked up as
CPython's ``LOAD_METHOD`` looks it up. Each case runs natively and under an identity plugin,
with the C lookup and with the Python form splice falls back to when the extension is not
built, and compares results, exceptions and the lines of their tracebacks."""

from __future__ import annotations

import collections
import math
import traceback
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import splice
from splice.runtime import native


class Identity(splice.Plugin):
    pass


@pytest.fixture(params=["c", "python"])
def form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "c":
        if native.METHODS is None:
            pytest.fail("splice.runtime._methods is not built (pip install -e . builds it)")
    else:
        monkeypatch.setattr(native, "METHODS", None)
    yield request.param


def outcome(fn: Callable[..., Any], *args: Any) -> Any:
    """What ``fn(*args)`` returned, or the exception's type, message and user lines."""
    try:
        return ("returned", fn(*args))
    except Exception as exc:  # noqa: BLE001 (the comparison is the point)
        lines = [(f.name, f.lineno) for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename == __file__ and f.name not in ("outcome", "both", "<lambda>")]
        return ("raised", type(exc), str(exc), lines)


def both(fn: Callable[..., Any], *args: Any) -> Identity:
    native = outcome(fn, *args)
    plugin = Identity()
    under = outcome(lambda *a: plugin.run(fn, *a), *args)
    assert under == native
    return plugin


class Base:
    def __init__(self, x: int) -> None:
        self.x = x

    def m(self, y: int, *rest: int, k: int = 0, **extra: int) -> tuple[Any, ...]:
        return ("Base.m", self.x, y, rest, k, extra)

    @classmethod
    def make(cls, x: int) -> Base:
        return cls(x)

    @staticmethod
    def static(y: int) -> int:
        return y * 2

    @property
    def getter(self) -> Callable[[int], int]:
        return lambda y: y + self.x

    def __helper(self, y: int) -> int:
        return y - self.x

    def private(self, y: int) -> int:
        return self.__helper(y)

    def fails(self) -> None:
        raise ValueError(f"fails {self.x}")

    def calls_failing(self) -> None:
        self.fails()


class Derived(Base):
    def m(self, y: int, *rest: int, k: int = 0, **extra: int) -> tuple[Any, ...]:
        return ("Derived.m", super().m(y, *rest, k=k, **extra))


class Dynamic:
    def __getattr__(self, name: str) -> Callable[..., Any]:
        return lambda *args: (name, args)


class Intercepting:
    def __getattribute__(self, name: str) -> Any:
        if name == "m":
            return lambda y: ("intercepted", y)
        return object.__getattribute__(self, name)

    def m(self, y: int) -> Any:
        return ("never", y)


class Adder:
    def __call__(self, y: int) -> int:
        return y + 100


class Slotted:
    __slots__ = ("x",)

    def __init__(self, x: int) -> None:
        self.x = x

    def m(self, y: int) -> int:
        return self.x + y


class MyDict(dict):  # type: ignore[type-arg]
    def get(self, key: Any, default: Any = None) -> Any:
        return ("MyDict.get", key, default)


def method_kinds(obj: Base, derived: Base) -> list[Any]:
    out: list[Any] = [obj.m(1), obj.m(1, 2, 3, k=4, z=5), derived.m(2, k=1)]
    out += [obj.make(3).x, Base.make(4).x, derived.make(5).x, obj.static(6), Base.static(7)]
    out += [obj.getter(8), obj.private(9), Slotted(1).m(2)]
    args, kwargs = (1, 2), {"k": 3}
    out.append(obj.m(*args, **kwargs))
    return out


def test_method_kinds(form: str) -> None:
    both(method_kinds, Base(10), Derived(20))


def instance_attributes(obj: Base) -> list[Any]:
    out = [obj.m(1)]
    obj.m = lambda y: ("instance", y)  # type: ignore[method-assign]
    out.append(obj.m(2))
    obj.m = Adder()  # type: ignore[method-assign]
    out.append(obj.m(3))
    del obj.m
    out.append(obj.m(4))
    return out


def test_instance_dict_shadows_the_class(form: str) -> None:
    both(instance_attributes, Base(1))


def dynamic_lookups() -> list[Any]:
    return [Dynamic().anything(1, 2), Intercepting().m(3), MyDict(a=1).get("a"),
            {"b": 2}.get("b"), collections.deque([1]).count(1), bytearray(b"ab").upper()]


def test_getattr_getattribute_and_builtin_receivers(form: str) -> None:
    both(dynamic_lookups)


def modules(mod: Any, name: str) -> list[Any]:
    return [mod.sqrt(16.0), mod.floor(2.5), name.upper(), name.split("b")]


def test_module_and_builtin_receivers_given_as_arguments(form: str) -> None:
    both(modules, math, "abc")


def missing_method(obj: Base) -> Any:
    return obj.missing(1)


def missing_before_arguments(obj: Base, log: list[str]) -> Any:
    return obj.missing(log.append("argument evaluated"))


def test_attribute_error_as_natively(form: str) -> None:
    both(missing_method, Base(1))
    native: list[str] = []
    under: list[str] = []
    outcome(missing_before_arguments, Base(1), native)
    outcome(lambda *a: Identity().run(missing_before_arguments, *a), Base(1), under)
    assert native == under == []  # the lookup fails before the arguments run


def raising(obj: Base) -> None:
    obj.calls_failing()


def test_exception_traceback_lines(form: str) -> None:
    both(raising, Base(7))


def rebinding_receiver(a: Base, b: Base) -> Any:
    x = a
    return x.m((x := b).x), x.x


def test_arguments_rebinding_the_receiver(form: str) -> None:
    both(rebinding_receiver, Base(1), Base(2))


def replaced_on_the_class(obj: Base) -> list[Any]:
    out = [obj.static(1)]
    original = Base.__dict__["static"]
    Base.static = staticmethod(lambda y: ("replaced", y))  # type: ignore[assignment]
    try:
        out.append(obj.static(2))
    finally:
        Base.static = original
    out.append(obj.static(3))
    return out


def test_class_attribute_replaced_while_running(form: str) -> None:
    both(replaced_on_the_class, Base(1))


def test_methods_are_entered_under_the_plugin(form: str) -> None:
    entered: list[str] = []

    class Recording(splice.Plugin):
        def recurse(self, fn: Any) -> bool:
            entered.append(fn.__qualname__)
            return True

    Recording().run(method_kinds, Base(1), Derived(2))
    for name in ("Base.m", "Derived.m", "Base.make", "Base.static", "Base.private",
                 "Base.__helper", "Slotted.m"):
        assert name in entered, name


def c_lookup(value: Any) -> bool:
    """Whether a hidden cell's value is the C method lookup as generated code calls it
    (``Methods.builtin``, a builtin function bound to the lookup)."""
    return type(getattr(value, "__self__", None)).__name__ == "Methods" and \
        getattr(value, "__name__", None) == "Methods"


def test_generated_code_uses_the_form_chosen(form: str) -> None:
    plugin = both(method_kinds, Base(1), Derived(2))
    entry = plugin.context.table[method_kinds]
    cells = [c.cell_contents for c in entry.__closure__ or ()]
    uses_c = any(c_lookup(value) for value in cells)
    assert uses_c is (form == "c")


def multiline_missing(obj: Any) -> Any:
    return (obj
            .missing
            )(1)


def multiline_raising(obj: Base) -> Any:
    return (obj
            .fails
            )()


def multiline_starred(obj: Base) -> Any:
    # a ``*`` argument: CPython makes a plain call, placed at the whole call's start
    return (obj
            .fails
            )(*())


def multiline_double_starred(obj: Base) -> Any:
    return (obj
            .fails
            )(**{})


def multiline_imported_module(obj: Base) -> Any:
    # a receiver named as the module imports it at top level: a plain call, placed at the
    # whole call's start (the compiler's ``is_import_originated``)
    return (math
            .sqrt
            )(obj)


def multiline_local_named_like_an_import(math: Base) -> Any:
    # the compiler asks the module's symbol table by name only: a local of that name counts
    return (math
            .fails
            )()


class Hooked(splice.Plugin):
    def prehook(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        pass


@pytest.mark.parametrize("plugin", [Identity, Hooked])
@pytest.mark.parametrize("fn", [multiline_missing, multiline_raising, multiline_starred,
                                multiline_double_starred, multiline_imported_module,
                                multiline_local_named_like_an_import])
def test_multiline_method_call_positions(form: str, fn: Callable[..., Any],
                                         plugin: type[splice.Plugin]) -> None:
    # CPython places the attribute's instruction on the attribute's own line when the
    # expression spans several (test_traceback's test_multiline_method_call_*)
    def spans(run: Callable[[], Any]) -> list[tuple[Any, ...]]:
        try:
            run()
        except Exception as exc:  # noqa: BLE001
            return [(f.name, f.lineno, f.end_lineno, f.colno, f.end_colno)
                    for f in traceback.extract_tb(exc.__traceback__)
                    if f.filename == __file__ and f.name in (fn.__name__, "fails")]
        raise AssertionError("did not raise")

    native = spans(lambda: fn(Base(1)))
    assert native and spans(lambda: plugin().run(fn, Base(1))) == native


class WeakList(list[Any]):
    """A list a weak reference can point to."""


def held_in_names(n: int) -> Any:
    # builtin methods kept in names (the ``append = out.append`` idiom), a method
    # descriptor, a builtin bound to its module, and one that raises
    perm = list(range(5))
    ins, pop = perm.insert, perm.pop
    for _ in range(n):
        ins(2, pop(0))
    upper, size, method = "abc".upper, len, str.lower
    result = (perm, upper(), size(perm), method("X"))
    empty = [].pop
    return result, empty()


def test_builtin_methods_held_in_names(form: str) -> None:
    plugin = both(held_in_names, 7)
    kept = [key for key in plugin.context.table if type(key) is types.BuiltinMethodType
            and not isinstance(key.__self__, types.ModuleType)]
    assert kept == []  # a bound builtin method would keep its receiver alive


def test_a_receiver_reached_through_a_method_held_in_a_name_dies_natively(form: str) -> None:
    def program() -> list[bool]:
        alive = []
        items = WeakList()
        ref = weakref.ref(items)
        add = items.append
        add(1)
        del add, items
        alive.append(ref() is not None)
        return alive

    assert program() == [False]
    assert Identity().run(program) == [False]


class InterceptInsert(splice.Plugin):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    @splice.intercept(list.insert)
    def insert(self, lst: list[Any], index: int, x: Any) -> None:
        self.seen.append(x)
        self.recurse_call(list.insert, lst, index, x)


def test_an_intercepted_builtin_method_held_in_a_name_is_intercepted(form: str) -> None:
    plugin = InterceptInsert()
    assert outcome(lambda: plugin.run(held_in_names, 3)) == outcome(held_in_names, 3)
    assert plugin.seen == [0, 1, 2]


# --- list.sort: routed only for the key it may be given ---------------------------------------


def _marker(value: Any) -> Any:
    return value


class Sorter:
    """Not a list: its ``sort`` is Python code the plugin must enter."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        self.calls.append(_marker((key is not None, reverse)))


def sorts(items: Any, options: dict[str, Any]) -> Any:
    items.sort()
    items.sort(reverse=True)
    items.sort(key=_marker)
    items.sort(**options)
    return items if isinstance(items, list) else items.calls


class SeesKeysAndMarkers(splice.Plugin):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    @splice.intercept(_marker)
    def marker(self, value: Any) -> Any:
        self.seen.append(value)
        return value


@pytest.mark.parametrize("receiver", ["list", "sorter"])
def test_sort_without_a_key_runs_as_it_is_and_a_given_key_is_entered(
        form: str, receiver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def make() -> Any:
        return [3, 1, 2] if receiver == "list" else Sorter()

    options = {"key": _marker, "reverse": False}
    expected = sorts(make(), options)
    plugin = SeesKeysAndMarkers()
    assert plugin.run(sorts, make(), options) == expected
    # the keys given by keyword and through ``**`` run under the plugin, as does the Python
    # ``sort`` of an object that is not a list
    if receiver == "list":
        assert plugin.seen == [3, 2, 1, 1, 2, 3]  # after the reversed sort, then sorted
    else:
        assert plugin.seen == [(False, False), (False, True), (True, False), (True, False)]
    # a sort that passes no key does not resolve its bound method on every call; the two
    # that may pass one (``key=``, ``**``) do, for the overlay that enters it
    resolved: list[Any] = []
    resolve = type(plugin.context).resolve
    monkeypatch.setattr(type(plugin.context), "resolve", lambda self, callee, *rest: (
        resolved.append(callee), resolve(self, callee, *rest))[1])
    plugin.run(sorts, make(), {"reverse": True})
    bound_sorts = [c for c in resolved if getattr(c, "__name__", "") == "sort"
                   and type(c) is types.BuiltinMethodType]
    assert len(bound_sorts) == (2 if receiver == "list" else 0)


class InterceptSort(splice.Plugin):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    @splice.intercept(list.sort)
    def sort(self, lst: list[Any], **kwargs: Any) -> None:
        self.seen.append(sorted(kwargs))
        self.recurse_call(list.sort, lst, **kwargs)


def test_an_intercepted_sort_is_intercepted_without_a_key(form: str) -> None:
    plugin = InterceptSort()
    assert plugin.run(sorts, [3, 1, 2], {"reverse": True}) == sorts([3, 1, 2],
                                                                   {"reverse": True})
    assert plugin.seen == [[], ["reverse"], ["key"], ["reverse"]]


# --- Python methods bound to an object, held in names ------------------------------------------


class Handler:
    def __init__(self, tag: str) -> None:
        self.tag = tag

    def on_event(self, x: Any) -> Any:
        return (self.tag, _marker(x))


class Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def on_event(self, x: Any) -> Any:
        return ("unhashable", _marker(x))


GLOBAL_HANDLER: Any = None


def callbacks(handler: Any) -> list[Any]:
    global GLOBAL_HANDLER
    held = handler.on_event
    GLOBAL_HANDLER = Unhashable().on_event
    out = [held(1), held(2), GLOBAL_HANDLER(3), Unhashable().on_event(4)]
    for callback in (held, GLOBAL_HANDLER):
        out.append(callback(5))
    GLOBAL_HANDLER = None
    return out


@pytest.mark.parametrize("plugin_kind", ["intercepts", "hooked"])
def test_bound_methods_held_in_names_are_entered(form: str, plugin_kind: str) -> None:
    class Hooked(SeesKeysAndMarkers):
        def __init__(self) -> None:
            super().__init__()
            self.entered: list[str] = []

        def prehook(self, fn: Any, args: Any, kwargs: Any) -> None:
            self.entered.append(getattr(fn, "__name__", ""))

    expected = callbacks(Handler("h"))
    plugin = SeesKeysAndMarkers() if plugin_kind == "intercepts" else Hooked()
    assert plugin.run(callbacks, Handler("h")) == expected
    assert plugin.seen == [1, 2, 3, 4, 5, 5]  # each method's body ran under the plugin
    if isinstance(plugin, Hooked):
        assert plugin.entered.count("on_event") == 6


def test_a_bound_method_held_in_a_name_keeps_its_receiver_as_natively(form: str) -> None:
    def program() -> list[bool]:
        handler = Handler("weak")
        ref = weakref.ref(handler)
        callback = handler.on_event
        del handler
        alive = [ref() is not None]
        callback(1)
        alive.append(ref() is not None)
        del callback
        alive.append(ref() is not None)
        return alive

    assert program() == [True, True, False]
    assert Identity().run(program) == [True, True, False]


# --- functools.partial held in names --------------------------------------------------------


def _pair(a: Any, b: Any, *, c: Any = None) -> Any:
    return (a, _marker(b), c)


GLOBAL_PARTIAL: Any = None


def partials() -> list[Any]:
    global GLOBAL_PARTIAL
    import functools
    held = functools.partial(_pair, 1, c=3)
    nested = functools.partial(held, c=4)
    bound = functools.partial(Handler("p").on_event)
    builtin = functools.partial(max, 0)
    GLOBAL_PARTIAL = functools.partial(_pair, 2)
    out = [held(10), nested(11), bound(12), builtin(-5), GLOBAL_PARTIAL(13),
           functools.partial(_pair, 5)(14)]
    GLOBAL_PARTIAL = None
    return out


@pytest.mark.parametrize("plugin_kind", ["intercepts", "hooked"])
def test_partials_held_in_names_are_entered(form: str, plugin_kind: str) -> None:
    class Hooked(SeesKeysAndMarkers):
        def prehook(self, fn: Any, args: Any, kwargs: Any) -> None:
            pass

    expected = partials()
    plugin = SeesKeysAndMarkers() if plugin_kind == "intercepts" else Hooked()
    assert plugin.run(partials) == expected
    assert plugin.seen == [10, 11, 12, 13, 14]  # every wrapped function's body ran under it


# --- methods whose names an overlay takes (format, map, sorted, ...) ---------------------------


class Formats:
    def __format__(self, spec: str) -> str:
        return f"<{_marker(spec)}>"


class Printer:
    """Python methods named like builtins an overlay enters (``format``, ``map``, ``repr``)."""

    def __init__(self) -> None:
        self.map = map  # an instance attribute holding the builtin ``map``: routed

    def format(self, value: Any) -> str:
        return f"Printer.format({_marker(value)})"

    def repr(self, value: Any) -> str:
        return "Printer.repr(" + self.format(value) + ")"

    sorted = staticmethod(sorted)  # a builtin found on the class


class Template(str):
    pass


def overlaid_names(printer: Printer) -> list[Any]:
    return [printer.format(1), printer.repr(2), "{}|{:x}".format(Formats(), Formats()),  # noqa: UP032
            Template("[{}]").format(Formats()), list(printer.map(_marker, [3, 4])),
            printer.sorted([6, 5], key=_marker)]


def test_methods_whose_names_an_overlay_takes(form: str) -> None:
    # the C lookup routes them itself: a Python method is entered as any other, a builtin
    # of that name runs the overlay, which enters what it calls (``str.format`` calls
    # ``__format__`` implicitly: entered only by plugins that route implicit calls)
    expected = overlaid_names(Printer())
    plugin = SeesKeysAndMarkers()
    assert plugin.run(overlaid_names, Printer()) == expected
    assert plugin.seen == [1, 2, 3, 4, 6, 5]
    if form == "c":  # one C lookup per call, not the Python form of method calls
        source = [c.cell_contents for c in plugin.context.table[overlaid_names].__closure__]
        assert any(c_lookup(value) for value in source)
        code = plugin.context.table[overlaid_names].__code__
        assert "__func__" not in code.co_names


# ------------------------------------- the C lookup's entry cache and method-wrappers

class Redefined:
    def value(self) -> str:
        return "first"


def _second(self: Any) -> str:
    return "second"


def calls_across_a_code_swap() -> list[str]:
    """The same function object called at one site before and after its ``__code__`` is
    replaced: the table drops its entry, and the lookup's cache of entries (keyed by the
    function, valid while the table is unchanged) must not give the old one."""
    obj = Redefined()
    saved = Redefined.value.__code__
    out = []
    try:
        for i in range(6):
            if i == 3:
                Redefined.value.__code__ = _second.__code__
            out.append(obj.value())
    finally:
        Redefined.value.__code__ = saved
    return out


def test_an_entry_dropped_by_the_table_is_not_called_again(form: str) -> None:
    native_result = calls_across_a_code_swap()
    assert native_result == ["first"] * 3 + ["second"] * 3
    assert Identity().run(calls_across_a_code_swap) == native_result


class WithObjectBase:
    def __init__(self) -> None:
        super().__init__()
        self.ready = True


def make_with_object_base(n: int) -> list[bool]:
    return [WithObjectBase().ready for _ in range(n)]


def test_super_init_of_object_is_its_own_entry(form: str) -> None:
    """``super().__init__`` of a class whose base is ``object`` is a method-wrapper bound
    to the instance: the C lookup gives it as its own entry (the table's Python
    ``_slow_entry`` answered it on every call)."""
    plugin = Identity()
    assert plugin.run(make_with_object_base, 3) == make_with_object_base(3)
    table = plugin.context.table
    if form == "c":
        wrapper = object().__init__
        assert table.methods(wrapper) is wrapper
        # bound to a module, it takes the table's way, which gives the same
        module_wrapper = math.__init__  # type: ignore[misc]
        assert table.methods(module_wrapper) == module_wrapper


class Keyed:
    def m(self) -> str:
        return "class"


class KeyedChild(Keyed):
    pass


class NoDict:
    __slots__ = ("x",)

    def m(self) -> str:
        return "class"


class Bag(list):  # type: ignore[type-arg]
    def m(self) -> str:
        return "class"


def calls_of_m(objs: list[Any]) -> list[Any]:
    return [obj.m() for obj in objs] + [obj.m() for obj in objs]


def each_change_seen() -> list[Any]:
    """Method calls repeated (so the C lookup keeps what it found for a class and a name)
    across every change that alters what ``obj.m`` is: an instance attribute of the name
    (in the class's shared keys, in a dict made for the instance), deleted again; the
    method replaced on the class and on a base; ``__getattribute__`` and ``__getattr__``
    set on the class; a class without ``__dict__``; a subclass of ``list``."""
    out: list[Any] = []
    plain = [Keyed() for _ in range(3)]
    out += calls_of_m(plain)
    shadowed = Keyed()
    shadowed.m = lambda: "instance"  # type: ignore[method-assign]  # a key of the shared keys
    out += calls_of_m([*plain, shadowed, Keyed()])
    del shadowed.m
    out += calls_of_m([*plain, shadowed])
    with_dict = Keyed()
    vars(with_dict)  # a dict made for it
    out += calls_of_m([with_dict, *plain])
    with_dict.__dict__["m"] = lambda: "in its dict"
    out += calls_of_m([with_dict, *plain])
    many = Keyed()
    for i in range(40):  # more attributes than shared keys take
        setattr(many, f"a{i}", i)
    out += calls_of_m([many, *plain])
    many.m = lambda: "many"  # type: ignore[method-assign]
    out += calls_of_m([many, *plain])
    children = [KeyedChild() for _ in range(2)]
    out += calls_of_m(children)
    original = Keyed.m
    try:
        Keyed.m = lambda self: "replaced"  # type: ignore[method-assign]
        out += calls_of_m([*plain, *children])
        KeyedChild.m = lambda self: "child"  # type: ignore[method-assign]
        out += calls_of_m([*plain, *children])
        del KeyedChild.m
        out += calls_of_m(children)
        Keyed.__getattribute__ = lambda self, name: lambda: ("getattribute", name)  # type: ignore
        out += calls_of_m(plain)
        del Keyed.__getattribute__  # type: ignore[misc]
        out += calls_of_m(plain)
        del Keyed.m  # type: ignore[misc]
        Keyed.__getattr__ = lambda self, name: lambda: ("getattr", name)  # type: ignore
        out += calls_of_m(plain)
        del Keyed.__getattr__  # type: ignore[attr-defined]
    finally:
        Keyed.m = original  # type: ignore[method-assign]
    out += calls_of_m(plain)
    slotted = [NoDict() for _ in range(2)]
    out += calls_of_m(slotted)
    saved = NoDict.m
    try:
        NoDict.m = lambda self: "replaced"  # type: ignore[method-assign]
        out += calls_of_m(slotted)
    finally:
        NoDict.m = saved  # type: ignore[method-assign]
    bags = [Bag(), Bag()]
    out += calls_of_m(bags)
    for bag in bags:
        bag.append(1)
    bags[0].append = lambda x: ("instance append", x)  # type: ignore[method-assign]
    bags[1].m = lambda: "bag instance"  # type: ignore[method-assign]
    out += calls_of_m(bags) + [bag.append(2) for bag in bags] + [list(bag) for bag in bags]
    return out


def test_each_change_is_seen_by_the_kept_lookups(form: str) -> None:
    both(each_change_seen)
    both(each_change_seen)  # with what the first run kept


class CellReceiver:
    def __init__(self, x: int) -> None:
        self.x = x

    def m(self, y: int) -> tuple[int, int]:
        return self.x, y

    def read_by_a_closure(self, ys: list[int]) -> list[Any]:
        # ``self`` is a cell (the comprehension, on 3.11, and the lambda read it): the
        # call passes it again, as no nested scope can rebind it
        scaled = [self.x * y for y in ys]
        later = lambda: self.x  # noqa: E731
        return [self.m(y) for y in scaled] + [self.m(later()), self.m(len(scaled))]

    def rebound_by_a_closure(self, other: CellReceiver) -> Any:
        def swap() -> int:
            nonlocal self
            self = other
            return 7
        return self.m(swap()), self.m(1)


def test_a_receiver_in_a_cell_is_passed_again_unless_rebound(form: str) -> None:
    both(lambda: CellReceiver(2).read_by_a_closure([1, 2, 3]))
    both(lambda: CellReceiver(2).rebound_by_a_closure(CellReceiver(5)))
    plugin = Identity()
    plugin.run(CellReceiver(2).read_by_a_closure, [1])
    plugin.run(CellReceiver(2).rebound_by_a_closure, CellReceiver(5))
    if form == "c":
        table = plugin.context.table
        read = table[CellReceiver.read_by_a_closure]
        rebound = table[CellReceiver.rebound_by_a_closure]
        cells = [c.cell_contents for c in read.__closure__ or ()]
        assert any(c_lookup(v) and v.__self__.receiver_first is v.__self__ for v in cells)
        cells = [c.cell_contents for c in rebound.__closure__ or ()]
        assert not any(c_lookup(v) and v.__self__.receiver_first is v.__self__
                       for v in cells)
