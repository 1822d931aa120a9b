"""The usual reply's quick read (harness.reading._usual) against the Governor's.

The rule under test: for any completion, any chunking and any dialect, a run gives the
same events (every TextDelta, chunk by chunk), the same transcript and the same record
whether the quick read takes the usual replies or the Governor reads every reply.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import reading
from harness.dialects import DefaultDialect, GovernedDialect, ReactPaperDialect
from harness.limits import Limits
from harness.loop import Setup, run
from harness.model import InterruptedModel, ScriptedModel, TokenUsage
from harness.tools import Registry, calculator, canned
from harness.transcript import Author, Transcript

TOOLS = Registry(
    [
        calculator(),
        canned("search", "find", {"x": "found x"}, default="found", trait="exploration"),
        canned("render", "draw", {}, default="drawn", trait="exploitation"),
    ]
)
DIALECTS = [DefaultDialect(), ReactPaperDialect(), GovernedDialect()]

line = st.sampled_from(
    [
        "Thought: look it up",
        "Thought: step 12",
        "Thought",  # governed's prefix, not yet whole
        "Action: search(x)",
        "Action: calculator(1 + 2)",
        "Action: render(chart)",
        "Action: nope(1)",
        "Action: search(unclosed",
        "Action: calculator(2)\r",
        "Actions speak",
        "Act",
        "Final Answer: 42",
        "Observation: invented",
        "Observation 1: invented",
        "Action 1: search[x]",
        "Action 1: calculator[3 * 4]",
        "Action 2: Finish[done]",
        "",
        " \t  ",
        " step 3",  # react-paper's reply goes on from the cue `Thought 3:`
        "  Act",
        "\t   Action: calculator(2)",
        "<|im_end|> [INST]",
    ]
)
reply = st.lists(line, max_size=5).map("\n".join) | st.lists(line, max_size=5).map(lambda ls: "\n".join(ls) + "\n")
replies = st.lists(reply | st.text(alphabet=st.sampled_from("AFTO:ac ()[]\n\r1"), max_size=24), min_size=1, max_size=4)


class Chunked(ScriptedModel):
    """A script cut into chunks of the given sizes in turn, a TokenUsage at the end of each."""

    def __init__(self, completions, sizes, count):
        super().__init__(completions)
        self.sizes, self.count = sizes or [1], count

    def stream(self, prompt, stop):
        if len(self._sent) == len(self.completions):
            from harness.model import ModelExhausted

            raise ModelExhausted("done")
        self._sent.append((len(prompt), tuple(stop)))
        text, out, i, k = self.completions[len(self._sent) - 1], [], 0, 0
        while i < len(text):
            size = self.sizes[k % len(self.sizes)]
            out.append(text[i : i + size])
            i, k = i + size, k + 1
        return iter(out + ([TokenUsage(len(prompt), None, len(text))] if self.count else []))


def both_ways(monkeypatch, dialect, completions, sizes, count, peek, interrupt=None):
    """(events, saved transcript) with the quick read, then with the Governor alone."""
    out = []
    for quick in (True, False):
        with monkeypatch.context() as m:
            if not quick:
                m.setattr(reading, "_usual", lambda chunks, scanner, setup, emit: reading._Handover([], "", False, None, None))
            buffer = Transcript()
            buffer.append(Author.DEVELOPER, "Question: echo\n")
            setup = Setup(buffer, dialect, TOOLS, Limits(max_steps=6), peek=peek)
            model = Chunked(completions, sizes, count)
            if interrupt is not None:
                model = InterruptedModel(model, *interrupt)
            events = []
            record = run(setup, model, events.append)
            out.append((events, record.saved))
    return out


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    completions=replies,
    sizes=st.lists(st.integers(1, 9), max_size=8),
    which=st.integers(0, 2),
    count=st.booleans(),
    peek=st.sampled_from([0, 3, -1]),
)
def test_the_quick_read_gives_the_same_events_and_transcript_as_the_governor(monkeypatch, completions, sizes, which, count, peek):
    quick, general = both_ways(monkeypatch, DIALECTS[which], completions, sizes, count, peek)
    assert quick == general


@pytest.mark.parametrize("at", [0, 3, 9, 20, 31])
def test_a_ctrl_c_keeps_the_same_text_either_way(monkeypatch, at):
    script = ["Thought: step 1\nAction: search(x)\n", "Thought: go on\nAction: calculator(2 + 2)\n"]
    quick, general = both_ways(monkeypatch, DefaultDialect(), script, [4], False, 0, interrupt=(2, at))
    assert quick == general
    assert "stop_reason: \"canceled\"" in quick[1]


def test_the_usual_reply_is_read_without_the_governor(monkeypatch):
    """The quick read does take the benchmark's reply (else the figures measure nothing new)."""
    handed = []
    real = reading._usual

    def spy(chunks, scanner, setup, emit):
        done = real(chunks, scanner, setup, emit)
        handed.append(type(done) is reading._Handover)
        return done

    monkeypatch.setattr(reading, "_usual", spy)
    both_ways(monkeypatch, DefaultDialect(), ["Thought: step 1\nAction: search(x)\n", "Final Answer: x"], [8], False, 0)
    assert handed[:2] == [False, True]  # the step is read quickly; the final answer is the Governor's
