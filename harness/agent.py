"""An agent built from Python objects: a prompt template, tools as plain functions, a dialect.

    agent = Agent(prompt="Use these tools:\\n$tools\\n\\nQuestion: $question\\n", tools=[add])
    record = agent.run("What is 2 + 3?", ScriptedModel([...]))

The same run a scenario file describes, for people who would rather write Python. Its runs
replay when the agent can be imported again: `source="module:attribute"` names it, and the
saved file keeps that name, the question and a hash of what the run was built from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from harness import prompts
from harness import source as sources
from harness.dialects import get_dialect
from harness.errors import HarnessError
from harness.limits import Limits
from harness.loop import Emit, Setup, nobody, run
from harness.model import Model
from harness.run_record import RunRecord
from harness.tools import Registry, Tool, from_function
from harness.transcript import Author, Span, Transcript
from harness.user_code import tool_function


@dataclass
class Agent:
    """An agent made in Python: its prompt, tools, dialect and limits; `.run(question, model)`."""

    prompt: str  # the template's text: $question and $tools are filled in
    tools: Sequence[Tool | Callable[..., Any]] = ()
    dialect: str = "default"  # or "react-paper", "governed"
    limits: Limits = field(default_factory=Limits)
    source: str | None = None  # "module:attribute" where this Agent can be imported: its runs replay

    def __post_init__(self) -> None:
        """Bad arguments are refused here, not at the first run."""
        if not isinstance(self.prompt, str):
            raise HarnessError("Agent.prompt", f"must be the template's text (a str), not {type(self.prompt).__name__}")
        if isinstance(self.tools, (str, bytes)) or not isinstance(self.tools, Iterable):
            raise HarnessError("Agent.tools", f"must be a list of tools (Tools or functions), not {type(self.tools).__name__}")
        if not isinstance(self.tools, Sequence):  # a generator or a set: read once, here, and kept
            self.tools = tuple(self.tools)
        names: set[str] = set()
        for i, t in enumerate(self.tools):  # a Tool's function too: an async one would never be awaited
            name = tool_function(*((t.fn, t.name) if isinstance(t, Tool) else (t, None)), f"Agent.tools[{i}]")
            if name in names:  # a model calls a tool by its name: one of the two could never be called
                raise HarnessError(f"Agent.tools[{i}]", f"a second tool named {name!r}; give it its own: from_function(fn, name=\"...\")")
            names.add(name)
        if self.source is not None and not (isinstance(self.source, str) and re.fullmatch(sources.AGENT_REF, self.source)):
            raise HarnessError("Agent.source", f"{self.source!r} must read 'module:attribute' (an importable name of the Agent)")

    def setup(self, question: str) -> Setup:
        dialect = get_dialect(self.dialect)
        tools = Registry(t if isinstance(t, Tool) else from_function(t) for t in self.tools)
        variables = {"question": question, "tools": tools.render(dialect.signature)}
        filled = prompts.fill(self.prompt, variables, "Agent.prompt")
        buffer = Transcript([Span(Author.DEVELOPER, filled.text)])
        source = None if self.source is None else sources.Source(agent=self.source, question=question, sha256=self.fingerprint(tools))
        return Setup(buffer, dialect, tools, self.limits, frames=filled.frames, question=question, source=source)

    def run(self, question: str, model: Model, emit: Emit = nobody) -> RunRecord:
        return run(self.setup(question), model, emit)

    def fingerprint(self, tools: Registry) -> str:
        """sha256 of what a run is built from: the prompt, dialect, limits, and each tool with its module."""
        lines = sources.canonical([[t.name, t.description, t.params, t.trait] for t in tools])
        modules = [sources.module_bytes(t.fn) for t in tools]
        return sources.fingerprint([self.prompt, self.dialect, sources.canonical(asdict(self.limits)), lines, *modules])
