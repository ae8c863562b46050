"""A 'library' module for the Tracer's module filters: it calls back into the caller's code."""

from __future__ import annotations

from collections.abc import Callable


def apply(fn: Callable[[int], int], values: list[int]) -> list[int]:
    return [step(fn, v) for v in values]


def step(fn: Callable[[int], int], value: int) -> int:
    return fn(value)
