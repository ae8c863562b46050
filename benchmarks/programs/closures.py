"""Closures and comprehensions: higher-order functions, partial application, accumulators."""

N = 400000


def compose(*fns):
    def composed(x):
        for f in reversed(fns):
            x = f(x)
        return x
    return composed


def adder(k):
    return lambda x: x + k


def multiplier(k):
    def mul(x):
        return x * k
    return mul


def counter():
    count = 0

    def step(by=1):
        nonlocal count
        count += by
        return count
    return step


def memoize(fn):
    cache = {}

    def wrapper(n):
        if n not in cache:
            cache[n] = fn(n)
        return cache[n]
    return wrapper


@memoize
def collatz_length(n):
    return 1 if n == 1 else 1 + collatz_length(n // 2 if n % 2 == 0 else 3 * n + 1)


def main(n=N):
    pipeline = compose(adder(3), multiplier(2), adder(-1), lambda x: x % 1000)
    mapped = [pipeline(i) for i in range(n)]
    filtered = [x for x in mapped if x % 3 != 0]
    side = min(n // 300, 60)
    grid = {(i, j): i * j for i in range(side) for j in range(side) if (i + j) % 2}
    step = counter()
    for x in filtered:
        step(x % 5)
    longest = max(range(1, n // 3), key=collatz_length)
    keyed = sorted(filtered[: n // 4], key=lambda x: (-(x % 7), x))
    return sum(filtered), len(grid), step(0), longest, keyed[:3]
