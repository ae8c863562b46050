"""A deliberately wrong plugin, to check that the CPython test harness's context modes see a
divergence: under it ``textwrap.dedent`` (which test_textwrap's test methods call) returns
its result with a character appended."""

from __future__ import annotations

import textwrap

import splice


class DedentPlugin(splice.Plugin):
    @splice.intercept(textwrap.dedent)
    def dedent(self, text: str) -> str:
        result: str = self.recurse_call(textwrap.dedent, text)
        return result + "#"
