"""One step of harness beside one step of LangChain's and smolagents' agents, in one run.

The same work for each: N scripted steps that call an `echo` tool, then a final answer; a
fake model that plays back the canned replies and is sent the whole conversation on every
call (each framework's own way of building it); the loop, the parsing, the tool call and
the bookkeeping are each framework's own.

    harness       loop.run(Setup(...), ScriptedModel(replies), listener)   a no-op listener,
                  and nobody listening; `Thought: step i\\nAction: echo(i)\\n`
    LangChain     langchain_classic AgentExecutor(create_react_agent(FakeListLLM(replies),
                  [echo], prompt)); `Action: echo\\nAction Input: i`
    smolagents    ToolCallingAgent([echo], a Model whose generate() returns the canned
                  tool call `echo(text=i)`), max_steps N + 1
    floor         ten lines of string handling (buffer += reply; regex; buffer += result)

LangChain and smolagents are not harness's dependencies: they run from a throwaway venv
given by --venv (default /tmp/bench-venv), made once with

    python -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip install langchain-classic smolagents

and are skipped, with a line saying so, when it is not there. Each figure is CPU time
(time.process_time) of the run alone in a fresh process, the best of 3 processes of 3
runs each. Not a test: it prints figures; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# --- each framework's run, in a child process ------------------------------------------


def harness_run(n: int, listening: bool) -> float:
    from loop import harness_run as run  # tests/benchmarks/loop.py: the same scripted echo steps

    return run("default", n, "noop" if listening else "none")[0]


def floor_run(n: int) -> float:
    from loop import naive_run

    return naive_run("default", n)[0]


def langchain_run(n: int) -> float:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import tool

    @tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    replies = [f"Thought: step {i}\nAction: echo\nAction Input: {i}" for i in range(1, n + 1)]
    replies.append(f"Thought: done\nFinal Answer: {n}")
    prompt = PromptTemplate.from_template(
        "Answer with the tools {tools} ({tool_names}).\nQuestion: {input}\nThought:{agent_scratchpad}"
    )
    agent = create_react_agent(FakeListLLM(responses=replies), [echo], prompt)
    executor = AgentExecutor(agent=agent, tools=[echo], max_iterations=n + 1)
    start = time.process_time()
    out = executor.invoke({"input": "echo the numbers back, one step at a time"})
    seconds = time.process_time() - start
    assert out["output"] == str(n), out["output"]
    return seconds


def smolagents_run(n: int) -> float:
    import logging

    from smolagents import ToolCallingAgent, tool
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model

    logging.disable(logging.CRITICAL)

    @tool
    def echo(text: str) -> str:
        """Say it back.

        Args:
            text: what to say back.
        """
        return text

    class Scripted(Model):
        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.step = 0

        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
            self.step += 1
            name, args = ("echo", {"text": str(self.step)}) if self.step <= n else ("final_answer", {"answer": str(n)})
            call = ChatMessageToolCall(ChatMessageToolCallFunction(args, name), f"call_{self.step}", "function")
            return ChatMessage(MessageRole.ASSISTANT, "", tool_calls=[call])

    agent = ToolCallingAgent(tools=[echo], model=Scripted(), max_steps=n + 1, verbosity_level=-1)
    start = time.process_time()
    out = agent.run("echo the numbers back, one step at a time")
    seconds = time.process_time() - start
    assert str(out) == str(n), out
    return seconds


RUNS = {
    "harness, a no-op listener": lambda n: harness_run(n, True),
    "harness, nobody listening": lambda n: harness_run(n, False),
    "LangChain AgentExecutor": langchain_run,
    "smolagents ToolCallingAgent": smolagents_run,
    "floor (ten lines of strings)": floor_run,
}
OTHERS = ("LangChain AgentExecutor", "smolagents ToolCallingAgent")


def child(name: str, n: int) -> None:
    print(json.dumps(min(RUNS[name](n) for _ in range(3))))


def measure(name: str, n: int, python: str) -> float | None:
    runs = []
    for _ in range(3):
        done = subprocess.run([python, __file__, "--child", name, str(n)], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  ({name}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'})")
            return None
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=1_000, help="steps (default 1,000)")
    parser.add_argument("--venv", default="/tmp/bench-venv", help="the venv that has langchain-classic and smolagents")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]))
    other = Path(args.venv) / "bin" / "python"
    per_step: dict[str, float] = {}
    print(f"N = {args.n:,} scripted echo steps; CPU µs per step, best of 3 processes")
    for name in RUNS:
        if name in OTHERS and not other.exists():
            print(f"{name:<30} skipped: no {other} (see the docstring)")
            continue
        # harness runs from this interpreter (the project's venv), the others from theirs.
        seconds = measure(name, args.n, str(other) if name in OTHERS else sys.executable)
        if seconds is not None:
            per_step[name] = seconds / args.n * 1e6
            print(f"{name:<30} {per_step[name]:9.1f}")
    for mine in ("harness, a no-op listener", "harness, nobody listening"):
        for name in OTHERS:
            if mine in per_step and name in per_step:
                print(f"{name} / {mine}: {per_step[name] / per_step[mine]:.0f}x")


if __name__ == "__main__":
    main()
