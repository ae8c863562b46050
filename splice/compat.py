"""What differs between the CPython versions splice supports (3.11, 3.12, 3.13).

Every version-specific decision of splice is made here and nowhere else: the rest of splice
imports a constant or function named by *what* differs, never ``sys.version_info``. Each item
says which CPython version changed and where that is documented ("What's New in Python 3.x"
or the PEP), so that supporting the next version is a reading of this module against the
next "What's New" page. C code keeps its ``#if PY_VERSION_HEX`` blocks together, each with
a comment (splice/runtime/_methods.c, _recurse.c, _hooks.c).
"""

from __future__ import annotations

import sys

#: the running interpreter's (major, minor)
VERSION: tuple[int, int] = sys.version_info[:2]

JUMP_THREADING: bool = VERSION < (3, 12)
"""``(a or b) and c`` in a value context evaluates the inner op's deciding ``__bool__`` once.

3.11's flow-graph optimizer threads the inner op's ``JUMP_IF_TRUE_OR_POP`` to the outer's
``JUMP_IF_FALSE_OR_POP`` when both instructions have the same line (``jump_thread`` and the
cross-op case of ``optimize_basic_block`` compare ``i_lineno``), so ``a.__bool__`` runs once.
3.12 replaced the ``JUMP_IF_*_OR_POP`` opcodes by ``COPY``/``POP_JUMP_IF_*`` ("What's New In
Python 3.12", CPython bytecode changes) and 3.12 and 3.13 test the value again.
Used by ``splice.ir.lower`` and ``splice.ir.codegen`` (``BoolOp.threaded``)."""


RETURN_CONST_UNLOCATED: bool = VERSION == (3, 12)
"""A function that only returns a constant without a ``return`` statement (``lambda: 1``, a
body of ``pass``) has no instruction with a located source span.

3.12 added ``RETURN_CONST`` ("What's New In Python 3.12", CPython bytecode changes): the
lambda body's ``LOAD_CONST`` and the implicit ``RETURN_VALUE`` are fused into one
instruction at the return's artificial position (the lambda's line, columns 0 to 0), where
3.11 kept the ``LOAD_CONST`` at the body's span and 3.13 places the return at the body's span.
``splice.ir.source.find_source`` then tells same-line lambdas apart by the constant returned."""


# ----------------------------------------------------------- differences without a switch
#
# Differences that splice absorbs with code correct on every version (no constant needed),
# listed so that the next version's reader knows they were seen:
#
# * Inherited slot wrappers: from 3.13 ``BaseException``, ``types.SimpleNamespace`` and
#   ``types.ModuleType`` no longer carry ``__setattr__``/``__delattr__`` wrappers of their own
#   (their ``tp_setattro`` is inherited from ``object``, so ``vars(kind)`` lacks the names).
#   ``splice.runtime.attributes`` takes the wrappers a type has.
