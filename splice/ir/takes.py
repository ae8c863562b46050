"""Release a hidden temporary at its last read inside a statement.

``splice.ir.release`` frees a temp after the last statement that names it. Natively the value
lived on CPython's stack and died as soon as the operation that consumed it finished, which
may be well before its statement ends: in ``return [-(-a), abs(a)]`` under a hook, the
inner negation (a temp read by the outer one) dies natively before ``abs`` is called; in
``a < b < c`` the result of ``a < b`` dies before ``b < c`` runs. When something that can
run code follows the consumer in the statement, the last read ``%t`` becomes
``(%t, (%t := @Released))[0]``: the value moves from the local to the stack, where the
consumer pops it as CPython would.

A read is *final* when no read of the temp can be evaluated after it, on any path through
the statement's conditional expressions and short circuits (a backward pass in CPython's
evaluation order, where both arms of ``x if c else y`` continue with what follows them).
Soundness: the caller passes only the last statement naming the temp in the block that
holds all its occurrences, with every occurrence in the statement's own expressions (none in
its blocks), so after a final read the temp is never read again before a new write
(``splice.ir.release``'s argument); replacing the read by the take evaluates the same value
once, in the same place. A take that was not needed only costs a tuple (about 15 ns), so
the consumer of a method call's receiver is the call (the receiver stays on the stack as
``self`` until the call returns), and the caller skips temps whose release could make no
difference (``splice.ir.release``, inert temps).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from splice.ir.walk import walk
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["take_last_reads"]

#: statements whose own expressions this pass rewrites: they run once, top to bottom
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.If, ast.Raise,
           ast.Assert, ast.For, ast.AsyncFor)
#: expressions that hand their operand on (to their own consumer) instead of consuming it
_PASSING = (ast.IfExp, ast.BoolOp, ast.NamedExpr, ast.Tuple, ast.List, ast.keyword)
#: expressions whose own operation runs no code of the program
_QUIET = (ast.Name, ast.Constant, ast.Tuple, ast.List, ast.NamedExpr, ast.IfExp, ast.JoinedStr,
          ast.Lambda, ast.Slice, ast.keyword, ast.expr_context)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: the mark on a take's subscript (so it counts as quiet)
_TAKE = "_splice_take"


def take_last_reads(statement: ast.stmt, name: str, released_as: str,
                    hands_over: Callable[[str], bool] = lambda hidden: False) -> None:
    """Rewrite in place the final reads of temp ``name`` in ``statement`` whose value is
    dead natively before ``statement`` ends. ``statement`` names ``name`` only in its own
    expressions and is its last use (see the module docstring). ``hands_over(hidden)``:
    whether a call of the hidden name ``hidden`` may run a Python function of the program
    (whose frame takes the arguments over), rather than a helper of splice's."""
    if not isinstance(statement, _SIMPLE):
        return
    if isinstance(statement, ast.AugAssign | ast.For | ast.AsyncFor) and \
            isinstance(statement.target, ast.Name) and statement.target.id == name:
        return
    parents: dict[int, ast.AST] = {}
    for root in _ordered_roots(statement):
        _link(root, statement, parents)
    finals: list[ast.Name] = []
    live = False
    for root in reversed(_ordered_roots(statement)):
        live = _backward(root, name, live, finals)
    for read in finals:
        consumer, below = _consumer(read, parents)
        if consumer is statement:
            # consumed by the statement itself: only the iteration of a ``for`` and the
            # operation of an augmented assignment run code after taking the value
            taken = isinstance(statement, ast.For | ast.AsyncFor | ast.AugAssign)
        else:
            # ``yield from`` and ``await`` take an iterator of the value and run it; a
            # called function dies before the arguments the call drops, and an argument
            # before the later ones; a Python function's frame takes its arguments over
            # (a parameter it deletes or rebinds frees its object there)
            taken = not _in_comprehension(read, parents) and (
                isinstance(consumer, ast.YieldFrom | ast.Await)
                or isinstance(consumer, ast.Call) and consumer.func is read
                and bool(consumer.args or consumer.keywords)
                or isinstance(consumer, ast.Call) and consumer.func is not below
                and _may_hand_over(consumer.func, hands_over)
                or isinstance(consumer, ast.Call) and _dropped_before_others(consumer, below)
                or _runs_after(consumer, below, statement, parents))
        if taken:
            _replace(parents[id(read)], read, _take(read, released_as))


def _may_hand_over(callee: ast.expr, hands_over: Callable[[str], bool]) -> bool:
    """Whether a call of ``callee`` may be a call of a Python function of the program: any
    callee but a hidden name bound to one of splice's helpers (``@Methods``, ...)."""
    if isinstance(callee, ast.Name) and callee.id.startswith("@"):
        return hands_over(callee.id)
    return True


def _dropped_before_others(call: ast.Call, argument: ast.AST) -> bool:
    """Whether ``argument`` of ``call`` comes before an argument that may be a new object:
    a call lets go of its arguments in order when it returns, so a temp left in its local
    would die after that object instead of before it."""
    order: list[ast.AST] = [*call.args, *call.keywords]
    position = next((i for i, item in enumerate(order) if item is argument), None)
    return position is not None and any(_has_code(later) for later in order[position + 1:])


def _in_comprehension(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether ``node`` is in a comprehension's outermost iterable (where ``:=`` is not
    allowed)."""
    while id(node) in parents:
        node = parents[id(node)]
        if isinstance(node, _COMPREHENSIONS):
            return True
    return False


def _ordered_roots(statement: ast.stmt) -> list[ast.expr]:
    """The statement's own expressions in evaluation order (blocks left out)."""
    match statement:
        case ast.Assign(targets=targets, value=value):
            return [value, *targets]
        case ast.AnnAssign(target=target, value=value):
            return [value, target] if value is not None else []
        case ast.AugAssign(target=target, value=value):
            return [target, value]
        case ast.Expr(value=value) | ast.Return(value=value) if value is not None:
            return [value]
        case ast.If(test=test):
            return [test]
        case ast.For(iter=iterable) | ast.AsyncFor(iter=iterable):
            return [iterable]  # (its target is stored into on each step, after it)
        case ast.Raise(exc=exc, cause=cause):
            return [e for e in (exc, cause) if e is not None]
        case ast.Assert(test=test, msg=msg):
            return [e for e in (test, msg) if e is not None]
    return []


def _link(node: ast.AST, parent: ast.AST, parents: dict[int, ast.AST]) -> None:
    parents[id(node)] = parent
    if isinstance(node, ast.Lambda):
        return  # its body is its own scope
    for child in ast.iter_child_nodes(node):
        _link(child, node, parents)


def _children_in_order(node: ast.AST) -> list[ast.AST]:
    """``node``'s children in the order CPython evaluates them (both arms of a conditional
    expression listed; the caller handles the branching)."""
    match node:
        case ast.NamedExpr(target=target, value=value):
            return [value, target]
        case ast.Dict(keys=keys, values=values):
            return [n for k, v in zip(keys, values, strict=True) for n in (k, v)
                    if n is not None]
        case ast.Lambda(args=args):
            return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        case ast.ListComp() | ast.SetComp() | ast.DictComp() | ast.GeneratorExp():
            return [node.generators[0].iter]  # the rest runs in its own scope, later
    return list(ast.iter_child_nodes(node))


def _backward(node: ast.AST, name: str, live: bool, finals: list[ast.Name]) -> bool:
    """Whether a read of ``name`` may be evaluated from the start of ``node`` on, given
    ``live`` (whether one may follow ``node``); collects the reads none may follow."""
    if isinstance(node, ast.Name):
        if node.id == name and isinstance(node.ctx, ast.Load):
            if not live:
                finals.append(node)
            return True
        return live
    if isinstance(node, ast.IfExp):
        arms = _backward(node.body, name, live, finals)
        arms = _backward(node.orelse, name, live, finals) or arms
        return _backward(node.test, name, arms, finals)
    for child in reversed(_children_in_order(node)):
        live = _backward(child, name, live, finals)
    return live


def _consumer(read: ast.AST, parents: dict[int, ast.AST]) -> tuple[ast.AST, ast.AST]:
    """The node that consumes the value ``read`` loads (past the nodes that hand it on),
    and its child on the way to ``read``."""
    below, node = read, parents[id(read)]
    while isinstance(node, _PASSING) and not (isinstance(node, ast.IfExp)
                                              and below is node.test):
        below, node = node, parents[id(node)]
    if isinstance(node, ast.Attribute) and below is node.value:
        parent = parents[id(node)]
        if isinstance(parent, ast.Call) and parent.func is node:
            # ``%t.m(...)``: the receiver stays on the stack as the method's ``self``
            # until the call returns (LOAD_METHOD), so the call is what consumes it
            return parent, node
    return node, below


def _runs_after(consumer: ast.AST, below: ast.AST, statement: ast.stmt,
                parents: dict[int, ast.AST]) -> bool:
    """Whether code of the program may run in ``statement`` after ``consumer`` (reached
    from ``below``) is done with its operand: an operation above it, or one in a part
    of an enclosing expression that is not already evaluated (over-approximated: any other
    part)."""
    node: ast.AST = consumer
    while node is not statement:
        parent = parents[id(node)]
        if parent is statement:
            return _statement_runs_after(statement, node)
        if isinstance(parent, ast.BoolOp) and node is not parent.values[-1]:
            return True  # the value is tested
        if isinstance(parent, ast.IfExp) and node is parent.test:
            return True
        if not isinstance(parent, _QUIET) and not getattr(parent, _TAKE, False):
            return True
        if any(_has_code(child) for child in _after(node, parent)):
            return True
        node = parent
    return False


def _after(child: ast.AST, parent: ast.AST) -> list[ast.AST]:
    """The children of ``parent`` that may be evaluated after ``child``."""
    if isinstance(parent, ast.IfExp):
        return [parent.body, parent.orelse] if child is parent.test else []
    order = _children_in_order(parent)
    return order[order.index(child) + 1:] if child in order else []


def _statement_runs_after(statement: ast.stmt, root: ast.AST) -> bool:
    if isinstance(statement, ast.If | ast.Assert) and root is statement.test:
        return True  # the test's truth
    if isinstance(statement, ast.AugAssign | ast.For | ast.AsyncFor):
        return True  # the operation and the store; the iteration
    order: list[ast.AST] = list(_ordered_roots(statement))
    # what follows: a cause to evaluate, a target to store into or unpack into (storing
    # into a name runs nothing of the program's)
    return any(not isinstance(later, ast.Name) for later in order[order.index(root) + 1:])


def _has_code(node: ast.AST) -> bool:
    """Whether evaluating ``node`` may run code of the program."""
    if not isinstance(node, _QUIET) and not getattr(node, _TAKE, False):
        return True
    if isinstance(node, ast.Lambda):
        return any(_has_code(c) for c in _children_in_order(node))
    return any(_has_code(child) for child in ast.iter_child_nodes(node))


def _take(read: ast.Name, released_as: str) -> ast.expr:
    clear = ast.NamedExpr(ast.Name(read.id, ast.Store()), ast.Name(released_as, ast.Load()))
    taken = ast.Subscript(ast.Tuple([ast.Name(read.id, ast.Load()), clear], ast.Load()),
                          ast.Constant(0), ast.Load())
    setattr(taken, _TAKE, True)
    for node in walk(taken):
        ast.copy_location(node, read)
    return taken


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for index, item in enumerate(value):
                if item is old:
                    value[index] = new
                    return
    raise AssertionError(f"{old!r} is not a child of {parent!r}")
