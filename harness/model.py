"""The model boundary: one streaming method.

    model.stream(prompt, stop) -> chunks of the completion

Whatever sits behind it (a scripted list, an OpenAI-compatible server, llama.cpp) sees the
whole prompt fresh on every call; no state carries over between calls. An adapter for a
real server turns its failures into ModelError.

ScriptedModel is the built-in model: it plays back canned completions. FailingModel and
InterruptedModel wrap any model to show what a failing server or a Ctrl-C does to a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.transcript import Transcript


class ModelError(Exception):
    """The model could not answer (a server error, a timeout). Ends the run: model_error."""


class ModelExhausted(ModelError):
    """A scripted model has no completion left. Ends the run: model_exhausted."""


@dataclass(frozen=True)
class TokenUsage:
    """What a backend that can count reports about one call, as an item of its stream
    (anywhere in it: the last one counts)."""

    prompt_tokens: int  # the whole prompt, in the model's own tokens
    evaluated_tokens: int | None = None  # of those, how many it had to process (the rest came from its cache)
    completion_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Sent:
    """What a chat backend says it sent, as the first item of its stream: the buffer as this
    many messages (harness.backends.messages). The run records it per call."""

    messages: int


class Model(Protocol):
    """The one method every backend implements. Chunks are text; a backend that can count
    tokens may yield a TokenUsage in its stream (the last one counts). Failures are raised
    as ModelError.

    A backend that reads the buffer itself rather than its text has one of two more, and
    the loop calls that instead: a chat endpoint `stream_spans(transcript, stop)` (it
    splits the buffer by author), the script `stream_buffer(transcript, stop)` (it needs
    only the length: joining a 10,000-step buffer into one string for every call would be
    most of what a scripted run costs)."""

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]: ...


@dataclass(frozen=True, slots=True)
class Call:
    prompt_chars: int  # how much of the buffer it was sent: every prompt is a prefix of the final buffer
    stop: tuple[str, ...]


_LISTED = 4096  # characters: a reply up to this long is cut into its chunks in one go
_UNWATCHED = 65_536  # characters a chunk, past the first _LISTED, when nobody watches the stream


class ScriptedModel:
    """Plays back `completions` in order, `chunk_size` characters at a time.

    Like a server that ignores `stop`, it streams each completion whole: the loop's stop
    scanner cuts it, exactly as it would cut a real model's. It keeps the length of each
    prompt it was sent, not the prompt (`buffer.text[:call.prompt_chars]` gives it back).

    `watched=False` says nobody sees the stream (no listener: `harness run -f tagged`, `harness
    agent`). The chunks are then only a cost: 1.25 million trips through the loop for a
    10 MB reply, four for a 32-character one. So past its first `head` characters (by
    default 4,096) a completion comes 64 KB at a time. The record is the same: the scanner
    and the lanes' gates decide the same for any chunking, and the one read that stops on a
    chunk (a reply that does not begin with the required prefix keeps what was read up to
    there) is decided within the prefix's length: a run that knows its dialect gives that.
    """

    def __init__(self, completions: Sequence[str], chunk_size: int = 8, watched: bool = True, head: int = 4096) -> None:
        if isinstance(completions, (str, bytes)):  # not a list of one: each character would be a completion
            raise HarnessError("ScriptedModel.completions", f"is one {type(completions).__name__}; give a list of completions, one per call")
        self.completions = list(completions)
        if (bad := next((i for i, c in enumerate(self.completions) if not isinstance(c, str)), None)) is not None:
            raise HarnessError(f"ScriptedModel.completions[{bad}]", f"must be a str, not {type(self.completions[bad]).__name__}")
        self.chunk_size = max(1, chunk_size)
        self.watched = watched
        self.head = max(0, head)  # characters an unwatched completion begins with, chunk_size at a time
        self._sent: list[tuple[int, tuple[str, ...]]] = []  # (prompt_chars, stop) per call

    @property
    def calls(self) -> list[Call]:
        """What each call was sent, as Calls (made when asked: a run of 10,000 steps asks once, if at all)."""
        return [Call(*sent) for sent in self._sent]

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str]:
        return self._play(len(prompt), stop)

    def stream_buffer(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[str]:
        """The same call, sent the buffer itself (the loop does: see Model)."""
        if type(self).stream is not ScriptedModel.stream:  # a subclass that reads the text gets it
            return self.stream(buffer.text, stop)
        return self._play(len(buffer), stop)

    def _play(self, prompt_chars: int, stop: Sequence[str]) -> Iterator[str]:
        sent = self._sent
        if len(sent) == len(self.completions):
            raise ModelExhausted(f"the script has {len(self.completions)} completions and all were used")
        sent.append((prompt_chars, stop if type(stop) is tuple else tuple(stop)))
        text, size = self.completions[len(sent) - 1], self.chunk_size
        if not self.watched:
            return _unwatched(text, size, self.head)
        if len(text) <= _LISTED:  # the usual reply: its chunks cut at once, quicker to go through than a generator
            return iter([text[i : i + size] for i in range(0, len(text), size)])
        return (text[i : i + size] for i in range(0, len(text), size))  # a 10 MB one: a chunk at a time


def _unwatched(text: str, size: int, head: int) -> Iterator[str]:
    """The first `head` characters `size` at a time, as watched, then _UNWATCHED at a time."""
    head = -(-head // size) * size  # the end of the small chunks that cover them
    pieces = [text[i : i + size] for i in range(0, min(head, len(text)), size)]
    if len(text) <= head + _UNWATCHED:  # the usual reply: at most one big piece, cut at once
        return iter(pieces + [text[head:]] if len(text) > head else pieces)
    return _pieces(pieces, text, head)


def _pieces(pieces: list[str], text: str, head: int) -> Iterator[str]:
    yield from pieces
    for i in range(head, len(text), _UNWATCHED):
        yield text[i : i + _UNWATCHED]


# --- what goes wrong, for demos: small wrappers around any model ------------------------


class FailingModel:
    """Passes calls through to `model`, except call number `step`, which fails with `message`."""

    def __init__(self, model: Model, step: int, message: str) -> None:
        self.model, self.step, self.message, self.calls = model, step, message, 0

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        self.calls += 1
        if self.calls == self.step:
            raise ModelError(self.message)
        return self.model.stream(prompt, stop)


class InterruptedModel:
    """Passes calls through to `model`; in call number `step`, once `at` characters have
    streamed, raises KeyboardInterrupt, as Ctrl-C does to a stream in progress."""

    def __init__(self, model: Model, step: int, at: int) -> None:
        self.model, self.step, self.at, self.calls = model, step, at, 0

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        self.calls += 1
        chunks = self.model.stream(prompt, stop)
        return self._cut(chunks) if self.calls == self.step else chunks

    def _cut(self, chunks: Iterator[str | TokenUsage]) -> Iterator[str | TokenUsage]:
        left = self.at
        for chunk in chunks:
            if isinstance(chunk, str):
                chunk = chunk[:left]
                left -= len(chunk)
            if chunk:
                yield chunk
            if left == 0:
                break
        raise KeyboardInterrupt
