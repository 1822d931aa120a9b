"""What one step costs through the command, as a user runs it, and what starting costs.

    python tests/benchmarks/command.py            # N = 1,000 and 10,000, every dialect
    python tests/benchmarks/command.py --quick    # N = 1,000 only, one process per row
    python tests/benchmarks/command.py --step-instructions   # machine instructions per step (valgrind)

For each dialect a scenario of N scripted steps (`Thought: step i` / `Action: echo(i)`, a
canned tool answering each, then the final answer; the model is sent the whole buffer on
every call) is run as

    harness run SCENARIO --format tagged > /dev/null

and timed as the wall time and the CPU time (user + system, which a busy machine disturbs
less) of the whole process, each the best of 5 fresh processes; the sizes take turns (one
round runs N = 1, 1,000 and 10,000 once each), so that a busy spell of the machine falls on
all of them alike. Start-up is the same
command on a one-step scenario, and is subtracted: µs per step = (t(N) - t(1)) / N.
t(10k)/t(1k) is taken on those start-up-free times: 10 means linear. With
--step-instructions, only what a busy machine does not change: the machine instructions of
one step through the command, (I(N = 2,000) - I(N = 1,000)) / 1,000, and
(I(10k) - I(1)) / (I(1k) - I(1)) for how they grow, each dialect (valgrind's callgrind).

Then `harness run nimbus` against `harness --help`, both to /dev/null: their machine
instructions (valgrind, when installed; a busy machine does not change them) and their wall
times (hyperfine, apt install hyperfine). Not a test: it prints figures; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DIALECTS = ("default", "react-paper", "governed")
HARNESS = [sys.executable, "-m", "harness"]


def completions(dialect: str, n: int) -> list[str]:
    if dialect == "react-paper":  # code writes the `Thought i:` cue; the model goes on from it
        return [f" step {i}\nAction {i}: echo[{i}]\n" for i in range(1, n + 1)] + [f" done\nAction {n + 1}: Finish[{n}]\n"]
    return [f"Thought: step {i}\nAction: echo({i})\n" for i in range(1, n + 1)] + [f"Thought: done\nFinal Answer: {n}\n"]


def scenario(folder: Path, dialect: str, n: int) -> Path:
    path = folder / f"{dialect}-{n}.toml"
    path.write_text(
        f'question = "Echo the numbers back, one step at a time."\ndialect = "{dialect}"\nmax_steps = {n + 1}\n'
        f"completions = {json.dumps(completions(dialect, n))}\n"
        '[tools.echo]\ndescription = "Say it back"\nparams = ["text"]\nresults = {}\ndefault = "ok"\ntrait = "neutral"\n',
        encoding="utf-8",
    )
    return path


def timed(args: list[str]) -> tuple[float, float]:
    """The wall time and CPU time (user + system) of one fresh `harness ARGS > /dev/null`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*HARNESS, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def best(folder: Path, dialect: str, sizes: tuple[int, ...], rounds: int) -> dict[int, tuple[float, float]]:
    """The best (wall, CPU) of `rounds` rounds per size; one round runs each size once, in
    turn, so a busy spell of the machine falls on all sizes alike, not on one of them."""
    files = {n: str(scenario(folder, dialect, n)) for n in sizes}
    out = {n: (float("inf"), float("inf")) for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            took = timed(["run", files[n], "--format", "tagged"])
            out[n] = (min(out[n][0], took[0]), min(out[n][1], took[1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 1,000 only, one process per row")
    parser.add_argument("--step-instructions", action="store_true", help="only the instructions per step (valgrind)")
    args = parser.parse_args()
    if args.step_instructions:
        return step_instructions()
    sizes, rounds = ((1_000,), 1) if args.quick else ((1_000, 10_000), 5)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        head = (
            f"{'dialect':<12} {'N':>7} {'wall s':>7} {'start-up':>9} {'µs/step':>8} {'t/t(1k)':>8}"
            f" {'cpu s':>7} {'start-up':>9} {'µs/step':>8} {'t/t(1k)':>8}"
        )
        print(f"{'':<20} {'wall time':-^34} {'CPU time (user + system)':-^35}")
        print(head)
        print("-" * len(head))
        for dialect in DIALECTS:
            times = best(folder, dialect, (1, *sizes), rounds)
            start, first = times[1], None
            for n in sizes:
                took = times[n]
                work = [max(t - s, 1e-9) for t, s in zip(took, start)]
                first = first or work
                row = f"{dialect:<12} {n:>7,}"
                for t, s, w, f in zip(took, start, work, first):
                    growth = f"{w / f:8.1f}" if n != sizes[0] else f"{'':>8}"
                    row += f" {t:7.2f} {s:9.3f} {w / n * 1e6:8.1f} {growth}"
                print(row)
    if shutil.which("valgrind") is not None:  # machine instructions: the same whatever else the machine does
        counts = {args_: instructions([*HARNESS, *args_.split()]) for args_ in ("--help", "run nimbus")}
        print(f"\ninstructions (valgrind): --help {counts['--help'] / 1e6:.1f}M, run nimbus {counts['run nimbus'] / 1e6:.1f}M,"
              f" ratio {counts['run nimbus'] / counts['--help']:.2f}")  # fmt: skip
    if shutil.which("hyperfine") is None:
        print("\nhyperfine is not installed (apt install hyperfine): start-up not compared")
        return
    print()
    command = " ".join(HARNESS)
    subprocess.run(
        ["hyperfine", "--warmup", "3", "--runs", "10" if args.quick else "30", "--style", "basic",
         "--output", "null", f"{command} --help", f"{command} run nimbus"],
        check=True,
    )  # fmt: skip


def step_instructions() -> None:
    """Instructions per step through the command, and how they grow from 1,000 to 10,000 steps."""
    print(f"{'dialect':<12} {'instructions/step':>18} {'I(10k)/I(1k)':>13}   (start-up subtracted)")
    with tempfile.TemporaryDirectory() as tmp:
        for dialect in DIALECTS:
            counts = {n: instructions([*HARNESS, "run", str(scenario(Path(tmp), dialect, n)), "--format", "tagged"]) for n in (1, 1_000, 2_000, 10_000)}
            per = (counts[2_000] - counts[1_000]) / 1_000
            print(f"{dialect:<12} {per:18,.0f} {(counts[10_000] - counts[1]) / (counts[1_000] - counts[1]):13.2f}")


def instructions(command: list[str]) -> int:
    """Machine instructions of one run of `command`, counted by valgrind's callgrind."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command], capture_output=True, text=True, check=True)
    return int(done.stderr.split("Collected : ")[1].split()[0])


if __name__ == "__main__":
    main()
