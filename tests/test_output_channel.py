"""The command's own output channel (harness.captured): a reader that leaves early (`| head
-1`) cuts what is printed, never the reports, the saved files or the exit status; a Ctrl-C
while the command is still starting is one line at most and exit 130."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
HARNESS = f"{shlex.quote(sys.executable)} -m harness"

# `head -1` leaves once it has read a line; a batch's or a replay's stdout is one summary
# written at the end, so head may read it whole before leaving. `head -c 0` leaves before
# reading anything: every write harness makes then meets the closed pipe.
READERS = ["head -1", "head -c 0"]


def piped(folder: Path, args: str, reader: str) -> int:
    """`harness ARGS | READER` under `set -o pipefail`, as a CI shell runs it: its exit status."""
    done = subprocess.run(["bash", "-o", "pipefail", "-c", f"{HARNESS} {args} | {reader} >/dev/null"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode


@pytest.mark.parametrize("reader", READERS)
def test_a_failing_batch_piped_to_head_exits_3_and_writes_both_reports_and_its_files(tmp_path, reader):
    assert piped(tmp_path, "run model-error nimbus --junit j.xml --report r.json --save-dir out", reader) == 3
    assert [run["stop_reason"] for run in json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["runs"]] == ["model_error", "final_answer"]
    assert "<testsuite" in (tmp_path / "j.xml").read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model-error.txt", "nimbus.txt"]


@pytest.mark.parametrize("reader", READERS)
def test_a_replay_check_that_differs_piped_to_head_exits_1(tmp_path, reader):
    (tmp_path / "saved").mkdir()
    subprocess.run([sys.executable, "-m", "harness", "run", "nimbus", "--save", "saved/n.txt"], cwd=tmp_path, check=True, capture_output=True)
    saved = tmp_path / "saved" / "n.txt"
    saved.write_text(saved.read_text(encoding="utf-8").replace("Observation: 99.8 GB of 100 GB used", "Observation: 1 GB of 100 GB used"), encoding="utf-8")
    assert piped(tmp_path, "replay saved --check", reader) == 1


@pytest.mark.parametrize("after", [0.0, 0.001, 0.003, 0.01, 0.03, 0.1])
def test_ctrl_c_while_the_command_starts_is_130_and_one_line_at_most(after):
    # From the first import harness.__main__ makes on: `-X importtime` says when it is done.
    # Before it are the interpreter's own start and runpy finding harness.__main__, which
    # no code of harness's can guard.
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "harness", "run", "nimbus"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:
        lines.append(line)
        if len(lines) > 1 and lines[-2].rstrip().endswith("| harness"):  # the package, then the first import after it
            break
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    said = [line for line in [*lines, *err.splitlines(True)] if not line.startswith("import time:")]
    assert "Traceback" not in "".join(said) and len(said) <= 1, said
    assert proc.returncode == 130 or proc.returncode == 0 and "Final Answer" in out, (proc.returncode, said)


LANDINGS = {
    # Python 3.11 wraps whatever a descriptor's __set_name__ raises in a RuntimeError: a Ctrl-C
    # that lands there as harness imports (functools.cached_property in ipaddress, say) came
    # out as a traceback (seen once in CI, from test_ctrl_c_while_the_command_starts_...).
    "a __set_name__": """
class Landing:
    def __set_name__(self, owner, name):
        signal.raise_signal(signal.SIGINT)
        sum(range(1000))  # (a Python handler runs between instructions: here)
def app(standalone_mode):
    class Loaded:
        x = Landing()
    return 0
""",
    # and any code may make a Ctrl-C into an error of its own
    "a library's own error": """
def app(standalone_mode):
    try:
        signal.raise_signal(signal.SIGINT)
        sum(range(1000))
    except KeyboardInterrupt:
        raise ValueError("the read was cut short") from None
    return 0
""",
    # harness's own one-line errors too: a Ctrl-C made into one said "error: ..." and exit 2
    "an error of harness's own": """
import sys
from harness.errors import HarnessError
import harness.scenario
def load(*args):
    try:
        signal.raise_signal(signal.SIGINT)
        sum(range(1000))
    except KeyboardInterrupt:
        raise HarnessError("nimbus.toml", "the read was cut short") from None
harness.scenario.load_scenario = load
sys.argv[1:] = ["run", "nimbus"]
app = harness.cli.app
""",
}


@pytest.mark.parametrize("where", LANDINGS)
def test_a_ctrl_c_that_python_or_a_library_makes_another_error_is_130_and_one_line(where):
    code = f"import signal, harness.cli\n{LANDINGS[where]}\nharness.cli.app = app\nfrom harness.__main__ import main\nmain()\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "interrupted\n", "")


def test_an_error_without_a_ctrl_c_is_still_a_traceback_of_harness_own():
    code = "import harness.cli\ndef app(standalone_mode):\n    raise ValueError('a bug')\nharness.cli.app = app\nfrom harness.__main__ import main\nmain()\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert proc.returncode == 1 and "ValueError: a bug" in proc.stderr and "interrupted" not in proc.stderr


def test_a_ctrl_c_that_lands_in_a_finalizer_still_ends_the_command_as_130_and_one_line():
    # A Ctrl-C that arrives while a __del__ runs (a generator's or a file's, say)
    # cannot end the command from there: Python would print "Exception ignored in ...
    # KeyboardInterrupt" with a traceback, and go on as if nothing was pressed.
    code = """
import harness.cli
class Finalized:
    def __del__(self):
        raise KeyboardInterrupt
def app(standalone_mode):
    Finalized()
    for _ in range(10**6):
        pass
    print("not interrupted")
    return 0
harness.cli.app = app
from harness.__main__ import main
main()
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "interrupted\n", "")


def test_an_error_chain_that_loops_is_no_ctrl_c_and_no_hang():
    from harness.errors import made_of_ctrl_c

    first, second = ValueError("a"), ValueError("b")
    first.__cause__, second.__cause__ = second, first
    assert not made_of_ctrl_c(first)
    inner = KeyboardInterrupt()
    assert not made_of_ctrl_c(RuntimeError("alone"))
    wrapped = RuntimeError("wrapped")
    wrapped.__context__ = inner
    assert made_of_ctrl_c(wrapped)
