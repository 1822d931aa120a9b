"""An agent built from Python objects: a prompt template, tools as plain functions, a dialect.

    agent = Agent(prompt="Use these tools:\\n$tools\\n\\nQuestion: $question\\n", tools=[add])
    record = agent.run("What is 2 + 3?", ScriptedModel([...]))

This is the same run a scenario file describes (harness.scenario), for people who would
rather write Python: the prompt is rendered once into the buffer, authored `developer`,
and the ordinary loop (harness.loop) runs it. A tool is a function whose docstring's
first line and parameters become its line in the prompt's tool list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import prompts
from harness.dialects import get_dialect
from harness.limits import Limits
from harness.loop import Emit, Setup, nobody, run
from harness.model import Model
from harness.run_record import RunRecord
from harness.tools import Registry, Tool, from_function
from harness.transcript import Author, Transcript


@dataclass
class Agent:
    prompt: str  # the template's text: $question and $tools are filled in
    tools: Sequence[Tool | Callable[..., Any]] = ()
    dialect: str = "default"  # or "react-paper", "governed"
    limits: Limits = field(default_factory=Limits)

    def setup(self, question: str) -> Setup:
        dialect = get_dialect(self.dialect)
        tools = Registry(t if isinstance(t, Tool) else from_function(t) for t in self.tools)
        variables = {"question": question, "tools": tools.render(dialect.signature)}
        filled = prompts.fill(self.prompt, variables, "Agent.prompt")
        buffer = Transcript()
        buffer.append(Author.DEVELOPER, filled.text)
        return Setup(buffer, dialect, tools, self.limits, frames=filled.frames)

    def run(self, question: str, model: Model, emit: Emit = nobody) -> RunRecord:
        return run(self.setup(question), model, emit)
