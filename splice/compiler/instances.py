"""Which code instance runs: the context's own, one bound from what its owner keeps, or one
built now. The driver of the instance cache (``splice.cache.instances``) for contexts with
typed stages: ``callee_instance`` gives the instance a specializing entry
(``splice.runtime.specializing``) or a direct call (``splice.compiler.direct``) runs,
``compile_for`` the one ``splice.compile`` returns. The build itself is
``splice.compiler.pipeline.build_instance``, imported only when an instance is built: a
process whose instances all come from the cache on disk does not load the compiler.

Bounds (the owner's ``CompileParams``): ``max_specializations`` instances of other
specializations per code, then the generic one (every argument ``Any``); ``max_variants``
instances of one specialization for function objects whose cells inference read, then one
reading none; no more builds once the instances of a code were invalidated
``max_rebuilds`` times (``InstanceCache.rebuilt_too_often``: its calls run untyped).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from splice.cache.headroom import with_headroom
from splice.cache.instances import CodeInstance, Specialization, _lock, cache_of
from splice.compiler.reporting import reporting
from splice.errors import UnsupportedError
from splice.ir.functions import describe
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.infer.lattice import Abstract

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["callee_instance", "compile_for", "obtain"]


def _argtypes(fn: types.FunctionType, argtypes: tuple[Any, ...]) -> tuple[Abstract, ...]:
    from splice.infer.lattice import abstract

    code = fn.__code__
    if len(argtypes) > code.co_argcount:
        raise TypeError(f"{fn.__qualname__}() has {code.co_argcount} positional parameters, "
                        f"{len(argtypes)} argument types were given")
    return tuple(abstract(t) for t in argtypes)


def callee_instance(owner: Any, function: types.FunctionType,
                     types_: tuple[Abstract, ...], key: Hashable = None) -> CodeInstance:
    """The instance a direct call runs (or a specializing entry uses): specialised on
    ``types_`` (and the runtime ``key``), or the generic one (every argument ``Any``) once
    ``function``'s code has ``max_specializations`` instances of other specialisations
    (``owner.params``)."""
    cache = cache_of(owner)
    code = function.__code__
    found = cache.find(Specialization(code, types_, key), function)
    if found is not None and found.check():
        return found
    too_often = cache.rebuilt_too_often(code, owner.params.max_rebuilds)
    if too_often is not None:
        # what its instances rely on keeps changing: built no more, wherever it is called
        # from (a caller's direct call takes the ordinary call, whose entry runs the
        # function without its typed stages: splice.runtime.specializing)
        raise UnsupportedError(describe(function), too_often)
    if types_ and len({ci.argtypes for ci in cache.of_code(code)} - {()}) >= \
            owner.params.max_specializations:
        types_ = ()
    return obtain(owner, function, types_, key)


def obtain(owner: Any, function: types.FunctionType, types_: tuple[Abstract, ...],
                   key: Hashable = None, *, own: bool = False) -> CodeInstance:
    """The cached instance of ``function`` for ``types_`` under ``owner`` (shared with
    the other function objects of its code that fit it: ``CodeInstance.fits``), built if
    missing or no longer valid. ``own``: an instance built for ``function`` itself (its
    ``fn`` and ``compiled``: what ``splice.compile`` returns). Built with room on the
    stack (``splice.cache.headroom``: the lock is taken where the build runs)."""
    return with_headroom(_obtain_here, owner, function, types_, key, own)


def _obtain_here(owner: Any, function: types.FunctionType,
                        types_: tuple[Abstract, ...], key: Hashable, own: bool
                        ) -> CodeInstance:
    spec = Specialization(function.__code__, types_, key)
    cache = cache_of(owner)
    with _lock:
        found = cache.find(spec, function, own=own)
        if found is not None and found.check():
            return found
        # what another context of the owner built (splice.runtime.instance_sharing)
        shared = getattr(owner, "shared_instance", None)
        bound: CodeInstance | None = None if shared is None else reporting(
            owner, function, functools.partial(shared, function, spec))
        if bound is not None:
            cache.add(bound, built=False)
            return bound
        cell_free = cache.variants(spec) >= owner.params.max_variants
        from splice.compiler.pipeline import build_instance

        try:
            ci = build_instance(owner, function, types_, key, cell_free=cell_free)
        except RecursionError:
            # on a fresh stack when the caller had little room: the limit itself is too
            # low for splice (docs/runtime.md, "Recursion limit")
            raise UnsupportedError.recursion_limit(describe(function)) from None
        cache.add(ci)
        if shared is not None:
            owner.keep_instance(ci)
        return ci


def compile_for(owner: Any, fn: types.FunctionType, argtypes: tuple[Any, ...],
                key: Hashable = None) -> CodeInstance:
    """``splice.compile``'s instance: ``fn``'s for ``argtypes`` (classes, typing forms or
    abstract values) and ``key`` under ``owner``, cached, made for ``fn`` itself (its
    ``compiled`` made now, while ``fn`` is alive: ``invoke`` runs it)."""
    ci = obtain(owner, fn, _argtypes(fn, argtypes), key, own=True)
    ci.compiled  # noqa: B018
    return ci
