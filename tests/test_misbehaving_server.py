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
    "a stream that never ends": (Reply(chunks=GOOD_START, repeat=sse(text("word " * 200))[0]), "passed 20,000 characters"),  # 1,000 a chunk: the bound comes long before 3 s, however busy the machine
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


@pytest.mark.parametrize("bad", ["nine", True, 1e999, -3, 2.5], ids=["a string", "true", "1e999", "negative", "a fraction"])
def test_malformed_token_counts_are_dropped_with_a_note_and_the_file_loads(fake, tmp_path, bad):
    usage = {"prompt_tokens": 12, "completion_tokens": bad, "prompt_tokens_details": "lots"}
    fake.serve(Reply(chunks=sse(text("Final Answer: 42\n"), text("", "stop"), {"choices": [], "usage": usage}, "[DONE]")))
    result, saved = live_run(fake, tmp_path)
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.decode().splitlines() if line.startswith("note:")]
    assert any(n.startswith("note: the server's usage.completion_tokens is ") for n in notes)
    assert any("usage.prompt_tokens_details is a string" in n for n in notes)
    calls = json.loads(next(line[9:] for line in saved.read_text().splitlines() if line.startswith("# calls: ")))
    assert calls[0]["tokens"] == {"prompt_tokens": 12, "evaluated_tokens": None, "completion_tokens": None}
    assert harness("show", str(saved)).returncode == 0
    assert harness("replay", str(saved), "--check").returncode == 0


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



# --- secrets: the key and a URL's password are scrubbed where text enters ----------------

def no_secret(*outputs: bytes) -> None:
    """Not even the start of the key's secret part (what a message cut before scrubbing leaks)."""
    for output in outputs:
        assert KEY[8:12].encode() not in output and b"hunter2" not in output


def test_the_key_echoed_in_the_completion_is_scrubbed_even_split_across_events(fake, tmp_path):
    head, tail = KEY[:11], KEY[11:]
    fake.serve(
        Reply(chunks=sse(text(f"Thought: my key is Bearer {head}"), text(f"{tail}.\nFinal Answer: {KEY}\n"), text("", "stop"), "[DONE]"))
    )
    result, saved = live_run(fake, tmp_path)
    assert result.returncode == 0, result.stderr
    no_secret(result.stdout, result.stderr, saved.read_bytes())
    assert "my key is Bearer ***." in saved.read_text() and '# final_answer: "***"' in saved.read_text()
    shows_and_replays(saved)


@pytest.mark.parametrize("key", ["none", "EMPTY", "ollama", "lm-studio", "abc1234"])
def test_a_placeholder_or_short_key_is_not_scrubbed_from_what_the_model_writes(fake, tmp_path, key):
    # Local servers are given placeholder keys; the model's own words stay as it wrote them.
    fake.serve(Reply(chunks=sse(text(f"Thought: {key} of the tools.\nFinal Answer: {key}\n"), text("", "stop"), "[DONE]")))
    saved = tmp_path / "run.txt"
    result = harness("run", "calculator", "--model", "openai:m", "--base-url", fake.url, "--save", str(saved), "-f", "tagged", key=key)
    assert result.returncode == 0, result.stderr
    assert fake.requests[0][0]["Authorization"] == f"Bearer {key}"
    assert f"Thought: {key} of the tools." in saved.read_text() and f'# final_answer: "{key}"' in saved.read_text()
    assert f"{key} of the tools".encode() in result.stdout and b"***" not in result.stdout + saved.read_bytes()


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (Reply(chunks=sse(text("Hi"), "not json: $AUTH")), "not JSON: 'not json: Bearer ***'"),
        (Reply(content_type="text/html; $AUTH"), "answered with text/html; Bearer ***"),
        (Reply(401, [b'{"error": {"message": "' + b"x" * 170 + b' bad key: $AUTH"}}'], content_type="application/json"), "bad key: Bearer ***"),
        (Reply(chunks=sse({"error": {"message": "you sent $AUTH"}})), "mid-stream: you sent Bearer ***"),
    ],
    ids=["a non-JSON event", "a quoted header", "a long 401 body", "an error event"],
)
def test_the_key_echoed_in_an_error_is_scrubbed_before_the_message_is_cut(fake, tmp_path, reply, says):
    fake.reply = reply
    result, saved = live_run(fake, tmp_path)
    assert result.returncode == 3
    [line] = errors(result)
    assert says in line
    no_secret(result.stdout, result.stderr, saved.read_bytes())
    shows_and_replays(saved)


def test_a_urls_password_is_in_no_output(fake, tmp_path):
    url = fake.url.replace("http://", "http://user:hunter2@")
    fake.serve(Reply(chunks=sse(text("Thought: the URL had hunter2 in it.\nFinal Answer: 1\n"), text("", "stop"), "[DONE]")))
    saved = tmp_path / "run.txt"
    result = harness("run", "calculator", "--model", "openai:m", "--base-url", url, "--save", str(saved), "-f", "tagged")
    assert result.returncode == 0, result.stderr
    no_secret(result.stdout, result.stderr, saved.read_bytes())
    for bad in ("ftp://user:hunter2@host/v1", "http://user:hunter2@[::1/v1", "http://user:hunter2@host:80a/v1"):
        refused = harness("run", "calculator", "--model", "openai:m", "--base-url", bad)
        assert refused.returncode == 2 and refused.stderr.decode().startswith("error: --base-url: ")
        no_secret(refused.stdout, refused.stderr)


@pytest.mark.parametrize("user", ["user:hunter2", "us%65r:hunt%65r2"])  # as written, and percent-encoded
def test_a_urls_password_sent_as_basic_auth_is_scrubbed_when_echoed(fake, tmp_path, user):
    import base64

    url = fake.url.replace("http://", f"http://{user}@")
    fake.serve(Reply(chunks=sse(text("Thought: I was sent $AUTH.\nFinal Answer: 1\n"), text("", "stop"), "[DONE]")), Reply(401, [b'{"error": "bad: $AUTH"}']))
    sent = "Basic " + base64.b64encode(b"user:hunter2").decode()
    saved = tmp_path / "run.txt"
    result = harness("run", "calculator", "--model", "openai:m", "--base-url", url, "--save", str(saved), "-f", "tagged")
    assert fake.requests[0][0]["Authorization"] == sent  # httpx sends the URL's user and password
    failed = harness("run", "calculator", "--model", "openai:m", "--base-url", url, "-f", "tagged")
    for output in (result.stdout, result.stderr, saved.read_bytes(), failed.stdout, failed.stderr):
        assert sent.split()[1].encode() not in output
    assert b"bad: " in failed.stderr


# --- bad input: one line, exit 2 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "base_url", "says"),
    [
        ("sk-caf\u00e9-123456", None, "error: HARNESS_API_KEY: the API key holds"),
        ("sk-abc\n123456", None, "error: HARNESS_API_KEY: the API key holds"),
        (KEY, "http://[::1/v1", "error: --base-url: is not a URL that can be read, and is not shown"),
        (KEY, "http://127.0.0.1:41519a/v1", "error: --base-url: is not a URL that can be read, and is not shown"),
        (KEY, "http://127.0.0.1:1/v 1", "error: --base-url: 'http://127.0.0.1:1/v 1' holds a space"),
    ],
)
def test_a_bad_key_or_base_url_is_one_line_and_exit_2(tmp_path, key, base_url, says):
    args = ["run", "calculator", "--model", "openai:m", "--save", str(tmp_path / "x.txt")]
    result = harness(*args, *(["--base-url", base_url] if base_url else []), key=key)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(says), lines
    assert not (tmp_path / "x.txt").exists()


@pytest.mark.parametrize("tail", ["?key=SECRETSECRET", "#SECRETSECRET", "?", "/?a=SECRETSECRET#b"])
@pytest.mark.parametrize("source", ["--base-url", "HARNESS_BASE_URL"])
def test_a_base_url_with_a_query_or_fragment_is_refused_naming_where_it_came_from(fake, tmp_path, tail, source):
    # The call's path is appended to the base URL: a query would land inside the path
    # ("/v1?key=K/completions") and a fragment is never sent. Neither is quoted back.
    url = fake.url + tail
    saved = tmp_path / "x.txt"
    args = ["run", "calculator", "--model", "openai:m", "--save", str(saved)]
    env = {**os.environ, "HARNESS_API_KEY": KEY, "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_BASE_URL", None)
    if source == "--base-url":
        args += ["--base-url", url]
    else:
        env["HARNESS_BASE_URL"] = url
    result = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, env=env, timeout=30)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {source}: "), lines
    assert "query" in lines[0] or "fragment" in lines[0]
    assert b"SECRET" not in result.stdout + result.stderr
    assert not saved.exists() and fake.requests == []


def test_a_malformed_base_url_from_the_environment_is_named_as_the_environment(tmp_path):
    env = {**os.environ, "HARNESS_API_KEY": KEY, "HARNESS_BASE_URL": "http://[::1/v1"}
    result = subprocess.run([sys.executable, "-m", "harness", "run", "calculator", "--model", "openai:m"], capture_output=True, env=env, timeout=30)
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [result.stderr.decode().strip()]
    assert result.stderr.decode().startswith("error: HARNESS_BASE_URL: is not a URL that can be read, and is not shown")


def test_a_lone_surrogate_from_a_python_tool_is_written_as_the_replacement_character(tmp_path):
    (tmp_path / "tools.py").write_text('def odd(x):\n    """Odd text."""\n    return "a\\ud800b"\n', encoding="utf-8")
    completions = ["Thought: ask.\\nAction: odd(1)\\n", "Final Answer: done\\n"]
    scenario = tmp_path / "odd.toml"
    scenario.write_text(
        f'question = "q"\ncompletions = [{", ".join(json.dumps(c) for c in completions)}]\n[tools.odd]\npython = "tools:odd"\n'.replace("\\\\n", "\\n"),
        encoding="utf-8",
    )
    saved = tmp_path / "odd.txt"
    for fmt in ("rich", "tagged", "json", "events"):
        result = harness("run", str(scenario), "--save", str(saved), "-f", fmt)
        assert result.returncode == 0, result.stderr
        assert "a\ufffdb" in result.stdout.decode("utf-8")
    assert "Observation: a\ufffdb" in saved.read_text(encoding="utf-8")
    shows_and_replays(saved, ("rich", "tagged", "json", "events"))


@pytest.mark.parametrize("field", ["prompt", "prompt_file"])
@pytest.mark.parametrize("value", ["a\x00b.txt", "p" * 5000, "p" * 300 + ".txt"], ids=["NUL", "5000 chars", "a 300-char part"])
def test_a_prompt_name_holding_nul_or_thousands_of_characters_is_one_line_in_a_scenario_and_a_saved_file(tmp_path, field, value):
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'question = "q"\n{field} = {json.dumps(value)}\n', encoding="utf-8")
    refused = harness("run", str(scenario))
    lines = refused.stderr.decode().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and f"{field}: " in lines[0] and len(lines[0]) < 300, lines
    saved = tmp_path / "run.txt"
    assert harness("run", "calculator", "--save", str(saved)).returncode == 0
    head, meta, rest = saved.read_text(encoding="utf-8").partition("\n# scenario: ")
    data, newline, records = rest.partition("\n")
    data = json.loads(data) | {field: value}
    # A mailed file without a source line (as files from before sources were): its replay
    # takes the scenario from the metadata, so the name is looked up there.
    head = "\n".join(line for line in head.split("\n") if not line.startswith("# source: "))
    saved.write_text(head + meta + json.dumps(data) + newline + records, encoding="utf-8")
    for command in (["show"], ["step", "--frame", "0"], ["replay", "--check"]):
        result = harness(*command, str(saved))
        lines = result.stderr.decode().splitlines()
        if command[0] != "replay" and result.returncode == 0:
            continue  # showing looks no file up: a prompt_file that names none is only text
        assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) < 400, (command, lines)


# --- ready when the server is ------------------------------------------------------------------


def test_wait_for_server_retries_the_first_connection_until_the_server_listens(tmp_path):
    import threading

    with _closed_url() as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    late: list[FakeServer] = []

    def start_late() -> None:
        import time

        time.sleep(1.5)
        server = FakeServer(port)
        server.serve(Reply(chunks=sse(text("Final Answer: 42\n"), text("", "stop"), "[DONE]")))
        late.append(server)

    starter = threading.Thread(target=start_late)
    starter.start()
    try:
        saved = tmp_path / "run.txt"
        result = harness("run", "calculator", "--model", "openai:m", "--base-url", url, "--wait-for-server", "20", "--save", str(saved), "-f", "tagged")
        assert result.returncode == 0, result.stderr
        assert b"Final Answer: 42" in result.stdout
    finally:
        starter.join()
        for server in late:
            server.close()


def test_without_waiting_a_server_not_yet_listening_is_model_error_that_says_how_to_wait(tmp_path):
    with _closed_url() as url:
        result = harness("run", "calculator", "--model", "openai:m", "--base-url", url, "--wait-for-server", "0.5")
    assert result.returncode == 3 and "--wait-for-server SECONDS" in errors(result)[0]
