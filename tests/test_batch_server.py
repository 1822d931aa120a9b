"""Many live runs at once against a real HTTP server on loopback (tests/loopback.py) that
answers each call after a delay and counts the calls it answers at once: the batch keeps
it busy within --jobs, every run keeps to its own buffer, and Ctrl-C cancels mid-batch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import regex

from harness.record import replay
from harness.saved import load_record
from tests.loopback import FakeServer, Reply, sse, text
from tests.test_stepper import HARNESS, tmux  # noqa: F401  (tmux is a fixture: a terminal of its own)

ROOT = Path(__file__).parent.parent
QUESTION = regex.compile(r"Question: What is ([0-9]{1,3}) \+ ([0-9]{1,3})\?")


def answer(body: dict) -> Reply:
    """What a model would write for the question in the prompt: an action, then the sum."""
    a, b = QUESTION.search(body["prompt"]).groups()
    if f"calculator({a} + {b})" not in body["prompt"]:  # its first call
        reply = f"Thought: I add {a} and {b}.\nAction: calculator({a} + {b})\n"
    else:
        reply = f"Thought: The calculator says so.\nFinal Answer: {int(a) + int(b)}\n"
    return Reply(chunks=sse(text(reply), text("", "stop"), "[DONE]"))


@pytest.fixture
def fake():
    server = FakeServer()
    server.answer = answer
    yield server
    server.close()


def scenarios(folder: Path, count: int) -> list[Path]:
    folder.mkdir()
    for i in range(count):
        (folder / f"sum{i}.toml").write_text(f'question = "What is {i} + {10 * i}?"\nexpect = "{11 * i}"\n\n[tools.calculator]\n', encoding="utf-8")
    return sorted(folder.glob("*.toml"))


def harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "HARNESS_API_KEY": "sk-test"}


def test_jobs_4_keeps_4_calls_in_flight_and_every_run_is_whole_and_its_own(fake, tmp_path):
    fake.delay = 0.3
    paths = scenarios(tmp_path / "s", 8)
    out, report = tmp_path / "out", tmp_path / "r.json"
    command = harness("run", str(tmp_path / "s"), "--model", "openai:m", "--base-url", fake.url, "--jobs", "4", "--save-dir", str(out), "--report", str(report), "--max-seconds", "10")
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert 1 < fake.most_in_flight <= 4
    assert len(fake.requests) == 16  # 8 runs of 2 calls: none lost, none repeated
    runs = json.loads(report.read_text())["runs"]
    assert [(r["scenario"], r["stop_reason"], r["final_answer"], r["expect"]) for r in runs] == [
        (p.stem, "final_answer", str(11 * int(p.stem[3:])), "match") for p in paths
    ]
    for path in paths:
        saved = out / f"{path.stem}.txt"
        text_ = saved.read_text(encoding="utf-8")
        i = int(path.stem[3:])
        assert load_record(text_).steps == 2
        # Only its own question, its own action: no text of another run in its buffer.
        assert regex.findall(r"What is [0-9]+ \+ [0-9]+", text_) == [f"What is {i} + {10 * i}"] * text_.count("What is ")
        assert f"calculator({i} + {10 * i})" in text_
        assert replay(text_, str(saved)).matches  # offline, byte for byte
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 8 and progress[-1].startswith("[8/8] ")


def test_ctrl_c_mid_batch_cancels_the_running_runs_saves_them_and_prints_the_summary(fake, tmp_path):
    fake.delay = 1.5
    scenarios(tmp_path / "s", 6)
    out = tmp_path / "out"
    command = harness("run", str(tmp_path / "s"), "--model", "openai:m", "--base-url", fake.url, "--jobs", "2", "--save-dir", str(out), "--max-seconds", "10")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    deadline = time.monotonic() + 20
    while len(fake.requests) < 2 and time.monotonic() < deadline:  # both threads are in a call
        time.sleep(0.05)
    assert fake.in_flight == 2
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    saved = sorted(out.iterdir())
    assert [p.name for p in saved] == ["sum0.txt", "sum1.txt"]  # the two that had started, and no other
    for path in saved:
        record = load_record(path.read_text(encoding="utf-8"))
        assert record.stop_reason == "canceled"
        assert replay(path.read_text(encoding="utf-8"), str(path)).matches
    assert stdout.splitlines()[-1] == "2 runs: 2 canceled · expect: 2 mismatch · 4 not started (interrupted)"
    assert len(fake.requests) == 2  # no run started after Ctrl-C


@pytest.mark.parametrize("stall", ["before its headers", "mid-stream"])
def test_ctrl_c_mid_batch_ends_calls_to_a_stalled_server_at_once(fake, tmp_path, stall):
    if stall == "before its headers":
        fake.delay = 60
    else:
        fake.reply = Reply(chunks=sse(text("Thought: ")) + [b": ping\n\n"], pause=0.0, stall=60)
        fake.answer = None
    scenarios(tmp_path / "s", 4)
    out = tmp_path / "out"
    command = harness("run", str(tmp_path / "s"), "--model", "openai:m", "--base-url", fake.url, "--jobs", "2", "--save-dir", str(out))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    deadline = time.monotonic() + 20
    while fake.in_flight < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # both calls are blocked in a read
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - started < 5  # not the server's 60 s, nor the read timeout's 120
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    saved = sorted(out.iterdir())
    assert len(saved) == 2 and all(load_record(p.read_text(encoding="utf-8")).stop_reason == "canceled" for p in saved)
    assert "2 canceled" in stdout.splitlines()[-1]


def test_a_second_ctrl_c_ends_a_batch_whose_tool_never_returns(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    entered = tmp_path / "entered"  # a line per run that reached its tool
    (folder / "tools.py").write_text(f"import time\n\ndef wait(seconds):\n    \"Wait.\"\n    with open({str(entered)!r}, 'a') as f:\n        f.write('in\\n')\n    time.sleep(3600)\n", encoding="utf-8")
    for name in ("a", "b", "c"):
        (folder / f"{name}.toml").write_text('question = "q"\ncompletions = ["Action: wait(1)\\n"]\n\n[tools.wait]\npython = "tools:wait"\n', encoding="utf-8")
    proc = subprocess.Popen(harness("run", str(folder), "--jobs", "2"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    deadline = time.monotonic() + 60  # both runs in their tool, however busy the machine
    while not (entered.exists() and entered.read_text().count("in") == 2):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    time.sleep(1)
    assert proc.poll() is None  # a thread cannot be stopped: the first Ctrl-C waits for them
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert stdout.splitlines()[-1] == "2 runs: 2 canceled · 1 not started (interrupted)"
    assert "interrupted: waiting for the running runs to stop; Ctrl-C again to leave them\n" in stderr  # (the first said nothing)


def test_a_batch_through_the_chat_endpoint_stays_chat_and_replays_offline(fake, tmp_path):
    """The batch's Ctrl-C wrapper must not hide that a model reads the buffer as messages."""
    from tests.loopback import delta

    def chat_answer(body: dict) -> Reply:
        a, b = QUESTION.search(body["messages"][0]["content"]).groups()
        reply = f"Thought: I add.\nAction: calculator({a} + {b})\n" if len(body["messages"]) == 1 else f"Final Answer: {int(a) + int(b)}\n"
        return Reply(chunks=sse(delta(reply), delta("", "stop"), "[DONE]"))

    fake.answer = chat_answer
    paths = scenarios(tmp_path / "s", 3)
    out = tmp_path / "out"
    command = harness("run", *map(str, paths), "--model", "chat:m", "--base-url", fake.url, "--jobs", "3", "--save-dir", str(out))
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert set(fake.paths) == {"/v1/chat/completions"}
    for path in paths:
        saved = (out / f"{path.stem}.txt").read_text(encoding="utf-8")
        record = load_record(saved)
        assert record.scenario.endpoint == "chat" and [c.messages for c in record.calls] == [1, 3]
        assert replay(saved, str(out / f"{path.stem}.txt")).matches


def noting(body: dict) -> Reply:
    """`answer`, but sum1's server sends a token count it cannot read (a note for that run)."""
    reply = answer(body)
    if "What is 1 + 10?" in body["prompt"]:
        reply.chunks.insert(-1, sse({"choices": [], "usage": {"prompt_tokens": "nine"}})[0])
    return reply


def test_a_batch_asks_the_server_what_it_counts_once_and_each_run_keeps_its_own_notes(fake, tmp_path):
    """The runs share one client and one finding of the token-count endpoint, never a model:
    a note about one run's malformed count is said for that run alone."""
    paths = scenarios(tmp_path / "s", 6)

    fake.answer = noting
    command = harness("run", str(tmp_path / "s"), "--model", "openai:m", "--base-url", fake.url, "--jobs", "3")
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(fake.extras) == 1  # the endpoint answered 404 once: no run asks again
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == ["note: sum1: the server's usage.prompt_tokens is a string, not a whole number from 0: it was dropped"]

    fake.extras_reply = (200, {"count": 77})  # a server that counts on request: every call is counted
    out = tmp_path / "out"
    command = harness("run", str(tmp_path / "s"), "--model", "openai:m", "--base-url", fake.url, "--jobs", "3", "--save-dir", str(out))
    fake.answer = answer
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for path in paths:
        calls = load_record((out / f"{path.stem}.txt").read_text(encoding="utf-8")).calls
        assert [c.tokens["prompt_tokens"] for c in calls] == [77, 77], path.stem


def _screen_until(term, pattern: str, seconds: float = 15.0) -> str:
    """The terminal's screen once `pattern` is on it (or as it is at the deadline)."""
    deadline = time.monotonic() + seconds
    while True:
        screen = "\n".join(term.screen())
        if regex.search(pattern, screen) or time.monotonic() > deadline:
            return screen
        time.sleep(0.1)


def test_on_a_terminal_the_bar_names_each_running_scenario_its_call_and_its_silence(fake, tmp_path, tmux):
    """Issue 31, item 10: a model that streams slowly and one that hung look different."""

    def slow_or_hung(body: dict) -> Reply:
        if "slow" in body["prompt"]:  # a token every 0.2 s, for a minute
            return Reply(chunks=sse(*[text("x")] * 300), pause=0.2)
        return Reply(chunks=[], stall=60)  # the headers, then nothing

    fake.answer = slow_or_hung
    folder = tmp_path / "s"
    folder.mkdir()
    for name in ("slow", "hung"):
        (folder / f"{name}.toml").write_text(f'question = "Are you {name}?"\n\n[tools.calculator]\n', encoding="utf-8")
    term = tmux(200, 10, f"HARNESS_API_KEY=sk-test {HARNESS} run {folder} --model openai:m --base-url {fake.url} --jobs 2")
    screen = _screen_until(term, r"hung call 1, no token yet after [3-9][.][0-9] s")
    assert regex.search(r"running 2 \(hung call 1, no token yet after [3-9][.][0-9] s; slow call 1, last token 0[.][0-9] s ago\)", screen), screen
    term.keys("C-c")


def test_on_a_terminal_a_note_is_a_line_of_its_own_never_on_the_bar_s(fake, tmp_path, tmux):

    fake.answer = noting
    scenarios(tmp_path / "s", 2)
    done = tmp_path / "done"
    term = tmux(200, 10, f"HARNESS_API_KEY=sk-test {HARNESS} run {tmp_path / 's'} --model openai:m --base-url {fake.url} > /dev/null; echo $? > {done}")
    screen = _screen_until(term, r"runs .* 2/2 ")
    deadline = time.monotonic() + 10
    while not (done.exists() and done.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    screen = "\n".join(term.screen())
    lines = screen.splitlines()
    assert "note: sum1: the server's usage.prompt_tokens is a string, not a whole number from 0: it was dropped" in lines, screen
    assert not any("running" in line and "note:" in line for line in lines), screen
