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
}
