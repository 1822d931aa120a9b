"""Big untrusted input through the command, as a user runs it: each case should finish in
under 2 seconds on a 2-core machine, and its cost grow with the input, never with its square.

    python tests/benchmarks/big_input.py [RUNS]     (each case RUNS times, 3 by default)

Cases (files made in a temporary folder): `show -f tagged` of a transcript of 80,000
same-author lines; `run` of a scenario whose one completion is a 10 MB line; `run` of a
completion with 100,000 Action lines (calls past the reply's one action, and lines that do
not parse); `run` of a 10 MB completion of 100 Action lines of 100,000 characters whose call
never closes; `replay --check` of a saved run with one 4 MB line;
`run` of 400,000 spaces then the final answer, in each dialect; `agent` with a 10,000-file
workspace asked for a missing file, and with a million model_turns past max_steps 3.
Wall time, CPU time (user + system, which a busy machine disturbs less) and peak memory of
the whole process (start-up included) are printed, for the fastest of RUNS fresh processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = "# harness transcript v1"
REPEAT = int(sys.argv[1]) if sys.argv[1:2] and sys.argv[1].isdigit() else 3  # runs of each case; the fastest is printed


def scenario(path: Path, completion: str, extra: str = "") -> Path:
    path.write_text(f"question = \"q\"\ncompletions = [{json.dumps(completion)}]\n{extra}", encoding="utf-8")
    return path


def timed(args: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds: user + system, peak MB) of one fresh process."""
    stdin = subprocess.DEVNULL
    if args[-2:-1] == ["<"]:  # a request on stdin
        args, stdin = args[:-2], open(cwd / args[-1], "rb")
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=cwd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own usage, not the sum of all so far
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"harness {' '.join(args)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def make(d: Path) -> None:
    """The input files. Made in a process of their own: a child started by a big process
    begins with its memory, and each case's peak would be this one's."""
    lines = [HEADER, '# stop_reason: "max_steps"'] + [f"model     | line {i} of one author" for i in range(80_000)]
    (d / "many.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    scenario(d / "big.toml", "Thought: " + "x" * 10_000_000 + "\nFinal Answer: done\n")
    scenario(d / "acts.toml", "Thought: go\n" + "Action: calculator(1)\n" * 100_000, "max_steps = 1\n[tools.calculator]\n")
    scenario(d / "prose.toml", "Thought: go\n" + "Action: calculator 1\n" * 100_000, "max_steps = 1\n[tools.calculator]\n")
    scenario(d / "open.toml", "Thought: go\n" + ("Action: calculator(" + "x" * 99_950 + "\n") * 100, "max_steps = 1\n[tools.calculator]\n")
    scenario(d / "line.toml", "Thought: " + "y" * 4_000_000 + "\nFinal Answer: ok\n")
    blanks = " " * 400_000
    scenario(d / "spaces.toml", blanks + "Final Answer: x")
    scenario(d / "spaces-paper.toml", blanks + "Action 1: Finish[x]", 'dialect = "react-paper"\n')
    scenario(d / "spaces-governed.toml", "Thought: ok\n" + blanks + "Final Answer: x", 'dialect = "governed"\n')
    turn = {"thought": "look", "action": {"tool": "read_file", "args": {"path": "nope.py"}}}
    files = {f"src/module_{i:05}.py": "x" for i in range(10_000)}
    request = {"op": "run_agent", "task": "t", "max_steps": 3, "workspace": files, "model_turns": [turn]}
    (d / "files.json").write_text(json.dumps(request), encoding="utf-8")
    request = {"op": "run_agent", "task": "t", "max_steps": 3, "workspace": {}, "model_turns": [turn] * 1_000_000}
    (d / "turns.json").write_text(json.dumps(request), encoding="utf-8")


def main() -> None:
    if sys.argv[1:2] == ["--make"]:
        return make(Path(sys.argv[2]))
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        subprocess.run([sys.executable, __file__, "--make", tmp], check=True)
        subprocess.run([sys.executable, "-m", "harness", "run", "line.toml", "--save", "line.txt", "-f", "tagged"], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        cases = [
            ("show -f tagged, 80,000 same-author lines", ["show", "many.txt", "-f", "tagged"]),
            ("run, one 10 MB completion", ["run", "big.toml", "-f", "tagged"]),
            ("run, 100,000 Action lines in one completion", ["run", "acts.toml", "-f", "tagged"]),
            ("run, 100,000 Action lines that do not parse", ["run", "prose.toml", "-f", "tagged"]),
            ("run, 100 unclosed Action lines of 100,000 chars", ["run", "open.toml", "-f", "tagged"]),
            ("replay --check, one 4 MB line", ["replay", "line.txt", "--check"]),
            ("run, 400,000 spaces then Final Answer", ["run", "spaces.toml", "-f", "tagged"]),
            ("run react-paper, 400,000 spaces then Finish", ["run", "spaces-paper.toml", "-f", "tagged"]),
            ("run governed, 400,000 spaces then Final Answer", ["run", "spaces-governed.toml", "-f", "tagged"]),
            ("agent, 10,000 files, a missing one read", ["agent", "<", "files.json"]),
            ("agent, 1,000,000 turns, max_steps 3 (74 MB)", ["agent", "<", "turns.json"]),
        ]
        print(f"{'case':<48} {'seconds':>8} {'CPU s':>6} {'peak MB':>8}   (best of {REPEAT})")
        for name, args in cases:
            runs = [timed(args, d) for _ in range(REPEAT)]  # a shared machine: the least disturbed run
            seconds, cpu, peak = min(runs, key=lambda r: r[0])
            print(f"{name:<48} {seconds:>8.2f} {cpu:>6.2f} {peak:>8.0f}")


if __name__ == "__main__":
    main()
