"""Control flow: try/except/else/finally (jumps in finally, context and cause, nested
handlers, deletion of the ``as`` name), except*, raise / raise from / bare raise, with
(several items, unpacking targets, suppression, enter/exit order), match (every pattern
kind), while/else, for/else with break and continue."""

from tests.differential import Ctx, R, RecIter, case, log


@case(0)
@case(1)
@case(2)
@case(3)
@case(4)
def try_except_else_finally(kind):
    try:
        log("try")
        if kind == 1:
            raise ValueError("v", kind)
        if kind == 2:
            raise KeyError("k")
        if kind == 3:
            return "returned-from-try"
        if kind == 4:
            raise TypeError("not handled")
    except ValueError as e:
        log(("caught-value", e.args))
        result = "value"
    except (KeyError, IndexError) as e:
        log(("caught-lookup", type(e).__name__))
        result = "lookup"
    else:
        log("else")
        result = "else"
    finally:
        log("finally")
    return result


@case()
def except_name_is_deleted():
    e = "before"
    try:
        raise ValueError
    except ValueError as e:  # noqa: F841
        pass
    try:
        return e  # noqa: F821
    except UnboundLocalError as err:
        return "deleted", type(err).__name__


@case()
def except_name_deleted_even_if_rebound():
    try:
        raise ValueError("x")
    except ValueError as e:
        e = "rebound"  # noqa: F841
    return "e" in locals()


@case(0)
@case(1)
@case(2)
def return_break_continue_in_finally(which):
    out = []
    for i in range(3):
        try:
            if i == 1:
                raise RuntimeError("swallowed")
            out.append(i)
        finally:
            if which == 0 and i == 1:
                break
            if which == 1 and i == 1:
                continue  # noqa: B012
            if which == 2 and i == 1:
                return out, "returned"  # noqa: B012
    return out


@case()
def finally_overrides_return():
    def f():
        try:
            return log("try-value", 1)
        finally:
            return log("finally-value", 2)  # noqa: B012

    def g():
        x = 1
        try:
            return x
        finally:
            x = 2  # the return value was already computed

    return f(), g()


@case()
def finally_runs_on_exception_and_reraises():
    try:
        raise ValueError("inner")
    finally:
        log("finally")


@case()
def exception_in_finally_replaces():
    try:
        raise ValueError("first")
    finally:
        raise KeyError("second")


@case()
def exception_context_implicit():
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            raise KeyError("outer")  # noqa: B904
    except KeyError as e:
        return e, e.__context__, e.__cause__, e.__suppress_context__


@case()
def exception_cause_explicit():
    try:
        raise KeyError("k") from ValueError("cause")
    except KeyError as e:
        return e, e.__cause__, e.__context__, e.__suppress_context__


@case()
def raise_from_none():
    try:
        try:
            raise ValueError("hidden")
        except ValueError:
            raise KeyError("shown") from None
    except KeyError as e:
        return e, e.__cause__, e.__context__, e.__suppress_context__


@case()
def raise_escapes_with_chain():
    try:
        {}["missing"]
    except KeyError as e:
        raise RuntimeError("wrapped") from e


@case()
def bare_raise_reraises():
    try:
        try:
            raise ValueError("original")
        except ValueError:
            log("handling")
            raise
    except ValueError as e:
        return e


@case()
def bare_raise_without_active_exception():
    raise


@case()
def raise_class_and_instance():
    out = []
    for thing in (ValueError, ValueError("instance"), StopIteration):
        try:
            raise thing
        except Exception as e:
            out.append((type(e).__name__, e.args))
    try:
        raise 42
    except TypeError as e:
        out.append(e.args)
    return out


@case()
def nested_handlers_and_reraise_after_handling():
    try:
        try:
            raise ValueError(1)
        except ValueError:
            try:
                raise KeyError(2)
            except KeyError:
                log("inner-handled")
            raise  # re-raises the ValueError
    except ValueError as e:
        return e, e.__context__


@case()
def exception_variable_in_nested_function():
    try:
        raise ValueError("v")
    except ValueError as e:
        def get():
            return e
        got = get
    return got()


@case()
def exception_type_evaluated_lazily():
    def types():
        log("types-evaluated")
        return (ValueError,)

    try:
        log("body")
    except types():
        pass
    try:
        raise KeyError
    except log("first-clause", ValueError):
        pass
    except log("second-clause", KeyError):
        return "second"


@case()
def except_star_split():
    try:
        raise ExceptionGroup("g", [ValueError(1), KeyError(2), ValueError(3), TypeError(4)])
    except* ValueError as eg:
        log(("value", eg.message, [e.args for e in eg.exceptions]))
    except* (KeyError, TypeError) as eg:
        log(("key-or-type", [type(e).__name__ for e in eg.exceptions]))
    return "done"


@case()
def except_star_unhandled_rest():
    try:
        raise ExceptionGroup("g", [ValueError(1), OSError(2)])
    except* ValueError:
        log("value")


@case()
def except_star_naked_exception_and_reraise():
    try:
        try:
            raise ValueError("naked")
        except* ValueError as eg:
            log(("wrapped", type(eg).__name__, eg.exceptions))
            raise
    except ExceptionGroup as outer:
        return outer


@case()
def except_star_raise_new_in_handler():
    try:
        raise ExceptionGroup("g", [ValueError(1)])
    except* ValueError:
        raise KeyError("new")


@case()
def except_star_nested_groups_else_finally():
    try:
        try:
            raise ExceptionGroup("outer", [ExceptionGroup("inner", [KeyError(1)]), ValueError(2)])
        except* KeyError as eg:
            log(("key", repr(eg)))
        except* ValueError as eg:
            log(("value", repr(eg)))
        else:
            log("else")
        finally:
            log("finally")
    except* Exception as rest:
        log(("rest", repr(rest)))
    return "ok"


@case()
def except_star_no_exception():
    try:
        log("body")
    except* ValueError:
        log("never")
    else:
        log("else")
    return "no-exception"


@case()
def with_several_items_and_targets():
    with Ctx("a") as (name, one), Ctx("b") as b, Ctx("c"):
        log(("body", name, one, b))
    return name


@case()
def with_exception_propagates():
    with Ctx("a"), Ctx("b"):
        raise ValueError("inside")


@case()
def with_suppressing_exit():
    with Ctx("outer"), Ctx("suppress", suppress=True):
        raise ValueError("suppressed")
    log("after")
    return "continued"


@case()
def with_enter_fails():
    with Ctx("a"), Ctx("b", fail_enter=True), Ctx("c"):
        log("never")


@case()
def with_exit_fails():
    with Ctx("a"), Ctx("b", fail_exit=True):
        log("body")


@case()
def with_exit_fails_during_exception():
    with Ctx("a", fail_exit=True):
        raise ValueError("original")


@case()
def with_return_break_continue():
    out = []
    for i in range(3):
        with Ctx(f"loop{i}"):
            if i == 0:
                continue
            if i == 1:
                out.append("body")
                break
    with Ctx("ret"):
        return out


@case()
def with_target_attribute_and_subscript():
    r = R("r")
    d = {}
    with Ctx("a", value=1) as r.attr, Ctx("b", value=2) as d[log("key", "k")]:
        pass
    return d


@case()
def with_recorded_object():
    with R("cm") as entered:
        log(("inside", entered))
    return entered


@case()
def with_not_a_context_manager():
    with log("not-cm", 3):
        pass


@case()
def with_contextlib():
    import contextlib

    @contextlib.contextmanager
    def managed(tag):
        log(("open", tag))
        try:
            yield tag
        except KeyError:
            log(("handled", tag))
        finally:
            log(("close", tag))

    with managed("a") as a, managed("b") as b:
        raise KeyError("x")
    with contextlib.suppress(ValueError), managed("c"):
        raise ValueError
    with contextlib.ExitStack() as stack:
        stack.callback(log, "callback")
        stack.enter_context(managed("d"))
    return a, b


@case(3)
@case(6)
def for_else_with_break_continue(n):
    out = []
    for i in range(n):
        if i == 1:
            continue
        if i == 4:
            break
        out.append(i)
    else:
        out.append("for-else")
    return out


@case(0)
@case(5)
def while_else(n):
    out = []
    while n > 0:
        n -= 1
        if n == 2:
            continue
        if n == 7:
            break
        out.append(n)
    else:
        out.append("while-else")
    i = 0
    while True:
        i += 1
        if i > 3:
            break
    return out, i


@case()
def while_test_is_recorded():
    r = R("cond")
    n = 0
    while r and n < 2:
        n += 1
    while log(("test", n), n > 0):
        n -= 1
    return n


@case()
def for_over_recorded_iterator():
    total = 0
    for x in RecIter("it", [1, 2, 3]):
        total += x
        if x == 2:
            break
    for y in R("iterable", items=[4]):
        total += y
    return total


@case()
def nested_loops_with_else():
    found = []
    for i in range(4):
        for j in range(4):
            if i * j == 2:
                found.append((i, j))
                break
        else:
            continue
        if len(found) > 1:
            break
    return found


@case()
def loop_variable_after_loop():
    for i in range(3):
        pass
    for j in []:
        pass
    try:
        return i, j  # noqa: F821
    except UnboundLocalError as e:
        return i, e.args


@case(0)
@case(2)
@case(True)
@case(None)
@case("text")
@case(b"bytes")
@case(-1.5)
@case(["seq", 1, 2])
@case((1, 2))
@case([1, 2, 3, 4, 5])
@case({"k": 1, "z": 2})
@case({"point": [3, 4]})
@case(1000)
@case(500.5)
@case("longer")
@case(3.0)
@case({"other": 1})
def match_patterns(value):
    class Point:
        __match_args__ = ("x", "y")

        def __init__(self, x, y):
            self.x, self.y = x, y

    match value:
        case 0 | 1 | 2:
            return "small-literal"
        case True:
            return "unreachable-for-bool-1"
        case None:
            return "none"
        case "text" | b"bytes":
            return ("str-or-bytes", value)
        case -1.5:
            return "negative-float"
        case [first, *rest] if first == "seq":
            return ("seq-star", rest)
        case [a, b]:
            return ("pair", a, b)
        case (a, b, *_, c):
            return ("long", a, b, c)
        case {"k": v, **others}:
            return ("map", v, others)
        case {"point": (px, py)}:
            return ("point-map", Point(px, py).x + py)
        case int(n) | float(n) if n > 100:
            return ("big-number", n)
        case str() as s if len(s) > 3:
            return ("long-str", s)
        case Point(x=0, y=yy):
            return ("point-kw", yy)
        case _:
            return ("wildcard", type(value).__name__)


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


class Recorded:
    """Records the attribute reads a class pattern makes."""

    __match_args__ = ("a", "b")

    def __getattr__(self, name):
        log(("match-getattr", name))
        if name == "missing":
            raise AttributeError(name)
        return len(name)


class Mapping(dict):
    def get(self, key, default=None):
        log(("mapping-get", key))
        return super().get(key, default)


@case(lambda: Point(1, 2))
@case(lambda: Point(0, 5))
@case(lambda: Point("a", "b"))
@case(lambda: Recorded())
@case(lambda: (1, 2))
def match_class_patterns(make):
    value = make()
    match value:
        case Point(0, y):
            return ("on-y-axis", y)
        case Point(x=1, y=y) as p:
            return ("x-is-one", y, p.x)
        case Point(str(x), y=str()):
            return ("strings", x)
        case Recorded(missing=1):
            return "never"
        case Recorded(1, b=6):
            return "never-either"
        case Recorded(a=1) | Recorded(a=1, b=1):
            return "no"
        case Recorded(1, 1):
            return "positional"
        case tuple((1, y)):
            return ("tuple", y)
        case _:
            return "other"


@case()
def match_class_too_many_positional():
    match Point(1, 2):
        case Point(1, 2, 3):
            return "never"


@case()
def match_mapping_uses_get_and_rest():
    m = Mapping(a=1, b=2, c=3)
    match m:
        case {"z": _}:
            return "z"
        case {"a": 1, "b": x, **rest}:
            return x, rest


@case()
def match_value_patterns_and_guards():
    class Color:
        RED = 1
        GREEN = 2

    out = []
    for v in (1, 2, 3):
        match v:
            case Color.RED:
                out.append("red")
            case Color.GREEN if log(("guard", v), False):
                out.append("green-guarded")
            case x if log(("capture-guard", x), x > 1):
                out.append(("captured", x))
    return out


@case()
def match_subject_evaluated_once_and_sequence_checks():
    def subject():
        log("subject")
        return R("seq", items=[1, 2])

    match subject():
        case [a, b]:
            return "sequence"  # R is not a registered Sequence
        case _:
            return "not-a-sequence"


@case()
def match_binds_leak_after_failure():
    match [1, 2]:
        case [x, 3]:
            pass
        case [y, 2]:
            pass
    return y


@case()
def match_or_pattern_with_captures():
    out = []
    for value in ([1, "a"], ("b", 2), {"k": 3}):
        match value:
            case [1, s] | [s, 2] | {"k": s}:
                out.append(s)
    return out


@case()
def match_nested_as_and_star_wildcards():
    match (1, (2, 3), [4, 5, 6]):
        case (int() as a, (b, *_) as inner, [*_, last] as lst):
            return a, b, inner, last, lst
