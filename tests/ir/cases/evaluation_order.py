"""Evaluation order that the IR itself must express (not only its round trip): calls with a
lone ``*x`` and keyword arguments or ``**`` mappings (CPython iterates ``x`` at the call,
after them), method calls, constructors and class statements with starred arguments, and
nested ``and``/``or`` (CPython 3.11 tests the deciding value once). Each case runs round
tripped in every mode, and ``tests/ir/test_evaluation_order.py`` also runs it with a harmless
call inserted (``insert_before``) next to its statements, which keeps no fold together."""

from tests.differential import R, RecIter, RecMap, case, log


def sink(*args, **kwargs):
    log(("sink", args, kwargs))
    return args, kwargs


class Box:
    def __init__(self, *args, **kwargs):
        log(("init", args, kwargs))

    def method(self, *args, **kwargs):
        log(("method", args, kwargs))
        return args, kwargs


# ------------------------------------------------------------------ a lone *x


@case()
def lone_star_keyword():
    return sink(*RecIter("x", [1]), k=log("k", 1))


@case()
def lone_star_keyword_first_in_source():
    return sink(k=log("k", 1), *log("star", RecIter("x", [1])))


@case()
def lone_star_dstar():
    return sink(*log("star", RecIter("x", [1])), **log("dstar", RecMap("m", {"a": 1})))


@case()
def lone_star_keyword_dstar():
    return sink(*RecIter("x", [1]), k=log("k", 1), **RecMap("m", {"a": 1}))


@case()
def lone_star_dstar_keyword():
    return sink(*RecIter("x", [1]), **RecMap("m", {"a": 1}), k=log("k", 1))


@case()
def lone_star_two_mappings():
    return sink(*RecIter("x", [1]), **RecMap("m1", {"a": 1}), **RecMap("m2", {"b": 2}))


@case(lambda: RecIter("x", [1, 2]))
@case(lambda: R("r", items=[3]))
def lone_star_name(make):
    x = make()
    return sink(*x, k=log("k", 1), **RecMap("m", {"a": 1}))


@case(lambda: RecIter("x", [1, 2]))
def lone_star_name_alone(make):
    x = make()
    return sink(*x)


@case(lambda: RecIter("x", [1, 2]))
def lone_star_name_rebound(make):
    x = make()
    # the call iterates what x was when read, before the keyword rebinds it
    return sink(*x, k=(x := log("rebound", RecIter("y", [3])))), list(x)


@case()
def lone_star_not_iterable():
    return sink(*log("star", 5), k=log("k", 1))


@case()
def method_call():
    box = Box()
    return box.method(*RecIter("x", [1]), k=log("k", 1))


@case()
def method_call_dstar():
    box = Box()
    return box.method(*RecIter("x", [1]), k=log("k", 1), **RecMap("m", {"a": 1}))


@case()
def method_call_of_recorded_object():
    r = R("obj")
    return r.method(*RecIter("x", [1]), k=log("k", 1))


@case()
def constructor():
    return type(Box(*RecIter("x", [1]), k=log("k", 1), **RecMap("m", {"a": 1}))).__name__


@case()
def builtin_constructor():
    return dict(*RecIter("x", [[("a", 1)]]), k=log("k", 1))


@case()
def nested_lone_stars():
    return sink(*sink(*RecIter("inner", [1]), k=log("k-inner", 1)),
                k=sink(*RecIter("kw", [2]), j=log("j", 2)))


# ------------------------------------------------------------------ *x iterated in place


@case()
def star_after_positional():
    return sink(log("a", 0), *RecIter("x", [1]), k=log("k", 1))


@case()
def two_stars():
    return sink(*RecIter("x", [1]), *RecIter("y", [2]), k=log("k", 1))


@case()
def star_then_positional():
    return sink(*RecIter("x", [1]), log("b", 2), k=log("k", 1))


@case()
def displays():
    return [*RecIter("x", [1]), log("a", 2)], {**RecMap("m", {"a": 1}), "k": log("k", 1)}


@case()
def class_statement():
    def meta(name, bases, namespace, **kwargs):
        log(("meta", name, bases, sorted(kwargs)))
        return type(name, bases, namespace)

    class K(*RecIter("bases", [object]), metaclass=log("metaclass", meta),
            **RecMap("m", {})):
        pass

    return K.__name__


# ------------------------------------------------------------------ nested and/or


@case(lambda: (R("a"), R("b"), R("c"), R("d")))
@case(lambda: (R("a", False), R("b"), R("c"), R("d")))
@case(lambda: (R("a", False), R("b", False), R("c", False), R("d")))
@case(lambda: (R("a"), R("b", False), R("c"), R("d", False)))
def nested_boolops(make):
    a, b, c, d = make()
    return ((a or b) and c, (a and b) or c, a and (b or c) and d, (a and (b or c)) or d,
            ((a or b) and c) or d, not ((a or b) and c), ((a or b) if c else d) and a)


@case(lambda: (R("a"), R("b"), R("c"), R("d")))
@case(lambda: (R("a", False), R("b"), R("c"), R("d")))
def nested_boolops_across_lines(make):
    a, b, c, d = make()
    return ((a or
             b) and c,
            (
                a or b) and c,
            (a and
             (b or c)) or d)


@case(lambda: (R("a"), R("b"), R("c")))
@case(lambda: (R("a", False), R("b"), R("c", False)))
def nested_boolops_with_calls(make):
    a, b, c = make()
    return (sink(a) or sink(b)) and sink(c), sink(*RecIter("x", [a]), k=(a or b) and c)
