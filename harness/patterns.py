"""Patterns compiled when first used, so that a command loads no pattern engine it does not need.

    _STEP = lazy(r"[1-9][0-9]{0,8}")
    _STEP.fullmatch("12")            # compiled by `regex` here, the first time it is asked
    DefaultDialect._action.quick     # the same pattern compiled by the standard library's re

`regex` (the engine with timeouts, which every pattern over untrusted text uses) costs
about 55 million machine instructions to import and a million or more per pattern
compiled: at module level, the twenty patterns of a run's modules were a third of what
`harness run nimbus` spent starting beyond typer, though a scripted run of short lines
uses none of them (its dialect reads those lines with the re twin, `quick`). A `Lazy`
imports `regex` and compiles on the first use of any of its attributes, and from then on
costs what the compiled pattern's own attributes cost: each is kept on the instance.

Flags are re's (`re.MULTILINE`); regex reads those allowed here as the same numbers.
What it leaves out: bytes patterns (harness.files uses re for its one).
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

# re's flags that regex reads as the same numbers (re.ASCII is 256, regex.ASCII 128: left out).
_SAME = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.UNICODE | re.VERBOSE
# What a twin may carry: patterns read alike by re and regex with no more than these.
_TWIN = re.MULTILINE | re.UNICODE


class Lazy:
    """A regex pattern, compiled the first time one of its attributes (match, sub, groups, ...)
    is read. `pattern` and `flags` are known without compiling."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        if flags & ~_SAME:
            raise ValueError(f"{pattern!r}: flags {flags:#x}: only re's IGNORECASE, MULTILINE, DOTALL, UNICODE and VERBOSE read the same in regex")
        self.pattern = pattern
        self.flags = int(flags)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self.flags:#x})"

    def __getattr__(self, name: str) -> Any:  # only for an attribute not yet kept: once per name
        if name.startswith("__"):  # copy, pickle and the like ask for these: not the pattern's
            raise AttributeError(name)
        got = getattr(self._compiled, name)
        setattr(self, name, got)  # (a bound method: the next call finds it at once)
        return got

    @cached_property
    def _compiled(self) -> Any:
        import regex  # here: see the module docstring

        return regex.compile(self.pattern, self.flags)

    @cached_property
    def quick(self) -> re.Pattern[str]:
        """The same pattern compiled by the standard library's re, which matches a short text
        in about a third of regex's instructions but has no timeout: for text too short to need
        one. Only for a pattern of plain classes, bounded repeats and anchors, which re and
        regex read alike (tests/test_dialects.py checks the dialects' patterns)."""
        if self.flags & ~_TWIN:
            raise TypeError(f"{self.pattern!r}: only MULTILINE is read the same by re and regex here")
        return re.compile(self.pattern, self.flags)


def lazy(pattern: str, flags: int = 0) -> Lazy:
    """`regex.compile(pattern, flags)`, done when the pattern is first used."""
    return Lazy(pattern, flags)
