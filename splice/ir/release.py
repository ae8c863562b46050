"""Release hidden temporaries where CPython would have popped them.

Generated code keeps some intermediate values in hidden locals (``%1``) where CPython keeps
them on its value stack: a method call's receiver, a call's callee under a hook, a loop's
iterable. A value on the stack dies the instruction after its last use; a local lives until
it is overwritten or the frame ends. Objects would outlive their last reference: a file
written through ``open(p, "w").write(s)`` not yet flushed when read back, a weak reference
still alive after ``del``, a generator abandoned by ``break`` finalised late.

This pass runs on the syntax codegen made, once per scope (the function, and each class
body or nested function in it, separately). For each temp it finds the innermost block
holding every occurrence and the last statement ``S`` of that block with one, then:

- when ``S`` is a ``with``, ``for`` or ``if`` whose header alone uses the temp, at the
  start of its body (both branches of an ``if``), as CPython pops it before the body runs;
  if the header is a ``with``'s first manager expression, before ``__enter__`` runs, the
  manager being made by a statement of its own (``%with0 = E(%3); %3 = @Released; with
  %with0:``);
- after ``S``, in the order CPython drops values (a stored value first, a copy of a
  rebound name's old value last): ``del %t`` when the block's first occurrence is a plain
  ``%t = ...`` (the temp is bound there on every path that reaches ``S``'s end), else
  ``%t = @Released``; nothing after a ``return``, ``raise``, ``break`` or ``continue``;
- but when ``S`` is an ``if`` whose branches use the temp (not an inert one), on the path
  taken: after the last statement using it in each branch (recursively), at the start of
  a branch that does not use it; CPython pops the value at its last use on that path
  (``a < b < c``: ``b`` dies with ``c``'s comparison, before ``c``, or as the chain stops);
  after the whole ``if`` when both branches end with their last use (nothing runs between);
- before each ``break`` or ``continue`` that leaves the block between the first occurrence
  and ``S`` (a loop abandoned early): ``%t = @Released``;
- when ``S`` uses the temp once, as the value of a ``yield``, as the generator suspends:
  ``yield (%t, (%t := @Released))[0]`` (after ``S`` would be after the consumer resumes it);
- at the start of each ``except`` handler and ``finally`` of a ``try`` whose body holds every
  occurrence: ``%t = @Released`` (the temp is dead once the body raised), several temps in
  the reverse of the order they are defined in, as an exception pops CPython's stack from
  the top (the last pushed dies first);
- within ``S`` (or the last statement naming the temp in each block of a ``try``, ``with``
  or ``if`` that is ``S``), at a last read that more of the statement's work follows:
  ``(%t, (%t := @Released))[0]`` (``splice.ir.takes``), as CPython pops the value when
  its consumer is done; not for *inert* temps, whose earlier release could make no
  difference (computed from hidden names alone, or a table's entry for a callee a
  variable holds: held elsewhere; a bool; a copy of a local variable the statements do
  not rebind), so hot code pays nothing for them;
- at the start of a branch of an ``if`` that tests the temp (not an inert one), when the
  branch assigns it before reading it (a carrier: ``if %5: %5 = b < c``):
  ``%t = @Released``;
- an exception leaving the scope passes a handler ``except BaseException: %t = ... = @Released;
  raise`` wrapped around the whole body (the same order; a ``with``'s hoisted manager,
  beneath its body's values, last), so a traceback keeping the frame does not keep the
  temps (the bare ``raise`` keeps the exception and its traceback as they were; the ``try``
  costs nothing until something raises).

A dispatch table's entry for a callee a temp holds (``%5 = @dict[%3]``,
``splice.compiler.route_calls``) counts as a use of that temp wherever it is used: an entry
need not hold its callee (a C entry holds it weakly), and natively the callee stays on the
stack until its call returns.

Soundness: a temp is written once per evaluation of the statement that defines it and read
only after, within the block that holds all its occurrences (codegen's temps follow the IR's
dominance: a use never reads a value from an earlier loop iteration unless the definition is
outside the loop, and then so is the block found). So past ``S`` in that block, and on every
jump out of the block, no read of the temp can follow before a new write. A temp read from a
nested scope (a comprehension or generator function made by codegen, a lambda) may be read
later than its scope's statements suggest: such temps are left alone. The outermost iterable
of a comprehension is not in its scope: it is evaluated once, where the comprehension is.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from splice.ir.takes import take_last_reads
from splice.ir.walk import children, walk
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["release_temps"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
#: statements whose header runs once before a block: a temp used last there is released
#: at the start of that block
_HEADED = (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.If)
#: fields of a statement that hold blocks of statements
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def is_temp(name: str) -> bool:
    """Whether ``name`` is a hidden temporary of generated code (``%12``)."""
    return name[:1] == "%"


def release_temps(node: ast.stmt | ast.expr, base_exception: str, released: str,
                  hands_over: Callable[[str], bool] = lambda hidden: False) -> None:
    """Release the temps of ``node`` (a generated ``def``, or a lambda: left alone, an
    expression has nowhere to release) and of the scopes nested in it, in place.
    ``base_exception``: the hidden name of ``BaseException`` (the program may rebind the
    builtin name); ``released``: the hidden name of :class:`Released`; ``hands_over``:
    whether a call of a hidden name may run a Python function of the program (a typed
    callee's instance, called directly), whose frame takes its arguments over
    (``splice.ir.takes``)."""
    scopes = [node, *_nested_scopes(node)]
    for scope in scopes:
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = scope.args
            parameters = {a.arg for a in (*arguments.posonlyargs, *arguments.args,
                                          *arguments.kwonlyargs, arguments.vararg,
                                          arguments.kwarg) if a is not None}
            _release_scope(scope.body, base_exception, released, parameters, hands_over)
        elif isinstance(scope, ast.ClassDef):
            _release_scope(scope.body, None, released, set(), hands_over)


def _nested_scopes(node: ast.AST) -> Iterator[ast.AST]:
    for child in children(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield child
        yield from _nested_scopes(child)


Chain = tuple[tuple[int, int], ...]  # (id of a block, index in it) from the scope down


@dataclass
class _Temp:
    chains: list[Chain] = field(default_factory=list)
    nested: bool = False  # read or written in a nested scope


@dataclass
class _Scope:
    blocks: dict[int, list[ast.stmt]] = field(default_factory=dict)
    temps: dict[str, _Temp] = field(default_factory=dict)
    tries: list[tuple[ast.Try | ast.TryStar, Chain]] = field(default_factory=list)
    ifs: list[ast.If] = field(default_factory=list)
    #: temp -> the temp holding the callee it is a dispatch table's entry for
    entries: dict[str, str] = field(default_factory=dict)
    #: temp -> the name whose value it copies (``%4 = a``)
    copies: dict[str, str] = field(default_factory=dict)


def _release_scope(body: list[ast.stmt], base_exception: str | None, released_as: str,
                   parameters: set[str], hands_over: Callable[[str], bool]) -> None:
    scope = _Scope()
    _visit_block(scope, body, ())
    for entry, callee in scope.entries.items():
        # an entry need not hold its callee (a C entry holds it weakly): the callee lives
        # while its entry may still be called, as on CPython's stack through the call
        if entry in scope.temps and callee in scope.temps:
            scope.temps[callee].chains += scope.temps[entry].chains
            scope.temps[callee].nested |= scope.temps[entry].nested
    if all(temp.nested for temp in scope.temps.values()):
        return  # nothing of this scope's to release (a third of scopes: skip the walks)
    releases: dict[tuple[int, int], list[ast.stmt]] = {}  # (block, index) -> after it
    before: dict[int, list[ast.stmt]] = {}  # id of a jump -> statements before it
    handlers: dict[int, list[str]] = {}  # id of a try -> temps dead in its handlers
    released: list[str] = []
    entered: dict[int, tuple[ast.stmt, list[str]]] = {}  # id of a statement -> its temps
    #: id of a ``with`` -> the temps its first manager's expression alone uses
    hoisted: dict[int, tuple[ast.With | ast.AsyncWith, list[ast.stmt], list[str]]] = {}
    #: (id of an ``if``, a branch) -> the temps dead when that branch starts
    branch_starts: dict[tuple[int, str], tuple[ast.If, str, list[str]]] = {}
    inert = _lazy(lambda: _inert(scope, body, parameters))
    for name, temp in scope.temps.items():
        if temp.nested:
            continue
        level, block_id, first, last = _span(temp.chains)
        block = scope.blocks[block_id]
        released.append(name)
        if isinstance(block[last], _HEADED) and all(
                len(c) == level + 1 for c in temp.chains if c[level] == (block_id, last)):
            # used last by the header of a ``with``, ``for`` or ``if``: dead once its
            # body (or branch) starts
            header = block[last]
            if base_exception is not None and isinstance(header, ast.With | ast.AsyncWith) \
                    and _made_by_manager_only(header, name):
                hoisted.setdefault(id(header), (header, block, []))[2].append(name)
            else:
                entered.setdefault(id(header), (header, []))[1].append(name)
        at_yield = _take_at_yield(block[last], name, released_as)
        if not at_yield and not inert(name, scope.blocks[block_id][first:last + 1]):
            # taken from the local at its last reads where their statement goes on
            # running code after them
            for final in _final_statements(block[last], name):
                take_last_reads(final, name, released_as, hands_over)
        if not at_yield and not isinstance(block[last], _JUMPS):
            # (a yielded temp is released as the generator suspends, before the consumer
            # gets the value)
            bound = _binds(block[first], name)
            if bound and isinstance(block[first], ast.Assign) and \
                    isinstance(block[first].value, ast.Name):  # type: ignore[attr-defined]
                scope.copies[name] = block[first].value.id  # type: ignore[attr-defined]
            after, starts = ([(block_id, last)], []) if inert(name, block[first:last + 1]) \
                else _release_points(scope, temp.chains, level, block_id, last, first < last)
            for where in after:
                statement = scope.blocks[where[0]][where[1]]
                releases.setdefault(where, []).append(
                    _delete(name, statement) if bound else
                    _clear([name], statement, released_as))
            for if_, branch in starts:
                branch_starts.setdefault((id(if_), branch), (if_, branch, []))[2].append(name)
        for index in range(first, last + 1):
            for jump in _leaving_jumps(block[index], index == last):
                before.setdefault(id(jump), []).append(_clear([name], jump, released_as))
        for statement, chain in scope.tries:
            if all(_inside_body(c, chain, statement) for c in temp.chains):
                handlers.setdefault(id(statement), []).append(name)
    if not released:
        return
    _insert(scope, releases, before)  # first: it goes by the indexes found
    for header, dead in entered.values():
        for entered_block in _entered_blocks(header):
            entered_block[:0] = [_clear(dead, entered_block[0] if entered_block else header,
                                        released_as)]
    for if_, branch, dead in branch_starts.values():
        statements = getattr(if_, branch)
        statements[:0] = [_clear(dead, statements[0] if statements else if_, released_as)]
    _release_carriers(scope, released_as, inert)
    # an exception pops CPython's stack from the top: what was pushed last dies first, so
    # temps are cleared in the reverse of the order their statements define them (a with's
    # hoisted manager, under its body's temps, last)
    released.reverse()
    for number, (with_, with_block, dead) in enumerate(hoisted.values()):
        released.append(_hoist_manager(with_, with_block, dead, number, released_as))
    for statement, _chain in scope.tries:
        in_handlers = handlers.get(id(statement))
        if in_handlers:
            in_handlers.reverse()
            for handler in statement.handlers:
                handler.body[:0] = [_clear(in_handlers, handler.body[0], released_as)]
            if statement.finalbody:
                statement.finalbody[:0] = [_clear(in_handlers, statement.finalbody[0],
                                                  released_as)]
    if base_exception is not None:
        _wrap(body, released, base_exception, released_as)


def _lazy(make: Callable[[], Callable[[str, list[ast.stmt]], bool]]
          ) -> Callable[[str, list[ast.stmt]], bool]:
    """``make()``'s predicate, made on its first call (many scopes never ask)."""
    made: list[Callable[[str, list[ast.stmt]], bool]] = []

    def predicate(name: str, span: list[ast.stmt]) -> bool:
        if not made:
            made.append(make())
        return made[0](name, span)
    return predicate


def _inert(scope: _Scope, body: list[ast.stmt], parameters: set[str]
           ) -> Callable[[str, list[ast.stmt]], bool]:
    """Whether releasing a temp sooner can make no difference (so it needs no take and no
    release as a branch starts), given the statements it lives across: every binding of
    it computes its value

    - from splice's hidden names and constants alone (``%3 = @dispatch[@iadd]``): what it
      holds is held elsewhere too;
    - as a bool (``in``, ``not in``, ``is``, ``is not``, ``not``): nothing to finalise;
    - as a copy of a local variable (``%4 = ch``) that those statements do not rebind and
      no nested scope can: the variable holds the same object at least as long."""
    kinds: dict[str, set[str]] = {}
    copied: dict[str, str] = {}
    for block in scope.blocks.values():
        for statement in block:
            for node in _walk_scope(statement):
                if isinstance(node, ast.NamedExpr) and is_temp(node.target.id):
                    kinds.setdefault(node.target.id, set()).add("other")
                elif isinstance(node, ast.Assign):
                    kind = _value_kind(node.value)
                    for target in node.targets:
                        for named in walk(target):
                            if isinstance(named, ast.Name) and is_temp(named.id):
                                solo = target is named
                                kinds.setdefault(named.id, set()).add(kind if solo else "other")
                                if solo and kind == "copy":
                                    assert isinstance(node.value, ast.Name)
                                    if copied.setdefault(named.id, node.value.id) != \
                                            node.value.id:
                                        kinds[named.id].add("other")
    local = _stable_locals(body, parameters)

    def inert(name: str, span: list[ast.stmt]) -> bool:
        found = kinds.get(name)
        if not found or "other" in found:
            return False
        if "copy" in found:
            variable = copied[name]
            if variable not in local or any(variable in _stored_in(s) for s in span):
                return False
        return True
    return inert


def _value_kind(value: ast.expr) -> str:
    if all(not isinstance(n, ast.Name) or n.id.startswith("@") for n in walk(value)):
        return "hidden"
    callee = _looked_up(value)
    if callee is not None and _variable(callee):
        # a dispatch table's entry for a callee a variable holds (splice.compiler.route_calls):
        # the table holds it, or it holds no more than the callee (held by the variable)
        return "hidden"
    if isinstance(value, ast.Compare) and all(
            isinstance(op, ast.In | ast.NotIn | ast.Is | ast.IsNot) for op in value.ops) or \
            isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return "bool"
    if isinstance(value, ast.Name) and not is_temp(value.id) and value.id[:1] != "@":
        return "copy"
    return "other"


def _looked_up(value: ast.expr) -> ast.expr | None:
    """The callee when ``value`` is a dispatch table's entry for it (``@dict[f]``,
    ``@_slow_entry(f)``, ``@Methods(f)``: splice.compiler.route_calls), else ``None``."""
    if isinstance(value, ast.Subscript) and _hidden(value.value, "@dict"):
        return value.slice
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords and (
            _hidden(value.func, "@_slow_entry") or _hidden(value.func, "@Methods")):
        return value.args[0]
    return None


def _variable(node: ast.AST) -> bool:
    """Whether ``node`` reads a variable of the program (not a temp, not a hidden name)."""
    return isinstance(node, ast.Name) and not is_temp(node.id) and node.id[:1] != "@"


def _hidden(node: ast.AST, prefix: str) -> bool:
    """Whether ``node`` names the hidden cell ``prefix`` (``@dict``, ``@dict2``, ...)."""
    return isinstance(node, ast.Name) and node.id.startswith(prefix) and \
        (node.id == prefix or node.id[len(prefix):].isdigit())


def _stable_locals(body: list[ast.stmt], parameters: set[str]) -> set[str]:
    """The local variables of a scope that only its own statements can rebind: bound in
    it (or parameters), not declared ``global`` or ``nonlocal``, not named in a nested
    scope (which could rebind them through a cell)."""
    bound = set(parameters)
    declared: set[str] = set()
    nested: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(statement, False) for statement in body]
    while stack:
        node, inside = stack.pop()
        if isinstance(node, ast.Name):
            (nested if inside else bound if not isinstance(node.ctx, ast.Load)
             else set()).add(node.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        stack.extend((child, inside or isinstance(node, _SCOPES))
                     for child in children(node))
    return bound - declared - nested


def _stored_in(statement: ast.stmt) -> set[str]:
    return {n.id for n in walk(statement) if isinstance(n, ast.Name)
            and not isinstance(n.ctx, ast.Load)}


def _walk_scope(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of ``statement`` outside its blocks and nested scopes."""
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES) and node is not statement:
            continue
        for name, value in ast.iter_fields(node):
            if node is statement and name in _BLOCK_FIELDS + ("handlers", "cases"):
                continue
            if isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))


def _final_statements(statement: ast.stmt, name: str) -> list[ast.stmt]:
    """The statements holding the reads of ``name`` that no read follows, given that
    ``statement`` is the last one naming it in its block: ``statement`` when it names it
    in its own expressions only; inside a ``try`` (whose handlers, ``else`` and
    ``finally`` do not name it), a ``with`` whose header does not name it or an ``if``, the
    last statement naming it in each block, recursively (an ``if``'s test runs before
    either branch: a guarded direct call tests an argument's class, then passes it); none
    in a loop (the next iteration may read it again) or where the header and the body of
    a ``with`` both name it."""
    own = any(n == name for n, _ in _own_names(statement))
    blocks = [b for b in _child_blocks(statement) if any(name in _temps_in(s) for s in b)]
    if not blocks:
        return [statement] if own else []
    if own and not isinstance(statement, ast.If) or not isinstance(
            statement, ast.Try | ast.TryStar | ast.With | ast.AsyncWith | ast.If):
        return []
    if isinstance(statement, ast.Try | ast.TryStar) and blocks != [statement.body]:
        return []
    finals: list[ast.stmt] = []
    for block in blocks:
        last = max(i for i, s in enumerate(block) if name in _temps_in(s))
        finals.extend(_final_statements(block[last], name))
    return finals


def _release_carriers(scope: _Scope, released_as: str,
                      inert: Callable[[str, list[ast.stmt]], bool]) -> None:
    """A temp an ``if`` tests that a branch assigns before anything reads it (codegen's
    carrier of a chained comparison or of an ``and``/``or``: ``if %5: %5 = b < c``) is dead
    once that branch starts: cleared there, as CPython pops the tested value before the
    branch runs. Not when a handler or ``finally`` of the scope names it (an exception
    before the assignment would reach it)."""
    in_handlers: set[str] = set()
    for try_, _chain in scope.tries:
        for part in (*(h.body for h in try_.handlers), try_.finalbody):
            for child in part:
                in_handlers |= _temps_in(child)
    for if_ in scope.ifs:
        tested = sorted(name for name in _temps_in(if_.test)
                        if name not in in_handlers and not scope.temps[name].nested
                        and not inert(name, [if_]))
        for branch in (if_.body, if_.orelse):
            dead = [name for name in tested if _assigned_first(branch, name, released_as)]
            if dead:
                branch[:0] = [_clear(dead, branch[0], released_as)]


def _assigned_first(block: list[ast.stmt], name: str, released_as: str) -> bool:
    """Whether the first statement of ``block`` naming ``name`` is ``name = E`` (``E`` not
    naming it, and not a release), reached from the block's start without a jump."""
    for statement in block:
        if name in _temps_in(statement):
            return _binds(statement, name) and isinstance(statement, ast.Assign) and \
                name not in _temps_in(statement.value) and not (
                    isinstance(statement.value, ast.Name) and statement.value.id == released_as)
        if any(isinstance(node, _JUMPS) for node in walk(statement)):
            return False
    return False


def _visit_block(scope: _Scope, block: list[ast.stmt], chain: Chain) -> None:
    scope.blocks[id(block)] = block
    for index, statement in enumerate(block):
        here = (*chain, (id(block), index))
        for name, nested in _own_names(statement):
            temp = scope.temps.setdefault(name, _Temp())
            temp.chains.append(here)
            temp.nested |= nested
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, callee = statement.targets[0], _looked_up(statement.value)
            if isinstance(target, ast.Name) and isinstance(callee, ast.Name) and \
                    is_temp(callee.id):
                scope.entries[target.id] = callee.id
        if isinstance(statement, ast.Try | ast.TryStar):
            scope.tries.append((statement, here))
        elif isinstance(statement, ast.If):
            scope.ifs.append(statement)
        for child in _child_blocks(statement):
            _visit_block(scope, child, here)


def _child_blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    for name in _BLOCK_FIELDS:
        block = getattr(statement, name, None)
        if block:
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _own_names(statement: ast.stmt) -> Iterator[tuple[str, bool]]:
    """The temps named in ``statement`` outside its blocks of statements, each with whether
    the name is in a nested scope."""
    roots: list[tuple[ast.AST, bool]] = []
    for name, value in ast.iter_fields(statement):
        if name in _BLOCK_FIELDS:
            continue
        if name == "handlers":
            roots.extend((h.type, False) for h in value if h.type is not None)
        elif name == "cases":
            for case in value:
                roots.append((case.pattern, False))
                if case.guard is not None:
                    roots.append((case.guard, False))
        elif isinstance(value, ast.AST):
            roots.append((value, False))
        elif isinstance(value, list):
            roots.extend((item, False) for item in value if isinstance(item, ast.AST))
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        if is_temp(statement.name):  # codegen's function for a comprehension
            yield statement.name, False
        # a nested def's body is its own scope: its decorators, defaults and bases are
        # ours; a temp its body reads without binding it is ours, read later (nested);
        # the temps it binds are its own (each scope numbers its temps from 1)
        yield from ((name, True) for name in sorted(_free_temps(statement.body)))
    while roots:
        node, nested = roots.pop()
        if isinstance(node, ast.Name) and is_temp(node.id):
            yield node.id, nested
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name and is_temp(node.name):
            yield node.name, nested
        if isinstance(node, _COMPREHENSIONS):
            # the outermost iterable is evaluated where the comprehension is, once; the
            # rest runs in the comprehension's scope (a function of its own on 3.11,
            # inlined from 3.12, PEP 709: its temps are left alone either way)
            outermost = node.generators[0].iter
            roots.append((outermost, nested))
            roots.extend((child, True) for child in _walk_except(node, outermost))
            continue
        inner = nested or isinstance(node, _SCOPES)
        roots.extend((child, inner) for child in children(node))


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _free_temps(body: list[ast.stmt]) -> set[str]:
    """The temps a nested scope's ``body`` reads (anywhere in it, nested scopes included)
    that its own scope does not bind: those refer to an enclosing scope's temps."""
    read: set[str] = set()
    bound: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(statement, True) for statement in body]
    while stack:
        node, own = stack.pop()
        if isinstance(node, ast.Name) and is_temp(node.id):
            if isinstance(node.ctx, ast.Load):
                read.add(node.id)
            elif own:
                bound.add(node.id)
        elif own and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                and is_temp(node.name):
            bound.add(node.name)
        inner = own and not isinstance(node, _SCOPES)
        stack.extend((child, inner) for child in children(node))
    return read - bound


def _walk_except(node: ast.AST, skipped: ast.AST) -> Iterator[ast.AST]:
    """The children of ``node`` and of its ``comprehension`` nodes, but ``skipped``."""
    for child in children(node):
        if isinstance(child, ast.comprehension):
            yield from (c for c in children(child) if c is not skipped)
        elif child is not skipped:
            yield child


def _temps_in(node: ast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name) and is_temp(n.id)}


def _made_by_manager_only(statement: ast.With | ast.AsyncWith, name: str) -> bool:
    """Whether the first manager's expression is the only part of ``statement`` naming
    ``name``."""
    first, *others = statement.items
    rest = [first.optional_vars, *(i.context_expr for i in others),
            *(i.optional_vars for i in others)]
    return name in _temps_in(first.context_expr) and \
        not any(name in _temps_in(part) for part in rest if part is not None)


def _hoist_manager(statement: ast.With | ast.AsyncWith, block: list[ast.stmt],
                   names: list[str], number: int, released_as: str) -> str:
    """``with E(%3):`` as ``%withN = E(%3); %3 = @Released; with %withN:``: CPython pops the
    arguments of the manager's expression before ``__enter__`` runs, which a statement
    after the ``with`` comes too late for. The manager itself stays alive for the whole
    statement natively too (its ``__exit__`` is on the stack); it is cleared when the body
    starts. Returns the new temp's name."""
    manager = f"%with{number}"
    first = statement.items[0]
    expression = first.context_expr
    assign = ast.Assign([ast.Name(manager, ast.Store())], expression)
    _located_like(assign, expression)  # type: ignore[arg-type]
    _located_like(assign.targets[0], expression)  # type: ignore[arg-type]
    name = ast.Name(manager, ast.Load())
    _located_like(name, expression)  # type: ignore[arg-type]
    first.context_expr = name
    index = next(i for i, s in enumerate(block) if s is statement)
    block[index:index] = [assign, _clear(names, assign, released_as)]
    statement.body[:0] = [_clear([manager], statement.body[0], released_as)]
    return manager


def _entered_blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks that start once ``statement``'s header has run (an ``if`` without
    ``else`` gets one)."""
    if isinstance(statement, ast.If):
        if not statement.orelse:
            statement.orelse = []
        return [statement.body, statement.orelse]
    return [statement.body]  # type: ignore[attr-defined]


def _release_points(scope: _Scope, chains: list[Chain], level: int, block_id: int,
                    index: int, bound_before: bool
                    ) -> tuple[list[tuple[int, int]], list[tuple[ast.If, str]]]:
    """Where a temp that ``block[index]`` uses last dies: after that statement, or, when
    it is an ``if`` whose branches use the temp, in each branch: after the branch's last
    statement using it (recursively), or as a branch that does not use it starts (when the
    temp is bound before the ``if``). CPython pops a value at its last use on the path
    taken; after the whole ``if`` frees it after what the branch made from it (``a < b <
    c`` frees ``c`` before ``b``). Returns the (block, index) pairs to release after and
    the (``if``, branch) pairs to release at the start of."""
    statement = scope.blocks[block_id][index]
    inner = [c for c in chains if len(c) > level + 1 and c[level] == (block_id, index)]
    if not isinstance(statement, ast.If) or not inner:
        return [(block_id, index)], []
    after: list[tuple[int, int]] = []
    starts: list[tuple[ast.If, str]] = []
    at_ends = 0  # branches whose end is the temp's last use on their path
    for branch in ("body", "orelse"):
        statements = getattr(statement, branch)
        here = [c for c in inner if c[level + 1][0] == id(statements)]
        if not here:
            if bound_before:
                starts.append((statement, branch))
            continue
        indexes = [c[level + 1][1] for c in here]
        last = max(indexes)
        if isinstance(statements[last], _JUMPS):
            continue  # nothing runs after it
        more_after, more_starts = _release_points(
            scope, here, level + 1, id(statements), last, bound_before or min(indexes) < last)
        after += more_after
        starts += more_starts
        at_ends += not more_starts and more_after == [(id(statements), len(statements) - 1)]
    if at_ends == 2:
        # nothing runs between the last use and the end of the ``if`` on either path: one
        # release after it, where the order of a guarded store's releases is known
        return [(block_id, index)], []
    return after, starts


def _span(chains: list[Chain]) -> tuple[int, int, int, int]:
    """The innermost block holding every chain (its depth in the chains and its id), and
    the first and last index in it of a statement holding one."""
    depth = 0
    shortest = min(len(c) for c in chains)
    while depth < shortest and all(c[depth] == chains[0][depth] for c in chains):
        depth += 1
    if depth == shortest or len({c[depth][0] for c in chains}) > 1:
        # one occurrence is in a statement holding all others, or they are in different
        # blocks of one statement (the two branches of an ``if``): that statement's block
        block_id, index = chains[0][depth - 1]
        return depth - 1, block_id, index, index
    block_id = chains[0][depth][0]
    indexes = [c[depth][1] for c in chains]
    return depth, block_id, min(indexes), max(indexes)


def _binds(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` is ``name = ...`` or ``def name`` (so ``name`` is bound once
    it completes)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return statement.name == name
    return (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == name)


def _leaving_jumps(statement: ast.stmt, last: bool) -> Iterator[ast.Break | ast.Continue]:
    """The ``break`` and ``continue`` statements in ``statement`` that jump out of the block
    holding it (not those of a loop inside it). A jump that is ``statement`` itself leaves
    the block too, unless it is the last use (then it is not after it)."""
    if isinstance(statement, ast.Break | ast.Continue):
        if not last:
            yield statement
        return
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    blocks = list(_child_blocks(statement))
    if isinstance(statement, _LOOPS):
        blocks = [statement.orelse]
    for block in blocks:
        for child in block:
            yield from _leaving_jumps(child, False)


def _inside_body(chain: Chain, try_chain: Chain, statement: ast.Try | ast.TryStar) -> bool:
    depth = len(try_chain)
    return chain[:depth] == try_chain and len(chain) > depth and \
        chain[depth][0] == id(statement.body)


def _take_at_yield(statement: ast.stmt, name: str, released_as: str) -> bool:
    """When ``statement`` uses ``name`` once, as the value of a ``yield``: rewrite that
    ``yield %t`` as ``yield (%t, (%t := @Released))[0]`` and say so. The generator is
    suspended until the consumer asks again, so a release after the statement would keep
    the yielded value alive while the consumer may have dropped it; natively the value
    leaves the generator's stack as it is yielded."""
    found: list[ast.Yield] = []
    uses = 0
    for node in walk(statement):
        if isinstance(node, ast.Name) and node.id == name:
            uses += 1
        elif isinstance(node, ast.Yield) and isinstance(node.value, ast.Name) and \
                node.value.id == name:
            found.append(node)
        elif isinstance(node, _SCOPES):
            return False  # a nested scope's yield or use is not this frame's
    if uses != 1 or len(found) != 1:
        return False
    value = found[0].value
    assert isinstance(value, ast.Name)
    clear = ast.NamedExpr(ast.Name(name, ast.Store()), ast.Name(released_as, ast.Load()))
    taken = ast.Subscript(ast.Tuple([ast.Name(name, ast.Load()), clear], ast.Load()),
                          ast.Constant(0), ast.Load())
    for node in walk(taken):
        ast.copy_location(node, value)
    found[0].value = taken
    return True


def _delete(name: str, where: ast.stmt) -> ast.stmt:
    return _located(ast.Delete([ast.Name(name, ast.Del())]), where)


def _clear(names: list[str], where: ast.stmt, released_as: str) -> ast.stmt:
    targets: list[ast.expr] = [ast.Name(name, ast.Store()) for name in names]
    return _located(ast.Assign(targets, ast.Name(released_as, ast.Load())), where)


def _located(node: ast.stmt, where: ast.stmt) -> ast.stmt:
    """``node`` at the end of ``where``'s span: the line a tracer already saw."""
    line = getattr(where, "end_lineno", None) or getattr(where, "lineno", None)
    column = getattr(where, "end_col_offset", None) or 0
    if line is not None:
        for child in walk(node):
            if "lineno" in type(child)._attributes:
                child.lineno = child.end_lineno = line  # type: ignore[attr-defined]
                child.col_offset = child.end_col_offset = column  # type: ignore[attr-defined]
    return node


def _insert(scope: _Scope, releases: dict[tuple[int, int], list[ast.stmt]],
            before: dict[int, list[ast.stmt]]) -> None:
    for block_id, block in scope.blocks.items():
        new: list[ast.stmt] = []
        for index, statement in enumerate(block):
            new.extend(before.get(id(statement), ()))
            new.append(statement)
            new.extend(_in_native_order(statement, releases.get((block_id, index), []),
                                         scope.copies))
        block[:] = new


def _in_native_order(statement: ast.stmt, after: list[ast.stmt], copies: dict[str, str]
                     ) -> list[ast.stmt]:
    """The releases after ``statement`` in the order CPython drops the values: when it
    stores into an attribute or an item, the stored value first (then the object, then
    the key); when it rebinds a name, a temp copying that name's old value last (natively
    the old value dies at the store, after the operands the statement consumed)."""
    target = statement
    if isinstance(target, ast.If) and len(target.body) == 1:
        target = target.body[0]  # a guarded store (its other branch calls a hook)
    if not isinstance(target, ast.Assign) or len(target.targets) != 1:
        return after
    stored = target.value.id if isinstance(target.value, ast.Name) else None
    rebound = target.targets[0].id if isinstance(target.targets[0], ast.Name) else None

    def rank(release: ast.stmt) -> int:
        targets = release.targets if isinstance(release, ast.Delete | ast.Assign) else []
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if stored in names:
            return 0
        if rebound is not None and any(copies.get(n) == rebound for n in names):
            return 2
        return 1
    return sorted(after, key=rank)


def _wrap(body: list[ast.stmt], names: list[str], base_exception: str, released_as: str
          ) -> None:
    """``try: body except BaseException: names = None; raise``, keeping a docstring first."""
    start = 1 if body and _is_docstring(body[0]) else 0
    inner = body[start:]
    if not inner:
        return
    first, last = inner[0], inner[-1]
    clear = _located(_clear(names, last, released_as), last)
    reraise = _located(ast.Raise(), last)
    handler = ast.ExceptHandler(ast.Name(base_exception, ast.Load()), None, [clear, reraise])
    _located_like(handler, last)
    _located_like(handler.type, last)  # type: ignore[arg-type]
    wrapper = ast.Try(inner, [handler], [], [])
    _located_like(wrapper, first)
    body[start:] = [wrapper]


def _located_like(node: ast.AST, where: ast.stmt) -> None:
    for name in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        setattr(node, name, getattr(where, name, None))


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)
