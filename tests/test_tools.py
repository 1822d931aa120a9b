"""Tools: the calculator walks the syntax tree; canned tools answer per argument."""

from __future__ import annotations

import pytest

from harness.tools import Registry, ToolError, calculate, calculator, canned


@pytest.mark.parametrize(
    ("expression", "result"),
    [("2 + 3 * 4", "14"), ("(2 + 3) * 4", "20"), ("2350 * 0.17", "399.5"), ("7 // 2", "3"), ("-2 ** 2", "-4"), ("2 ** 10", "1024"),
     # `^` as models write a power, with a power's precedence (Python's XOR would give 12 ^ 9 ^ 3)
     ("12^2 + 7^3", "487"), ("2^3^2", "512")],
)
def test_calculator_does_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('echo hi')", "only numbers"),
        ("open('/etc/passwd')", "only numbers"),
        ("9 ** 9 ** 9", "too large"),
        ("9 ^ 9 ^ 9", "too large"),
        ("2^^3", "'2\\^\\^3' is not an arithmetic expression"),  # quoted as written, not as rewritten
        ("1e308 * 10", "too large"),
        ("1 / 0", "division by zero"),
        ("2 +", "not an arithmetic expression"),
        ("x + 1", "only numbers"),
        ("(" * 210 + "1" + ")" * 210, "not an arithmetic expression"),
        ("1 + " * 200 + "1", "longer than 500 characters"),
    ],
)
def test_calculator_refuses_anything_but_arithmetic(expression, message):
    with pytest.raises(ToolError, match=message):
        calculate(expression)


def test_a_tool_error_or_bad_arguments_become_an_observation():
    tools = Registry([calculator(), canned("check_quota", "Quota", {"nimbus": "99.8 GB"}, ("account",))])
    assert tools.run("calculator", ("1/0",), {}) == ("Error: division by zero", False)
    text, ok = tools.run("calculator", ("1", "2"), {})
    assert not ok and text.startswith("Error: calculator(expression) was called with bad arguments")
    assert tools.run("check_quota", ("nimbus",), {}) == ("99.8 GB", True)
    text, ok = tools.run("check_quota", ("orbit",), {})
    assert not ok and 'no result for "orbit"' in text and 'check_quota("nimbus")' in text


def test_the_prompt_tool_list_is_rendered_from_the_registry():
    tools = Registry([calculator(), canned("Search", "find an article", {}, ("entity",))])
    assert tools.render(lambda name, params: f"{name}[{', '.join(params)}]") == (
        "- calculator[expression]: Evaluate an arithmetic expression (example: calculator[(2 + 3) * 4])\n- Search[entity]: find an article"
    )


@pytest.mark.parametrize(
    ("returned", "observation", "ok"),
    [
        (["a", 1], '["a", 1]', True),  # JSON, as the finish tool writes a list
        ({"b": "é"}, '{"b": "é"}', True),
        (7, "7", True),
        (None, "None", True),
        ({"a": [1, 2, object()]}, "Error: it returned dict holding something that is not JSON, which is not text", False),
        (object(), "Error: it returned object (an object), which is not text", False),
    ],
    ids=["list", "dict", "int", "none", "dict-of-an-object", "object"],
)
def test_what_a_python_tool_returns_is_text_that_replays_never_a_repr_with_an_address(returned, observation, ok):
    from harness.tools import from_function

    def lookup(key):
        """Look it up."""
        return returned

    result, passed = Registry([from_function(lookup)]).run("lookup", ("k",), {})
    assert result.startswith(observation) and passed is ok
    assert " at 0x" not in result


def test_a_users_tool_has_its_prints_caught_and_harnesss_own_tools_answer_as_they_are():
    from harness.tools import from_function

    def shout(text):
        """Say it loudly."""
        print("loud")
        return text

    tools = Registry([from_function(shout), calculator(), canned("quota", "Look it up", {"nimbus": "99%"})])
    assert tools.run("shout", ("hi",), {}) == ("loud\nhi", True)
    assert tools.run("calculator", ("1 + 2",), {}) == ("3", True)
    assert tools.run("quota", ("nimbus",), {}) == ("99%", True)


def test_a_python_tool_s_defaults_are_in_the_tool_list_the_model_reads():
    """The model is told which arguments it may leave out (issue 31, item 15); a default
    whose repr would change from run to run (an object's address) is shown as `…`."""
    from harness.dialects import get_dialect
    from harness.tools import from_function

    def late_fee(days, daily=0.25, *, currency="EUR", note=None, clock=object(), **rest):
        """The fee for a late book."""
        return str(days * daily)

    tools = Registry([from_function(late_fee)])
    shown = "late_fee(days, daily=0.25, currency='EUR', note=None, clock=…, rest)"
    assert tools.render(get_dialect("default").signature) == f"- {shown}: The fee for a late book."
    assert tools.render(get_dialect("react-paper").signature).startswith("- late_fee[days, daily=0.25, currency='EUR'")
    result, ok = tools.run("late_fee", (), {})  # and the hint for a bad call names them too
    assert not ok and f"{shown} was called with bad arguments" in result
