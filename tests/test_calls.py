"""Calls as models write them, and notices a model can act on (issue: real models solve tasks).

Each test plays the completions a real small model was seen to write and asserts what the
model reads next: the observation it needed, or a notice that names the exact fix.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Agent, ScriptedModel
from harness.arguments import parse_args, split_call
from harness.tools import calculator, canned, from_function

PROMPT = "Tools:\n$tools\n\nQuestion: $question\n"
PRICE = canned("price", "The price of one item", {"lamp": "18.50", "chair": "42.00"}, ("item",))
CITIES = canned("population", "People in a city", {"Lyon": "522000", "Porto": "232000"}, ("city",))


def run(*completions: str, tools=(PRICE, calculator()), question="How much do 4 lamps cost?", **limits):
    from harness import Limits

    agent = Agent(PROMPT, tools=list(tools), limits=Limits(**limits) if limits else Limits())
    return agent.run(question, ScriptedModel(list(completions)))


def code_lines(record) -> list[str]:
    """Each line code wrote (its observations and notices), in order."""
    return [line for s in record.transcript.spans if s.author.value == "code" for line in s.text.splitlines(keepends=True)]


# --- 1. arguments as models write them ---------------------------------------------------


@pytest.mark.parametrize(
    "call",
    ["price('lamp')", 'price("lamp")', "price(lamp)", "price(item='lamp')", 'price(item="lamp")',
     "price({\"item\": \"lamp\"})", "price(' Lamp ')", "price(LAMP)"],
)
def test_a_lookup_reaches_its_key_however_the_call_is_written(call):
    record = run(f"Action: {call}\n", "Final Answer: 18.50\n")
    assert code_lines(record)[0] == "Observation: 18.50\n"


def test_python_literals_reach_a_python_tool_as_values():
    seen = []

    def total(prices: list, tax: float = 0.0, label: str = "") -> str:
        """Add up prices."""
        seen.append((prices, tax, label))
        return str(sum(prices) * (1 + tax))

    run("Action: total([1, 2.5], tax=0.5, label='x')\n", "Final Answer: 5.25\n", tools=[total])
    assert seen == [([1, 2.5], 0.5, "x")]


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("'Paris'", (("Paris",), {})),
        ("city='Paris', n=2", ((), {"city": "Paris", "n": 2})),
        ("'a', -1, None, True", (("a", -1, None, True), {})),
        ("2 + 3", (("2 + 3",), {})),  # an expression is text for the calculator, never evaluated
        ("expression=127 * 83", ((), {"expression": "127 * 83"})),  # a keyword's expression: its text
        ("__import__('os').system('x')", (("__import__('os').system('x')",), {})),
        ("'a'), g('b'", (("'a'), g('b'",), {})),  # not one call's arguments: bare text
        ("**{'a': 1}", (("**{'a': 1}",), {})),
        ("1+2j", (("1+2j",), {})),  # only JSON's kinds of value
    ],
)
def test_python_style_arguments_are_read_never_run(raw, parsed):
    assert parse_args(raw) == parsed


def test_hostile_arguments_stay_bounded():
    for raw in ["[" * 10_000 + "]" * 10_000, "'" + "a" * 1_000_000 + "'", "x=" + "(" * 50_000, "'\\" * 100_000]:
        start = time.perf_counter()
        assert parse_args(raw) == ((raw.strip(),), {}) or raw.startswith("'a")  # bare text, or the one string
        assert time.perf_counter() - start < 10  # a guard against a hang, not a speed claim
    record = run("Action: price('" + "a" * 1_000_000 + "')\n", "Final Answer: x\n")
    assert "longer than 100,000 characters" in code_lines(record)[0]
    start = time.perf_counter()
    record = run("Action: price(" + "[" * 10_000 + "]" * 10_000 + ")\n", "Final Answer: x\n")
    assert time.perf_counter() - start < 10 and code_lines(record)[0].startswith("Observation: Error: price has no result")


def read_each_character(rest: str, close: str) -> tuple[str, str] | None:
    """split_call's rule, one character at a time: quotes skip brackets, the first bracket
    that closes at depth 0 ends the call."""
    depth, quote = 0, ""
    for i, ch in enumerate(rest):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == {")": "(", "]": "["}[close]:
            depth += 1
        elif ch == close:
            if depth == 0:
                return rest[:i], rest[i + 1 :]
            depth -= 1
    return None


# Brackets and quotes among runs of plain text, short and long, sparse and dense.
ARGUMENT_TEXT = st.lists(st.sampled_from(["(", ")", "[", "]", "'", '"', "a", " ", "\n", "x" * 40]), max_size=16).map("".join)


@settings(max_examples=1000)
@given(rest=ARGUMENT_TEXT, close=st.sampled_from(")]"))
def test_where_a_call_closes_is_read_as_one_character_at_a_time_reads_it(rest, close):
    # split_call looks no further than the last closing bracket, and passes over long plain
    # text from one bracket or quote to the next: a 100,000-character argument is not a
    # Python loop over its characters. Its answer is the one-character-at-a-time answer.
    assert split_call(rest, close) == read_each_character(rest, close)


def test_a_key_that_matches_two_keys_loosely_matches_neither():
    both = canned("lookup", "x", {"Paris": "France", "paris": "Texas"}, ("city",))
    record = run("Action: lookup(PARIS)\n", "Final Answer: x\n", tools=[both], question="Where is Paris?")
    assert code_lines(record)[0].startswith("Observation: Error: lookup has no result for \"PARIS\"")


def test_the_error_for_an_unknown_key_lists_the_keys_as_calls_to_copy():
    record = run("Action: price('sofa')\n", "Final Answer: x\n")
    assert code_lines(record)[0] == (
        'Observation: Error: price has no result for "sofa". It knows: price("lamp"), price("chair").\n'
    )


# --- 2, 3, 4. calls that cannot be what the model meant ---------------------------------


@pytest.mark.parametrize(
    ("line", "fix"),
    [
        ('Action: calculator(price("lamp") * 4)', 'Call price first, on a line of its own: Action: price("lamp")'),
        ("Action: price('lamp') + price('chair')", "Call price first, on a line of its own: Action: price('lamp')"),
        ('Action: calculator(price("lamp") * 4) + 1', 'Call price first, on a line of its own: Action: price("lamp")'),
    ],
)
def test_a_tool_inside_another_gets_a_notice_naming_the_inner_call(line, fix):
    record = run(line + "\n", "Final Answer: x\n")
    assert record.calls[0].ran == () and record.calls[0].notices == ("protocol_violation.nested_call",)
    assert fix in code_lines(record)[0]


@pytest.mark.parametrize("line", ['Action: alpha("x") + beta("y")', "Action: alpha(x) and beta(y)"])
def test_two_calls_of_two_tools_on_one_line_name_both_tools(line):
    alpha = canned("alpha", "The first", {"x": "1"})
    beta = canned("beta", "The second", {"y": "2"})
    record = run(line + "\n", "Final Answer: x\n", tools=[alpha, beta])
    notice = code_lines(record)[0]
    assert record.calls[0].ran == () and record.calls[0].notices == ("protocol_violation.nested_call",)
    assert "holds a call to alpha as well as beta;" in notice
    assert "Call alpha first, on a line of its own: Action: alpha(" in notice


def test_two_calls_of_one_tool_on_one_line_read_as_two_calls():
    record = run("Action: price('lamp') + price('chair')\n", "Final Answer: x\n")
    assert "Action line 1 holds two calls to price; one Action line runs one tool" in code_lines(record)[0]


def test_an_expression_given_by_keyword_reaches_the_calculator_as_its_text():
    record = run("Action: calculator(expression=127 * 83)\n", "Final Answer: 10541\n")
    assert code_lines(record)[0] == "Observation: 10541\n"
    record = run('Action: calculator(expression=price("lamp") * 4)\n', "Final Answer: x\n")
    assert record.calls[0].notices == ("protocol_violation.nested_call",)


def test_a_quoted_string_beside_an_expression_is_still_data():
    def note(text: str, times: str) -> str:
        """Keep a note."""
        return f"kept {text!r} x{times}"

    record = run("Action: note(text=\"then call price('lamp')\", times=2*3)\n", "Final Answer: x\n", tools=[PRICE, note])
    assert record.calls[0].ran == ("note",) and code_lines(record)[0] == "Observation: kept \"then call price('lamp')\" x2*3\n"


def test_many_keywords_written_as_expressions_are_read_in_linear_time():
    start = time.perf_counter()
    args, kwargs = parse_args(", ".join(f"k{i}=x" for i in range(12_000)))  # 108,888 characters
    assert len(kwargs) == 12_000 and time.perf_counter() - start < 10  # a guard: it took minutes when quadratic


def test_text_in_a_string_argument_is_data_not_a_nested_call():
    def note(text: str) -> str:
        """Keep a note."""
        return f"kept {len(text)}"

    record = run('Action: note("call price(\'lamp\') later")\n', "Final Answer: x\n", tools=[PRICE, note])
    assert record.calls[0].ran == ("note",)


def test_text_after_the_closing_bracket_gets_a_notice_with_the_whole_call():
    record = run("Action: calculator(6.5 * 340) * 1.80\n", "Final Answer: x\n")
    assert record.calls[0].notices == ("protocol_violation.text_after_call",)
    assert code_lines(record)[0].endswith("Action: calculator(6.5 * 340 * 1.80)\n")


@pytest.mark.parametrize("line", ["Action: calculator(expression)", "Action: price(<item>)", "Action: price(item='item')"])
def test_a_parameter_name_as_the_value_gets_a_notice_with_an_example(line):
    record = run(line + "\n", "Final Answer: x\n")
    assert record.calls[0].notices == ("protocol_violation.placeholder",)  # after the tool's own error
    observation, notice = code_lines(record)
    assert observation.startswith("Observation: Error: ") and "is the name of" in notice and "Action: " in notice


def test_a_value_equal_to_a_parameter_name_that_works_is_no_placeholder():
    define = canned("define", "What a word means", {"cat": "an animal", "word": "a unit of language"}, ("word",))
    record = run("Action: define(word)\n", "Final Answer: x\n", tools=[define])
    assert code_lines(record) == ["Observation: a unit of language\n"]


def test_harness_agent_writes_a_file_whose_content_is_a_parameter_name():
    import json
    import subprocess
    import sys

    turns = [{"thought": "t", "action": {"tool": "write_file", "args": {"path": "slot.xml", "content": "<content>"}}},
             {"thought": "t", "action": {"tool": "finish", "args": {"message": "done"}}}]
    request = json.dumps({"op": "run_agent", "task": "t", "workspace": {}, "model_turns": turns})
    done = subprocess.run([sys.executable, "-m", "harness", "agent"], input=request, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["workspace"] == {"slot.xml": "<content>"}


def test_a_parameter_name_written_as_a_call_around_the_value_gets_the_call_without_it():
    capital = canned("capital", "The capital of a country", {"Freedonia": "Fredonville"}, ("country",))
    record = run('Action: capital(country("Freedonia"))\n', "Final Answer: x\n", tools=[capital])
    assert record.calls[0].notices == ("protocol_violation.placeholder",)
    assert code_lines(record)[1].endswith('Write the value itself, as in Action: capital("Freedonia")\n')


@pytest.mark.parametrize("line", ["Action: calculator((2 + 3) * 4)", "Action: calculator((2+3)*4)", 'Action: calculator(expression="(2 + 3) * 4")'])
def test_the_tool_lists_example_copied_for_a_question_it_is_not_about_does_not_run(line):
    record = run(line + "\n", 'Action: price("lamp")\n', "Final Answer: 74\n")
    assert record.calls[0].notices == ("protocol_violation.copied_example",) and record.calls[0].ran == ()
    assert code_lines(record)[0] == (
        "Notice: calculator((2 + 3) * 4) is the example from the tool list, not a step of this question, so it did "
        "not run. Write the call this question needs, with its own values; a value you do not have yet comes from "
        "the tool that gives it.\n"
    )
    assert record.calls[1].ran == ("price",)


def order_status(order: str) -> str:
    """Where an order is."""
    return "shipped"


@pytest.mark.parametrize("call", ['order_status("A-17")', "order_status(A-17)", "order_status('a-17')", 'order_status(order="A-17")'])
def test_the_example_copied_however_it_is_written_is_the_same_copy(call):
    tool = from_function(order_status, example='"A-17"')
    record = run(f"Action: {call}\n", "Final Answer: x\n", tools=[tool], question="Where is my order B-2?")
    assert record.calls[0].notices == ("protocol_violation.copied_example",) and record.calls[0].ran == ()
    named = run(f"Action: {call}\n", "Final Answer: x\n", tools=[tool], question="Where is my order A-17?")
    assert code_lines(named) == ["Observation: shipped\n"]


def test_a_canned_tools_example_is_one_of_its_keys_and_runs_unnamed():
    """Looking each key up may be the task (`mirror_status(eu)`, then us, then asia)."""
    record = run('Action: price("lamp")\n', "Final Answer: x\n", question="What is the dearest item in the shop?")
    assert code_lines(record) == ["Observation: 18.50\n"]


def test_an_example_the_question_names_runs():
    record = run('Action: price("lamp")\n', "Final Answer: x\n")  # the example is lamp; so is the question
    assert record.calls[0].ran == ("price",) and code_lines(record) == ["Observation: 18.50\n"]
    for question in ("What is (2 + 3) * 4?", "What is (2+3)*4?"):  # spaced or not, it is named
        record = run("Action: calculator((2 + 3) * 4)\n", "Final Answer: x\n", question=question)
        assert code_lines(record) == ["Observation: 20\n"]


def test_the_tool_list_shows_a_concrete_call_for_each_tool():
    record = run("Final Answer: x\n")
    prompt = record.transcript.spans[0].text
    assert '- price(item): The price of one item (example: price("lamp"))' in prompt
    assert "- calculator(expression): Evaluate an arithmetic expression (example: calculator((2 + 3) * 4))" in prompt

    def order_status(order: str) -> str:
        """Where an order is."""
        return "shipped"

    tool = from_function(order_status, example='"A-17"')
    assert 'order_status(order): Where an order is. (example: order_status("A-17"))' in run("Final Answer: x\n", tools=[tool]).transcript.spans[0].text


# --- 5. the same failing call, again and again ------------------------------------------


def test_a_repeated_failing_call_is_told_so_and_ends_the_run_at_its_limit():
    again = "Action: price('sofa')\n"
    record = run(again, "Action: price('chair')\n", again, again, "Final Answer: never\n")
    assert record.stop_reason == "repeated_call_limit" and record.steps == 4
    told = [c.notices for c in record.calls]
    assert told == [(), (), ("protocol_violation.repeated_call",), ("protocol_violation.repeated_call",)]
    assert "You already made exactly this call in step 1" in code_lines(record)[3]


def test_the_repeat_limit_holds_when_one_reply_repeats_a_call_twice():
    from harness import Limits

    agent = Agent(PROMPT, tools=[calculator()], dialect="governed", limits=Limits(max_steps=5))
    twice = "Thought: again\nAction: calculator(x)\nAction: calculator(x)\n"  # neutral: both may run
    record = agent.run("q", ScriptedModel([twice] * 5))
    assert record.stop_reason == "repeated_call_limit" and record.steps == 2


def test_a_canned_tool_of_two_parameters_shows_its_keys_as_two_arguments():
    fare = canned("fare", "A fare", {'["Paris", "Lyon"]': "40"}, ("from_city", "to_city"))
    record = run('Action: fare("Paris", "Rome")\n', "Final Answer: x\n", tools=[fare])
    assert '(example: fare("Paris", "Lyon"))' in record.transcript.spans[0].text
    assert code_lines(record)[0].endswith('It knows: fare("Paris", "Lyon").\n')


def test_a_call_repeated_after_it_worked_is_told_to_use_the_result():
    again = "Action: price('lamp')\n"
    record = run(again, again, again, "Final Answer: 18.50\n")
    assert record.stop_reason == "repeated_call_limit" and record.steps == 3
    assert "got the same result; use it: call the next tool you need, or write the Final Answer." in code_lines(record)[2]


def test_a_changed_call_after_a_failure_is_not_a_repeat():
    record = run("Action: price('sofa')\n", "Action: price('lamp')\n", "Final Answer: 18.50\n")
    assert record.stop_reason == "final_answer" and all(c.notices == () for c in record.calls)


def test_the_repeat_limit_can_be_turned_off():
    again = "Action: price('sofa')\n"
    record = run(again, again, again, again, "Final Answer: x\n", repeat_limit=0)
    assert record.stop_reason == "final_answer"


# --- 6. notices are plain sentences that ask for a tool first ---------------------------


def test_a_notice_is_one_plain_sentence_for_the_model():
    record = run("I think it is 74.\n", "Final Answer: 74\n")
    [notice] = code_lines(record)
    assert notice.startswith("Notice: Your reply has no Action line, so no tool ran. Call a tool now")
    assert "{" not in notice and record.calls[0].notices == ("protocol_violation.no_action",)


def test_the_governed_dialect_keeps_seed_000s_structured_notice():
    agent = Agent(PROMPT, tools=[calculator()], dialect="governed")
    record = agent.run("q", ScriptedModel(["Thought: x\nno action here\n", "Thought: y\nFinal Answer: 1\n"]))
    assert code_lines(record)[0].startswith('Notice: {"code": "protocol_violation.no_action", "message": ')


def test_an_action_line_that_is_prose_gets_the_named_tool_as_a_call_to_copy():
    capital = canned("capital", "The capital of a country", {"Freedonia": "Fredonville"}, ("country",))
    record = run("Action: Use the capital(country) tool to find it.\n", "Final Answer: x\n", tools=[calculator(), capital])
    assert record.calls[0].notices == ("protocol_violation.tool_call_invalid",)
    assert code_lines(record)[0].endswith('Write the call alone on its line, as in Action: capital("Freedonia")\n')
