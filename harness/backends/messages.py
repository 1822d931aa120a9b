"""The chat endpoint's messages: the same buffer, split by author, by one rule kept here.

    the developer's and code's text before the model's first turn  ->  "user"
    each model turn                                                ->  "assistant"
    code's and the developer's text after it                       ->  "user"

Pieces side by side with the same role are one message, so the contents joined are the
buffer. A control token (`<|im_start|>`) in the developer's text is refused: the server's
template frames the turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from harness.entry import PATTERN
from harness.errors import HarnessError
from harness.model import Around, Model, Sent, TokenUsage
from harness.transcript import Author, Span, Transcript

if TYPE_CHECKING:
    from harness.run_record import RunRecord

ROLE = {Author.MODEL: "assistant", Author.CODE: "user", Author.DEVELOPER: "user"}
NOT_CHAT = "this run did not go through a chat endpoint: each call was sent the buffer as one text (a proxy's cassette holds its messages in the buffer: show it without --messages)"


def messages(spans: Iterable[Span]) -> list[dict[str, str]]:
    """The buffer's spans as chat messages, by the rule above."""
    return sent_counts(spans, sending=True)[0]


def sent_counts(spans: Iterable[Span], sending: bool = False) -> tuple[list[dict[str, str]], list[int]]:
    """The run's messages once, and how many each call was sent (call i: `all[:counts[i]]`);
    only what is sent refuses a control token (a view shows it)."""
    out: list[dict[str, str]] = []
    counts: list[int] = []
    for span in spans:
        if span.author is Author.MODEL:
            counts.append(len(out))
        elif sending and span.author is Author.DEVELOPER and (token := PATTERN.search(span.text)):
            raise HarnessError(
                "--model chat:NAME",
                f"the prompt template writes the control token {token.group()!r}, but a chat endpoint frames "
                "the turns itself: use a template without control tokens or turn frames (e.g. prompt = \"default\")",
            )
        role = ROLE[span.author]
        if out and out[-1]["role"] == role:
            out[-1]["content"] += span.text
        else:
            out.append({"role": role, "content": span.text})
    return out, counts


def sent_text(record: RunRecord, source: str) -> str:
    """What `harness show FILE --messages` prints: each call's messages, every line after its role."""
    from harness.escape import for_terminal

    if record.endpoint != "chat":
        raise HarnessError(f"{source}: --messages", NOT_CHAT)
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
    yield from chunks  # closing this closes the model's stream too


class ChatScript(Around):
    """A script replaying a chat run, its calls counted by the rule as it is now (a change is drift)."""

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.endpoint = "chat"

    def check(self, buffer: Transcript) -> None:
        messages(buffer.spans)

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[str | TokenUsage | Sent]:
        return with_count(messages(buffer.spans), self.model.send(buffer, stop))
