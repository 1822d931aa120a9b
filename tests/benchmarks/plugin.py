"""What replaying a folder of saved transcripts through the pytest plugin costs.

Writes N saved transcripts (default 1,000) into a temporary folder with a pytest.ini
naming it, made from the shipped scenarios in turn, each with its own question (so no two
files are alike), then runs pytest on that folder plainly and with pytest-xdist:

    python tests/benchmarks/plugin.py                 # 1,000 transcripts; plain, -n 1, -n 2, -n 4
    python tests/benchmarks/plugin.py --count 200     # a quick look

Each run is `python -m pytest -q -p no:cacheprovider [-n W]` in that folder, timed from
outside (wall time, start-up and collection included). Two more lines for scale: the
replays alone in this process (no pytest), and a collect-only run (start-up and
collection). Not a test: it prints figures; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.record import replay, run_scenario
from harness.scenario import load_scenario, shipped_scenarios

RUNS = [("collect only", ["--collect-only"]), ("plain", []), ("-n 1", ["-n", "1"]), ("-n 2", ["-n", "2"]), ("-n 4", ["-n", "4"])]


def write_transcripts(folder: Path, count: int) -> int:
    """`count` saved transcripts, the shipped scenarios in turn, each asked its own question
    (a copy of the scenario file beside the folder, which its transcript names); total bytes."""
    shipped = shipped_scenarios()
    folder.mkdir()
    (copies := folder.parent / "scenarios").mkdir(exist_ok=True)
    total = 0
    for i in range(count):
        path = shipped[i % len(shipped)]
        text = re.sub(r'^question = "(.*)"$', lambda m: f'question = "{m[1]} (run {i})"', path.read_text(encoding="utf-8"), count=1, flags=re.M)
        (copy := copies / f"{i:04d}-{path.name}").write_text(text, encoding="utf-8")
        saved = run_scenario(load_scenario(copy)).saved
        with open(folder / f"{i:04d}-{path.stem}.txt", "w", encoding="utf-8", newline="") as f:
            f.write(saved)
        total += len(saved.encode())
    return total


def replay_all(folder: Path) -> float:
    """The replays by themselves, in this process: what the plugin cannot make cheaper."""
    started = time.perf_counter()
    for path in sorted(folder.iterdir()):
        with open(path, encoding="utf-8", newline="") as f:
            assert replay(f.read(), path.name).matches, path.name
    return time.perf_counter() - started


def pytest_run(folder: Path, args: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder, capture_output=True, text=True, env=env,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(args)} failed (exit {done.returncode}): {last}")
    return elapsed, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=1000, help="how many saved transcripts (default 1000)")
    count = parser.parse_args().count
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\nharness_transcripts = transcripts\n")
        started = time.perf_counter()
        size = write_transcripts(root / "transcripts", count)
        print(f"{count} saved transcripts, {size / 1e6:.1f} MB, written in {time.perf_counter() - started:.1f} s")
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        print(f"{'run':<13} {'wall':>8} {'per transcript':>15}   pytest says")
        elapsed = replay_all(root / "transcripts")
        print(f"{'replay alone':<13} {elapsed:>7.2f}s {elapsed / count * 1000:>12.2f} ms   in this process, no pytest")
        for label, args in RUNS:
            elapsed, last = pytest_run(root, args)
            print(f"{label:<13} {elapsed:>7.2f}s {elapsed / count * 1000:>12.2f} ms   {last}")


if __name__ == "__main__":
    main()
