"""The code cache on disk: entries written by one process, read by later ones.

Where: ``$SPLICE_CACHE_DIR``, else ``$XDG_CACHE_HOME/splice``, else ``~/.cache/splice``;
``SPLICE_CACHE=0`` turns the cache off. Under it, one folder per Python version and splice
version (``py3.11-splice0.1.0``: what an entry relied on and the IR it holds follow that
version's rules), one folder per owner (a fingerprint of the plugins' classes, their
source and their tokens), one file per function and specialization (a fingerprint of its
code object, and of its argument types and key for a code instance).

An entry file is ``MAGIC``, the SHA-256 digest of its header, the header's length, the
header (plain data in ``marshal``'s format, which reads several times faster than JSON:
what the entry is, owner, function, versions, and its data: hidden-cell template, stored
constants, a code instance's guards and types), the IR part (JSON: the IR of the stages,
read only when needed) and the code part (the code object, ``marshal``'s format of this
interpreter). The header holds the digests of the other two parts and names
the bytecode the code part was written for (``CODE_MAGIC``): a code part written by
another interpreter or corrupted is not loaded, while the header, whose digest matched,
and the IR can still be used (the code is generated again from the stored IR:
``splice.runtime.stored_code``).

What is trusted, and why. A file is read only if this user owns it and neither it nor its
folders up to the cache's root are writable by others (another user could otherwise make
this process run their code). Its digests must match (a truncated or corrupted file fails),
its header must name this owner, this function, this Python and this splice (a file copied
or renamed into place fails), and every object it names must resolve in the running program
(``splice.cache.references``: nothing is imported, nothing is unpickled). A file that fails
any check is never executed and never fatal: ``read`` says why and the caller builds the
code as if there were no entry. Writes go to a temporary file in the same folder, then
``os.replace``: readers see a whole old file or a whole new one, and processes writing the
same entry at once lose nothing.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import marshal
import os
import stat
import sys
import tempfile
import types
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice._version import __version__
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["CODE_MAGIC", "MAGIC", "DiskStore", "Entry", "Section", "cache_root",
           "code_fingerprint"]

#: the entry format (its number changes with what a header holds: entries of another are
#: ignored, saying so)
MAGIC = b"splice-code-cache-3\n"
_MAGIC_STEM = b"splice-code-cache-"
_DIGEST = 32
#: interpreter and splice: entries of others are never read (the IR and what it relied on
#: are lowered by this version's rules)
VERSION_TAG = f"py{sys.version_info[0]}.{sys.version_info[1]}-splice{__version__}"
#: the format of code objects (``marshal``'s and the bytecode's): code written under
#: another is not loaded (an instance that holds its IR is generated from it again)
CODE_MAGIC = importlib.util.MAGIC_NUMBER.hex()


def cache_root() -> Path | None:
    """The cache's root folder (None: the cache is turned off)."""
    if os.environ.get("SPLICE_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    chosen = os.environ.get("SPLICE_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "splice"


def code_fingerprint(code: types.CodeType) -> str:
    """A digest of everything a code object compiles to (its bytecode, constants, names,
    positions, file and qualified name, nested code too): equal for the same function
    compiled from the same source in any process. (``marshal`` output is not: it depends
    on reference counts.) Computed once per code object while it lives (code objects are
    immutable; kept by identity, since equal code objects may come from different files)."""
    known = _FINGERPRINTS.get(id(code))
    if known is not None and known[0]() is code:
        return known[1]
    digest = _digest_of(code)
    key = id(code)
    _FINGERPRINTS[key] = (weakref.ref(code, functools.partial(_forget_code, key)), digest)
    return digest


def _forget_code(key: int, _: weakref.ref[types.CodeType]) -> None:
    if _FINGERPRINTS is not None:  # (None: the interpreter is shutting down)
        _FINGERPRINTS.pop(key, None)


#: code object id -> (a weak reference to it, its fingerprint): a memo of a pure function
#: of immutable objects, so shared by every owner of the process; an entry goes with its code
_FINGERPRINTS: dict[int, tuple[weakref.ref[types.CodeType], str]] = {}


def _digest_of(code: types.CodeType) -> str:
    digest = hashlib.sha256()

    def add(code: types.CodeType) -> None:
        for part in (code.co_code, code.co_linetable, code.co_exceptiontable):
            digest.update(len(part).to_bytes(4, "little") + part)
        digest.update(repr((code.co_filename, code.co_qualname, code.co_name,
                            code.co_firstlineno, code.co_flags, code.co_argcount,
                            code.co_posonlyargcount, code.co_kwonlyargcount, code.co_names,
                            code.co_varnames, code.co_freevars, code.co_cellvars)).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                add(const)
            else:
                digest.update(_stable_repr(const).encode())
    add(code)
    return digest.hexdigest()


def _stable_repr(value: Any) -> str:
    """``repr`` with the members of frozensets sorted (their order follows string hashes,
    which differ from process to process)."""
    if type(value) is frozenset:
        return "frozenset({" + ", ".join(sorted(_stable_repr(v) for v in value)) + "})"
    if type(value) is tuple:
        return "(" + ", ".join(_stable_repr(v) for v in value) + ",)"
    return f"{type(value).__name__}:{value!r}"


class Section:
    """An entry's IR part: JSON read only when first asked for (most loads never need the
    IR), checked against its digest then."""

    __slots__ = ("_text", "_digest", "_data", "_names")

    def __init__(self, text: bytes | memoryview, digest: Any, names: tuple[str, ...]
                 ) -> None:
        self._text = text
        self._digest = digest
        self._data: dict[str, Any] | None = None
        self._names = names

    def get(self, name: str) -> Any:
        """The data stored under ``name`` (``ValueError`` if the part is corrupt)."""
        if self._data is None:
            if hashlib.sha256(self._text).hexdigest() != self._digest:
                raise ValueError("its IR part is corrupt (its digest does not match)")
            data = json.loads(bytes(self._text).decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("its IR part is malformed")
            self._data = data
        return self._data[name]

    def names(self) -> tuple[str, ...]:
        """What the part holds, as its header lists it."""
        return self._names


@dataclass
class Entry:
    """What one cache file holds: its header (JSON data), its IR part (None if it has
    none) and its code object (None where the code part cannot be used here, and why:
    ``unusable_code``)."""

    header: dict[str, Any]
    code: types.CodeType | None
    unusable_code: str | None = None
    ir: Section | None = None


def _code_part(header: dict[str, Any], payload: bytes | memoryview
               ) -> tuple[types.CodeType | None, str | None]:
    """The code object of an entry whose header is sound, or None and why it cannot be
    used (its own digest, in the header, must match: the header's digest does not cover
    it)."""
    if header.get("code_magic") != CODE_MAGIC:
        return None, (f"written by an interpreter of another bytecode "
                      f"({header.get('code_magic')!r}, not {CODE_MAGIC!r})")
    if hashlib.sha256(payload).hexdigest() != header.get("code_digest"):
        return None, "its code part is corrupt or truncated (its digest does not match)"
    try:
        code = marshal.loads(payload)
    except (ValueError, EOFError, TypeError) as exc:
        return None, f"its code part is unreadable ({exc})"
    if not isinstance(code, types.CodeType):
        return None, "its code part is not a code object"
    return code, None


class DiskStore:
    """The entries of one owner, in ``root/VERSION_TAG/owner``."""

    def __init__(self, root: Path, owner: str) -> None:
        self.root = root
        self.folder = root / VERSION_TAG / owner
        self._folder = str(self.folder)
        self.owner = owner
        #: what happened: entries loaded (counted by their reader, ``Owner.load``), written,
        #: ignored (with why)
        self.loaded = 0
        self.written = 0
        self.ignored: list[tuple[str, str]] = []
        self._folders_checked = False

    def path(self, function: str) -> str:
        return f"{self._folder}{os.sep}{function}.entry"

    def read(self, function: str, *, code_optional: bool = False) -> Entry | str | None:
        """The entry for ``function`` (a fingerprint), None if there is none, or why the
        file there cannot be trusted (it is then ignored). ``code_optional``: an entry
        whose header is sound but whose code part is not (corrupt, or written by an
        interpreter of another bytecode) is returned without its code, saying why."""
        path = self.path(function)
        try:
            handle = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._ignore(path, f"unreadable ({exc.strerror})")
        try:
            info = os.fstat(handle)
            data = os.read(handle, info.st_size + 1)
        except OSError as exc:
            return self._ignore(path, f"unreadable ({exc.strerror})")
        finally:
            os.close(handle)
        why = self._untrusted(path, info)
        if why is not None:
            return self._ignore(path, why)
        start = len(MAGIC) + _DIGEST + 4
        if not data.startswith(MAGIC) or len(data) < start:
            if data.startswith(_MAGIC_STEM) and not data.startswith(MAGIC) and \
                    len(data) >= len(MAGIC):
                return self._ignore(path, "written in another format of splice's cache "
                                          f"({data[:len(MAGIC)].strip()!r}, not "
                                          f"{MAGIC.strip()!r})")
            return self._ignore(path, "not a splice cache entry, or truncated")
        size = int.from_bytes(data[start - 4:start], "little")
        view = memoryview(data)  # (slices of it copy nothing)
        text = view[start:start + size]
        if len(text) != size or \
                hashlib.sha256(text).digest() != data[len(MAGIC):len(MAGIC) + _DIGEST]:
            return self._ignore(path, "corrupt or truncated (its digest does not match)")
        try:
            header = marshal.loads(text)
        except (ValueError, EOFError, TypeError) as exc:
            return self._ignore(path, f"unreadable ({exc})")
        if type(header) is not dict:
            return self._ignore(path, "malformed")
        expected = {"version": VERSION_TAG, "owner": self.owner, "function": function}
        for name, value in expected.items():
            if header.get(name) != value:
                return self._ignore(path, f"written for another {name} "
                                          f"({header.get(name)!r}, not {value!r})")
        rest = view[start + size:]
        ir_size = header.get("ir_size", 0)
        if type(ir_size) is not int or not 0 <= ir_size <= len(rest):
            return self._ignore(path, "malformed (the size of its IR part)")
        section = None
        if ir_size:
            names = header.get("ir_names")
            section = Section(rest[:ir_size], header.get("ir_digest"),
                              tuple(map(str, names)) if type(names) is list else ())
        code, unusable = _code_part(header, rest[ir_size:])
        if code is None and not code_optional:
            return self._ignore(path, f"its code cannot be used ({unusable})")
        return Entry(header, code, unusable, section)

    def write(self, function: str, header: dict[str, Any], code: types.CodeType,
              ir: dict[str, Any] | None = None) -> None:
        """Store an entry (atomically; a failure to write is not an error: no entry),
        with the IR of ``ir`` (stage -> data) in a part of its own."""
        payload = marshal.dumps(code)
        ir_text = json.dumps(ir, sort_keys=True).encode("utf-8") if ir else b""
        header = {**header, "version": VERSION_TAG, "owner": self.owner,
                  "function": function, "code_magic": CODE_MAGIC,
                  "code_digest": hashlib.sha256(payload).hexdigest(),
                  "ir_size": len(ir_text), "ir_digest": hashlib.sha256(ir_text).hexdigest(),
                  "ir_names": sorted(ir or ())}
        text = marshal.dumps(header)
        data = MAGIC + hashlib.sha256(text).digest() + len(text).to_bytes(4, "little") + \
            text + ir_text + payload
        try:
            self._make_folders()
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(data)
                os.replace(temporary, self.path(function))
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            return
        self.written += 1

    def _make_folders(self) -> None:
        for folder in (self.root, self.root / VERSION_TAG, self.folder):
            folder.mkdir(mode=0o700, exist_ok=True)

    def _untrusted(self, path: str, info: os.stat_result) -> str | None:
        """Why a file must not be trusted: another user's, or writable by others (the file
        or a folder from it up to the cache's root)."""
        uid = os.getuid() if hasattr(os, "getuid") else None
        checks: list[tuple[Path | str, os.stat_result]] = [(path, info)]
        if not self._folders_checked:
            for folder in (self.folder, self.root / VERSION_TAG, self.root):
                try:
                    checks.append((folder, os.stat(folder)))
                except OSError:
                    return f"its folder {folder} cannot be checked"
        for where, found in checks:
            if uid is not None and found.st_uid != uid:
                return f"{where} belongs to another user"
            if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return f"{where} is writable by other users"
        # (the folders once per store: another user cannot change them after this check
        # without being their owner, which the check excludes)
        self._folders_checked = True
        return None

    def ignore(self, function: str, why: str) -> str:
        """Record that the entry of ``function`` was not used, and why (a reader found
        more than ``read`` checks: objects it names that the program does not have)."""
        return self._ignore(self.path(function), why)

    def _ignore(self, path: str, why: str) -> str:
        self.ignored.append((str(path), why))
        return why
