"""Record mode fails closed: a recording that did not complete never replaces a cassette.

`pytest --harness-record MODEL` runs each saved transcript's source again and rewrites the
file. A server that is not there, one that dies in the middle of a stream, a script that
runs out, a Ctrl-C: each leaves every file byte for byte as it was and pytest red (VCR's
rule: a cassette is never replaced by a failed recording). Driven through pytester on a
copy of the worked example's cassettes, against real sockets on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopback import FakeServer, Reply, sse, text
from textfiles import edit

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).parent / "examples" / "support"


@pytest.fixture
def cassettes(pytester) -> dict[Path, bytes]:
    """The worked example's project (its three saved transcripts), and their bytes now."""
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    files = sorted((pytester.path / "tests" / "transcripts").glob("*.txt"))
    assert len(files) == 3
    return {path: path.read_bytes() for path in files}


def unchanged(cassettes: dict[Path, bytes]) -> bool:
    return all(path.read_bytes() == before for path, before in cassettes.items())


def refusing_port() -> int:
    """A loopback port that refuses connections: bound, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_recording_against_a_server_that_refuses_connections_fails_and_writes_nothing(pytester, cassettes):
    url = f"http://127.0.0.1:{refusing_port()}/v1"
    result = pytester.runpytest("--harness-record", "openai:m", "--harness-base-url", url)
    result.assert_outcomes(failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*tests/transcripts/nimbus.txt: the recording did not complete (model_error: cannot connect to*"])
    assert "rewrote" not in result.stdout.str() and "Traceback" not in result.stdout.str()
    assert unchanged(cassettes)
    pytester.runpytest().assert_outcomes(passed=3)  # the plain run still replays the good files


def test_recording_against_a_server_that_dies_mid_stream_fails_and_writes_nothing(pytester, cassettes):
    server = FakeServer()
    # Headers and the start of an SSE stream, then the socket closes; for every call.
    server.reply = Reply(chunks=sse(text("Thought: the quota")), cut_off=True)
    try:
        result = pytester.runpytest("--harness-record", "openai:m", "--harness-base-url", server.url)
    finally:
        server.close()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*the recording did not complete (model_error: *mid-stream*"])
    assert len(server.requests) == 3  # each file's run reached the server
    assert unchanged(cassettes)


def test_a_server_that_dies_after_a_good_call_fails_the_run_it_broke(pytester, cassettes):
    """The first call of the first file is answered whole, the next one breaks off: a run
    that had begun well is as incomplete as one that never started."""
    server = FakeServer()
    good = Reply(chunks=sse(text("Thought: check.\nAction: calculator(1 + 1)\n"), text("", "stop"), "[DONE]"))
    server.serve(good, Reply(chunks=sse(text("Final Answ")), cut_off=True))
    try:
        result = pytester.runpytest("--harness-record", "openai:m", "--harness-base-url", server.url, "tests/transcripts/calculator.txt")
    finally:
        server.close()
    result.assert_outcomes(failed=1)
    assert len(server.requests) == 2
    assert unchanged(cassettes)


def test_a_scripted_recording_whose_script_runs_out_fails_and_writes_nothing(pytester, cassettes):
    scenario = pytester.path / "scenarios" / "orders.toml"
    last = scenario.read_text().index('"""Thought: Order 99 does not exist.')
    edit(scenario, scenario.read_text()[last:].split("]")[0], "")  # its script now ends before the final answer
    result = pytester.runpytest("--harness-record", "scripted", "tests/transcripts/orders.txt")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tests/transcripts/orders.txt: the recording did not complete (model_exhausted*"])
    assert unchanged(cassettes)


@pytest.mark.parametrize("option", [["--harness-record", "scripted"], ["--harness-update"]])
def test_a_write_protected_cassette_is_kept_and_named_with_the_option_that_would_rewrite_it(pytester, cassettes, option):
    scenario = pytester.path / "scenarios" / "orders.toml"
    edit(scenario, "Where is my order #42?", "Where is my order #42 now?")  # the question: a new replay, and a new recording
    orders = pytester.path / "tests" / "transcripts" / "orders.txt"
    orders.chmod(0o444)
    result = pytester.runpytest(*option, "tests/transcripts/orders.txt")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"{option[0]} tests/transcripts/orders.txt: {orders}: is write-protected*"])
    assert unchanged(cassettes)


def test_a_scenario_that_scripts_its_own_model_error_or_ctrl_c_is_recorded(pytester):
    """model_error and canceled are what these scenarios are about: recording them on their
    own script completes, and rewrites the files (here: from an edited question)."""
    pytester.makeini("[pytest]\nharness_transcripts = transcripts\n")
    folder = pytester.mkdir("transcripts")
    for name in ("model-error", "canceled"):
        shutil.copy(Path(__file__).parents[1] / "transcripts" / f"{name}.toml", pytester.path / f"{name}.toml")
        run = subprocess.run([sys.executable, "-m", "harness", "run", f"{name}.toml", "--save", f"transcripts/{name}.txt", "-f", "tagged"], cwd=pytester.path, capture_output=True)
        assert run.returncode in (0, 3), run.stderr
        edit(pytester.path / f"{name}.toml", 'question = "', 'question = "Again: ')
    result = pytester.runpytest("--harness-record", "scripted")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["rewrote transcripts/canceled.txt", "rewrote transcripts/model-error.txt"])
    assert all("Again: " in (folder / f"{name}.txt").read_text() for name in ("model-error", "canceled"))


def test_ctrl_c_while_recording_stops_the_session_and_writes_nothing(pytester, cassettes):
    server = FakeServer()
    server.reply = Reply(chunks=sse(text("Thought: ")), stall=60)  # the first call hangs after its first words
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--harness-record", "openai:m", "--harness-base-url", server.url]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    process = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests, "the recording never called the server"
        time.sleep(0.3)  # the first words arrived; the call waits for more
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
        server.close()
    assert process.returncode == pytest.ExitCode.INTERRUPTED, out.decode()
    assert b"KeyboardInterrupt" in out and b"rewrote" not in out
    assert len(server.requests) == 1  # no other file was recorded after the Ctrl-C
    assert unchanged(cassettes)
