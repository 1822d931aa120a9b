"""Reading one completion as it streams: the stop scanner, then the lanes' gates, then the user.

    text, cut, decided, tokens, sent = read(chunks, stops, setup, emit)

Every chunk passes the stop scanner (harness.stop), then the lanes' gates
(harness.governor); what gets through reaches the user as a TextDelta. Most replies are
the usual one: thought lines, then Action lines that are whole, well formed and run. The
Governor reads any reply, with a gate object per lane; `_usual` reads the usual one with
a few local variables, makes the same decisions, shows the same text after every chunk
and returns the same Round (a step costs about 8% less). The moment a reply turns out
not to be the usual one (a line of blanks, a final answer, an Action line that is
rejected or cannot run, no action at all, a required prefix that is not there), it hands
over: a Governor is fed, silently, what passed the scanner so far, and reads on from
the chunk `_usual` could not take. Up to there the two agreed, so nothing the user saw
changes. tests/test_reading.py checks, for any reply, chunking and dialect, that a run's
events and transcript are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from harness.decisions import Lane, Round
from harness.events import Event, TextDelta
from harness.governor import Governor
from harness.judge import judge_action, trait_of
from harness.model import ModelError, Sent, TokenUsage
from harness.stop import StopScanner

if TYPE_CHECKING:
    from harness.loop import Setup

Emit = Callable[[Event], None]


class Read(NamedTuple):
    text: str  # what passed the scanner: the completion the buffer keeps
    cut: str  # the stop string and what was read after it, as far as the peek shows it
    decided: Round
    tokens: TokenUsage | None  # the model's own counts, if it gave them
    sent: int | None  # a chat endpoint: the buffer was sent as this many messages


USUAL_LINE = 1_000  # characters: an Action line longer than this is left to the Governor


class Canceled(Exception):
    def __init__(self, shown: str) -> None:
        super().__init__("canceled")
        self.shown = shown  # the part of the completion that had reached the user


class _NotUsual(Exception):
    """The reply is not the usual one: the Governor reads it (see `read`)."""


class _Handover(NamedTuple):
    quiet: list[str]  # what passed the scanner before the chunk `_usual` could not take
    loud: str  # what passed the scanner of that chunk
    ended: bool  # the stream had ended (`loud` is what the scanner held back)
    tokens: TokenUsage | None
    sent: int | None


def read(chunks: Iterator[Any], stops: tuple[str, ...], setup: Setup, emit: Emit | None) -> Read:
    """All of one completion (`emit` None: nobody listens, no TextDelta is made)."""
    scanner, peek = StopScanner(stops), setup.peek
    if peek > 0:  # a live run's --peek: what fails while it peeks ends the peek, not the call
        chunks = _peeked(chunks, scanner)
    done = _usual(chunks, scanner, setup, emit)
    if type(done) is not _Handover:
        return done
    quiet, loud, ended, tokens, sent = done
    governor = Governor(setup.dialect, setup.tools, setup.question)
    try:
        governor.feed("".join(quiet))  # what the user was shown already, fed again silently, at once (a Round is the same for any chunking)
        if (shown := governor.feed(loud)) and emit:
            emit(TextDelta(shown))
        if not ended:
            if not (governor.stopped or scanner.stopped and peek == 0):
                tokens, sent = _pump(chunks, scanner, governor, peek, emit, tokens, sent)
            if not governor.stopped and (shown := governor.feed(scanner.finish())) and emit:
                emit(TextDelta(shown))
        if not governor.stopped and (tail := governor.finish()) and emit:
            emit(TextDelta(tail))
    except KeyboardInterrupt:
        # Keep the completion up to the last character the user saw.
        raise Canceled(governor.text[: governor.shown_end]) from None
    return governor.text, _cut(scanner, peek), governor.result(), tokens, sent


def _peeked(chunks: Iterator[Any], scanner: StopScanner) -> Iterator[Any]:
    """`chunks`, which end quietly at a ModelError (a time limit, a broken stream) that comes
    once the stop was found: the reply was whole by then, and stands."""
    try:
        yield from chunks
    except ModelError:
        if not scanner.stopped:
            raise


def _cut(scanner: StopScanner, peek: int) -> str:
    if not scanner.stopped:
        return ""
    return scanner.cut if peek < 0 else scanner.cut[: len(scanner.matched) + peek]


def _pump(chunks: Iterable[Any], scanner: StopScanner, governor: Governor, peek: int, emit: Emit | None, tokens, sent):
    """The general read: every chunk through the scanner and the Governor."""
    for chunk in chunks:
        if type(chunk) is not str:  # a backend that counts gives a TokenUsage; a chat one, a Sent
            if type(chunk) is Sent:
                sent = chunk.messages
            else:
                tokens = chunk
        elif scanner.stopped:  # peeking: read past the cut only to show what it prevented
            scanner.feed(chunk)
            if 0 <= peek <= scanner.cut_chars - len(scanner.matched or ""):
                break
        else:
            if (shown := governor.feed(scanner.feed(chunk))) and emit:  # (the governor keeps what it was fed)
                emit(TextDelta(shown))
            if governor.stopped or (scanner.stopped and peek == 0):
                break  # a server that ignored `stop`, or a reply already rejected, is not read further
    return tokens, sent


def _usual(chunks: Iterator[Any], scanner: StopScanner, setup: Setup, emit: Emit | None) -> Read | _Handover:
    """The usual reply, read as the Governor reads it, with a few locals instead of gate
    objects. Every lane is shown whole, so what the user saw is the text read: a lane is
    where it starts and ends in it."""
    dialect, tools, question, peek = setup.dialect, setup.tools, setup.question, setup.peek
    markers = dialect._starting  # first characters that may begin a marker (`Action`, `Final Answer:`)
    fed: list[str] = []  # what the scanner let through: the completion
    lanes: list[list[int] | Lane | None] = []  # a thinking lane's [start, end], or an accepted Action line's Lane (None: nobody listens)
    actions: list = []  # (number, action, trait), as the Governor keeps them
    held: list[str] = []  # the current Action line's pieces, shown only once it is judged
    line, kind = "", None  # the current line while its kind is untold; then "thinking" or "action"
    at = shown_end = 0  # characters read; just after the last one the user saw
    tokens = sent = None
    prefix = dialect.required_prefix or ""
    head = "" if prefix else None  # what came while the prefix could not be told yet

    def take(text: str) -> str:
        """What the user sees of `text`, read piece by piece (each up to its newline)."""
        nonlocal line, kind, held, at, shown_end
        out, start, end, base = "", 0, len(text), at
        while start < end:
            stop = text.find("\n", start) + 1 or end
            piece, start, here = text[start:stop], stop, base + stop  # (here: just after the piece)
            ended = piece[-1] == "\n"
            if kind is None:  # a new line, or one whose kind could not be told yet
                line += piece
                if (c := line[0]) in markers or c == " " or c == "\t":
                    if c in " \t" and not ended and not line.strip(" \t"):
                        raise _NotUsual  # blanks alone so far: the Governor keeps them aside
                    kind = dialect.line_kind(line, ended)
                    if kind is None:
                        continue  # `Act`: wait for more
                    if kind == "answer":
                        raise _NotUsual
                else:
                    kind = "thinking"  # no marker begins so: most lines
                if kind == "thinking":
                    if lanes and type(lanes[-1]) is list:  # consecutive thought lines share one lane
                        lanes[-1][1] = here
                    else:
                        lanes.append([here - len(line), here])
                    out += line
                    shown_end = here
                else:
                    held = [line]
                line = ""
            elif kind == "thinking":
                lanes[-1][1] = shown_end = here
                out += piece
            else:
                held.append(piece)
            if ended:
                if kind == "action":
                    out += judged("".join(held))
                    shown_end = here
                kind = None
        at = base + end
        return out

    def ahead(text: str) -> str:
        """A dialect's required prefix: held until it is there, then read (as Governor.feed)."""
        nonlocal head
        head += text
        if prefix.startswith(head):
            return ""  # could still become the prefix: wait
        if not head.startswith(prefix):
            raise _NotUsual  # ruled out: the Governor words the notice and stops the read
        text, head = head, None
        return take(text)

    def judged(text: str) -> str:
        """A complete Action line: accepted as the Governor would accept it, or handed over
        (a long one too: it is no usual line, and the Governor must not read it twice)."""
        if len(actions) >= dialect.max_actions or len(text) > USUAL_LINE:
            raise _NotUsual
        action = dialect.read_action(text)
        if action is None or dialect.is_finish(action.tool):
            raise _NotUsual
        if judge_action(dialect, tools, actions, len(actions) + 1, action, text, question) is not None:
            raise _NotUsual
        actions.append((len(actions) + 1, action, trait_of(tools, action.tool)))
        lanes.append(Lane(len(lanes), "action", "allowed", len(text), text) if emit else None)  # (see the end)
        return text

    text, ending = "", False
    try:
        for chunk in chunks:
            if type(chunk) is not str:
                if type(chunk) is Sent:
                    sent = chunk.messages
                else:
                    tokens = chunk
            elif scanner.stopped:  # peeking, as _pump does
                scanner.feed(chunk)
                if 0 <= peek <= scanner.cut_chars - len(scanner.matched or ""):
                    break
            else:
                if text := scanner.feed(chunk):
                    if kind is None or "\n" in text:
                        out = take(text) if head is None else ahead(text)
                    elif kind == "thinking":  # the most common chunk: more of a thought
                        at += len(text)
                        lanes[-1][1] = shown_end = at
                        out = text
                    else:  # more of an Action line: held
                        held.append(text)
                        at += len(text)
                        out = ""
                    fed.append(text)
                    if out and emit:
                        emit(TextDelta(out))
                if scanner.stopped and peek == 0:
                    break
        ending = True  # as Governor.finish: the tail the scanner held back, then the last line
        out = (take(text) if head is None else ahead(text)) if (text := scanner.finish()) else ""
        if head is not None:
            raise _NotUsual  # it ended while it could still be the prefix: the Governor rejects it
        last = ""
        if kind is None and line:  # it ended without a newline, its kind still untold
            if line[0] not in markers or dialect.line_kind(line, True) != "action":
                raise _NotUsual  # (a thought: rare enough to leave to the Governor)
            kind, held = "action", [line]
        if kind == "action":
            last, shown_end = judged("".join(held)), at
        if not actions:
            raise _NotUsual  # no action: the Governor words the notice
    except _NotUsual:
        return _Handover(fed, text, ending, tokens, sent)
    except KeyboardInterrupt:
        raise Canceled("".join(fed)[:shown_end]) from None
    fed.append(text)
    for out in (out, last):
        if out and emit:
            emit(TextDelta(out))
    whole = "".join(fed)
    # The lanes are for a listener (the live view draws them); the loop reads the actions and
    # the answer, so with nobody listening they are not made.
    shaped = tuple([Lane(i, "thinking", "allowed", x[1] - x[0], whole[x[0] : x[1]]) if type(x) is list else x for i, x in enumerate(lanes)]) if emit else ()
    decided = Round(  # (by position, as the Governor makes it)
        shaped,
        tuple([(n, a) for n, a, _ in actions]),
        None,
        False,
        (),
        whole,  # every lane was shown, whole
        False,
    )
    return whole, _cut(scanner, peek), decided, tokens, sent  # (a Read, as a plain tuple: made every step)
