"""Parsing completions: awkward spellings, hostile text, and what must never be swallowed."""

from __future__ import annotations

import time

import pytest

from harness.dialects import DefaultDialect, ReactPaperDialect, parse_args
from harness.governor import read

default = DefaultDialect()
paper = ReactPaperDialect()


def first_action(completion: str, dialect=default):
    decided = read(dialect, completion)
    assert decided.actions, decided.rejections
    return decided.actions[0][1]


def codes(completion: str, dialect=default) -> list[str]:
    return [r.code for r in read(dialect, completion).rejections]


@pytest.mark.parametrize(
    ("completion", "tool", "args", "kwargs"),
    [
        ("Action: check_quota(nimbus)", "check_quota", ("nimbus",), {}),
        ("   Action:    check_quota (  nimbus  )   ", "check_quota", ("nimbus",), {}),
        ("Thought: x\r\nAction: check_quota(nimbus)\r\n", "check_quota", ("nimbus",), {}),
        ('Action: lookup({"q": "f(x)", "n": [1, 2]})', "lookup", (), {"q": "f(x)", "n": [1, 2]}),
        ("Action: calculator((2 + 3) * (4 - 1))", "calculator", ("(2 + 3) * (4 - 1)",), {}),
        ('Action: write_file("a.py", "x = 1")', "write_file", ("a.py", "x = 1"), {}),
        ("Action: now()", "now", (), {}),
        ('Action: search("Nimbus")', "search", ("Nimbus",), {}),
    ],
)
def test_action_lines_parse_to_tool_and_arguments(completion, tool, args, kwargs):
    action = first_action(completion)
    assert (action.tool, action.args, action.kwargs) == (tool, args, kwargs)


def test_only_the_first_of_two_action_lines_runs_and_the_model_is_told():
    decided = read(default, "Action: a(1)\nAction: b(2)\n")
    assert [(n, a.tool) for n, a in decided.actions] == [(1, "a")]
    assert [(r.code, r.index, r.tool) for r in decided.rejections] == [("protocol_violation.too_many_actions", 2, "b")]


def test_a_final_answer_ends_the_run_even_after_an_action_line_as_in_the_seed():
    decided = read(default, "Action: check_quota(nimbus)\nFinal Answer: it is full\n")
    assert decided.answer == "it is full"


def test_a_hallucinated_observation_after_the_action_is_never_part_of_the_arguments():
    assert first_action("Action: check_quota(nimbus)\nObservation: quota fine)\n").args == ("nimbus",)
    # Without its closing parenthesis on the same line, the action is not taken at all.
    assert codes("Action: check_quota(nimbus\nObservation: fine)\n") == ["protocol_violation.tool_call_invalid"]


def test_final_answer_must_start_a_line():
    assert codes("Thought: I will give the Final Answer: later\n") == ["protocol_violation.no_action"]
    assert read(default, "  Final Answer:  42  \n").answer == "42"


def test_a_malformed_action_line_gets_its_own_rule_in_the_notice():
    assert codes("Action check_quota nimbus") == ["protocol_violation.tool_call_invalid"]
    assert codes("Action: check quota") == ["protocol_violation.tool_call_invalid"]
    assert codes("I think so.") == ["protocol_violation.no_action"]
    assert codes("Actions speak louder.") == ["protocol_violation.no_action"]  # a thought, not an action


@pytest.mark.parametrize(
    "hostile",
    [
        "Action: x(" + "(" * 100_000,
        "Action: x(" + "a" * 1_000_000 + ")",  # longer than the 100,000-character bound
        "Action:" + " \t" * 200_000 + "x",
        "\n" * 200_000 + "Action: ",
        "Final Answer" * 100_000,
    ],
)
def test_hostile_completions_are_refused(hostile):
    # The patterns are anchored and bounded: an over-long or unclosed Action line is no action.
    decided = read(default, hostile)
    assert not decided.actions and decided.answer is None
    assert [r.code for r in decided.rejections] in (["protocol_violation.tool_call_invalid"], ["protocol_violation.no_action"])


def test_deeply_nested_json_arguments_fall_back_to_text():
    assert parse_args("[" * 3000) == (("[" * 3000,), {})


def test_react_paper_numbered_actions_and_finish():
    action = first_action(" I should look.\nAction 1: Search[Eiffel Tower]", paper)
    assert (action.tool, action.args) == ("Search", ("Eiffel Tower",))
    assert read(paper, " Done.\nAction 3: Finish[the Seine]").answer == "the Seine"
    assert paper.stops(2) == ("\nObservation 2:",)
    assert paper.cue(2) == "Thought 2:"
    assert codes("Action 1: Search(Paris)", paper) == ["protocol_violation.tool_call_invalid"]


from harness.dialects import DIALECTS  # noqa: E402


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_each_dialects_patterns_take_time_linear_in_a_hostile_line(name):
    # They run without a timeout, so each must be linear: a pattern that backtracks (a
    # nested repeat, say) takes minutes on one of these lines, each 600,000 characters.
    n = 200_000
    lines = ["Action: f(" + ") \t" * n + "x", "Action 1: f[" + "] \t" * n + "x", "Action:" + " \t" * n + "x", " \t" * n + "Action"]
    lines += ["Action" + " " * n + "x", "Action" + "\t" * n + "1:", "Action 1" + " " * n + "x"]  # blanks around an optional number
    dialect, start = DIALECTS[name](), time.perf_counter()
    for line in lines:
        assert (dialect.read_action(line), dialect.read_tool(line)) == (None, None)
        dialect.loose_call(line)
    assert time.perf_counter() - start < 10  # a guard, not a speed claim: about 0.1 s here


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_each_shipped_dialects_action_pattern_has_the_groups_tool_then_args(name):
    action = DIALECTS[name]._action
    assert (action.groups, dict(action.groupindex)) == (2, {"tool": 1, "args": 2})


def test_a_users_dialect_whose_action_pattern_lacks_the_groups_is_refused_as_it_is_made():
    import regex

    with pytest.raises(TypeError, match="must have exactly the groups"):

        class Mine(DefaultDialect):
            _action = regex.compile(r"^Do: (?P<args>.*)$")
