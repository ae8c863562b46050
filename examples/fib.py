"""A small program for ``splice trace`` and ``splice run``: memoised and plain Fibonacci,
a class, a generator, a caught exception.

    splice trace examples/fib.py 15
    splice trace -o trace.json examples/fib.py 20
"""

import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Memo:
    def __init__(self):
        self.table = {0: 0, 1: 1}

    def fib(self, n):
        if n not in self.table:
            self.table[n] = self.fib(n - 1) + self.fib(n - 2)
        return self.table[n]


def evens(limit):
    for i in range(limit):
        if i % 2 == 0:
            yield i


def parse(text):
    try:
        return int(text)
    except ValueError:
        return None


def main(n):
    plain = fib(n)
    memo = Memo().fib(n)
    total = sum(fib(k) for k in evens(n // 2))
    bad = parse("not a number")
    return plain, memo, total, bad


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    print(main(n))
