"""Which recorded model turn an update leaves answering text it never read.

`pytest --harness-update` keeps the recorded model turns and rebuilds what code and the
developer wrote from the source as it is now. When the rebuilt text changed *before* a
model turn (an observation now says `shelf B3`), that turn was written after reading the
old text (`shelf B2`) and may contradict the new one; the update passes all the same,
because nothing checks what a model would say now. `stale_turn` finds the first such
turn, so the update can say so and point to `--harness-record`, which asks the model again.

    stale_turn(saved.transcript, fresh.transcript)
    -> Stale(call=2, author="code", old="Observation: shelf B2", new="Observation: shelf B3")

What this module leaves out: deciding whether the kept turn is wrong (only a model can
answer the new text), and any change after the last model turn (nothing followed it).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from harness.escape import one_line
from harness.transcript import Author, Span, Transcript

SHOWN = 60  # characters of a changed line shown in the warning


@dataclass(frozen=True)
class Stale:
    call: int  # the first model call (from 1) whose recorded turn followed text that changed
    author: str  # who wrote the text that changed: "code" or "developer"
    old: str  # its first differing line, as recorded
    new: str  # and as the source writes it now


def stale_turn(saved: Transcript, fresh: Transcript) -> Stale | None:
    """The first recorded model turn that followed text the fresh run changed (None: none did)."""
    recorded, now = saved.spans, fresh.spans
    for i, (old, new) in enumerate(zip_longest(recorded, now)):
        if old == new:
            continue
        if new is None or new.author is Author.MODEL or (old is not None and old.author is Author.MODEL):
            return None  # the model's own turn differs, or the fresh run ended: nothing followed a change
        if not any(s.author is Author.MODEL for s in now[i + 1 :]):
            return None
        call = 1 + sum(1 for s in now[:i] if s.author is Author.MODEL)  # (one span per model call)
        before, after = _first_line_that_differs(old, new)
        return Stale(call, new.author.value, before, after)
    return None


def _first_line_that_differs(old: Span | None, new: Span) -> tuple[str, str]:
    a = old.text.split("\n") if old is not None else []
    b = new.text.split("\n")
    for x, y in zip_longest(a, b, fillvalue=""):
        if x != y:
            return _short(x), _short(y)
    return "", ""


def _short(line: str) -> str:
    return one_line(line if len(line) <= SHOWN else line[: SHOWN - 1] + "…")
