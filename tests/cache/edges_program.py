"""A program whose functions rely on each kind of definition (loaded fresh per test)."""

SCALE = 3


def helper(x):
    return x + 1


def other_helper(x):
    return x - 1


def uses_callee(x):
    return helper(x) * 2


def uses_other_callee(x):
    return other_helper(x) * 2


def uses_global(x):
    return x * SCALE


def uses_nothing(x):
    return x * 5


class Shape:
    sides = 4

    def area(self, x):
        return x * x


class Other:
    def area(self, x):
        return x


def uses_attribute(x):
    return Shape.sides * x


def uses_method(x):
    return Shape().area(x)


def uses_other_class(x):
    return Other().area(x)


def outer(x):
    return uses_callee(x) + 1


def uses_builtin(x):
    return len(range(x))
