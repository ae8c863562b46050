"""Code pickled by value (``cloudpickle``, as Dask sends a script's functions) is named
``<dynamic-code>``: splice finds its definition in the texts its sender shipped, exactly,
or refuses it."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import cloudpickle
import pytest

import splice
from splice.errors import UnsupportedError
from splice.exec_sources import BY_VALUE_FILENAME, ExecSources
from splice.ir.source import find_source
from tests.runtime import by_value_program


@pytest.fixture
def copied() -> Iterator[Any]:
    """``by_value_program.steps`` as a worker unpickles it: rebuilt by value."""
    cloudpickle.register_pickle_by_value(by_value_program)
    try:
        yield cloudpickle.loads(cloudpickle.dumps(by_value_program.steps))
    finally:
        cloudpickle.unregister_pickle_by_value(by_value_program)


def test_code_pickled_by_value_has_lost_its_file(copied: Any) -> None:
    assert copied.__code__.co_filename == BY_VALUE_FILENAME
    assert copied is not by_value_program.steps and copied(27) == by_value_program.steps(27)


def test_its_definition_is_found_in_a_shipped_text(copied: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    sources = ExecSources()
    monkeypatch.setattr("splice.ir.source.EXEC_SOURCES", sources)
    with pytest.raises(UnsupportedError, match="source is not available"):
        find_source(copied)
    other = "def steps(n):\n    return n\n"
    sources.ship((other,))
    with pytest.raises(UnsupportedError, match="none of the 1 source text"):
        find_source(copied)
    sources.ship((inspect.getsource(by_value_program), other))
    found = find_source(copied)
    assert found.filename == BY_VALUE_FILENAME  # tracebacks name the file as natively
    assert splice.Plugin().run(copied, 27) == by_value_program.steps(27)
