"""The proxy over real sockets: an agent's calls recorded as transcripts, replayed with the
upstream gone, drift refused with a diff, and hostile input answered in one line.

The upstream is tests/loopback.py's server (canned answers, queued, never chosen by reading
the prompt); the agent is a few lines of httpx that keep a buffer, as any agent does.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from harness.errors import HarnessError
from harness.proxy import MAX_REQUEST, Proxy, serve
from harness.saved import load_record
from harness.traffic import REWRITTEN
from harness.transcript import Author
from tests.loopback import FakeServer, Reply

KEY = "sk-proxy-test-secret-123456"
PROMPT = "Use the tools.\nQuestion: 2+3?\nThought:"


def answer(text: str, finish: str = "stop") -> Reply:
    data = {"choices": [{"index": 0, "text": text, "finish_reason": finish}], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}
    return Reply(chunks=[json.dumps(data).encode()], content_type="application/json")


@pytest.fixture
def upstream():
    fake = FakeServer()
    yield fake
    fake.close()


class Session:
    """A proxy on a free port, stopped and saved by `close`."""

    def __init__(self, folder: Path, mode: str, upstream: str | None = None) -> None:
        self.proxy = Proxy(folder, mode, upstream)
        self.server = serve(self.proxy)
        self.url = self.proxy.url

    def close(self, save: bool = True) -> list[Path]:
        self.server.shutdown()
        self.server.server_close()
        return self.proxy.close(save)


def agent(url: str, question: str = "2+3?", strip: bool = False) -> list[str]:
    """A two-step agent: ask, append an observation and a cue, ask again (`strip`: it strips
    the model's words before sending them back, as some frameworks do)."""
    buffer, said = PROMPT.replace("2+3?", question), []
    for _ in range(2):
        r = httpx.post(f"{url}/completions", json={"model": "m", "prompt": buffer, "stop": ["Observation:"]}, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
        assert r.status_code == 200, r.text
        text = r.json()["choices"][0]["text"]
        said.append(text)
        buffer += (text.strip() if strip else text) + "\nObservation: 5\nThought:"
    return said


def test_a_run_is_recorded_as_a_transcript_with_authors_and_replays_with_the_upstream_gone(tmp_path, upstream):
    upstream.serve(answer(" add.\nAction: add(2, 3)\n"), answer(" Final Answer: 5"))
    session = Session(tmp_path / "c", "once", upstream.url)
    assert agent(session.url) == [" add.\nAction: add(2, 3)\n", " Final Answer: 5"]
    (path,) = session.close()
    record = load_record(path.read_text(), str(path))
    assert [(s.author, s.text) for s in record.transcript.spans] == [
        (Author.DEVELOPER, PROMPT), (Author.MODEL, " add.\nAction: add(2, 3)\n"),
        (Author.CODE, "\nObservation: 5\nThought:"), (Author.MODEL, " Final Answer: 5"),
    ]  # fmt: skip
    assert record.calls[0].tokens == {"prompt_tokens": 9, "completion_tokens": 4}
    upstream.close()
    replay = Session(tmp_path / "c", "once", upstream.url)  # a cassette: `once` replays it, upstream unused
    assert agent(replay.url) == [" add.\nAction: add(2, 3)\n", " Final Answer: 5"]
    assert replay.close() == [] and replay.proxy.mismatches == []


def test_a_changed_prompt_fails_closed_with_a_diff_of_the_buffer(tmp_path, upstream, capfd):
    upstream.serve(answer(" add."), answer(" done"))
    session = Session(tmp_path / "c", "once", upstream.url)
    agent(session.url)
    session.close()
    replay = Session(tmp_path / "c", "none")
    r = httpx.post(f"{replay.url}/completions", json={"model": "m", "prompt": PROMPT.replace("2+3", "2+4"), "stop": ["Observation:"]})
    assert r.status_code == 400
    message = r.json()["error"]["message"]
    assert "-developer | Question: 2+3?" in message and "+developer | Question: 2+4?" in message
    assert "+developer | Question: 2+4?" in capfd.readouterr().err
    second = PROMPT + " add.\nObservation: 6\nThought:"  # the agent's observation changed
    r = httpx.post(f"{replay.url}/completions", json={"model": "m", "prompt": second, "stop": ["Observation:"]})
    assert "-code      | Observation: 5" in r.json()["error"]["message"]
    assert " model     \\  add." in r.json()["error"]["message"]  # the recorded run, with its authors
    r = httpx.post(f"{replay.url}/completions", json={"model": "m", "prompt": PROMPT, "stop": ["Observation:"], "temperature": 1})
    assert "the settings differ: temperature null -> 1" in r.json()["error"]["message"]
    replay.close()


def test_a_rewritten_completion_is_shown_and_still_replays(tmp_path, upstream):
    upstream.serve(answer(" add.  \n"), answer(" done"))
    session = Session(tmp_path / "c", "once", upstream.url)
    agent(session.url, strip=True)
    (path,) = session.close()
    text = path.read_text()
    assert "model     | " + " add.  " in text and "code      | ⚠ harness proxy: the agent did not send back" in text
    replay = Session(tmp_path / "c", "none")
    assert agent(replay.url, strip=True) == [" add.  \n", " done"]
    replay.close()
    assert REWRITTEN.strip() in text


def test_streamed_chat_with_tool_calls_reaches_the_openai_sdk_the_same_recorded_and_replayed(tmp_path, upstream):
    openai = pytest.importorskip("openai")
    tool_calls = [{"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    data = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    upstream.serve(Reply(chunks=[json.dumps(data).encode()], content_type="application/json"))

    def ask(url: str):
        client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0)
        stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2+3?"}], tools=[{"type": "function", "function": {"name": "add", "parameters": {}}}], stream=True)
        calls = {}
        for chunk in stream:
            for call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
                calls[call.index] = (call.id, call.function.name, call.function.arguments)
        return calls

    session = Session(tmp_path / "c", "once", upstream.url)
    assert ask(session.url) == {0: ("call_1", "add", '{"a": 2, "b": 3}')}
    (path,) = session.close()
    assert "model     \\ [call call_1] add({\"a\": 2, \"b\": 3})" in path.read_text()
    replay = Session(tmp_path / "c", "none")
    assert ask(replay.url) == {0: ("call_1", "add", '{"a": 2, "b": 3}')}
    replay.close()


def test_a_failed_upstream_call_gives_the_agent_its_error_and_saves_the_run_as_model_error(tmp_path, upstream):
    upstream.serve(Reply(500, [b'{"error": {"message": "out of memory"}}'], content_type="application/json"))
    session = Session(tmp_path / "c", "once", upstream.url)
    r = httpx.post(f"{session.url}/completions", json={"model": "m", "prompt": PROMPT})
    assert r.status_code == 502 and "answered HTTP 500: out of memory" in r.json()["error"]["message"]
    (path,) = session.close()
    record = load_record(path.read_text(), str(path))
    assert record.stop_reason == "model_error" and "out of memory" in record.detail


def test_a_failed_recording_never_replaces_a_cassette(tmp_path, upstream):
    upstream.serve(answer(" add."), answer(" done"), Reply(500, [b"{}"], content_type="application/json"))
    first = Session(tmp_path / "c", "once", upstream.url)
    agent(first.url)
    first.close()
    before = (tmp_path / "c" / "run-001.txt").read_text()
    again = Session(tmp_path / "c", "all", upstream.url)
    assert httpx.post(f"{again.url}/completions", json={"model": "m", "prompt": PROMPT}).status_code == 502
    assert again.close() == []
    assert (tmp_path / "c" / "run-001.txt").read_text() == before


def test_new_episodes_replays_what_was_recorded_and_adds_what_is_new(tmp_path, upstream):
    upstream.serve(answer(" add."), answer(" done"), answer(" times."), answer(" 6"))
    first = Session(tmp_path / "c", "once", upstream.url)
    agent(first.url)
    first.close()
    more = Session(tmp_path / "c", "new_episodes", upstream.url)
    assert agent(more.url) == [" add.", " done"]  # replayed: the upstream's queue is untouched
    assert agent(more.url, "2*3?") == [" times.", " 6"]
    assert [p.name for p in more.close()] == ["run-002.txt"]
    assert len(upstream.requests) == 4


def test_a_new_episode_that_goes_on_from_a_replayed_call_is_saved_whole(tmp_path, upstream):
    upstream.serve(answer(" add."), answer(" done"), answer(" again"))
    first = Session(tmp_path / "c", "once", upstream.url)
    agent(first.url)
    first.close()
    more = Session(tmp_path / "c", "new_episodes", upstream.url)
    assert agent(more.url, strip=True) == [" add.", " again"]  # the first call replayed, the second new
    (path,) = more.close()
    record = load_record(path.read_text(), str(path))
    assert record.transcript.texts_by(Author.MODEL) == [" add.", " again"]


def test_an_api_key_in_the_header_or_the_body_never_reaches_a_file(tmp_path, upstream):
    upstream.serve(answer(f" the key is {KEY}"))
    session = Session(tmp_path / "c", "once", upstream.url)
    body = {"model": "m", "prompt": f"{PROMPT} (key {KEY})", "api_key": KEY, "user": KEY}
    r = httpx.post(f"{session.url}/completions", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 200
    assert upstream.requests[0][0]["Authorization"] == f"Bearer {KEY}"  # forwarded: the upstream needs it
    (path,) = session.close()
    text = path.read_text()
    assert KEY not in text and "(key ***)" in text and "the key is ***" in text


def test_a_key_in_an_api_key_or_x_api_key_header_is_forwarded_and_never_reaches_a_file(tmp_path, upstream):
    upstream.serve(answer(f" the key is {KEY}"), answer(f" the key is {KEY}"))
    session = Session(tmp_path / "c", "once", upstream.url)
    for header in ("api-key", "x-api-key"):
        r = httpx.post(f"{session.url}/completions", json={"model": "m", "prompt": f"{header} {KEY}"}, headers={header: KEY})
        assert r.status_code == 200
    sent = [{k.lower(): v for k, v in headers.items()} for headers, _ in upstream.requests]
    assert [sent[0].get("api-key"), sent[1].get("x-api-key")] == [KEY, KEY]  # forwarded: the upstream needs it
    paths = session.close()
    assert len(paths) == 2 and all(KEY not in path.read_text() and "the key is ***" in path.read_text() for path in paths)


@pytest.mark.parametrize(
    "raw, status, said",
    [(b"{not json", 400, "not JSON"), (b"[1, 2]", 400, "a list, not a JSON object"),
     (b'{"prompt": 5}', 400, "prompt: must be one text"), (b'{"messages": "hi"}', 400, "messages: must be a non-empty list"),
     (b'{"prompt": "hi", "n": true}', 400, "n: must be a whole number, not a boolean (true)"),
     (b'{"prompt": "hi", "max_tokens": "9"}', 400, "max_tokens: must be a whole number, not a string"),
     (b'{"prompt": "hi", "stream": 1}', 400, "stream: must be true or false, not a number (1)")],
)  # fmt: skip
def test_malformed_requests_get_one_line_naming_what_is_wrong(tmp_path, upstream, raw, status, said):
    session = Session(tmp_path / "c", "once", upstream.url)
    path = "/v1/chat/completions" if b"messages" in raw else "/v1/completions"
    r = httpx.post(session.url.removesuffix("/v1") + path, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == status and said in r.json()["error"]["message"] and "\n" not in r.json()["error"]["message"]
    assert session.close() == [] and upstream.requests == []


def test_a_huge_request_is_refused_before_its_body_is_read(tmp_path, upstream):
    session = Session(tmp_path / "c", "once", upstream.url)
    with socket.create_connection(("127.0.0.1", session.server.server_address[1])) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        s.sendall(b"Content-Length: %d\r\n\r\n" % (MAX_REQUEST + 1))
        got = b"".join(iter(lambda: s.recv(4096), b""))  # the proxy answers and closes, reading nothing more
    assert got.startswith(b"HTTP/1.1 413") and b"at most" in got
    r = httpx.get(f"{session.url}/models")  # still serving
    assert r.status_code == 200
    session.close()


def test_twenty_concurrent_runs_stay_apart(tmp_path, upstream):
    upstream.answer = lambda body: answer(f" step{body['prompt'].count('Thought:')}")  # the step, not the question
    session = Session(tmp_path / "c", "once", upstream.url)
    threads = [threading.Thread(target=agent, args=(session.url, f"{n}+{n}?")) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    paths = session.close()
    assert len(paths) == 20
    for path in paths:
        record = load_record(path.read_text(), str(path))
        assert [s.author for s in record.transcript.spans] == [Author.DEVELOPER, Author.MODEL, Author.CODE, Author.MODEL]
        assert record.transcript.texts_by(Author.MODEL) == [" step1", " step2"]


def test_a_client_that_leaves_mid_stream_does_not_stop_the_proxy(tmp_path, upstream):
    upstream.serve(answer("x" * 50_000), answer(" ok"))
    session = Session(tmp_path / "c", "once", upstream.url)
    with socket.create_connection(("127.0.0.1", session.server.server_address[1])) as s:
        body = json.dumps({"model": "m", "prompt": PROMPT, "stream": True}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        assert s.recv(100).startswith(b"HTTP/1.1 200")
    r = httpx.post(f"{session.url}/completions", json={"model": "m", "prompt": "Other"})
    assert r.json()["choices"][0]["text"] == " ok"
    assert len(session.close()) == 2  # the call the agent left is recorded too


def test_the_command_prints_its_url_and_saves_on_ctrl_c(tmp_path, upstream):
    upstream.serve(answer(" add."), answer(" done"))
    env = {**os.environ, "HARNESS_BASE_URL": upstream.url}
    proc = subprocess.Popen([sys.executable, "-m", "harness", "proxy", str(tmp_path / "c")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    agent(url)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and f"wrote 1 run to {tmp_path / 'c'}" in err
    shown = subprocess.run([sys.executable, "-m", "harness", "show", str(tmp_path / "c" / "run-001.txt"), "--format", "tagged"], capture_output=True, text=True)
    assert shown.returncode == 0 and "model     \\  done" in shown.stdout


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    for args, said in ((["--mode", "sometimes"], "--mode: must be one of once, new_episodes, all, none"), ([], "--base-url: mode once records a new cassette")):
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_BASE_URL"}
        done = subprocess.run([sys.executable, "-m", "harness", "proxy", str(tmp_path / "c"), *args], capture_output=True, text=True, env=env)
        assert (done.returncode, done.stderr.count("\n")) == (2, 1) and said in done.stderr


def test_a_recorded_run_is_an_ordinary_transcript_for_show_step_and_export(tmp_path, upstream):
    from typer.testing import CliRunner

    from harness.cli import app

    upstream.serve(answer(" add.\nAction: add(2, 3)\n"), answer(" Final Answer: 5"))
    session = Session(tmp_path / "c", "once", upstream.url)
    agent(session.url)
    (path,) = session.close()
    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(path), "--format", "tagged"])
    kept = [line for line in path.read_text().splitlines(keepends=True) if not line.startswith("# proxy: ")]
    assert shown.exit_code == 0 and shown.output == "".join(kept)  # all but the proxy's own key
    stepped = runner.invoke(app, ["step", str(path), "--frame", "2"], env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert stepped.exit_code == 0 and "Observation: 5" in stepped.output
    page = tmp_path / "run.html"
    assert runner.invoke(app, ["export", str(path), "--html", str(page)]).exit_code == 0
    assert "Final Answer: 5" in page.read_text()
    checked = runner.invoke(app, ["replay", str(path), "--check"])  # its replay is the proxy's: one line says why not here
    assert checked.exit_code == 2 and checked.output.count("\n") == 1 and "harness proxy FOLDER --mode none" in checked.output


def test_a_length_that_is_not_ascii_digits_is_refused_in_one_line_not_a_traceback(tmp_path, upstream, capfd):
    session = Session(tmp_path / "c", "once", upstream.url)
    with socket.create_connection(("127.0.0.1", session.server.server_address[1])) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: \xb2\r\n\r\n")  # "²": a digit to str.isdigit
        got = b"".join(iter(lambda: s.recv(4096), b""))
    assert got.startswith(b"HTTP/1.1 411") and b"Content-Length" in got
    session.close()
    assert "Traceback" not in capfd.readouterr().err


def test_a_lone_surrogate_in_a_request_is_forwarded_saved_and_replayed(tmp_path, upstream):
    upstream.serve(answer(" ok"))
    raw = b'{"model": "m", "prompt": "Say \\ud800", "stop": ["\\udfff"]}'  # JSON can carry it; UTF-8 cannot
    session = Session(tmp_path / "c", "once", upstream.url)
    r = httpx.post(f"{session.url}/completions", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and upstream.requests[0][1]["prompt"] == "Say \ud800"  # forwarded as sent
    (path,) = session.close()
    assert "developer \\ Say \ufffd" in path.read_text(encoding="utf-8")
    session = Session(tmp_path / "c", "none")
    r = httpx.post(f"{session.url}/completions", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["choices"][0]["text"] == " ok"
    session.close()


def test_a_file_where_the_cassette_folder_should_be_is_one_line_before_anything_is_recorded(tmp_path, upstream):
    (tmp_path / "c").write_text("notes")
    done = subprocess.run([sys.executable, "-m", "harness", "proxy", str(tmp_path / "c"), "--base-url", upstream.url], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stderr.count("\n")) == (2, 1) and "cannot record a cassette into it (Not a directory)" in done.stderr
    assert (tmp_path / "c").read_text() == "notes"


def test_a_cassette_folder_that_cannot_be_written_is_one_line_and_exit_2_before_serving(tmp_path, upstream):
    folder = tmp_path / "c"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root writes anywhere: a read-only file system's folder then
        folder = Path("/sys/kernel")
        if not folder.is_dir():
            pytest.skip("no folder this user cannot write into")
    done = subprocess.run([sys.executable, "-m", "harness", "proxy", str(folder), "--base-url", upstream.url], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (2, "", 1)  # no URL: it never served
    assert f"{folder}: cannot record a cassette into it (" in done.stderr


def test_a_second_proxy_recording_into_the_same_folder_is_refused_and_the_first_keeps_its_runs(tmp_path, upstream):
    upstream.serve(answer(" one"))
    first = Session(tmp_path / "c", "once", upstream.url)
    with pytest.raises(HarnessError, match="another harness proxy is recording into this cassette"):
        Proxy(tmp_path / "c", "all", upstream.url)
    httpx.post(f"{first.url}/completions", json={"model": "m", "prompt": "First"})
    (path,) = first.close()
    assert "developer \\ First" in path.read_text()
    Proxy(tmp_path / "c", "all", upstream.url).close(save=False)  # free again once the first has saved


def test_a_cassette_edited_by_hand_into_bad_token_counts_is_one_line_naming_the_file(tmp_path, upstream):
    upstream.serve(answer(" ok"))
    session = Session(tmp_path / "c", "once", upstream.url)
    httpx.post(f"{session.url}/completions", json={"model": "m", "prompt": "Hi"})
    (path,) = session.close()
    path.write_text(path.read_text().replace('"completion_tokens": 4', '"completion_tokens": "four"'))
    with pytest.raises(HarnessError, match=r"run-001.txt: metadata calls: entry 1: tokens must map names to whole numbers"):
        Proxy(tmp_path / "c", "none")


def test_the_model_list_is_served_with_a_query_too(tmp_path, upstream):
    session = Session(tmp_path / "c", "once", upstream.url)
    assert httpx.get(f"{session.url}/models?limit=5").status_code == 200  # as /completions?... is
    session.close()


def test_an_upstream_that_does_not_serve_the_path_gets_the_backend_s_hint_to_the_agent(tmp_path, upstream):
    upstream.serve(Reply(404, [b'{"detail": "Not Found"}'], content_type="application/json"))
    session = Session(tmp_path / "c", "once", upstream.url.removesuffix("/v1"))  # the base URL without its /v1
    r = httpx.post(f"{session.url}/completions", json={"model": "m", "prompt": PROMPT})
    message = r.json()["error"]["message"]
    assert r.status_code == 502 and "answered HTTP 404: Not Found; check the base URL (it ends in /v1)" in message
    (path,) = session.close()
    assert load_record(path.read_text(), str(path)).stop_reason == "model_error"
