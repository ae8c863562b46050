"""A plugin's interpreter changes inference: ``interpreter=`` is honoured."""

from __future__ import annotations

from typing import Any

from splice.infer import (
    Abstract,
    AbstractInterpreter,
    Const,
    Exact,
    InferenceParams,
    infer,
)


def slow_table(n):
    return n * n + 1


def caller():
    return slow_table(7) + 1


class PureCalls(AbstractInterpreter):
    """Treats the chosen Python functions as pure: folds their calls on constants."""

    def __init__(self, pure: set[Any]) -> None:
        super().__init__(InferenceParams())
        self.pure = pure

    def call_function(self, fn: Any, args: tuple[Abstract, ...], frame: Any = None
                      ) -> Abstract:
        if fn in self.pure and all(isinstance(a, Const) for a in args):
            return Const(fn(*(a.value for a in args)))
        return super().call_function(fn, args, frame)

    def specialize_args(self, fn: Any, args: tuple[Abstract, ...]) -> tuple[Abstract, ...]:
        return args if fn in self.pure else super().specialize_args(fn, args)


def test_default_interpreter_infers_a_class() -> None:
    assert infer(caller, []).return_type == Exact(int)


def test_custom_interpreter_folds_the_chosen_function() -> None:
    assert infer(caller, [], interpreter=PureCalls({slow_table})).return_type == Const(51)


def test_aggressive_constant_propagation_param() -> None:
    params = InferenceParams(const_prop="aggressive")
    assert infer(caller, [], params=params).return_type == Const(51)
