"""The model boundary: one streaming method.

    model.stream(prompt, stop) -> chunks of the completion

Whatever sits behind it (a scripted list, an OpenAI-compatible server, llama.cpp) sees the
whole prompt fresh on every call; no state carries over between calls. An adapter for a
real server turns its failures into ModelError.

ScriptedModel is the built-in model: it plays back canned completions, honours stop
sequences the way an inference server does (text up to the first stop string, the stop
string left out) and remembers what it cut, which no real server tells you.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.stop import cut_at_stop


class ModelError(Exception):
    """The model could not answer (a server error, a timeout). Ends the run: model_error."""


class ModelExhausted(ModelError):
    """A scripted model has no completion left. Ends the run: model_exhausted."""


@dataclass(frozen=True)
class TokenUsage:
    """What a backend that can count reports about one call, as the last item of its stream."""

    prompt_tokens: int  # the whole prompt, in the model's own tokens
    evaluated_tokens: int | None = None  # of those, how many it had to process (the rest came from its cache)
    completion_tokens: int | None = None


class Model(Protocol):
    """The one method every backend implements. Chunks are text; a backend that can count
    tokens may end its stream with one TokenUsage. Failures are raised as ModelError."""

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]: ...


@dataclass(frozen=True)
class Call:
    prompt: str  # the whole buffer the model was sent
    stop: tuple[str, ...]
    text: str  # what the model sent back
    cut: str  # what the stop sequence removed: the stop string and all after it


class ScriptedModel:
    """Plays back `completions` in order, `chunk_size` characters at a time.

    For demos of what goes wrong, it can also be told to fail at call `error[0]` with the
    message `error[1]`, or to be interrupted (as by Ctrl-C) in call `interrupt[0]` once
    `interrupt[1]` characters of that completion have been streamed.
    """

    def __init__(
        self,
        completions: Sequence[str],
        chunk_size: int = 8,
        interrupt: tuple[int, int] | None = None,
        error: tuple[int, str] | None = None,
    ) -> None:
        self.completions = list(completions)
        self.chunk_size = max(1, chunk_size)
        self.interrupt = interrupt
        self.error = error
        self.calls: list[Call] = []  # every prompt it was sent, in order

    @property
    def last_cut(self) -> str:
        return self.calls[-1].cut if self.calls else ""

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str]:
        number = len(self.calls) + 1
        if self.error and self.error[0] == number:
            raise ModelError(self.error[1])
        if number > len(self.completions):
            raise ModelExhausted(f"the script has {len(self.completions)} completions and all were used")
        text, cut = cut_at_stop(self.completions[number - 1], stop)
        self.calls.append(Call(prompt, tuple(stop), text, cut))
        at = self.interrupt[1] if self.interrupt and self.interrupt[0] == number else None
        return self._chunks(text, at)

    def _chunks(self, text: str, interrupt_at: int | None) -> Iterator[str]:
        end = len(text) if interrupt_at is None else min(interrupt_at, len(text))
        for i in range(0, end, self.chunk_size):
            yield text[i : min(i + self.chunk_size, end)]
        if interrupt_at is not None:
            raise KeyboardInterrupt  # what Ctrl-C does to a stream in progress
