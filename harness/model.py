"""The model boundary: one streaming method, and what every model gets by construction.

    class Echo(Model):
        def stream(self, prompt, stop):        # the one method a backend writes
            yield "Final Answer: " + prompt[-20:]

A model sees the whole prompt fresh on every call and yields text (and maybe a TokenUsage);
its failures are ModelErrors. The loop calls `complete`, which checks what comes back where
it enters: only text or counts, scrubbed of the model's secrets, bounded by Bounds. What
else a model can do is declared on the base, never probed.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from harness.entry import Entry, StreamScrub
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.transcript import Transcript


class ModelError(Exception):
    """The model could not answer (a server error, a timeout). Ends the run: model_error."""


class ModelExhausted(ModelError):
    """A scripted model has no completion left. Ends the run: model_exhausted."""


@dataclass(frozen=True)
class TokenUsage:
    """A call's token counts, as an item of its stream (the last one counts)."""

    prompt_tokens: int  # the whole prompt, in the model's own tokens
    evaluated_tokens: int | None = None  # of those, how many it had to process (the rest came from its cache)
    completion_tokens: int | None = None


class Sent(NamedTuple):
    """A chat backend's first item: how many messages it sent."""

    messages: int


class Bounds(NamedTuple):
    """Bounds on every model call: past `max_chars` or `max_seconds` the call ends in a
    ModelError naming its option (the run stops in model_error)."""

    max_tokens: int = 512  # asked of the model
    max_chars: int = 100_000  # characters of completion text read from one call
    max_seconds: float = 300.0  # the whole call, from the request to the last byte


DEFAULTS = Bounds()  # what a backend takes when it is given no bound


class Budget:
    """One call's bounds while it runs: `spend` each piece of text as it arrives."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.deadline = time.monotonic() + bounds.max_seconds
        self.chars = 0

    def spend(self, chars: int) -> None:
        self.chars += chars
        if self.chars > self.bounds.max_chars:
            raise ModelError(
                f"the completion passed {self.bounds.max_chars:,} characters without ending; "
                "the call was stopped (raise --max-chars, or lower --max-tokens)"
            )
        if time.monotonic() > self.deadline:
            raise self.late()

    def late(self) -> ModelError:
        return ModelError(f"the call passed its time limit of {self.bounds.max_seconds:g} s; the call was stopped (raise --max-seconds)")

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class Model:
    """The base of every model. A backend writes `stream`; the loop calls `complete`."""

    name = ""  # the model as the run was started with it ("openai:smollm2"); a script has none
    endpoint = "completions"  # or "chat": the buffer is sent as messages, split by author (send)
    bounds: Bounds | None = DEFAULTS  # None: unbounded (a script's canned text)
    entry = Entry()  # its secrets, scrubbed from all it sends back (a server's: its key, its URL's password)
    notes: Collection[str] = ()  # what was dropped on arrival (a malformed token count), once each

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterable[str | TokenUsage]:
        raise NotImplementedError(f"{type(self).__name__} must define stream(prompt, stop)")

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterable[str | TokenUsage | Sent]:
        """The buffer as one text (a chat model sends messages)."""
        return self.stream(buffer.text, stop)

    def check(self, buffer: Transcript) -> None:
        """Refuse, before the first call, a buffer this model cannot be sent (HarnessError)."""

    def complete(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[str | TokenUsage | Sent]:
        """One call, sent and checked; closed early, it closes the model's stream."""
        return _checked(self.send(buffer, stop), self.bounds, self.entry)

    def another(self) -> Model:
        """A model for another run at the same time (a server's: sharing connections)."""
        return self

    def interrupt(self) -> None:
        """End the calls in flight now (a batch's Ctrl-C)."""

    def close(self) -> None:
        """Let go of connections and processes."""


def _checked(chunks: Iterable[object], bounds: Bounds | None, entry: Entry) -> Iterator[str | TokenUsage | Sent]:
    budget = None if bounds is None else Budget(bounds)
    scrub = StreamScrub(entry)
    try:
        for chunk in chunks:
            if isinstance(chunk, str):
                if budget is not None:
                    budget.spend(len(chunk))
                if text := scrub.feed(chunk):
                    yield text
            elif isinstance(chunk, (TokenUsage, Sent)):
                yield chunk
            else:
                raise ModelError(f"the model's stream gave {type(chunk).__name__!r}, not text (a str) or a TokenUsage")
        if tail := scrub.finish():
            yield tail
    finally:
        if isinstance(chunks, Generator):  # closed early: the model's own stream ends now (a server stops generating)
            chunks.close()


class Wrapped(Model):
    """Any object with `stream(prompt, stop)`, as a Model (as_model)."""

    def __init__(self, model: object) -> None:
        self.model = model

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterable[str | TokenUsage]:
        return self.model.stream(prompt, stop)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return repr(self.model)


def as_model(model: object) -> Model:
    """A Model as it is; another object with a `stream(prompt, stop)` method, wrapped once."""
    if isinstance(model, Model):
        return model
    if not callable(getattr(model, "stream", None)):
        raise HarnessError("model", f"a {type(model).__name__} is not a model: give a harness.Model, or an object with stream(prompt, stop)")
    return Wrapped(model)


class Around(Model):
    """Passes calls through to another model, keeping its name, bounds and scrub."""

    def __init__(self, model: Model) -> None:
        self.model = as_model(model)
        self.name, self.endpoint, self.bounds, self.entry = self.model.name, self.model.endpoint, self.model.bounds, self.model.entry

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterable[str | TokenUsage | Sent]:
        return self.model.send(buffer, stop)

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterable[str | TokenUsage]:
        return self.model.stream(prompt, stop)

    def check(self, buffer: Transcript) -> None:
        self.model.check(buffer)


STREAMED = 4_096  # characters of a completion a script streams `chunk_size` at a time
LONG_CHUNK = 65_536  # characters a chunk past them: a 10 MB reply is not a million chunks


class ScriptedModel(Model):
    """Plays back `completions` in order, `chunk_size` characters at a time, and `tokens[i]`,
    if given, after completion i (a replay's counts). Like a server that ignores `stop`, it
    streams each completion whole: the loop's stop scanner cuts it."""

    bounds = None  # canned text: nothing to bound

    def __init__(self, completions: Sequence[str], chunk_size: int = 8, tokens: Sequence[TokenUsage | None] = ()) -> None:
        if isinstance(completions, (str, bytes)):  # not a list of one: each character would be a completion
            raise HarnessError("ScriptedModel.completions", f"is one {type(completions).__name__}; give a list of completions, one per call")
        self.completions = list(completions)
        if (bad := next((i for i, c in enumerate(self.completions) if not isinstance(c, str)), None)) is not None:
            raise HarnessError(f"ScriptedModel.completions[{bad}]", f"must be a str, not {type(self.completions[bad]).__name__}")
        self.chunk_size = max(1, chunk_size)
        self.tokens = list(tokens)
        self.calls: list[int] = []  # each call's prompt, by its length: every prompt is a prefix of the final buffer

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        return self._play(len(buffer))  # only the prompt's length: the buffer is never joined

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        return self._play(len(prompt))

    def _play(self, prompt_chars: int) -> Iterator[str | TokenUsage]:
        if len(self.calls) == len(self.completions):
            raise ModelExhausted(f"the script has {len(self.completions)} completions and all were used")
        self.calls.append(prompt_chars)
        i = len(self.calls) - 1
        text, at = self.completions[i], 0
        while at < len(text):
            size = self.chunk_size if at < STREAMED else LONG_CHUNK
            yield text[at : at + size]
            at += size
        if i < len(self.tokens) and self.tokens[i] is not None:
            yield self.tokens[i]


class EndingModel(Around):
    """Passes calls through to `model`, except call number `step`, which ends as a recording
    ended: with a ModelError saying `error`, or else with Ctrl-C after `at` characters."""

    def __init__(self, model: Model, step: int, error: str | None = None, at: int = 0) -> None:
        super().__init__(model)
        self.step, self.error, self.at, self.calls = step, error, at, 0

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterable[str | TokenUsage | Sent]:
        self.calls += 1
        if self.calls != self.step:
            return self.model.send(buffer, stop)
        return self._end(self.model.send(buffer, stop) if self.error is None and self.at else ())

    def _end(self, chunks: Iterable[str | TokenUsage | Sent]) -> Iterator[str | TokenUsage | Sent]:
        left = self.at
        for chunk in chunks:
            if isinstance(chunk, str):
                chunk = chunk[:left]
                left -= len(chunk)
            if chunk:
                yield chunk
            if left == 0:
                break
        raise KeyboardInterrupt if self.error is None else ModelError(self.error)
