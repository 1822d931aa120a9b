"""A crash of the local model's native code loses nothing: the run ends as model_error, saved.

llama.cpp's server runs in a process of its own (harness.backends.local). These tests kill that
process with SIGSEGV, as a crash in llama.cpp's own code would end it, in the middle of a
streamed reply, and check what a user keeps: the command's exit code and message, the
saved file, and its replay.

`bash .ci/run` installs the local extra and the SmolLM2 file; elsewhere these tests skip,
and with CI set they fail instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import Author, find_scenario, load_record, load_scenario, replay, run_scenario


def need(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"this test must run in CI: {reason}")
    pytest.skip(f"{reason} (bash .ci/run runs it)")


@pytest.fixture(scope="module")
def local_model():
    try:
        import llama_cpp  # noqa: F401

        from harness.backends.local import LocalModel, smollm2_path

        smollm2_path()
    except Exception as e:  # not installed, or the model file is missing
        need(f"the local model is not available: {e}")
    model = LocalModel(max_tokens=64)
    yield model
    model.close()


def test_a_closed_local_model_says_so(local_model):
    from harness.backends.local import LocalModel
    from harness.errors import HarnessError

    model = LocalModel(local_model.file, max_tokens=8)
    model.close()
    with pytest.raises(HarnessError, match=r"is closed; make another"):  # (it was a ValueError: the socket is closed)
        run_scenario(load_scenario(find_scenario("live-area")), model=model)


def test_a_crash_mid_stream_ends_the_run_as_model_error_and_the_next_call_starts_afresh(local_model):
    killed = []

    def listener(event) -> None:
        if type(event).__name__ == "TextDelta" and not killed:  # the model is streaming
            killed.append(local_model.server.process.pid)
            os.kill(local_model.server.process.pid, signal.SIGSEGV)

    record = run_scenario(load_scenario(find_scenario("live-area")), listener, model=local_model)
    assert killed
    assert record.stop_reason == "model_error"
    assert "SIGSEGV" in record.detail
    saved = load_record(record.saved, "crash.txt")
    assert saved.stop_reason == "model_error" and saved.detail == record.detail
    again = replay(record.saved, "crash.txt")
    assert again.record.stop_reason == "model_error"  # the replay fails where the recording did
    # The model is started afresh for the next run.
    after = run_scenario(load_scenario(find_scenario("live-area")), model=local_model)
    assert after.stop_reason != "model_error", after.detail
    assert local_model.server.process.pid != killed[0]
    assert after.transcript.texts_by(Author.MODEL)[0]


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_through_the_command_a_crash_is_exit_3_one_line_and_the_run_saved(local_model, tmp_path):
    saved = tmp_path / "run.txt"
    command = [sys.executable, "-u", "-m", "harness", "run", "live-area", "--model", "local", "--max-tokens", "64", "-f", "events", "--save", str(saved)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as harness:
        for line in harness.stdout:
            if json.loads(line)["event"] == "text_delta":  # the model is streaming: crash it
                [worker] = children(harness.pid)
                os.kill(worker, signal.SIGSEGV)
                break
        rest, errors = harness.communicate(timeout=120)
    assert harness.returncode == 3, errors
    assert "Traceback" not in errors
    said = errors.strip().splitlines()
    assert said[0].startswith("error: model_error:") and "SIGSEGV" in said[0], errors  # one line says why
    assert said[1:] == [f"wrote {saved}"], errors
    record = load_record(saved.read_text(encoding="utf-8"), str(saved))
    assert record.stop_reason == "model_error"


def gone(pid: int, seconds: float = 15.0) -> bool:
    """Has process `pid` ended (a zombie counts: it holds no memory and no port) within `seconds`?"""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("ending", ["done", "killed"])
def test_the_model_process_ends_with_harness_however_harness_ends(local_model, ending):
    """Harness exits with os._exit (no atexit, no finalizers), and SIGKILL runs nothing at all:
    the model's process ends because its stdin, harness's end of a pipe, closes."""
    command = [sys.executable, "-u", "-m", "harness", "run", "live-area", "--model", "local", "--max-tokens", "64", "-f", "events"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as harness:
        for line in harness.stdout:
            if json.loads(line)["event"] == "text_delta":  # the model is running
                [server] = children(harness.pid)
                if ending == "killed":
                    harness.kill()
                break
        harness.communicate(timeout=120)
    assert harness.returncode == (-signal.SIGKILL if ending == "killed" else 0)
    assert gone(server), f"the model's process {server} outlived harness"


def while_it_loads(act) -> tuple[subprocess.Popen, str, int]:
    """`harness run live-area --model local`, and act(harness, server) as soon as the model's
    process is started (loading the model takes a second or more): the command, its stderr, the process."""
    command = [sys.executable, "-u", "-m", "harness", "run", "live-area", "--model", "local"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as harness:
        deadline = time.monotonic() + 30
        while not (started := children(harness.pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        [server] = started
        act(harness, server)
        out, errors = harness.communicate(timeout=60)
    return harness, errors, server


def test_a_ctrl_c_while_the_model_loads_is_one_line_130_and_stops_it(local_model):
    harness, errors, server = while_it_loads(lambda harness, server: harness.send_signal(signal.SIGINT))
    assert (harness.returncode, errors) == (130, "interrupted\n")
    assert gone(server)


def test_the_model_process_imports_nothing_from_the_current_folder(local_model, tmp_path):
    """A tool (or an agent) can write files where harness runs: a uvicorn.py there is not run."""
    (tmp_path / "uvicorn.py").write_text("open('imported', 'w').close()\nraise SystemExit(1)\n")
    command = [sys.executable, "-m", "harness", "run", "live-area", "--model", "local", "--max-steps", "1", "--max-tokens", "8"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "imported").exists()


def test_only_harness_can_use_the_model_process(local_model):
    """Its port is on this machine for any program: every request must carry harness's key."""
    import httpx

    assert httpx.get(f"{local_model.base_url}/models", timeout=10).status_code == 401
    assert list(local_model.stream("Hello", ()))  # harness's own calls carry it


def test_a_crash_while_the_model_loads_says_so(local_model):
    harness, errors, _ = while_it_loads(lambda harness, server: os.kill(server, signal.SIGSEGV))
    assert harness.returncode == 2 and "llama.cpp cannot load it (it was killed by SIGSEGV)" in errors, errors
