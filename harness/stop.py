"""Stop sequences, enforced by the client over a stream of chunks.

An inference server cuts generation at the first stop string and leaves the stop string
out. Some servers and models ignore `stop`, so the harness enforces it again on its side
(harness.reading feeds it every chunk, and closes the stream once it has `stopped`).

The scanner holds back the longest suffix that is a proper prefix of some stop string
("Observ" might still become "Observation:"), so the work per chunk is proportional to
the chunk plus the longest stop string, never to everything received so far.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopScanner:
    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = [s for s in stops if s]  # an empty stop string stops nothing
        self.held = ""  # the tail held back (it may begin a stop string); never held once stopped
        self.matched: str | None = None  # the stop string that cut, once stopped
        self.stopped = False  # a stop string was found
        self._cut: list[str] = []  # the stop string and whatever was read after it
        self.cut_chars = 0

    @property
    def cut(self) -> str:
        return "".join(self._cut)

    def feed(self, chunk: str) -> str:
        """Take a chunk; return the text that is now safe to show."""
        if self.stopped:
            self._cut.append(chunk)
            self.cut_chars += len(chunk)
            return ""
        text = self.held + chunk
        # The stop string that is complete first wins (a server checks after each token);
        # of two that end at the same place, the longer one.
        hits = [(at + len(s), -len(s), at, s) for s in self.stops if (at := text.find(s)) >= 0]
        if hits:
            _, _, at, stop = min(hits)
            self.matched, self.stopped, self.held = stop, True, ""
            self._cut, self.cut_chars = [text[at:]], len(text) - at
            return text[:at]
        held = held_from(text, self.stops)
        self.held = text[held:]
        return text[:held]

    def finish(self) -> str:
        """The stream ended without a stop string: release what was held back."""
        held, self.held = self.held, ""
        return held


def held_from(text: str, strings: Sequence[str]) -> int:
    """Where the longest suffix of `text` that begins one of `strings` (none empty) starts,
    len(text) if none does: what a stream holds back, as it might still become one (a stop
    string here, a secret in harness.entry). Only the last `longest - 1` characters can."""
    end = len(text)
    best = end
    for string in strings:
        at = text.find(string[0], max(0, end - len(string) + 1))
        while 0 <= at < best:
            if string.startswith(text[at:]):
                best = at
                break
            at = text.find(string[0], at + 1)
    return best
