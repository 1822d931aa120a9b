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


class Model(Protocol):
    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str]: ...


@dataclass(frozen=True)
class Call:
    prompt: str  # the whole buffer the model was sent
    stop: tuple[str, ...]
    text: str  # what the model sent back
    cut: str  # what the stop sequence removed: the stop string and all after it


class ScriptedModel:
    """Plays back `completions` in order, `chunk_size` characters at a time."""

    def __init__(self, completions: Sequence[str], chunk_size: int = 8) -> None:
        self.completions = list(completions)
        self.chunk_size = max(1, chunk_size)
        self.calls: list[Call] = []  # every prompt it was sent, in order

    @property
    def last_cut(self) -> str:
        return self.calls[-1].cut if self.calls else ""

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str]:
        if len(self.calls) >= len(self.completions):
            raise ModelExhausted(f"the script has {len(self.completions)} completions and all were used")
        text, cut = cut_at_stop(self.completions[len(self.calls)], stop)
        self.calls.append(Call(prompt, tuple(stop), text, cut))
        return (text[i : i + self.chunk_size] for i in range(0, len(text), self.chunk_size))
