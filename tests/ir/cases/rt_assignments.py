"""Assignments: starred and nested unpacking (with recorded target evaluation order),
augmented assignment to names, attributes and subscripts (target evaluated once),
multiple-target assignment, del (names, attributes, items, slices), assert."""

from tests.differential import R, RecIter, case, log


@case([1, 2, 3, 4])
@case([1, 2])
@case([1])
@case("abcdef")
def starred_unpacking(value):
    a, *b, c = value
    *d, e = value
    f, *g = value
    return a, b, c, d, e, f, g


@case()
def nested_unpacking():
    (a, b), c, [d, (e, *f)] = (1, 2), 3, [4, (5, 6, 7)]
    for (x, y), z in [((1, 2), 3), ((4, 5), 6)]:
        log((x, y, z))
    [p] = [9]
    (q,) = "q"
    return a, b, c, d, e, f, p, q


@case([1, 2, 3])
@case([1, 2])
@case([1, 2, 3, 4])
@case(5)
def unpacking_errors(value):
    a, b, c = value
    return a, b, c


@case()
def unpacking_iterates_recorded():
    a, b = RecIter("two", [1, 2])
    c, *d = RecIter("three", [1, 2, 3])
    try:
        e, f = RecIter("three-again", [1, 2, 3])
    except ValueError as err:
        msg = err.args
    return a, b, c, d, msg


@case()
def target_evaluation_order():
    r = R("r")
    r[log("i", 0)], r.attr, *r[log("j", 1)], r.last = log("value", [1, 2, 3, 4, 5])
    return r


@case()
def multiple_targets():
    r = R("r")
    a = r[log("k", "key")] = r.attr = b = log("value", [1, 2])
    c = d = e = []
    c.append(1)
    x, y = z = log("pair", (1, 2))
    return a, b, c is d is e, d, x, y, z


@case()
def multiple_targets_order_with_calls():
    def f():
        log("f")
        return "index"

    def g():
        log("g")
        return "value"

    r = R("target")
    a = r[f()] = g()
    return a


@case()
def swap_and_rotate():
    a, b, c = 1, 2, 3
    a, b = b, a
    a, b, c = c, a, b
    lst = [0, 1, 2]
    lst[0], lst[2] = lst[2], lst[0]
    i = 0
    i, lst[i] = 1, "x"  # i is assigned before lst[i] is evaluated
    return a, b, c, lst


@case()
def augmented_name_attribute_subscript():
    r = R("r")
    x = R("x")
    x += 1
    r.attr += log("rhs1", 1)
    r[log("key", "k")] += log("rhs2", 2)
    r.a.b[log("i", 0)] -= 1
    r[log("s1", 1):log("s2", 2)] *= 2
    return x


@case()
def augmented_target_evaluated_once():
    calls = []

    def key():
        calls.append("key")
        return "k"

    def obj():
        calls.append("obj")
        return d

    d = {"k": 1}
    obj()[key()] += 10
    lst = [1, 2]
    lst[len(calls) - 2] **= 5
    return d, lst, calls


@case()
def augmented_with_not_implemented():
    a = R("a", ni=["iadd"])
    a += R("b")
    c = R("c", ni=["iadd", "add"])
    c += R("d")
    try:
        e = R("e", ni=["isub", "sub"])
        e -= R("f", ni=["rsub"])
    except TypeError as err:
        return a, c, err.args
    return a, c


@case()
def augmented_on_property_and_descriptor():
    class K:
        def __init__(self):
            self._v = 1

        @property
        def v(self):
            log("get-v")
            return self._v

        @v.setter
        def v(self, value):
            log(("set-v", value))
            self._v = value

    k = K()
    k.v += 5
    k.v **= 2
    return k.v


@case()
def augmented_unbound_local():
    def f():
        n += 1  # noqa: F821
        return n

    return f()


@case()
def augmented_global_and_nonlocal():
    global AUG_GLOBAL
    AUG_GLOBAL = 1
    AUG_GLOBAL += 2
    total = 0

    def inner():
        nonlocal total
        total += 5
        total *= 2

    inner()
    result = AUG_GLOBAL, total
    del AUG_GLOBAL
    return result


@case()
def deletes():
    a = b = [1, 2, 3, 4, 5]
    del a[0], b[-1]
    del a[1:3]
    c = {"k": 1, "j": 2}
    del c["k"]
    r = R("r")
    r.attr = 1
    del r.attr, r[log("i", 0)], r[1:2]
    del a
    try:
        a  # noqa: B018
    except UnboundLocalError as e:
        err = e.args
    (x, y) = 1, 2
    del (x, y)
    [z] = [3]
    del [z]
    return b, c, err


@case()
def delete_missing():
    x = 1
    del x
    del x  # noqa: F821


@case()
def delete_missing_key():
    d = {}
    del d["missing"]


@case()
def delete_attribute_missing():
    class K:
        pass

    del K().nothing


@case()
def delete_in_loop_and_closure():
    out = []
    for i in range(3):
        v = i
        out.append(v)
        del v
    try:
        print(v)  # noqa: F821
    except NameError as e:
        out.append(type(e).__name__)
    return out


@case(1)
@case(0)
@case(-5)
def asserts(x):
    assert x is not None
    assert x >= 0, log("message", f"negative: {x}")
    assert x, "zero"
    return x


@case()
def assert_with_non_bool():
    assert R("truthy"), log("never")
    assert R("falsy", False), log("message", "falsy failed")


@case()
def assert_message_is_object():
    assert False, {"k": 1}  # noqa: B011


@case()
def assignment_expression_targets():
    data = {}
    data["a"] = data["b"] = len(data)
    obj = type("O", (), {})()
    obj.x = obj.y = [len(data)]
    return data, obj.x is obj.y


@case()
def annotated_assignments_in_function():
    a: int = 1
    b: "str"
    (c): int = 2
    lst = [0]
    lst[0]: int = 3
    return a, c, lst, "b" in dir()


@case()
def for_loop_targets():
    r = R("r")
    for r.attr in [1, 2]:
        pass
    for r[log("k", "key")] in [3]:
        pass
    for i, (j, *k) in [(1, (2, 3, 4))]:
        pass
    return i, j, k
