"""Task functions that ``cloudpickle`` pickles by value (the tests register this module with
``cloudpickle.register_pickle_by_value``, as Dask treats a script's ``__main__``): in a worker
their code is named ``<dynamic-code>`` and has no file."""

from __future__ import annotations


def steps(n: int) -> int:
    count = 0
    while n != 1:
        n = following(n)
        count += 1
    return count


def following(n: int) -> int:
    return n // 2 if n % 2 == 0 else 3 * n + 1
