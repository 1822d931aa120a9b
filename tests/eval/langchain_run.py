"""The same tasks through LangChain's classic ReAct agent, beside tests/eval/run.py.

The comparison the evaluation is judged by: the same model on the same server, greedy, at
most 8 model calls a task, and the same tool functions — harness's own, built from each
task's fields (`Scenario.build_tools()`) and called as harness calls them — driven by LangChain's
`create_react_agent` with its usual ReAct prompt, framed in ChatML as the model was trained
(the instructions and the question a user turn; the agent's scratchpad the assistant turn),
through `langchain_openai.OpenAI`, the completions endpoint.

LangChain is not a dependency of harness: run this from a venv that has it and harness:

    python -m venv /tmp/lc && /tmp/lc/bin/pip install langchain-classic langchain-openai -e .
    /tmp/lc/bin/python tests/eval/langchain_run.py --base-url http://127.0.0.1:8080/v1 [--tasks FILE]

It prints a line per task and the same summary line as run.py. Not a test: the model
decides the figures.
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

from langchain_classic.agents import AgentExecutor, create_react_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.prompts import PromptTemplate
from langchain_core.tools import Tool
from langchain_openai import OpenAI

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import HERE, solved, task_scenario, wait_for  # noqa: E402

from harness import ToolError  # noqa: E402

# LangChain's usual ReAct prompt (hwchase17/react), word for word, in ChatML's frames.
REACT = "<|im_start|>user\n" + (HERE / "react.txt").read_text(encoding="utf-8").rstrip("\n") + "<|im_end|>\n<|im_start|>assistant\nThought:{agent_scratchpad}"


def langchain_tools(tools) -> list[Tool]:
    """Each harness tool as a LangChain Tool: its Action Input is the one argument, and an
    error is the observation text, as harness writes it."""

    def call(tool):
        def run(text: str) -> str:
            try:
                return tool.call((text.strip().strip("\"'"),), {})
            except ToolError as e:
                return f"Error: {e}"

        return run

    return [Tool(name=t.name, description=t.description, func=call(t)) for t in tools]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model-name", default="qwen")
    parser.add_argument("--max-steps", type=int, default=8, help="model calls per task")
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.toml")
    parser.add_argument("--only", help="comma-separated task names")
    parser.add_argument("--verbose", action="store_true", help="print the agent's scratchpad")
    args = parser.parse_args()
    wait_for(args.base_url, 120)
    tasks = tomllib.loads(args.tasks.read_text(encoding="utf-8"))["task"]
    if args.only:
        tasks = {name: tasks[name] for name in args.only.split(",")}
    calls = {"n": 0}

    class Count(BaseCallbackHandler):
        def on_llm_start(self, *a, **k) -> None:
            calls["n"] += 1

    llm = OpenAI(base_url=args.base_url, api_key="none", model=args.model_name, temperature=0, max_tokens=256, callbacks=[Count()])
    wins = total_calls = 0
    started = time.perf_counter()
    for name, task in tasks.items():
        scenario = task_scenario(name, task, args.tasks, "chatml", "default", args.max_steps)
        tools = langchain_tools(scenario.build_tools())
        agent = create_react_agent(llm, tools, PromptTemplate.from_template(REACT))
        executor = AgentExecutor(agent=agent, tools=tools, max_iterations=args.max_steps, handle_parsing_errors=True, verbose=args.verbose)
        calls["n"], t0 = 0, time.perf_counter()
        try:
            answer = executor.invoke({"input": task["question"]})["output"]
        except Exception as e:  # noqa: BLE001 - a failed task, counted as such
            answer = f"error: {e}"
        ok = solved(answer, task["answer_text"] if "answer_text" in task else float(task["answer"]))
        wins += ok
        total_calls += calls["n"]
        shown = answer.replace("\n", " ")[:60]
        print(f"{'SOLVED' if ok else 'failed':6} {name:12} {calls['n']} calls {time.perf_counter() - t0:5.1f} s answer={shown!r}", flush=True)
    print(f"\nsolved {wins} / {len(tasks)}; {total_calls / len(tasks):.1f} calls per task; {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
