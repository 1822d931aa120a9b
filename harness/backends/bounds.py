"""Bounds on every model call: tokens, characters and seconds.

    Bounds(max_tokens=512, max_chars=100_000, max_seconds=300.0)   the defaults

`max_tokens` is asked of the model (the server, or llama.cpp, stops there: finish reason
`length`). The other two are enforced here, by the client, whatever the model does:
a completion longer than `max_chars` characters, or a call (connecting, waiting, reading,
all of it) longer than `max_seconds`, is ended with a ModelError that names the bound and
its option, so the run stops in `model_error`, is saved, and replays to the same end.
A runaway stream therefore costs at most `max_chars` characters of memory and
`max_seconds` of waiting, not a per-read timeout that a server dripping one byte a second
resets forever.

Chosen over a new stop reason: a bound that is hit means the model did not answer in
time or in size; the completion read so far is not kept (it is the part of a reply that
never ended), and the detail says which bound and how to raise it.
"""

from __future__ import annotations

from dataclasses import dataclass
import time

from harness.model import ModelError


@dataclass(frozen=True, slots=True)
class Bounds:
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
