"""Owners: the compiled code of every plugin stack with the same configuration.

A context (``splice.runtime.context``) runs one stack of plugin objects; what it builds is
valid for any stack of plugins of the same classes whose compile-time hooks behave the same.
A plugin says so with ``Plugin.cache_token()``: a hashable value naming everything its
compile-time hooks read (``None``, the default: nothing is shared, the plugin object owns
its code). The contexts of stacks with equal ``OwnerKey``s share one ``Owner``, which keeps
the code they built, so a new ``Tracer()`` with the same options compiles nothing that an
earlier one compiled.

What an owner keeps is code *not bound to a context*: a ``SharedCode`` is a code object and a
template of its hidden cells (``splice.runtime.sharing`` makes it from a context's
``CompiledCode`` and binds it to another context: the table, call sites and plugin state
are the other context's). Code whose hidden values cannot all be told apart as shared or
belonging to the building context is not shared (``SharedCode.template`` is ``None``): each
context builds its own, as without a token.

Soundness: an owner is found by the plugins' classes, their tokens and the context's
compile switches derived from the plugin objects (``implicit_calls``, ``strict``, the
compile parameters), so two contexts share code only where their builds would take the same
decisions, given that each token names what its plugin's compile-time hooks read (the
plugin's promise, checked for the shipped plugins by tests). Owners live for the process:
a fresh plugin per run is the case they exist for. Entries are keyed weakly by code object,
as in every ``CodeCache``, so they go with the functions.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import json
import os
import sys
import threading
import types
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

from splice.cache.code_cache import CodeCache
from splice.cache.disk import DiskStore, Entry, cache_root, code_fingerprint
from splice.cache.references import (
    NotStorable,
    decode,
    encode,
    join_constants,
    split_constants,
)
from splice.cache.shared_code import SharedCode, StoredIR
from splice.cache.shared_instances import SharedInstance, SharedInstances
from splice.errors import UnsupportedError
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Cure", "Owner", "OwnerKey", "SharedCode", "owner_for"]

#: (the plugins' classes with their tokens, outermost first; the context's compile switches)
OwnerKey = tuple[tuple[tuple[type, Hashable], ...], Hashable]


@dataclass(frozen=True, slots=True)
class Cure:
    """An entry whose code object cannot be used here (``why``) and the routed IR it was
    generated from, which the context generates the code again from."""

    ir: StoredIR
    why: str


class Owner:
    """The code shared by the contexts of one ``OwnerKey``, in the process and, where the
    owner can be named across processes, on disk (``splice.cache.disk``)."""

    def __init__(self, key: OwnerKey) -> None:
        self.key = key
        #: code object -> its transformed code (or why it cannot be transformed)
        self.code = CodeCache[SharedCode | UnsupportedError]()
        #: ``__init__`` code object -> its code compiled as a constructor
        self.constructors = CodeCache[SharedCode | UnsupportedError]()
        #: code instances of typed contexts (``splice.cache.shared_instances``)
        self.instances = SharedInstances()
        self._disk: DiskStore | None | bool = False  # False: not looked at yet
        #: the edges read from entries (``splice.cache.stored_instances.ReadMemo``): the
        #: entries of one program repeat the same few; each is checked when its instance
        #: binds
        self._edges_read: Any = None
        #: functions compiled for this owner in this process (not loaded from disk)
        self.compiles = 0

    def __repr__(self) -> str:
        names = ", ".join(cls.__name__ for cls, _ in self.key[0])
        return f"<splice owner {names}: {len(self.code)} functions>"

    @property
    def disk(self) -> DiskStore | None:
        """This owner's entries on disk (None: the cache is off, or the owner cannot be
        named across processes: a plugin class without source, a token that cannot be
        written)."""
        if self._disk is False:
            root = cache_root()
            name = None if root is None else owner_fingerprint(self.key)
            self._disk = None if root is None or name is None else DiskStore(root, name)
        return self._disk  # type: ignore[return-value]

    def load(self, fn: types.FunctionType, kind: str) -> SharedCode | Cure | str | None:
        """``fn``'s code of ``kind`` (``code`` or ``constructor``) from disk, None if there
        is none, or why the entry there was ignored; a ``Cure`` if its code cannot be used
        here but the IR it was generated from can (``splice.runtime.stored_code``)."""
        disk = self.disk
        if disk is None:
            return None
        name = _entry_name(fn, kind)
        found = disk.read(name, code_optional=True)
        if not isinstance(found, Entry):
            return found
        ir = _stored(found, "routed")
        try:
            shared = _decode_code(found, fn.__code__)
        except _UNUSABLE as exc:
            why = found.unusable_code or f"its objects cannot be found in this program ({exc})"
            if ir is None:
                return disk.ignore(name, why)
            disk.loaded += 1
            return Cure(ir, why)
        disk.loaded += 1
        return shared if ir is None else replace(shared, ir=ir)

    def save(self, fn: types.FunctionType, kind: str, shared: SharedCode) -> None:
        """Write ``shared`` (built for ``fn``) to disk, if it can be written: without any
        hook or inference (what was built is written as it is)."""
        disk = self.disk
        if disk is None or shared.template is None:
            return
        try:
            code, header = _encode_code(shared, fn.__code__)
        except NotStorable:
            return
        ir = None
        if shared.ir is not None and shared.ir.kept is None:
            try:
                ir = {"routed": shared.ir.read()}
            except (ValueError, KeyError):
                ir = None
        disk.write(_entry_name(fn, kind), header, code, ir)

    def load_instance(self, fn: types.FunctionType, argtypes: tuple[Any, ...],
                      key: Hashable) -> SharedInstance | str | None:
        """``fn``'s shared code instance for ``argtypes`` and ``key`` from disk, checked
        against the running program (``splice.cache.stored_instances``): None if there is
        none, or why the entry there was ignored."""
        disk = self.disk
        if disk is None:
            return None
        own = fn.__code__
        try:
            name = _instance_entry_name(fn, argtypes, key)
        except NotStorable:
            return None
        found = disk.read(name, code_optional=True)
        if not isinstance(found, Entry):
            return found
        code: SharedCode | None = None
        unusable = found.unusable_code
        if unusable is None:
            try:
                code = _decode_code(found, own)
            except _UNUSABLE as exc:
                unusable = f"its objects cannot be found in this program ({exc})"
        from splice.cache.stored_instances import ReadMemo, decode_instance

        if self._edges_read is None:
            self._edges_read = ReadMemo()
        try:
            shared = decode_instance(found.header["instance"], code, own,
                                     {stage: _stored(found, stage) for stage in
                                      (found.ir.names() if found.ir is not None else ())},
                                     self._edges_read)
        except _UNUSABLE as exc:
            return disk.ignore(name, f"what it relied on does not hold in this program "
                                     f"({exc})")
        if code is None:
            if "routed" not in shared.stored_ir:
                return disk.ignore(name, f"its code cannot be used ({unusable}) and it "
                                         "holds no IR to make it again from")
            shared.cure = unusable  # (made again from the stored IR when bound)
        disk.loaded += 1
        return shared

    def save_instance(self, fn: types.FunctionType, shared: SharedInstance) -> None:
        """Write ``shared`` (an instance built for ``fn``) to disk if another process can
        check everything it relied on; no hook or inference runs."""
        disk = self.disk
        if disk is None or shared.code is None or shared.code.template is None:
            return
        from splice.cache.stored_instances import encode_instance

        own = fn.__code__
        try:
            code, header = _encode_code(shared.code, own)
            header["instance"] = encode_instance(shared, own)
            ir = {stage: stored.read() for stage, stored in shared.stored_ir.items()
                  if stored.kept is None}
            name = _instance_entry_name(fn, shared.argtypes, shared.key)
        except (NotStorable, ValueError, KeyError):
            return
        disk.write(name, header, code, ir)


def _stored(found: Entry, stage: str) -> StoredIR | None:
    """The IR of ``stage`` an entry holds (read when first needed), or None."""
    if found.ir is None or stage not in found.ir.names():
        return None
    return StoredIR(stage, None, found.ir)


#: what makes an entry's data unusable in this process (malformed, or naming objects the
#: program does not have)
_UNUSABLE = (NotStorable, KeyError, TypeError, IndexError, ValueError, AttributeError)


def _encode_code(shared: SharedCode, own: types.CodeType
                 ) -> tuple[types.CodeType, dict[str, Any]]:
    """``shared``'s code object with its constants stored apart, and the header part
    naming its constants and hidden cells (``NotStorable`` if one cannot be written)."""
    assert shared.template is not None
    code, constants = split_constants(shared.code, own)
    template = {name: ["value", _encode_value(entry[1], own)] if entry[0] == "value"
                else list(entry) for name, entry in shared.template.items()}
    header = {"freevars": list(own.co_freevars), "constants": constants,
              "template": template, "qualname": own.co_qualname,
              "filename": own.co_filename, "line": own.co_firstlineno}
    return code, header


def _decode_code(found: Entry, own: types.CodeType) -> SharedCode:
    header = found.header
    if found.code is None:
        raise NotStorable(found.unusable_code or "no code")
    if tuple(header["freevars"]) != own.co_freevars:
        raise NotStorable("written for other free variables")
    code = join_constants(found.code, header["constants"], own)
    template: dict[str, tuple[Any, ...]] = {}
    for cell, entry in header["template"].items():
        if entry[0] == "value":
            template[cell] = ("value", _decode_value(entry[1], own))
        else:
            template[cell] = _untuple(entry)
    return SharedCode(code, own.co_freevars, template)


def _encode_value(value: Any, own: types.CodeType) -> Any:
    """A hidden cell's value shared by every context: what ``encode`` writes, or a method
    of an abstract value (a use-site check's ``accepts``) as the value and the name."""
    try:
        return encode(value, own)
    except NotStorable:
        holder = getattr(value, "__self__", None)
        if not isinstance(value, types.MethodType) or not _is_abstract(holder):
            raise
        assert holder is not None
        from splice.cache.stored_values import ObjectTable, encode_abstract

        return ["abstract method", encode_abstract(holder, ObjectTable.for_disk(own)),
                value.__name__]


def _decode_value(data: Any, own: types.CodeType) -> Any:
    if type(data) is list and data[:1] == ["abstract method"]:
        from splice.cache.stored_values import ObjectTable, decode_abstract

        holder = decode_abstract(data[1], ObjectTable.for_disk(own))
        method = getattr(holder, str(data[2]))
        if not isinstance(method, types.MethodType):
            raise NotStorable(f"{data[2]!r} is not a method of {holder}")
        return method
    return decode(data, own)


def _is_abstract(value: Any) -> bool:
    from splice.infer.lattice import Abstract

    return isinstance(value, Abstract)


def _entry_name(fn: types.FunctionType, kind: str) -> str:
    """The function's code and module (a hook may read either: ``Tracer`` records the
    module), and what was built of it."""
    module = fn.__module__ if isinstance(fn.__module__, str) else ""
    tag = hashlib.sha256(module.encode()).hexdigest()[:8]
    return f"{code_fingerprint(fn.__code__)}-{tag}-{kind}"


def _instance_entry_name(fn: types.FunctionType, argtypes: tuple[Any, ...],
                         key: Hashable) -> str:
    """The entry of ``fn``'s instance for ``argtypes`` and ``key`` (``NotStorable`` if
    they cannot be written)."""
    from splice.cache.stored_values import ObjectTable, encode_abstract

    objects = ObjectTable.for_disk(fn.__code__)
    spec = _SPEC_TEXT([[encode_abstract(t, objects) for t in argtypes], encode(key)])
    return f"{_entry_name(fn, 'instance')}-{hashlib.sha256(spec.encode()).hexdigest()[:16]}"


#: ``json.dumps(data, sort_keys=True)``, without making an encoder per call
_SPEC_TEXT = json.JSONEncoder(sort_keys=True).encode


def _untuple(entry: list[Any]) -> tuple[Any, ...]:
    """A template entry read from JSON (lists) as ``splice.runtime.sharing`` made it."""
    return tuple(tuple(part) if isinstance(part, list) else part for part in entry)


def owner_fingerprint(key: OwnerKey) -> str | None:
    """A name for ``key`` that another process computes alike (None: it has none): the
    plugins' classes with the source files they are defined in (every class of their MRO
    but ``object``), their tokens, the context's switches, and splice's own source."""
    classes, switches = key
    described: list[Any] = [_splice_source()]
    try:
        for cls, token in classes:
            files = []
            for klass in cls.__mro__[:-1]:
                source = _source_file(klass)
                if source is None or not os.path.exists(source):
                    return None
                # (a class of splice's own is named by splice's source above)
                files.append("splice" if source.startswith(_PACKAGE) else
                             _file_digest(source))
            described.append([cls.__module__, cls.__qualname__, files, encode(token)])
    except (NotStorable, TypeError, OSError):
        return None
    assert isinstance(switches, tuple)
    described.append([repr(s) if isinstance(s, (bool, int, str)) or s is None
                      else sorted(map(repr, s)) if isinstance(s, frozenset) else repr(s)
                      for s in switches])
    text = json.dumps(described, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _source_file(cls: type) -> str | None:
    """The source file of the module defining ``cls`` (``inspect.getsourcefile``'s answer
    for a class, without loading ``inspect``)."""
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if not isinstance(filename, str):
        return None
    if filename.endswith((".pyc", ".pyo")):
        filename = filename[:-1]
    return filename if filename.endswith(".py") else None


@functools.cache
def _file_digest(path: str) -> str:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


#: splice's package folder, with a separator (what its own classes' files start with)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: the files whose code this interpreter runs: sources, and the extension modules it loads
#: (C sources and other interpreters' builds change nothing that runs here)
_RUN_HERE = (".py", *importlib.machinery.EXTENSION_SUFFIXES)


@functools.cache
def _splice_source() -> str:
    """splice's own files (names, sizes, modification times): code built by an edited
    splice is never read by another (the version alone would not say)."""
    found: list[str] = []
    folders = [_PACKAGE]
    suffixes = _RUN_HERE
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(suffixes):
                    info = entry.stat()
                    found.append(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}")
                elif "." not in name and name != "__pycache__" and \
                        entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    return hashlib.sha256("\n".join(sorted(found)).encode()).hexdigest()


class _Registry:
    """Every owner of the process, by key."""

    def __init__(self) -> None:
        self._owners: dict[OwnerKey, Owner] = {}
        self._lock = threading.Lock()

    def get(self, key: OwnerKey) -> Owner:
        owner = self._owners.get(key)
        if owner is None:
            with self._lock:
                owner = self._owners.setdefault(key, Owner(key))
        return owner


_registry = _Registry()


def _forget_owners_in_child() -> None:
    """In a forked child: owners of its own (an inherited owner's locks may be held by a
    thread the child does not have; splice/forks.py)."""
    global _registry
    _registry = _Registry()


os.register_at_fork(after_in_child=_forget_owners_in_child)


def owner_for(key: OwnerKey) -> Owner:
    """The owner of ``key`` (made on first use; kept for the process)."""
    return _registry.get(key)
