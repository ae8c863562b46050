"""Generator-heavy: lazy pipelines of generators, yield from, send and generator expressions."""

N = 1000000


def numbers(n):
    i = 0
    while i < n:
        yield i
        i += 1


def evens(it):
    for x in it:
        if x % 2 == 0:
            yield x


def squares(it):
    for x in it:
        yield x * x


def windows(it, size):
    window = []
    for x in it:
        window.append(x)
        if len(window) == size:
            yield tuple(window)
            del window[0]


def chain(*iterables):
    for it in iterables:
        yield from it


def running_mean():
    total = 0.0
    count = 0
    mean = None
    while True:
        x = yield mean
        if x is None:
            return count
        total += x
        count += 1
        mean = total / count


def flatten(nested):
    for item in nested:
        if isinstance(item, list):
            yield from flatten(item)
        else:
            yield item


def main(n=N):
    total = sum(squares(evens(numbers(n)))) % 1_000_003
    widest = max(sum(w) for w in windows(numbers(n // 4), 5))
    averager = running_mean()
    next(averager)
    mean = 0.0
    for x in chain(numbers(n // 8), (y * 2 for y in range(n // 8))):
        mean = averager.send(x)
    nested = [[i, [i + 1, [i + 2, i + 3]]] for i in range(n // 20)]
    flat = sum(flatten(nested))
    return total, widest, round(mean, 6), flat
