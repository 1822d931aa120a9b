"""Reading one completion as it streams: every chunk passes the stop scanner (harness.stop),
then the lanes' gates (harness.governor); what gets through reaches the user as a TextDelta.
A stream may also carry the model's token counts (a TokenUsage) and, from a chat
endpoint, how many messages it sent (a Sent): those are kept, not read as text.
A model error while peeking (harness.loop.Setup.peek) ends the peek, not the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from harness.decisions import Round
from harness.events import Event, TextDelta
from harness.governor import Governor
from harness.model import ModelError, TokenUsage
from harness.stop import StopScanner

Emit = Callable[[Event], None]


class Reply(NamedTuple):
    """What one model call gave."""

    text: str  # what the buffer keeps
    cut: str = ""  # read but kept out of the buffer: the stop string and what a peek read after it, or what a Ctrl-C left unshown
    cut_by: str = ""  # "stop" (a stop sequence), "prefix" (the prefix rule: nothing is kept), or ""
    decided: Round = Round()
    tokens: TokenUsage | None = None  # the model's own counts, if it gave them
    messages: int | None = None  # a chat endpoint: the buffer was sent as this many messages


class Canceled(Exception):
    """A Ctrl-C mid-completion. Its args: the part that had reached the user, and what was read
    after it (held back at a line's or a stop's edge), which a replay must read too."""


def read(chunks: Iterable[object], scanner: StopScanner, governor: Governor, peek: int, emit: Emit | None) -> Reply:
    """All of one completion (`emit` None: nobody listens, no TextDelta is made)."""
    tokens, sent = None, None
    try:
        try:
            for chunk in chunks:
                if not isinstance(chunk, str):  # the model's counts, or a chat call's messages
                    tokens, sent = (chunk, sent) if isinstance(chunk, TokenUsage) else (tokens, chunk.messages)
                elif scanner.stopped:  # peeking: read past the cut only to show what it prevented
                    scanner.feed(chunk)
                    if 0 <= peek <= scanner.cut_chars - len(scanner.matched or ""):
                        break
                else:
                    if (shown := governor.feed(scanner.feed(chunk))) and emit is not None:
                        emit(TextDelta(shown))
                    if governor.prefix_rejected or (scanner.stopped and peek == 0):
                        break  # a server that ignored `stop`, or a reply already rejected, is not read further
        except ModelError:
            if not (peek > 0 and scanner.stopped):
                raise
        if not governor.prefix_rejected:  # the tail the scanner held back, then the last line, judged
            shown = governor.feed(scanner.finish()) + governor.finish()
            if shown and emit is not None:
                emit(TextDelta(shown))
    except KeyboardInterrupt:  # the completion is kept up to the last character the user saw
        text, held = governor.text, scanner.cut if scanner.stopped else scanner.held  # (all that was read, between them)
        raise Canceled(text[: governor.shown_end], text[governor.shown_end :] + held) from None
    decided = governor.result()
    if decided.prefix_rejected:  # nothing of it is kept: what ruled the prefix out is quoted in the notice
        return Reply("", governor.rejected, "prefix", decided, tokens, sent)
    if not scanner.stopped:
        return Reply(governor.text, "", "", decided, tokens, sent)
    cut = scanner.cut if peek < 0 else scanner.cut[: len(scanner.matched) + peek]
    return Reply(governor.text, cut, "stop", decided, tokens, sent)
