"""Lanes and gates: what the user sees while a completion streams, and what runs.

The rule under test: for any completion and any chunking, the live decisions (what was
shown, what was cut, which actions run, the answer) equal the decisions on the whole text.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.dialects import DefaultDialect, GovernedDialect, ReactPaperDialect
from harness.events import CompletionEnded, TextDelta
from harness.governor import Governor, read
from harness.loop import Setup, Writer, complete
from harness.model import as_model
from harness.transcript import Transcript
from harness.tools import Registry, calculator, canned
from harness.judge import answer_may_open, compatible
from tests.test_stop import cut_at_stop

TOOLS = Registry(
    [
        calculator(),  # neutral
        canned("search", "find", {}, default="found", trait="exploration"),
        canned("render", "draw", {}, default="drawn", trait="exploitation"),
        canned("mystery", "?", {}, default="?", trait="unknown"),
    ]
)
DIALECTS = [DefaultDialect(), GovernedDialect(), ReactPaperDialect()]


def streamed(dialect, text: str, sizes: list[int]):
    """Feed `text` through stop scanner and governor in chunks, as the loop does."""
    chunks, i = [], 0
    for size in sizes + [len(text) + 1]:
        if i >= len(text):
            break
        chunks.append(text[i : i + size])
        i += size

    class Chunked:
        def stream(self, prompt, stop):
            return iter(chunks)

    deltas = []
    setup, model = Setup(Transcript(), dialect, TOOLS), as_model(Chunked())
    reply = complete(model, 1, setup, Writer(setup, model, deltas.append))
    ended = CompletionEnded(1, reply.text, reply.cut, reply.cut_by, reply.decided)
    return ended, "".join(d.text for d in deltas if isinstance(d, TextDelta))


line = st.sampled_from(
    [
        "Thought: look it up",
        "Thought: Final Answer: not at the start",
        "Action: search(x)",
        "Action: calculator(1 + 2)",
        "Action: render(chart)",
        "Action: mystery()",
        "Action: nope(1)",
        "Action: search(unclosed",
        "Action search x",
        "  Action:   calculator( 2 )  \r",
        "Actions speak",
        "Final Answer: 42",
        "Final Answer:",
        "Observation: invented",
        "Observation 1: invented",
        "Action 1: Search[x]",
        "Action 2: Finish[done]",
        "",
        "```",
        " \t  ",
        "    \t Final Answer: after blanks",
        "\t   Action: calculator(2)",
    ]
)
completion = st.lists(line, max_size=7).map("\n".join) | st.text(alphabet=st.sampled_from("AFTO:ac ()\n\r"), max_size=30)


@settings(max_examples=500)
@given(text=completion, sizes=st.lists(st.integers(1, 9), max_size=60), which=st.integers(0, 2))
def test_any_chunking_decides_exactly_as_the_whole_text(text, sizes, which):
    dialect = DIALECTS[which]
    ended, shown = streamed(dialect, text, sizes)
    kept, _ = cut_at_stop(text, dialect.stops(1))
    decided_whole = read(dialect, kept, TOOLS)
    live = ended.round
    if live.prefix_rejected:  # the read stopped early; the whole text is rejected just the same
        assert decided_whole.prefix_rejected and live.shown == "" and shown == ""
        assert [r.code for r in live.rejections] == [r.code for r in decided_whole.rejections]
        return
    assert live == decided_whole
    assert shown == live.shown
    assert ended.text == kept


@pytest.mark.parametrize(
    ("line", "accepted"),
    [
        ("Action: calculator(1 + 2)", True),
        ("Action:calculator(1 + 2)", True),
        ("   Action:   calculator (1 + 2)   ", True),
        ("Action: calculator(1 + 2)\r", True),  # CRLF: the \r stays in the buffer, the action runs
        ("\tAction: calculator(1 + 2)", True),
        ("action: calculator(1 + 2)", False),  # the keyword is case-sensitive
        ("Action : calculator(1 + 2)", False),
        ("Action: `calculator(1 + 2)`", False),  # inline code fence
        ("`Action: calculator(1 + 2)`", False),
        ("- Action: calculator(1 + 2)", False),
        ("Action: calculator 1 + 2", False),
        ("Action: calculator(1 + 2) and more", False),
    ],
)
def test_action_line_spellings_get_the_same_answer_live_and_whole(line, accepted):
    for wrap in (f"Thought: go\n{line}\n", f"Thought: go\n```\n{line}\n```\n"):  # also inside a code fence
        for sizes in ([1] * 200, [3, 1, 4, 1, 5, 9, 2, 6] * 20, [10_000]):
            ended, _ = streamed(DefaultDialect(), wrap, sizes)
            whole_round = read(DefaultDialect(), wrap, TOOLS)
            assert ended.round == whole_round
            assert bool(whole_round.actions) == accepted, (line, whole_round.rejections)


def test_a_pending_action_line_is_shown_only_once_it_is_judged():
    governor = Governor(DefaultDialect(), TOOLS)
    assert governor.feed("Thought: add\nAction: calcul") == "Thought: add\n"
    assert governor.feed("ator(1 + 2)") == ""
    assert governor.feed("\n") == "Action: calculator(1 + 2)\n"


def test_a_denied_lane_shows_nothing_and_counts_zero():
    decided = read(DefaultDialect(), "Thought: hm\nAction: nope(1)\n", TOOLS)
    assert decided.shown == "Thought: hm\n"
    assert [(lane.kind, lane.status, lane.emitted_chars) for lane in decided.lanes] == [
        ("thinking", "allowed", 12),
        ("action", "denied", 0),
    ]


def test_governed_second_action_that_could_read_the_first_is_denied():
    decided = read(GovernedDialect(), "Thought: both\nAction: search(x)\nAction: render(chart)\n", TOOLS)
    assert [a.tool for _, a in decided.actions] == ["search"]
    (rejection,) = decided.rejections
    assert (rejection.code, rejection.index, rejection.tool) == ("gate.incompatible_action", 2, "render")


def test_governed_two_independent_actions_share_a_round():
    decided = read(GovernedDialect(), "Thought: both\nAction: render(a)\nAction: calculator(2)\n", TOOLS)
    assert [(n, a.tool) for n, a in decided.actions] == [(1, "render"), (2, "calculator")]


def test_governed_answer_after_exploration_is_withheld():
    decided = read(GovernedDialect(), "Thought: x\nAction: search(x)\nFinal Answer: 7\n", TOOLS)
    assert decided.answer is None and not decided.answer_streamed
    assert "Final Answer" not in decided.shown
    assert [r.code for r in decided.rejections] == ["gate.answer_withheld"]


def test_governed_answer_after_neutral_action_opens():
    assert read(GovernedDialect(), "Thought: x\nAction: calculator(1)\nFinal Answer: 7\n", TOOLS).answer == "7"


def test_an_action_after_a_streamed_answer_is_rejected_and_the_answer_kept():
    decided = read(GovernedDialect(), "Thought: done\nFinal Answer: 7\nAction: calculator(1)\n", TOOLS)
    assert decided.answer == "7" and decided.answer_streamed
    assert [r.code for r in decided.rejections] == ["protocol_violation.action_after_answer"]
    assert "Action" not in decided.shown


def test_lines_that_cannot_run_are_judged_by_their_tool_alone():
    # Once the reply's one action is taken, each later Action line is refused by what its
    # tool is, and after the final answer by where it stands, with its tool named.
    reply = "Action: calculator(1)\nAction: nope(2)\nAction: calculator 3\nAction: search(4)\nFinal Answer: 5\n"
    decided = read(DefaultDialect(), reply, TOOLS)
    assert [(r.code, r.index, r.tool) for r in decided.rejections] == [
        ("protocol_violation.unknown_tool", 2, "nope"),
        ("protocol_violation.tool_call_invalid", 3, None),
        ("protocol_violation.too_many_actions", 4, "search"),
    ]
    after = read(GovernedDialect(), "Thought: x\nFinal Answer: 7\nAction: calculator(1)\nAction: what\n", TOOLS)
    assert [(r.code, r.index, r.tool) for r in after.rejections] == [
        ("protocol_violation.action_after_answer", 1, "calculator"),
        ("protocol_violation.action_after_answer", 2, None),
    ]
    paper = read(ReactPaperDialect(), "Action 1: calculator[1]\nAction 2: Finish[done]\n", TOOLS)
    assert paper.answer == "done" and not paper.rejections  # Finish is the answer, actions used up or not


def first_line_search(text: str, decided) -> list:
    """What unseen finds, by searching for each lane's first line at a line start from the
    end of the one before (unseen skips the search when the lane begins right there)."""
    out, cursor = [], 0
    for lane in decided.lanes:
        line = lane.text[: lane.text.find("\n") + 1 or len(lane.text)]
        at = text.find(line, cursor)
        while at > 0 and text[at - 1] != "\n":
            at = text.find(line, at + 1)
        if at < 0 or not line:
            continue
        cursor = at + len(line)
        if lane.status != "denied" or (out and at < out[-1][1]):
            continue
        end = len(text) if lane.kind == "answer" else min(len(text), at + len(lane.text))
        out.append((at, end, "answer" if lane.kind == "answer" else "action"))
    return out


@settings(max_examples=300)
@given(text=completion, which=st.integers(0, 2))
def test_what_the_user_did_not_see_is_found_where_a_search_finds_it(text, which):
    from harness.unseen import unseen

    decided = read(DIALECTS[which], text, TOOLS)
    assert list(unseen(text, decided)) == first_line_search(text, decided)


def test_the_prefix_rule_stops_the_read_at_the_end_of_the_line_that_rules_it_out():
    governor = Governor(GovernedDialect(), TOOLS)
    assert governor.feed("Tho") == ""
    assert governor.feed("se are here") == ""  # "Those" cannot become "Thought:", but its line goes on
    assert not governor.prefix_rejected  # the line is read to its end: what is kept is whole lines
    assert governor.feed(", I think.\nThought: no") == ""
    assert governor.prefix_rejected and governor.rejected == "Those are here, I think.\n"  # the line, however chunked
    decided = governor.result()
    assert decided.prefix_rejected and decided.shown == "" and decided.lanes == ()
    assert "began 'Those are here, I think.\\n' and was stopped there" in decided.rejections[0].message


def test_the_prefix_preview_is_bounded():
    decided = read(GovernedDialect(), "Sure! " + "x" * 5000, TOOLS)
    assert decided.prefix_rejected
    assert len(decided.rejections[0].message) < 400


@pytest.mark.parametrize(
    ("first", "second", "ok"),
    [
        ("exploration", "exploitation", False),
        ("exploration", "exploration", False),
        ("exploration", "neutral", True),
        ("exploitation", "exploitation", True),
        ("exploitation", "exploration", True),
        ("neutral", "exploration", True),
        ("unknown", "exploitation", False),
        ("neutral", "unknown", False),
    ],
)
def test_trait_compatibility(first, second, ok):
    assert compatible(first, second) is ok


def test_the_answer_opens_only_after_neutral_actions():
    assert answer_may_open([]) and answer_may_open(["neutral", "neutral"])
    assert not answer_may_open(["neutral", "exploitation"])


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_a_long_run_of_blanks_before_the_marker_is_read_in_linear_work(dialect):
    # 40,000 spaces in 8-character chunks: the line's kind cannot be told until the marker
    # comes, and it used to be re-read from its start at every chunk (quadratic: 400,000
    # spaces took minutes through `harness run`). Count the characters looked at.
    class Counting(type(dialect)):
        looked = 0

        def line_kind(self, line, complete):
            Counting.looked += len(line)
            return super().line_kind(line, complete)

    blanks = " " * 40_000
    answer = "Action 1: Finish[x]" if dialect.name == "react-paper" else "Final Answer: x"
    text = ("Thought: ok\n" if dialect.required_prefix else "") + blanks + answer
    ended, shown = streamed(Counting(), text, [8] * (len(text) // 8 + 1))
    assert ended.round.answer == "x" and shown == text
    assert Counting.looked < 20 * len(text)
