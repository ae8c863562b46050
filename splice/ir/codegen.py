"""Code generation: IR -> Python AST -> code object -> function.

Re-nesting. A temporary used once is folded back into the expression that uses it when that
keeps the order of everything observable. Each statement gets a *label* (its position in
source order). An expression tree's evaluation events are the ops it performs and the names
it reads, each carrying the label of the statement that did it in the IR; a fold is allowed
when those labels stay non-decreasing in the folded tree's evaluation order. Constants,
temporaries and pure ops (``BuildSlice``, ``JoinStr``) are not events.

The events of an op are where Python performs them: a call's lone ``*x`` is iterated at the
call, after its keyword arguments (``CALL_FUNCTION_EX``), any other ``*``/``**`` operand that
is not a ``splat``/``dsplat`` result in place. A threaded ``and``/``or`` (``BoolOp.threaded``)
folded into the ``and``/``or`` that tests its value is left to CPython's jump threading;
written out as statements, it passes its decision to that test in a hidden local (its
carrier), so the value that decided is not tested again.

What cannot be folded stays a statement assigning a hidden local named ``%n`` (not an
identifier, so it never clashes with user names). Objects that have no literal form (a plugin
inserted a function, say) and the few runtime helpers a fallback needs are passed to the
generated code as closure cells named ``@name``.

Every generated node carries the source position of the IR statement (or operand) it came
from, so tracebacks, ``pdb`` and coverage point at the user's source.
"""

from __future__ import annotations

import ast
import builtins
import copy
import operator
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from splice.compat import JUMP_THREADING, NO_TYPE_PARAMS
from splice.errors import UnsupportedError
from splice.ir.call_positions import call_position
from splice.ir.nodes import (
    NOPOS,
    AnnotateName,
    Assert,
    Assign,
    Await,
    BinOp,
    BoolOp,
    Break,
    BuildDict,
    BuildList,
    BuildSet,
    BuildSlice,
    BuildTuple,
    Call,
    ClassDef,
    Compare,
    ComprehensionAppend,
    Const,
    Continue,
    Copy,
    Declare,
    DelAttr,
    DeleteVar,
    DelItem,
    DoubleSplat,
    For,
    Format,
    FunctionDef,
    FunctionIR,
    GetAttr,
    GetItem,
    If,
    IfExp,
    Import,
    ImportFrom,
    InPlace,
    Iter,
    JoinStr,
    Keyword,
    Load,
    MakeComprehension,
    MakeLambda,
    Match,
    Op,
    Operand,
    Pass,
    Pos,
    Raise,
    Region,
    Return,
    SetAttr,
    SetItem,
    Splat,
    Starred,
    Stmt,
    Store,
    Temp,
    Try,
    TypeAlias,
    UnaryOp,
    Unpack,
    Var,
    Walrus,
    While,
    With,
    Yield,
    YieldFrom,
    walk_block,
)
from splice.ir.tools import definitions
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

AST_BINOPS = {
    "add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "matmul": ast.MatMult,
    "truediv": ast.Div, "floordiv": ast.FloorDiv, "mod": ast.Mod, "pow": ast.Pow,
    "lshift": ast.LShift, "rshift": ast.RShift, "or_": ast.BitOr, "xor": ast.BitXor,
    "and_": ast.BitAnd,
}
AST_INPLACE = {"i" + k.rstrip("_"): v for k, v in AST_BINOPS.items()}
AST_UNARY = {"neg": ast.USub, "pos": ast.UAdd, "invert": ast.Invert, "not_": ast.Not}
AST_COMPARE = {
    "lt": ast.Lt, "le": ast.LtE, "eq": ast.Eq, "ne": ast.NotEq, "gt": ast.Gt, "ge": ast.GtE,
    "is_": ast.Is, "is_not": ast.IsNot, "in": ast.In, "not_in": ast.NotIn,
}
LITERAL_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))

#: ops that have an expression form (everything but ``Unpack``/``ComprehensionAppend``)
NOT_EXPRESSIONS = (Unpack, ComprehensionAppend)


N = TypeVar("N", bound=ast.AST)


class CannotRegenerate(Exception):
    """The IR has a shape codegen cannot express (reported as ``UnsupportedError``)."""


def _binds_outside(ir: FunctionIR) -> bool:
    """Whether a comprehension (or one nested in it) binds a name of the enclosing scope
    (``:=``), which a nested function standing for it would bind locally instead."""
    for stmt in walk_block(ir.body):
        op = stmt.op if isinstance(stmt, Assign) else None
        if isinstance(op, Walrus):
            return True
        if isinstance(op, MakeComprehension) and _binds_outside(op.fn):
            return True
    return bool(ir.nonlocals or ir.globals)


def threaded(op: Op) -> bool:
    """An and/or whose decision the and/or testing its value reuses (``BoolOp.threaded``)."""
    return isinstance(op, BoolOp) and op.threaded and not op.in_test and not op.chain


def temp_name(temp: Temp) -> str:
    return f"%{temp.id}"


def at(node: N, pos: Pos) -> N:
    """Give ``node`` the source span ``pos`` (nodes without one inherit it later)."""
    if pos != NOPOS:
        node.lineno, node.col_offset = pos.lineno, pos.col_offset  # type: ignore[attr-defined]
        node.end_lineno = pos.end_lineno  # type: ignore[attr-defined]
        node.end_col_offset = pos.end_col_offset  # type: ignore[attr-defined]
    return node


def either(pos: Pos, fallback: Pos) -> Pos:
    return fallback if pos == NOPOS else pos


def is_literal(value: object) -> bool:
    if isinstance(value, LITERAL_TYPES):
        return True
    if type(value) is tuple or type(value) is frozenset:  # (no ``in``: no class's __eq__)
        return all(is_literal(v) for v in value)
    return False


# ------------------------------------------------------------------------ expression trees


@dataclass(eq=False)
class Tree:
    """A statement (or a fold of several) whose operands may be replaced by folded trees.

    ``items`` lists, in evaluation order, operands ``(operand, label)`` (a ``Var`` read gets
    ``label``) and plain labels for the ops performed."""

    stmt: Stmt
    items: list[tuple[Operand, int] | int]
    subst: dict[Temp, Tree] = field(default_factory=dict)
    #: temps this tree consumes entirely although they are used more than once elsewhere
    owned: set[Temp] = field(default_factory=set)
    kind: str = "op"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def op(self) -> Op:
        assert isinstance(self.stmt, Assign)
        return self.stmt.op


def labels(tree: Tree) -> Iterator[int]:
    lone = tree.extra.get("lone_star")
    if lone is not None and isinstance(folded := tree.subst.get(lone), Tree) and isinstance(
            folded.op, Splat):
        # a ``splat`` folded into a call's lone ``*`` iterates at the call
        # (``CALL_FUNCTION_EX``), after the keyword arguments: its event moves to the call's
        *reads, iteration = labels(folded)
        for item in tree.items[:-1]:
            if isinstance(item, tuple) and item[0] is lone:
                yield from reads
            else:
                yield from _labels(tree, [item])
        yield iteration
        yield from _labels(tree, tree.items[-1:])
        return
    yield from _labels(tree, tree.items)


def _labels(tree: Tree, items: list[tuple[Operand, int] | int]) -> Iterator[int]:
    for item in items:
        if isinstance(item, int):
            yield item
            continue
        operand, label = item
        if isinstance(operand, Temp):
            folded = tree.subst.get(operand)
            if folded is not None:
                yield from labels(folded)
        elif isinstance(operand, Var):
            yield label


def ordered(tree: Tree) -> bool:
    last = -1
    for label in labels(tree):
        if label < last:
            return False
        last = label
    return True


def find_slot(tree: Tree, temp: Temp) -> Tree | None:
    """The (sub)tree that has ``temp`` as an operand not yet folded."""
    for item in tree.items:
        if isinstance(item, tuple) and isinstance(item[0], Temp):
            folded = tree.subst.get(item[0])
            if folded is not None:
                found = find_slot(folded, temp)
                if found is not None:
                    return found
            elif item[0] is temp:
                return tree
    return None


# ------------------------------------------------------------------------------ generation


@dataclass
class GenContext:
    """State shared by the generation of one function and its nested scopes."""

    renest: bool = True
    cells: dict[str, object] = field(default_factory=dict)
    _by_id: dict[int, str] = field(default_factory=dict)
    #: a comprehension whose body is no longer expressions (rewritten by a pass) may be
    #: generated as a nested function ``%n`` called in its place (runtime code only)
    comprehension_functions: bool = False
    #: the hidden names of such functions -> the comprehension's name (``<listcomp>``)
    comprehension_names: dict[str, str] = field(default_factory=dict)

    def cell(self, value: object, hint: str) -> str:
        """The name of a closure cell holding ``value`` (created on first use)."""
        name = self._by_id.get(id(value))
        if name is None:
            base = "@" + "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
            name = base
            n = 1
            while name in self.cells:
                n += 1
                name = f"{base}{n}"
            self.cells[name] = value
            self._by_id[id(value)] = name
        return name


def count_uses(body: list[Stmt]) -> Counter[Temp]:
    """How many times each temp of this scope is used (nested scopes excluded)."""
    uses: Counter[Temp] = Counter()

    def block(stmts: list[Stmt]) -> None:
        for stmt in stmts:
            for operand in stmt.operands():
                if isinstance(operand, Temp):
                    uses[operand] += 1
            for region in stmt.regions():
                block(region.body)
                if isinstance(region.value, Temp):
                    uses[region.value] += 1
            for inner in stmt.blocks():
                block(inner)

    block(body)
    return uses


class ScopeGen:
    """Generates the AST of one scope's body."""

    def __init__(self, ir: FunctionIR, ctx: GenContext) -> None:
        self.ir = ir
        self.ctx = ctx
        self.uses = count_uses(ir.body)
        self.label = 0
        self.temps_by_name: dict[str, Temp] = {}
        self.defs: dict[Temp, Assign] | None = None
        #: the result of a threaded and/or -> the hidden local carrying its decision
        self.carriers: dict[Temp, Temp] = {}
        #: where nested functions standing for comprehensions are defined (a function
        #: body; None where statements cannot go), and those definitions
        self.host: ScopeGen | None = self if ir.kind == "function" else None
        self.hoisted: list[ast.stmt] = []
        #: inside a comprehension generated as a function: (kind, result name)
        self.append_target: tuple[str, str] | None = None

    # --------------------------------------------------------------------------- helpers

    def name(self, temp: Temp, pos: Pos, ctx: ast.expr_context | None = None) -> ast.Name:
        name = temp_name(temp)
        self.temps_by_name[name] = temp
        return at(ast.Name(name, ctx or ast.Load()), pos)

    def fail(self, stmt: Stmt | None, reason: str) -> CannotRegenerate:
        where = f" (line {stmt.pos.lineno})" if stmt is not None else ""
        return CannotRegenerate(reason + where)

    def const(self, value: object, pos: Pos) -> ast.expr:
        if is_literal(value):
            return at(ast.Constant(value), pos)  # type: ignore[arg-type]
        hint = getattr(value, "__name__", type(value).__name__)
        return at(ast.Name(self.ctx.cell(value, str(hint)), ast.Load()), pos)

    def helper(self, value: object, name: str, pos: Pos) -> ast.expr:
        return at(ast.Name(self.ctx.cell(value, name), ast.Load()), pos)

    # ----------------------------------------------------------------------------- trees

    def tree(self, stmt: Stmt, label: int) -> Tree:
        """The expression tree of a statement's operands (unfolded)."""
        tree = Tree(stmt, [], extra={"label": label})
        op = stmt.op if isinstance(stmt, Assign) else stmt
        if isinstance(op, (Call, ClassDef, BuildTuple, BuildList, BuildSet, BuildDict)):
            tree.items = self.unpacking_items(op, label, tree)
        else:
            tree.items = [(o, label) for o in stmt.operands()]
        if not (isinstance(stmt, Assign) and stmt.op.pure):
            tree.items.append(label)
        return tree

    def unpacking_items(self, op: Call | ClassDef | BuildTuple | BuildList | BuildSet
                        | BuildDict, label: int, tree: Tree) -> list[tuple[Operand, int] | int]:
        """The items of an op with ``*``/``**`` operands. One that is not the result of a
        ``splat`` (``dsplat``) is iterated (read as a mapping) by the op itself, which runs
        code: Python does it where the expression has it, in place (``f(a, *x)``, ``[*x]``,
        ``f(**m)``, ``{**m}``, class bases), so the op's label follows that operand; but
        the lone ``*x`` of a call (``f(*x, k=v)``) is iterated at the call, after the
        keyword arguments, where the op's own label already is. A ``splat`` folded into
        that lone place is iterated at the call too (``labels`` moves its event)."""
        items: list[tuple[Operand, int] | int] = []

        def unpacked(operand: Operand, by: type[Op], here: bool = True) -> None:
            items.append((operand, label))
            if here and not self.defined_by(operand, by):
                items.append(label)

        if isinstance(op, BuildDict):
            for key, value in op.items:
                if key is None:
                    unpacked(value, DoubleSplat)
                else:
                    items += [(key, label), (value, label)]
            return items
        positional: list[Operand | Starred]
        keywords: list[Keyword] = []
        if isinstance(op, Call):
            items.append((op.func, label))
            positional, keywords = op.args, op.keywords
        elif isinstance(op, ClassDef):
            items += [(d, label) for d in op.decorators]
            positional, keywords = op.bases, op.keywords
        else:
            positional = op.items
        lone = (isinstance(op, Call) and len(positional) == 1
                and isinstance(positional[0], Starred))
        for item in positional:
            if isinstance(item, Starred):
                unpacked(item.value, Splat, here=not lone)
                if lone and isinstance(item.value, Temp):
                    tree.extra["lone_star"] = item.value
            else:
                items.append((item, label))
        for keyword in keywords:
            if keyword.name is None:
                unpacked(keyword.value, DoubleSplat)
            else:
                items.append((keyword.value, label))
        return items

    def defined_by(self, operand: Operand, kind: type[Op]) -> bool:
        """Whether ``operand`` is a temp computed by a ``kind`` op."""
        if not isinstance(operand, Temp):
            return False
        if self.defs is None:
            self.defs = definitions(self.ir)
        stmt = self.defs.get(operand)
        return stmt is not None and isinstance(stmt.op, kind)

    def single_use(self, temp: Temp, tree: Tree) -> bool:
        return self.uses[temp] == 1 or temp in tree.owned

    def foldable(self, pending: Tree) -> bool:
        """May this pending definition be folded into a later expression at all?"""
        op = pending.op
        if self.ctx.renest:
            return not isinstance(op, NOT_EXPRESSIONS)
        return isinstance(op, (Iter, BuildSlice))

    def absorb(self, tree: Tree, pending: list[Tree], root: Tree | None = None) -> None:
        """Fold pending definitions (latest first) into ``tree`` while order allows."""
        root = root or tree
        while pending:
            candidate = pending[-1]
            temp = candidate.stmt.results[0]  # type: ignore[attr-defined]
            if not (self.single_use(temp, root) and self.foldable(candidate)):
                return
            slot = find_slot(tree, temp)
            if slot is None:
                return
            slot.subst[temp] = candidate
            if not ordered(root):
                del slot.subst[temp]
                return
            pending.pop()

    # ----------------------------------------------------------------------------- blocks

    def block(self, stmts: list[Stmt]) -> list[ast.stmt]:
        out, _ = self.generate(stmts, None)
        return out

    def region(self, region: Region, owned: set[Temp] | None = None
               ) -> tuple[list[ast.stmt], ast.expr]:
        """A region as statements plus the expression of its value."""
        out, value = self.generate(region.body, region.value, owned)
        assert value is not None
        return out, value

    def region_expr(self, region: Region, stmt: Stmt) -> ast.expr:
        """A region that syntax requires to be an expression (exception types, guards)."""
        saved = self.ctx.renest
        self.ctx.renest = True
        try:
            stmts, value = self.region(region)
        finally:
            self.ctx.renest = saved
        if stmts:
            raise self.fail(stmt, "a lazily evaluated part could not be made an expression")
        return value

    def generate(self, stmts: list[Stmt], value: Operand | None,
                 owned: set[Temp] | None = None) -> tuple[list[ast.stmt], ast.expr | None]:
        """Generate a block (and the expression of ``value`` after it, for regions),
        retrying without a composite shape when folding it would reorder effects."""
        out, expr, _ = self.generate_retrying(stmts, value, owned, keep_last=False)
        return out, expr

    def generate_retrying(self, stmts: list[Stmt], value: Operand | None,
                          owned: set[Temp] | None, keep_last: bool
                          ) -> tuple[list[ast.stmt], ast.expr | None, Tree | None]:
        disabled: set[int] = set()
        while True:
            try:
                return self.generate_once(stmts, value, owned, disabled, keep_last)
            except Retry as retry:
                if retry.key in disabled:  # pragma: no cover - defensive
                    raise CannotRegenerate("internal: composite retry loop") from None
                disabled.add(retry.key)

    def generate_once(self, stmts: list[Stmt], value: Operand | None,
                      owned: set[Temp] | None, disabled: set[int], keep_last: bool = False
                      ) -> tuple[list[ast.stmt], ast.expr | None, Tree | None]:
        """One attempt of ``generate``. ``keep_last``: do not emit the last statement;
        return its tree, with every definition before it folded or emitted."""
        out: list[ast.stmt] = []
        pending: list[Tree] = []
        base = self.label
        self.label += len(stmts) + 1
        shapes = find_shapes(stmts, self.uses, disabled) if self.ctx.renest else {}
        skipped = {i for shape in shapes.values() for i in shape.skipped}
        # temps read twice by one composite (``a.b += v`` reads ``a`` for get and set)
        shared = {t for shape in shapes.values() for t in shape.shared()} | (owned or set())
        # the label of the latest statement written out so far: a composite must not
        # absorb a statement that such a one followed
        emitted = 0
        for index, stmt in enumerate(stmts):
            if index in skipped:
                continue
            label = base + index + 1
            shape = shapes.get(index)
            tree = shape.tree(stmt, label, base) if shape else self.tree(stmt, label)
            self.absorb(tree, pending)
            if keep_last and index == len(stmts) - 1:
                self.flush(pending, out)
                return merge_stores(out, self), None, tree
            if shape is not None and shape.must_fold_after is not None and (
                    base + shape.must_fold_after + 1 < emitted or any(
                    base + shape.must_fold_after + 1 < self.label_of(p) for p in pending)):
                raise Retry(stmt.id)
            if (isinstance(stmt, Assign) and len(stmt.results) == 1
                    and (self.uses[stmt.results[0]] == 1 or stmt.results[0] in shared)
                    and not isinstance(stmt.op, NOT_EXPRESSIONS)
                    and self.has_expression(tree)):
                # stays pending; what it did not absorb stays pending before it
                pending.append(tree)
                continue
            self.flush(pending, out)
            out.extend(self.statement(tree))
            emitted = label
        expr = None
        if value is not None:
            label = base + len(stmts) + 1
            value_tree = Tree(Pass(NOPOS), [(value, label)], kind="value",
                              owned=owned or set())
            self.absorb(value_tree, pending)
            self.flush(pending, out)
            expr = self.operand(value_tree, value, NOPOS)
        self.flush(pending, out)
        return merge_stores(out, self), expr, None

    def has_expression(self, tree: Tree) -> bool:
        """Whether a definition can be written as one expression (``and``/``or`` and
        conditional expressions only when their lazy parts are expressions)."""
        stmt = tree.stmt
        if tree.kind == "op" and isinstance(stmt, Assign) and isinstance(stmt.op,
                                                                       (BoolOp, IfExp)):
            if "expr" not in tree.extra:
                tree.extra["expr"] = self.lazy_expr(tree, stmt)
            return tree.extra["expr"] is not None
        return True

    def flush(self, pending: list[Tree], out: list[ast.stmt]) -> None:
        for tree in pending:
            out.extend(self.statement(tree))
        pending.clear()

    def label_of(self, tree: Tree) -> int:
        """The label of the statement a tree was built from."""
        return tree.extra.get("label", 0)  # type: ignore[no-any-return]

    # ----------------------------------------------------------------------- statements

    def statement(self, tree: Tree) -> list[ast.stmt]:
        stmt = tree.stmt
        pos = stmt.pos
        if tree.kind == "augname":
            assert isinstance(stmt, Store)
            value = self.operand(tree, tree.extra["value"], pos)
            name = at(ast.Name(stmt.var.name, ast.Store()), either(stmt.var.pos, pos))
            return [at(ast.AugAssign(name, AST_INPLACE[tree.extra["op"]](), value), pos)]
        if tree.kind == "augtarget":
            assert isinstance(stmt, Assign)
            op = stmt.op
            obj = self.operand(tree, op.obj, pos)  # type: ignore[attr-defined]
            where = either(op.target_pos, pos)  # type: ignore[attr-defined]
            if isinstance(op, SetAttr):
                target: ast.Attribute | ast.Subscript = at(
                    ast.Attribute(obj, op.name, ast.Store()), where)
            else:
                assert isinstance(op, SetItem)
                index = self.operand(tree, op.index, pos, subscript=True)
                target = at(ast.Subscript(obj, index, ast.Store()), where)
            value = self.operand(tree, tree.extra["value"], pos)
            statement = tree.extra["pos"]  # the whole ``a.b += v``; ``pos`` is the target's
            return [at(ast.AugAssign(target, AST_INPLACE[tree.extra["op"]](), value),
                       statement)]
        method = getattr(self, "stmt_" + type(stmt).__name__)
        result: list[ast.stmt] = method(tree, stmt)
        return result

    def stmt_Assign(self, tree: Tree, stmt: Assign) -> list[ast.stmt]:
        op = stmt.op
        pos = stmt.pos
        if isinstance(op, Unpack):
            value = self.operand(tree, op.value, pos)
            elts: list[ast.expr] = []
            for i, result in enumerate(stmt.results):
                name = self.name(result, pos, ast.Store())
                if op.star and i == op.before:
                    elts.append(at(ast.Starred(name, ast.Store()), pos))
                else:
                    elts.append(name)
            target = at(ast.Tuple(elts, ast.Store()), either(op.target_pos, pos))
            return [at(ast.Assign([target], value), pos)]
        if isinstance(op, SetAttr):
            value = self.operand(tree, op.value, pos)
            obj = self.operand(tree, op.obj, pos)
            where = either(op.target_pos, pos)
            return [at(ast.Assign([at(ast.Attribute(obj, op.name, ast.Store()), where)],
                                  value), pos)]
        if isinstance(op, SetItem):
            value = self.operand(tree, op.value, pos)
            obj = self.operand(tree, op.obj, pos)
            index = self.operand(tree, op.index, pos, subscript=True)
            where = either(op.target_pos, pos)
            return [at(ast.Assign([at(ast.Subscript(obj, index, ast.Store()), where)],
                                  value), pos)]
        if isinstance(op, DelAttr):
            obj = self.operand(tree, op.obj, pos)
            where = either(op.target_pos, pos)
            return [at(ast.Delete([at(ast.Attribute(obj, op.name, ast.Del()), where)]), pos)]
        if isinstance(op, DelItem):
            obj = self.operand(tree, op.obj, pos)
            index = self.operand(tree, op.index, pos, subscript=True)
            where = either(op.target_pos, pos)
            return [at(ast.Delete([at(ast.Subscript(obj, index, ast.Del()), where)]), pos)]
        if isinstance(op, ComprehensionAppend):
            if self.append_target is None:
                raise self.fail(stmt, "comprehension append outside a comprehension")
            return [self.append_statement(tree, op, pos)]
        if isinstance(op, (BoolOp, IfExp)) and tree.kind != "chain":
            if threaded(op):
                # not folded into the and/or testing it: its decision goes there in a hidden
                # local (``carrier``)
                return self.lazy_statements(tree, stmt)
            expr = tree.extra["expr"] if "expr" in tree.extra else self.lazy_expr(tree, stmt)
            if expr is None:
                return self.lazy_statements(tree, stmt)
        else:
            expr = self.expression(tree)
        if stmt.results:
            return [at(ast.Assign([self.name(stmt.results[0], pos, ast.Store())], expr), pos)]
        return [at(ast.Expr(expr), pos)]

    def stmt_Store(self, tree: Tree, stmt: Store) -> list[ast.stmt]:
        value = self.operand(tree, stmt.value, stmt.pos)
        target = at(ast.Name(stmt.var.name, ast.Store()), either(stmt.var.pos, stmt.pos))
        if stmt.annotation is not None:
            return [at(ast.AnnAssign(target, copy.deepcopy(stmt.annotation), value, 1),
                       stmt.pos)]
        return [at(ast.Assign([target], value), stmt.pos)]

    def stmt_Declare(self, tree: Tree, stmt: Declare) -> list[ast.stmt]:
        target = at(ast.Name(stmt.var.name, ast.Store()), either(stmt.var.pos, stmt.pos))
        return [at(ast.AnnAssign(target, copy.deepcopy(stmt.annotation), None, 1), stmt.pos)]

    def stmt_AnnotateName(self, tree: Tree, stmt: AnnotateName) -> list[ast.stmt]:
        target = at(ast.Name(stmt.var.name, ast.Store()), either(stmt.var.pos, stmt.pos))
        value = None if stmt.value is None else self.operand(tree, stmt.value, stmt.pos)
        if isinstance(stmt.annotation, ast.AST):
            annotation: ast.expr = copy.deepcopy(stmt.annotation)
        else:
            annotation = self.operand(tree, stmt.annotation, stmt.pos)
        return [at(ast.AnnAssign(target, annotation, value, int(stmt.simple)), stmt.pos)]

    def stmt_DeleteVar(self, tree: Tree, stmt: DeleteVar) -> list[ast.stmt]:
        name = at(ast.Name(stmt.var.name, ast.Del()), either(stmt.var.pos, stmt.pos))
        return [at(ast.Delete([name]), stmt.pos)]

    def stmt_Pass(self, tree: Tree, stmt: Pass) -> list[ast.stmt]:
        return [at(ast.Pass(), stmt.pos)]

    def stmt_Break(self, tree: Tree, stmt: Break) -> list[ast.stmt]:
        return [at(ast.Break(), stmt.pos)]

    def stmt_Continue(self, tree: Tree, stmt: Continue) -> list[ast.stmt]:
        return [at(ast.Continue(), stmt.pos)]

    def stmt_Return(self, tree: Tree, stmt: Return) -> list[ast.stmt]:
        value = None if stmt.value is None else self.operand(tree, stmt.value, stmt.pos)
        return [at(ast.Return(value), stmt.pos)]

    def stmt_Raise(self, tree: Tree, stmt: Raise) -> list[ast.stmt]:
        exc = None if stmt.exc is None else self.operand(tree, stmt.exc, stmt.pos)
        cause = None if stmt.cause is None else self.operand(tree, stmt.cause, stmt.pos)
        return [at(ast.Raise(exc, cause), stmt.pos)]

    def stmt_Import(self, tree: Tree, stmt: Import) -> list[ast.stmt]:
        names = [at(ast.alias(n, a), stmt.pos) for n, a in stmt.names]
        return [at(ast.Import(names), stmt.pos)]

    def stmt_ImportFrom(self, tree: Tree, stmt: ImportFrom) -> list[ast.stmt]:
        names = [at(ast.alias(n, a), stmt.pos) for n, a in stmt.names]
        return [at(ast.ImportFrom(stmt.module, names, stmt.level), stmt.pos)]

    def stmt_If(self, tree: Tree, stmt: If) -> list[ast.stmt]:
        test = self.operand(tree, stmt.test, stmt.pos)
        return [at(ast.If(test, self.body(stmt.body, stmt.pos), self.block(stmt.orelse)),
                   stmt.pos)]

    def body(self, stmts: list[Stmt], pos: Pos) -> list[ast.stmt]:
        out = self.block(stmts)
        return out or [at(ast.Pass(), pos)]

    def stmt_While(self, tree: Tree, stmt: While) -> list[ast.stmt]:
        test_stmts, test = self.region(stmt.test)
        body = self.body(stmt.body, stmt.pos)
        orelse = self.block(stmt.orelse)
        if not test_stmts:
            return [at(ast.While(test, body, orelse), stmt.pos)]
        # while True: <test>; if not test: <mark normal exit>; break  ...  (else runs after)
        pos = stmt.pos
        exit_stmts: list[ast.stmt] = [at(ast.Break(), pos)]
        prologue: list[ast.stmt] = []
        epilogue: list[ast.stmt] = []
        if orelse:
            flag = self.ir.new_temp()
            prologue.append(at(ast.Assign([self.name(flag, pos, ast.Store())],
                                          at(ast.Constant(False), pos)), pos))
            exit_stmts.insert(0, at(ast.Assign([self.name(flag, pos, ast.Store())],
                                               at(ast.Constant(True), pos)), pos))
            epilogue.append(at(ast.If(self.name(flag, pos), orelse, []), pos))
        check = at(ast.If(at(ast.UnaryOp(ast.Not(), test), pos), exit_stmts, []), pos)
        loop = at(ast.While(at(ast.Constant(True), pos), [*test_stmts, check, *body], []), pos)
        return [*prologue, loop, *epilogue]

    def stmt_For(self, tree: Tree, stmt: For) -> list[ast.stmt]:
        iterator = self.iterator(tree, stmt.iterator, stmt.is_async, stmt.pos)
        target: ast.expr = self.name(stmt.target, stmt.pos, ast.Store())
        body = self.body(stmt.body, stmt.pos)
        target, body = absorb_target(target, body, stmt.target, self, stmt.pos)
        body = body or [at(ast.Pass(), stmt.pos)]
        node_type = ast.AsyncFor if stmt.is_async else ast.For
        return [at(node_type(target, iterator, body, self.block(stmt.orelse)), stmt.pos)]

    def iterator(self, tree: Tree, operand: Operand, is_async: bool, pos: Pos) -> ast.expr:
        """The iterable expression of a ``for``: a folded ``Iter`` is left to the loop."""
        folded = tree.subst.get(operand) if isinstance(operand, Temp) else None
        if folded is not None and isinstance(folded.op, Iter) and (
                folded.op.is_async == is_async):
            return self.operand(folded, folded.op.value, folded.stmt.pos)
        return self.operand(tree, operand, pos)

    def stmt_With(self, tree: Tree, stmt: With) -> list[ast.stmt]:
        manager = self.operand(tree, stmt.manager, stmt.pos)
        target: ast.expr | None = (None if stmt.target is None
                                   else self.name(stmt.target, stmt.pos, ast.Store()))
        body = self.body(stmt.body, stmt.pos)
        if target is not None and stmt.target is not None:
            target, body = absorb_target(target, body, stmt.target, self, stmt.pos)
            body = body or [at(ast.Pass(), stmt.pos)]
        items = [at(ast.withitem(manager, target), stmt.pos)]
        node_type = ast.AsyncWith if stmt.is_async else ast.With
        if len(stmt.body) == 1 and isinstance(stmt.body[0], With) and stmt.body[0].joined \
                and len(body) == 1 and isinstance(body[0], node_type):
            items += body[0].items
            body = body[0].body
        return [at(node_type(items, body), stmt.pos)]

    def stmt_Try(self, tree: Tree, stmt: Try) -> list[ast.stmt]:
        handlers = []
        for handler in stmt.handlers:
            type_ = None if handler.type is None else self.region_expr(handler.type, stmt)
            handlers.append(at(ast.ExceptHandler(type_, handler.name,
                                                 self.body(handler.body, handler.pos)),
                               handler.pos))
        node_type = ast.TryStar if stmt.is_star else ast.Try
        return [at(node_type(self.body(stmt.body, stmt.pos), handlers,
                             self.block(stmt.orelse), self.block(stmt.finalbody)), stmt.pos)]

    def stmt_Assert(self, tree: Tree, stmt: Assert) -> list[ast.stmt]:
        pos = stmt.pos
        test_stmts, test = self.region(stmt.test)
        msg_stmts: list[ast.stmt] = []
        msg = None
        if stmt.msg is not None:
            msg_stmts, msg = self.region(stmt.msg)
        if not test_stmts and not msg_stmts:
            return [at(ast.Assert(test, msg), pos)]
        # if __debug__: <test>; if not test: <msg>; raise AssertionError(msg)
        error = self.helper(AssertionError, "AssertionError", pos)
        raise_ = at(ast.Raise(at(ast.Call(error, [msg] if msg else [], []), pos), None), pos)
        failing = at(ast.If(at(ast.UnaryOp(ast.Not(), test), pos), [*msg_stmts, raise_], []),
                     pos)
        return [at(ast.If(at(ast.Name("__debug__", ast.Load()), pos), [*test_stmts, failing],
                          []), pos)]

    def stmt_Match(self, tree: Tree, stmt: Match) -> list[ast.stmt]:
        subject = self.operand(tree, stmt.subject, stmt.pos)
        cases = []
        for case in stmt.cases:
            guard = None if case.guard is None else self.region_expr(case.guard, stmt)
            cases.append(ast.match_case(copy.deepcopy(case.pattern), guard,
                                        self.body(case.body, stmt.pos)))
        return [at(ast.Match(subject, cases), stmt.pos)]

    def stmt_FunctionDef(self, tree: Tree, stmt: FunctionDef) -> list[ast.stmt]:
        pos = stmt.pos
        decorators = self.decorators(tree, stmt.decorators, stmt.decorator_pos, pos)
        defaults = [self.operand(tree, d, pos) for d in stmt.defaults]
        kwdefaults = [None if d is None else self.operand(tree, d, pos)
                      for d in stmt.kwdefaults]
        annotations = {
            name: copy.deepcopy(a) if isinstance(a, ast.AST) else self.operand(tree, a, pos)
            for name, a in stmt.annotations
        }
        return [function_node(stmt.fn, self.ctx, decorators, defaults, kwdefaults,
                              annotations, nested=True)]

    def stmt_ClassDef(self, tree: Tree, stmt: ClassDef) -> list[ast.stmt]:
        pos = stmt.pos
        decorators = self.decorators(tree, stmt.decorators, stmt.decorator_pos, pos)
        bases = [self.starred(tree, b, pos) for b in stmt.bases]
        bases += [copy.deepcopy(b) for b in stmt.scoped_bases]
        keywords = [self.keyword(tree, k, pos) for k in stmt.keywords]
        keywords += [copy.deepcopy(k) for k in stmt.scoped_keywords]
        return [class_node(stmt.fn, self.ctx, decorators, bases, keywords)]

    def stmt_TypeAlias(self, tree: Tree, stmt: TypeAlias) -> list[ast.stmt]:
        name = at(ast.Name(stmt.var.name, ast.Store()), either(stmt.var.pos, stmt.pos))
        node = ast.TypeAlias(name, copy.deepcopy(stmt.type_params),  # type: ignore[attr-defined]
                             copy.deepcopy(stmt.value))
        return [at(node, stmt.pos)]

    def decorators(self, tree: Tree, operands: list[Operand], positions: list[Pos],
                   pos: Pos) -> list[ast.expr]:
        """Decorator expressions at their own spans (the first decorator's line becomes the
        code object's first line, even when the decorator is a hidden temporary)."""
        spans = positions + [pos] * (len(operands) - len(positions))
        return [self.operand(tree, d, span) for d, span in zip(operands, spans, strict=True)]

    # ---------------------------------------------------------------------- expressions

    def operand(self, tree: Tree, operand: Operand, pos: Pos,
                subscript: bool = False) -> ast.expr:
        """The expression for one operand of ``tree`` (folded trees are expanded)."""
        if isinstance(operand, Temp):
            folded = tree.subst.get(operand)
            if folded is not None:
                return self.expression(folded, subscript=subscript)
            return self.name(operand, pos)
        if isinstance(operand, Var):
            return at(ast.Name(operand.name, ast.Load()), either(operand.pos, pos))
        return self.const(operand.value, either(operand.pos, pos))

    def starred(self, tree: Tree, item: Operand | Starred, pos: Pos) -> ast.expr:
        if not isinstance(item, Starred):
            return self.operand(tree, item, pos)
        operand = item.value
        folded = tree.subst.get(operand) if isinstance(operand, Temp) else None
        if folded is not None and isinstance(folded.op, Splat):
            return at(ast.Starred(self.operand(folded, folded.op.value, folded.stmt.pos),
                                  ast.Load()), folded.stmt.pos)
        return at(ast.Starred(self.operand(tree, operand, pos), ast.Load()), pos)

    def keyword(self, tree: Tree, item: Keyword, pos: Pos) -> ast.keyword:
        operand = item.value
        if item.name is None:
            folded = tree.subst.get(operand) if isinstance(operand, Temp) else None
            if folded is not None and isinstance(folded.op, DoubleSplat):
                value = self.operand(folded, folded.op.value, folded.stmt.pos)
                return at(ast.keyword(None, value), folded.stmt.pos)
        return at(ast.keyword(item.name, self.operand(tree, operand, pos)), pos)

    def expression(self, tree: Tree, subscript: bool = False) -> ast.expr:
        """The expression computing a definition's op."""
        stmt = tree.stmt
        assert isinstance(stmt, Assign)
        op = stmt.op
        pos = stmt.pos
        if tree.kind == "chain":
            return self.chain_expr(tree, stmt)
        if isinstance(op, Load):
            return at(ast.Name(op.var.name, ast.Load()), either(op.var.pos, pos))
        if isinstance(op, Copy):
            return self.operand(tree, op.value, pos)
        if isinstance(op, BinOp):
            return at(ast.BinOp(self.operand(tree, op.left, pos), AST_BINOPS[op.op](),
                                self.operand(tree, op.right, pos)), pos)
        if isinstance(op, InPlace):
            func = self.helper(getattr(operator, op.op), "operator_" + op.op, pos)
            args = [self.operand(tree, op.target, pos), self.operand(tree, op.value, pos)]
            return at(ast.Call(func, args, []), pos)
        if isinstance(op, UnaryOp):
            return at(ast.UnaryOp(AST_UNARY[op.op](), self.operand(tree, op.operand, pos)),
                      pos)
        if isinstance(op, Compare):
            return at(ast.Compare(self.operand(tree, op.left, pos), [AST_COMPARE[op.op]()],
                                  [self.operand(tree, op.right, pos)]), pos)
        if isinstance(op, (BoolOp, IfExp)):
            expr = tree.extra["expr"] if "expr" in tree.extra else self.lazy_expr(tree, stmt)
            if expr is None:
                raise self.fail(stmt, "a lazily evaluated part could not be made an expression")
            return expr
        if isinstance(op, GetAttr):
            return at(ast.Attribute(self.operand(tree, op.obj, pos), op.name, ast.Load()), pos)
        if isinstance(op, GetItem):
            return at(ast.Subscript(self.operand(tree, op.obj, pos),
                                    self.operand(tree, op.index, pos, subscript=True),
                                    ast.Load()), pos)
        if isinstance(op, BuildSlice):
            parts = [None if p is None else self.operand(tree, p, pos)
                     for p in (op.lower, op.upper, op.step)]
            if subscript:
                return at(ast.Slice(*parts), pos)
            none = at(ast.Constant(None), pos)
            func = self.helper(slice, "slice", pos)
            return at(ast.Call(func, [p if p is not None else none for p in parts], []), pos)
        if isinstance(op, Call):
            return at(ast.Call(self.operand(tree, op.func, pos),
                               [self.starred(tree, a, pos) for a in op.args],
                               [self.keyword(tree, k, pos) for k in op.keywords]),
                      self.call_pos(tree, op, pos))
        if isinstance(op, Splat):
            inner = at(ast.Starred(self.operand(tree, op.value, pos), ast.Load()), pos)
            return at(ast.Tuple([inner], ast.Load()), pos)
        if isinstance(op, DoubleSplat):
            return at(ast.Dict([None], [self.operand(tree, op.value, pos)]), pos)
        if isinstance(op, BuildTuple):
            elts = [self.starred(tree, i, pos) for i in op.items]
            if subscript:  # a[1:2, 3] keeps its slices
                elts = [self.starred_sub(tree, i, pos) for i in op.items]
            return at(ast.Tuple(elts, ast.Load()), pos)
        if isinstance(op, BuildList):
            return at(ast.List([self.starred(tree, i, pos) for i in op.items], ast.Load()), pos)
        if isinstance(op, BuildSet):
            return at(ast.Set([self.starred(tree, i, pos) for i in op.items]), pos)
        if isinstance(op, BuildDict):
            keys: list[ast.expr | None] = []
            values: list[ast.expr] = []
            for key, value in op.items:
                if key is None:
                    folded = tree.subst.get(value) if isinstance(value, Temp) else None
                    if folded is not None and isinstance(folded.op, DoubleSplat):
                        values.append(self.operand(folded, folded.op.value, folded.stmt.pos))
                    else:
                        values.append(self.operand(tree, value, pos))
                    keys.append(None)
                else:
                    keys.append(self.operand(tree, key, pos))
                    values.append(self.operand(tree, value, pos))
            return at(ast.Dict(keys, values), pos)
        if isinstance(op, Format):
            return at(ast.JoinedStr([self.formatted(tree, op, pos)]), pos)
        if isinstance(op, JoinStr):
            return at(ast.JoinedStr([self.string_part(tree, p, pos) for p in op.parts]), pos)
        if isinstance(op, Iter):
            func = self.helper(builtins.aiter if op.is_async else iter,
                               "aiter" if op.is_async else "iter", pos)
            return at(ast.Call(func, [self.operand(tree, op.value, pos)], []), pos)
        if isinstance(op, Yield):
            yielded = None if op.value is None else self.operand(tree, op.value, pos)
            return at(ast.Yield(yielded), pos)
        if isinstance(op, YieldFrom):
            return at(ast.YieldFrom(self.operand(tree, op.value, pos)), pos)
        if isinstance(op, Await):
            return at(ast.Await(self.operand(tree, op.value, pos)), pos)
        if isinstance(op, Walrus):
            target = at(ast.Name(op.var.name, ast.Store()), either(op.var.pos, pos))
            return at(ast.NamedExpr(target, self.operand(tree, op.value, pos)), pos)
        if isinstance(op, MakeLambda):
            return self.lambda_expr(tree, op, pos)
        if isinstance(op, MakeComprehension):
            return self.comprehension_expr(tree, op, pos)
        raise self.fail(stmt, f"no expression form for {type(op).__name__}")

    def call_pos(self, tree: Tree, op: Call, pos: Pos) -> Pos:
        """Where a call is when its callee is a separate ``getattr`` (a hidden temporary):
        where CPython places it (``splice.ir.call_positions``), so the split call keeps the
        line of ``.m`` in a method call ``obj\n.m()``."""
        func = op.func
        if not isinstance(func, Temp) or func in tree.subst:
            return pos
        if self.defs is None:
            self.defs = definitions(self.ir)
        stmt = self.defs.get(func)
        get = stmt.op if stmt is not None else None
        if not isinstance(get, GetAttr) or stmt is None:
            return pos
        return call_position(pos, stmt.pos, get, op, self.ir.module_imports)

    def starred_sub(self, tree: Tree, item: Operand | Starred, pos: Pos) -> ast.expr:
        if isinstance(item, Starred):
            return self.starred(tree, item, pos)
        return self.operand(tree, item, pos, subscript=True)

    def formatted(self, tree: Tree, op: Format, pos: Pos) -> ast.FormattedValue:
        value = self.operand(tree, op.value, pos)
        spec: ast.expr | None = None
        if op.spec is not None:
            folded = tree.subst.get(op.spec) if isinstance(op.spec, Temp) else None
            if isinstance(op.spec, Const) and isinstance(op.spec.value, str):
                where = either(op.spec.pos, pos)
                # an empty spec (``{x:}``) has no part: 3.11 and 3.12 build it with
                # ``BUILD_STRING 0``, 3.13 loads the constant ""
                parts: list[ast.expr] = []
                if op.spec.value:
                    parts.append(at(ast.Constant(op.spec.value), where))
                spec = at(ast.JoinedStr(parts), where)
            elif folded is not None and isinstance(folded.op, JoinStr):
                spec = self.expression(folded)
            else:
                inner = at(ast.FormattedValue(self.operand(tree, op.spec, pos), -1, None), pos)
                spec = at(ast.JoinedStr([inner]), pos)
        return at(ast.FormattedValue(value, op.conversion, spec), pos)

    def string_part(self, tree: Tree, part: Operand, pos: Pos) -> ast.expr:
        if isinstance(part, Const) and isinstance(part.value, str):
            return at(ast.Constant(part.value), either(part.pos, pos))
        folded = tree.subst.get(part) if isinstance(part, Temp) else None
        if folded is not None and isinstance(folded.op, Format):
            return self.formatted(folded, folded.op, folded.stmt.pos)
        return at(ast.FormattedValue(self.operand(tree, part, pos), -1, None), pos)

    def lazy_expr(self, tree: Tree, stmt: Assign) -> ast.expr | None:
        """``and``/``or``/conditional expression as one expression, if every lazily
        evaluated region is an expression (else ``None``)."""
        op = stmt.op
        pos = stmt.pos
        if not self.ctx.renest:
            return None
        if isinstance(op, BoolOp):
            if not self.threads_as_expression(tree, stmt):
                return None
            first = self.operand(tree, op.first, pos)
            values = [first]
            for i, region in enumerate(op.rest):
                stmts, value = self.region(region)
                if stmts:
                    return None
                temp = region.value
                if i < len(op.rest) - 1 and isinstance(temp, Temp) and isinstance(
                        value, ast.Name) and value.id == temp_name(temp) and \
                        self.threaded_def(temp) is not None:
                    return None  # a threaded and/or written out before: test its carrier
                values.append(value)
            bool_op = ast.And() if op.op == "and" else ast.Or()
            return at(ast.BoolOp(bool_op, values), pos)
        assert isinstance(op, IfExp)
        test = self.operand(tree, op.test, pos)
        body_stmts, body = self.region(op.body)
        else_stmts, orelse = self.region(op.orelse)
        if body_stmts or else_stmts:
            return None
        return at(ast.IfExp(test, body, orelse), pos)

    def lazy_statements(self, tree: Tree, stmt: Assign) -> list[ast.stmt]:
        """Statement form of ``and``/``or``/conditional expressions (the result goes to a
        hidden local). In a test context each decided value is turned into a bool with
        ``not not`` so the consumer's truth test runs no user code again."""
        op = stmt.op
        pos = stmt.pos
        result = stmt.result or self.ir.new_temp()

        def assign(value: ast.expr, as_bool: bool) -> ast.stmt:
            if as_bool:
                value = at(ast.UnaryOp(ast.Not(), at(ast.UnaryOp(ast.Not(), value), pos)), pos)
            return at(ast.Assign([self.name(result, pos, ast.Store())], value), pos)

        if isinstance(op, IfExp):
            test = self.operand(tree, op.test, pos)
            body_stmts, body = self.region(op.body)
            else_stmts, orelse = self.region(op.orelse)
            return [at(ast.If(test, [*body_stmts, assign(body, False)],
                              [*else_stmts, assign(orelse, False)]), pos)]
        assert isinstance(op, BoolOp)
        # ``threaded``: the hidden local ``carrier`` tells the and/or testing this one's value
        # what to test: the outcome (a bool) when this op stops early, else its last
        # operand, untested (or that operand's own carrier)
        carrier = self.carrier(result) if threaded(op) else None

        def carry(value: ast.expr) -> ast.stmt:
            assert carrier is not None
            return at(ast.Assign([self.name(carrier, pos, ast.Store())], value), pos)

        out: list[ast.stmt] = []
        if carrier is not None:
            out.append(carry(at(ast.Constant(op.op == "or"), pos)))
        # ``check``: what decides for the latest operand instead of its value (a carrier)
        before, value, check = self.tested_operand(tree, op.first, pos)
        out += [*before, assign(check if op.in_test and check is not None else value,
                                op.in_test)]
        current = out
        for i, region in enumerate(op.rest):
            decided: ast.expr = check if check is not None and not op.in_test else \
                self.name(result, pos)
            if i == len(op.rest) - 1 and carrier is None:
                stmts, value = self.region(region)
                check = None
            else:
                stmts, value, check = self.tested_region(region, pos)
            inner: list[ast.stmt] = [
                *stmts, assign(check if op.in_test and check is not None else value,
                               op.in_test)]
            if op.op == "or":
                decided = at(ast.UnaryOp(ast.Not(), decided), pos)
            current.append(at(ast.If(decided, inner, []), pos))
            current = inner
        if carrier is not None:
            current.append(carry(check if check is not None else self.name(result, pos)))
        return out

    def carrier(self, temp: Temp) -> Temp:
        """The hidden local carrying the decision of the threaded and/or computing ``temp``
        (``BoolOp.threaded``)."""
        found = self.carriers.get(temp)
        if found is None:
            found = self.carriers[temp] = self.ir.new_temp()
        return found

    def threaded_def(self, operand: Operand) -> Assign | None:
        """The threaded and/or computing ``operand``, if one does."""
        if not isinstance(operand, Temp):
            return None
        if self.defs is None:
            self.defs = definitions(self.ir)
        stmt = self.defs.get(operand)
        return stmt if stmt is not None and threaded(stmt.op) else None

    def tested_operand(self, tree: Tree, operand: Operand, pos: Pos
                       ) -> tuple[list[ast.stmt], ast.expr, ast.expr | None]:
        """An operand an and/or tests, in its statement form: the statements computing it,
        its value, and what to test instead of the value (the carrier of a threaded and/or,
        written out here if it was folded in), or None."""
        if isinstance(operand, Temp):
            folded = tree.subst.get(operand)
            if folded is not None and isinstance(folded.stmt, Assign) and \
                    threaded(folded.stmt.op) and folded.kind == "op":
                before = self.lazy_statements(folded, folded.stmt)
                return before, self.name(operand, pos), self.name(self.carrier(operand), pos)
            if folded is None and self.threaded_def(operand) is not None:
                return [], self.name(operand, pos), self.name(self.carrier(operand), pos)
        return [], self.operand(tree, operand, pos), None

    def tested_region(self, region: Region, pos: Pos
                      ) -> tuple[list[ast.stmt], ast.expr, ast.expr | None]:
        """``tested_operand`` for a region's value: a threaded and/or computing it is not
        folded into the value (its statements set its carrier)."""
        temp = region.value
        if isinstance(temp, Temp) and self.threaded_def(temp) is not None:
            stmts = self.block(region.body)
            return stmts, self.name(temp, pos), self.name(self.carrier(temp), pos)
        stmts, value = self.region(region)
        return stmts, value, None

    def threads_as_expression(self, tree: Tree, stmt: Assign) -> bool:
        """Whether the expression form of this and/or keeps the IR's count of truth tests
        for its first operand: a threaded and/or must be folded into it (its carrier is not
        an expression), and one folded in is threaded by CPython exactly when the IR says
        so (3.11: same line)."""
        op = stmt.op
        assert isinstance(op, BoolOp)
        if not isinstance(op.first, Temp):
            return True
        folded = tree.subst.get(op.first)
        if folded is None:
            return self.threaded_def(op.first) is None
        inner = folded.stmt.op if isinstance(folded.stmt, Assign) else None
        if not isinstance(inner, BoolOp) or inner.in_test or folded.kind != "op":
            return True
        would = JUMP_THREADING and folded.stmt.pos.lineno == stmt.pos.lineno
        return would == threaded(inner)

    def chain_expr(self, tree: Tree, stmt: Assign) -> ast.expr:
        pos = stmt.pos
        left = self.operand(tree, tree.items[0][0], pos)  # type: ignore[index]
        comparators = [self.operand(tree, tree.items[1][0], pos)]  # type: ignore[index]
        for region in tree.extra["regions"]:
            stmts, value = self.region(region, owned=tree.extra["owned"])
            if stmts:
                raise Retry(stmt.id)
            comparators.append(value)
        ops = [AST_COMPARE[o]() for o in tree.extra["ops"]]
        return at(ast.Compare(left, ops, comparators), pos)

    def lambda_expr(self, tree: Tree, op: MakeLambda, pos: Pos) -> ast.expr:
        defaults = [self.operand(tree, d, pos) for d in op.defaults]
        kwdefaults = [None if d is None else self.operand(tree, d, pos) for d in op.kwdefaults]
        inner = ScopeGen(op.fn, self.ctx)
        body = inner.expression_body()
        args = build_arguments(op.fn, defaults, kwdefaults, {})
        return at(ast.Lambda(args, body), pos)

    def expression_body(self) -> ast.expr:
        """A lambda's body: its statements must reduce to ``return <expr>``."""
        saved = self.ctx.renest
        self.ctx.renest = True  # lambdas are expressions: always re-nest inside them
        try:
            out = self.block(self.ir.body)
        finally:
            self.ctx.renest = saved
        if len(out) != 1 or not isinstance(out[0], ast.Return) or out[0].value is None:
            raise CannotRegenerate(f"the body of {self.ir.qualname} is no longer an expression")
        return out[0].value

    def comprehension_expr(self, tree: Tree, op: MakeComprehension, pos: Pos) -> ast.expr:
        iterator = self.iterator(tree, op.iterator, False, pos)
        folded = tree.subst.get(op.iterator) if isinstance(op.iterator, Temp) else None
        is_async = folded is not None and isinstance(folded.op, Iter) and folded.op.is_async
        if folded is not None and isinstance(folded.op, Iter) and folded.op.is_async:
            iterator = self.operand(folded, folded.op.value, folded.stmt.pos)
        inner = ScopeGen(op.fn, self.ctx)
        saved = self.ctx.renest
        self.ctx.renest = True  # comprehensions are expressions: always re-nest inside them
        try:
            generators, elements = inner.comprehension_parts(op.fn.body, first=iterator,
                                                             first_async=is_async)
        except CannotRegenerate:
            if not (self.ctx.comprehension_functions and self.host is not None
                    and not is_async and not op.fn.is_async and not _binds_outside(op.fn)):
                raise
            return self.comprehension_call(op, iterator, pos)
        finally:
            self.ctx.renest = saved
        if op.kind == "list":
            return at(ast.ListComp(elements[0], generators), pos)
        if op.kind == "set":
            return at(ast.SetComp(elements[0], generators), pos)
        if op.kind == "dict":
            return at(ast.DictComp(elements[0], elements[1], generators), pos)
        return at(ast.GeneratorExp(elements[0], generators), pos)

    def comprehension_call(self, op: MakeComprehension, iterator: ast.expr, pos: Pos
                           ) -> ast.expr:
        """``%n(iterator)``, with ``def %n(.0): ...`` (the comprehension's scope as a plain
        function, renamed to ``<listcomp>`` etc. after compilation) defined at the start of
        the hosting function."""
        assert self.host is not None
        name = temp_name(self.host.ir.new_temp())
        self.ctx.comprehension_names[name] = op.fn.name
        inner = ScopeGen(op.fn, self.ctx)
        inner.host = inner
        body: list[ast.stmt] = []
        if op.kind != "genexp":
            result = temp_name(op.fn.new_temp())
            inner.append_target = (op.kind, result)
            empty: ast.expr = (ast.List([], ast.Load()) if op.kind == "list"
                               else ast.Dict([], []) if op.kind == "dict"
                               else ast.Set([ast.Starred(ast.Tuple([], ast.Load()),
                                                         ast.Load())]))
            body.append(at(ast.Assign([at(ast.Name(result, ast.Store()), pos)],
                                      at(empty, pos)), pos))
        saved, self.ctx.renest = self.ctx.renest, True
        try:
            body += inner.block(op.fn.body)
        finally:
            self.ctx.renest = saved
        body[0:0] = inner.hoisted
        if op.kind != "genexp":
            body.append(at(ast.Return(at(ast.Name(result, ast.Load()), pos)), pos))
        args = ast.arguments([], [ast.arg(".0")], None, [], [], None, [])
        node = at(ast.FunctionDef(name, args, body, [], None, None, **NO_TYPE_PARAMS), pos)
        self.host.hoisted.append(node)
        return at(ast.Call(at(ast.Name(name, ast.Load()), pos), [iterator], []), pos)

    def append_statement(self, tree: Tree, op: ComprehensionAppend, pos: Pos) -> ast.stmt:
        """``%r.append(v)`` / ``%r.add(v)`` / ``%r[k] = v`` in a comprehension function."""
        assert self.append_target is not None
        kind, result = self.append_target
        values = [self.operand(tree, v, pos) for v in op.values]
        target = at(ast.Name(result, ast.Load()), pos)
        if kind == "dict":
            store = at(ast.Subscript(target, values[0], ast.Store()), pos)
            return at(ast.Assign([store], values[1]), pos)
        method = at(ast.Attribute(target, "append" if kind == "list" else "add", ast.Load()),
                    pos)
        return at(ast.Expr(at(ast.Call(method, [values[0]], []), pos)), pos)

    def comprehension_parts(self, body: list[Stmt], first: ast.expr, first_async: bool
                            ) -> tuple[list[ast.comprehension], list[ast.expr]]:
        """Read a comprehension scope back: nested ``for``/``if`` ending in one append."""
        generators: list[ast.comprehension] = []
        block = body
        iterator_expr: ast.expr | None = first
        while True:
            out = self.block_with_tail(block)
            stmts, tail = out
            if stmts:
                raise CannotRegenerate("a comprehension's body is no longer expressions")
            if isinstance(tail, For):
                tree, prefix_ok = self.tail_tree
                if not prefix_ok:
                    raise CannotRegenerate("a comprehension's loop header is not an expression")
                if iterator_expr is None:
                    iterator_expr = self.iterator(tree, tail.iterator, tail.is_async, tail.pos)
                target: ast.expr = self.name(tail.target, tail.pos, ast.Store())
                rest = tail.body
                # the loop body starts with the target stores, then ifs / a nested loop
                target_stmts, rest = split_target_stores(rest, tail.target)
                target_ast = self.block(target_stmts)
                target, leftover = absorb_target(target, target_ast, tail.target, self,
                                                 tail.pos)
                if leftover:
                    raise CannotRegenerate("a comprehension's target is no longer a target")
                comp = ast.comprehension(target, iterator_expr, [], int(tail.is_async))
                generators.append(comp)
                iterator_expr = None
                block = rest
                continue
            if isinstance(tail, If):
                tree, prefix_ok = self.tail_tree
                if not prefix_ok or tail.orelse:
                    raise CannotRegenerate("a comprehension's condition is not an expression")
                generators[-1].ifs.append(self.operand(tree, tail.test, tail.pos))
                block = tail.body
                continue
            if isinstance(tail, Assign) and isinstance(tail.op, (ComprehensionAppend, Yield)):
                tree, prefix_ok = self.tail_tree
                if not prefix_ok:
                    raise CannotRegenerate("a comprehension's element is not an expression")
                values = (tail.op.values if isinstance(tail.op, ComprehensionAppend)
                          else [tail.op.value])
                return generators, [self.operand(tree, v, tail.pos) for v in values
                                    if v is not None]
            raise CannotRegenerate("a comprehension's body has an unexpected statement")

    def block_with_tail(self, stmts: list[Stmt]) -> tuple[list[ast.stmt], Stmt | None]:
        """Generate all but the last statement, folding what can be folded into the last
        one's tree (kept in ``self.tail_tree``); return the statements that remain."""
        if not stmts:
            raise CannotRegenerate("an empty comprehension body")
        out, _, tree = self.generate_retrying(stmts, None, None, keep_last=True)
        assert tree is not None
        self.tail_tree = (tree, not out)
        return out, stmts[-1]

    tail_tree: tuple[Tree, bool]


class Retry(Exception):
    """Generate the block again without the composite shape of statement ``key``."""

    def __init__(self, key: int) -> None:
        super().__init__(key)
        self.key = key


@dataclass
class Shape:
    """Several IR statements that regenerate as one piece of syntax: ``x op= v``,
    ``a.b op= v``, ``a[i] op= v`` and ``a < b < c``. The statements at ``skipped`` are
    absorbed into the tree of the statement at ``index``."""

    kind: str
    index: int
    skipped: tuple[int, ...]
    #: the earliest absorbed statement whose effect the composite performs: pending
    #: definitions after it must all fold, or the shape is abandoned (``Retry``)
    must_fold_after: int | None
    parts: dict[str, Any]

    def shared(self) -> set[Temp]:
        if self.kind == "augtarget":
            return {o for o in self.parts["parts"] if isinstance(o, Temp)}
        if self.kind == "chain":
            return set(self.parts["owned"])
        return set()

    def tree(self, stmt: Stmt, label: int, base: int) -> Tree:
        def lab(index: int) -> int:
            return base + index + 1

        p = self.parts
        if self.kind == "augname":
            read = lab(p["read_at"])
            ip = lab(self.index - 1)
            items: list[tuple[Operand, int] | int] = [
                (p["var"], read), (p["value"], ip), ip, label]
            return Tree(stmt, items, kind="augname",
                        extra={"op": p["op"], "value": p["value"], "label": label})
        if self.kind == "augtarget":
            get = lab(p["get_at"])
            ip = lab(self.index - 1)
            items = [(o, get) for o in p["parts"]]
            items += [get, (p["value"], ip), ip, label]
            owned = {o for o in p["parts"] if isinstance(o, Temp)}
            return Tree(stmt, items, owned=owned, kind="augtarget",
                        extra={"op": p["op"], "value": p["value"], "label": label,
                               "pos": p["pos"]})
        cmp_label = lab(self.index - 1)
        items = [(p["left"], cmp_label), (p["middle"], cmp_label), cmp_label, label]
        return Tree(stmt, items, owned=set(p["owned"]), kind="chain",
                    extra={"ops": p["ops"], "regions": p["regions"], "owned": p["owned"],
                           "label": label})


def find_shapes(stmts: list[Stmt], uses: Counter[Temp], disabled: set[int]
                ) -> dict[int, Shape]:
    """The composite shapes of a block (see ``Shape``), by the index of their last
    statement."""
    defs: dict[Temp, int] = {}
    for index, stmt in enumerate(stmts):
        if isinstance(stmt, Assign) and len(stmt.results) == 1:
            defs[stmt.results[0]] = index
    shapes: dict[int, Shape] = {}
    taken: set[int] = set()

    def single(temp: Operand, index: int) -> int | None:
        """The index of ``temp``'s definition if it is used once, else None."""
        if isinstance(temp, Temp) and uses[temp] == 1:
            found = defs.get(temp)
            if found is not None and found < index and found not in taken:
                return found
        return None

    def twice(operand: Operand) -> bool:
        return isinstance(operand, Const) or (isinstance(operand, Temp) and uses[operand] == 2)

    for k, stmt in enumerate(stmts):
        if stmt.id in disabled or k == 0:
            continue
        prev = stmts[k - 1]
        if not (isinstance(prev, Assign) and len(prev.results) == 1 and k - 1 not in taken):
            continue
        shape: Shape
        if isinstance(stmt, Store) and stmt.annotation is None:
            if not (isinstance(prev.op, InPlace) and prev.results[0] is stmt.value
                    and uses[prev.results[0]] == 1):
                continue
            target = prev.op.target
            if isinstance(target, Var):
                if target.name != stmt.var.name:
                    continue
                shape = Shape("augname", k, (k - 1,), None,
                              {"var": target, "read_at": k - 1, "value": prev.op.value,
                               "op": prev.op.op})
            else:
                j = single(target, k - 1)
                load = stmts[j] if j is not None else None
                if not (isinstance(load, Assign) and isinstance(load.op, Load)
                        and load.op.var.name == stmt.var.name):
                    continue
                assert j is not None
                shape = Shape("augname", k, (j, k - 1), j,
                              {"var": load.op.var, "read_at": j, "value": prev.op.value,
                               "op": prev.op.op})
        elif isinstance(stmt, Assign) and isinstance(stmt.op, (SetAttr, SetItem)):
            op = stmt.op
            if not (isinstance(prev.op, InPlace) and prev.results[0] is op.value
                    and uses[prev.results[0]] == 1):
                continue
            j = single(prev.op.target, k - 1)
            get = stmts[j] if j is not None else None
            if isinstance(op, SetAttr):
                if not (isinstance(get, Assign) and isinstance(get.op, GetAttr)
                        and get.op.obj == op.obj and get.op.name == op.name
                        and twice(op.obj)):
                    continue
                parts: list[Operand] = [op.obj]
            else:
                if not (isinstance(get, Assign) and isinstance(get.op, GetItem)
                        and get.op.obj == op.obj and get.op.index == op.index
                        and twice(op.obj) and twice(op.index)):
                    continue
                parts = [op.obj, op.index]
            assert j is not None
            shape = Shape("augtarget", k, (j, k - 1), j,
                          {"parts": parts, "get_at": j, "value": prev.op.value,
                           "op": prev.op.op, "pos": prev.pos})
        elif isinstance(stmt, Assign) and isinstance(stmt.op, BoolOp) and stmt.op.chain:
            chain = stmt.op
            first = prev.op
            if not (isinstance(first, Compare) and prev.results[0] is chain.first
                    and uses[prev.results[0]] == 1):
                continue
            links: list[tuple[str, Region]] = []
            previous = first.right
            ok = True
            for region in chain.rest:
                last = region.body[-1] if region.body else None
                if not (isinstance(last, Assign) and isinstance(last.op, Compare)
                        and last.results == (region.value,) and last.op.left == previous):
                    ok = False
                    break
                links.append((last.op.op, Region(region.body[:-1], last.op.right)))
                previous = last.op.right
            middles = [first.right] + [region.value for _, region in links[:-1]]
            if not ok or not all(twice(m) for m in middles):
                continue
            shape = Shape("chain", k, (k - 1,), None,
                          {"left": first.left, "middle": first.right,
                           "ops": [first.op] + [o for o, _ in links],
                           "regions": [r for _, r in links],
                           "owned": {m for m in middles if isinstance(m, Temp)}})
        else:
            continue
        shapes[k] = shape
        taken.update(shape.skipped)
        taken.add(k)
    return shapes


def split_target_stores(body: list[Stmt], target: Temp) -> tuple[list[Stmt], list[Stmt]]:
    """Split a comprehension loop body into the statements storing the loop target and
    the rest (conditions, nested loops, the append)."""
    used: set[Temp] = {target}
    index = 0
    for index, stmt in enumerate(body):
        if isinstance(stmt, Store) and stmt.value in used:
            continue
        if isinstance(stmt, Assign) and isinstance(stmt.op, Unpack) and stmt.op.value in used:
            used.update(stmt.results)
            continue
        if isinstance(stmt, Assign) and isinstance(stmt.op, (SetAttr, SetItem)) and \
                stmt.op.value in used:
            continue
        if isinstance(stmt, Assign) and isinstance(stmt.op, (Load, GetAttr, GetItem,
                                                             BuildSlice, Call, BinOp)):
            # parts of an attribute or subscript target
            nxt = body[index + 1] if index + 1 < len(body) else None
            if nxt is not None and isinstance(nxt, Assign) and isinstance(
                    nxt.op, (SetAttr, SetItem)):
                continue
        return body[:index], body[index:]
    return body, []


def absorb_target(target: ast.expr, body: list[ast.stmt], temp: Temp, gen: ScopeGen,
                  pos: Pos) -> tuple[ast.expr, list[ast.stmt]]:
    """``for %1 in x: a = %1; ...`` -> ``for a in x: ...`` (the same for ``with ... as``)."""
    if gen.uses[temp] != 1 or not body:
        return target, body
    first = body[0]
    if (isinstance(first, ast.Assign) and len(first.targets) == 1
            and isinstance(first.value, ast.Name) and first.value.id == temp_name(temp)):
        return first.targets[0], body[1:]
    return target, body


def merge_stores(out: list[ast.stmt], gen: ScopeGen) -> list[ast.stmt]:
    """Put multiple-target and unpacking assignments back together:
    ``%1 = v; a = %1; b = %1`` -> ``a = b = v`` and ``%1, %2 = v; a = %1; b.c = %2`` ->
    ``a, b.c = v`` (each store used its temp once, in order, right after)."""
    i = len(out) - 1
    while i >= 0:
        stmt = out[i]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and target.id.startswith("%"):
                temp = gen.temps_by_name.get(target.id)
                n = gen.uses[temp] if temp is not None else 0
                follow = out[i + 1:i + 1 + n]
                if n >= 2 and len(follow) == n and all(_stores(s, target.id) for s in follow):
                    targets = [s.targets[0] for s in follow]  # type: ignore[attr-defined]
                    # the statement's span is the stores' (the value's is the definition's)
                    out[i:i + 1 + n] = [at(ast.Assign(targets, stmt.value), _pos(follow[0]))]
            elif isinstance(target, ast.Tuple) and all(
                    _temp_target(e) for e in target.elts):
                names = [_temp_target(e) for e in target.elts]
                follow = out[i + 1:i + 1 + len(names)]
                if len(follow) == len(names) and all(
                        n is not None and _stores(s, n) and gen.uses[gen.temps_by_name[n]] == 1
                        for s, n in zip(follow, names, strict=True)):
                    elts = []
                    for elt, s in zip(target.elts, follow, strict=True):
                        new = s.targets[0]  # type: ignore[attr-defined]
                        if isinstance(elt, ast.Starred):
                            new = at(ast.Starred(new, ast.Store()), _pos(elt))
                        elts.append(new)
                    new_target = at(ast.Tuple(elts, ast.Store()), _pos(target))
                    out[i:i + 1 + len(names)] = [at(ast.Assign([new_target], stmt.value),
                                                    _pos(stmt))]
        i -= 1
    return out


def _temp_target(elt: ast.expr) -> str | None:
    if isinstance(elt, ast.Starred):
        elt = elt.value
    if isinstance(elt, ast.Name) and elt.id.startswith("%"):
        return elt.id
    return None


def _stores(stmt: ast.stmt, name: str | None) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.value, ast.Name) and stmt.value.id == name)


def _pos(node: ast.AST) -> Pos:
    return Pos.of(node)


# --------------------------------------------------------------------------- scopes to AST


def build_arguments(ir: FunctionIR, defaults: list[ast.expr],
                    kwdefaults: list[ast.expr | None],
                    annotations: dict[str, ast.expr]) -> ast.arguments:
    source = ir.args.source
    if source is None:
        return ast.arguments(posonlyargs=[], args=[ast.arg(a) for a in ir.args.args],
                             vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                             defaults=[])

    def arg(node: ast.arg) -> ast.arg:
        annotation = annotations.get(node.arg) if node.annotation is not None else None
        new = ast.arg(node.arg, annotation, None)
        new.lineno, new.col_offset = node.lineno, node.col_offset
        new.end_lineno, new.end_col_offset = node.end_lineno, node.end_col_offset
        return new

    return ast.arguments(
        posonlyargs=[arg(a) for a in source.posonlyargs], args=[arg(a) for a in source.args],
        vararg=arg(source.vararg) if source.vararg else None,
        kwonlyargs=[arg(a) for a in source.kwonlyargs], kw_defaults=kwdefaults,
        kwarg=arg(source.kwarg) if source.kwarg else None, defaults=defaults)


def function_node(ir: FunctionIR, ctx: GenContext, decorators: list[ast.expr],
                  defaults: list[ast.expr], kwdefaults: list[ast.expr | None],
                  annotations: dict[str, ast.expr], nested: bool = False) -> ast.stmt:
    """The ``def`` statement for a function scope. A nested generic function keeps its
    type parameters (CPython makes their scope); a top-level one gets them from the
    closure its code is assembled in (``splice.ir.assemble``)."""
    body = scope_body(ir, ctx)
    args = build_arguments(ir, defaults, kwdefaults, annotations)
    returns = annotations.get("return")
    node_type = ast.AsyncFunctionDef if ir.is_async else ast.FunctionDef
    node = node_type(ir.name, args, body, decorators, returns, None,
                     **type_params_of(ir, nested))
    return at(node, ir.pos)


def type_params_of(ir: FunctionIR, nested: bool) -> dict[str, Any]:
    """The ``type_params`` keyword of a regenerated ``def``/``class`` (none before 3.12)."""
    if nested and ir.type_params:
        return {"type_params": [copy.deepcopy(p) for p in ir.type_params]}
    return NO_TYPE_PARAMS


def class_node(ir: FunctionIR, ctx: GenContext, decorators: list[ast.expr],
               bases: list[ast.expr], keywords: list[ast.keyword]) -> ast.stmt:
    """The ``class`` statement for a class body scope. A class body's locals are the class
    namespace, so it always re-nests: a hidden temporary there would become an attribute."""
    saved, ctx.renest = ctx.renest, True
    try:
        body = scope_body(ir, ctx)
    finally:
        ctx.renest = saved
    return at(ast.ClassDef(ir.name, bases, keywords, body, decorators,
                           **type_params_of(ir, nested=True)), ir.pos)


def scope_body(ir: FunctionIR, ctx: GenContext) -> list[ast.stmt]:
    """A scope's statements: docstring first (so it stays the docstring), declarations, code."""
    body: list[ast.stmt] = []
    if ir.docstring is not None:
        body.append(at(ast.Expr(at(ast.Constant(ir.docstring), ir.pos)), ir.pos))
    if ir.globals:
        body.append(at(ast.Global(list(ir.globals)), ir.pos))
    if ir.nonlocals:
        body.append(at(ast.Nonlocal(list(ir.nonlocals)), ir.pos))
    gen = ScopeGen(ir, ctx)
    code = gen.block(ir.body)
    body += gen.hoisted
    body += code
    return body or [at(ast.Pass(), ir.pos)]


def scope_ast(ir: FunctionIR, ctx: GenContext, display: bool = False) -> ast.stmt | ast.expr:
    """The top-level syntax for ``ir``: a ``def`` (no decorators, defaults or annotations:
    those belong to the function object) or a ``lambda``. ``display``: show the source's
    defaults instead, for people to read."""
    source = ir.args.source
    empty_defaults: list[ast.expr] = [at(ast.Constant(None), ir.pos)
                                      for _ in range(_ndefaults(ir))]
    kwdefaults: list[ast.expr | None] = [None for _ in ir.args.kwonly]
    if display and source is not None:
        empty_defaults = copy.deepcopy(source.defaults)
        kwdefaults = copy.deepcopy(source.kw_defaults)
    if ir.kind == "lambda":
        try:
            body = ScopeGen(ir, ctx).expression_body()
        except CannotRegenerate:
            # a lambda whose body now needs statements (a rewrite put them there) becomes
            # a ``def`` of the same name: the compiler does not check that a function's
            # name is an identifier, so its code object is named ``<lambda>`` all the same
            if display:
                raise
            return function_node(ir, ctx, [], empty_defaults, kwdefaults, {})
        args = build_arguments(ir, empty_defaults, kwdefaults, {})
        return at(ast.Lambda(args, body), ir.pos)
    return function_node(ir, ctx, [], empty_defaults, kwdefaults, {})


def _ndefaults(ir: FunctionIR) -> int:
    source = ir.args.source
    return len(source.defaults) if source is not None else 0


def generate_function(ir: FunctionIR, ctx: GenContext, display: bool = False
                      ) -> ast.stmt | ast.expr:
    """Generate ``ir``'s syntax, turning shapes codegen cannot express into
    ``UnsupportedError``."""
    try:
        return scope_ast(ir, ctx, display)
    except CannotRegenerate as exc:
        raise UnsupportedError(ir.qualname, str(exc), f"{ir.filename}:{ir.pos.lineno}") from None


def fix_locations(node: ast.AST, pos: Pos) -> None:
    """Fill in missing positions from the nearest positioned ancestor."""
    stack: list[tuple[ast.AST, tuple[int, int, int, int]]] = [(node, tuple(pos))]  # type: ignore[list-item]
    while stack:
        current, parent = stack.pop()
        if "lineno" in type(current)._attributes:
            if getattr(current, "lineno", None) is None:
                (current.lineno, current.col_offset,  # type: ignore[attr-defined]
                 current.end_lineno, current.end_col_offset) = parent  # type: ignore[attr-defined]
            else:
                parent = (current.lineno, current.col_offset,  # type: ignore[attr-defined]
                          current.end_lineno, current.end_col_offset)  # type: ignore[attr-defined]
        for name in type(current)._fields:
            value = getattr(current, name, None)
            if isinstance(value, ast.AST):
                stack.append((value, parent))
            elif isinstance(value, list):
                stack.extend((item, parent) for item in value if isinstance(item, ast.AST))
