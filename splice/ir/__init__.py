"""splice's IR: lowering Python functions to it, verifying, printing, and generating code.

The entry points::

    ir = splice.ir.lower(fn)          # Python function -> FunctionIR
    splice.ir.verify(ir)              # check invariants (raises VerifyError)
    print(ir)                         # a readable listing
    splice.ir.generate(ir)            # IR -> Python source text
    splice.ir.compile_ir(ir)          # IR -> new function object (like fn, rebuilt)
    splice.ir.roundtrip(fn)           # all of the above in one step

The package loads the modules defining them when a name is first read (``splice.lazy``):
code that needs one small module of the package (``splice.ir.compiled``, to run code that
was built) does not load the lowering, the code generator or the nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from splice.lazy import exports

if TYPE_CHECKING:
    from splice.ir.api import compile_ir, generate, lower, roundtrip
    from splice.ir.nodes import FunctionIR
    from splice.ir.verifier import VerifyError, verify

#: name -> the module defining it, imported when first read
_LAZY = {
    **dict.fromkeys(("compile_ir", "generate", "lower", "roundtrip"), "splice.ir.api"),
    "FunctionIR": "splice.ir.nodes",
    **dict.fromkeys(("VerifyError", "verify"), "splice.ir.verifier"),
}

__getattr__, __dir__ = exports(globals(), _LAZY)

__all__ = ["FunctionIR", "VerifyError", "compile_ir", "generate", "lower", "roundtrip",
           "verify"]
