"""Memory grows with the buffer, not with the steps times the buffer.

Every prompt the model is sent is a prefix of the final buffer, so nothing needs a copy
of one: ScriptedModel keeps each prompt's length, and `text[:n]` gives the prompt back.
A model or a loop that kept every prompt would hold about steps/2 buffers: at 2,000
steps, a thousand times the final buffer. These tests measure allocations with
tracemalloc and assert memory, never time.
"""

from __future__ import annotations

import hashlib
import tracemalloc

from harness.dialects import DefaultDialect
from harness.limits import Limits
from harness.loop import Setup, run
from harness.model import Model, ScriptedModel
from harness.tools import Registry, from_function
from harness.transcript import Author, Transcript


def echo(text):
    """Say it back."""
    return str(text)


def script(steps: int) -> list[str]:
    return [f"Thought: step {i}\nAction: echo({i})\n" for i in range(1, steps + 1)] + ["Final Answer: done\n"]


def setup(steps: int) -> Setup:
    buffer = Transcript()
    buffer.append(Author.DEVELOPER, "Question: echo the numbers back.\n")
    return Setup(buffer, DefaultDialect(), Registry([from_function(echo)]), Limits(max_steps=steps + 1))


def peak_of_run(steps: int) -> tuple[int, int]:
    """(peak bytes allocated during the run, final buffer characters)."""
    completions, rules = script(steps), setup(steps)  # the inputs are made before measuring
    model = ScriptedModel(completions)
    tracemalloc.start()
    try:
        record = run(rules, model)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert record.steps == steps + 1
    return peak, len(record.transcript.text)


def test_memory_at_2000_steps_is_a_small_multiple_of_the_buffer():
    peak, chars = peak_of_run(2_000)
    # The buffer itself, one small record per call, the spans' offsets: about 10x the
    # buffer's characters. Keeping every prompt would be about 1,000x.
    assert peak <= 20 * chars, f"peak {peak:,} bytes for a buffer of {chars:,} characters"


def test_memory_grows_linearly_with_the_steps():
    small, _ = peak_of_run(1_000)
    large, _ = peak_of_run(2_000)
    assert large <= 2.5 * small, f"1,000 steps: {small:,} bytes; 2,000 steps: {large:,} (copies of prompts grow 4x)"


def test_each_prompt_is_the_buffer_up_to_its_length():
    class Fingerprinting(ScriptedModel):
        """Notes a digest of each prompt it is sent (not the prompt: that is the point)."""

        def __init__(self, completions):
            super().__init__(completions)
            self.digests: list[str] = []

        def send(self, buffer, stop):  # a script that reads the prompt's text: Model's send
            return Model.send(self, buffer, stop)

        def stream(self, prompt, stop):
            self.digests.append(hashlib.sha256(prompt.encode()).hexdigest())
            return super().stream(prompt, stop)

    model = Fingerprinting(script(50))
    record = run(setup(50), model)
    text = record.transcript.text
    assert len(model.calls) == len(model.digests) == 51
    for chars, digest in zip(model.calls, model.digests):
        assert hashlib.sha256(text[:chars].encode()).hexdigest() == digest


def test_a_scripted_run_does_not_join_the_buffer_for_every_call(monkeypatch):
    """The script reads only a prompt's length: the loop sends it the Transcript, so a run of
    N steps costs what its new text costs, not N copies of a growing buffer (whoever else
    holds the text: the old in-place trick of CPython's string concatenation did not hold
    once anything kept a reference)."""
    joins = []
    text = Transcript.text.fget
    monkeypatch.setattr(Transcript, "text", property(lambda self: joins.append(1) or text(self)))
    record = run(setup(1_000), ScriptedModel(script(1_000)))
    assert record.steps == 1_001
    assert len(joins) <= 3, f"the buffer was joined {len(joins)} times in 1,001 calls"


def test_a_scripted_run_in_a_batch_is_sent_the_buffer_too(monkeypatch):
    """A batch wraps each model to cancel it on Ctrl-C; the wrapper passes the buffer on."""
    import threading

    from harness.batch import Cancelable

    joins = []
    text = Transcript.text.fget
    monkeypatch.setattr(Transcript, "text", property(lambda self: joins.append(1) or text(self)))
    record = run(setup(1_000), Cancelable(ScriptedModel(script(1_000)), threading.Event()))
    assert record.steps == 1_001
    assert len(joins) <= 3, f"the buffer was joined {len(joins)} times in 1,001 calls"
