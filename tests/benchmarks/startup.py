"""What starting costs: `harness --help` and `harness run nimbus`, against the floor below them.

    python tests/benchmarks/startup.py            # instructions, then hyperfine (30 runs each)
    python tests/benchmarks/startup.py --runs 10

Each command runs to /dev/null, counted two ways: machine instructions (valgrind's
callgrind; a busy machine does not change them, so they judge a change) and wall time
(hyperfine, its mean and min; what the issue's targets name). The floor is what harness
cannot go below while typer is its command-line library (typer vendors click):

    python -c pass                   the interpreter alone
    python -c "import typer"         and typer
    a two-command typer app --help   and typer's help, with harness's settings (no rich);
                                     also with its start-up frozen, as harness/__main__.py does

The harness commands are run as `python -m harness` (valgrind) and through the installed
script beside this interpreter (hyperfine), as a user types them. Compile the bytecode
first (`python -m compileall -q harness`): with PYTHONDONTWRITEBYTECODE set, every
process would compile each module again. Not a test: it prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
MINIMAL = '''import gc
import sys

if sys.argv.pop(1) == "frozen":  # start-up as harness/__main__.py treats it
    gc.disable()
    import typer

    gc.freeze()
    gc.enable()
import typer

app = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)


@app.command()
def hello(name: str) -> None:
    """Say hello."""
    print(name)


@app.command()
def bye() -> None:
    """Say goodbye."""


app()
'''


def instructions(command: list[str]) -> int:
    """Machine instructions of one run of `command`, counted by valgrind's callgrind."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command], capture_output=True, text=True, check=True)
    return int(done.stderr.split("Collected : ")[1].split()[0])


def interleaved(commands: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Wall seconds of each command, run in turn (one round runs each once), so that a busy
    spell of a shared machine falls on all of them alike, not on whichever hyperfine ran then."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="hyperfine runs per command (default 30)")
    args = parser.parse_args()
    script = str(Path(PYTHON).with_name("harness"))
    with tempfile.TemporaryDirectory() as tmp:
        minimal = Path(tmp) / "minimal.py"
        minimal.write_text(MINIMAL, encoding="utf-8")
        rows = {  # name: (the command valgrind counts, the command hyperfine times)
            "python -c pass": [PYTHON, "-c", "pass"],
            "python -c 'import typer'": [PYTHON, "-c", "import typer"],
            "minimal typer app --help": [PYTHON, str(minimal), "plain", "--help"],
            "  its start-up frozen": [PYTHON, str(minimal), "frozen", "--help"],
            "harness --help": [PYTHON, "-m", "harness", "--help"],
            "harness run nimbus": [PYTHON, "-m", "harness", "run", "nimbus"],
        }
        timed = {**rows, "harness --help": [script, "--help"], "harness run nimbus": [script, "run", "nimbus"]}
        if shutil.which("valgrind") is not None:
            counts = {name: instructions(command) for name, command in rows.items()}
            print(f"{'instructions (valgrind)':<28} {'M':>8}")
            for name, count in counts.items():
                print(f"{name:<28} {count / 1e6:8.1f}")
            print(f"run nimbus / --help: {counts['harness run nimbus'] / counts['harness --help']:.2f}\n")
        else:
            print("valgrind is not installed: no instruction counts\n")
        both = {name: timed[name] for name in ("harness --help", "harness run nimbus")}
        took = interleaved(both, args.runs)
        print(f"{'wall ms, in turn':<28} {'mean':>7} {'min':>7}")
        for name, times in took.items():
            print(f"{name:<28} {sum(times) / len(times) * 1e3:7.1f} {min(times) * 1e3:7.1f}")
        mean = {name: sum(times) / len(times) for name, times in took.items()}
        ratio, low = mean["harness run nimbus"] / mean["harness --help"], min(took["harness run nimbus"]) / min(took["harness --help"])
        print(f"run nimbus / --help: {ratio:.2f} (means), {low:.2f} (mins)\n")
        if shutil.which("hyperfine") is None:
            print("hyperfine is not installed (apt install hyperfine): no wall times")
            return
        subprocess.run(
            ["hyperfine", "-N", "--warmup", "3", "--runs", str(args.runs), "--style", "basic", "--output", "null",
             *(f"--command-name={name}" for name in timed), *(shlex.join(command) for command in timed.values())],
            check=True,
        )  # fmt: skip


if __name__ == "__main__":
    main()
