"""Programs that rebind, while a code instance runs, a definition its inference relied on
(loaded fresh per run: each one changes its own module). No ``global`` statement rebinds
these names: inference would then not rely on them."""

import math
import types

SCALE = 0.5
SCALE_FOR_CALLEE = 0.5


def set_global(name, value):
    globals()[name] = value


def global_value(x):
    first = math.sin(x * SCALE)
    set_global("SCALE", 2)
    second = math.sin(x * SCALE)
    return first, second


class Config:
    factor = 0.5


def set_factor(value):
    # (by setattr: a store inference follows, `Config.factor = value`, is joined into what
    # it infers the attribute holds, so no rewrite would rely on the float before it)
    setattr(Config, "factor", value)  # noqa: B010


def class_attribute(x):
    first = math.sin(x * Config.factor)
    set_factor(2)
    second = math.sin(x * Config.factor)
    return first, second


class Shape:
    def scale(self):
        return 0.5


def int_scale(self):
    return 2


def replace_method():
    Shape.scale = int_scale


def method_replaced(x):
    shape = Shape()
    first = math.sin(x * shape.scale())
    replace_method()
    second = math.sin(x * shape.scale())
    return first, second


mathlib = types.ModuleType("mathlib")
mathlib.sin = math.sin
mathlib.K = 0.5


def other_sin(x):
    return ("other", x)


def swap_sin():
    mathlib.sin = other_sin


def module_function(x):
    first = mathlib.sin(x)
    swap_sin()
    second = mathlib.sin(x)
    return first, second


def delete_sin():
    del mathlib.sin


def module_function_deleted(x):
    first = mathlib.sin(x)
    delete_sin()
    second = mathlib.sin(x)
    return first, second


def set_k(value):
    mathlib.K = value


def module_constant(x):
    first = x * mathlib.K
    set_k(2)
    second = x * mathlib.K
    return first, math.sin(second), type(second).__name__


def sine_of(y):
    return math.sin(y)


def direct_call_argument(x):
    first = sine_of(x * SCALE_FOR_CALLEE)
    set_global("SCALE_FOR_CALLEE", 2)
    second = sine_of(x * SCALE_FOR_CALLEE)
    return first, second


def half():
    return 0.5


def two():
    return 2


def swap_half():
    half.__code__ = two.__code__


def callee_code_swapped(x):
    first = math.sin(x * half())
    swap_half()
    second = math.sin(x * half())
    return first, second


def callee_rebound(x):
    first = math.sin(x * half())
    set_global("half", two)
    second = math.sin(x * half())
    return first, second


def make_cell_program():
    def helper():
        return 0.5

    def rebind():
        nonlocal helper
        helper = two

    def cell_rebound(x):
        first = math.sin(x * helper())
        rebind()
        second = math.sin(x * helper())
        return first, second
    return cell_rebound


def cell_rebound(x):
    return make_cell_program()(x)


def rebind_callers_local(name, value):
    # (writes through to the caller's frame on 3.13, PEP 667; on 3.11 and 3.12 the write
    # goes to a snapshot, natively and under splice alike)
    import sys

    sys._getframe(1).f_locals[name] = value


def local_callee(x):
    # the replaced call's callee is a local, read where it is called
    # (arguments that are names: the IR then calls the name itself, read at the call)
    sine = math.sin
    y = x * 0.5
    first = sine(y)
    rebind_callers_local("sine", abs)
    second = sine(y)
    return first, second


def set_cell(fn, name, value):
    # (by the cell object: a nonlocal store would be seen by inference, which then relies
    # on nothing the cell holds)
    fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents = value


def make_cell_callee_program():
    sine = math.sin

    def cell_callee(x):
        # the replaced call's callee is a closure cell, rebound by a callee
        first = sine(x * 0.5)
        set_cell(cell_callee, "sine", abs)
        second = sine(x * 0.5)
        return first, second
    return cell_callee


def cell_callee(x):
    return make_cell_callee_program()(x)
