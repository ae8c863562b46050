"""Exception-heavy: parsing with errors as control flow, context managers and retries."""

N = 160000


class ParseError(Exception):
    def __init__(self, text, position):
        super().__init__(text, position)
        self.position = position


class Budget:
    def __init__(self):
        self.entered = 0
        self.failed = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, et, ev, tb):
        if et is not None and issubclass(et, ParseError):
            self.failed += 1
            return True
        return False


def parse_int(text):
    try:
        return int(text)
    except ValueError:
        raise ParseError(text, 0) from None


def parse_pair(text):
    left, sep, right = text.partition(":")
    if not sep:
        raise ParseError(text, len(text))
    return parse_int(left), parse_int(right)


def safe_div(a, b):
    try:
        return a // b
    except ZeroDivisionError:
        return 0
    finally:
        pass


def lookup(table, key):
    try:
        return table[key]
    except KeyError:
        return -1


def main(n=N):
    inputs = [f"{i}:{i % 7}" if i % 5 else f"{i}-{i % 3}" for i in range(n)]
    inputs += [f"x{i}:1" for i in range(n // 10)]
    budget = Budget()
    total = 0
    for text in inputs:
        with budget:
            a, b = parse_pair(text)
            total += safe_div(a, b)
    table = {i: i * i for i in range(0, n, 3)}
    found = sum(lookup(table, i) for i in range(n))
    return total, budget.entered, budget.failed, found
