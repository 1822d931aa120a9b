"""A server that misbehaves, through the command a user types (a real process, a real socket).

Each case ends as promised: exit 3 (`model_error`) with one `error:` line on stderr that
names the cause, whatever --format; the run saved; `harness show` and an offline
`harness replay --check` of the saved file pass. The call bounds keep every case short
(tests/loopback.py is the server; memory is measured in test_backends.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.loopback import FakeServer, Reply, sse, text

KEY = "sk-live-0123456789abcdef"
BOUNDS = ["--max-seconds", "3", "--max-chars", "20000"]


@pytest.fixture
def fake():
    server = FakeServer()
    yield server
    server.close()


def harness(*args: str, key: str = KEY, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {**os.environ, "HARNESS_API_KEY": key, "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_BASE_URL", None)
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, env=env, timeout=timeout)


def errors(result: subprocess.CompletedProcess) -> list[str]:
    lines = result.stderr.decode("utf-8").splitlines()
    return [line for line in lines if line.startswith("error:")]


def live_run(fake: FakeServer, tmp_path: Path, *more: str, fmt: str = "tagged") -> tuple[subprocess.CompletedProcess, Path]:
    saved = tmp_path / "run.txt"
    result = harness("run", "calculator", "--model", "openai:m", "--base-url", fake.url, "--save", str(saved), "-f", fmt, *BOUNDS, *more)
    return result, saved


def shows_and_replays(saved: Path, formats: tuple[str, ...] = ("rich",)) -> None:
    """The saved file shows, and replays offline byte for byte."""
    for fmt in formats:
        shown = harness("show", str(saved), "-f", fmt)
        assert shown.returncode == 0, shown.stderr
    again = harness("replay", str(saved), "--check")
    assert again.returncode == 0, again.stdout + again.stderr
    assert KEY.encode() not in saved.read_bytes()


GOOD_START = sse(text("Thought: 6 times 7.\n"))
SURROGATE = b'data: {"choices": [{"text": "Thought: a\\ud800b\\n", "finish_reason": null}]}\n\n'

CASES = {
    # 1: unbounded calls, stopped by the bounds
    "a stream that never ends": (Reply(chunks=GOOD_START, repeat=sse(text("word "))[0]), "passed 20,000 characters"),
    "one byte a second": (Reply(chunks=sse(text("Thought: slow"), text("", "stop")), drip=1.0), "time limit of 3 s"),
    "one endless line": (Reply(chunks=[b"data: "], repeat=b"x" * 65536), "a line longer than"),
    "a comment stream that never ends": (Reply(chunks=GOOD_START, repeat=b": keep-alive\n"), "time limit of 3 s"),
    # 2: fields of the wrong shape
    "text a number": (Reply(chunks=sse({"choices": [{"text": 42}]})), "choices[0].text is a number (42), not a string"),
    "text true": (Reply(chunks=sse({"choices": [{"text": True}]})), "choices[0].text is a boolean (true), not a string"),
    "text an object": (Reply(chunks=sse({"choices": [{"text": {"a": 1}}]})), "choices[0].text is an object, not a string"),
    "text a list": (Reply(chunks=sse({"choices": [{"text": ["a"]}]})), "choices[0].text is a list, not a string"),
    "choices a string": (Reply(chunks=sse({"choices": "abc"})), "choices is a string, not a list"),
    "a choice a number": (Reply(chunks=sse({"choices": [7]})), "choices[0] is a number (7), not an object"),
    "finish_reason a number": (Reply(chunks=sse({"choices": [{"text": "a", "finish_reason": 1}]})), "choices[0].finish_reason is a number (1)"),
    "an event that is a list": (Reply(chunks=sse("[1, 2]")), "an event that is a list, not a JSON object"),
    # 3: a header that lies
    "gzip that is not gzip": (Reply(headers={"Content-Encoding": "gzip"}), "Content-Encoding: gzip"),
    # 7: events without choices are not a context overflow
    "events without choices": (Reply(chunks=sse({"id": "x"}, {"id": "y"}, "[DONE]")), "held no choices"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_misbehaving_server_ends_the_run_in_model_error_saved_and_replayable(fake, tmp_path, case):
    reply, cause = CASES[case]
    fake.reply = reply
    result, saved = live_run(fake, tmp_path)
    assert result.returncode == 3, result.stderr
    [line] = errors(result)
    assert cause in line and line.startswith("error: model_error: ")
    assert KEY.encode() not in result.stdout + result.stderr
    shows_and_replays(saved)


def test_the_default_bounds_stop_a_runaway_stream(fake, tmp_path):
    fake.reply = Reply(chunks=GOOD_START, repeat=sse(text("word " * 20))[0])
    saved = tmp_path / "run.txt"
    result = harness("run", "calculator", "--model", "openai:m", "--base-url", fake.url, "--save", str(saved), "-f", "tagged")
    assert result.returncode == 3
    assert "passed 100,000 characters" in errors(result)[0] and "--max-chars" in errors(result)[0]
    shows_and_replays(saved)


@pytest.mark.parametrize("fmt", ["rich", "tagged", "json", "events"])
def test_a_server_that_is_down_is_named_on_stderr_in_every_format(tmp_path, fmt):
    with _closed_url() as url:
        saved = tmp_path / "run.txt"
        result = harness("run", "calculator", "--model", "openai:m", "--base-url", url, "--save", str(saved), "-f", fmt)
    assert result.returncode == 3
    [line] = errors(result)
    assert line.startswith("error: model_error: cannot connect to ")
    shows_and_replays(saved)


def test_a_lone_surrogate_in_the_stream_is_written_as_the_replacement_character(fake, tmp_path):
    for fmt in ("rich", "tagged", "json", "events"):
        fake.serve(Reply(chunks=[SURROGATE, *sse(text("Final Answer: 42\n"), text("", "stop"), "[DONE]")]))
        result, saved = live_run(fake, tmp_path, fmt=fmt)
        assert result.returncode == 0, result.stderr
        assert "a\ufffdb" in result.stdout.decode("utf-8")
    assert "Thought: a\ufffdb" in saved.read_text(encoding="utf-8")
    shows_and_replays(saved, ("rich", "tagged", "json", "events"))


def test_malformed_token_counts_are_dropped_with_a_note_and_the_file_loads(fake, tmp_path):
    usage = {"prompt_tokens": 12, "completion_tokens": "nine", "prompt_tokens_details": "lots"}
    fake.serve(Reply(chunks=sse(text("Final Answer: 42\n"), text("", "stop"), {"choices": [], "usage": usage}, "[DONE]")))
    result, saved = live_run(fake, tmp_path)
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.decode().splitlines() if line.startswith("note:")]
    assert any("usage.completion_tokens is a string" in n for n in notes)
    assert any("usage.prompt_tokens_details is a string" in n for n in notes)
    calls = json.loads(next(line[9:] for line in saved.read_text().splitlines() if line.startswith("# calls: ")))
    assert calls[0]["tokens"] == {"prompt_tokens": 12, "evaluated_tokens": None, "completion_tokens": None}
    assert harness("show", str(saved)).returncode == 0


@pytest.mark.parametrize("usage", [[1, 2], {"prompt_tokens": True}, {"prompt_tokens": 1e999}, {"prompt_tokens": -1}])
def test_usage_of_the_wrong_shape_is_dropped_and_the_run_goes_on(fake, tmp_path, usage):
    fake.serve(Reply(chunks=sse(text("Final Answer: 42\n"), text("", "stop"), {"choices": [], "usage": usage}, "[DONE]")))
    result, saved = live_run(fake, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "note: the server's usage" in result.stderr.decode()
    assert '"tokens"' not in saved.read_text() and harness("show", str(saved)).returncode == 0


class _closed_url:
    """A loopback URL where nothing listens."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return f"http://127.0.0.1:{s.getsockname()[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        pass

