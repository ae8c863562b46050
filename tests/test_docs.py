"""The examples of README.md and docs/*.md run, and say what they print.

Every ```python block runs (sybil), in order, one namespace per page, in a scratch folder
holding a copy of ``examples/`` and a ``data.json``; a block of ``>>>`` lines is a doctest
whose outputs must match. Every ```sh/```bash line is checked too:

* ``splice ...`` runs, and must exit with status 0;
* ``python -m splice.tools.X ...`` and ``python benchmarks/X.py ...`` are long runs: their
  ``--help`` must work and name every option the line uses (a renamed flag fails);
* creating a virtual environment and installing are what ``.ci/run`` does (its own test,
  ``tests/test_cli.py``, keeps the README's commands equal to it): not run here.

A ``print(...)`` line whose comment claims what it prints, ``# what: TEXT`` (a colon, then
the text), must print it: each part of TEXT between ``...`` elisions appears in what the
block printed, in order.

A page can skip a block that cannot run here with ``<!-- skip: next -->`` and a reason.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_INSTALLS = re.compile(r"^(python3(\.\d+)? -m venv|pip install|\. \.venv)")


#: ``print(...)  # what it prints: TEXT``: a claim of the output
_CLAIM = re.compile(r"^\s*print\(.*\)\s+#[^:#]*:\s+(?P<text>.+?)\s*$")


def check_claims(source: str, printed: str) -> None:
    """Each ``print`` line's claim in ``source`` is true of ``printed``."""
    for line in source.splitlines():
        found = _CLAIM.match(line)
        if found is None:
            continue
        at = 0
        for part in (p.strip() for p in found["text"].split("...")):
            if not part:
                continue
            where = printed.find(part, at)
            assert where >= 0, f"{line.strip()!r}: {part!r} is not in what it printed:\n" \
                f"{printed}"
            at = where + len(part)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _check_shell_line(line: str, folder: Path) -> None:
    words = shlex.split(line, comments=True)
    if not words or _INSTALLS.match(line):
        return
    if words[0] == "splice":
        done = subprocess.run([sys.executable, "-m", "splice", *words[1:]], cwd=folder,
                              env=_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        return
    if words[:3] == ["python", "-m", "splice"] and len(words) == 3:
        return
    if words[:2] == ["python", "-m"]:
        command, options = [sys.executable, "-m", words[2]], words[3:]
    elif words[0] == "python" and words[1].endswith(".py"):
        command, options = [sys.executable, str(ROOT / words[1])], words[2:]
    else:
        raise AssertionError(f"a shell line the docs test does not know how to check: {line}")
    done = subprocess.run([*command, "--help"], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"{line}: --help fails\n{done.stderr}"
    for option in options:
        if option.startswith("--"):
            assert option.split("=")[0] in done.stdout, f"{line}: no option {option}"


def _shell(folder: Path, language: str) -> CodeBlockParser:
    def evaluate(example: Example) -> None:
        for line in str(example.parsed).splitlines():
            _check_shell_line(line, folder)
    return CodeBlockParser(language=language, evaluator=evaluate)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "examples", where / "examples")
    (where / "data.json").write_text('{"b": [1, 2], "a": {"c": null}}')
    return where


def _examples(page: Path, folder: Path) -> Iterator[Example]:
    sybil = Sybil(parsers=[PythonCodeBlockParser(), _shell(folder, "sh"),
                           _shell(folder, "bash"),
                           SkipParser()])
    yield from sybil.parse(page)


def test_claims_of_output_are_checked() -> None:
    check_claims("print(x)  # the source: ... a = b(c) ... d\n", "def f():\n a = b(c)\n d\n")
    check_claims("print(x)  # numbered IR, one operation per statement\n", "")
    with pytest.raises(AssertionError, match="is not in what it printed"):
        check_claims("print(generate(ir))   # the rewritten source: ... total += f(i)\n",
                     "total = @operator_iadd(%4, f(i))")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_examples_of_the_page_run(page: Path, folder: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", [str(folder), *sys.path])
    ran = 0
    for example in _examples(page, folder):
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                example.evaluate()
            if isinstance(example.parsed, str):  # a ```python block: its claims
                check_claims(str(example.parsed), printed.getvalue())
        except Exception as exc:
            raise AssertionError(f"{page.name}, line {example.line}: {exc}") from exc
        ran += 1
    assert ran or page.name in ("versions.md",), f"{page.name} has no example"
