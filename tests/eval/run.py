"""How many small tool tasks a real model solves through harness's loop.

Runs every task of tests/eval/tasks.toml (a scenario without completions, plus the number
a correct answer contains, or `answer_text`, a word it contains) against one model, and prints a line per task, then the
figures a change to the loop is judged by: solved / total, how many of those through a
tool, model calls per task, stop reasons, and the notices code wrote, by code.

    python tests/eval/run.py --model openai:qwen --base-url http://127.0.0.1:8080/v1
    python tests/eval/run.py --model local:/path/to/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    python tests/eval/run.py ... --prompt default --only lamps,ages --save-dir /tmp/eval

A task is solved when its final answer holds the expected number (commas between digits
ignored, within 0.01) or the expected word (case ignored). Not a test: it prints figures; the model decides them.
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

import regex

from harness import run_scenario
from harness.backends.spec import model_from_spec
from harness.scenario import Scenario

HERE = Path(__file__).resolve().parent
NUMBER = regex.compile(r"-?\d+(?:\.\d+)?")


def solved(answer: str | None, expected: float | str) -> bool:
    if answer is None:
        return False
    if isinstance(expected, str):
        return expected.casefold() in answer.casefold()
    digits = regex.sub(r"(?<=\d),(?=\d{3})", "", answer)
    return any(abs(float(n) - expected) <= 0.01 for n in NUMBER.findall(digits))


def task_scenario(name: str, task: dict, tasks: Path, prompt: str, dialect: str, max_steps: int) -> Scenario:
    """A task as a scenario without completions: its fields, the template and limits asked for."""
    data = {k: v for k, v in task.items() if k not in ("answer", "answer_text")}
    data |= {"dialect": dialect, "max_steps": max_steps}
    data |= {"prompt_file": prompt} if prompt.endswith(".txt") else {"prompt": prompt}
    return Scenario.from_dict(data, f"{tasks.name}: task.{name}", tasks.parent)


def wait_for(base_url: str, seconds: float) -> None:
    """A server just started loads its model first: wait until it answers /models."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(f"{base_url.rstrip('/')}/models", timeout=2).raise_for_status()
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise SystemExit(f"no server answered at {base_url} within {seconds:.0f} s") from None
            time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="openai:NAME (with --base-url) or local:PATH")
    parser.add_argument("--base-url")
    parser.add_argument("--prompt", default="chatml", help="the shipped template every task uses, or a .txt template's path relative to the tasks file")
    parser.add_argument("--dialect", default="default")
    parser.add_argument("--max-steps", type=int, default=8, help="model calls per task")
    parser.add_argument("--only", help="comma-separated task names")
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.toml")
    parser.add_argument("--save-dir", type=Path, help="write each run's transcript here")
    parser.add_argument("--wait", type=float, default=120, help="seconds to wait for the server to answer")
    args = parser.parse_args()

    tasks = tomllib.loads(args.tasks.read_text(encoding="utf-8"))["task"]
    if args.only:
        if unknown := [name for name in args.only.split(",") if name not in tasks]:
            parser.error(f"--only: no task named {', '.join(unknown)} (known: {', '.join(tasks)})")
        tasks = {name: tasks[name] for name in args.only.split(",")}
    model = model_from_spec(args.model, args.base_url)
    if args.base_url:
        wait_for(args.base_url, args.wait)
    if args.save_dir:
        args.save_dir.mkdir(parents=True, exist_ok=True)

    wins = via_tool = calls = 0
    reasons: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    started = time.perf_counter()
    for name, task in tasks.items():
        scenario = task_scenario(name, task, args.tasks, args.prompt, args.dialect, args.max_steps)
        t0 = time.perf_counter()
        record = run_scenario(scenario, model=model)
        ran = [tool for call in record.calls for tool in call.ran]
        told = [code for call in record.calls for code in call.notices]
        ok = solved(record.final_answer, task["answer_text"] if "answer_text" in task else float(task["answer"]))
        wins += ok
        via_tool += ok and bool(ran)
        calls += len(record.calls)
        reasons[str(record.stop_reason)] += 1
        codes.update(told)
        answer = (record.final_answer or "").replace("\n", " ")[:60]
        print(
            f"{'SOLVED' if ok else 'failed':6} {name:12} {len(record.calls)} calls {time.perf_counter() - t0:5.1f} s "
            f"{record.stop_reason:18} tools={','.join(ran) or '-'} notices={','.join(told) or '-'} answer={answer!r}",
            flush=True,
        )
        if args.save_dir:
            (args.save_dir / f"{name}.txt").write_text(record.saved, encoding="utf-8")

    total = len(tasks)
    print(f"\nsolved {wins} / {total} ({via_tool} through a tool); {calls / total:.1f} calls per task; "
          f"{time.perf_counter() - started:.0f} s")
    print("stop reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    print("notices: " + (", ".join(f"{k} {v}" for k, v in codes.most_common()) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
