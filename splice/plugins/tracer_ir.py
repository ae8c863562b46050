"""The Tracer's pass (``splice.plugins.tracer``): the statements its ``lowered`` hook adds
to a function's IR to record each call (see that module's docstring for what is recorded
and why). Kept apart so that a process whose code all comes from the cache on disk, where
the hook never runs, loads neither this module nor the IR's nodes."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from time import perf_counter_ns
from typing import Any

from splice.ir.nodes import (
    Assign,
    BuildTuple,
    Const,
    FunctionIR,
    GetAttr,
    Handler,
    Load,
    Operand,
    Pos,
    Raise,
    Region,
    Return,
    Stmt,
    Temp,
    Try,
    UnaryOp,
    Var,
    Yield,
    YieldFrom,
)
from splice.ir.nodes import Call as CallOp
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["instrument"]


def instrument(ir: FunctionIR, info_of: Callable[[], Any], local: Any, *, recorder: Any,
               delegators: dict[Any, Any], python_forms: dict[str, Callable[..., None]],
               generator: bool, returns: bool, args: bool, record_return: Callable[..., None],
               record_args: Callable[..., None], record_exception: Callable[..., None]
               ) -> FunctionIR | None:
    """Add the recording of each call to ``ir`` (of a function or generator function whose
    ``FunctionInfo`` ``info_of()`` gives, recording into the thread-local ``local``,
    through ``recorder``'s C calls when it is not None), or None if it cannot be (a
    generator yielding inside a lazily evaluated region). A generator starts each resume
    with ``recorder.resume`` (``delegated`` where a ``yield from`` ended) and ends the one
    before a ``yield from`` with ``delegate``, or without ``recorder`` with their Python
    forms (``python_forms``, by name), which take ``local`` and ``delegators`` first."""
    yields: list[tuple[list[Stmt], Stmt]] = []
    if generator and not _yield_statements(ir.body, yields):
        return None
    info = info_of()
    make = _Instrumenter(ir, local, recorder, delegators, python_forms)
    pos = ir.pos
    if returns and not generator:
        found: list[tuple[list[Stmt], Return]] = []
        _returns(ir.body, found)
        for block, ret in found:
            value = ret.value if ret.value is not None else Const(None, ret.pos)
            index = _index(block, ret)
            block.insert(index, make.helper(record_return, [value], ret.pos))
    for block, stmt in yields:
        # a resume is a span of its own: end it before the yield, start the next one
        # when the yield returns (or raises: throw(), close())
        index = _index(block, stmt)
        assert isinstance(stmt, Assign)
        if isinstance(stmt.op, YieldFrom):
            stop, resume = [make.delegate(info, stmt.pos)], make.delegated(info, stmt.pos)
        else:
            stop, resume = make.end(stmt.pos), make.resume(info, stmt.pos)
        block[index:index + 1] = [*stop, Try([stmt], [], [], [resume], False, stmt.pos)]
    if generator:
        entry, events = [make.resume(info, pos)], None
    else:
        entry, events = make.start(info, pos)
    if args and not generator:
        names = tuple(ir.args.names())
        loads: list[Operand] = []
        for name in names:
            temp = make.assign(Load(Var(name, pos)), pos, entry)
            assert temp is not None
            loads.append(temp)
        entry.append(make.helper(record_args, [Const(names, pos), *loads], pos))
    handler = Handler(Region([], Const(BaseException, pos)), None,
                      [make.helper(record_exception, [], pos), Raise(None, None, pos)],
                      pos)
    # a generator's last resume may run in another thread than its first: read the
    # thread's list again there
    finish = make.end(pos, events)
    ir.body = [*entry, Try(ir.body, [handler], [], finish, False, pos)]
    return ir


class _Instrumenter:
    """Builds the recording statements for one function's IR."""

    def __init__(self, ir: FunctionIR, local: Any, recorder: Any, delegators: dict[Any, Any],
                 python_forms: dict[str, Callable[..., None]]) -> None:
        self.ir = ir
        self.local = local
        self.recorder = recorder
        self.delegators = delegators
        self.python_forms = python_forms

    def assign(self, op: Any, pos: Pos, out: list[Stmt], result: bool = True) -> Temp | None:
        temp = self.ir.new_temp() if result else None
        out.append(Assign((temp,) if temp is not None else (), op, pos))
        return temp

    def events(self, pos: Pos, out: list[Stmt]) -> Temp:
        temp = self.assign(GetAttr(Const(self.local, pos), "events"), pos, out)
        assert temp is not None
        return temp

    def clock(self, pos: Pos, out: list[Stmt]) -> Temp:
        temp = self.assign(CallOp(Const(perf_counter_ns, pos), [], []), pos, out)
        assert temp is not None
        return temp

    def _push(self, events: Temp, items: list[Operand], pos: Pos, out: list[Stmt]) -> None:
        """``events += (items...)``: ``operator.iadd`` (a C function the call-site pass
        dispatches with one dict lookup) extends the list by a tuple atomically."""
        packed = self.assign(BuildTuple(list(items)), pos, out)
        assert packed is not None
        self.assign(CallOp(Const(operator.iadd, pos), [events, packed], []), pos, out,
                    result=False)

    def start(self, info: Any, pos: Pos) -> tuple[list[Stmt], Temp | None]:
        """A call starts: ``info, now`` (and the thread's event list, for :meth:`end`;
        None when the C recorder finds it)."""
        out: list[Stmt] = []
        if self.recorder is not None:  # @recorder.enter(@info)
            self.assign(CallOp(Const(self.recorder.enter, pos), [Const(info, pos)], []),
                        pos, out, result=False)
            return out, None
        events = self.events(pos, out)
        now = self.clock(pos, out)
        self._push(events, [Const(info, pos), now], pos, out)
        return out, events

    def end(self, pos: Pos, events: Temp | None = None) -> list[Stmt]:
        """A call ends: ``-now``. ``events``: the list read when the call started, reused
        when the call cannot have moved to another thread since (not across a ``yield``)."""
        out: list[Stmt] = []
        if self.recorder is not None:  # @recorder.leave()
            self.assign(CallOp(Const(self.recorder.leave, pos), [], []), pos, out,
                        result=False)
            return out
        if events is None:
            events = self.events(pos, out)
        now = self.clock(pos, out)
        negated = self.assign(UnaryOp("neg", now), pos, out)
        assert negated is not None
        self._push(events, [negated], pos, out)
        return out

    def resume(self, info: Any, pos: Pos) -> Stmt:
        """A generator resumes (or starts): ``@recorder.resume(@info)``."""
        return self._generator_call("resume", [Const(info, pos)], pos)

    def delegate(self, info: Any, pos: Pos) -> Stmt:
        """A generator stops at a ``yield from``: ``@recorder.delegate(@info)``."""
        return self._generator_call("delegate", [Const(info, pos)], pos)

    def delegated(self, info: Any, pos: Pos) -> Stmt:
        """A ``yield from`` ended (returned or raised): ``@recorder.delegated(@info)``."""
        return self._generator_call("delegated", [Const(info, pos)], pos)

    def _generator_call(self, name: str, args: list[Operand], pos: Pos) -> Stmt:
        # (each reads the running thread's list: a generator may resume in another thread)
        if self.recorder is not None:
            return Assign((), CallOp(Const(getattr(self.recorder, name), pos), [*args], []),
                          pos)
        return Assign((), CallOp(Const(self.python_forms[name], pos),
                                 [Const(self.local, pos), Const(self.delegators, pos), *args],
                                 []), pos)

    def helper(self, fn: Callable[..., Any], args: list[Operand], pos: Pos) -> Stmt:
        call = CallOp(Const(fn, pos), [Const(self.local, pos), *args], [])
        return Assign((), call, pos)


def _yield_statements(block: list[Stmt], found: list[tuple[list[Stmt], Stmt]]) -> bool:
    """Collect the ``yield``/``yield from`` statements of ``block`` (nested blocks
    included) with the block holding each; False if one sits in a lazily evaluated region,
    where no statement can be added around it."""
    for stmt in block:
        for region in stmt.regions():
            if any(isinstance(s, Assign) and isinstance(s.op, (Yield, YieldFrom))
                   for s in _all_statements(region.body)):
                return False
        if isinstance(stmt, Assign) and isinstance(stmt.op, (Yield, YieldFrom)):
            found.append((block, stmt))
        for inner in stmt.blocks():
            if not _yield_statements(inner, found):
                return False
    return True


def _all_statements(block: list[Stmt]) -> Iterator[Stmt]:
    for stmt in block:
        yield stmt
        for region in stmt.regions():
            yield from _all_statements(region.body)
        for inner in stmt.blocks():
            yield from _all_statements(inner)


def _returns(block: list[Stmt], found: list[tuple[list[Stmt], Return]]) -> None:
    for stmt in block:
        if isinstance(stmt, Return):
            found.append((block, stmt))
        for inner in stmt.blocks():
            _returns(inner, found)


def _index(block: list[Stmt], stmt: Stmt) -> int:
    for index, candidate in enumerate(block):
        if candidate is stmt:
            return index
    raise ValueError("statement not in its block")
