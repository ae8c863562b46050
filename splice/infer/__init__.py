"""Inference: abstract values for every IR value (see ``splice.infer.interpreter``).

    inf = splice.infer.infer(fn, [float, int])
    inf.return_type            # an Abstract, e.g. float
    print(inf)                 # the typed IR listing
"""

from __future__ import annotations

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

__all__ = ["ANY", "NEVER", "Abstract", "AbstractInterpreter", "Const", "Edge", "Elements",
           "Exact", "Inference", "InferenceParams", "Method", "PartialTuple", "Sub", "Union",
           "abstract", "infer", "join", "meet", "narrow_is", "narrow_isinstance",
           "narrow_truth", "narrow_type_is"]
