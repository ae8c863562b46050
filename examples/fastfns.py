"""Cheaper stand-ins for math functions, for ``splice.plugins.FastMath`` (see simulate.py)."""


def fast_sin(x):
    """``sin(x)`` to its third-order Taylor term: good enough near 0."""
    return x - x**3 / 6
