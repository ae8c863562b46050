"""Annotations are strings here: nothing in them is evaluated."""

from __future__ import annotations


def annotated(x: undefined_name, *, y: also.undefined = 1) -> nope:  # noqa: F821
    z: undefined_too = x + y  # noqa: F821
    return z


def nested():
    def inner(a: missing) -> missing:  # noqa: F821
        return a

    return inner.__annotations__
