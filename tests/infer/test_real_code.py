"""Regressions found by the soundness oracle over CPython's own test modules
(``python -m splice.tools.cpython_tests --mode oracle``): each pattern of
``real_code_program.py`` is inferred and run under the oracle, which must find no value
outside its abstract value; and the abstract value is the one the pattern needs."""

from __future__ import annotations

from typing import Any

import pytest

from splice.infer import ANY, Exact, infer
from splice.infer.oracle import check_run
from tests.infer import real_code_program as P


def sound(fn: Any, argtypes: list[Any], *args: Any) -> Any:
    inference = infer(fn, argtypes)
    report = check_run(inference, fn, *args)
    assert report.raised is None, report.raised
    assert not report.violations, [str(v) for v in report.violations]
    return inference


def test_writers_reading_attributes_before_their_stores() -> None:
    """``get_blocks`` was inferred ``Never`` (its first read found no store: the writer of
    ``blocks`` read ``a`` first, whose writer ``__init__`` was never inferred)."""
    inference = sound(P.Matcher.get_blocks, [Exact(P.Matcher)], P.Matcher("abc"))
    # what it returns ([3], a list) is accepted, and it is not only None (the bug: Never)
    assert inference.return_type.accepts(P.Matcher("abc").get_blocks())
    assert not inference.return_type <= Exact(type(None))
    sound(P.blocks_of, [Exact(str)], "abcd")


@pytest.mark.parametrize("bounds", [(0, 5), (2 ** 70, 2 ** 70 + 5)], ids=["small", "long"])
def test_iterating_a_range_of_any_size(bounds: tuple[int, int]) -> None:
    sound(P.count_range, [Exact(int), Exact(int)], *bounds)


def test_super_init_of_object_is_a_method_wrapper() -> None:
    inference = sound(P.legacy_kind, [])
    assert inference.return_type.accepts("method-wrapper")


def test_an_instance_attribute_hides_a_method() -> None:
    inference = sound(P.encode_with, [Exact(int)], 5)
    assert inference.return_type.accepts("5")


def test_an_attribute_stored_by_a_function_of_the_module() -> None:
    inference = sound(P.field_name, [Exact(P.Field)], P.make_field("x"))
    assert inference.return_type.accepts("x")  # not Never (Any, or a str)
    sound(P.named_field_name, [Exact(str)], "y")


@pytest.mark.parametrize("fn", [P.either, P.either_expression], ids=["if", "ifexp"])
@pytest.mark.parametrize("args", [(b"\0", b"\3"), (b"\2", b"\0"), (b"\0", b"\0")])
def test_the_value_of_an_or_only_tested(fn: Any, args: tuple[bytes, bytes]) -> None:
    sound(fn, [Exact(bytes), Exact(bytes)], *args)


def _plain_function() -> None:
    """A function that no inner function of ``make`` below can be."""


def test_out_of_time_the_attribute_tables_are_any() -> None:
    """Past the time budget writers are not inferred: what they store is ``Any`` (it was
    ``Never`` for attributes whose writers had not been seen, and the rounds went on)."""
    from splice.infer import InferenceParams

    inference = infer(P.Matcher.get_blocks, [Exact(P.Matcher)],
                      params=InferenceParams(time_budget=0.0))
    report = check_run(inference, P.Matcher.get_blocks, P.Matcher("abc"))
    assert not report.violations, [str(v) for v in report.violations]
    assert inference.return_type is ANY


def test_a_container_filled_by_another_method() -> None:
    sorter = P.Sorter()
    sorter.add("n")
    inference = sound(P.Sorter.first, [Exact(P.Sorter)], sorter)
    assert inference.return_type.accepts(["n"])
    sound(P.sorter_first, [Exact(str)], "m")


def test_a_container_attribute_changed_by_a_function_of_the_module() -> None:
    stack = P.Stack()
    P.push(stack, 3.5)
    inference = sound(P.Stack.top, [Exact(P.Stack)], stack)
    assert inference.return_type.accepts(3.5)
    sound(P.stack_top, [Exact(float)], 2.5)


def test_a_function_made_by_a_rebuilt_copy_is_the_same_made_function() -> None:
    """json's ``py_make_scanner`` under the oracle: the ``scan_once`` it makes comes from
    a code object compiled again from the same source, which inference's ``MadeFunction``
    (found among the original's constants) must accept."""
    import splice.ir
    from splice.infer.lattice import MadeFunction

    def make(k):  # type: ignore[no-untyped-def]
        def inner(x):  # type: ignore[no-untyped-def]
            return x + k
        return inner

    original = make.__code__.co_consts[1]
    made = MadeFunction(original, globals())
    again = splice.ir.roundtrip(make, renest=False)(1)
    assert again.__code__ is not original and made.accepts(again)
    assert made.accepts(make(1)) and not made.accepts(_plain_function)


def test_attributes_stored_by_new_or_on_unknown_objects() -> None:
    """A store on an object whose class inference does not know (the ``self`` that
    ``object.__new__(cls)`` made, a parameter) may be a store on any instance."""
    number = P.SlottedNumber("-12")
    inference = sound(P.SlottedNumber.is_negative, [Exact(P.SlottedNumber)], number)
    assert inference.return_type.accepts(True)
    P.stores_on_anything(number, "odd")
    again = sound(P.SlottedNumber.is_negative, [Exact(P.SlottedNumber)], number)
    assert again.return_type.accepts(number.is_negative())


@pytest.mark.parametrize("text", ["ascii", "h\u00e9llo", "\U0001f600"])
def test_iterating_a_str_of_any_characters(text: str) -> None:
    """``iter`` of a non-ASCII str is a ``str_iterator``, not a ``str_ascii_iterator``."""
    sound(P.characters, [Exact(str)], text)


def test_a_class_attribute_bound_by_module_code_has_its_class() -> None:
    """What the class binds now, by its class (it was ``Any``: module-level code stores
    it, which made every read of it through the class unknown), and what code inference
    follows stores into it, joined."""
    from splice.infer.lattice import PartialTuple

    strength = Exact(P.Strength)
    inference = sound(P.required_and_weakest, [])
    assert inference.return_type == PartialTuple((strength, strength))
    saved = P.Strength.WEAKEST
    try:
        inference = sound(P.weakest_after_bump, [])
        assert inference.return_type.accepts(6) and inference.return_type.accepts(saved)
    finally:
        P.Strength.WEAKEST = saved
