"""The public Python API refuses bad arguments when it is given them, as one HarnessError
naming the argument, not with an AttributeError (or a stray warning) at the first run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import HarnessError, from_function

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
