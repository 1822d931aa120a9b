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

_MEMO_MAX = 4096  # short texts remembered per set of stop strings (see _Stops.memo)


class _Stops:
    """What a set of stop strings implies, worked out once and shared by every scanner
    that uses the same strings (the loop makes a new scanner for every model call)."""

    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = stops
        # Every proper prefix of every stop string: what a held-back tail may be (with one
        # stop string, the usual case, it is asked directly: react-paper's changes every step).
        self.prefixes = frozenset(s[:i] for s in stops for i in range(1, len(s))) if len(stops) > 1 else frozenset()
        if len(stops) == 1:  # (the usual case, made anew every step in react-paper: without generators)
            self.longest, self.firsts = len(stops[0]), frozenset(stops[0][0])
        else:
            self.longest = max((len(s) for s in stops), default=0)
            self.firsts = frozenset(s[0] for s in stops)  # a stop string can only start here
        self.first = next(iter(self.firsts)) if len(self.firsts) == 1 else None  # the usual case: one
        # text -> (safe to show, held back), for short texts that complete no stop string:
        # in 1-character chunks the same few texts ("O", "Ob", "Obs" + " ") come up again
        # and again, and the answer depends on the text alone, not on how it was chunked.
        self.memo: dict[str, tuple[str, str]] = {}
        self.memo_len = 2 * self.longest

    def begins(self, tail: str) -> bool:
        """Is `tail` a proper prefix of a stop string (could it still become one)?"""
        if len(self.stops) == 1:
            return len(tail) < self.longest and self.stops[0].startswith(tail)
        return tail in self.prefixes


_TABLES: dict[tuple[str, ...], _Stops] = {}  # a few sets of stop strings in use at a time


def _stops(stops: Sequence[str]) -> _Stops:
    key = stops if type(stops) is tuple else tuple(stops)  # (a dialect's stops are a tuple already)
    table = _TABLES.get(key)
    if table is None:
        if len(_TABLES) >= 64:  # react-paper's stops change every step: keep the cache small
            _TABLES.clear()
        table = _TABLES[key] = _Stops(key if all(key) else tuple(s for s in key if s))
    return table


class StopScanner:
    __slots__ = ("_t", "stops", "_first", "_firsts", "_memo", "_memo_len", "_held", "matched", "stopped", "_cut", "cut_chars")

    def __init__(self, stops: Sequence[str]) -> None:
        self._t = table = _stops(stops)
        self.stops = list(table.stops)
        self._first, self._firsts, self._memo, self._memo_len = table.first, table.firsts, table.memo, table.memo_len
        self._held = ""  # never held once stopped
        self.matched: str | None = None  # the stop string that cut, once stopped
        self.stopped = False  # a stop string was found (a plain attribute: read after every chunk)
        self._cut: list[str] = []  # the stop string and whatever was read after it
        self.cut_chars = 0

    @property
    def cut(self) -> str:
        return "".join(self._cut)

    def feed(self, chunk: str) -> str:
        """Take a chunk; return the text that is now safe to show."""
        if self._held:
            text = self._held + chunk
        elif self.matched is not None:
            self._cut.append(chunk)
            self.cut_chars += len(chunk)
            return ""
        elif self._first is not None:
            if self._first not in chunk:
                return chunk  # the common case: nothing here can start a stop string
            text = chunk
        elif chunk not in self._firsts if len(chunk) == 1 else not any(c in chunk for c in self._firsts):
            return chunk
        else:
            text = chunk
        short = len(text) <= self._memo_len
        if short and (known := self._memo.get(text)) is not None:
            out, self._held = known
            return out
        return self._scan(text, short)

    def _scan(self, text: str, short: bool) -> str:
        """Search `text` (what was held, then the chunk) for a stop string."""
        table = self._t
        # The stop string that is complete first wins (a server checks after each token);
        # of two that end at the same place, the longer one.
        if len(table.stops) == 1:
            stop = table.stops[0]
            if len(stop) > 1 and text[-1] != stop[0] and stop[:2] not in text:
                # Neither the stop string nor a start of it can be here: a held tail would
                # be its first character at the very end, or begin with its first two.
                self._held = ""
                return text
            at = text.find(stop)
        else:
            hits = [(at + len(s), -len(s), at, s) for s in table.stops if (at := text.find(s)) >= 0]
            _, _, at, stop = min(hits) if hits else (0, 0, -1, "")
        if at >= 0:
            self.matched, self._cut, self.cut_chars, self._held = stop, [text[at:]], len(text) - at, ""
            self.stopped = True
            return text[:at]
        start = self._held_from(text)
        out, self._held = text[:start], text[start:]
        if short and len(self._memo) < _MEMO_MAX:
            self._memo[text] = (out, self._held)
        return out

    def finish(self) -> str:
        """The stream ended without a stop string: release what was held back."""
        held, self._held = self._held, ""
        return held

    def _held_from(self, text: str) -> int:
        """Where the longest suffix of `text` that a stop string begins with starts
        (len(text): no such suffix)."""
        table, end = self._t, len(text)
        start = max(0, end - table.longest + 1)
        if table.first is not None:  # jump from one possible start to the next
            while (start := text.find(table.first, start)) >= 0:
                if table.begins(text[start:]):
                    return start
                start += 1
            return end
        for at in range(start, end):
            if text[at] in table.firsts and table.begins(text[at:]):
                return at
        return end


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, str]:
    """The whole-text answer: (kept, cut). The streaming scanner must agree with this."""
    scanner = StopScanner(stops)
    kept = scanner.feed(text)
    return kept + scanner.finish(), scanner.cut
