"""Reflection: look at a function at each stage of the pipeline."""

from __future__ import annotations

from typing import Any

from splice.ir import generate, lower
from splice.ir.printer import Listing


def code_lowered(fn: object) -> Listing:
    """The lowered IR of ``fn``; ``str()`` gives the listing, Jupyter renders it."""
    return Listing(lower(fn))


def code_python(fn: object, *argtypes: Any, plugin: Any = None, renest: bool = True) -> str:
    """The Python source splice regenerates for ``fn``; with argument types or a plugin,
    the source generated for that code instance (after its typed and optimisation stages,
    see ``splice.compile``)."""
    if argtypes or plugin is not None:
        from splice.cache.pipeline import compile

        return str(compile(plugin, fn, *argtypes).source)
    return generate(lower(fn), renest=renest)


class TypedListing(Listing):
    """What ``splice.code_typed`` returns: the typed IR listing (every value shown with its
    abstract value, ``%3 = binop(add, %1, %2)::float``) and the inferred return type."""

    def __init__(self, instance: Any, stage: str = "typed") -> None:
        super().__init__(getattr(instance, stage))
        self.instance = instance
        self.stage = stage

    @property
    def return_type(self) -> Any:
        return self.instance.return_type

    def __str__(self) -> str:
        spec = self.instance.specialization
        header = f"# {self.stage} IR of {spec}"
        return f"{header}\n{super().__str__()}\n=> {self.instance.return_type}"


def code_typed(fn: object, *argtypes: Any, plugin: Any = None, optimize: bool = False
               ) -> TypedListing:
    """The typed IR of ``fn`` for arguments of types ``argtypes`` (classes, typing forms or
    abstract values) under ``plugin`` (after its ``typed`` hook; ``optimize=True``: after
    the optimisation stage and the ``optimized`` hook), like Julia's ``@code_typed``."""
    from splice.cache.pipeline import compile

    instance = compile(plugin, fn, *argtypes)
    return TypedListing(instance, "optimized" if optimize else "typed")
