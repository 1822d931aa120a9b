"""Stop sequences, enforced by the client over a stream of chunks.

An inference server cuts generation at the first stop string and leaves the stop string
out. Some servers and models ignore `stop`, so the harness enforces it again on its side:

    scanner = StopScanner(["Observation:"])
    for chunk in stream:
        shown += scanner.feed(chunk)     # only text that can no longer become a stop string
        if scanner.stopped: break        # cut: close the stream, read no more
    shown += scanner.finish()            # the held-back tail, once the stream has ended

The scanner holds back the longest suffix that is a proper prefix of some stop string
("Observ" might still become "Observation:"), so the work per chunk is proportional to
the chunk plus the longest stop string, never to everything received so far.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopScanner:
    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = [s for s in stops if s]
        # Every proper prefix of every stop string: what a held-back tail may be.
        self._prefixes = {s[:i] for s in self.stops for i in range(1, len(s))}
        self._longest = max((len(s) for s in self.stops), default=0)
        self._firsts = frozenset(s[0] for s in self.stops)  # a stop string can only start here
        self._held = ""
        self.matched: str | None = None  # the stop string that cut, once stopped
        self._cut: list[str] = []  # the stop string and whatever was read after it
        self.cut_chars = 0

    @property
    def cut(self) -> str:
        return "".join(self._cut)

    @property
    def stopped(self) -> bool:
        return self.matched is not None

    def feed(self, chunk: str) -> str:
        """Take a chunk; return the text that is now safe to show."""
        if self.stopped:
            self._cut.append(chunk)
            self.cut_chars += len(chunk)
            return ""
        if not self._held and not any(c in chunk for c in self._firsts):
            return chunk  # the common case: nothing here can start a stop string
        text = self._held + chunk
        # The stop string that is complete first wins (a server checks after each token);
        # of two that end at the same place, the longer one.
        hits = [(at + len(s), -len(s), at, s) for s in self.stops if (at := text.find(s)) >= 0]
        if hits:
            _, _, at, stop = min(hits)
            self.matched, self._cut, self.cut_chars, self._held = stop, [text[at:]], len(text) - at, ""
            return text[:at]
        keep = self._held_suffix(text)
        self._held = text[len(text) - keep :]
        return text[: len(text) - keep]

    def finish(self) -> str:
        """The stream ended without a stop string: release what was held back."""
        held, self._held = self._held, ""
        return held

    def _held_suffix(self, text: str) -> int:
        """The length of the longest suffix of `text` that a stop string begins with."""
        for start in range(max(0, len(text) - self._longest + 1), len(text)):
            if text[start] in self._firsts and text[start:] in self._prefixes:
                return len(text) - start
        return 0


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, str]:
    """The whole-text answer: (kept, cut). The streaming scanner must agree with this."""
    scanner = StopScanner(stops)
    kept = scanner.feed(text)
    return kept + scanner.finish(), scanner.cut
