"""The abstract interpreter: an abstract value for every IR value of a function.

``infer(fn, argtypes)`` lowers ``fn`` and runs the interpreter over its IR (the typed copy
is made for the result): statements in order, both branches of an ``if`` (narrowed by
``isinstance``, ``is None``, ``type(x) is``, truth tests), loops to a fixpoint (widening
after a few rounds), exception handlers entered from every point of their ``try`` body,
``finally`` from every exit.
Calls of known Python functions are inferred as the callee's own specialisation (recursively,
within limits) and recorded as edges; builtins go through :mod:`splice.infer.transfer` and
typeshed stubs (:mod:`splice.infer.stubs`); lists, sets and dicts are tracked per allocation
site (:mod:`splice.infer.containers`); classes and arguments are looked at without running
code (:mod:`splice.infer.objects`). Soundness first: where unsure, ``ANY``.

Plugins customise inference by subclassing :class:`AbstractInterpreter` and overriding its
documented methods (``infer_call``, ``call_builtin``, ``call_function``, ``join``,
``widen``, ``cache_key``...).
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import math
import os
import re
import sys
import time
import types
import typing
from collections.abc import Sequence
from typing import Any

import splice.ir as splice_ir
from splice.infer import transfer
from splice.infer.containers import (
    _CALLBACK_BUILTINS,
    _ELEMENT_BUILTINS,
    _NO_ELEMENT_CODE,
    ContainerTracking,
    _atomic,
    _builtin_shallow,
)
from splice.infer.lattice import (
    ANY,
    LOST_SITE_HOOK,
    NEVER,
    Abstract,
    Alloc,
    Const,
    Elements,
    Exact,
    MadeFunction,
    Method,
    PartialTuple,
    Sub,
    SuperOf,
    abstract,
    allocs,
    is_value_constant,
    join,
    narrow_is,
    narrow_isinstance,
    narrow_truth,
    narrow_type_is,
)
from splice.infer.objects import (
    ALL_NAMES,
    _attribute_readers,
    _attribute_writers,
    _bind,
    _class_of_object,
    _drop_consts,
    _exception_of,
    _is_definition,
    _is_python_class,
    _lookup,
    _object_abstract,
    join_all_,
    outside_loads,
    outside_stores,
)
from splice.infer.results import Edge, Inference, InferenceParams
from splice.infer.scopes import (
    _captured_by_inner_functions,
    _pattern_names,
    _rebound_by_inner_scopes,
)
from splice.infer.stubs import stub_return
from splice.ir import nodes as N
from splice.ir.tools import definitions, local_names
from splice.keys import hashed_by_identity
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["AbstractInterpreter", "Edge", "Inference", "InferenceParams", "infer"]


class _Unreachable(Exception):
    pass


class _State:
    """Flow-sensitive facts at a program point: values of locals and temps, and a version
    per local (narrowing by a test applies only while the tested binding is unchanged)."""

    __slots__ = ("vals", "vers")

    def __init__(self, vals: dict[Any, Abstract], vers: dict[str, int]) -> None:
        self.vals = vals
        self.vers = vers

    def copy(self) -> _State:
        return _State(dict(self.vals), dict(self.vers))


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[_State] = []
        self.continues: list[_State] = []


class _Frame:
    """The interpreter's data for one function being inferred."""

    def __init__(self, result: Inference, fn: Any, locals_: set[str]) -> None:
        self.result = result
        self.fn = fn
        self.locals = locals_
        self.returns: Abstract = NEVER
        self.yields: Abstract = NEVER
        self.loops: list[_Loop] = []
        self.tries: list[list[_State]] = []  # states at which a try body may raise
        self.finals: list[list[_State]] = []  # states leaving through a finally
        self.facts: dict[N.Temp, list[tuple[Any, int, Abstract, Abstract]]] = {}
        self.type_of: dict[N.Temp, Any] = {}
        self.edges: dict[Edge, None] = {}
        self.shared: set[str] = set()  # locals that inner scopes rebind (nonlocal)
        self.captured: set[str] = set()  # names inner functions (not comprehensions) use
        self.splats: dict[N.Temp, Abstract] = {}
        self.comp_sites: list[Abstract] = []
        self.defs: dict[N.Temp, N.Assign] | None = None


_GLOBAL_DECL = re.compile(r"^\s*global\s+(.*)$", re.M)


class AbstractInterpreter(ContainerTracking):
    """Infers functions over splice's IR. One instance keeps a cache of specialisations
    (``cache``) and of class attribute tables; reuse it to share work across ``infer`` calls.
    What it keeps holds every class and function it looked at (their inferences mention
    them), until ``forget()``; splice calls it when the last compile using the instance on
    a thread ends (``splice.compiler.inference.using``), so a plugin's interpreter, which
    lives as long as the plugin, keeps nothing from one compile to the next.

    Overridable methods (a plugin's interpreter subclasses this):

    * ``infer_call(fn_abs, args, kwargs, frame)`` — the result of any call;
    * ``call_function(fn, args)`` — a call of a known Python function (specialise, recurse);
    * ``call_builtin(fn, args, kwargs)`` — a builtin or C callable (folding, transfer, stubs);
    * ``is_pure(fn)`` — whether a callable may be folded on constant arguments;
    * ``join(a, b)`` / ``widen(old, new)`` — how results merge and how loops converge;
    * ``specialize_args(fn, args)`` — the argument types a callee is specialised on;
    * ``cache_key(fn, args)`` / ``should_cache(inference)`` — what gets cached.
    """

    def __init__(self, params: InferenceParams | None = None) -> None:
        self.params = params or InferenceParams()
        AbstractInterpreter.forget(self)  # (not a subclass's: its own state is not set yet)

    def forget(self) -> None:
        """Drop everything learned by earlier ``infer`` calls (specialisations, attribute
        tables, allocation sites, lowered IR): the next ``infer`` starts afresh, and the
        classes and functions looked at are no longer held. Not while an ``infer`` runs.

        Nothing finer can let a class go: the abstract values kept everywhere
        (specialisations' arguments, attribute tables, sites) hold their classes, so
        weak keys (``splice.infer.objects._ByIdentity``) would still lead back to them."""
        self.cache: dict[Any, Inference] = {}
        self._lowered: dict[Any, N.FunctionIR | None] = {}
        self._pending: dict[Any, list[Any]] = {}  # key -> [assumed return, used?]
        self._used_pending: set[Any] = set()
        self._specs: dict[Any, set[tuple[Abstract, ...]]] = {}
        self._depth = 0
        self._deadline = math.inf
        self._global_decls: dict[str, frozenset[str]] = {}
        self.attr_table: dict[type, dict[str, Abstract]] = {}
        self._attr_reads: set[tuple[type, str]] = set()
        self._attr_changed = False
        #: names stored on objects whose class inference does not know (``x.name = v``
        #: with ``x`` Any, or the ``self`` a ``__new__`` made): any instance may hold them
        self._unknown_stores: set[str] = set()
        #: the tables were given up (``Any``) in the ``infer`` under way
        self._given_up = False
        self._seen_self: set[tuple[Any, Abstract]] = set()
        #: what the containers made at each allocation site hold (see ``write_site``)
        self.sites: dict[Any, Abstract] = {}
        #: sites whose containers reached code inference does not see
        self.escaped: set[Any] = set()
        self.escaped_classes: set[type] = set()
        self._site_reads: set[Any] = set()
        self._site_hint: Any = None
        self._templates: dict[tuple[types.CodeType, int], types.FunctionType] = {}

    # ------------------------------------------------------------------ entry points

    def infer(self, fn: Any, argtypes: Sequence[Any]) -> Inference:
        """Infer ``fn`` for positional ``argtypes`` (classes, typing forms, ``Abstract``)."""
        args = tuple(abstract(t) for t in argtypes)
        start = time.perf_counter()
        self._deadline = start + self.params.time_budget
        self._given_up = False
        result: Inference | None = None
        # the sites this run's joins forget escape this run's tracking (see LOST_SITE_HOOK)
        reporting = LOST_SITE_HOOK.set(self.escape)
        try:
            for _ in range(self.params.attribute_rounds):
                self._attr_changed = False
                self._attr_reads.clear()
                self._site_reads.clear()
                # writers inferred in an earlier round saw smaller tables: infer them again
                self._seen_self.clear()
                result = self._infer_function(fn, args, top=True)
                self._infer_unseen_writers()
                if not self._attr_changed:
                    break
                self.cache.clear()  # tables grew after a read: infer again
                if time.perf_counter() > self._deadline:
                    # out of time: one last round with every table Any (callees are no
                    # longer entered, so it is quick)
                    self._give_up_tables()
                    result = self._infer_function(fn, args, top=True)
                    break
            else:
                self._give_up_tables()
                result = self._infer_function(fn, args, top=True)
        finally:
            LOST_SITE_HOOK.reset(reporting)
        assert result is not None
        if result._ir is None:
            # the typed copy of the entry is made now: the lowered IR it copies may be
            # rewritten by the caller afterwards (callees' copies are made on first use)
            result._materialize()
        result.time = time.perf_counter() - start
        return result

    def _give_up_tables(self) -> None:
        """Every attribute table and allocation site ``Any`` (tables still growing after
        ``attribute_rounds`` rounds, or the time budget spent)."""
        for table in self.attr_table.values():
            for name in table:
                table[name] = ANY
        self._given_up = True
        self.escaped.update(self.sites)
        self.cache.clear()

    def _infer_unseen_writers(self) -> None:
        """Methods that store an attribute that was read but were not inferred on that
        class: infer them now (other arguments ``ANY``) so their stores are seen. Until no
        new attribute is read: a writer may read another attribute before its store (whose
        own writers, ``__init__`` say, must then be inferred too, or that read is ``Never``
        and the store is never reached)."""
        done: set[tuple[type, str]] = set()
        while True:
            todo = [read for read in list(self._attr_reads) if read not in done]
            if not todo:
                return
            done.update(todo)
            for cls, name in todo:
                self._infer_writers(cls, name)

    def _infer_writers(self, cls: type, name: str) -> None:
        if time.perf_counter() > self._deadline:
            # out of time: what the writers store is not known
            table = self.attr_table.setdefault(cls, {})
            if table.get(name) is not ANY:
                table[name] = ANY
                self._attr_changed = True
            return
        functions = list(_attribute_writers(cls, name))
        if allocs(self.attr_table.get(cls, {}).get(name, NEVER)):
            # it holds a container: the methods reading it may change it
            functions.extend(f for f in _attribute_readers(cls, name)
                             if f not in functions)
        for fn in functions:
            if any(fn is f and a.exact_class is cls for f, a in self._seen_self):
                continue
            ir = self.lowered(fn)
            if ir is None:
                self.attr_table.setdefault(cls, {})[name] = ANY
                self._attr_changed = True
                continue
            nparams = len(ir.args.names())
            if nparams == 0:
                continue
            # a ``__new__`` receives the class and makes the instance itself
            first: Abstract = Const(cls) if fn.__name__ == "__new__" else Exact(cls)
            args = (first,) + (ANY,) * (nparams - 1)
            self._seen_self.add((fn, args[0]))
            self._infer_function(fn, args)

    # ------------------------------------------------------------------ overridables

    def join(self, a: Abstract, b: Abstract) -> Abstract:
        """Merge two values reaching the same point."""
        return join(a, b, self.params.union_width)

    def widen(self, old: Abstract, new: Abstract) -> Abstract:
        """A loop value still growing after ``loop_widen_after`` rounds: widen it."""
        joined = self.join(old, new)
        if joined == old:
            return old
        result = NEVER
        for m in joined.members():
            if isinstance(m, (Const, PartialTuple, Elements, Method, MadeFunction)):
                m = m.widen()
            result = join(result, m, self.params.union_width)
        return result

    def is_pure(self, fn: Any) -> bool:
        """Whether calls of ``fn`` on constants may be folded (run at inference time)."""
        return fn in transfer.PURE_BUILTINS

    def specialize_args(self, fn: Any, args: tuple[Abstract, ...]) -> tuple[Abstract, ...]:
        """The argument types ``fn`` is specialised on: constants are kept only for callables
        (or everywhere under aggressive constant propagation); past
        ``max_specializations`` the arguments are widened."""
        if self.params.const_prop != "aggressive":
            args = tuple(_drop_consts(a) for a in args)
        known = self._specs.setdefault(fn, set())
        if args not in known:
            if len(known) >= self.params.max_specializations * 2:
                args = tuple(ANY for _ in args)
            elif len(known) >= self.params.max_specializations:
                args = tuple(a.widen() if not isinstance(a, (Exact, Sub)) else a
                             for a in args)
            known.add(args)
        return args

    def cache_key(self, fn: Any, args: tuple[Abstract, ...]) -> Any:
        """The key a specialisation is cached under."""
        return (fn, args)

    def should_cache(self, inference: Inference) -> bool:
        """Whether to keep ``inference`` in the cache (default: always)."""
        return True

    def call_builtin(self, fn: Any, args: list[Abstract], kwargs: dict[str, Abstract]
                     ) -> Abstract:
        """A call of a builtin or other non-Python callable: transfer functions (with
        folding for pure builtins), then the typeshed stub, else ``ANY``. Containers
        passed in escape unless the builtin only reads plain data from them."""
        if fn in _NO_ELEMENT_CODE:
            inert = all(_builtin_shallow(a) for a in (*args, *kwargs.values()))
        else:
            inert = all(self.inert(a) for a in (*args, *kwargs.values()))
        proxied = [self._proxy(a) for a in args]
        result = self._materialize(fn, self._call_builtin(fn, proxied, kwargs), proxied, args,
                                   kwargs)
        if not inert:
            for a in (*args, *kwargs.values()):
                self.escape(a)
        elif fn not in _ELEMENT_BUILTINS and not _atomic(result):
            kept = allocs(result)
            for a in (*args, *kwargs.values()):
                for cls, site in allocs(a) - kept:
                    self.escape(Alloc(cls, (site,)))
        return result






    def _call_builtin(self, fn: Any, args: list[Abstract], kwargs: dict[str, Abstract]
                      ) -> Abstract:
        fold = self.params.const_prop != "none" and self.is_pure(fn)
        if (fold and fn not in transfer.PURE_BUILTINS and not kwargs and all(
                isinstance(a, Const) for a in args)):
            folded = transfer.fold(fn, *(a.value for a in args))
            if folded is not None:
                return folded
        try:
            result = transfer.call_builtin(fn, args, kwargs, fold)
        except Exception:
            result = None
        if result is not None:
            return result
        if getattr(fn, "__module__", None) == "builtins" or isinstance(
                fn, (types.BuiltinFunctionType, types.MethodDescriptorType)):
            stub = stub_return(fn)
            if stub is not None:
                return stub
        return ANY

    def call_function(self, fn: types.FunctionType, args: tuple[Abstract, ...],
                      frame: _Frame | None = None, *, relied_on: bool = True) -> Abstract:
        """A call of the Python function ``fn`` with positional ``args`` (bound already):
        infer its specialisation, record the edge (unless not ``relied_on``: a template of
        a nested ``def``, which no program code can reach to change), give its return
        value (for generators, the generator object)."""
        if frame is not None and relied_on:
            frame.edges[Edge("callee", fn)] = None
        code = fn.__code__
        if (code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
                             | inspect.CO_ITERABLE_COROUTINE)
                or self._depth >= self.params.max_depth
                or time.perf_counter() > self._deadline):
            return self.opaque(args)
        args = self.specialize_args(fn, args)
        inference = self._infer_function(fn, args)
        if inference is None:
            return self.opaque(args)
        if frame is not None and not any(
                i is inference for i in frame.result.callee_inferences):
            frame.result.callee_inferences.append(inference)
        if code.co_flags & inspect.CO_GENERATOR:
            return Elements(types.GeneratorType, inference.yield_type)
        return inference.return_type

    def infer_call(self, func: Abstract, args: list[Abstract], kwargs: dict[str, Abstract],
                   frame: _Frame, stmt: N.Assign | None = None) -> Abstract:
        """The result of calling ``func`` (abstract) with abstract arguments."""
        if func is NEVER or any(a is NEVER for a in args):
            return NEVER
        if len(func.members()) > 1:  # one of a few callees: join their results
            result = NEVER
            for member in func.members():
                result = self.join(result, self.infer_call(member, args, kwargs, frame))
            return result
        if isinstance(func, Const):
            target = func.value
            if stmt is not None:
                frame.result.callees[stmt.id] = target
            if hashed_by_identity(target) and target in _CALLBACK_BUILTINS:
                called = self.native_callbacks(target, args, kwargs, frame)
                if called is not None:
                    return called
            if isinstance(target, types.FunctionType):
                bound = _bind(target, args, kwargs)
                if bound is None:
                    return self.opaque([*args, *kwargs.values()])
                return self.call_function(target, bound, frame)
            if isinstance(target, type):
                return self.instantiate(target, args, kwargs, frame)
            if isinstance(target, types.MethodType) and isinstance(
                    target.__func__, types.FunctionType):
                return self.infer_call(Method(target.__func__, _object_abstract(
                    target.__self__)), args, kwargs, frame)
            return self.call_builtin(target, args, kwargs)
        if isinstance(func, MadeFunction):
            template = self._template(func)
            bound = _bind(template, args, kwargs, defaults=func.defaults,
                          kwdefaults=dict(func.kwdefaults))
            if bound is None:
                return self.opaque([*args, *kwargs.values()])
            # the function is made from the inferred code's own constants, its defaults
            # are the values above: nothing of the template itself is relied on
            return self.call_function(template, bound, frame, relied_on=False)
        if isinstance(func, Method):
            if isinstance(func.func, types.FunctionType):
                if stmt is not None:
                    frame.result.callees[stmt.id] = func.func
                bound = _bind(func.func, [func.receiver, *args], kwargs)
                if bound is None:
                    return self.opaque([func.receiver, *args, *kwargs.values()])
                return self.call_function(func.func, bound, frame)
            return self.call_builtin_method(func.func, func.receiver, args, kwargs)
        return self.opaque([func, *args, *kwargs.values()])

    def made_function(self, fir: N.FunctionIR, defaults: list[N.Operand],
                      kwdefaults: list[N.Operand | None], state: _State, frame: _Frame
                      ) -> MadeFunction | None:
        """The function a ``def`` or ``lambda`` of the function being inferred makes (None
        if its code object cannot be told apart among the nested ones)."""
        code = _nested_code(frame.fn.__code__, fir)
        if code is None:
            return None
        kwonly = fir.args.kwonly
        return MadeFunction(
            code, frame.fn.__globals__, [self.value(d, state, frame) for d in defaults],
            [(name, self.value(d, state, frame))
             for name, d in zip(kwonly, kwdefaults, strict=False) if d is not None])

    def _template(self, made: MadeFunction) -> types.FunctionType:
        """A function object of ``made``'s code, with empty cells (inference reads its free
        variables as ``Any``), one per code and globals: what a call of it is inferred as."""
        key = (made.code, id(made.globals))
        found = self._templates.get(key)
        if found is None:
            code = made.code
            found = types.FunctionType(code, made.globals, code.co_name, None,
                                       tuple(types.CellType() for _ in code.co_freevars))
            found.__qualname__ = code.co_qualname
            self._templates[key] = found
        return found

    def call_builtin_method(self, descriptor: Any, receiver: Abstract, args: list[Abstract],
                            kwargs: dict[str, Abstract]) -> Abstract:
        """A method of a builtin class (``str.join``...) called on ``receiver``; list and
        set methods update the receiver's allocation sites."""
        name = getattr(descriptor, "__name__", "")
        cls = receiver.exact_class
        if isinstance(receiver, Alloc) and cls is dict:
            result = self.dict_method(name, receiver, args, kwargs)
            if result is not None:
                return result
        elif cls in (list, set) or isinstance(receiver, Alloc):
            result = self.container_method(name, receiver, args, kwargs)
            if result is not None:
                return result
        everything = (receiver, *args, *kwargs.values())
        if descriptor in _NO_ELEMENT_CODE:
            if not all(_builtin_shallow(a) for a in everything):
                return self.opaque(everything)
        elif not all(self.inert(a) for a in everything):
            return self.opaque(everything)
        result = self._builtin_method(descriptor, receiver, args, kwargs)
        if not _atomic(result):
            kept = allocs(result)
            for a in everything:
                for klass, site in allocs(a) - kept:
                    self.escape(Alloc(klass, (site,)))
        return self._materialize(descriptor, result, args)



    def _builtin_method(self, descriptor: Any, receiver: Abstract, args: list[Abstract],
                        kwargs: dict[str, Abstract]) -> Abstract:
        if (self.params.const_prop != "none" and isinstance(receiver, Const)
                and is_value_constant(receiver.value) and not kwargs
                and all(isinstance(a, Const) and is_value_constant(a.value) for a in args)
                and type(receiver.value) in (str, bytes, int, float, tuple)):
            folded = transfer.fold(descriptor, receiver.value, *(a.value for a in args))
            if folded is not None:
                return folded
        stub = stub_return(descriptor)
        return ANY if stub is None else stub

    def instantiate(self, cls: type, args: list[Abstract], kwargs: dict[str, Abstract],
                    frame: _Frame) -> Abstract:
        """``cls(*args, **kwargs)``: builtin classes by transfer rules; user classes with
        the default metaclass and ``__new__`` give ``Exact(cls)`` after inferring
        ``__init__``."""
        if cls.__module__ == "builtins" or not _is_python_class(cls):
            return self.call_builtin(cls, args, kwargs)
        if type(cls) is not type or _lookup(cls, "__new__") is not object.__new__:
            return self.opaque([*args, *kwargs.values()])
        _attribute_edges(frame, cls, "__init__")
        init = _lookup(cls, "__init__")
        instance = Exact(cls)
        if isinstance(init, types.FunctionType):
            bound = _bind(init, [instance, *args], kwargs)
            if bound is not None and self.call_function(init, bound, frame) is NEVER:
                return NEVER
        elif init is not object.__init__:
            return self.opaque([*args, *kwargs.values()])
        return instance

    # ------------------------------------------------------------------ containers








    # ------------------------------------------------------------------ functions

    def lowered(self, fn: Any) -> N.FunctionIR | None:
        """The lowered IR of ``fn`` (cached), or ``None`` if it cannot be lowered."""
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        key = (fn, code)
        if key not in self._lowered:
            try:
                ir: N.FunctionIR | None = splice_ir.lower(fn)
            except Exception:
                ir = None
            if ir is not None and sum(1 for _ in ir.walk()) > self.params.max_statements:
                ir = None
            self._lowered[key] = ir
        return self._lowered[key]

    def _infer_function(self, fn: Any, args: tuple[Abstract, ...], top: bool = False
                        ) -> Inference | None:
        key = self.cache_key(fn, args)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        pending = self._pending.get(key)
        if pending is not None:
            pending[1] = True
            self._used_pending.add(key)
            stub = Inference(fn, args, pending[2])
            stub.return_type = pending[0]
            stub.yield_type = pending[3]
            return stub
        base = self.lowered(fn)
        if base is None:
            if top:
                raise ValueError(f"cannot infer {fn!r}: no IR")
            return None
        if args:
            self._seen_self.add((fn, args[0]))
        entry: list[Any] = [NEVER, False, base, NEVER]
        self._pending[key] = entry
        outer_used = self._used_pending
        self._depth += 1
        try:
            result = None
            for round_ in range(self.params.max_rounds + 1):
                self._used_pending = set()
                result = self._run(fn, base, args)
                used = entry[1]
                if not used:
                    break
                grown = not (result.return_type <= entry[0]
                             and result.yield_type <= entry[3])
                if not grown:
                    break
                entry[1] = False
                if round_ >= self.params.max_rounds - 1:
                    entry[0], entry[3] = ANY, ANY
                else:
                    entry[0] = self.join(entry[0], result.return_type)
                    entry[3] = self.join(entry[3], result.yield_type)
        finally:
            self._depth -= 1
            del self._pending[key]
        assert result is not None
        self._used_pending.discard(key)
        provisional = bool(self._used_pending)
        outer_used |= self._used_pending
        self._used_pending = outer_used
        if not provisional and self.should_cache(result):
            self.cache[key] = result
        return result

    def _run(self, fn: Any, base: N.FunctionIR, args: tuple[Abstract, ...]) -> Inference:
        start = time.perf_counter()
        ir = base
        result = Inference(fn, args, base)
        frame = _Frame(result, fn, local_names(ir) | set(ir.args.names()))
        frame.shared = _rebound_by_inner_scopes(ir)
        frame.captured = _captured_by_inner_functions(ir)
        for stmt in ir.walk():
            if isinstance(stmt, N.Try):
                frame.locals.update(h.name for h in stmt.handlers if h.name)
            elif isinstance(stmt, N.Match):
                for case in stmt.cases:
                    frame.locals.update(_pattern_names(case.pattern))
        state = _State({}, {})
        names = ir.args.names()
        for i, name in enumerate(names):
            state.vals[name] = args[i] if i < len(args) else ANY
            if name in frame.captured:
                self.escape(state.vals[name])
        try:
            end = self.exec_block(ir.body, state, frame)
        except _Unreachable:
            end = None
        if end is not None:
            frame.returns = self.join(frame.returns, Const(None))
        result.return_type = frame.returns
        result.yield_type = frame.yields
        result.edges = list(frame.edges)
        result.time = time.perf_counter() - start
        return result

    # ------------------------------------------------------------------ statements

    def join_states(self, states: Sequence[_State | None]) -> _State | None:
        """Merge the states of several paths (``None``: a path that does not arrive)."""
        live = [s for s in states if s is not None]
        if not live:
            return None
        if len(live) == 1:
            return live[0].copy()
        keys = set(live[0].vals)
        for s in live[1:]:
            keys &= set(s.vals)  # a local missing on one path may be unbound there
        vals: dict[Any, Abstract] = {}
        for k in keys:
            value = live[0].vals[k]
            for s in live[1:]:
                value = self.join(value, s.vals[k])
            vals[k] = value
        for s in live:
            for k in s.vals.keys() - keys:
                if isinstance(k, str):
                    vals[k] = self.join(vals.get(k, NEVER), s.vals[k])
        vers: dict[str, int] = {}
        for k in set().union(*(s.vers for s in live)):
            v = live[0].vers.get(k, 0)
            # bindings that differ between the paths get a new version: a test made on
            # one of them says nothing about the merged binding
            vers[k] = v if all(s.vers.get(k, 0) == v for s in live[1:]) else next(_VERSIONS)
        return _State(vals, vers)

    def exec_block(self, block: list[N.Stmt], state: _State | None, frame: _Frame
                   ) -> _State | None:
        """Run the statements of ``block`` from ``state``; the state after it (``None`` if
        control never falls through)."""
        for stmt in block:
            if state is None:
                return None
            if frame.tries:
                frame.tries[-1].append(state.copy())
            state = self.exec_stmt(stmt, state, frame)
        return state

    def exec_stmt(self, stmt: N.Stmt, state: _State, frame: _Frame) -> _State | None:
        """Run one statement."""
        if isinstance(stmt, N.Assign):
            return self.exec_assign(stmt, state, frame)
        if isinstance(stmt, N.Store):
            self.store(state, frame, stmt.var.name, self.value(stmt.value, state, frame))
            return state
        if isinstance(stmt, N.If):
            yes, no = self.branch(stmt.test, state, frame)
            return self.join_states([self.exec_block(stmt.body, yes, frame),
                                     self.exec_block(stmt.orelse, no, frame)])
        if isinstance(stmt, (N.While, N.For)):
            return self.exec_loop(stmt, state, frame)
        if isinstance(stmt, N.Try):
            return self.exec_try(stmt, state, frame)
        if isinstance(stmt, N.With):
            return self.exec_with(stmt, state, frame)
        if isinstance(stmt, N.Return):
            value = Const(None) if stmt.value is None else self.value(stmt.value, state, frame)
            frame.returns = self.join(frame.returns, value)
            self._leave_finally(state, frame)
            return None
        if isinstance(stmt, N.Raise):
            for operand in stmt.operands():
                self.value(operand, state, frame)
            return None
        if isinstance(stmt, (N.Break, N.Continue)):
            if frame.loops:
                loop = frame.loops[-1]
                (loop.breaks if isinstance(stmt, N.Break) else loop.continues).append(state)
            self._leave_finally(state, frame)
            return None
        if isinstance(stmt, N.Assert):
            after = self.exec_block(stmt.test.body, state, frame)
            if after is None:
                return None
            yes, _no = self.branch(stmt.test.value, after, frame)
            if stmt.msg is not None:
                self.exec_block(stmt.msg.body, _no, frame)
            return self.join_states([yes, after]) if sys.flags.optimize else yes
        if isinstance(stmt, N.Match):
            self.value(stmt.subject, state, frame)
            outs: list[_State | None] = [state.copy()]
            for case in stmt.cases:
                entry = state.copy()
                for name in _pattern_names(case.pattern):
                    self.store(entry, frame, name, ANY)
                guarded: _State | None = entry
                if case.guard is not None:
                    guarded = self.exec_block(case.guard.body, entry, frame)
                outs.append(self.exec_block(case.body, guarded, frame))
            return self.join_states(outs)
        if isinstance(stmt, (N.DeleteVar,)):
            state.vals.pop(stmt.var.name, None)
            self._bump(state, frame, stmt.var.name)
            return state
        if isinstance(stmt, (N.Import, N.ImportFrom)):
            for name, alias in stmt.names:
                bound = alias or name.split(".")[0]
                if bound != "*":
                    self.store(state, frame, bound, ANY)
            return state
        if isinstance(stmt, (N.FunctionDef, N.ClassDef)):
            for operand in stmt.operands():
                self.value(operand, state, frame)
            kind = types.FunctionType if isinstance(stmt, N.FunctionDef) else type
            value = Exact(kind) if not stmt.decorators else ANY
            if isinstance(stmt, N.FunctionDef) and not stmt.decorators \
                    and not stmt.fn.type_params:  # (a generic one closes over its params)
                value = self.made_function(stmt.fn, stmt.defaults, stmt.kwdefaults, state,
                                           frame) or value
            self.store(state, frame, stmt.fn.name, value)
            return state
        if isinstance(stmt, N.TypeAlias):
            # (``typing.TypeAliasType``, 3.12+: the only versions that parse the statement)
            alias_type = getattr(typing, "TypeAliasType", None)
            self.store(state, frame, stmt.var.name, ANY if alias_type is None
                       else Exact(alias_type))
            return state
        if isinstance(stmt, (N.Declare, N.Pass, N.AnnotateName)):
            return state
        return state

    def store(self, state: _State, frame: _Frame, name: str, value: Abstract) -> None:
        """Bind a local name (a value stored where inner functions or other modules can
        reach it escapes)."""
        if name not in frame.locals or name in frame.captured or name in frame.shared:
            self.escape(value)
        state.vals[name] = value
        self._bump(state, frame, name)

    def _bump(self, state: _State, frame: _Frame, name: str) -> None:
        state.vers[name] = next(_VERSIONS)

    def _leave_finally(self, state: _State, frame: _Frame) -> None:
        for finals in frame.finals:
            finals.append(state.copy())

    def exec_loop(self, stmt: N.While | N.For, state: _State, frame: _Frame
                  ) -> _State | None:
        """A loop: iterate the body until the head state stops growing (widening after
        ``loop_widen_after`` rounds)."""
        head: _State | None = state
        elem = NEVER
        if isinstance(stmt, N.For):
            elem = self.next_value(self.value(stmt.iterator, state, frame), frame)
        exits: list[_State | None] = []
        loop = _Loop()
        for round_ in range(self.params.loop_widen_after + 8):
            assert head is not None
            loop = _Loop()
            frame.loops.append(loop)
            try:
                if isinstance(stmt, N.While):
                    tested = self.exec_block(stmt.test.body, head.copy(), frame)
                    if tested is None:
                        yes = no = None
                    else:
                        yes, no = self.branch(stmt.test.value, tested, frame)
                else:
                    yes = head.copy()
                    no = head.copy()
                    if elem is NEVER:
                        yes = None
                    else:
                        self.set_temp(stmt.target, elem, yes, frame)
                end = self.exec_block(stmt.body, yes, frame)
            finally:
                frame.loops.pop()
            exits = [no, *loop.breaks]
            new_head = self.join_states([state, end, *loop.continues])
            assert new_head is not None
            if self._state_leq(new_head, head):
                break
            if round_ >= self.params.loop_widen_after:
                give_up = round_ >= self.params.loop_widen_after + 4
                for k, v in new_head.vals.items():
                    old = head.vals.get(k)
                    if old is not None and v != old:
                        new_head.vals[k] = ANY if give_up else self.widen(old, v)
            head = new_head
        no_exit = exits[0]
        orelse = self.exec_block(stmt.orelse, no_exit, frame) if no_exit is not None else None
        return self.join_states([orelse, *exits[1:]])

    def _state_leq(self, a: _State, b: _State) -> bool:
        for k, v in a.vals.items():
            old = b.vals.get(k)
            if old is None or not (v <= old):
                return False
        return True

    def exec_try(self, stmt: N.Try, state: _State, frame: _Frame) -> _State | None:
        """``try``: handlers start from any state of the body; ``finally`` from every exit."""
        raising: list[_State] = [state.copy()]
        finals: list[_State] = []
        if stmt.finalbody:
            frame.finals.append(finals)
        frame.tries.append(raising)
        try:
            body_end = self.exec_block(stmt.body, state, frame)
        finally:
            frame.tries.pop()
        handler_entry = None if not stmt.handlers else self.join_states(raising)
        handler_raising: list[_State] = []
        frame.tries.append(handler_raising)
        try:
            outs: list[_State | None] = [self.exec_block(stmt.orelse, body_end, frame)]
            for handler in stmt.handlers:
                entry = handler_entry.copy() if handler_entry is not None else None
                if entry is not None and handler.type is not None:
                    entry = self.exec_block(handler.type.body, entry, frame)
                    if entry is not None and handler.name:
                        exc = self.value(handler.type.value, entry, frame)
                        self.store(entry, frame, handler.name, _exception_of(exc))
                outs.append(self.exec_block(handler.body, entry, frame))
        finally:
            frame.tries.pop()
        if frame.tries:
            frame.tries[-1].extend(raising + handler_raising)
        normal = self.join_states(outs)
        if not stmt.finalbody:
            return normal
        frame.finals.pop()
        entry_state = self.join_states([normal, *raising, *handler_raising, *finals])
        out = self.exec_block(stmt.finalbody, entry_state, frame)
        if out is None or normal is None:
            return None
        return out

    def exec_with(self, stmt: N.With, state: _State, frame: _Frame) -> _State | None:
        """``with``: the body may stop anywhere if ``__exit__`` swallows an exception."""
        self.escape(self.value(stmt.manager, state, frame))
        if stmt.target is not None:
            self.set_temp(stmt.target, ANY, state, frame)
        points: list[_State] = [state.copy()]
        frame.tries.append(points)
        try:
            end = self.exec_block(stmt.body, state, frame)
        finally:
            frame.tries.pop()
        if frame.tries:
            frame.tries[-1].extend(points)
        return self.join_states([end, *points])

    # ------------------------------------------------------------------ branching

    def branch(self, test: N.Operand, state: _State, frame: _Frame
               ) -> tuple[_State | None, _State | None]:
        """The states where ``test`` is true and where it is false (narrowed)."""
        value = self.value(test, state, frame)
        for m in value.members():
            cls = m.exact_class
            if cls is not None and _is_python_class(cls) and (
                    _lookup(cls, "__bool__") is not None or _lookup(cls, "__len__") is not None):
                self.escape(m)  # the truth test runs its __bool__/__len__
        yes_v, no_v = narrow_truth(value)
        yes: _State | None = state.copy() if yes_v is not NEVER else None
        no: _State | None = state.copy() if no_v is not NEVER else None
        if isinstance(test, (N.Var, N.Temp)):
            key = test.name if isinstance(test, N.Var) else test
            if isinstance(test, N.Temp) or test.name in frame.locals:
                if yes is not None:
                    yes.vals[key] = yes_v
                if no is not None:
                    no.vals[key] = no_v
        if isinstance(test, N.Temp):
            for key, version, true_v, false_v in frame.facts.get(test, ()):
                for target, narrowed in ((yes, true_v), (no, false_v)):
                    if target is None:
                        continue
                    if isinstance(key, str) and target.vers.get(key, 0) != version:
                        continue
                    old = target.vals.get(key)
                    if old is not None:
                        target.vals[key] = narrowed
                if isinstance(key, str):
                    if yes is not None and true_v is NEVER and yes.vers.get(key, 0) == version:
                        yes = None
                    if no is not None and false_v is NEVER and no.vers.get(key, 0) == version:
                        no = None
        return yes, no

    def _fact(self, frame: _Frame, state: _State, result: N.Temp, subject: N.Operand,
              split: tuple[Abstract, Abstract], negate: bool = False) -> None:
        key: Any
        if isinstance(subject, N.Var):
            if subject.name not in frame.locals:
                return
            key = subject.name
        elif isinstance(subject, N.Temp):
            key = subject
        else:
            return
        yes, no = split
        if negate:
            yes, no = no, yes
        version = state.vers.get(key, 0) if isinstance(key, str) else 0
        frame.facts.setdefault(result, []).append((key, version, yes, no))

    # ------------------------------------------------------------------ operations

    def set_temp(self, temp: N.Temp, value: Abstract, state: _State | None, frame: _Frame
                 ) -> None:
        """Assign a temp (its annotation is the join over every assignment)."""
        if state is not None:
            state.vals[temp] = value
        types_ = frame.result.base_types
        old = types_.get(temp)
        types_[temp] = value if old is None else self.join(old, value)

    def exec_assign(self, stmt: N.Assign, state: _State, frame: _Frame) -> _State | None:
        op = stmt.op
        self._site_hint = (frame.fn, stmt.id)
        if isinstance(op, N.Unpack):
            values = self.unpack(self.value(op.value, state, frame), op)
            if values is None:
                return None
            for temp, value in zip(stmt.results, values, strict=False):
                self.set_temp(temp, value, state, frame)
            return state
        result = self.eval_op(op, stmt, state, frame)
        if (result is ANY or isinstance(result, Sub)) and not isinstance(op, _MANAGED_OPS):
            for operand in op.operands():  # an op that ran code inference does not see
                self.escape(self.value(operand, state, frame))
        if result is NEVER:
            for temp in stmt.results:
                self.set_temp(temp, NEVER, None, frame)
            return None
        for temp in stmt.results:
            self.set_temp(temp, result, state, frame)
        return state

    def unpack(self, value: Abstract, op: N.Unpack) -> list[Abstract] | None:
        """The values ``a, *b, c = value`` binds (``None``: it always raises)."""
        n = op.before + op.after + (1 if op.star else 0)
        if isinstance(value, Const) and type(value.value) is tuple:
            value = value.widen()
        if isinstance(value, PartialTuple):
            items = value.items
            if op.star:
                if len(items) < op.before + op.after:
                    return None
                middle = items[op.before:len(items) - op.after]
                rest = self.new_site(list, join_all_(middle))
                return [*items[:op.before], rest, *items[len(items) - op.after:]]
            if len(items) != n:
                return None
            return list(items)
        elem = self.elements_of(self._proxy(value))
        if elem is ANY:
            self.escape(value)  # iterating it may run the program's code
        if op.star:
            rest = self.new_site(list, elem)
            return [elem] * op.before + [rest] + [elem] * op.after
        return [elem] * n

    def next_value(self, iterator: Abstract, frame: _Frame) -> Abstract:
        """What ``next(iterator)`` gives in a ``for`` loop."""
        if isinstance(iterator, Elements):
            return iterator.elem
        if len(iterator.members()) > 1:  # one of a few iterators (range's two, say)
            result = NEVER
            for member in iterator.members():
                result = self.join(result, self.next_value(member, frame))
            return result
        cls = iterator.exact_class
        if cls is not None and _is_python_class(cls):
            method = _lookup(cls, "__next__")
            if isinstance(method, types.FunctionType):
                _attribute_edges(frame, cls, "__next__")
                return self.infer_call(Method(method, iterator), [], {}, frame)
        return ANY

    def value(self, operand: N.Operand | None, state: _State, frame: _Frame) -> Abstract:
        """The abstract value of an operand here."""
        if operand is None:
            return Const(None)
        if isinstance(operand, N.Temp):
            found = state.vals.get(operand)
            if found is None:
                found = frame.result.base_types.get(operand, ANY)
            return found
        if isinstance(operand, N.Const):
            return _object_abstract(operand.value)
        return self.load(operand.name, state, frame)

    def load(self, name: str, state: _State, frame: _Frame) -> Abstract:
        """The value of a name: a local from the state, a global or builtin (recording
        an edge), a closure variable."""
        if name in frame.locals:
            if name in frame.shared:
                return ANY
            return state.vals.get(name, NEVER)
        fn = frame.fn
        code = fn.__code__
        if name in code.co_freevars:
            cell = fn.__closure__[code.co_freevars.index(name)]
            try:
                content = cell.cell_contents
            except ValueError:
                return ANY
            if isinstance(content, (types.FunctionType, type)):
                frame.edges[Edge("cell", fn, name)] = None
                return Const(content)
            return ANY
        namespace = fn.__globals__
        if name in namespace:
            value = namespace[name]
            if _is_definition(value):
                frame.edges[Edge("global", namespace, name)] = None
                return Const(value)
            if name in self._declared_global(fn):
                return ANY  # rebound by the program as it runs: nothing relied on
            # typed by its class: rebinding it to another object of that class keeps
            # what was inferred
            frame.edges[Edge("global class", namespace, name)] = None
            return _class_of_object(value)
        builtin_ns = namespace.get("__builtins__", builtins)
        builtin_ns = getattr(builtin_ns, "__dict__", builtin_ns)
        if name in builtin_ns:
            # assumed: no global of that name shadows the builtin
            frame.edges[Edge("global", namespace, name)] = None
            return Const(builtin_ns[name])
        return ANY  # unknown now: a NameError, or a name bound later (exec, setattr)

    def _declared_global(self, fn: Any) -> frozenset[str]:
        module = fn.__globals__.get("__name__", "")
        found = self._global_decls.get(module)
        if found is None:
            found = self._global_decls[module] = _global_statements(
                fn.__globals__.get("__file__"))
        return found if "*" not in found else _ALL

    def eval_op(self, op: N.Op, stmt: N.Assign, state: _State, frame: _Frame) -> Abstract:
        """The abstract result of one op (dispatches on the op's class)."""
        fold = self.params.const_prop != "none"
        if isinstance(op, N.Copy):
            return self.value(op.value, state, frame)
        if isinstance(op, N.Load):
            return self.load(op.var.name, state, frame)
        if isinstance(op, N.BinOp):
            a, b = self.value(op.left, state, frame), self.value(op.right, state, frame)
            if (op.op == "pow" and a.exact_class is float and b.exact_class in (int, float)
                    and self._non_negative(op.left, frame, 4)):
                return Exact(float)  # no complex root of a negative number
            return self.binary(op.op, a, b, frame)
        if isinstance(op, N.InPlace):
            a, b = self.value(op.target, state, frame), self.value(op.value, state, frame)
            if isinstance(a, Alloc) and a.cls is list and op.op in ("iadd", "imul"):
                if op.op == "iadd":
                    if not self.inert(b):
                        self.escape(b)
                    self.write(a, self.elements_of(b))
                elif b.exact_class not in (int, bool):
                    return self.opaque([a, b])
                return a
            if isinstance(a, Alloc) or isinstance(b, Alloc):
                return self.opaque([a, b])
            result = transfer.inplace(op.op, a, b, fold)
            if result is not None:
                return result
            if a.exact_class is not None and _is_python_class(a.exact_class):
                name = f"__{op.op.rstrip('_')}__"
                if _lookup(a.exact_class, name) is None:
                    return self.binary(transfer.inplace_base(op.op), a, b, frame)
            return ANY
        if isinstance(op, N.UnaryOp):
            a = self.value(op.operand, state, frame)
            result = transfer.unary(op.op, a, fold)
            if op.op == "not_" and stmt.result is not None:
                for fact in frame.facts.get(op.operand, ()) if isinstance(
                        op.operand, N.Temp) else ():
                    frame.facts.setdefault(stmt.result, []).append(
                        (fact[0], fact[1], fact[3], fact[2]))
                if isinstance(op.operand, (N.Var, N.Temp)):
                    self._fact(frame, state, stmt.result, op.operand, narrow_truth(a), True)
            return result if result is not None else ANY
        if isinstance(op, N.Compare):
            a, b = self.value(op.left, state, frame), self.value(op.right, state, frame)
            result = transfer.compare(op.op, a, b, fold)
            if stmt.result is not None and op.op in ("is_", "is_not"):
                self._compare_fact(op, a, b, stmt.result, state, frame)
            if result is None:
                result = self.dunder(a, _COMPARE_DUNDER.get(op.op), [b], frame)
            elif op.op not in ("is_", "is_not") and not (self.inert(a) and self.inert(b)):
                self.opaque([a, b])  # element comparisons, __contains__, __hash__
            return result
        if isinstance(op, N.Call):
            func = self.value(op.func, state, frame)
            args, kwargs = self.call_args(op, state, frame)
            if args is None or kwargs is None:
                if isinstance(func, Const):
                    frame.result.callees[stmt.id] = func.value
                if func == Const(print):
                    return Const(None)
                return ANY
            if isinstance(func, Const) and stmt.result is not None and args:
                self._call_fact(func.value, op, args, stmt.result, state, frame)
            if func == Const(super) and not args and not kwargs:
                found = self.zero_arg_super(state, frame)
                if found is not None:
                    frame.result.callees[stmt.id] = super
                    return found
            return self.infer_call(func, args, kwargs, frame, stmt)
        if isinstance(op, N.GetAttr):
            return self.getattr(self.value(op.obj, state, frame), op.name, frame)
        if isinstance(op, N.SetAttr):
            value = self.value(op.value, state, frame)
            obj = self.value(op.obj, state, frame)
            self.setattr(obj, op.name, value, frame)
            return Const(None)
        if isinstance(op, N.GetItem):
            return self.getitem(self.value(op.obj, state, frame),
                                self.value(op.index, state, frame), frame)
        if isinstance(op, N.SetItem):
            value = self.value(op.value, state, frame)
            obj = self.value(op.obj, state, frame)
            index = self.value(op.index, state, frame)
            if isinstance(obj, Alloc) and obj.cls is dict:
                if not self.inert(index):
                    self.opaque([index, obj])
                self.write(obj, PartialTuple((index, value)))
            elif isinstance(obj, Alloc) and obj.cls is list and index.exact_class in (
                    int, bool, slice):
                if index.exact_class is slice:
                    if not self.inert(value):
                        self.escape(value)
                    value = self.elements_of(value)
                self.write(obj, value)
            else:
                self.opaque([value, obj, index])
            return Const(None)
        if isinstance(op, (N.DelItem, N.DelAttr)):
            values = [self.value(operand, state, frame) for operand in op.operands()]
            if not all(self.inert(v) or isinstance(v, Alloc) for v in values):
                self.opaque(values)
            return Const(None)
        if isinstance(op, N.BuildTuple):
            items = self.items(op.items, state, frame)
            return PartialTuple(items) if items is not None else Exact(tuple)
        if isinstance(op, (N.BuildList, N.BuildSet)):
            shown = self.items(op.items, state, frame)
            contents = NEVER
            for item in shown if shown is not None else [ANY]:
                contents = self.join(contents, item)
            container: type = list if isinstance(op, N.BuildList) else set
            if container is set and not self.inert(contents):
                self.escape(contents)  # hashing runs __hash__/__eq__
            return self.new_site(container, contents)
        if isinstance(op, N.BuildDict):
            return self.build_dict(op, state, frame)
        if isinstance(op, N.BuildSlice):
            return Exact(slice)
        if isinstance(op, (N.JoinStr,)):
            return Exact(str)
        if isinstance(op, N.Format):
            value = self.value(op.value, state, frame)
            spec = self.value(op.spec, state, frame)
            if all(m.exact_class in (int, float, str, bool, type(None))
                   for m in value.members()):
                return Exact(str)
            self.opaque([value, spec])
            return Sub(str)
        if isinstance(op, N.Iter):
            if op.is_async:
                return ANY
            value = self.value(op.value, state, frame)
            result = transfer.iterate(self._proxy(value))
            if result is not None:
                return result
            cls = value.exact_class
            if cls is not None and _is_python_class(cls):
                method = _lookup(cls, "__iter__")
                if isinstance(method, types.FunctionType):
                    _attribute_edges(frame, cls, "__iter__")
                    return self.infer_call(Method(method, value), [], {}, frame)
            return self.opaque([value])
        if isinstance(op, N.Yield):
            frame.yields = self.join(frame.yields, self.value(op.value, state, frame))
            return ANY
        if isinstance(op, N.YieldFrom):
            self.value(op.value, state, frame)
            frame.yields = ANY
            return ANY
        if isinstance(op, (N.Splat, N.DoubleSplat)) and stmt.result is not None:
            frame.splats[stmt.result] = self.value(op.value, state, frame)
            return ANY
        if isinstance(op, (N.Await, N.Splat, N.DoubleSplat)):
            return self.opaque([self.value(op.value, state, frame)])
        if isinstance(op, N.Walrus):
            value = self.value(op.value, state, frame)
            if op.var.name in frame.locals:
                self.store(state, frame, op.var.name, value)
            return value
        if isinstance(op, N.BoolOp):
            return self.boolop(op, state, frame)
        if isinstance(op, N.IfExp):
            yes, no = self.branch(op.test, state, frame)
            outs = []
            for region, branch_state in ((op.body, yes), (op.orelse, no)):
                end = self.exec_block(region.body, branch_state, frame)
                if end is not None:
                    outs.append((end, self.value(region.value, end, frame)))
            return self._merge_into(state, outs)
        if isinstance(op, N.MakeComprehension):
            return self.comprehension(op, state, frame)
        if isinstance(op, N.MakeLambda):
            for operand in op.operands():
                self.value(operand, state, frame)
            made = self.made_function(op.fn, op.defaults, op.kwdefaults, state, frame)
            return made or Exact(types.FunctionType)
        if isinstance(op, N.ComprehensionAppend):
            values = [self.value(operand, state, frame) for operand in op.operands()]
            target = frame.comp_sites[-1] if frame.comp_sites else ANY
            if len(values) == 1 and target is not ANY:
                if target.exact_class is set and not self.inert(values[0]):
                    self.escape(values[0])
                self.write(target, values[0])
            elif len(values) == 2 and target.exact_class is dict:
                if not self.inert(values[0]):
                    self.escape(values[0])
                self.write(target, PartialTuple((values[0], values[1])))
            else:
                self.opaque(values)
            return Const(None)
        return ANY

    def build_dict(self, op: N.BuildDict, state: _State, frame: _Frame) -> Abstract:
        """``{k: v, **m}``: a new tracked dict."""
        pairs: Abstract = NEVER
        for key, item in op.items:
            item_value = self.value(item, state, frame)
            if key is None:
                if isinstance(item_value, Alloc) and item_value.cls is dict:
                    pairs = self.join(pairs, self.summary(item_value))
                else:
                    self.escape(item_value)
                    pairs = ANY
                continue
            key_value = self.value(key, state, frame)
            if not self.inert(key_value):
                self.escape(key_value)  # hashing runs its code
            pairs = self.join(pairs, PartialTuple((key_value, item_value)))
        return self.new_site(dict, pairs)

    def _merge_into(self, state: _State, outs: list[tuple[_State, Abstract]]) -> Abstract:
        """Continue after lazily evaluated regions: ``state`` becomes their join."""
        if not outs:
            return NEVER
        merged = self.join_states([s for s, _ in outs])
        assert merged is not None
        state.vals, state.vers = merged.vals, merged.vers
        result = NEVER
        for _, value in outs:
            result = self.join(result, value)
        return result

    def boolop(self, op: N.BoolOp, state: _State, frame: _Frame) -> Abstract:
        """``a and b and c`` / ``a or b``: each operand may decide the result."""
        outs: list[tuple[_State, Abstract]] = []
        current: _State | None = state.copy()
        first = self.value(op.first, state, frame)
        operand: N.Operand = op.first
        value = first
        for region in op.rest:
            assert current is not None
            yes, no = self.branch(operand, current, frame)
            decided, go_on = (no, yes) if op.op == "and" else (yes, no)
            if decided is not None:
                split = narrow_truth(value)
                outs.append((decided, split[1] if op.op == "and" else split[0]))
            if go_on is None:
                current = None
                break
            current = self.exec_block(region.body, go_on, frame)
            if current is None:
                break
            operand = region.value
            value = self.value(region.value, current, frame)
        if current is not None:
            outs.append((current, value))
        return self._merge_into(state, outs)

    def comprehension(self, op: N.MakeComprehension, state: _State, frame: _Frame
                      ) -> Abstract:
        """Run a comprehension's scope inline (it sees the enclosing locals)."""
        iterator = self.value(op.iterator, state, frame)
        inner = state.copy()
        fir = op.fn
        target: Abstract = ANY
        if op.kind in ("list", "set", "dict"):
            kinds: dict[str, type] = {"list": list, "set": set, "dict": dict}
            target = self.new_site(kinds[op.kind], NEVER)
        frame.comp_sites.append(target)
        saved_locals = frame.locals
        frame.locals = saved_locals | local_names(fir) | set(fir.args.names())
        saved_yields = frame.yields
        frame.yields = NEVER
        try:
            for name in fir.args.names():
                inner.vals[name] = iterator
            self.exec_block(fir.body, inner, frame)
            yields = frame.yields
        finally:
            frame.locals = saved_locals
            frame.yields = saved_yields
            frame.comp_sites.pop()
        for stmt in fir.walk():
            if isinstance(stmt, N.Assign) and isinstance(stmt.op, N.Walrus):
                self.store(state, frame, stmt.op.var.name, ANY)
        if op.kind in ("list", "set", "dict"):
            return target
        if op.kind == "never":
            return Exact(dict)
        return Elements(types.GeneratorType, yields)

    def items(self, items: list[N.Operand | N.Starred], state: _State, frame: _Frame
              ) -> list[Abstract] | None:
        """Abstract items of a display (``None`` if a starred item hides their number)."""
        out: list[Abstract] | None = []
        for item in items:
            if isinstance(item, N.Starred):
                value = self.value(item.value, state, frame)
                if isinstance(item.value, N.Temp) and item.value in frame.splats:
                    self.escape(frame.splats[item.value])
                self.escape(value)
                out = None
            else:
                value = self.value(item, state, frame)
                if out is not None:
                    out.append(value)
        return out

    def call_args(self, op: N.Call, state: _State, frame: _Frame
                  ) -> tuple[list[Abstract] | None, dict[str, Abstract] | None]:
        args = self.items(op.args, state, frame)
        kwargs: dict[str, Abstract] | None = {}
        for kw in op.keywords:
            value = self.value(kw.value, state, frame)
            if kw.name is None or kwargs is None:
                kwargs = None
            else:
                kwargs[kw.name] = value
        return args, kwargs

    def _call_fact(self, fn: Any, op: N.Call, args: list[Abstract], result: N.Temp,
                   state: _State, frame: _Frame) -> None:
        subject = op.args[0]
        if isinstance(subject, N.Starred):
            return
        if fn is isinstance and len(args) == 2 and isinstance(args[1], Const):
            classes = args[1].value
            classes = classes if isinstance(classes, tuple) else (classes,)
            if all(isinstance(c, type) for c in classes):
                self._fact(frame, state, result, subject, narrow_isinstance(args[0], classes))
        elif fn is type and len(args) == 1:
            frame.type_of[result] = subject

    def _compare_fact(self, op: N.Compare, a: Abstract, b: Abstract, result: N.Temp,
                      state: _State, frame: _Frame) -> None:
        negate = op.op == "is_not"
        if isinstance(b, Const) and (b.value is None or type(b.value) is bool):
            self._fact(frame, state, result, op.left, narrow_is(a, b.value), negate)
        if isinstance(op.left, N.Temp) and op.left in frame.type_of and isinstance(
                b, Const) and isinstance(b.value, type):
            subject = frame.type_of[op.left]
            self._fact(frame, state, result, subject,
                       narrow_type_is(self.value(subject, state, frame), b.value), negate)

    # ------------------------------------------------------------------ objects

    def binary(self, name: str, a: Abstract, b: Abstract, frame: _Frame) -> Abstract:
        """``a <name> b``: builtin transfer, else the left operand's Python dunder."""
        if isinstance(a, Alloc) or isinstance(b, Alloc):
            ca, cb = a.exact_class, b.exact_class
            if name == "add" and ca is list and cb is list:
                return self.new_site(list, self.join(self.elements_of(a), self.elements_of(b)))
            if name == "mul" and ca is list and cb in (int, bool):
                return self.new_site(list, self.elements_of(a))
            if name == "mul" and cb is list and ca in (int, bool):
                return self.new_site(list, self.elements_of(b))
            if ca is set and cb in (set, frozenset) and name in ("or_", "and_", "sub", "xor"):
                return self.new_site(set, self.join(self.elements_of(a), self.elements_of(b)))
            return self.opaque([a, b])
        result = transfer.binop(name, a, b, self.params.const_prop != "none")
        if result is not None:
            if name == "mod" and not self.inert(b):
                self.escape(b)  # formatting runs __str__/__repr__/__format__
            return result
        ca, cb = a.exact_class, b.exact_class
        if ca is not None and _is_python_class(ca) and (
                cb is None or cb is ca or not issubclass(cb, ca)):
            out = self.dunder(a, f"__{name.rstrip('_')}__", [b], frame)
            if Const(NotImplemented) <= out or out is ANY:
                return ANY
            return out
        return ANY

    def _non_negative(self, operand: N.Operand, frame: _Frame, depth: int) -> bool:
        """``operand`` is a square, a sum or product of non-negative numbers, ``abs`` or
        ``math.sqrt`` of something, or a non-negative constant (NaN aside)."""
        if isinstance(operand, N.Const):
            return isinstance(operand.value, (int, float)) and operand.value >= 0
        if not isinstance(operand, N.Temp) or depth == 0:
            return False
        if frame.defs is None:
            frame.defs = definitions(frame.result.base)
        stmt = frame.defs.get(operand)
        if stmt is None:
            return False
        op = stmt.op
        if isinstance(op, N.BinOp) and op.op == "mul" and op.left == op.right and (
                isinstance(op.left, N.Var) and op.left.name in frame.locals
                or isinstance(op.left, N.Temp)):
            return True
        if isinstance(op, N.BinOp) and op.op in ("add", "mul", "truediv"):
            return (self._non_negative(op.left, frame, depth - 1)
                    and self._non_negative(op.right, frame, depth - 1))
        if isinstance(op, N.Call):
            return frame.result.callees.get(stmt.id) in (abs, math.sqrt, math.exp,
                                                          math.hypot)
        return False

    def zero_arg_super(self, state: _State, frame: _Frame) -> Abstract | None:
        """``super()`` in a method: its class cell and first argument."""
        code = frame.fn.__code__
        if "__class__" not in code.co_freevars or not code.co_argcount:
            return None
        cell = frame.fn.__closure__[code.co_freevars.index("__class__")]
        try:
            thisclass = cell.cell_contents
        except ValueError:
            return None
        first = code.co_varnames[0]
        if not isinstance(thisclass, type) or first in frame.shared:
            return None
        frame.edges[Edge("cell", frame.fn, "__class__")] = None
        receiver = state.vals.get(first, ANY)
        return SuperOf(thisclass, receiver)

    def dunder(self, receiver: Abstract, name: str | None, args: list[Abstract],
               frame: _Frame) -> Abstract:
        """Call the special method ``name`` of the receiver's exact Python class."""
        cls = receiver.exact_class
        if name is None or cls is None or not _is_python_class(cls):
            return ANY
        method = _lookup(cls, name)
        if not isinstance(method, types.FunctionType):
            return ANY
        _attribute_edges(frame, cls, name)
        return self.infer_call(Method(method, receiver), args, {}, frame)

    def getattr(self, obj: Abstract, name: str, frame: _Frame) -> Abstract:
        """``obj.name``: module members, methods, properties, class and instance
        attributes of user classes (from their methods' stores)."""
        if obj is NEVER:
            return NEVER
        if len(obj.members()) > 1:
            result = NEVER
            for m in obj.members():
                result = self.join(result, self.getattr(m, name, frame))
            return result
        if isinstance(obj, SuperOf):
            return self.super_attr(obj, name, frame)
        if isinstance(obj, Const) and isinstance(obj.value, types.ModuleType):
            namespace = vars(obj.value)
            if name in namespace:
                value = namespace[name]
                if _is_definition(value) or (
                        is_value_constant(value) and not hasattr(obj.value, "__file__")):
                    frame.edges[Edge("global", namespace, name)] = None
                    return Const(value)
                frame.edges[Edge("global class", namespace, name)] = None
                return _class_of_object(value)
            return ANY
        if isinstance(obj, Const) and isinstance(obj.value, type):
            klass: type = obj.value
            if _is_python_class(klass) and type(klass) is type:
                attr = _lookup(klass, name)
                _attribute_edges(frame, klass, name, by_class=_typed_by_class(attr))
                if isinstance(attr, (types.FunctionType, type)):
                    return Const(attr)
                if isinstance(attr, staticmethod):
                    return Const(attr.__func__)
                if isinstance(attr, classmethod) and isinstance(attr.__func__,
                                                                types.FunctionType):
                    return Method(attr.__func__, obj)
                if attr is not None and not hasattr(type(attr), "__get__"):
                    # what the class binds now (its attribute edge checks the binding when
                    # an instance is entered, as a global's), or what inferred code stores
                    value = _class_of_object(attr)
                    written = self.class_attr(klass, name)
                    return value if written is None else self.join(value, written)
            elif klass.__module__ == "builtins" and type(klass) is type:
                attr = klass.__dict__.get(name)
                if isinstance(attr, (types.MethodDescriptorType, types.BuiltinFunctionType)):
                    return Const(getattr(klass, name))
            return ANY
        cls = obj.exact_class
        if cls is None:
            return ANY
        if not _is_python_class(cls):
            attr = getattr(cls, name, None) if cls.__module__ == "builtins" else None
            if isinstance(attr, types.MethodDescriptorType):
                return Method(attr, obj)
            return ANY
        if type(cls) is not type or _lookup(cls, "__getattribute__") is not \
                object.__getattribute__:
            return ANY
        attr = _lookup(cls, name)
        _attribute_edges(frame, cls, name, by_class=_typed_by_class(attr))
        found = self._method_of(obj, cls, attr)
        if found is not None:
            # a method is a non-data descriptor: an instance attribute of its name, if
            # some code stores one, hides it
            instance = self.instance_attr(cls, name)
            return found if instance is None else self.join(found, instance)
        if isinstance(attr, property):
            if isinstance(attr.fget, types.FunctionType):
                _attribute_edges(frame, cls, name)
                return self.call_function(attr.fget, (obj,), frame)
            return ANY
        if attr is not None and hasattr(type(attr), "__get__") and not isinstance(
                attr, types.MemberDescriptorType):
            return ANY
        instance = self.instance_attr(cls, name)
        if attr is None or isinstance(attr, types.MemberDescriptorType):
            if instance is None:
                return ANY
            return instance
        class_value = Const(attr) if _is_definition(attr) else _class_of_object(attr)
        return class_value if instance is None else self.join(class_value, instance)

    @staticmethod
    def _method_of(obj: Abstract, cls: type, attr: Any) -> Abstract | None:
        """What getting a method (function, static or class method) ``attr`` of ``cls``
        through an instance gives, without instance attributes (None: not a method)."""
        if isinstance(attr, types.FunctionType):
            return Method(attr, obj)
        if isinstance(attr, staticmethod):
            return Const(attr.__func__)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            return Method(attr.__func__, Const(cls))
        return None

    def super_attr(self, obj: SuperOf, name: str, frame: _Frame) -> Abstract:
        """``super().name``: the next definition after ``thisclass`` in the receiver's MRO."""
        cls = obj.receiver.exact_class
        if cls is None or not _is_python_class(cls) or obj.thisclass not in cls.__mro__:
            return ANY
        mro = cls.__mro__
        for klass in mro[mro.index(obj.thisclass) + 1:]:
            frame.edges[Edge("attribute", klass, name)] = None
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                if isinstance(attr, types.FunctionType):
                    return Method(attr, obj.receiver)
                if isinstance(attr, staticmethod):
                    return Const(attr.__func__)
                if attr is object.__init__:
                    return Method(attr, obj.receiver)
                return ANY
        return ANY

    def instance_attr(self, cls: type, name: str) -> Abstract | None:
        """The values stored into ``obj.name`` for instances of exactly ``cls`` seen in this
        inference (``None`` if nothing stores it; ``ANY`` if code inference does not infer
        as a writer may: ``outside_stores``, or a ``__setattr__`` of the class's own).
        Growing a table after reading it makes ``infer`` run another round."""
        self._attr_reads.add((cls, name))
        outside = outside_stores(cls)
        if name in self._unknown_stores or outside is ALL_NAMES or name in outside or \
                _lookup(cls, "__setattr__") is not object.__setattr__:
            return ANY
        if not _attribute_writers(cls, name):
            return None
        if self._given_up:
            return ANY  # the writers' stores are no longer followed
        return self.attr_table.setdefault(cls, {}).get(name, NEVER)

    def class_attr(self, cls: type, name: str) -> Abstract | None:
        """What code this inference follows stores into ``cls.name`` on the class object
        itself (``None``: nothing it follows does). Stores by code it does not follow
        (module-level code, other modules) rebind the class attribute, which the attribute
        edge checks where an instance is entered, as a rebound global; they are not the
        instance stores :meth:`instance_attr` must see."""
        self._attr_reads.add((cls, name))
        if self._given_up:
            return ANY  # the stores are no longer followed
        return self.attr_table.get(cls, {}).get(name)

    def setattr(self, obj: Abstract, name: str, value: Abstract, frame: _Frame) -> None:
        """Record ``obj.name = value`` into the attribute table of ``obj``'s class."""
        for m in obj.members():
            cls = m.exact_class
            if isinstance(m, Const) and isinstance(m.value, type):
                cls = m.value  # a class attribute: joined into the same table
            if cls is None and name not in self._unknown_stores:
                # the object may be an instance of any class whose ``name`` was read
                self._unknown_stores.add(name)
                if any(read == name for _, read in self._attr_reads):
                    self._attr_changed = True
            if (cls is None or not _is_python_class(cls) or cls in self.escaped_classes
                    or _lookup(cls, "__setattr__") is not object.__setattr__):
                self.escape(value)
                if cls is not None and _is_python_class(cls):
                    self.escape(m)
                if cls is None or not _is_python_class(cls):
                    continue
            if not isinstance(m, Const):
                attr = _lookup(cls, name)
                if isinstance(attr, property):
                    _attribute_edges(frame, cls, name)
                    if isinstance(attr.fset, types.FunctionType):
                        self.call_function(attr.fset, (m, value), frame)
                    else:
                        self.opaque([m, value])
                    continue
                if (attr is not None and hasattr(type(attr), "__set__")
                        and not isinstance(attr, types.MemberDescriptorType)):
                    self.opaque([m, value])  # another data descriptor runs its __set__
                    continue
            # a container stored in an attribute that code other than the class's methods
            # reads can be changed through it where inference does not look: it escapes
            # (the methods reading it are inferred: ``_infer_unseen_writers``)
            loaded = outside_loads(cls)
            if loaded is ALL_NAMES or name in loaded:
                for klass, site in allocs(value):
                    self.escape(Alloc(klass, (site,)))
            table = self.attr_table.setdefault(cls, {})
            old = table.get(name, NEVER)
            new = self.join(old, _drop_consts(value))
            if new != old:
                table[name] = new
                if (cls, name) in self._attr_reads:
                    self._attr_changed = True

    def getitem(self, obj: Abstract, index: Abstract, frame: _Frame) -> Abstract:
        """``obj[index]`` for builtin sequences; a user class's ``__getitem__``."""
        if obj is NEVER or index is NEVER:
            return NEVER
        cls = obj.exact_class
        icls = index.exact_class
        if isinstance(obj, Alloc) and cls is dict:
            if not self.inert(index):
                self.opaque([index, obj])
            return self.dict_part(obj, 1)
        if isinstance(obj, Alloc) and cls is list:
            if icls in (int, bool):
                return self.elements_of(obj)
            if icls is slice:
                return self.new_site(list, self.elements_of(obj))
            return self.opaque([obj, index])
        if isinstance(obj, Elements) and cls is tuple:
            if icls in (int, bool):
                return obj.elem
            if icls is slice:
                return obj
        if isinstance(obj, PartialTuple) and icls is slice:
            return Elements(tuple, transfer.elements(obj))
        tup = obj.widen() if isinstance(obj, Const) and type(obj.value) is tuple else obj
        if isinstance(tup, PartialTuple) and isinstance(index, Const) and type(
                index.value) is int:
            i = index.value
            if -len(tup.items) <= i < len(tup.items):
                return tup.items[i]
            return NEVER
        if isinstance(tup, PartialTuple) and index.exact_class in (int, bool):
            return transfer.elements(tup)
        if (isinstance(obj, Const) and isinstance(index, Const) and is_value_constant(obj.value)
                and is_value_constant(index.value)):
            folded = transfer.fold(lambda o, i: o[i], obj.value, index.value)
            if folded is not None:
                return folded
        if cls in (str,) and icls in (int, bool, slice):
            return Exact(str)
        if cls in (bytes, bytearray) and icls in (int, bool):
            return Exact(int)
        if cls in (list, tuple, bytes, bytearray, str) and icls is slice:
            return Exact(cls)
        if cls is range:
            return Exact(int) if icls in (int, bool) else Exact(range) if icls is slice else ANY
        if cls is not None and _is_python_class(cls):
            return self.dunder(obj, "__getitem__", [index], frame)
        return ANY


def _attribute_edges(frame: _Frame, cls: type, name: str, *, by_class: bool = False
                     ) -> None:
    """Record that ``cls.name`` was assumed: on ``cls`` and on the class along its MRO that
    defines ``name`` (a redefinition there changes what ``cls.name`` is too). ``by_class``:
    only the class of what it finds was relied on (``_class_of_object``), so rebinding it
    to another object of that class (``Strength.REQUIRED``, a class's cached instance)
    keeps what was inferred."""
    kind = "attribute class" if by_class else "attribute"
    frame.edges[Edge(kind, cls, name)] = None
    for klass in cls.__mro__:
        if name in klass.__dict__:
            if klass is not cls:
                frame.edges[Edge(kind, klass, name)] = None
            break


def _typed_by_class(attr: Any) -> bool:
    """Whether ``getattr`` types the class attribute ``attr`` by its class alone: a plain
    object, not a definition inference calls or a descriptor it runs."""
    return attr is not None and not _is_definition(attr) and \
        not hasattr(type(attr), "__get__")


def _nested_code(code: types.CodeType, fir: N.FunctionIR) -> types.CodeType | None:
    """The code object of the nested scope ``fir`` among ``code``'s constants (and theirs:
    a lambda in a comprehension), by qualified name and first line; None unless exactly
    one matches (two lambdas on one line)."""
    found: list[types.CodeType] = []
    todo = [code]
    while todo:
        current = todo.pop()
        for const in current.co_consts:
            if isinstance(const, types.CodeType):
                if const.co_qualname == fir.qualname and \
                        const.co_firstlineno == fir.pos.lineno:
                    found.append(const)
                else:
                    todo.append(const)
    return found[0] if len(found) == 1 else None


_ALL: frozenset[str] = frozenset({"*"})
#: (path, modification time) -> the names its ``global`` statements declare
_GLOBAL_STATEMENTS: dict[tuple[str, float], frozenset[str]] = {}


def _global_statements(path: Any) -> frozenset[str]:
    """The names a source file declares ``global`` somewhere (``*``: unreadable), read once
    per version of the file."""
    try:
        key = (path, os.stat(path).st_mtime)
    except Exception:
        return _ALL
    found = _GLOBAL_STATEMENTS.get(key)
    if found is None:
        names: set[str] = set()
        try:
            with open(path) as f:  # noqa: PTH123
                text = f.read()
            for match in _GLOBAL_DECL.finditer(text):
                names.update(n.strip() for n in match.group(1).split(","))
        except Exception:
            names.add("*")
        found = _GLOBAL_STATEMENTS[key] = frozenset(names)
    return found
#: versions of local bindings (unique across the process: a fact names one binding)
_VERSIONS = itertools.count(1)
#: ops whose handlers deal with escaping themselves (their ANY results hide nothing)
_MANAGED_OPS = (N.Call, N.Copy, N.Load, N.BuildTuple, N.BuildList, N.BuildSet, N.BuildDict,
                N.SetItem, N.Unpack, N.Iter, N.BoolOp, N.IfExp, N.Walrus, N.MakeComprehension,
                N.ComprehensionAppend, N.Yield, N.Splat, N.DoubleSplat, N.GetItem)










_COMPARE_DUNDER = {"lt": "__lt__", "le": "__le__", "eq": "__eq__", "ne": "__ne__",
                   "gt": "__gt__", "ge": "__ge__"}
































def infer(fn: Any, argtypes: Sequence[Any] = (), *,
          interpreter: AbstractInterpreter | None = None,
          params: InferenceParams | None = None) -> Inference:
    """Infer the Python function ``fn`` for positional argument types ``argtypes``
    (classes, typing forms or ``Abstract`` values) with ``interpreter`` (a fresh
    ``AbstractInterpreter(params)`` by default)."""
    if interpreter is None:
        interpreter = AbstractInterpreter(params)
    return interpreter.infer(fn, argtypes)
