"""The call-site pass: route every call of a scope through a dispatch table.

``f(args)`` becomes ``@dispatch[f](args)``: one C-level dict lookup per call when the table
already knows ``f``. A method call ``obj.name(args)`` keeps its attribute lookup and then
looks up the *function* behind the bound method, so the table is keyed by long-lived objects:

    %m = getattr(obj, 'name')
    %r = @dispatch[%m.__func__](%m.__self__, args) if type(%m) is MethodType
         else %m(args) if type(%m) is BuiltinMethodType      # sites whose name no overlay takes
         else @dispatch[%m](args)

With the C method lookup (``splice/runtime/_methods.c``) it is one expression instead,
``@Methods(obj, 'name')(args)``; where a local that only the function rebinds (a fast
local, or a cell no nested scope stores) holds the receiver and nothing between the lookup
and the call can rebind it, ``@Methods(obj, 'name')(obj, args)`` (the lookup's
``receiver_first`` twin: a method found on the class is called with no method object).
``@Methods`` is the lookup as a builtin function (``Methods.builtin``), whose calls
CPython specialises.

The pass rewrites the scope itself and the nested scopes that run as part of it
(comprehensions, generator expressions, class bodies). Nested functions and lambdas are left
alone: ``splice.ir.assemble.restore_nested_code`` gives them back their original code
objects, so functions created under a context behave natively when called outside it.
"""

from __future__ import annotations

import ast
import dis
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from splice.compiler.proven import Proven, proven_classes
from splice.ir.call_positions import attribute_position, call_position
from splice.ir.nodes import (
    NOPOS,
    Assign,
    Call,
    ClassDef,
    Compare,
    Const,
    Copy,
    FunctionDef,
    FunctionIR,
    GetAttr,
    GetItem,
    Handler,
    If,
    IfExp,
    Load,
    MakeComprehension,
    Match,
    Operand,
    Pos,
    Region,
    Stmt,
    Store,
    Temp,
    Try,
    Var,
    Walrus,
    walk_block,
)
from splice.ir.tools import definitions, locations, redefined, use_counts
from splice.keys import ClassSet, hashed_by_identity
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

_type = type
_MethodType = types.MethodType
_BuiltinMethodType = types.BuiltinMethodType
#: the kinds of callee that a subscript of the dispatch table looks up (their hash is
#: their identity); other callees take the table's C lookup
_KEYED_KINDS = ClassSet({types.FunctionType, type})
_MethodWrapperType = types.MethodWrapperType

__all__ = ["enclosing_class", "expression_statements", "mangle", "route_calls",
           "scopes_run_inline"]


def route_calls(ir: FunctionIR, table: Any, overlay_names: frozenset[str], *,
                plain: bool = False, direct_builtins: bool = True,
                global_site: Callable[[str], Any] | None = None,
                native_attributes: set[int] | None = None,
                methods: Any = None, held_call: Any = None,
                callback_keywords: Mapping[str, str] | None = None) -> int:
    """Rewrite every call of ``ir`` (and of the nested scopes it runs) to go through
    ``table``. Returns the number of call sites rewritten. A method site whose name is not
    in ``overlay_names`` calls a builtin method directly. ``plain``: only lookups that stay
    one expression (for code that must be one, such as a lambda's body).
    ``direct_builtins``: builtin methods may be called without the table (no plugin hook
    or intercept needs to see them). Decorators are looked up in the table too.
    ``global_site(name)``: the ``splice.runtime.sites.Site`` for calls of the global
    ``name`` in ``ir``'s own scope (None: not a global there); such calls use it instead of
    a table lookup. A builtin method called on a value whose class no rebinding can change
    (``out = []; out.append(x)``: ``splice.compiler.proven``) is called as natively. The ids
    of the statements it adds that read an attribute of a bound method, of an object of a
    known builtin type (``%m.__func__``) or of a site are added to ``native_attributes``.
    ``methods``: the table's ``splice.runtime._methods.Methods`` (None: not built), for
    method calls without a bound method where no hook needs to see builtin methods.
    A callee that only a temporary holds (``make()()``) stays alive until its call returns
    and dies before the arguments, as on CPython's stack: ``held_call``
    (``splice.runtime.native.HELD_CALL``, for tables whose entries may hold a nested
    function weakly) calls it as ``held_call(entry, callee, *args)``; elsewhere (and in
    code that must stay expressions) its lookup is one expression with it,
    ``@methods(make())(args)``, whose C lookup binds the entry to a callee nothing else
    holds. ``callback_keywords``: names of ``overlay_names`` routed only for a callable
    passed by keyword (``sort`` for ``key``); a method call passing neither that keyword
    nor ``**`` is not routed (it looks up with ``table.methods_without_callbacks``)."""
    count = 0
    inserted = native_attributes if native_attributes is not None else set()
    for scope, private in scopes_run_inline(ir, enclosing_class(ir)):
        count += _route_scope(scope, table, overlay_names, plain, direct_builtins, inserted,
                              global_site if scope is ir else None,
                              methods if direct_builtins else None, private, held_call,
                              callback_keywords or {})
    return count


def scopes_run_inline(ir: FunctionIR, private: str | None = None
                      ) -> Iterator[tuple[FunctionIR, str | None]]:
    """``ir`` and the scopes that run as part of it (class bodies, comprehensions), each
    with the name of the class that mangles its private names (``private`` for ``ir``)."""
    yield ir, private
    for loc in locations(ir):
        stmt = loc.stmt
        if isinstance(stmt, ClassDef):
            yield from scopes_run_inline(stmt.fn, stmt.fn.name)
        elif isinstance(stmt, Assign) and isinstance(stmt.op, MakeComprehension):
            yield from scopes_run_inline(stmt.op.fn, private)


def enclosing_class(ir: FunctionIR) -> str | None:
    """The class whose name mangles private names in ``ir`` (the nearest enclosing one)."""
    for node in reversed(getattr(ir.origin, "enclosing", ())):
        if isinstance(node, ast.ClassDef):
            return node.name
    return None


def mangle(private: str | None, name: str) -> str:
    """``name`` as the compiler mangles it inside class ``private`` (``_Py_Mangle``)."""
    if private is None or name[:2] != "__" or name[-2:] == "__" or "." in name:
        return name
    stripped = private.lstrip("_")
    return f"_{stripped}{name}" if stripped else name


class _Scope:
    """What the pass looks up often, computed once per scope: the block holding each
    statement (blocks are lists that stay the same objects as statements are inserted)
    and how many times each temp is used."""

    def __init__(self, ir: FunctionIR) -> None:
        self.block_of: dict[int, list[Stmt]] = {}
        self.use_counts = use_counts(ir)
        #: temps assigned by more than one statement (say, in both branches of an ``if``)
        self.redefined = redefined(ir)
        for loc in locations(ir):
            self.block_of[id(loc.stmt)] = loc.block

    def replace(self, stmt: Stmt, new: list[Stmt]) -> None:
        block = self.block_of.pop(id(stmt))
        index = block.index(stmt)
        block[index:index + 1] = new
        for item in new:
            self.block_of[id(item)] = block

    def insert_after(self, stmt: Stmt, new: list[Stmt]) -> None:
        block = self.block_of[id(stmt)]
        index = block.index(stmt) + 1
        block[index:index] = new
        for item in new:
            self.block_of[id(item)] = block


def _route_scope(ir: FunctionIR, table: Any, overlay_method_names: frozenset[str],
                 plain: bool, direct_builtins: bool, native_attributes: set[int],
                 global_site: Callable[[str], Any] | None = None, methods: Any = None,
                 private: str | None = None, held_call: Any = None,
                 callback_keywords: Mapping[str, str] | None = None) -> int:
    defs = definitions(ir)
    scope = _Scope(ir)
    sites = [loc for loc in locations(ir)
             if isinstance(loc.stmt, Assign) and isinstance(loc.stmt.op, Call)
             and not _internal(loc.stmt.op.func) and not loc.stmt.op.native]
    # A class body's temporaries that cannot be re-nested would become class attributes,
    # so there every call uses the form ``@dispatch[f](args)``, which always re-nests.
    class_body = ir.kind == "class"
    expression_only = expression_statements(ir)
    # the classes no rebinding can change: a builtin method of one is called as natively
    # (a class body's names live in a namespace its metaclass may make anything of)
    proven = {} if class_body else proven_classes(ir, ())
    for loc in sites:
        stmt = loc.stmt
        assert isinstance(stmt, Assign) and isinstance(stmt.op, Call)
        func = stmt.op.func
        compact = plain or class_body or id(stmt) in expression_only
        method = _method_lookup(scope, func, defs)
        site_methods = methods
        overlaid = method is not None and method.name in overlay_method_names
        if method is not None and overlaid and \
                _passes_no_callback(stmt.op, method.name, callback_keywords):
            overlaid, site_methods = False, table.methods_without_callbacks
        if method is not None and direct_builtins and not overlaid and \
                method.name in _C_METHODS.get(_proven_class(method.obj, proven), ()):
            continue  # a builtin method of a list, dict, str, ...: called as natively
        builtin_direct = method is not None and direct_builtins and not overlaid
        # the C lookup routes a builtin method whose name an overlay takes itself
        c_lookup = method is not None and site_methods is not None and direct_builtins and \
            not _module_or_class(ir, method.obj, defs)
        if method is not None and c_lookup and (compact or overlaid
                                                or not _builtin_receivers(method.name)
                                                or _is_receiver(ir, method.obj, defs)):
            # one expression, so also where code must stay one
            assert isinstance(func, Temp)
            _through_methods(ir, scope, stmt, defs[func], method, site_methods, private, defs)
            continue
        if method is not None and not compact:
            # (the method form reads the bound method several times: not in expression-only
            # code)
            assert isinstance(func, Temp)
            python_first = _is_receiver(ir, method.obj, defs)
            receivers = _builtin_receivers(method.name) if builtin_direct else _NO_CLASSES
            if c_lookup and receivers:
                # a builtin receiver is called as natively; other ones get the C lookup
                scope.replace(stmt, _with_builtin_receiver(
                    ir, scope, stmt, defs[func], receivers, None, native_attributes,
                    (site_methods, private)))
                continue
            pretested = bool(receivers) and not python_first
            # past the test of a builtin receiver (``_with_builtin_receiver``), a Python
            # method is the likely kind
            new = _method_dispatch(ir, stmt, func, table, builtin_direct,
                                   python_first or pretested, native_attributes,
                                   call_position(stmt.pos, defs[func].pos, method, stmt.op,
                                                 ir.module_imports))
            if pretested:
                new = _with_builtin_receiver(ir, scope, stmt, defs[func], receivers, new,
                                             native_attributes)
            scope.replace(stmt, new)
            continue
        if global_site is not None and _through_site(ir, scope, loc.block, stmt, func, defs,
                                                     global_site, native_attributes):
            continue
        looked_up = ir.new_temp()
        stmt.op.func = looked_up
        temporary = _only_a_temp_holds(scope, func, defs)
        if held_call is not None and temporary and not compact:
            # (the callee is read twice: not in code that must stay expressions)
            stmt.op.func = Const(held_call, stmt.pos)
            stmt.op.args = [looked_up, func, *stmt.op.args]
        elif temporary and table.methods is not None:
            # one expression, ``@methods(make())(args)``, so the callee stays on the
            # stack: the C lookup binds the entry to it when nothing else holds it, and
            # the call keeps it alive until it returns (splice/runtime/_methods.c)
            compact = True
        elif isinstance(func, Var) and table.methods is not None:
            # a name's value (``append = out.append; append(x)``): ``@methods(f)(args)``,
            # one C call, costs less than testing its class and subscripting the table,
            # and no temporary holds the entry past the call
            compact = True
        if _computed_elsewhere(scope, loc.block, func, defs):
            # a callee computed outside the block of its call (the generic path of a
            # guarded direct call, a branch): looked up where it is called, in one
            # expression, so a path that does not call it does not pay for the lookup
            _insert_before(scope, loc.block, stmt, _lookup(ir, table, func, looked_up,
                                                           stmt.pos, True))
            continue
        _insert_lookup(scope, loc.block, stmt, func,
                       _lookup(ir, table, func, looked_up, stmt.pos, compact), defs)
    # decorators: ``@deco`` applies ``deco`` by a call the syntax makes
    for loc in list(locations(ir)):
        definition = loc.stmt
        if isinstance(definition, (FunctionDef, ClassDef)) and definition.decorators:
            routed: list[Operand] = []
            spans = definition.decorator_pos
            for index, decorator in enumerate(definition.decorators):
                looked_up = ir.new_temp()
                # the first decorator's line is the function's first line
                pos = spans[index] if index < len(spans) else definition.pos
                lookup = _lookup(ir, table, decorator, looked_up, pos, plain or class_body)
                # right after the decorator's expression, so that each lookup folds back
                # into its own decorator (a class body must not keep temporaries)
                _insert_lookup(scope, loc.block, definition, decorator, lookup, defs)
                routed.append(looked_up)
            definition.decorators = routed
    return len(sites)


def _passes_no_callback(call: Call, name: str,
                        callback_keywords: Mapping[str, str] | None) -> bool:
    """Whether a method call named ``name``, routed only for the callable its overlay may
    get by keyword, passes neither that keyword nor ``**``: nothing for the overlay to
    enter (``xs.sort()``, ``xs.sort(reverse=True)``)."""
    keyword = (callback_keywords or {}).get(name)
    return keyword is not None and all(
        item.name is not None and item.name != keyword for item in call.keywords)


def expression_statements(ir: FunctionIR) -> set[int]:
    """The ids of the statements of ``ir`` that codegen must write as expressions: those of
    ``except`` clauses' types and ``match`` guards (and of their lazy parts), and all of a
    comprehension that binds a name of the enclosing scope with ``:=`` (it cannot become a
    nested function)."""
    found: set[int] = set()

    def everything(stmts: list[Stmt]) -> None:
        for stmt in stmts:
            found.add(id(stmt))
            for region in stmt.regions():
                everything(region.body)
            for inner in stmt.blocks():
                everything(inner)

    statements = list(locations(ir))
    if ir.kind == "comprehension" and any(
            isinstance(loc.stmt, Assign) and isinstance(loc.stmt.op, Walrus)
            for loc in statements):
        everything(ir.body)
        return found
    for loc in statements:
        stmt = loc.stmt
        if isinstance(stmt, Try):
            for handler in stmt.handlers:
                if handler.type is not None:
                    everything(handler.type.body)
        elif isinstance(stmt, Match):
            for case in stmt.cases:
                if case.guard is not None:
                    everything(case.guard.body)
    return found


#: exact builtin types whose methods are all C code and cannot be shadowed (no instance
#: dict, immutable class): a method call on one of them can run as it is
RECEIVER_TYPES = (list, dict, str, set, frozenset, bytes, bytearray, tuple, int, float,
                  complex)


#: the C methods (by name) of each type of ``RECEIVER_TYPES``
_C_METHODS: dict[type | None, frozenset[str]] = {
    kind: frozenset(name for name in dir(kind)
                    if type(getattr(kind, name, None)) in (types.MethodDescriptorType,
                                                           types.ClassMethodDescriptorType,
                                                           types.WrapperDescriptorType,
                                                           types.BuiltinMethodType))
    for kind in RECEIVER_TYPES}

_NO_CLASSES = ClassSet()

#: method name -> the types of ``RECEIVER_TYPES`` on which it is a C method
_RECEIVERS_OF: dict[str, ClassSet] = {
    name: ClassSet(kind for kind in RECEIVER_TYPES if name in _C_METHODS[kind])
    for name in set().union(*_C_METHODS.values())}


def _builtin_receivers(name: str) -> ClassSet:
    """The receiver types on which ``obj.name(...)`` is a C method call."""
    return _RECEIVERS_OF.get(name, _NO_CLASSES)


def _proven_class(operand: Operand, proven: dict[Any, Proven]) -> type | None:
    found = proven.get(operand.name if isinstance(operand, Var) else operand)
    return None if found is None else found.cls


def _with_builtin_receiver(ir: FunctionIR, scope: _Scope, call: Assign, lookup: Assign,
                           receivers: ClassSet, method_form: list[Stmt] | None,
                           native_attributes: set[int],
                           methods: tuple[Any, str | None] | None = None) -> list[Stmt]:
    """Before the method form, a test made where the attribute is looked up: when the
    receiver's exact type is one of ``receivers``, skip the lookup there and make the call
    as CPython does (``obj.name(args)``, no bound method object); the attribute is known to
    exist, so no ``AttributeError`` moves past the arguments' evaluation. ``methods``
    (the table's ``Methods`` and the class mangling private names) instead of
    ``method_form``: other receivers call what the C lookup gives (holding the receiver)."""
    op = lookup.op
    assert isinstance(op, GetAttr) and isinstance(call.op, Call)
    pos = lookup.pos
    # the arguments need no statements (``d.get(key, default)``): one test, made where the
    # call is, chooses between the native call and the lookup with its call
    adjacent = _right_before(scope, lookup, call)
    # placed before the receiver becomes a temp below: whether the call is a method call
    # depends on the name it was read from (an imported module's is not)
    placed = call_position(call.pos, pos, op, call.op, ir.module_imports)
    # a name is read once, into a temp (the arguments may rebind it); a temp is reused
    receiver: Operand = op.obj
    capture: list[Stmt] = []
    if not isinstance(op.obj, Temp) and not adjacent:
        copied = ir.new_temp()
        capture.append(Assign((copied,), Copy(op.obj), pos))
        receiver = copied
    kind = ir.new_temp()
    fast = ir.new_temp()
    test = [Assign((kind,), Call(Const(_type, pos), [receiver], []), pos),
            Assign((fast,), Compare("in", kind, Const(receivers, pos)), pos)]
    op.obj = receiver
    other: Any = op
    if methods is not None:
        lookups, private = methods
        passed: list[Stmt] = []
        arguments = list(call.op.args)
        if adjacent and isinstance(receiver, Var) and _fast_local(ir, receiver):
            # no statement between the lookup and the call: the local is read again and
            # passed first (``_through_methods``)
            lookups = lookups.receiver_first
            again = ir.new_temp()
            where = attribute_position(pos, op.name)
            passed.append(Assign((again,), Load(Var(receiver.name, where)), where))
            arguments.insert(0, again)
        other = Call(Const(_called(lookups), pos),
                     [receiver, Const(mangle(private, op.name), pos)], [])
        method_form = [*passed, Assign(call.results, Call(lookup.results[0], arguments,
                                                          list(call.op.keywords)),
                                       placed)]
        pos = attribute_position(pos, op.name)
    assert method_form is not None
    method = ir.new_temp()
    direct: list[Stmt] = [Assign((method,), GetAttr(receiver, op.name), call.pos),
                          Assign(call.results, Call(method, list(call.op.args),
                                                    list(call.op.keywords)), call.pos)]
    native_attributes.add(direct[0].id)
    if adjacent:
        scope.replace(lookup, [])
        return [*test, If(fast, direct, [Assign(lookup.results, other, pos), *method_form],
                          call.pos)]
    guarded_lookup = If(fast, [], [Assign(lookup.results, other, pos)], pos)
    scope.replace(lookup, [*capture, *test, guarded_lookup])
    return [If(fast, direct, method_form, call.pos)]


def _right_before(scope: _Scope, first: Stmt, second: Stmt) -> bool:
    """Whether ``first`` is the statement right before ``second`` in the same block."""
    block = scope.block_of.get(id(first))
    if block is None or scope.block_of.get(id(second)) is not block:
        return False
    for index, stmt in enumerate(block):
        if stmt is first:
            return index + 1 < len(block) and block[index + 1] is second
    return False


def _through_site(ir: FunctionIR, scope: _Scope, block: list[Stmt], call: Assign,
                  func: Operand, defs: dict[Temp, Assign],
                  global_site: Callable[[str], Any], native_attributes: set[int]) -> bool:
    """Route ``call`` through the site of the global it calls, if it calls one: the callee
    becomes ``(@site.entry if name is @site.callee else @site.miss(name))``, where CPython
    loads the name (``splice.runtime.sites``). Returns whether it did."""
    assert isinstance(call.op, Call)
    if isinstance(func, Var):
        var, where = func, None
    elif isinstance(func, Temp):
        where = defs.get(func)
        if where is None or not isinstance(where.op, Load) or \
                scope.use_counts.get(func, 0) != 1 or func in scope.redefined:
            return False
        var = where.op.var
    else:
        return False
    site = global_site(var.name)
    if site is None:
        return False
    pos = where.pos if where is not None else call.pos
    if var.pos == NOPOS:
        # the name's own span: a NameError points at the name, as natively
        var = Var(var.name, pos)
    cached, same, entry, missed = (ir.new_temp() for _ in range(4))
    miss = ir.new_temp()
    read_entry = Assign((entry,), GetAttr(Const(site, pos), "entry"), pos)
    read_miss = Assign((miss,), GetAttr(Const(site, pos), "miss"), pos)
    read_callee = Assign((cached,), GetAttr(Const(site, pos), "callee"), pos)
    native_attributes.update((read_entry.id, read_miss.id, read_callee.id))
    lookup = IfExp(same, Region([read_entry], entry),
                   Region([read_miss, Assign((missed,), Call(miss, [var], []), pos)], missed))
    statements: list[Stmt] = [read_callee, Assign((same,), Compare("is_", cached, var), pos)]
    if where is not None:
        # the name is loaded where the program loads it: the load becomes the lookup
        where.op = lookup
        scope.replace(where, [*statements, where])
        return True
    result = ir.new_temp()
    call.op.func = result
    statements.append(Assign((result,), lookup, pos))
    index = block.index(call)
    block[index:index] = statements
    for item in statements:
        scope.block_of[id(item)] = block
    return True


def _internal(func: Operand) -> bool:
    """A call splice inserted to its own runtime, or to a C method of an object of one of
    splice's C types (the Tracer's recorder): never routed."""
    if not isinstance(func, Const):
        return False
    value = func.value
    if type(value) is _BuiltinMethodType and value.__self__ is not None and \
            type(value.__self__).__module__.startswith("splice."):
        return True
    return str(getattr(value, "__module__", "")).startswith("splice.runtime")


def _lookup(ir: FunctionIR, table: Any, callee: Operand, result: Temp, pos: Pos,
            plain: bool = False) -> list[Stmt]:
    """``result = table.fast[callee]`` for a function or a class, or
    ``table.slow_entry(callee)`` when it is not there yet (``KeyError``); for any other
    callee, a call of the table's C lookup (``splice.runtime._methods``), or without it of
    ``slow_entry`` (``_keyed_first``). ``table.fast`` is an exact ``dict``, which CPython
    subscripts fastest; the ``try`` costs nothing when nothing is raised. ``plain``: one
    expression, the call alone."""
    lookup = _called(table.methods) if table.methods is not None else table.slow_entry
    unkeyed = Assign((result,), Call(Const(lookup, pos), [callee], []), pos)
    if plain or (isinstance(callee, Const) and not hashed_by_identity(callee.value)):
        # a call, not ``table[callee]``: subscripting hashes (a callable object's own
        # ``__hash__`` would run), and an unhashable callee would raise TypeError
        return [unkeyed]
    fast = Assign((result,), GetItem(Const(table.fast, pos), callee), pos)
    slow = Assign((result,), Call(Const(table.slow_entry, pos), [callee], []), pos)
    handler = Handler(Region([], Const((KeyError, TypeError), pos)), None, [slow], pos)
    keyed = Try([fast], [handler], [], [], False, pos)
    if isinstance(callee, Const):  # known now: hashing it runs no Python code
        return [keyed]
    return _keyed_first(ir, callee, keyed, unkeyed, pos)


def _only_a_temp_holds(scope: _Scope, func: Operand, defs: dict[Temp, Assign]) -> bool:
    """Whether the callee ``func`` may be held by its temp alone: a temp that is not (on
    every path) a copy of a name's value, so nothing but the call may keep it alive."""
    if not isinstance(func, Temp):
        return False
    definition = defs.get(func)
    return definition is None or func in scope.redefined or \
        not isinstance(definition.op, (Load, Copy, Const))


def _computed_elsewhere(scope: _Scope, block: list[Stmt], func: Operand,
                        defs: dict[Temp, Assign]) -> bool:
    """Whether the temp ``func`` is computed by a statement outside ``block`` (the block
    of its call) that is not redefined."""
    definition = defs.get(func) if isinstance(func, Temp) else None
    return definition is not None and func not in scope.redefined and \
        scope.block_of.get(id(definition)) not in (None, block)


def _insert_lookup(scope: _Scope, block: list[Stmt], call: Stmt, func: Operand,
                   lookup: Stmt | list[Stmt], defs: dict[Temp, Assign]) -> None:
    """Put the table lookup right after the callee is computed (where CPython has it on
    the stack), so the arguments' code stays between them and both can be re-nested."""
    statements = lookup if isinstance(lookup, list) else [lookup]
    definition = defs.get(func) if isinstance(func, Temp) else None
    if definition is not None and id(definition) in scope.block_of and \
            func not in scope.redefined:
        scope.insert_after(definition, statements)
        return
    _insert_before(scope, block, call, statements)


def _insert_before(scope: _Scope, block: list[Stmt], call: Stmt, statements: list[Stmt]
                   ) -> None:
    """Put ``statements`` right before ``call`` in ``block``."""
    index = block.index(call)
    block[index:index] = statements
    for item in statements:
        scope.block_of[id(item)] = block


def _keyed_first(ir: FunctionIR, callee: Operand, keyed: Stmt, unkeyed: Stmt, pos: Pos
                 ) -> list[Stmt]:
    """``keyed`` (a subscript of the table) for a function or a class, ``unkeyed`` (a call
    of the table's C lookup, ``splice.runtime._methods``, or without it of the table's
    ``slow_entry``) for anything else. A method bound to an object, which ``append =
    out.append; append(x)`` or a callback ``handler = self.on_event`` keeps in a name, is
    never in the table (it would keep its receiver alive), so the subscript would miss on
    every call and pay for a raised ``KeyError`` and the table's Python miss path (1.6 to
    5 us, against 40 to 90 ns for the call); the C lookup gives a builtin method itself
    when no overlay or intercept takes its name, a Python one its function's entry bound
    to the same object. And a callable object is never hashed (its class may define
    ``__hash__``: CPython never calls it to make a call). The test costs a function one
    ``type()`` and one ``in``."""
    kind = ir.new_temp()
    is_keyed = ir.new_temp()
    return [Assign((kind,), Call(Const(_type, pos), [callee], []), pos),
            Assign((is_keyed,), Compare("in", kind, Const(_KEYED_KINDS, pos)), pos),
            If(is_keyed, [keyed], [unkeyed], pos)]


def _through_methods(ir: FunctionIR, scope: _Scope, call: Assign, lookup: Assign,
                     method: GetAttr, methods: Any, private: str | None,
                     defs: dict[Temp, Assign]) -> None:
    """``r = obj.m(args)`` as ``f = @methods(obj, 'm'); r = f(args)``: the method is looked
    up where CPython looks it up, as ``LOAD_METHOD`` does, and ``f`` holds the receiver
    the lookup saw (the arguments may rebind its name: ``x.m(x := y)``) until the call
    returns, as CPython's stack does (splice/runtime/_methods.c)."""
    assert isinstance(call.op, Call)
    pos = lookup.pos
    receiver = _local_receiver(ir, scope, lookup, call, method.obj, defs)
    if receiver is not None:
        # ``@methods.receiver_first(obj, 'm')(obj, args)``: a Python method found on the
        # class is its entry, called with the receiver as CPython's ``CALL`` passes it
        # after ``LOAD_METHOD``, without a method object made and unpacked for each call
        methods = methods.receiver_first
        again = ir.new_temp()
        # at the lookup's position: a second line there would be a second line event
        where = attribute_position(pos, method.name)
        scope.insert_after(lookup, [Assign((again,), Load(Var(receiver.name, where)), where)])
        call.op.args = [again, *call.op.args]
    lookup.op = Call(Const(_called(methods), pos),
                     [method.obj, Const(mangle(private, method.name), pos)], [])
    lookup.pos = attribute_position(pos, method.name)
    call.pos = call_position(call.pos, pos, method, call.op, ir.module_imports)


def _called(methods: Any) -> Any:
    """What generated code calls for the C method lookup ``methods``: the same lookup as a
    builtin function (``methods.builtin``), whose calls CPython specialises."""
    return methods.builtin


def _local_receiver(ir: FunctionIR, scope: _Scope, lookup: Assign, call: Assign,
                    obj: Operand, defs: dict[Temp, Assign]) -> Var | None:
    """The variable that holds the receiver of a method call, when reading it again at the
    call gives the object the lookup saw: a local of the function that no other scope can
    rebind between the reads (``_fast_local``) and that nothing between the lookup and the
    call can bind (no ``:=`` of it, no comprehension, whose ``:=`` binds it from 3.12);
    else None."""
    if isinstance(obj, Temp):
        definition = defs.get(obj)
        if definition is None or not isinstance(definition.op, Load):
            return None
        obj = definition.op.var
    if not isinstance(obj, Var) or not _fast_local(ir, obj):
        return None
    name = obj.name
    block = scope.block_of.get(id(call))
    if block is None or scope.block_of.get(id(lookup)) is not block:
        return None
    start, end = _index(block, lookup), _index(block, call)
    if start < 0 or end < start:
        return None
    for stmt in walk_block(block[start + 1:end]):
        if isinstance(stmt, Store) and stmt.var.name == name:
            return None
        if isinstance(stmt, Assign) and (
                isinstance(stmt.op, MakeComprehension)
                or isinstance(stmt.op, Walrus) and stmt.op.var.name == name):
            return None
    return obj


def _fast_local(ir: FunctionIR, var: Var) -> bool:
    """Whether ``var`` is a local of the function ``ir`` was lowered from that only the
    function itself can rebind: a fast local, or a cell that no nested scope rebinds (no
    ``nonlocal`` of it stores or deletes it: a method whose comprehension or closure reads
    ``self``), and not a name of a comprehension or class body run as part of it."""
    code = getattr(ir.function, "__code__", None)
    name = var.name
    if ir.kind not in ("function", "lambda") or not isinstance(code, types.CodeType) or \
            name in code.co_freevars or name in ir.globals:
        return False
    if name in code.co_cellvars:
        return not _rebound_inside(code, name)
    return name in code.co_varnames


#: the instructions by which a nested scope rebinds a variable of an enclosing one
_REBINDING = frozenset({"STORE_DEREF", "DELETE_DEREF"})


def _rebound_inside(code: types.CodeType, name: str) -> bool:
    """Whether a scope nested in ``code`` (at any depth) may store or delete the free
    variable ``name`` (conservatively: by that name, wherever it is free)."""
    for const in code.co_consts:
        if not isinstance(const, types.CodeType):
            continue
        if name in const.co_freevars and any(
                instruction.opname in _REBINDING and instruction.argval == name
                for instruction in dis.get_instructions(const)):
            return True
        if _rebound_inside(const, name):
            return True
    return False


def _index(block: list[Stmt], stmt: Stmt) -> int:
    """Where ``stmt`` (that very object) is in ``block``, or -1."""
    return next((i for i, item in enumerate(block) if item is stmt), -1)


def _module_or_class(ir: FunctionIR, obj: Operand, defs: dict[Temp, Assign]) -> bool:
    """Whether ``obj`` is a global name now bound to a module or a class (``math.sqrt(x)``,
    ``Config.load()``): their attributes are no methods of the object, so the method
    lookup would wrap them; the Python form calls them as they are."""
    definition = defs.get(obj) if isinstance(obj, Temp) else None
    if definition is None or not isinstance(definition.op, Load):
        return False
    fn = ir.function
    namespace = getattr(fn, "__globals__", None)
    if not isinstance(namespace, dict):
        return False
    value = namespace.get(definition.op.var.name)
    return isinstance(value, (types.ModuleType, type))


def _is_receiver(ir: FunctionIR, obj: Operand, defs: dict[Temp, Assign]) -> bool:
    """Whether ``obj`` is a method's ``self``/``cls``: calls on it are most likely calls of
    Python methods."""
    first = [*ir.args.posonly, *ir.args.args][:1]
    if not first or first[0] not in ("self", "cls", "mcs", "metacls"):
        return False
    if isinstance(obj, Var):
        return obj.name == first[0]
    definition = defs.get(obj) if isinstance(obj, Temp) else None
    return (definition is not None and isinstance(definition.op, Load)
            and definition.op.var.name == first[0])


def _method_lookup(scope: _Scope, func: Operand, defs: dict[Temp, Assign]) -> GetAttr | None:
    """The ``getattr`` whose result is called here and nowhere else, if there is one."""
    if not isinstance(func, Temp):
        return None
    stmt = defs.get(func)
    if stmt is None or not isinstance(stmt.op, GetAttr):
        return None
    if scope.use_counts.get(func, 0) != 1:
        return None
    return stmt.op


def _method_dispatch(ir: FunctionIR, stmt: Assign, method: Temp, table: Any,
                     builtin_direct: bool, python_first: bool, native_attributes: set[int],
                     pos: Pos) -> list[Stmt]:
    """The method-call form (module docstring), as ``if`` statements that each assign the
    call's result (at ``pos``, where CPython places the method call). ``python_first``:
    test for a bound Python method before a builtin one (the receiver is ``self``/``cls``);
    else the other way round."""
    call = stmt.op
    assert isinstance(call, Call)
    results = stmt.results

    def const(value: Any) -> Const:
        return Const(value, pos)

    def assign(op: Any) -> tuple[Temp, Assign]:
        temp = ir.new_temp()
        return temp, Assign((temp,), op, pos)

    def call_with(func: Operand, *first: Operand) -> Assign:
        return Assign(results, Call(func, [*first, *call.args], list(call.keywords)), pos)

    def branch(kind_type: type, then: list[Stmt], otherwise: list[Stmt]) -> list[Stmt]:
        ok, s = assign(Compare("is_", kind, const(kind_type)))
        return [s, If(ok, then, otherwise, pos)]

    kind, kind_stmt = assign(Call(const(_type), [method], []))
    # bound Python method: dispatch on the function, pass __self__ first
    func, f1 = assign(GetAttr(method, "__func__"))
    target = ir.new_temp()
    receiver, f3 = assign(GetAttr(method, "__self__"))
    native_attributes.update((f1.id, f3.id))
    bound = [f1, *_lookup(ir, table, func, target, pos), f3, call_with(target, receiver)]
    # anything else: dispatch on the callable itself
    other_target = ir.new_temp()
    other = [*_lookup(ir, table, method, other_target, pos), call_with(other_target)]
    if not builtin_direct:
        return [kind_stmt, *branch(_MethodType, bound, other)]
    # a builtin method (``lst.append``, ``super().__init__`` of a builtin base) is called as
    # it is: no overlay takes this name
    other = branch(_MethodWrapperType, [call_with(method)], other)
    if python_first:
        body = branch(_MethodType, bound, branch(_BuiltinMethodType, [call_with(method)], other))
    else:
        body = branch(_BuiltinMethodType, [call_with(method)], branch(_MethodType, bound, other))
    return [kind_stmt, *body]
