"""Parsing completions: awkward spellings, hostile text, and what must never be swallowed."""

from __future__ import annotations

import time

import pytest

from harness.dialects import Action, DefaultDialect, FinalAnswer, NoAction, ReactPaperDialect, parse_args

default = DefaultDialect()
paper = ReactPaperDialect()


@pytest.mark.parametrize(
    ("completion", "tool", "args", "kwargs"),
    [
        ("Action: check_quota(nimbus)", "check_quota", ("nimbus",), {}),
        ("   Action:    check_quota (  nimbus  )   ", "check_quota", ("nimbus",), {}),
        ("Thought: x\r\nAction: check_quota(nimbus)\r\n", "check_quota", ("nimbus",), {}),
        ('Action: lookup({"q": "f(x)", "n": [1, (2)]})'.replace("(2)", "2"), "lookup", (), {"q": "f(x)", "n": [1, 2]}),
        ("Action: calculator((2 + 3) * (4 - 1))", "calculator", ("(2 + 3) * (4 - 1)",), {}),
        ('Action: write_file("a.py", "x = 1")', "write_file", ("a.py", "x = 1"), {}),
        ("Action: now()", "now", (), {}),
        ('Action: search("Nimbus")', "search", ("Nimbus",), {}),
    ],
)
def test_action_lines_parse_to_tool_and_arguments(completion, tool, args, kwargs):
    decision = default.parse(completion)
    assert isinstance(decision, Action)
    assert (decision.tool, decision.args, decision.kwargs) == (tool, args, kwargs)


def test_only_the_first_of_two_action_lines_counts():
    decision = default.parse("Action: a(1)\nAction: b(2)\n")
    assert (decision.tool, decision.args) == ("a", (1,))


def test_a_final_answer_ends_the_run_even_after_an_action_line_as_in_the_seed():
    decision = default.parse("Action: check_quota(nimbus)\nFinal Answer: it is full\n")
    assert decision == FinalAnswer("it is full")


def test_a_hallucinated_observation_after_the_action_is_never_part_of_the_arguments():
    decision = default.parse("Action: check_quota(nimbus)\nObservation: quota fine)\n")
    assert decision.args == ("nimbus",)
    # Without its closing parenthesis on the same line, the action is not taken at all.
    assert isinstance(default.parse("Action: check_quota(nimbus\nObservation: fine)\n"), NoAction)


def test_final_answer_must_start_a_line():
    assert isinstance(default.parse("Thought: I will give the Final Answer: later\n"), NoAction)
    assert default.parse("  Final Answer:  42  \n") == FinalAnswer("42")


def test_a_malformed_action_line_gets_its_own_rule_in_the_notice():
    assert default.parse("Action check_quota nimbus").rule.startswith("The Action line does not read")
    assert default.parse("Action: check quota").rule.startswith("The Action line does not read")
    assert default.parse("I think so.").rule.startswith("The reply has no Action line")


@pytest.mark.parametrize(
    "hostile",
    [
        "Action: x(" + "(" * 100_000,
        "Action: x(" + "a" * 1_000_000 + ")",  # longer than the 4000-character bound
        "Action:" + " \t" * 200_000 + "x",
        "\n" * 200_000 + "Action: ",
        "Final Answer" * 100_000,
    ],
)
def test_hostile_completions_are_refused_quickly(hostile):
    start = time.perf_counter()
    decision = default.parse(hostile)
    assert isinstance(decision, NoAction)
    assert time.perf_counter() - start < 5  # a guard against catastrophic backtracking, not a benchmark


def test_deeply_nested_json_arguments_fall_back_to_text():
    assert parse_args("[" * 3000) == (("[" * 3000,), {})


def test_react_paper_numbered_actions_and_finish():
    decision = paper.parse(" I should look.\nAction 1: Search[Eiffel Tower]")
    assert (decision.tool, decision.args) == ("Search", ("Eiffel Tower",))
    assert paper.parse(" Done.\nAction 3: Finish[the Seine]") == FinalAnswer("the Seine")
    assert paper.stops(2) == ("\nObservation 2:",)
    assert paper.cue(2) == "Thought 2:"
    assert isinstance(paper.parse("Action 1: Search(Paris)"), NoAction)
