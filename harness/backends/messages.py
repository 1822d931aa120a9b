"""The chat endpoint's messages: the same buffer, split by author, by one rule kept here.

A chat API takes a list of messages instead of one text, and the server's own chat
template frames them (`<|im_start|>user ... <|im_end|>`). harness still keeps one
growing buffer in which every byte has an author; for a chat endpoint it is cut at the
changes of author, and each piece becomes a message:

    the developer's and code's text before the model's first turn  ->  "user"
    each model turn                                                ->  "assistant"
    code's text after it (observations, notices, cues)             ->  "user"
    the developer's text after it (a template's turn frames)       ->  "user", with code's

Pieces next to each other that get the same role are one message, so a call sends
user, assistant, user, ... — the turns a chat template expects — and every byte of the
buffer is in exactly one message, in order: joined again, the contents are the buffer.

Why "user" and not "system" for the developer's opening text: it holds the question,
every chat template has a user turn (some, like Gemma's, have no system role), and a
conversation must open with one. Why refuse a control token (`<|im_start|>`) in the
developer's text: with a chat endpoint the server writes the frames; a template that
writes its own (prompts/chatml.txt, or turn frames) would frame every turn twice, and the
server's tokenizer reads those strings as real control tokens. Use a template without
them (`prompt = "default"`) for `--model chat:NAME`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from harness.entry import PATTERN
from harness.errors import HarnessError
from harness.model import Around, Model, Sent, TokenUsage
from harness.transcript import Author, Span, Transcript

if TYPE_CHECKING:
    from harness.run_record import RunRecord

ROLE = {Author.MODEL: "assistant", Author.CODE: "user", Author.DEVELOPER: "user"}


def messages(spans: Iterable[Span]) -> list[dict[str, str]]:
    """The buffer's spans as chat messages, by the rule above."""
    out: list[dict[str, str]] = []
    for span in spans:
        _add(out, span)
    return out


def _add(out: list[dict[str, str]], span: Span, sending: bool = True) -> None:
    """The rule, one span at a time: a message of its own, or the end of the last one's
    content. The last message is replaced, never changed in place, so a copy of `out`
    taken earlier (a call's messages) stays as it was. Only what is sent (`sending`) is
    refused a control token; a view of a saved file shows one as the text it is."""
    if sending and span.author is Author.DEVELOPER and (token := PATTERN.search(span.text)):
        raise HarnessError(
            "--model chat:NAME",
            f"the prompt template writes the control token {token.group()!r}, but a chat endpoint frames "
            "the turns itself: use a template without control tokens or turn frames (e.g. prompt = \"default\")",
        )
    role = ROLE[span.author]
    if out and out[-1]["role"] == role:
        out[-1] = {"role": role, "content": out[-1]["content"] + span.text}
    else:
        out.append({"role": role, "content": span.text})


def per_call(spans: Iterable[Span]) -> list[list[dict[str, str]]]:
    """The messages each model call was sent: the rule applied to the spans before its turn.
    One pass over the spans, each text joined once; each call's list is a copy of the
    messages so far, whose dicts the lists share (`_add` never changes one: read them, do
    not change them). The lists themselves hold calls × messages entries in all; the views
    use sent_counts instead (tests/benchmarks/messages.py)."""
    out: list[list[dict[str, str]]] = []
    sent: list[dict[str, str]] = []
    for span in spans:
        if span.author is Author.MODEL:
            out.append(list(sent))
        _add(sent, span)
    return out


def sent_counts(spans: Iterable[Span]) -> tuple[list[dict[str, str]], list[int]]:
    """The run's messages once, and how many of them each call was sent, for the views
    (whose size then grows with the buffer, not with calls times messages):

        call i was sent  all[:counts[i]]

    That holds for a Transcript's spans: it never has two model spans side by side, so a
    model turn always starts a message and the ones before it are never changed again.
    Nothing is sent: a saved file someone edited to hold a control token is still shown."""
    out: list[dict[str, str]] = []
    counts: list[int] = []
    for span in spans:
        if span.author is Author.MODEL:
            counts.append(len(out))
        _add(out, span, sending=False)
    return out, counts


def sent_text(record: RunRecord, source: str) -> str:
    """What `harness show FILE --messages` prints: each call's messages, role by role,
    every line of a message's content after its role (shown, never obeyed, by a terminal)."""
    from harness.escape import for_terminal

    if record.endpoint != "chat":
        raise HarnessError(f"{source}: --messages", "this run did not go through a chat endpoint: each call was sent the buffer as one text")
    run, counts = sent_counts(record.transcript.spans)
    out = []
    for number, sent in enumerate((run[:n] for n in counts), 1):
        out.append(f"call {number} sent {len(sent)} message{'s' if len(sent) != 1 else ''}:\n")
        for message in sent:
            lines = message["content"].split("\n")
            out += [f"  {message['role'] if i == 0 else '':<9} | {for_terminal(line)}\n" for i, line in enumerate(lines)]
    return "".join(out)


def with_count(sent: list[dict[str, str]], chunks: Iterable[Any]) -> Iterator[Any]:
    """A call's stream, told first how many messages it sent."""
    yield Sent(len(sent))
    try:
        yield from chunks
    finally:
        if isinstance(chunks, Generator):
            chunks.close()


class ChatScript(Around):
    """A scripted model replaying a chat run: the recorded turns, and for each call the
    messages count the rule gives now (so a change of the rule is drift a replay shows)."""

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.endpoint = "chat"

    def check(self, buffer: Transcript) -> None:
        messages(buffer.spans)

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[str | TokenUsage | Sent]:
        return with_count(messages(buffer.spans), self.model.send(buffer, stop))
