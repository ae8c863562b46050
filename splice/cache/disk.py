"""The code cache on disk: entries written by one process, read by later ones.

Where: ``$SPLICE_CACHE_DIR``, else ``$XDG_CACHE_HOME/splice``, else ``~/.cache/splice``;
``SPLICE_CACHE=0`` turns the cache off. Under it, one folder per interpreter and splice
version (``py3.11-<bytecode magic>-splice0.1.0``: code objects are written with
``marshal``, whose format is the interpreter's), one folder per owner (a fingerprint of the
plugins' classes, their source and their tokens), one file per function (a fingerprint of
its code object).

An entry file is ``MAGIC``, the SHA-256 digest of the rest, and the rest: the length of a
JSON header, the header (what the entry is: owner, function, versions; and its data:
hidden-cell template, stored constants) and the ``marshal`` payload (the code object).

What is trusted, and why. A file is read only if this user owns it and neither it nor its
folders up to the cache's root are writable by others (another user could otherwise make
this process run their code). Its digest must match (a truncated or corrupted file fails),
its header must name this owner, this function, this interpreter and this splice (a file
copied or renamed into place fails), and every object it names must resolve in the running
program (``splice.cache.references``: nothing is imported, nothing is unpickled). A file
that fails any check is never executed and never fatal: ``read`` says why and the caller
builds the code as if there were no entry. Writes go to a temporary file in the same
folder, then ``os.replace``: readers see a whole old file or a whole new one, and processes
writing the same entry at once lose nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import marshal
import os
import stat
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice._version import __version__
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["MAGIC", "DiskStore", "Entry", "cache_root", "code_fingerprint"]

MAGIC = b"splice-code-cache-1\n"
_DIGEST = 32
#: interpreter and splice: entries of others are never read (marshal's format, bytecode)
VERSION_TAG = (f"py{sys.version_info[0]}.{sys.version_info[1]}-"
               f"{importlib.util.MAGIC_NUMBER.hex()}-splice{__version__}")


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
    on reference counts.)"""
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


@dataclass
class Entry:
    """What one cache file holds: its header (JSON data) and its code object."""

    header: dict[str, Any]
    code: types.CodeType


class DiskStore:
    """The entries of one owner, in ``root/VERSION_TAG/owner``."""

    def __init__(self, root: Path, owner: str) -> None:
        self.root = root
        self.folder = root / VERSION_TAG / owner
        self.owner = owner
        #: what happened: entries loaded (counted by their reader, ``Owner.load``), written,
        #: ignored (with why)
        self.loaded = 0
        self.written = 0
        self.ignored: list[tuple[str, str]] = []
        self._folders_checked = False

    def path(self, function: str) -> Path:
        return self.folder / f"{function}.entry"

    def read(self, function: str) -> Entry | str | None:
        """The entry for ``function`` (a fingerprint), None if there is none, or why the
        file there cannot be trusted (it is then ignored)."""
        path = self.path(function)
        try:
            with open(path, "rb") as file:
                info = os.fstat(file.fileno())
                data = file.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._ignore(path, f"unreadable ({exc.strerror})")
        why = self._untrusted(path, info)
        if why is not None:
            return self._ignore(path, why)
        if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _DIGEST + 4:
            return self._ignore(path, "not a splice cache entry, or truncated")
        body = data[len(MAGIC) + _DIGEST:]
        if hashlib.sha256(body).digest() != data[len(MAGIC):len(MAGIC) + _DIGEST]:
            return self._ignore(path, "corrupt or truncated (its digest does not match)")
        try:
            size = int.from_bytes(body[:4], "little")
            header = json.loads(body[4:4 + size].decode("utf-8"))
            code = marshal.loads(body[4 + size:])
        except (ValueError, EOFError, TypeError, UnicodeDecodeError) as exc:
            return self._ignore(path, f"unreadable ({exc})")
        if not isinstance(header, dict) or not isinstance(code, types.CodeType):
            return self._ignore(path, "malformed")
        expected = {"version": VERSION_TAG, "owner": self.owner, "function": function}
        for name, value in expected.items():
            if header.get(name) != value:
                return self._ignore(path, f"written for another {name} "
                                          f"({header.get(name)!r}, not {value!r})")
        return Entry(header, code)

    def write(self, function: str, header: dict[str, Any], code: types.CodeType) -> None:
        """Store an entry (atomically; a failure to write is not an error: no entry)."""
        header = {**header, "version": VERSION_TAG, "owner": self.owner,
                  "function": function}
        text = json.dumps(header, sort_keys=True).encode("utf-8")
        body = len(text).to_bytes(4, "little") + text + marshal.dumps(code)
        data = MAGIC + hashlib.sha256(body).digest() + body
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

    def _untrusted(self, path: Path, info: os.stat_result) -> str | None:
        """Why a file must not be trusted: another user's, or writable by others (the file
        or a folder from it up to the cache's root)."""
        uid = os.getuid() if hasattr(os, "getuid") else None
        checks: list[tuple[Path, os.stat_result]] = [(path, info)]
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

    def _ignore(self, path: Path, why: str) -> str:
        self.ignored.append((str(path), why))
        return why
