"""Classes: nested class statements (bodies with annotations, __set_name__, __init_subclass__,
metaclass keywords, __prepare__), and module-level classes whose methods (plain, static,
class, property accessors, dunders, super()) are round-tripped one by one: the case function
runs natively and receives the original class or its rebuilt subclass."""

from tests.differential import R, Desc, case, log


@case()
def class_body_order():
    class K(log("base", object), metaclass=log("meta", type)):
        log("body-start")
        a: log("ann-a", int) = log("value-a", 1)
        b: log("ann-b", str)
        c = a + 1
        log("body-end")

        def method(self):
            return self.c

    return K.__annotations__, K.a, K.c, K().method(), [k for k in vars(K) if k[:2] != "__"]


@case()
def set_name_and_init_subclass():
    class Base:
        def __init_subclass__(cls, /, flag=None, **kw):
            log(("init_subclass", cls.__name__, flag, kw))
            super().__init_subclass__(**kw)

    class Child(Base, flag=log("flag", 1)):
        x = Desc("x")
        y = Desc("y")

    class Grandchild(Child):
        pass

    c = Child()
    c.x = 5
    value = c.x
    del c.x
    return value, c.x, Grandchild.__mro__


@case()
def metaclass_keywords_and_prepare():
    class Meta(type):
        @classmethod
        def __prepare__(mcls, name, bases, **kw):
            log(("prepare", name, kw))
            return {"prepared": True}

        def __new__(mcls, name, bases, ns, **kw):
            log(("new", name, sorted(ns), kw))
            return super().__new__(mcls, name, bases, ns)

        def __init__(cls, name, bases, ns, **kw):
            log(("init", name, kw))
            super().__init__(name, bases, ns)

        def __call__(cls, *a, **k):
            log(("meta-call", cls.__name__, a))
            return super().__call__(*a, **k)

    class K(metaclass=Meta, option=log("option", "o"), other=2):
        x = 1

        def __init__(self, v):
            log(("K.__init__", v))
            self.v = v

    return K.prepared, K(3).v


@case()
def class_with_bases_from_call():
    def bases():
        log("bases")
        return (dict,)

    class D(*bases(), **{}):
        def __missing__(self, key):
            log(("missing", key))
            return key * 2

    d = D(a=1)
    return d["a"], d["bb"], D.__mro__


@case()
def class_new_and_init_order():
    class K:
        def __new__(cls, *args):
            log(("new", args))
            return super().__new__(cls)

        def __init__(self, *args):
            log(("init", args))
            self.args = args

    return K(1, 2).args


@case()
def class_init_returning_value():
    class K:
        def __init__(self):
            return 1

    return K()


@case()
def nested_class_qualnames():
    class Outer:
        class Inner:
            def method(self):
                class Local:
                    pass
                return Local

    return Outer.__qualname__, Outer.Inner.__qualname__, Outer.Inner().method().__qualname__


@case()
def class_body_comprehension_and_lambda():
    n = 3

    class K:
        m = 2
        xs = [i * n for i in range(m)]  # the first iterable sees the class scope
        f = lambda self: n  # noqa: E731
        g = staticmethod(lambda: K)

    return K.xs, K().f(), K.g() is K


@case()
def class_body_raises():
    class K:
        x = 1
        y = undefined_name  # noqa: F821


@case()
def dataclass_in_function():
    import dataclasses

    @dataclasses.dataclass(order=True)
    class P:
        x: int
        y: int = 0
        tags: list = dataclasses.field(default_factory=list)

    a, b = P(1, 2), P(1, 3)
    return a < b, a, dataclasses.asdict(b), P.__match_args__


@case()
def enum_in_function():
    import enum

    class Color(enum.Enum):
        RED = 1
        GREEN = 2

        def describe(self):
            return f"{self.name}={self.value}"

    return [c.describe() for c in Color], Color(2).name


# ------------------------------------------------------------------ methods one by one


class Account:
    """A class with every kind of method."""

    rate = 2
    count = Desc("count")

    def __init__(self, owner, balance=0):
        log(("init", owner))
        self.owner = owner
        self._balance = balance
        self.history = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive", amount)
        self._balance += amount
        self.history.append(("deposit", amount))
        return self

    @property
    def balance(self):
        log("get-balance")
        return self._balance

    @balance.setter
    def balance(self, value):
        log(("set-balance", value))
        self._balance = value

    @balance.deleter
    def balance(self):
        log("del-balance")
        self._balance = 0

    @staticmethod
    def fee(amount):
        return amount // 10

    @classmethod
    def open(cls, owner):
        return cls(owner, cls.rate)

    def __repr__(self):
        return f"Account({self.owner!r}, {self._balance})"

    def __eq__(self, other):
        log(("eq", self.owner))
        if not isinstance(other, Account):
            return NotImplemented
        return self._balance == other._balance

    __hash__ = None

    def __add__(self, other):
        log(("add", self.owner))
        if isinstance(other, int):
            return Account(self.owner, self._balance + other)
        return NotImplemented

    def __radd__(self, other):
        log(("radd", self.owner))
        return self + other

    def __iadd__(self, other):
        log(("iadd", self.owner))
        self._balance += other
        return self

    def __len__(self):
        return len(self.history)

    def __bool__(self):
        log(("bool", self.owner))
        return self._balance > 0

    def __iter__(self):
        yield from self.history

    def __getitem__(self, i):
        return self.history[i]

    def __contains__(self, kind):
        return any(k == kind for k, _ in self.history)

    def __enter__(self):
        log(("enter", self.owner))
        return self

    def __exit__(self, typ, exc, tb):
        log(("exit", self.owner, typ and typ.__name__))
        return typ is KeyError

    def __format__(self, spec):
        return format(self._balance, spec)

    def __call__(self, *args, **kwargs):
        return args, kwargs

    def __getattr__(self, name):
        log(("getattr", name))
        if name.startswith("x_"):
            return name[2:]
        raise AttributeError(name)


def use_account(cls):
    a = cls("ann", 10)
    b = cls.open("bob")
    a.deposit(5).deposit(1)
    out = [a.balance, b.balance, cls.fee(123), a.fee(45), repr(a), a == b, a != b,
           a == 16, len(a), bool(a), bool(cls("zed")), list(a), a[0], "deposit" in a]
    a.balance = 7
    del a.balance
    out.append(a.balance)
    c = a + 3
    d = 4 + a
    a += 2
    out += [c.balance, d.balance, a.balance, format(a, ">5"), f"{a:03}", a(1, k=2),
            a.x_value]
    with a as entered:
        out.append(entered is a)
    with a:
        raise KeyError("suppressed")
    a.count = 3
    out.append(a.count)
    return out


@case(rebuild=Account)
def account_methods(cls):
    return use_account(cls)


@case(rebuild=Account)
def account_errors(cls):
    out = []
    a = cls("ann")
    for thunk in (lambda: a.deposit(-1), lambda: a.missing, lambda: cls.fee(),
                  lambda: a + "x", lambda: {a}):
        try:
            thunk()
        except Exception as e:
            out.append((type(e).__name__, e.args))
    with a:
        raise ValueError("not suppressed")


class Shape:
    sides = 0

    def __init__(self, name):
        self.name = name

    def area(self):
        raise NotImplementedError(self.name)

    def describe(self):
        return f"{self.name} with {self.sides} sides and area {self.area():.2f}"

    def __init_subclass__(cls, **kwargs):
        log(("Shape.__init_subclass__", cls.__name__, kwargs))
        super().__init_subclass__()


class Square(Shape, sides=4):
    sides = 4

    def __init__(self, side):
        super().__init__("square")
        self.side = side

    def area(self):
        return self.side ** 2

    def describe(self):
        return "[" + super().describe() + "]" + __class__.__name__

    @classmethod
    def unit(cls):
        return cls(1)


@case(rebuild=Square)
def square_methods_with_super(cls):
    s = cls(3)
    return s.describe(), cls.unit().area(), Shape.describe(s)


@case(rebuild=Shape)
def shape_abstract_raises(cls):
    return cls("blob").describe()


class Node:
    def __init__(self, value, children=()):
        self.value = value
        self.children = list(children)

    def total(self):
        return self.value + sum(child.total() for child in self.children)

    def depth(self):
        return 1 + max((c.depth() for c in self.children), default=0)

    def walk(self):
        yield self.value
        for child in self.children:
            yield from child.walk()

    def find(self, value):
        if self.value == value:
            return self
        for child in self.children:
            found = child.find(value)
            if found is not None:
                return found
        return None

    def fail_at(self, value):
        if self.value == value:
            raise LookupError("found", value)
        for child in self.children:
            child.fail_at(value)


@case(rebuild=Node)
def tree_methods(cls):
    tree = cls(1, [cls(2, [cls(4)]), cls(3)])
    return tree.total(), tree.depth(), list(tree.walk()), tree.find(4).value, tree.find(9)


@case(rebuild=Node)
def tree_exception_through_recursive_methods(cls):
    tree = cls(1, [cls(2, [cls(4)]), cls(3)])
    tree.fail_at(4)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a

    def get_b(self):
        return self.b

    def swap(self):
        self.a, self.b = getattr(self, "b", None), self.a
        return self.a, self.b


@case(rebuild=Slotted)
def slotted_methods(cls):
    s = cls(1)
    try:
        s.get_b()
    except AttributeError as e:
        missing = type(e).__name__
    return missing, s.swap(), s.swap()


class Private:
    __secret = 41

    def __hidden(self):
        return self.__secret

    def reveal(self):
        return self.__hidden() + 1, self._Private__secret

    def store(self, value):
        self.__value = value
        return sorted(vars(self))


@case(rebuild=Private)
def private_names(cls):
    p = cls()
    return p.reveal(), p.store(3)


class Vector:
    def __init__(self, *xs):
        self.xs = xs

    def __repr__(self):
        return f"Vector{self.xs}"

    def __matmul__(self, other):
        return sum(a * b for a, b in zip(self.xs, other.xs, strict=True))

    def __neg__(self):
        return Vector(*(-x for x in self.xs))

    def __lt__(self, other):
        log(("lt", self.xs))
        return self.xs < other.xs

    def __eq__(self, other):
        return isinstance(other, Vector) and self.xs == other.xs

    def __hash__(self):
        return hash(self.xs)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Vector(*self.xs[index])
        return self.xs[index]

    def __setattr__(self, name, value):
        log(("setattr", name))
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        log(("delattr", name))
        object.__delattr__(self, name)


@case(rebuild=Vector)
def vector_dunders(cls):
    v, w = cls(1, 2, 3), cls(3, 2, 1)
    out = [v @ w, -v, v < w, w > v, sorted([w, v]), v[1], v[::2], {v: 1}[cls(1, 2, 3)]]
    v.extra = 1
    del v.extra
    return out


class WithClassAttrs:
    registry = []

    def __init_subclass__(cls, /, key=None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.key = key
        WithClassAttrs.registry.append(key)

    @classmethod
    def make_subclass(cls, key):
        class Sub(cls, key=key):
            pass
        return Sub

    @staticmethod
    def helper(*args, sep="-"):
        return sep.join(map(str, args))


@case(rebuild=WithClassAttrs)
def class_and_static_methods(cls):
    before = list(WithClassAttrs.registry)
    sub = cls.make_subclass("k1")
    out = sub.key, sub.__mro__[1] is cls, cls.helper(1, 2, sep="+"), sub.helper(3)
    del WithClassAttrs.registry[len(before):]
    return out


class Rec2:
    def __init__(self):
        self.r = R("r")

    def chain(self):
        return self.r.a.b[self.r.c](self.r.d).e

    def augmented(self):
        self.r.x += 1
        self.r[0] -= 2
        self.r.a.b *= 3


@case(rebuild=Rec2)
def method_attribute_chains(cls):
    o = cls()
    return o.chain(), o.augmented()


class Looked:
    """Every way a method lookup on a local receiver can find its callee."""

    def plain(self, x):
        return ("plain", x)

    @classmethod
    def klass(cls, x):
        return ("klass", cls.__name__, x)

    @staticmethod
    def static(x):
        return ("static", x)

    @property
    def prop(self):
        return lambda x: ("prop", x)

    def __getattr__(self, name):
        if name == "dynamic":
            return lambda x: ("dynamic", x)
        raise AttributeError(name)


class Callback:
    def __call__(self, x):
        return ("called", x)


@case()
def method_calls_on_local_receivers():
    o = Looked()
    o.own = lambda x: ("own", x)
    o.obj = Callback()
    o.builtin = len
    out = [o.plain(1), o.klass(2), o.static(3), o.prop(4), o.dynamic(5), o.own(6),
           o.obj(7), o.builtin("abc"), o.__class__.__name__, o.__repr__() != ""]
    xs = []
    xs.append(1)
    s = "a,b"
    out.append(s.split(","))
    # the arguments rebind the receiver's name: the call keeps the receiver it looked up
    other = Looked()
    other.plain = lambda x: ("rebound", x)
    out.append(o.plain((o := other)))
    out.append(o.plain(8))
    try:
        o.missing(9)
    except AttributeError as exc:
        out.append(("missing", str(exc)))
    try:
        o.plain()
    except TypeError as exc:
        out.append(("arguments", str(exc)))
    return out, xs


@case()
def callable_objects_called():
    cb = Callback()
    table = {"cb": cb}
    out = [cb(1), table["cb"](2), [Callback()][0](3)]

    class Late:
        pass

    late = Late()
    try:
        late(4)
    except TypeError as exc:
        out.append(str(exc))
    Late.__call__ = lambda self, x: ("late", x)
    out.append(late(5))
    del Late.__call__
    try:
        late(6)
    except TypeError as exc:
        out.append(str(exc))
    return out
