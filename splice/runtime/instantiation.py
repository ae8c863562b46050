"""How a context turns a class into its entry: its instantiation under the context.

A class whose ``__new__`` and ``__init__`` are C code runs as itself. Otherwise, calling it
runs ``type.__call__``'s steps with its Python ``__new__``/``__init__`` entered under the
context, driven from C so that no frame of splice's stands between the caller and
``__init__`` (``splice.runtime.dunders.drive``; the common case in C, ``INSTANTIATOR``).
Without per-call hooks or typed stages, a class gets a *constructor* instead: C code
(``CONSTRUCTOR``) that checks the class's slots, makes the instance and calls the
``__init__``'s entry directly, and asks for the class's entry anew when it finds the class
changed; without the C extension, ``__init__`` compiled as a constructor
(``splice.runtime.constructors``).
A metaclass ``__call__`` in Python is entered as the class's call.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from splice.compiler.sentinels import sentinel_defaults
from splice.errors import UnsupportedError
from splice.ir.compiled import CompiledCode, instantiate
from splice.pristine import BUILTINS
from splice.runtime import native
from splice.runtime.compiling import Compiling
from splice.runtime.constructors import constructor_for, eligible_init, reconstruct
from splice.runtime.context_fields import is_splice_code
from splice.runtime.dunders import Steps, drive, immutable, special
from splice.runtime.native import INSTANTIATOR

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Instantiating"]

_TYPE_CALL = type.__dict__["__call__"]


class Instantiating(Compiling):
    """A context's instantiating job: the entries of classes."""

    def _class(self, cls: type) -> tuple[Any, bool, int]:
        meta = type(cls)
        call = special(meta, "__call__")
        if type(call) is types.FunctionType:
            entry = types.MethodType(self.table[call], cls)
            return self._wrap(cls, entry), False, 0
        if call is not _TYPE_CALL:
            # a metaclass __call__ that is a staticmethod, classmethod, partialmethod,
            # bound or builtin method: the class's call runs it as type's slot binds it
            return self._wrap(cls, cls), True, int(self.hooked)
        if meta is type and all(immutable(kind) for kind in cls.__mro__):
            # a builtin or C extension class (static or immutable heap type, as 3.12's
            # typing.TypeVar): its __new__/__init__ are C code, called from the program's
            # frame (TypeVar takes its __module__ from its caller's globals)
            return self._wrap(cls, cls), True, int(self.hooked)
        if not self.hooked and not self.typed_stages:
            constructor = self._constructor(cls)
            if constructor is not None:
                return constructor, True, 1
        return self._wrap(cls, self._instantiator(cls)), True, 1

    def _constructor(self, cls: type) -> Any:
        """``cls``'s entry as C code calling its ``__init__`` compiled as a constructor
        (``splice.runtime.constructors``: no splice frame), or None where that does not
        apply (then ``_instantiator`` does it)."""
        init = eligible_init(cls)
        if init is None or init in self.intercepts or is_splice_code(init) or \
                self.decide(init) != self.plugins:
            return None
        if native.CONSTRUCTOR is not None:
            entry = self.table[init]
            # the table is watched: a change of ``init``'s code or defaults drops this entry
            self.table.constructed_by(init, cls)
            return native.CONSTRUCTOR(cls, init, entry, functools.partial(self._changed, cls))
        compiled = self.constructors.get(init, self._build_constructor)
        if isinstance(compiled, UnsupportedError):
            return None
        defaults, kwdefaults = init.__defaults__, init.__kwdefaults__
        constructor = instantiate(compiled, init)
        constructor.__defaults__, constructor.__kwdefaults__ = sentinel_defaults(
            init.__code__, defaults, kwdefaults)
        # the table is watched: a change of ``init``'s code or defaults drops this entry
        self.table.constructed_by(init, cls)
        self._record(init, True, "transformed")
        return constructor_for(constructor, cls, init, defaults, kwdefaults)

    def _changed(self, cls: type) -> Any:
        """A ``Constructor`` found its class changed: drop the class's entry and give the
        one made for it now, which the constructor calls with its caller's arguments."""
        self.table.forget(cls)
        return self.table[cls]

    def _reinstantiate(self, spec: tuple[Any, ...], positional: tuple[Any, ...],
                       varargs: tuple[Any, ...], keywords: dict[str, Any],
                       varkw: dict[str, Any] | None) -> Any:
        """A constructor found its class changed: drop the class's entry and instantiate
        it anew with the arguments its caller passed."""
        args, kwargs = reconstruct(spec, positional, varargs, keywords, varkw)
        cls = spec[0]
        self.table.forget(cls)
        return self.table[cls](*args, **kwargs)

    def _instantiator(self, cls: type) -> Callable[..., Any]:
        """What calling ``cls`` runs under the context. The common case (``__new__`` is
        ``object.__new__``, ``__init__`` a Python function) takes a short path; ``__new__``
        and ``__init__`` are looked up on every call, so replacing them is seen at once."""
        table = self.table
        function = types.FunctionType
        partial = functools.partial

        def instance_steps(*args: Any, **kwargs: Any) -> Steps:
            init: Any = special(cls, "__init__")  # as type's slot finds it, unbound
            new: Any = cls.__new__
            if type(init) is function:
                if type(new) is not function:
                    # a C __new__ (object's, or a builtin base's such as BaseException's)
                    # with the arguments, as type.__call__ passes them: object.__new__
                    # rejects them when the class's __new__ slot is not its own
                    obj: Any = yield (partial(new, cls, *args, **kwargs),)
                    kind = type(obj)
                    if kind is not cls and cls not in kind.__mro__:
                        return obj
                    if kind is not cls:
                        init = special(kind, "__init__")
                        if type(init) is not function:
                            yield (partial(init.__get__(obj, kind), *args, **kwargs),)
                            return obj
                    result = yield (partial(table[init], obj, *args, **kwargs),)
                    if result is not None:
                        raise TypeError("__init__() should return None, not "
                                        f"'{type(result).__name__}'")
                    return obj
            elif type(new) is not function:
                # no Python code to enter
                return (yield (partial(cls, *args, **kwargs),))
            return (yield from self._instantiate_steps(cls, *args, **kwargs))
        instance_steps.__qualname__ = instance_steps.__name__ = getattr(cls, "__name__",
                                                                         "instance")
        instance = drive(instance_steps)
        if INSTANTIATOR is not None:
            # the common case in C, no frame between the caller and ``__init__``
            return INSTANTIATOR(cls, table, instance)  # type: ignore[no-any-return]
        return instance

    def _instantiate_steps(self, cls: type, /, *args: Any, **kwargs: Any) -> Steps:
        """``cls(*args, **kwargs)`` as ``type.__call__`` does it, with a Python ``__new__``
        and ``__init__`` entered under this context (the steps of ``instantiate``)."""
        partial = functools.partial
        new = cls.__new__
        init = special(cls, "__init__")
        if type(new) is not types.FunctionType and type(init) is not types.FunctionType:
            return (yield (partial(type.__call__, cls, *args, **kwargs),))
        if type(new) is types.FunctionType:
            obj = yield (partial(self.table[new], cls, *args, **kwargs),)
        else:
            obj = yield (partial(new, cls, *args, **kwargs),)
        kind = type(obj)
        if cls not in kind.__mro__:
            return obj
        init = special(kind, "__init__")
        if type(init) is types.FunctionType:
            result = yield (partial(self.table[init], obj, *args, **kwargs),)
        else:
            result = yield (partial(init.__get__(obj, kind), *args, **kwargs),)
        if result is not None:
            raise TypeError(f"__init__() should return None, not '{type(result).__name__}'")
        return obj

    def _build_constructor(self, init: types.FunctionType) -> CompiledCode | UnsupportedError:
        """``init`` compiled as a constructor (``splice.runtime.constructors``)."""
        fallback = self._reinstantiate

        def as_constructor(ir: FunctionIR) -> FunctionIR:
            # (the compiler loads only if the code is built, not if it is in the cache)
            from splice.compiler.constructors import constructor_ir

            return constructor_ir(ir, fallback)
        return self._build(init, as_constructor)
