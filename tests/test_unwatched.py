"""A scripted run nobody watches reads a long completion in big chunks (ScriptedModel
watched=False): the run, its record and its saved transcript are the same as when watched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model import ScriptedModel
from harness.record import run_scenario
from harness.scenario import Scenario, ToolSpec

_LINES = [
    "Thought: go",
    "Action: calculator(1)",
    "Action: calculator 1",
    "Action: calculator(1) + 2",
    "Action: nope(2)",
    "Action: calculator(",
    "Action 1: Finish[done]",
    "Action 2: calculator[3]",
    "Final Answer: done",
    "Observation: made up",
    "   ",
    "\tAction: calculator(2)",
    "",
    "Thought:",
    "Actions speak",
]


@st.composite
def completions(draw) -> str:
    """A completion short or longer than the 4,096 characters a ScriptedModel starts with by
    default (a scenario's run starts with its prefix's length only), its lines drawn from
    every kind the reader tells apart, placed before and after those points."""
    lines = draw(st.lists(st.sampled_from(_LINES) | st.integers(1, 9_000).map(lambda n: "x" * n), min_size=1, max_size=12))
    text = "\n".join(lines)
    if len(text) <= 4_096 and draw(st.booleans()):
        text = "Thought: " + "y" * draw(st.integers(4_096 - len(text), 6_000)) + "\n" + text
    return text + draw(st.sampled_from(["", "\n", "\nFinal Answer: late\n"]))


def no_op(event) -> None:
    """A listener: the run is watched, every chunk as the scenario cuts it."""


@settings(max_examples=60)
@given(
    st.lists(completions(), min_size=1, max_size=2),
    st.sampled_from(["default", "react-paper", "governed"]),
    st.sampled_from([1, 3, 8, 100, 5_000]),
    st.booleans(),
    st.none() | st.tuples(st.integers(1, 2), st.integers(0, 20_000)),
)
def test_an_unwatched_run_is_the_same_run(texts, dialect, chunk_size, use_stop, interrupt):
    scenario = Scenario(
        question="q",
        completions=tuple(texts),
        dialect=dialect,
        tools=(ToolSpec("calculator"),),
        chunk_size=chunk_size,
        use_stop=use_stop,
        interrupt=interrupt,
        max_steps=2,
    )
    watched, unwatched = run_scenario(scenario, no_op), run_scenario(scenario)
    assert unwatched == watched
    assert unwatched.saved == watched.saved


def test_unwatched_a_long_completion_comes_in_big_chunks_after_its_start():
    text = "Thought: " + "x" * 200_000 + "\nFinal Answer: done\n"
    chunks = list(ScriptedModel([text], 8, watched=False).stream("", ()))
    assert "".join(chunks) == text
    assert {len(c) for c in chunks[:512]} == {8} and len(chunks) < 512 + 5
    watched = list(ScriptedModel([text], 8).stream("", ()))
    assert len(watched) == -(-len(text) // 8)  # watched, every chunk as the scenario cuts it


def test_a_scenarios_unwatched_reply_comes_whole_after_its_prefix():
    """Four trips through the reader for a 32-character reply cost more than the reply: a
    scenario's run nobody watches reads its prefix as the scenario cuts it, then the rest."""
    from harness.record import build

    reply = "Thought: step 1\nAction: calculator(1)\n"
    for dialect, first in (("governed", ["Thou", "ght:"]), ("default", [])):
        scenario = Scenario(question="q", completions=(reply,), dialect=dialect, tools=(ToolSpec("calculator"),), chunk_size=4)
        chunks = list(build(scenario, watched=False).model.stream("", ()))
        assert chunks == first + [reply[len("".join(first)) :]]
        assert list(build(scenario).model.stream("", ())) == [reply[i : i + 4] for i in range(0, len(reply), 4)]
