"""Implicit calls that the hooked mode routes through ``splice.runtime.attributes``,
``Implicit.aloop``, unchained comparisons and ``splice.runtime.classes``: attribute access
through properties, descriptors (on classes and metaclasses, data and non-data),
``__getattr__``, ``__getattribute__``, ``__setattr__``, ``__delattr__``, ``__slots__``,
``super()`` and modules; ``async for`` over Python async iterators; chained comparisons;
``__set_name__`` and ``__init_subclass__`` of class statements. Every case runs natively and
in all modes; ``AttributeError``s are returned with their ``name`` and whether ``obj`` is the
object read, which ``PyObject_GetAttr`` sets."""

import functools
import types

from splice.compat import PROPERTY_ERROR_CONTEXT_VARIES

from tests.differential import (
    AIter,
    Desc,
    Pause,
    R,
    case,
    drive_coroutine,
    log,
)

CORO = drive_coroutine()


def _error(exc):
    """What an AttributeError carries besides its message (compared by the harness)."""
    return type(exc).__name__, str(exc), exc.name, type(exc.obj).__name__


def _getter_error(exc, obj):
    """``_error`` of an AttributeError a property's getter raised, read as ``obj.attr``, with
    whether ``exc.obj`` is ``obj``: from 3.12 the name and object depend on whether CPython
    specialized the read (``splice.compat.PROPERTY_ERROR_CONTEXT_VARIES``), not compared."""
    if PROPERTY_ERROR_CONTEXT_VARIES:
        return type(exc).__name__, str(exc), "(varies)", "(varies)"
    return type(exc).__name__, str(exc), exc.name, exc.obj is obj


# ----------------------------------------------------------------------- properties


class Temperature:
    def __init__(self, celsius):
        self._celsius = celsius

    @property
    def fahrenheit(self):
        log(("get", self._celsius))
        return self._celsius * 9 / 5 + 32

    @fahrenheit.setter
    def fahrenheit(self, value):
        log(("set", value))
        self._celsius = (value - 32) * 5 / 9

    @fahrenheit.deleter
    def fahrenheit(self):
        log("delete")
        del self._celsius

    @property
    def read_only(self):
        return "ro"

    @property
    def failing(self):
        log("failing")
        raise AttributeError("inner failure")

    @property
    def broken(self):
        raise KeyError("not an AttributeError")


@case()
def property_get_set_delete():
    t = Temperature(100)
    out = [t.fahrenheit]
    t.fahrenheit = 32
    out.append(t.fahrenheit)
    t.fahrenheit += 9
    out.append(t._celsius)
    del t.fahrenheit
    try:
        t.fahrenheit
    except AttributeError as exc:
        out.append(_error(exc))
    out.append(Temperature.fahrenheit.fget.__name__)  # through the class: the property
    return out


@case()
def property_errors():
    t = Temperature(1)
    out = []
    for action in ("set", "delete", "failing", "broken"):
        try:
            if action == "set":
                t.read_only = 1
            elif action == "delete":
                del t.read_only
            elif action == "failing":
                t.failing
            else:
                t.broken
        except AttributeError as exc:
            if action == "failing":
                out.append((action, *_getter_error(exc, t)))
            else:
                out.append((action, type(exc).__name__, str(exc), exc.name, exc.obj is t))
        except KeyError as exc:
            out.append((action, type(exc).__name__, str(exc), "-", False))
    return out


class Fallback:
    """A property raising AttributeError makes the lookup fall back to __getattr__."""

    def __init__(self):
        self.real = 1

    @property
    def computed(self):
        log("computed")
        return self.missing_inside

    def __getattr__(self, name):
        log(("getattr", name))
        if name.startswith("no_"):
            raise AttributeError(f"refused {name}")
        return name.upper()


@case()
def getattr_fallbacks():
    f = Fallback()
    out = [f.real, f.anything, f.computed]
    try:
        f.no_such
    except AttributeError as exc:
        out.append(_error(exc))
    out.append(getattr(f, "no_way", "default"))
    out.append((hasattr(f, "no_way"), hasattr(f, "yes")))
    return out


@case()
def attribute_error_context():
    class Plain:
        pass

    out = []
    for obj, name in ((Plain(), "x"), (Plain, "y"), (types, "nothing_here"), (3, "imag_"),
                      (Temperature(1), "failing")):
        try:
            getattr(obj, name)
        except AttributeError as exc:
            out.append(_error(exc))
        try:
            obj.__class__.__name__  # noqa: B018 - an attribute read that works
            if name == "x":
                obj.x
            elif name == "y":
                obj.y
            elif name == "nothing_here":
                obj.nothing_here
            elif name == "imag_":
                obj.imag_
            else:
                obj.failing
        except AttributeError as exc:
            out.append(_getter_error(exc, obj) if name == "failing" else _error(exc))
    return out


# ---------------------------------------------------------------------- descriptors


class NonData:
    """Only __get__: the instance __dict__ wins over it."""

    def __set_name__(self, owner, name):
        log(("non-data set_name", owner.__name__, name))
        self.name = name

    def __get__(self, obj, owner=None):
        log(("non-data get", self.name, obj is None, owner.__name__))
        return self if obj is None else f"computed {self.name}"


class Holder:
    data = Desc("data")
    plain = NonData()
    shared = "class value"

    def method(self):
        return "method"


@case()
def descriptors_through_instances_and_class():
    h = Holder()
    out = [h.data, h.plain, h.shared, h.method()]
    h.data = 5            # data descriptor: __set__
    h.plain = "own"       # non-data: the instance __dict__
    h.shared = "mine"
    out += [h.data, h.plain, h.shared, Holder.shared]
    vars(h)["data"] = "shadow"  # a data descriptor wins over the instance __dict__
    out.append(h.data)
    del h.data            # __delete__
    del h.plain           # the instance __dict__ entry
    out += [h.plain, type(Holder.data).__name__, type(Holder.plain).__name__]
    try:
        del h.shared
    except AttributeError as exc:
        out.append(_error(exc))
    return out


class Stored:
    """A data descriptor keeping values by the name of the object (classes here)."""

    def __init__(self):
        self.values = {}

    def __get__(self, obj, owner=None):
        log(("stored get", obj is None, owner.__name__))
        return self if obj is None else self.values.get(obj.__name__, "unset")

    def __set__(self, obj, value):
        log(("stored set", obj.__name__, value))
        self.values[obj.__name__] = value

    def __delete__(self, obj):
        log(("stored delete", obj.__name__))
        self.values.pop(obj.__name__, None)


class Meta(type):
    meta_data = Stored()

    @property
    def meta_property(cls):
        log(("meta property", cls.__name__))
        return cls.__name__.lower()

    def meta_method(cls):
        return "meta method of " + cls.__name__


class WithMeta(metaclass=Meta):
    own = NonData()
    meta_property = "shadowed by the metaclass's data descriptor"


class ChildOfMeta(WithMeta):
    pass


@case()
def descriptors_on_a_metaclass():
    out = [WithMeta.meta_property, ChildOfMeta.meta_property, WithMeta.meta_data,
           WithMeta.meta_method(), type(WithMeta.own).__name__, ChildOfMeta.own is WithMeta.own]
    WithMeta.meta_data = 3
    out += [WithMeta.meta_data, ChildOfMeta.meta_data]
    del WithMeta.meta_data
    out.append(WithMeta.meta_data)
    WithMeta.plain_class_attribute = 4
    out.append(vars(WithMeta)["plain_class_attribute"])
    del WithMeta.plain_class_attribute
    instance = ChildOfMeta()
    out += [instance.meta_property, instance.own]
    try:
        instance.meta_method
    except AttributeError as exc:
        out.append(_error(exc))
    return out


class Lazy:
    calls = 0

    @functools.cached_property
    def value(self):
        Lazy.calls += 1
        log(("computing", Lazy.calls))
        return Lazy.calls


@case()
def cached_property_and_classmethod_chain():
    Lazy.calls = 0
    lazy = Lazy()
    out = [lazy.value, lazy.value, vars(lazy)]
    del lazy.value
    out.append(lazy.value)

    class Chained:
        @classmethod
        @property
        def kind(cls):
            log(("classmethod property", cls.__name__))
            return cls.__name__

    out += [Chained.kind, Chained().kind]
    return out


class Private:
    def __init__(self):
        self.__hidden = 1

    @property
    def __secret(self):
        log("secret")
        return self.__hidden + 1

    def reveal(self):
        return self.__secret, self._Private__hidden


@case()
def private_names_through_properties():
    p = Private()
    return p.reveal(), p._Private__secret, sorted(vars(p))


# ----------------------------------------------------------- overriding the protocol


class Watched:
    def __init__(self):
        object.__setattr__(self, "log", [])

    def __getattribute__(self, name):
        if name.startswith("blocked"):
            raise AttributeError("blocked by __getattribute__")
        value = object.__getattribute__(self, name)
        if name != "log":
            object.__getattribute__(self, "log").append(("get", name))
        return value

    def __getattr__(self, name):
        return "fallback " + name

    def __setattr__(self, name, value):
        self.log.append(("set", name))
        super().__setattr__(name, value)

    def __delattr__(self, name):
        self.log.append(("del", name))
        object.__delattr__(self, name)

    @property
    def prop(self):
        return "prop via object.__getattribute__"


@case()
def getattribute_setattr_delattr_overrides():
    w = Watched()
    w.x = 1
    out = [w.x, w.prop, w.blocked_one, w.missing]
    del w.x
    out.append(w.x)
    setattr(w, "y", 2)
    delattr(w, "y")
    out.append(w.log)
    try:
        object.__setattr__(3, "x", 1)
    except (TypeError, AttributeError) as exc:
        out.append((type(exc).__name__, str(exc)))
    return out


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1


class SlottedChild(Slotted):
    __slots__ = ("c",)

    @property
    def both(self):
        return self.a, self.c


@case()
def slots_member_descriptors():
    s = SlottedChild()
    s.c = 3
    out = [s.a, s.both]
    del s.a
    for action in ("get", "set", "delete"):
        try:
            if action == "get":
                s.b
            elif action == "set":
                s.z = 1
            else:
                del s.b
        except AttributeError as exc:
            out.append((action, _error(exc)))
    out.append(type(Slotted.a).__name__)
    return out


class Base:
    greeting = "hello"

    @property
    def described(self):
        log(("base described", type(self).__name__))
        return "base"

    def who(self):
        return "base who"


class Derived(Base):
    @property
    def described(self):
        return "derived+" + super().described

    def who(self):
        return "derived " + super().who() + " " + super().greeting

    def missing(self):
        return super().nothing


@case()
def super_attributes():
    d = Derived()
    out = [d.described, d.who(), d.greeting]
    try:
        d.missing()
    except AttributeError as exc:
        out.append(_error(exc))
    return out


@case()
def module_getattr_and_missing():
    module = types.ModuleType("made_here")
    module.present = 1

    def __getattr__(name):
        log(("module getattr", name))
        if name == "absent":
            raise AttributeError(f"module made_here has no {name}")
        return name * 2

    out = [module.present]
    try:
        module.other
    except AttributeError as exc:
        out.append(_error(exc))
    module.__getattr__ = __getattr__
    out += [module.other, getattr(module, "third", None)]
    for name in ("absent", "__getattr__x"):
        try:
            getattr(module, name)
        except AttributeError as exc:
            out.append(_error(exc))
    del module.__getattr__
    try:
        module.other
    except AttributeError as exc:
        out.append(_error(exc))
    return out


@case()
def recorded_attributes():
    r = R("r", missing=("gone",))
    r.x = R("v")
    out = [r.x, r.y]
    del r.x
    try:
        r.gone
    except AttributeError as exc:
        out.append(_error(exc))
    return out


@case()
def class_attributes_through_instances():
    class Counter:
        count = 0
        step = staticmethod(lambda: 1)

        @classmethod
        def bump(cls):
            cls.count += cls.step()
            return cls.count

    c = Counter()
    out = [c.count, c.bump(), Counter.bump(), c.count]
    c.count = "instance"
    out += [c.count, Counter.count]
    Counter.count = 10
    del c.count
    out.append(c.count)
    return out


# -------------------------------------------------------------------------- async for


class Ticker:
    def __init__(self, n, fail_at=None):
        self.n = n
        self.fail_at = fail_at

    def __aiter__(self):
        log(("aiter", self.n))
        return self

    async def __anext__(self):
        await Pause(("anext", self.n))
        if self.n == self.fail_at:
            raise ValueError("anext failed")
        if self.n <= 0:
            log("stop")
            raise StopAsyncIteration
        self.n -= 1
        return self.n


class Delegating:
    """__aiter__ gives another object (an async generator, or an iterator)."""

    def __init__(self, kind):
        self.kind = kind

    def __aiter__(self):
        log(("delegating aiter", self.kind))
        if self.kind == "generator":
            return self._gen()
        if self.kind == "none":
            return 42
        return Ticker(2)

    async def _gen(self):
        for i in range(2):
            await Pause(i)
            yield i


@case(drive=CORO)
async def async_for_python_iterators():
    out = []
    async for tick in Ticker(3):
        out.append(tick)
    async for x in Delegating("generator"):
        out.append(("gen", x))
    async for x in Delegating("ticker"):
        out.append(("ticker", x))
    out.append([x async for x in Ticker(2)])
    async for x in AIter("a", [1]):
        out.append(x)
    else:
        out.append("else")
    return out


@case(drive=CORO)
async def async_for_errors():
    out = []
    try:
        async for x in Ticker(3, fail_at=2):
            out.append(x)
    except ValueError as exc:
        out.append(str(exc))
    for bad in (Delegating("none"), 5, object()):
        try:
            async for x in bad:
                out.append(x)
        except TypeError as exc:
            out.append(str(exc))
    async for x in Ticker(5):
        if x == 3:
            break
    return out


# ---------------------------------------------------------------- chained comparisons


@case(lambda: R("a"), lambda: R("b"), lambda: R("c"))
@case(lambda: R("a", False), lambda: R("b"), lambda: R("c"))
@case(lambda: R("a", ni=("lt",)), lambda: R("b", ni=("gt",), cmp_bool=True), lambda: R("c"))
def chains_with_non_bool_results(ma, mb, mc):
    a, b, c = ma(), mb(), mc()
    out = [a < b < c, a <= b > c or c, not a < b < c, (a < b < c) and a]
    out.append([x < b < c for x in (a,)])
    out.append(1 if a < b < c else 2)
    if a < log("middle", b) < c:
        out.append("if")
    while a < b < c:
        out.append("while")
        break
    try:
        out.append(a < b < c < 3)
    except TypeError as exc:
        out.append(str(exc))
    return out


@case(1, 2, 3)
@case(3, 2, 1)
def chains_of_builtins(a, b, c):
    return a < b < c, a < b > c or "x", [a <= x < c for x in (a, b, c)], a != b != c != 4


# ------------------------------------------------------------------- class statements


class Field:
    def __init__(self, tag):
        self.tag = tag

    def __set_name__(self, owner, name):
        log(("set_name", self.tag, owner.__name__, name, sorted(k for k in vars(owner)
                                                                if not k.startswith("__"))))
        self.name = name


def _init_subclass(cls, /, flag=None, **kwargs):
    log(("init_subclass", cls.__name__, flag, sorted(kwargs),
         [type(v).__name__ for k, v in vars(cls).items() if not k.startswith("__")]))
    super(cls.__registering__, cls).__init_subclass__(**kwargs)


class Renaming:
    """__set_name__ replacing itself in the class."""

    def __set_name__(self, owner, name):
        log(("renaming", name))
        setattr(owner, name, f"replaced {name}")


class Failing:
    def __set_name__(self, owner, name):
        raise ValueError(f"cannot name {name}")


@case()
def set_name_order_and_class_dict():
    class Plain:
        first = Field("first")
        both = other = Field("shared")
        middle = 1
        renamed = Renaming()
        last = Field("last")

        def method(self):
            return __class__

    return ([k for k in vars(Plain)], Plain.first.name, Plain.other.name, Plain.renamed,
            Plain().method() is Plain, Plain.__mro__)


@case()
def init_subclass_with_keywords():
    class Registering:
        __init_subclass__ = classmethod(_init_subclass)

    Registering.__registering__ = Registering

    class Child(Registering, flag="on"):
        field = Field("child")

    class Grandchild(Child):
        pass

    out = [Child.field.name, Registering.__subclasses__() == [Child],
           Child.__subclasses__() == [Grandchild]]
    for keywords in ({"flag": 1, "extra": 2}, {"unknown": 1}):
        try:
            types.new_class("Dynamic", (Registering,), keywords)
        except TypeError as exc:
            out.append(str(exc))
    try:
        class Bad(Child, unexpected=3):
            field = Field("bad")
    except TypeError as exc:
        out.append(str(exc))
    try:
        class Plain(flag=1):
            pass
    except TypeError as exc:
        out.append(str(exc))
    return out


@case()
def set_name_errors():
    try:
        class Broken:
            fine = Field("fine")
            bad = Failing()
            after = Field("after")
    except RuntimeError as exc:
        return type(exc).__name__, str(exc), type(exc.__cause__).__name__, str(exc.__cause__)
    return "no error"


@case()
def set_name_in_nested_and_metaclass_classes():
    class Outer:
        inner_field = Field("outer")

        class Inner:
            field = Field("inner")

    class WithMetaclass(metaclass=Meta):
        field = Field("meta")

    def make(base):
        class Made(base):
            field = Field("made")
        return Made

    return (Outer.inner_field.name, Outer.Inner.field.name, WithMetaclass.field.name,
            make(object).field.name, make(WithMeta).field.name, type(make(WithMeta)).__name__)
