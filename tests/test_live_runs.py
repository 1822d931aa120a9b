"""Whole runs against live models over HTTP, through the command a user types.

Two servers: the small fake one from test_backends (real HTTP and SSE on loopback,
replies written down, so the assertions can be exact), and the real llama.cpp server that
`.ci/run` starts (HARNESS_TEST_SERVER). With the real one the tests assert plumbing a user
would notice, not answer quality.
"""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.cli_io import MODEL_FAILED
from harness.files import read_input
from harness.record import replay
from harness.saved import load_record
from harness.transcript import Author
from tests.test_backends import FakeServer, Reply, sse, text

runner = CliRunner()
SCRIPT_1 = "Thought: 6 times 7.\nAction: calculator(6 * 7)\nObservation: 41\nFinal Answer: 41\n"


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1", "HARNESS_API_KEY": "sk-secret-777"})


@pytest.fixture
def fake():
    server = FakeServer()
    yield server
    server.close()


def replies(*texts: str) -> list[list[bytes]]:
    return [sse(*(text(c) for c in t.splitlines(keepends=True)), text("", "stop"), "[DONE]") for t in texts]


def serve(fake: FakeServer, answers: list[list[bytes]]) -> None:
    queue = list(answers)
    original = fake.httpd.RequestHandlerClass.do_POST

    def do_post(handler):
        fake.reply = Reply(chunks=queue.pop(0) if queue else [])
        original(handler)

    fake.httpd.RequestHandlerClass.do_POST = do_post


def test_a_live_run_cuts_at_the_stop_saves_and_replays_offline(fake, tmp_path):
    serve(fake, replies(SCRIPT_1, "Final Answer: 42\n"))
    saved = tmp_path / "live.txt"
    result = invoke("run", "calculator", "--model", "openai:m", "--base-url", fake.url, "--save", str(saved), "-f", "tagged")
    assert result.exit_code == 0, result.output
    record = load_record(read_input(saved), str(saved))
    assert (record.stop_reason, record.final_answer) == ("final_answer", "42")
    assert fake.requests[0][1]["stop"] == ["Observation:"]  # the server was told the stop
    assert "Observation: 41" not in record.transcript.text  # and the client cut it as well
    assert "sk-secret-777" not in saved.read_text(encoding="utf-8") + result.output
    fake.close()  # no server now: the replay is offline, byte for byte
    assert replay(saved.read_text(encoding="utf-8"), str(saved)).matches
    assert invoke("replay", str(saved), "--check").exit_code == 0


def test_a_run_with_the_servers_token_counts_replays_offline_keeping_them(fake, tmp_path):
    from tests.loopback import USAGE

    fake.serve(*(Reply(chunks=answer[:-1] + sse(USAGE, "[DONE]")) for answer in replies("Thought: 6 times 7.\nAction: calculator(6 * 7)\n", "Final Answer: 42\n")))
    saved = tmp_path / "counted.txt"
    assert invoke("run", "calculator", "--model", "openai:m", "--base-url", fake.url, "--save", str(saved)).exit_code == 0
    record = load_record(read_input(saved), str(saved))
    assert [c.tokens for c in record.calls] == [{"prompt_tokens": 12, "evaluated_tokens": 4, "completion_tokens": 3}] * 2
    fake.close()
    assert invoke("replay", str(saved), "--check").exit_code == 0  # facts of the recording are kept


def test_peek_reads_past_the_stop_only_to_record_what_it_prevented(fake, tmp_path):
    serve(fake, replies(SCRIPT_1, "Final Answer: 42\n"))
    saved = tmp_path / "peek.txt"
    result = invoke("run", "calculator", "--model", "openai:m", "--base-url", fake.url, "--peek", "4", "--save", str(saved))
    assert result.exit_code == 0, result.output
    assert "stop" not in fake.requests[0][1]  # not sent: the client cuts, and reads on a little
    record = load_record(read_input(saved), str(saved))
    assert (record.calls[0].cut, record.calls[0].cut_by) == ("Observation: 41\n", "stop")
    assert "Observation: 41" not in record.transcript.text
    assert "✂ cut by the stop sequence, never in the buffer: Observation: 41⏎" in result.stdout


def test_a_server_that_dies_mid_run_is_model_error_exit_3_and_the_run_is_saved(fake, tmp_path):
    serve(fake, [replies(SCRIPT_1)[0], sse(text("Thought: the"))])  # the second stream just ends
    saved = tmp_path / "died.txt"
    result = invoke("run", "calculator", "--model", "openai:m", "--base-url", fake.url, "--save", str(saved))
    assert result.exit_code == MODEL_FAILED, result.output
    record = load_record(read_input(saved), str(saved))
    assert record.stop_reason == "model_error" and record.detail
    assert record.transcript.texts_by(Author.MODEL)[0].startswith("Thought: 6 times 7.")
    assert record.scenario.model_error == (2, record.detail)  # recorded, so the replay fails there too
    fake.close()
    again = replay(saved.read_text(encoding="utf-8"), str(saved))
    assert again.matches and again.record.stop_reason == "model_error"


def test_replay_with_a_live_model_shows_where_it_now_diverges(fake, tmp_path):
    saved = tmp_path / "n.txt"
    assert invoke("run", "calculator", "--save", str(saved)).exit_code == 0
    serve(fake, replies("Thought: I just know.\nFinal Answer: 7\n"))
    result = invoke("replay", str(saved), "--check", "--model", "openai:m", "--base-url", fake.url)
    assert result.exit_code == 1
    assert "step 1" in result.stdout and "Final Answer: 7" in result.stdout


# --- the real llama.cpp server (.ci/run starts it) -----------------------------------------------


@pytest.fixture(scope="module")
def real_server() -> str:
    url = os.environ.get("HARNESS_TEST_SERVER")
    if not url:
        reason = "no llama.cpp server: HARNESS_TEST_SERVER is not set (bash .ci/run starts one)"
        if os.environ.get("CI"):
            pytest.fail(f"the real-model tests must run in CI: {reason}")
        pytest.skip(reason)
    return url


def test_a_real_model_run_ends_with_a_named_reason_and_replays_offline(real_server, tmp_path):
    saved = tmp_path / "real.txt"
    result = invoke("run", "live-distance", "--model", "openai:smollm2", "--base-url", real_server, "--max-steps", "3", "--save", str(saved))
    assert result.exit_code in (0, MODEL_FAILED), result.output
    record = load_record(read_input(saved), str(saved))
    assert record.stop_reason in ("final_answer", "max_steps", "format_error_limit", "unknown_tool_limit", "model_error")
    for completion in record.transcript.texts_by(Author.MODEL):  # with the stop on, no made-up result
        assert not any(line.startswith("Observation:") for line in completion.split("\n"))
    assert any(span.author is Author.MODEL and span.text for span in record.transcript.spans)
    assert replay(saved.read_text(encoding="utf-8"), str(saved)).matches  # no server needed
    events = invoke("run", "live-distance", "--model", "openai:smollm2", "--base-url", real_server, "--max-steps", "1", "-f", "events")
    names = [json.loads(line)["event"] for line in events.stdout.splitlines()]
    assert names[0] == "appended" and "text_delta" in names and names[-1] == "stopped"


def test_a_real_chat_run_sends_messages_and_replays_offline(real_server, tmp_path):
    """llama.cpp's own server, through /v1/chat/completions: its chat template frames the messages."""
    saved = tmp_path / "chat.txt"
    result = invoke("run", "calculator", "--model", "chat:smollm2", "--base-url", real_server, "--max-steps", "2", "--max-tokens", "48", "--save", str(saved))
    assert result.exit_code in (0, MODEL_FAILED), result.output
    record = load_record(read_input(saved), str(saved))
    assert record.scenario.endpoint == "chat" and record.calls[0].messages == 1
    assert all(c.messages == 2 * i + 1 for i, c in enumerate(record.calls))  # user, then assistant + user per call
    for completion in record.transcript.texts_by(Author.MODEL):  # the stops, enforced by the client too
        assert not any(line.startswith("Observation:") for line in completion.split("\n"))
    assert replay(saved.read_text(encoding="utf-8"), str(saved)).matches


@pytest.mark.parametrize(
    "command",
    [["replay", "SAVED"], ["replay", "SAVED", "--check"], ["export", "calculator", "--html", "PAGE"], ["step", "calculator", "--frame", "0"]],
    ids=["replay", "replay --check", "export", "step --frame"],
)
def test_every_command_that_runs_a_live_model_exits_3_with_its_error_line_when_it_fails(fake, tmp_path, command):
    saved, page = tmp_path / "n.txt", tmp_path / "page.html"
    assert invoke("run", "calculator", "--save", str(saved)).exit_code == 0
    serve(fake, [sse(text("Thought: the"))])  # the stream ends without finishing: the call fails
    args = [str(saved) if a == "SAVED" else str(page) if a == "PAGE" else a for a in command]
    result = invoke(*args, "--model", "openai:m", "--base-url", fake.url)
    assert result.exit_code == MODEL_FAILED, result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [line for line in result.stderr.splitlines() if line.startswith("error: model_error: ")] != []
    if command[0] == "export":
        assert page.is_file()  # written all the same: the page shows where it failed
