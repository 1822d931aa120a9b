"""The speed and memory budgets harness keeps, measured side by side in one run.

    python tests/benchmarks/budgets.py                  # every budget, one table at the end
    python tests/benchmarks/budgets.py --venv /tmp/bench-venv   # where langchain-classic is

Each row is one budget, the figure measured now and whether it holds:

    API step          one scripted step through `loop.run`, nobody listening: at most twice
                      the machine instructions of 2026-12-02 (180,191; under valgrind, which
                      a busy machine does not change), else at most 36 µs CPU (twice the
                      18 µs of that day, on another machine); and LangChain's classic
                      AgentExecutor at least 40 times slower on the same steps
    start-up          `harness run nimbus` at most 1.4 times `harness --help` (wall, the
                      fastest of 15 runs each, taken in turn)
    big input         every case of big_input.py under 2 s (the fastest of its runs)
    memory            linear in the buffer: the peak memory a step adds from 10,000 to
                      20,000 steps at most 1.5 times what it adds from 1,000 to 10,000
    plugin            pytest over 200 saved transcripts against a pytest run that only reads
                      each file and compares it with a copy: ratio <= max(2, R), R the same
                      ratio of the issue's day's code (ISSUE_DAY, from git) in the same run; 2
                      alone without git. The 2 was that day's ratio where the budget was set
                      (1.4 ms against 0.7 ms a test): no slower than the day, as the API step is
                      held to its day's instructions measured here. Measured twice: in wall time
                      (pytest's own session time, without hypothesis's plugin, which imports
                      hypothesis at the end of every session: about 90 ms in each run, which
                      would flatter the ratio) and in machine instructions a test

The figures come from the other scripts of this folder (loop.py, frameworks.py,
big_input.py, plugin.py), run as they are. Not a test: a busy machine moves the wall
times; the table says what was measured, and the note says when.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

STEP_INSTRUCTIONS = 180_191  # one step of the default dialect, nobody listening, at 2026-12-02's commit
ISSUE_DAY = "b7359aa"  # 2026-12-02's last commit, the day the budgets were set

READ_ONLY_TEST = '''
from pathlib import Path
import pytest

FILES = sorted(Path("transcripts").iterdir())


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_same(path):
    assert path.read_text(encoding="utf-8") == (Path("copies") / path.name).read_text(encoding="utf-8")
'''


def api_step(venv: str) -> list[tuple[str, str, bool | None]]:
    import frameworks

    mine = frameworks.measure("harness, nobody listening", 1_000, sys.executable)
    rows = []
    if mine is None:
        return [("API step", "the harness run failed", False)]
    if shutil.which("valgrind"):
        import loop

        per_step = (loop.instructions("default", 2_000, "none") - loop.instructions("default", 1_000, "none")) / 1_000
        rows.append(("API step, nobody listening", f"{per_step:,.0f} instructions (budget {2 * STEP_INSTRUCTIONS:,})", per_step <= 2 * STEP_INSTRUCTIONS))
    else:
        mine_us = mine / 1_000 * 1e6
        rows.append(("API step, nobody listening", f"{mine_us:.1f} µs (budget 36)", mine_us <= 36))
    other = Path(venv) / "bin" / "python"
    if other.exists() and (theirs := frameworks.measure("LangChain AgentExecutor", 1_000, str(other))) is not None:
        # each measured once more, in turn, and the best of each taken: a slow spell slows both alike
        again = frameworks.measure("harness, nobody listening", 1_000, sys.executable) or mine
        theirs = min(theirs, frameworks.measure("LangChain AgentExecutor", 1_000, str(other)) or theirs)
        ratio = theirs / min(mine, again)
        rows.append(("LangChain step / harness step", f"{ratio:.0f}x (budget >= 40x)", ratio >= 40))
    else:
        rows.append(("LangChain step / harness step", f"not measured: no langchain-classic in {venv}", None))
    return rows


def start_up() -> list[tuple[str, str, bool | None]]:
    script = str(Path(sys.executable).with_name("harness"))
    commands = {"help": [script, "--help"], "run": [script, "run", "nimbus"]}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(15):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - start)
    ratio = min(times["run"]) / min(times["help"])
    figure = f"{ratio:.2f} ({min(times['run']) * 1e3:.0f} ms / {min(times['help']) * 1e3:.0f} ms)"
    return [("run nimbus / --help", figure + " (budget 1.4)", ratio <= 1.4)]


def big_input() -> list[tuple[str, str, bool | None]]:
    done = subprocess.run([sys.executable, str(HERE / "big_input.py"), "1"], capture_output=True, text=True, check=True)
    rows = [line for line in done.stdout.splitlines() if re.search(r"\s\d+\.\d\d\s+\d+\.\d\d\s+\d+\s*$", line)]
    slowest = max(rows, key=lambda line: float(line.split()[-3]))
    seconds = float(slowest.split()[-3])
    name = slowest[:48].strip()
    return [("big input, slowest case", f"{seconds:.2f} s: {name} (budget 2)", seconds < 2)]


def memory() -> list[tuple[str, str, bool | None]]:
    import loop

    peaks = {n: loop.measure("harness", "default", n) for n in (1_000, 10_000, 20_000)}
    early = (peaks[10_000]["peak_mb"] - peaks[1_000]["peak_mb"]) / 9_000  # MB a step, 1k to 10k
    late = (peaks[20_000]["peak_mb"] - peaks[10_000]["peak_mb"]) / 10_000  # and 10k to 20k
    ratio = late / max(early, 1e-9)  # linear: about 1; quadratic: about 2 or more
    figure = f"{ratio:.2f} (KB a step: {early * 1e3:.2f}, then {late * 1e3:.2f}; {peaks[20_000]['peak_mb']:.0f} MB at 20k steps)"
    return [("memory: growth a step, late / early", figure + " (budget 1.5)", ratio <= 1.5)]


def plugin() -> list[tuple[str, str, bool | None]]:
    import plugin as bench

    with tempfile.TemporaryDirectory() as tmp:
        replays, reads, before = Path(tmp) / "replays", Path(tmp) / "reads", Path(tmp) / "before"
        _transcripts(replays, os.environ)
        for folder in ("transcripts", "copies"):
            (reads / folder).mkdir(parents=True)
            for path in (replays / "transcripts").iterdir():
                (reads / folder / path.name).write_bytes(path.read_bytes())
        (reads / "pytest.ini").write_text("[pytest]\n")
        (reads / "test_read.py").write_text(READ_ONLY_TEST)
        # The same measure of harness as it was on the issue's day, when this budget was set at
        # about twice (1.4 ms against 0.7 ms a test, on another machine): its package from git.
        old = {**os.environ, "PYTHONPATH": str(before / "package")}
        try:
            (before / "package").mkdir(parents=True)
            archive = subprocess.run(["git", "-C", str(HERE.parents[1]), "archive", ISSUE_DAY, "harness", "prompts", "transcripts"], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(before / "package")], input=archive, check=True)
            _transcripts(before / "replays", old)
        except (OSError, subprocess.CalledProcessError):  # no git, or a shallow clone without that commit
            old = None
        # pytest's own "in N s": the session, collection included, without the interpreter's start
        said = lambda folder, args, env=None: float(re.search(r" in ([\d.]+)s", bench.pytest_run(folder, [*args, "-p", "no:hypothesispytest"], env)[1])[1])  # noqa: E731
        runs = [  # in turn: a slow spell slows all three
            (said(replays, []), said(reads, ["-p", "no:harness"]), said(before / "replays", [], old) if old else None)
            for _ in range(5)
        ]  # fmt: skip
        replay_s, read_s = min(r[0] for r in runs), min(r[1] for r in runs)
        ratio = replay_s / read_s
        figure = f"{ratio:.2f} ({replay_s * 5:.2f} ms / {read_s * 5:.2f} ms a test)"  # s / 200 tests, in ms
        rows = [("pytest replay / read and compare", figure, ratio, min(r[2] for r in runs) / read_s if old else None)]
        if shutil.which("valgrind"):  # the same, in machine instructions a test, which a busy machine does not change
            mine, theirs = _per_test(replays, [], None), _per_test(reads, ["-p", "no:harness"], None)
            day = _per_test(before / "replays", [], old) / theirs if old else None
            figure = f"{mine / theirs:.2f} ({mine / 1e6:.2f}M / {theirs / 1e6:.2f}M instructions a test)"
            rows.append(("pytest replay / read, instructions", figure, mine / theirs, day))
    verdicts = []
    for name, figure, ratio, day in rows:  # at most 2, or the issue's day's ratio where that day measures more
        budget = f"budget 2, or the issue's day's {day:.2f} at {ISSUE_DAY}" if day and day > 2 else "budget 2"
        verdicts.append((name, f"{figure} ({budget})", ratio <= max(2, day or 2)))
    return verdicts


def _per_test(folder: Path, args: list[str], env: dict[str, str] | None) -> float:
    """Machine instructions one more test adds to a pytest run in `folder`: all its 200
    transcripts (and their copies) against its first 10, so that the added ones are the
    shipped scenarios in turn, as in the whole run."""
    counts = []
    for n in (10, 200):
        subset = folder.with_name(f"{folder.name}-{n}")
        shutil.copytree(folder, subset, ignore=lambda at, names: sorted(names)[n:] if Path(at).name in ("transcripts", "copies") else [])
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
        fixed = {**(env or os.environ), "PYTHONHASHSEED": "0"}  # the same set and dict orders in every run
        done = subprocess.run(command, cwd=subset, env=fixed, capture_output=True, text=True, check=True)
        counts.append(int(done.stderr.split("Collected : ")[1].split()[0]))
    return (counts[1] - counts[0]) / 190


def _transcripts(folder: Path, env: dict[str, str]) -> None:
    """200 saved transcripts under `folder`, written by the harness that `env` imports."""
    folder.mkdir(parents=True)
    (folder / "pytest.ini").write_text("[pytest]\nharness_transcripts = transcripts\n")
    # a run names its scenario relative to where it ran: here, the ini's folder
    write = f"import sys; sys.path.insert(0, {str(HERE)!r}); import plugin, pathlib; plugin.write_transcripts(pathlib.Path('transcripts'), 200)"
    subprocess.run([sys.executable, "-c", write], cwd=folder, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--venv", default="/tmp/bench-venv", help="a venv with langchain-classic (frameworks.py's)")
    args = parser.parse_args()
    rows = []
    for measure in (lambda: api_step(args.venv), start_up, big_input, memory, plugin):
        for name, figure, _ in measure():
            rows.append((name, figure, _))
            print(f"{name}: {figure}", flush=True)
    print(f"\n{'budget':<34} {'holds':<6} measured")
    for name, figure, holds in rows:
        print(f"{name:<34} {'-' if holds is None else 'yes' if holds else 'NO':<6} {figure}")


if __name__ == "__main__":
    main()
