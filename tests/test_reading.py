"""The one reader of a streaming completion (harness.reading): the stop scanner, then the
Governor, for every dialect.

The rule under test: for any completion and any dialect, how the stream is cut into
chunks changes nothing a user sees: the same text reaches them, and the run leaves the
same transcript and the same record.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.dialects import DefaultDialect, GovernedDialect, ReactPaperDialect
from harness.limits import Limits
from harness.loop import Setup, run
from harness.model import EndingModel, ModelError, ModelExhausted, TokenUsage
from harness.tools import Registry, calculator, canned
from harness.saved import load_record
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


class Chunked:
    """A script cut into chunks of the given sizes in turn, a TokenUsage at the end of each
    (any object with `stream` is a model)."""

    def __init__(self, completions, sizes, count=False):
        self.left, self.sizes, self.count = list(completions), sizes or [1], count

    def stream(self, prompt, stop):
        if not self.left:
            raise ModelExhausted("done")
        text, out, i, k = self.left.pop(0), [], 0, 0
        while i < len(text):
            size = self.sizes[k % len(self.sizes)]
            out.append(text[i : i + size])
            i, k = i + size, k + 1
        return iter(out + ([TokenUsage(len(prompt), None, len(text))] if self.count else []))


def ran(dialect, completions, sizes, count=False, peek=0, interrupt=None):
    """(what reached the user per step, the saved transcript) of a run of `completions`."""
    buffer = Transcript()
    buffer.append(Author.DEVELOPER, "Question: echo\n")
    setup = Setup(buffer, dialect, TOOLS, Limits(max_steps=6), peek=peek)
    model = Chunked(completions, sizes, count)
    if interrupt is not None:
        model = EndingModel(model, interrupt[0], at=interrupt[1])
    shown, events = [], []
    record = run(setup, model, events.append)
    for event in events:
        if type(event).__name__ == "RoundStarted":
            shown.append("")
        elif type(event).__name__ == "TextDelta":
            shown[-1] += event.text
    return shown, record.saved


def whole(completions):
    return [max(1, len(c)) for c in completions]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    completions=replies,
    sizes=st.lists(st.integers(1, 9), max_size=8),
    which=st.integers(0, 1),
    count=st.booleans(),
    peek=st.sampled_from([0, 3, -1]),
)
def test_any_chunking_shows_the_same_text_and_leaves_the_same_record(completions, sizes, which, count, peek):
    count = count and peek != 3  # (a peek of N ends the read where N are read: counts sent after may not be)
    chunked = ran(DIALECTS[which], completions, sizes, count, peek)
    in_one = ran(DIALECTS[which], completions, [10_000], count, peek)
    assert chunked == in_one


@settings(max_examples=300)
@given(completions=replies, sizes=st.lists(st.integers(1, 9), max_size=8), which=st.integers(0, 2), step=st.integers(1, 4), at=st.integers(0, 60))
def test_a_ctrl_c_leaves_the_same_record_for_any_chunking(completions, sizes, which, step, at):
    """A Ctrl-C after `at` characters of call `step` (as a recording's is replayed) is saved
    the same however the reply was chunked: a replay nobody watches reads each turn whole."""
    chunked = ran(DIALECTS[which], completions, sizes, interrupt=(step, at))[1]
    assert chunked == ran(DIALECTS[which], completions, [10_000], interrupt=(step, at))[1]


@settings(max_examples=200)
@given(completions=replies, sizes=st.lists(st.integers(1, 9), max_size=8))
def test_a_required_prefix_decides_the_same_for_any_chunking(completions, sizes):
    """governed: a reply that does not begin with `Thought:` is stopped once its first 8
    characters are read, and only those are quoted and recorded, however it was chunked (a
    live model's chunks and a replay's differ: the cassette must still match)."""
    assert ran(GovernedDialect(), completions, sizes) == ran(GovernedDialect(), completions, [10_000])


@pytest.mark.parametrize("at", [0, 3, 9, 20, 31])
def test_a_ctrl_c_keeps_what_the_user_saw_of_the_reply(at):
    script = ["Thought: step 1\nAction: search(x)\n", "Thought: go on\nAction: calculator(2 + 2)\n"]
    shown, saved = ran(DefaultDialect(), script, [4], interrupt=(2, at))
    record = load_record(saved)
    assert record.stop_reason == "canceled" and record.steps == 2
    assert record.transcript.texts_by(Author.MODEL)[-1] == shown[-1] == script[1][: len(shown[-1])]


def test_a_failure_while_peeking_past_the_stop_keeps_the_reply():
    """--peek reads on past the stop only to show what it prevented: a stream that breaks
    there ends the peek, and the reply, whole by then, stands."""

    class Breaks:
        def __init__(self):
            self.calls = 0

        def stream(self, prompt, stop):
            self.calls += 1
            return self.broken() if self.calls == 1 else iter(["Final Answer: 4\n"])

        def broken(self):
            yield "Action: calculator(2 + 2)\nObservation: 5"
            raise ModelError("the connection broke")

    buffer = Transcript()
    buffer.append(Author.DEVELOPER, "Question: 2 + 2?\n")
    record = run(Setup(buffer, DefaultDialect(), TOOLS, peek=20), Breaks())
    assert (record.stop_reason, record.final_answer) == ("final_answer", "4")
    assert record.calls[0].cut == "Observation: 5"
