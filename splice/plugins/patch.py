"""``Patch``: replace functions, methods, classes and attributes only inside a call graph.

::

    from splice.plugins import Patch

    patch = Patch()
    patch.replace(billing.charge, lambda amount, card: "ok")   # a function
    patch.replace(Mailer.send, fake_send)                      # a method (gets self too)
    patch.setattr(settings, "RETRIES", 0)                      # a module attribute
    assert patch.run(checkout, cart) == "done"                 # under the patch
    checkout(cart)                                             # natively: the real ones

Unlike ``unittest.mock.patch``, nothing global changes: ``billing.charge`` stays the real
function for every other caller, other threads included, while the patched call graph runs.
Two threads can run the same code under different patches (or one under a patch, one not).
There is nothing to undo, so a Patch needs no ``with`` block and no clean-up.

What is replaced, exactly
-------------------------
``replace(target, replacement)``: every call of ``target`` made at a call site of code
running under the patch calls ``replacement`` with the same arguments instead. Calls are
matched by the object called, whatever the name or alias used to reach it.

* A Python function (``module.func``, or any function object, closures included).
* A method: ``Class.method`` (the function in the class; the replacement receives ``self``
  first, as the function would), ``Class.classmethod`` (receives ``cls``),
  ``Class.staticmethod``. Calls through instances (``obj.method()``), through ``super()``,
  and through subclasses that inherit the method are replaced; an override in a subclass
  is another function and is not. A bound method ``obj.method`` names its function: the
  method is replaced for every instance.
* A class: ``Class(...)`` calls the replacement (``isinstance`` checks still see ``Class``).
* A builtin function (``time.time``, ``os.getcwd``, ``open``) called directly.
* A ``functools.partial`` object or callable instance, by identity.

Not reachable, so refused with an error: methods of builtin types (``dict.get``,
``list.append``), whose calls splice runs natively, and properties (attribute access does not
go through call sites).

``replacement`` runs natively (as an ``@splice.intercept`` method does); inside it,
``patch.call_original(target, *args, **kwargs)`` runs the original under the patch. A call of
``target`` from code that runs natively (out of splice's reach: callbacks from C functions
that have no overlay, functions whose ``recurse`` is False, code without source) is not
replaced.

``setattr(owner, name, value)``: reads of an attribute, within code running under the patch:

* ``owner`` a module: reads of the global ``name`` in the module's own functions, and reads
  of ``module.name`` anywhere (the object is compared with ``owner`` when the read runs).
* Any other object (a class, an instance, a settings object): reads of ``obj.name`` where
  ``obj`` is ``owner`` itself (``Class.LIMIT``, ``cls.LIMIT`` in a classmethod,
  ``settings.DEBUG``). Reads through instances of a patched class (``self.LIMIT``) are not
  replaced.
* Not covered: names copied before the run (``from module import NAME`` binds a global of
  the importing module: patch ``setattr(importer, "NAME", value)`` instead), ``getattr()``
  with a computed name, ``vars(module)``, reads made by native code, and the module's
  top-level code. Writes go to the real attribute; reads under the patch keep seeing the
  patched value.

Replacing a target again, or setting an attribute again, takes effect at once. Adding a new
target or attribute after the patch has run compiles the code run under it again on its next
run; compositions made earlier (``splice.compose(patch, other)``) may keep what they had
(those with a plugin made after the patch do: that plugin keeps their context).
"""

from __future__ import annotations

import importlib
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

import splice
from splice.ir.nodes import (
    Assign,
    Compare,
    Const,
    FunctionIR,
    GetAttr,
    IfExp,
    Load,
    MakeComprehension,
    Operand,
    Pos,
    Region,
    Stmt,
    Var,
)
from splice.ir.tools import local_names
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Patch"]

_MISSING: Any = object()


class _Box:
    """The current value of one patched attribute (read by rewritten code at run time)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _normalize(target: Any) -> Any:
    """The object whose calls replace(target) intercepts; errors for what cannot be."""
    if isinstance(target, (staticmethod, classmethod)):
        target = target.__func__
    if isinstance(target, types.MethodType):
        target = target.__func__
    if isinstance(target, property):
        raise TypeError("cannot replace a property: attribute access does not go through "
                        "call sites; replace the methods that use it, or its getter's "
                        "callers")
    if isinstance(target, (types.MethodDescriptorType, types.WrapperDescriptorType,
                           types.ClassMethodDescriptorType, types.MethodWrapperType)):
        raise TypeError(f"cannot replace {target!r}: methods of builtin types are called "
                        "natively at method call sites, out of the patch's reach")
    if isinstance(target, types.BuiltinMethodType):
        owner = getattr(target, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            raise TypeError(f"cannot replace {target!r}: a method of a builtin object is "
                            "called natively, out of the patch's reach")
    if not callable(target):
        raise TypeError(f"cannot replace {target!r}: it is not callable (use "
                        "Patch.setattr for attributes)")
    try:
        hash(target)
    except TypeError:
        raise TypeError(f"cannot replace {target!r}: it is not hashable") from None
    return target


class _ModuleRef:
    """A module, pickled by name."""

    def __init__(self, name: str) -> None:
        self.name = name


def _remade(replacements: list[tuple[Any, Any]],
            attributes: list[tuple[Any, str, Any]]) -> Patch:
    """A patch equal to the one pickled (``Patch.__reduce__``)."""
    patch = Patch()
    for target, replacement in replacements:
        patch.replace(target, replacement)
    for owner, name, value in attributes:
        if isinstance(owner, _ModuleRef):
            owner = importlib.import_module(owner.name)
        patch.setattr(owner, name, value)
    return patch


class Patch(splice.Plugin):
    """Contextual replacement of functions, methods, classes and attributes (see the module
    docstring for exactly what is replaced).

    ``Patch({target: replacement, ...})`` is ``Patch()`` followed by ``replace`` for each
    item. Methods return the patch, so calls chain::

        Patch().replace(fetch, fake_fetch).setattr(config, "URL", "http://test").run(main)
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Patch:
        # Each Patch gets a class of its own: the intercepted targets are a property of the
        # plugin's class (``splice.intercept``), and every Patch has its own.
        if not cls.__dict__.get("_splice_own_class", False):
            cls = type(cls.__name__, (cls,), {"__module__": cls.__module__,
                                               "__qualname__": cls.__qualname__,
                                               "__doc__": cls.__doc__,
                                               "_splice_own_class": True})
        return super().__new__(cls)

    def cache_token(self) -> None:
        """None: a Patch owns its code. Each Patch is a class of its own (its intercepts),
        and what it replaces can change between runs (``replace``, ``restore``)."""
        return None

    def __init__(self, replacements: Mapping[Any, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._serial = 0
        self._replacements: dict[Any, Any] = {}
        self._targets: dict[Any, Any] = {}  # normalized key -> the target as given
        self._boxes: dict[tuple[int, str], tuple[Any, str, _Box]] = {}
        self._attr_names: dict[str, list[tuple[Any, _Box]]] = {}
        self._module_globals: dict[int, dict[str, _Box]] = {}  # id(module dict) -> boxes
        for target, replacement in (replacements or {}).items():
            self.replace(target, replacement)

    def __repr__(self) -> str:
        names = [getattr(t, "__qualname__", repr(t)) for t in self._targets.values()]
        names += [f"{getattr(o, '__name__', type(o).__name__)}.{n}"
                  for o, n, _ in self._boxes.values()]
        return f"<Patch {', '.join(names) or '(nothing)'}>"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (to run work in another process under an equal patch) as what it
        replaces: its targets and replacements, its patched attributes (a module owner by
        its name). They must be picklable: functions and classes by reference."""
        with self._lock:
            replacements = [(self._targets[k], r) for k, r in self._replacements.items()]
            attributes = [(_ModuleRef(o.__name__) if isinstance(o, types.ModuleType) else o,
                           n, box.value) for o, n, box in self._boxes.values()]
        return (_remade, (replacements, attributes))

    # ----------------------------------------------------------------------- configuring

    def replace(self, target: Any, replacement: Callable[..., Any]) -> Patch:
        """Under this patch, calls of ``target`` call ``replacement`` instead."""
        if not callable(replacement):
            raise TypeError(f"the replacement must be callable, not {replacement!r}")
        key = _normalize(target)
        with self._lock:
            new = key not in type(self)._splice_intercepts
            self._replacements[key] = replacement
            self._targets[key] = target
            if new:
                self._serial += 1
                name = f"_splice_patched_{self._serial}"
                setattr(self, name, self._intercepting(key))
                type(self)._splice_intercepts[key] = name
        if new:
            self._changed()
        return self

    def restore(self, target: Any) -> Patch:
        """Stop replacing ``target``: calls of it run the original again, under the patch
        (after a run, the code is compiled again on the next run, as for a new target)."""
        key = _normalize(target)
        with self._lock:
            if self._replacements.pop(key, _MISSING) is _MISSING:
                raise KeyError(f"{target!r} is not replaced by this patch")
            self._targets.pop(key, None)
            # (the intercepting method stays: a composition made before still calls it, and
            # it then runs the original)
            type(self)._splice_intercepts.pop(key, None)
        self._changed()
        return self

    def setattr(self, owner: Any, name: str, value: Any) -> Patch:
        """Under this patch, reads of ``owner.name`` see ``value`` (see the module
        docstring for which reads)."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{name!r} is not an attribute name")
        if not hasattr(owner, name):
            raise AttributeError(f"{owner!r} has no attribute {name!r} to patch")
        key = (id(owner), name)
        with self._lock:
            found = self._boxes.get(key)
            if found is not None:
                found[2].value = value
                return self
            box = _Box(value)
            self._boxes[key] = (owner, name, box)
            self._attr_names.setdefault(name, []).append((owner, box))
            if isinstance(owner, types.ModuleType):
                self._module_globals.setdefault(id(vars(owner)), {})[name] = box
        self._changed()
        return self

    @property
    def replacements(self) -> dict[Any, Any]:
        """The current replacements (``{target: replacement}``, targets as given)."""
        with self._lock:
            return {self._targets[k]: r for k, r in self._replacements.items()}

    def call_original(self, target: Any, /, *args: Any, **kwargs: Any) -> Any:
        """From inside a replacement: call the original ``target`` (under the patch)."""
        return self.recurse_call(_normalize(target), *args, **kwargs)

    # ---------------------------------------------------------------------- the plugin

    def _intercepting(self, key: Any) -> Callable[..., Any]:
        replacements = self._replacements

        def patched(*args: Any, **kwargs: Any) -> Any:
            replacement = replacements.get(key, _MISSING)
            if replacement is _MISSING:  # restored (in a composition made before)
                return self.recurse_call(key, *args, **kwargs)
            return replacement(*args, **kwargs)
        return patched

    def _changed(self) -> None:
        """A new target or attribute: code compiled before it does not know it, so the
        next run (alone or composed) compiles again (``Plugin.invalidate``)."""
        self.invalidate()

    def lowered(self, ir: FunctionIR) -> FunctionIR | None:
        """Rewrite reads of patched attributes (``setattr``) to read the patched value."""
        if ir.function is None or not self._attr_names:
            return None
        globals_boxes = self._module_globals.get(id(ir.function.__globals__), {})
        code = ir.function.__code__
        free = set(code.co_freevars) | set(code.co_cellvars)
        changed = _rewrite_scope(ir, globals_boxes, free, self._attr_names)
        return ir if changed else None


# --------------------------------------------------------------------- attribute rewrite


def _rewrite_scope(ir: FunctionIR, globals_boxes: dict[str, _Box], enclosing: set[str],
                   attrs: dict[str, list[tuple[Any, _Box]]]) -> bool:
    """Rewrite the reads of patched globals and attributes in ``ir`` and the comprehensions
    it runs; ``enclosing``: names that are not globals here (locals of enclosing scopes)."""
    if ir.kind == "class":
        return False
    hidden = enclosing | local_names(ir) | set(ir.nonlocals)
    declared_global = set(ir.globals)
    boxes = {name: box for name, box in globals_boxes.items()
             if name not in hidden or name in declared_global}
    return _rewrite_block(ir, ir.body, boxes, hidden, attrs)


def _rewrite_block(ir: FunctionIR, block: list[Stmt], boxes: dict[str, _Box],
                   hidden: set[str], attrs: dict[str, list[tuple[Any, _Box]]]) -> bool:
    changed = False
    index = 0
    while index < len(block):
        stmt = block[index]
        before: list[Stmt] = []

        def swap(operand: Operand, before: list[Stmt] = before) -> Operand:
            if isinstance(operand, Var) and operand.name in boxes:
                temp = ir.new_temp()
                before.append(Assign((temp,), GetAttr(Const(boxes[operand.name],
                                                            operand.pos), "value"),
                                     operand.pos))
                return temp
            return operand

        for region in stmt.regions():
            changed |= _rewrite_block(ir, region.body, boxes, hidden, attrs)
            region_before: list[Stmt] = []
            region.value = swap(region.value, region_before)
            region.body.extend(region_before)
            changed |= bool(region_before)
        if isinstance(stmt, Assign):
            op = stmt.op
            if isinstance(op, Load):
                if op.var.name in boxes:
                    stmt.op = GetAttr(Const(boxes[op.var.name], op.var.pos), "value")
                    changed = True
            elif isinstance(op, MakeComprehension):
                op.map_operands(swap)
                inner_globals = {n: b for n, b in boxes.items()}
                changed |= _rewrite_scope(op.fn, inner_globals, hidden, attrs)
            else:
                op.map_operands(swap)
                if isinstance(op, GetAttr) and op.name in attrs:
                    stmt.op = _guarded_getattr(ir, op, attrs[op.name], before, stmt.pos)
                    changed = True
        else:
            for field in ("value", "test", "iterator", "manager", "subject", "exc", "cause"):
                current = getattr(stmt, field, None)
                if isinstance(current, Var):
                    setattr(stmt, field, swap(current))
        for inner in stmt.blocks():
            changed |= _rewrite_block(ir, inner, boxes, hidden, attrs)
        if before:
            block[index:index] = before
            index += len(before)
            changed = True
        index += 1
    return changed


def _guarded_getattr(ir: FunctionIR, op: GetAttr, owners: list[tuple[Any, _Box]],
                     before: list[Stmt], pos: Pos) -> Any:
    """``box.value if obj is owner else obj.name`` (nested for several owners)."""
    result: Any = GetAttr(op.obj, op.name)
    for owner, box in owners:
        test = ir.new_temp()
        before.append(Assign((test,), Compare("is_", op.obj, Const(owner, pos)), pos))
        patched, fallback = ir.new_temp(), ir.new_temp()
        read = Assign((patched,), GetAttr(Const(box, pos), "value"), pos)
        native = Assign((fallback,), result, pos)
        result = IfExp(test, Region([read], patched), Region([native], fallback))
    return result
