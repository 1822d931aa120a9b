"""What the terminal stepper costs as a run grows: frames, the first screen, every step.

A run of N scripted steps (`harness.agent.Agent` with an echo tool), then, at 80×24:

    frames(record)              the frames, built once
    first screen at the end     End pressed at once: every frame's rows are wrapped, once
    each step back, after that  ← pressed 50 times: each screen is a slice of made rows

If a screen rebuilt the whole buffer, "each step back" would grow with N (and stepping
through the whole run with N²); it should stay flat while the first two grow linearly.

    python tests/benchmarks/stepper.py            # N = 1,000 and 10,000, then one long line

Then one reply of a single line of 1 MB and of 10 MB: its first screen wraps it whole.

Not a test: it prints figures (CPU seconds, time.process_time, the best of three).
"""

from __future__ import annotations

import time

from rich.console import Console

from harness import Agent, Limits, ScriptedModel
from harness.render.frames import frames
from harness.render.stepper import Screen


def echo(text: str) -> str:
    """Say it back."""
    return text


def record_of(n: int):
    completions = [f"Thought: step {i} of a long run, long enough that a row of it wraps at 80 columns.\nAction: echo({i})\n" for i in range(n)]
    agent = Agent(prompt="Use these tools:\n$tools\n\nQuestion: $question\n", tools=[echo], limits=Limits(max_steps=n + 1))
    return agent.run("Echo the numbers.", ScriptedModel([*completions, "Final Answer: done\n"]))


def best(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    print(f"{'frames':>7}  {'build':>8}  {'first screen at the end':>24}  {'each step back':>15}")
    for n in (1_000, 10_000):
        record = record_of(n)
        fs = frames(record)
        t_frames = best(lambda: frames(record))
        console = Console(width=80, height=24, file=open("/dev/null", "w"))

        def first() -> Screen:
            screen = Screen(fs, console)
            screen.press("\x1b[F", 24)  # End
            screen.lines()
            return screen

        t_first = best(first)
        screen = first()

        def back() -> None:
            for _ in range(50):
                screen.press("\x1b[D", 24)
                screen.lines()

        t_back = best(back) / 50
        print(f"{len(fs) - 1:>7,}  {t_frames:>7.3f}s  {t_first:>23.3f}s  {t_back * 1000:>12.2f} ms")


def one_long_line() -> None:
    from harness.events import StopReason
    from harness.run_record import RunRecord
    from harness.transcript import Transcript

    for size in (1_000_000, 10_000_000):
        transcript = Transcript()
        transcript.append("developer", "Question: q\n")
        transcript.append("model", "x" * size + "\n")
        fs = frames(RunRecord(transcript, StopReason.MAX_STEPS))
        console = Console(width=80, height=24, file=open("/dev/null", "w"))

        def first() -> None:
            screen = Screen(fs, console)
            screen.press("\x1b[F", 24)
            screen.lines()

        print(f"one line of {size:>10,} characters: first screen {best(first, 1):.2f}s")


if __name__ == "__main__":
    main()
    one_long_line()
