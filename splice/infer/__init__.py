"""Inference: abstract values for every IR value (see ``splice.infer.interpreter``).

    inf = splice.infer.infer(fn, [float, int])
    inf.return_type            # an Abstract, e.g. float
    print(inf)                 # the typed IR listing
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from splice.lazy import exports

if TYPE_CHECKING:
    from splice.infer.interpreter import AbstractInterpreter, infer
    from splice.infer.lattice import (
        ANY,
        NEVER,
        Abstract,
        Const,
        Elements,
        Exact,
        Method,
        PartialTuple,
        Sub,
        Union,
        abstract,
        join,
        meet,
        narrow_is,
        narrow_isinstance,
        narrow_truth,
        narrow_type_is,
    )
    from splice.infer.results import Edge, Inference, InferenceParams

#: name -> the module defining it, imported when first read (``splice.lazy``): a module of
#: the compiler that needs the lattice alone (``splice.infer.lattice``) does not load the
#: abstract interpreter, which a plugin without typed stages never runs
_LAZY = {
    "AbstractInterpreter": "splice.infer.interpreter", "infer": "splice.infer.interpreter",
    **dict.fromkeys(("Edge", "Inference", "InferenceParams"), "splice.infer.results"),
    **dict.fromkeys(("ANY", "NEVER", "Abstract", "Const", "Elements", "Exact", "Method",
                     "PartialTuple", "Sub", "Union", "abstract", "join", "meet", "narrow_is",
                     "narrow_isinstance", "narrow_truth", "narrow_type_is"),
                    "splice.infer.lattice"),
}

__getattr__, __dir__ = exports(globals(), _LAZY)

__all__ = ["ANY", "NEVER", "Abstract", "AbstractInterpreter", "Const", "Edge", "Elements",
           "Exact", "Inference", "InferenceParams", "Method", "PartialTuple", "Sub", "Union",
           "abstract", "infer", "join", "meet", "narrow_is", "narrow_isinstance",
           "narrow_truth", "narrow_type_is"]
