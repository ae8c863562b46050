"""Generators: yield, yield from (send/throw/close delegation), return in generators, yield
inside try/finally/with, generator expressions, driven through the whole protocol (every
script of ``GEN_SCRIPTS``: next, send, throw at several points, close, StopIteration.value)."""

from tests.differential import Ctx, R, RecIter, case, drive_generator, log

GEN = drive_generator()


@case(4, drive=GEN)
@case(0, drive=GEN)
def counting(n):
    total = 0
    for i in range(n):
        got = yield i
        log(("got", got))
        if got:
            total += got if isinstance(got, int) else len(got)
    return total


@case(drive=GEN)
def catches_and_continues():
    while True:
        try:
            got = yield "ready"
            log(("got", got))
            if got == "twenty":
                return "stopped-by-send"
        except ValueError as e:
            log(("caught", e.args))
            yield ("recovered", e.args)
        except GeneratorExit:
            log("generator-exit")
            raise


@case(drive=GEN)
def finally_and_with_in_generator():
    with Ctx("cm"):
        try:
            yield 1
            yield 2
        finally:
            log("finally")
    yield 3


@case(drive=GEN)
def return_value_in_generator():
    x = yield
    if x is None:
        return "none-sent"
    return ("value", x)


@case(drive=GEN)
def yield_expression_forms():
    a = yield
    b = (yield a) or "default"
    c = (yield) if False else None
    d = yield from []
    yield a, b, c, d
    e = yield (yield "nested")
    return e


@case(3, drive=GEN)
def delegating(n):
    result = yield from counting(n)
    log(("delegate-result", result))
    again = yield from sub_catching()
    yield ("results", result, again)
    return result, again


def sub_catching():
    try:
        got = yield "sub"
        log(("sub-got", got))
    except KeyError as e:
        log(("sub-caught", e.args))
        return "sub-handled"
    finally:
        log("sub-finally")
    return "sub-done"


@case(drive=GEN)
def delegating_to_iterator():
    yield from RecIter("it", [1, 2])
    r = yield from R("iterable", items=["a"])
    return r


@case(drive=GEN)
def delegating_to_generator_expression():
    yield from (x * 2 for x in range(3))
    return "done"


@case(drive=GEN)
def delegating_nested_twice():
    def inner():
        got = yield "inner"
        log(("inner-got", got))
        return "inner-result"

    def middle():
        r = yield from inner()
        log(("middle-got", r))
        return r + "!"

    final = yield from middle()
    yield final


@case(drive=GEN)
def generator_raises_inside():
    yield 1
    raise ValueError("from generator")


@case(drive=GEN)
def generator_raises_stop_iteration():
    yield 1
    raise StopIteration("converted")


@case(drive=GEN)
def generator_close_catches_and_yields():
    try:
        yield 1
    except GeneratorExit:
        log("exit")
        yield "ignored-exit"


@case(drive=GEN)
def generator_with_return_in_finally():
    try:
        yield 1
        yield 2
    finally:
        return "from-finally"  # noqa: B012


@case(drive=GEN)
def generator_exception_context():
    try:
        raise KeyError("context")
    except KeyError:
        yield "in-handler"
        raise ValueError("after-yield")


@case(drive=GEN)
def generator_in_loop_with_break():
    for i in range(10):
        got = yield i
        if got == 10:
            break
        if got:
            continue
        log(("loop", i))
    else:
        return "exhausted"
    return "broken"


@case(drive=GEN)
def generator_lambda_and_genexp():
    g = (lambda: (yield "from-lambda"))()
    yield next(g)
    h = (x for x in [log("iter-eval", [1, 2])[0]])
    yield list(h)


@case(drive=GEN)
def generator_closure():
    state = []

    def push(x):
        state.append(x)
        return len(state)

    while len(state) < 3:
        got = yield push(len(state))
        if got:
            state.append(got)
    return state


@case()
def generator_expression_protocol():
    g = (log(("produce", x), x) for x in RecIter("src", [1, 2, 3]))
    out = [next(g)]
    try:
        g.throw(ValueError("into-genexp"))
    except ValueError as e:
        out.append(e.args)
    out.append(list(g))
    return out


@case()
def generator_expression_first_iterable_error():
    return (x for x in log("not-iterable", 5))


@case()
def generator_state_introspection():
    import inspect

    def g():
        yield 1

    gen = g()
    states = [inspect.getgeneratorstate(gen)]
    next(gen)
    states.append(inspect.getgeneratorstate(gen))
    gen.close()
    states.append(inspect.getgeneratorstate(gen))
    return states, gen.__name__, gen.__qualname__


@case()
def generator_running_error():
    def g():
        yield next(me)

    me = g()
    return next(me)


@case()
def generator_send_to_unstarted():
    def g():
        yield 1

    return g().send("x")
