"""The public Python API refuses bad arguments when it is given them, as one HarnessError
naming the argument, not with an AttributeError (or a stray warning) at the first run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import Agent, HarnessError, ScriptedModel, Tool, from_function, load_record
from harness.errors import TranscriptFormatError

PROMPT = "Tools:\n$tools\n\nQuestion: $question\n"


async def fetch(url):
    """Fetch a page."""
    return url


async def pages(url):
    """Pages, one at a time."""
    yield url


class Awaitable:
    async def __call__(self, x):
        return x


@pytest.mark.parametrize(
    ("fn", "says"),
    [(fetch, "fetch is an async function"), (pages, "pages is an async generator function"), (Awaitable(), "is an async function")],
)
def test_from_function_refuses_an_async_function(fn, says):
    with pytest.raises(HarnessError, match=f"^from_function: .*{says}"):
        from_function(fn)


def test_from_function_refuses_a_lambda_by_its_name_and_takes_one_given():
    with pytest.raises(HarnessError, match=r"^from_function: the function's name is '<lambda>', not a tool name"):
        from_function(lambda x: x)
    assert from_function(lambda x: x, name="echo").signature == "echo(x)"
    with pytest.raises(HarnessError, match=r"^from_function: name='my tool' is not a tool name"):
        from_function(len, name="my tool")


SNEAKY = """
from harness import Agent, ScriptedModel
async def fetch(x):
    return x
def sneaky(x):
    "Returns a coroutine, not text."
    return fetch(x)
record = Agent("$tools $question", tools=[sneaky]).run("q", ScriptedModel(["Action: sneaky(a)\\n", "Final Answer: x\\n"]))
print(record.transcript.spans[2].text, end="")
"""


def test_a_tool_whose_function_returns_a_coroutine_fails_without_pythons_warning():
    # A process of its own: pytest catches warnings itself, and Python's default is what users get.
    proc = subprocess.run([sys.executable, "-c", SNEAKY], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "Observation: Error: it returned coroutine (an object), which is not text; return a str (or a number, a list or a dict of them)\n"
    assert proc.stderr == ""


@pytest.mark.parametrize("completions", ["Final Answer: x\n", b"Final Answer: x\n"])
def test_scripted_model_refuses_one_string_for_its_list(completions):
    with pytest.raises(HarnessError, match=r"^ScriptedModel.completions: is one (str|bytes); give a list"):
        ScriptedModel(completions)
    with pytest.raises(HarnessError, match=r"^ScriptedModel.completions\[1\]: must be a str, not int"):
        ScriptedModel(["a", 1])


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"prompt": None}, r"^Agent.prompt: must be the template's text \(a str\), not NoneType"),
        ({"prompt": PROMPT, "tools": [5]}, r"^Agent.tools\[0\]: must be a function, not int"),
        ({"prompt": PROMPT, "tools": len}, r"^Agent.tools: must be a list of tools"),
        ({"prompt": PROMPT, "tools": "calculator"}, r"^Agent.tools: must be a list of tools"),
        ({"prompt": PROMPT, "tools": [lambda x: x]}, r"^Agent.tools\[0\]: the function's name is '<lambda>'"),
        ({"prompt": PROMPT, "tools": [fetch]}, r"^Agent.tools\[0\]: fetch is an async function"),
        ({"prompt": PROMPT, "tools": [Tool("f", "d", ("x",), fetch)]}, r"^Agent.tools\[0\]: fetch is an async function"),
    ],
)
def test_an_agent_refuses_bad_arguments_when_it_is_made(arguments, says):
    with pytest.raises(HarnessError, match=says):
        Agent(**arguments)


def test_an_agent_given_its_tools_as_a_generator_keeps_them_for_every_run():
    def add(a, b):
        """Add two numbers."""
        return a + b

    agent = Agent(PROMPT, tools=(t for t in [add]))
    for _ in range(2):
        record = agent.run("q", ScriptedModel(["Action: add(2, 3)\n", "Final Answer: 5\n"]))
        assert record.calls[0].ran == ("add",)


@pytest.mark.parametrize(("text", "kind"), [(b"# harness transcript v1\n", "bytes"), (None, "NoneType")])
def test_load_record_refuses_what_is_not_text(text, kind):
    with pytest.raises(TranscriptFormatError, match=f"load_record\\(text\\): must be the saved file's text, a str, not {kind}$"):
        load_record(text)


def test_a_scenario_is_loaded_from_a_str_path_and_run_only_as_a_scenario():
    from harness import find_scenario, load_scenario, run_scenario

    path = find_scenario("nimbus")
    assert load_scenario(str(path)) == load_scenario(path)  # (a str once failed after the file was read)
    with pytest.raises(HarnessError, match=r"^run_scenario: takes a Scenario \(load_scenario\(path\) reads one\), not PosixPath$"):
        run_scenario(path)


def test_an_agent_refuses_two_tools_of_one_name_when_it_is_made():
    def add(a, b):
        """Add."""
        return a + b

    with pytest.raises(HarnessError, match=r"^Agent.tools\[1\]: a second tool named 'add'; give it its own: from_function\(fn, name=\"...\"\)$"):
        Agent(prompt=PROMPT, tools=[add, add])
    Agent(prompt=PROMPT, tools=[add, from_function(add, name="plus")])  # named apart: both callable
