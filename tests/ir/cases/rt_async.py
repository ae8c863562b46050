"""Coroutines and async generators: async def, await, async for, async with, async
generators, async comprehensions. Coroutines are driven by hand (send/throw/close on the
scripts of ``COROUTINE_SCRIPTS``) and under ``asyncio.run``; async generators by hand
(``__anext__``/``asend``/``athrow``/``aclose``) and with ``async for`` under asyncio."""

import asyncio

from tests.differential import (
    ACtx,
    AIter,
    Pause,
    case,
    drive_async_generator,
    drive_asyncio,
    drive_coroutine,
    log,
)

CORO = drive_coroutine()
AGEN = drive_async_generator()


@case(2, drive=CORO)
def not_async(n):  # a plain function driven like a coroutine: the driver itself is checked
    async def inner():
        return n
    return inner()


@case(3, drive=CORO)
async def awaits_in_loop(n):
    total = 0
    for i in range(n):
        got = await Pause(("step", i))
        log(("got", got))
        total += i
    return total


@case(drive=CORO)
async def await_catches_thrown():
    out = []
    for i in range(3):
        try:
            out.append(await Pause(i))
        except ValueError as e:
            log(("caught", e.args))
            out.append("recovered")
        except KeyError:
            log("key-error")
            raise
        finally:
            log(("finally", i))
    return out


@case(drive=CORO)
async def async_with_and_for():
    total = []
    async with ACtx("a") as (name, one), ACtx("b"):
        async for x in AIter("it", [1, 2]):
            total.append((name, x))
    return total


@case(drive=CORO)
async def async_with_suppressing():
    async with ACtx("outer"), ACtx("suppress", suppress=True):
        await Pause("inside")
        raise ValueError("suppressed")
    return "after"


@case(drive=CORO)
async def async_with_enter_fails():
    async with ACtx("a"), ACtx("b", fail_enter=True):
        log("never")


@case(drive=CORO)
async def async_for_else_break_continue():
    out = []
    async for x in AIter("a", [1, 2, 3, 4]):
        if x == 2:
            continue
        if x == 4:
            break
        out.append(x)
    else:
        out.append("else")
    async for y in AIter("b", []):
        out.append(y)
    else:
        out.append("empty-else")
    return out


@case(drive=CORO)
async def async_comprehensions():
    a = [x async for x in AIter("a", [1, 2])]
    b = {x: await Pause(x) for x in range(2)}
    c = [x async for x in AIter("c", [1, 2, 3]) if x % 2]
    d = {x async for x in AIter("d", [5])}
    g = (x async for x in AIter("g", [7, 8]))
    e = [x async for x in g]
    return a, b, c, d, e


@case(drive=CORO)
async def awaits_coroutine_chain():
    async def leaf(x):
        got = await Pause(("leaf", x))
        if got == "b":
            raise LookupError("leaf failed", x)
        return x * 2

    async def middle(x):
        return await leaf(x) + await leaf(x + 1)

    return await middle(1)


@case(drive=CORO)
async def await_non_awaitable():
    await log("not-awaitable", 5)


@case(drive=CORO)
async def awaits_asyncio_sleep_zero():
    await asyncio.sleep(0)
    return "slept"


@case(drive=drive_asyncio)
async def asyncio_gather_and_tasks():
    async def worker(name, n):
        for i in range(n):
            log((name, i))
            await asyncio.sleep(0)
        return name

    results = await asyncio.gather(worker("a", 2), worker("b", 3))
    task = asyncio.ensure_future(worker("c", 1))
    return results, await task


@case(drive=drive_asyncio)
async def asyncio_exception_in_task():
    async def failing():
        await asyncio.sleep(0)
        raise KeyError("in-task")

    try:
        await asyncio.gather(failing())
    except KeyError as e:
        return e


@case(drive=drive_asyncio)
async def asyncio_timeout_and_cancel():
    async def slow():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            log("cancelled")
            raise

    task = asyncio.ensure_future(slow())
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return "cancelled-outer"


@case(3, drive=AGEN)
async def async_generator(n):
    for i in range(n):
        got = yield i
        log(("got", got))
        await Pause(("after", i))


@case(drive=AGEN)
async def async_generator_with_cleanup():
    try:
        async with ACtx("cm"):
            yield 1
            yield 2
    except ValueError as e:
        log(("caught", e.args))
        yield "recovered"
    finally:
        log("finally")
        await Pause("finally-pause")


@case(drive=AGEN)
async def async_generator_yield_in_handler():
    # Bounded: the AGEN driver drains a generator to its end.
    for _ in range(3):
        try:
            yield "ready"
        except KeyError:
            log("key")
            return


@case(drive=AGEN)
async def async_generator_delegating_by_hand():
    async for x in AIter("inner", [1, 2]):
        got = yield x * 10
        log(("sent", got))


@case(drive=AGEN)
async def async_generator_ignores_exit():
    try:
        yield 1
    except GeneratorExit:
        log("exit")
        yield "bad"


@case(drive=AGEN)
async def async_generator_raises():
    yield 1
    await Pause("before-raise")
    raise ValueError("async gen failed")


@case(drive=AGEN)
async def async_generator_stop_iteration_inside():
    yield 1
    raise StopAsyncIteration("converted")


@case(drive=CORO)
async def async_generator_used_in_coroutine():
    async def agen():
        for i in range(3):
            yield i
            await Pause(i)

    out = [x async for x in agen()]
    g = agen()
    first = await g.__anext__()
    await g.aclose()
    return out, first


@case(drive=CORO)
async def await_in_finally_and_except():
    try:
        try:
            await Pause("try")
            raise ValueError("v")
        except ValueError:
            await Pause("except")
            raise
        finally:
            await Pause("finally")
    except ValueError as e:
        return e.args


@case(drive=CORO)
async def lambda_and_nested_async():
    async def helper(x):
        return await Pause(x)

    results = []
    for f in (lambda: helper(1), lambda: helper(2)):
        results.append(await f())
    return results


@case(drive=CORO)
async def async_closures_and_nonlocal():
    count = 0

    async def bump():
        nonlocal count
        await Pause("bump")
        count += 1
        return count

    await bump()
    await bump()
    return count
