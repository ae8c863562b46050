"""Call shapes for ``benchmarks/plugins.py --shapes``: each kernel repeats one kind of
operation ``n`` times in a loop, so (kernel time - ``loop`` time) / n is what one operation
costs, natively and under a plugin."""

N = 50_000


def f(x):
    return x


class Obj:
    def __init__(self, x):
        self.x = x

    def m(self, y):
        return y

    def __add__(self, other):
        return self

    @property
    def prop(self):
        return self.x


def gen(k):
    yield k


def loop(n):
    for _ in range(n):
        pass


def call_function(n):
    for i in range(n):
        f(i)


def call_closure(n):
    def g(x):
        return x
    for i in range(n):
        g(i)


def call_new_function(n):
    for i in range(n):
        def g(x=i):
            return x
        g()


def call_method(n):
    o = Obj(1)
    for i in range(n):
        o.m(i)


def call_builtin(n):
    s = "abc"
    for _ in range(n):
        len(s)


def call_builtin_method(n):
    s = "abc"
    for _ in range(n):
        s.isalnum()


def instantiate(n):
    for i in range(n):
        Obj(i)


def generator(n):
    for i in range(n):
        for _x in gen(i):
            pass


def builtin_operator(n):
    x = 0
    for i in range(n):
        x = x + i


def python_operator(n):
    a = Obj(1)
    for _ in range(n):
        a + a


def property_get(n):
    a = Obj(1)
    for _ in range(n):
        a.prop  # noqa: B018


class Callable:
    def __call__(self, x):
        return x


class Bag(list):
    pass


def call_object(n):
    c = Callable()
    for i in range(n):
        c(i)


def call_c_object(n):
    import operator
    first = operator.itemgetter(0)
    t = (1, 2)
    for _ in range(n):
        first(t)


def sort_no_key(n):
    s = [3, 1, 2]
    for _ in range(n):
        s.sort()


def method_on_a_parameter(n, d=None):
    d = {} if d is None else d
    for i in range(n):
        d.get(i, None)


def instantiate_builtin_subclass(n):
    for _ in range(n):
        Bag()


KERNELS = {
    "f(x)  Python function": call_function,
    "g(x)  closure": call_closure,
    "def g(); g()  new function": call_new_function,
    "o.m(x)  Python method": call_method,
    "len(s)  builtin": call_builtin,
    "s.isalnum()  builtin method": call_builtin_method,
    "Obj(x)  class with __init__": instantiate,
    "for x in gen(i)  generator": generator,
    "x + i  int operator": builtin_operator,
    "a + a  Python __add__": python_operator,
    "a.prop  property": property_get,
    "c(x)  callable object": call_object,
    "itemgetter(t)  C callable object": call_c_object,
    "s.sort()  builtin method with an overlay": sort_no_key,
    "d.get(i)  builtin method, receiver unproven": method_on_a_parameter,
    "Bag()  subclass of list": instantiate_builtin_subclass,
}
