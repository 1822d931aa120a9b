"""Which recorded model turn an update leaves answering text it never read.

An update (`pytest --harness-update`, `harness replay --update`) keeps the recorded model
turns and rebuilds what code and the developer wrote; a kept turn that followed changed
text may contradict it, so the update says so:

    stale_turn(saved.transcript, fresh.transcript)
    -> Stale(call=2, author="code", old="Observation: shelf B2", new="Observation: shelf B3")
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from harness.escape import one_line
from harness.transcript import Author, Transcript

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
        if new is None or new.author is Author.MODEL or (old is not None and old.author is Author.MODEL) or not any(s.author is Author.MODEL for s in now[i + 1 :]):
            return None  # the fresh run ended, the model's own turn differs, or no recorded turn followed the change
        call = 1 + sum(1 for s in now[:i] if s.author is Author.MODEL)  # (one span per model call)
        lines = zip_longest(old.text.split("\n") if old is not None else [], new.text.split("\n"), fillvalue="")
        before, after = next(((x, y) for x, y in lines if x != y), ("", ""))
        return Stale(call, new.author.value, _short(before), _short(after))
    return None


def _short(line: str) -> str:
    return one_line(line if len(line) <= SHOWN else line[: SHOWN - 1] + "…")
