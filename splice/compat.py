"""What differs between the CPython versions splice supports (3.11, 3.12, 3.13).

Every version-specific decision of splice is made here and nowhere else: the rest of splice
imports a constant or function named by *what* differs, never ``sys.version_info``. Each item
says which CPython version changed and where that is documented ("What's New in Python 3.x"
or the PEP), so that supporting the next version is a reading of this module against the
next "What's New" page. C code keeps its ``#if PY_VERSION_HEX`` blocks together, each with
a comment (splice/runtime/_methods.c, _recurse.c, _hooks.c).
"""

from __future__ import annotations

import contextlib
import gc
import opcode
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from splice.forks import fork_safe_rlock

#: the running interpreter's (major, minor)
VERSION: tuple[int, int] = sys.version_info[:2]

JUMP_THREADING: bool = VERSION < (3, 12)
"""``(a or b) and c`` in a value context evaluates the inner op's deciding ``__bool__`` once.

3.11's flow-graph optimizer threads the inner op's ``JUMP_IF_TRUE_OR_POP`` to the outer's
``JUMP_IF_FALSE_OR_POP`` when both instructions have the same line (``jump_thread`` and the
cross-op case of ``optimize_basic_block`` compare ``i_lineno``), so ``a.__bool__`` runs once.
3.12 replaced the ``JUMP_IF_*_OR_POP`` opcodes by ``COPY``/``POP_JUMP_IF_*`` ("What's New In
Python 3.12", CPython bytecode changes) and 3.12 and 3.13 test the value again.
Used by ``splice.ir.lowering`` and ``splice.ir.codegen`` (``BoolOp.threaded``)."""


RETURN_CONST_UNLOCATED: bool = VERSION == (3, 12)
"""A function that only returns a constant without a ``return`` statement (``lambda: 1``, a
body of ``pass``) has no instruction with a located source span.

3.12 added ``RETURN_CONST`` ("What's New In Python 3.12", CPython bytecode changes): the
lambda body's ``LOAD_CONST`` and the implicit ``RETURN_VALUE`` are fused into one
instruction at the return's artificial position (the lambda's line, columns 0 to 0), where
3.11 kept the ``LOAD_CONST`` at the body's span and 3.13 places the return at the body's span.
``splice.ir.source.find_source`` then tells same-line lambdas apart by the constant returned."""


PROPERTY_ERROR_CONTEXT_VARIES: bool = VERSION >= (3, 12)
"""Whether an ``AttributeError`` raised by a property's getter, read as ``obj.attr``, gets the
``name`` and ``obj`` of the read depends on whether CPython specialized the read.

The generic ``LOAD_ATTR`` (``PyObject_GetAttr``) sets them when the error carries neither
(3.10+); the specialization ``LOAD_ATTR_PROPERTY``, added in 3.12 ("What's New In Python
3.12", PEP 659 specializations; still in 3.13), calls the getter as a frame of its own and
leaves them unset. Natively the first execution of a read sets them and later ones, once
specialized, do not. splice's regenerated code is specialized the same way (it is CPython
bytecode); a read routed through ``splice.runtime.attributes`` models the generic read.
Tests compare only the message of such errors on these versions."""


CLASSMETHOD_WRAPS_DESCRIPTORS: bool = VERSION < (3, 13)
"""Whether ``classmethod.__get__`` calls the ``__get__`` of the object it wraps (with the
class as object and owner), so ``@classmethod`` over ``@property`` makes a class property.

Added in 3.9, deprecated in 3.11 and removed in 3.13 ("What's New In Python 3.13", removed:
classmethod descriptor chaining, gh-89519): from 3.13 it always binds the wrapped object to
the class as a method. ``splice.runtime.attributes`` enters the wrapped ``__get__`` only
where CPython calls it."""


TYPE_PARAMETER_SYNTAX: bool = VERSION >= (3, 12)
"""Generic ``def``/``class`` and ``type`` statements (PEP 695, "What's New In Python 3.12"):
their annotation scopes are CPython's own, made by regenerating the statements with their
type parameters (``splice.ir.lowering``, ``splice.ir.codegen``). CPython's tests of them
(``test_type_params``, ``test_type_aliases``) exist from 3.12 and join
``splice.tools.cpython_tests.DEFAULT`` there."""


AST_CONVERSION_LOCK = fork_safe_rlock()


@contextlib.contextmanager
def ast_conversion() -> Iterator[None]:
    """Around splice's own conversions between syntax trees and Python objects
    (``ast.parse``, ``compile`` of a tree): one at a time, and no garbage collection during
    one.

    CPython 3.11 keeps the converters' recursion counter in the ``_ast`` module's state and
    sets it at the start of each conversion, so a conversion that starts while another is
    under way leaves the other's count off, which fails it with ``SystemError: AST
    constructor recursion depth mismatch`` (seen twice in a full test run, from splice's
    source lookup). Another thread can start one (the GIL switches during allocation), and
    so can the same thread: a collection during the conversion runs finalisers, and a
    finaliser entered under a plugin for the first time makes splice parse its source. So
    the conversions take a lock and run with the collector paused (a collection due then
    runs right after; natively no conversion runs at that point at all). Taken on every
    version: it costs nothing measurable next to a conversion, and which later versions
    still share the counter has not been checked."""
    with AST_CONVERSION_LOCK:
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if collecting:
                gc.enable()


NO_TYPE_PARAMS: dict[str, Any] = {"type_params": []} if VERSION >= (3, 12) else {}
"""The keyword arguments that make an ``ast.FunctionDef``, ``AsyncFunctionDef`` or
``ClassDef`` without type parameters.

3.12 added the field ``type_params`` to these nodes (PEP 695, "What's New In Python 3.12");
3.13 gives omitted optional fields their default ("What's New In Python 3.13", ast), 3.12
does not, and 3.11 has no such field. Scaffolds and functions splice makes itself have
none."""


# ----------------------------------------------------------- differences without a switch
#
# Differences that splice absorbs with code correct on every version (no constant needed),
# listed so that the next version's reader knows they were seen:
#
# * Inherited slot wrappers: from 3.13 ``BaseException``, ``types.SimpleNamespace`` and
#   ``types.ModuleType`` no longer carry ``__setattr__``/``__delattr__`` wrappers of their own
#   (their ``tp_setattro`` is inherited from ``object``, so ``vars(kind)`` lacks the names).
#   ``splice.runtime.attributes`` takes the wrappers a type has.
# * ``__set_name__`` errors: from 3.12 an exception raised by a ``__set_name__`` called by
#   ``type.__new__`` propagates as it is, with a PEP 678 note, where 3.11 wrapped it in a
#   ``RuntimeError`` ("What's New In Python 3.12", other language changes). Its traceback
#   is then the program's: ``splice.runtime.classes`` has no frame on the stack while the
#   real ``__set_name__`` runs, on every version.
# * Recursion through C callables: 3.12 counts C-level calls that re-enter the interpreter
#   against a C recursion budget of their own, separate from ``sys.getrecursionlimit()``
#   ("What's New In Python 3.12", sys: the recursion limit now applies only to Python
#   code; gh-91079). 3.12.1's budget (``Py_C_RECURSION_LIMIT`` 1500, two units a level)
#   stops recursion through any C callable between Python frames (``functools.partial``,
#   ``operator.call``) at about 750 levels, below the limit of 1000 (gh-112215, raised in
#   later releases); 3.13's is 10000. splice's own C callables give back what they spend
#   and guard the C stack themselves: that switch is C, in ``splice/runtime/_cstack.h``.
# * f-string parts (PEP 701, 3.12): the constants and fields of an f-string and of a format
#   spec carry spans of their own inside the f-string's (3.11: every part has the whole
#   f-string's span). ``splice.ir.lowering`` loads a lone constant part at its own span, which
#   is the f-string's on 3.11.
# * Inlined comprehensions (PEP 709, 3.12): list, set and dict comprehensions run in the
#   enclosing frame, so their variables are plain locals there and frame teardown order
#   shows what a hidden temporary still holds; ``splice.ir.release`` releases a temp of the
#   outermost iterable (evaluated in the enclosing scope on every version) after its
#   statement. The round trip compiles to what each version compiles, as the source does.
# * C API (3.13): ``_PyObject_GetMethod`` is still exported but no longer declared in the
#   public headers; ``splice/runtime/_methods.c`` declares it under ``#if PY_VERSION_HEX``.


DELEGATION_OPCODES: tuple[int, int, int, int] = (
    opcode.opmap["CACHE"], opcode.opmap["SEND"], opcode.opmap["YIELD_VALUE"],
    opcode.opmap["RESUME"])
"""``CACHE``, ``SEND``, ``YIELD_VALUE`` and ``RESUME``: the opcodes :func:`frame_delegates`
reads (passed to the Tracer's C recorder, ``splice/plugins/_recorder.c``, which applies the
same rule)."""


def frame_delegates(frame: types.FrameType) -> bool:
    """Whether ``frame``, a generator's, is stopped at a ``yield from`` whose subgenerator
    is running now (``frame`` is that subgenerator frame's ``f_back``).

    ``yield from`` compiles to ``SEND`` / ``YIELD_VALUE`` / ``RESUME 2`` on 3.11 to 3.13 (no
    "What's New" page states where ``f_lasti`` stops; Python/ceval.c and Objects/genobject.c
    show it). While ``next()`` or ``send()`` runs the subgenerator, ``f_lasti`` is at the
    ``SEND`` (3.11, 3.13) or at its inline cache entry (3.12, once specialised to
    ``SEND_GEN``). While ``throw()`` runs it (from C, ``gen_throw``, which links the frames
    without executing the delegating one), ``f_lasti`` is where the frame stopped: the
    ``YIELD_VALUE`` before a ``RESUME`` whose location is 2 (after ``yield from``; 3.11,
    3.12), or that ``RESUME`` (3.13; its oparg's low two bits are the location). ``close()``
    does not link the frames (``gen_close`` calls the subgenerator's ``close`` directly), so
    the delegating frame is not its ``f_back``, as ``cProfile`` sees it too."""
    code = frame.f_code.co_code
    cache, send, yield_value, resume = DELEGATION_OPCODES
    lasti = frame.f_lasti
    if lasti < 0 or lasti + 1 >= len(code):
        return False
    owner = lasti
    while owner >= 2 and code[owner] == cache:
        owner -= 2
    if code[owner] == send:
        return True
    if (code[lasti] == yield_value and lasti + 3 < len(code) and code[lasti + 2] == resume
            and code[lasti + 3] & 3 >= 2):
        return True
    return code[lasti] == resume and code[lasti + 1] & 3 >= 2


COMMAND_SOURCE_IN_LINECACHE: bool = VERSION >= (3, 13)
"""Whether ``python -c CODE`` puts CODE in ``linecache`` as ``<string>``, so tracebacks of
the program show its source lines (from 3.13; earlier versions show none).
``splice run -c`` does the same where the interpreter does, so its tracebacks equal
``python -c``'s."""


REPL_INPUT_IN_LINECACHE: bool = VERSION >= (3, 13)
"""Whether the interactive interpreter puts each statement typed at its prompt in
``linecache`` (from 3.13), so that functions typed there have a source text.

3.13's C loop (``PyRun_InteractiveLoop``, Python/pythonrun.c) compiles each statement as
``<stdin>-N`` and registers its text with ``linecache._register_code``; the new REPL
(``_pyrepl``, "What's New In Python 3.13", a better interactive interpreter) names them
``<python-input-N>`` and does the same. 3.11 and 3.12 compile every statement as
``<stdin>``, keep no text and raise no ``compile`` audit event for it: splice reads such
statements back from readline's history or a redirected stdin file
(``splice.ir.repl_sources``)."""


def _unversioned(fn: types.FunctionType) -> types.FunctionType:
    return fn


versioned: Callable[[types.FunctionType], types.FunctionType]
"""``versioned(fn)``: ``fn`` with the function version a ``def`` gives it, for a function
made by ``types.FunctionType`` once its defaults are set (splice/_functions.c).

3.13's specialising interpreter caches a Python callee by its function version, which only
``MAKE_FUNCTION`` gives (the code's ``co_version``): calls of a function made by
``types.FunctionType`` stay the generic ``CALL`` there ("What's New In Python 3.13" does not
say so; Objects/funcobject.c and Python/specialize.c show it). 3.11 and 3.12 give a version
on first use, and there this returns ``fn`` as it is; so does the Python form, without the C
extension."""
try:
    from splice._functions import versioned
except ImportError:  # built without a compiler: calls of splice's functions stay generic
    versioned = _unversioned
