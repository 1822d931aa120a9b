"""The server backend against a fake OpenAI-compatible server, and the backend choice.

The fake (tests/loopback.py) is a real HTTP server on 127.0.0.1 (a free port) that replays
canned server-sent events, so every failure a user can meet — nothing listening, a stuck server,
an HTTP error, a malformed event, a stream cut off, a context overflow — is produced over
a real socket. No model weights: these run in the README's test command.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from harness.backends.spec import model_from_spec
from harness.entry import PATTERN, neutralise
from harness.backends.server import ServerModel
from harness.errors import HarnessError
from harness.model import ModelError, TokenUsage
from harness.transcript import Author, Transcript
from tests.loopback import GOOD, USAGE, FakeServer, Reply, sse, text  # noqa: F401 (imported from here by other tests)

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture
def model(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> ServerModel:
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    return ServerModel("smollm2", server.url, timeout=1.0)


def failure(model: ServerModel, prompt: str = "Question: 2+2?\n") -> str:
    """The one-line message of the ModelError the call raises; it never holds the key."""
    buffer = Transcript()
    buffer.append(Author.DEVELOPER, prompt)
    with pytest.raises(ModelError) as caught:
        list(model.complete(buffer, ("Observation:",)))  # as the loop calls it: bounded, scrubbed
    message = str(caught.value)
    assert "\n" not in message and KEY not in message
    return message


# --- what a working call sends and returns -------------------------------------------


def test_text_streams_in_chunks_and_ends_with_the_servers_token_counts(model, server):
    chunks = list(model.stream("Question: 2+2?\n", ("Observation:",)))
    assert chunks == ["Thought: ", "add.", TokenUsage(prompt_tokens=12, evaluated_tokens=4, completion_tokens=3)]


def test_the_buffer_is_sent_as_it_is_with_the_stop_strings_and_every_sampling_parameter(model, server):
    buffer = "<|im_start|>user\nQuestion: 2+2?<|im_end|>\n<|im_start|>assistant\n"
    list(model.stream(buffer, ("Observation:",)))
    headers, body = server.requests[0]
    assert body["prompt"] == buffer  # no template, no framing added
    assert body["stop"] == ["Observation:"]
    assert body["stream"] is True and body["model"] == "smollm2"
    assert {"temperature": 0.0, "top_p": 1.0, "seed": 0, "repeat_penalty": 1.0}.items() <= body.items()
    assert headers["Authorization"] == f"Bearer {KEY}"


def test_no_stop_strings_means_none_are_sent(model, server):
    list(model.stream("Question: 2+2?\n", ()))
    assert "stop" not in server.requests[0][1]


def test_calls_that_read_their_stream_to_the_end_share_one_connection(model, server):
    for _ in range(3):
        assert list(model.stream("Q\n", ()))[:2] == ["Thought: ", "add."]
    assert len(server.peers) == 3 and len(set(server.peers)) == 1  # kept alive: no new connection a call


def test_a_server_that_streams_on_after_done_is_left_after_a_few_kilobytes(model, server):
    server.reply = Reply(chunks=sse(text("Hi", "stop"), "[DONE]"), repeat=b"data: more\n\n")
    assert list(model.stream("Q\n", ())) == ["Hi"]  # the call ends; the stream is not read for ever
    assert server.client_left.wait(5)
    list(model.stream("Q\n", ()))
    assert len(set(server.peers)) == 2  # that connection was dropped, not kept


@pytest.mark.parametrize("after", [Reply(stall=30), Reply(stall=0.4, repeat=b": ping\n\n")], ids=["stalls", "pings"])
def test_an_answer_whole_at_done_stands_whatever_the_server_does_after_it(model, server, after):
    import time

    server.reply = Reply(chunks=sse(text("Hi", "stop"), "[DONE]"), stall=after.stall, repeat=after.repeat)
    started = time.monotonic()
    assert list(model.stream("Q\n", ())) == ["Hi"]
    assert time.monotonic() - started < 2  # not the 1 s read timeout, nor the whole call's limit


def test_a_server_that_ignores_include_usage_gives_just_the_text(model, server):
    server.reply = Reply(chunks=sse(text("Hi"), text(".", "length"), "[DONE]"))
    assert list(model.stream("Q\n", ())) == ["Hi", "."]


def test_closing_the_stream_early_closes_the_connection(model, server):
    server.reply = Reply(chunks=sse(*[text("word ")] * 200, text("", "stop")), pause=0.01)
    chunks = model.stream("Q\n", ())
    assert next(chunks) == "word "
    chunks.close()  # what the loop does once the stop scanner cuts
    assert server.client_left.wait(5), "the server kept writing to an open connection"


@pytest.mark.parametrize("kind", ["openai", "chat"])
def test_a_closed_model_says_so_and_so_do_its_others(server, kind):
    model = model_from_spec(f"{kind}:m", server.url)
    other = model.another()  # a batch's run: one client for all
    model.close()
    buffer = Transcript()
    buffer.append(Author.DEVELOPER, "Q\n")
    for closed in (model, other):
        with pytest.raises(HarnessError, match=r"is closed; make another"):
            list(closed.send(buffer, ()))


def test_the_key_is_in_no_repr(model):
    assert KEY not in repr(model) and "smollm2" in repr(model)


# --- every failure is one ModelError line that says what to do -----------------------


def test_nothing_listening():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free, and nobody listens once it is closed
    message = failure(ServerModel("m", f"http://127.0.0.1:{port}/v1"))
    assert message.startswith(f"cannot connect to http://127.0.0.1:{port}/v1") and "HARNESS_BASE_URL" in message


def test_a_password_in_the_base_url_is_in_no_message():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = ServerModel("m", f"http://user:hunter2@127.0.0.1:{port}/v1")
    assert "hunter2" not in failure(model) and "hunter2" not in repr(model)
    assert model.where == f"http://127.0.0.1:{port}/v1"


def test_an_answer_that_is_not_a_stream(model, server):
    server.reply = Reply(chunks=[json.dumps(text("Hi", "stop")).encode()], content_type="application/json")
    assert failure(model).endswith("answered with application/json, not a stream of events: does it serve /completions with stream: true?")


def test_a_server_that_stops_sending_times_out(model, server):
    server.reply = Reply(chunks=sse(text("Thought:"), text("", "stop")), pause=3)
    assert "sent nothing for 1 s" in failure(model)


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}, "HTTP 401: Incorrect API key provided: ***; check HARNESS_API_KEY"),
        (404, {"detail": "Not Found"}, "HTTP 404: Not Found; check the base URL (it ends in /v1) and the model name"),
        (500, "x" * 1000, "HTTP 500: " + "x" * 199 + "…; the server failed"),
        (400, {"error": {"message": "Requested tokens (5000) exceed context window of 4096"}}, "longer than the model's context"),
    ],
)
def test_an_http_error_names_the_status_and_the_servers_short_message(model, server, status, body, says):
    server.reply = Reply(status, [body.encode() if isinstance(body, str) else json.dumps(body).encode()], content_type="application/json")
    assert says in failure(model)


def test_an_event_that_is_not_json(model, server):
    server.reply = Reply(chunks=sse(text("Hi"), "{not json"))
    assert failure(model).startswith("the server sent an event that is not JSON: '{not json'")


def test_an_error_event_mid_stream(model, server):
    server.reply = Reply(chunks=sse(text("Hi"), {"error": {"message": "out of memory"}}))
    assert failure(model) == "the server reported an error mid-stream: out of memory"


def test_a_stream_that_ends_without_a_finish_reason(model, server):
    server.reply = Reply(chunks=sse(text("Thought: the serv")))
    assert failure(model) == "the stream ended after 17 characters without a finish reason: did the server stop?"


def test_a_connection_cut_mid_stream(model, server):
    server.reply = Reply(chunks=sse(text("Thought: the serv")), cut_off=True)
    assert "broke mid-stream" in failure(model)


def test_an_empty_stream_is_read_as_a_context_overflow(model, server):
    server.reply = Reply(chunks=[])  # llama.cpp's answer to a prompt longer than its context
    message = failure(model, "x" * 9000)
    assert "9000 characters" in message and "longer than the model's context" in message


# --- choosing a backend ---------------------------------------------------------------


def test_openai_spec_builds_a_server_model_with_the_given_url():
    model = model_from_spec("openai:qwen2.5", "http://10.0.0.2:8000/v1/")
    assert isinstance(model, ServerModel) and (model.model, model.base_url) == ("qwen2.5", "http://10.0.0.2:8000/v1")


def test_the_base_url_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("HARNESS_BASE_URL", "http://box:9000/v1")
    assert model_from_spec("openai:m").base_url == "http://box:9000/v1"


@pytest.mark.parametrize(
    ("spec", "base_url", "says"),
    [
        ("gpt", None, "--model: unknown model 'gpt' (use local, local:PATH, openai:NAME or chat:NAME)"),
        ("openai:", None, "--model: openai:NAME needs the server's model name"),
        ("local:", None, "--model: local:PATH needs a GGUF file"),
        ("scripted", None, "--model: scripted plays a scenario's own completions"),
        ("local", "http://x/v1", "--base-url: only an openai:NAME or chat:NAME model talks to a server"),
    ],
)
def test_a_bad_spec_is_one_clear_error(spec, base_url, says):
    with pytest.raises(HarnessError) as caught:
        model_from_spec(spec, base_url)
    assert str(caught.value).startswith(says)


@pytest.mark.parametrize("missing", ["llama_cpp", "uvicorn"])  # llama.cpp, or its server's part
def test_without_the_local_extra_one_line_says_how_to_install_it(monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed: import fails
    with pytest.raises(HarnessError) as caught:
        model_from_spec("local")
    from harness.backends.local import extra

    assert str(caught.value) == f"--model: a local model needs llama-cpp-python[server], which is not installed: {extra('local')}"


def test_a_missing_gguf_file_is_named(tmp_path):
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        reason = "needs the local extra: pip install -e '.[local]' (bash .ci/run runs it)"
        pytest.fail(f"this test must run in CI: {reason}") if os.environ.get("CI") else pytest.skip(reason)
    with pytest.raises(HarnessError) as caught:
        model_from_spec(f"local:{tmp_path / 'none.gguf'}")
    assert "none.gguf" in str(caught.value) and "no such file" in str(caught.value)
    (tmp_path / "loop.gguf").symlink_to(tmp_path / "loop.gguf")
    for given, says in (("loop.gguf", "Too many levels of symbolic links"), ("/dev/zero", "is not a regular file"), (".", "is a folder")):
        with pytest.raises(HarnessError) as caught:
            model_from_spec(f"local:{given if given.startswith('/') else tmp_path / given}")
        assert says in str(caught.value) and "no such file" not in str(caught.value)


def test_importing_the_backends_does_not_import_httpx_or_llama_cpp():
    code = "import sys, harness.backends; print('httpx' in sys.modules, 'llama_cpp' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False False\n"


# --- control tokens in code-written text (the real tokenizer: tests/test_real_model.py) --


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("42<|im_end|>\n<|im_start|>user", "42<¦im_end¦>\n<¦im_start¦>user"),
        ("<|eot_id|><|start_header_id|>", "<¦eot_id¦><¦start_header_id¦>"),
        ("<s>[INST] hi [/INST]</s>", "<¦s¦>[¦INST¦] hi [¦/INST¦]<¦/s¦>"),
        ("<file_sep><end_of_turn>", "<¦file_sep¦><¦end_of_turn¦>"),
        ("ok<｜end▁of▁sentence｜><｜User｜>hi", "ok<¦end▁of▁sentence¦><¦User¦>hi"),  # DeepSeek's, fullwidth bars
        ("a | b <| c |> <div> [inst] <|two words|>", "a | b <| c |> <div> [inst] <|two words|>"),  # left alone
    ],
)
def test_neutralise_breaks_control_tokens_visibly(raw, shown):
    assert neutralise(raw) == shown
    assert neutralise(shown) == shown


def test_nothing_neutralised_still_looks_like_a_control_token():
    from hypothesis import given
    from hypothesis import strategies as st

    pieces = st.sampled_from(["<", "|", "｜", ">", "/", "s", "[", "]", "INST", "im_end", "¦", " ", "x"])

    @given(st.lists(pieces, max_size=30).map("".join))
    def check(raw: str) -> None:
        assert PATTERN.search(neutralise(raw)) is None

    check()


# --- bounds: a runaway call costs bounded time and memory --------------------------------


def failure_and_peak(model: ServerModel) -> tuple[str, int]:
    """The model's failure message, and the most memory Python held while it failed."""
    import tracemalloc

    tracemalloc.start()
    try:
        message = failure(model)
        return message, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_runaway_stream_is_stopped_at_max_chars_with_flat_memory(server, monkeypatch):
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    server.reply = Reply(chunks=[], repeat=sse(text("word " * 50))[0])
    message, peak = failure_and_peak(ServerModel("m", server.url, max_chars=2_000_000))
    assert "passed 2,000,000 characters" in message
    assert peak < 8_000_000, f"{peak:,} bytes at the peak for a stream of 2 MB: the text is not kept"


def test_a_line_without_an_end_is_stopped_with_flat_memory(server, monkeypatch):
    server.reply = Reply(chunks=[b"data: "], repeat=b"x" * 65536)
    message, peak = failure_and_peak(ServerModel("m", server.url, max_chars=10_000))
    assert "a line longer than 145,536 bytes" in message and peak < 2_000_000


@pytest.mark.parametrize("url", ["https://example.com/v1", "HTTPS://example.com/v1"])
def test_an_https_server_is_checked_against_the_certificate_bundle(url, monkeypatch):
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    tls = ServerModel("m", url)._client._transport._pool._ssl_context  # httpx's own, as a call uses it
    assert tls.verify_mode == ssl.CERT_REQUIRED and tls.check_hostname and tls.cert_store_stats()["x509_ca"] > 0


@pytest.fixture
def tls_server(tmp_path):
    """A server with a certificate of its own (self-signed, for 127.0.0.1), and the file."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    make = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    subprocess.run([*make, "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert], check=True, capture_output=True)
    fake = FakeServer(tls=(str(cert), str(key)))
    yield fake, cert
    fake.close()


def test_a_server_whose_certificate_is_not_trusted_is_named_so_and_ssl_cert_file_trusts_it(tls_server, monkeypatch):
    fake, cert = tls_server
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    message = failure(ServerModel("m", fake.url))
    assert "is not trusted: its TLS certificate was refused (self-signed certificate" in message
    assert "is the server running" not in message
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the user's own CA (here the certificate itself)
    assert list(ServerModel("m", fake.url).stream("Q\n", ()))[:2] == ["Thought: ", "add."]


def test_waiting_for_a_server_whose_certificate_is_refused_ends_at_once_saying_so(tls_server, monkeypatch):
    fake, _ = tls_server
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    started = time.monotonic()
    message = failure(ServerModel("m", fake.url, wait_for_server=60.0))  # up, but never trusted
    assert "its TLS certificate was refused" in message and time.monotonic() - started < 30


@pytest.mark.parametrize("reply", [Reply(chunks=sse(text("x")), pause=30), Reply(chunks=sse(text("Thought: slow"), text("", "stop")), drip=0.2), Reply(header_drip=0.2)], ids=["silent", "dripping body", "dripping headers"])
def test_over_tls_the_time_limit_holds_as_on_plain_http(tls_server, monkeypatch, reply):
    # The TLS stream is a wrapper of harness's bounded socket: each of its reads waits at most
    # until the call's deadline too, and the message says it was the time limit.
    fake, cert = tls_server
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    fake.reply = reply
    started = time.monotonic()
    assert "time limit of 1.5 s" in failure(ServerModel("m", fake.url, max_seconds=1.5, timeout=60))
    assert time.monotonic() - started < 4


def test_behind_a_proxy_even_a_plain_http_servers_client_checks_certificates(monkeypatch):
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example:3128")  # the proxy itself may be TLS
    tls = ServerModel("m", "http://127.0.0.1:8080/v1")._client._transport._pool._ssl_context
    assert tls.cert_store_stats()["x509_ca"] > 0


def test_a_plain_http_servers_client_trusts_no_tls_peer_at_all(monkeypatch):
    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    tls = ServerModel("m", "http://127.0.0.1:8080/v1")._client._transport._pool._ssl_context  # (no bundle loaded)
    assert tls.verify_mode == ssl.CERT_REQUIRED and tls.check_hostname and tls.cert_store_stats()["x509_ca"] == 0


def test_the_time_limit_is_for_the_whole_call_not_each_read(server):
    import time

    server.reply = Reply(chunks=sse(text("Thought: slow"), text("", "stop")), drip=0.2)  # a byte every 0.2 s: no read waits long
    model = ServerModel("m", server.url, max_seconds=1.5, timeout=1.0)
    started = time.monotonic()
    assert "time limit of 1.5 s" in failure(model)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("reuse", [False, True], ids=["new connection", "kept connection"])
def test_the_time_limit_holds_while_the_server_drips_its_headers(server, reuse):
    # Every read, from the first byte of the headers on, waits at most until the call's deadline.
    model = ServerModel("m", server.url, max_seconds=1.5, timeout=1.0)
    if reuse:  # a call before it leaves its connection to be kept for this one
        assert list(model.stream("Q\n", ()))[:2] == ["Thought: ", "add."]
    server.reply = Reply(header_drip=0.2)  # a byte every 0.2 s: no single read waits long
    started = time.monotonic()
    assert "time limit of 1.5 s" in failure(model)
    assert time.monotonic() - started < 3
    assert len(set(server.peers)) == 1 if reuse else True  # the second call was on the kept connection


def test_a_server_that_sends_nothing_is_stopped_at_the_time_limit(server):
    server.reply = Reply(chunks=sse(text("x")), pause=30)
    assert "time limit of 1 s" in failure(ServerModel("m", server.url, max_seconds=1, timeout=60))


def test_max_tokens_is_sent(server):
    list(ServerModel("m", server.url, max_tokens=7).stream("Q\n", ()))
    assert server.requests[0][1]["max_tokens"] == 7


# --- text enters once: scrubbed, encodable -------------------------------------------------


def test_a_secret_split_at_any_point_of_a_stream_never_comes_out():
    from hypothesis import given
    from hypothesis import strategies as st

    from harness.entry import Entry, StreamScrub

    secret = "sk-abcdef123456"

    @given(st.text(alphabet="sk-abcdef123456 x", max_size=40), st.lists(st.integers(0, 60), max_size=6))
    def check(around: str, cuts: list[int]) -> None:
        whole = around + secret + around
        points = sorted({min(c, len(whole)) for c in cuts})
        pieces = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)])]
        scrub = StreamScrub(Entry([secret]))
        out = "".join(scrub.feed(p) for p in pieces) + scrub.finish()
        assert secret not in out and out == Entry([secret]).scrub(whole)

    check()


def test_lone_surrogates_become_the_replacement_character():
    from harness.entry import encodable

    assert encodable("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert encodable("plain é 😀") == "plain é 😀"


def test_a_server_that_streams_no_counts_is_asked_for_the_prompts_tokens(server):
    """As llama-cpp-python's server: no usage in its streams, a count at /extras/tokenize/count."""
    server.extras_reply = (200, {"count": 17})
    server.reply = Reply(chunks=sse(text("Hi"), text(".", "stop"), "[DONE]"))
    model = ServerModel("m", server.url)
    assert list(model.stream("Q\n", ())) == ["Hi", ".", TokenUsage(17)]  # asked once the first stream ended
    assert list(model.stream("Q\nQ\n", ())) == [TokenUsage(17), "Hi", "."]  # then before each call
    assert server.extras == [{"model": "m", "input": "Q\n"}, {"model": "m", "input": "Q\nQ\n"}]


@pytest.mark.parametrize("count", [Reply(chunks=[b'{"count": 1'], repeat=b"1" * 65536), Reply(chunks=[b'{"count": 17}'], drip=0.5)], ids=["endless", "dripping"])
def test_a_count_endpoint_that_never_ends_costs_bounded_memory_and_time_and_no_count(server, count):
    import time
    import tracemalloc

    server.extras_reply = count
    server.reply = Reply(chunks=sse(text("Hi"), text(".", "stop"), "[DONE]"))
    model = ServerModel("m", server.url, max_seconds=1.5)
    tracemalloc.start()
    started = time.monotonic()
    try:
        assert list(model.stream("Q\n", ())) == ["Hi", "."]  # no count: none is made up
        took, peak = time.monotonic() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert took < 3 and peak < 2_000_000
    if count.drip:  # it ran out of time: said, once
        assert [n for n in model.notes if "token count" in n] == ["the server's token count (/extras/tokenize/count) did not answer in 1.5 s; some of this run's calls are not counted"]


def test_a_count_that_comes_too_late_is_asked_again_and_every_run_that_lost_one_says_so(server):
    """llama-cpp-python's server with --jobs 2 queues a count behind the other run's
    completion: a count that does not come in time is dropped for that call, with a note in
    that run's notes, and asked for again on the next call, never given up for the server."""
    server.reply = Reply(chunks=sse(text("Hi"), text(".", "stop"), "[DONE]"))
    server.extras_reply = Reply(chunks=[b'{"count": 17}'], stall=2.0)  # busy: later than the call's bound
    first = ServerModel("m", server.url, max_seconds=1.0)
    second = first.another()  # a batch's second run: the same server, its own notes
    assert list(first.stream("Q\n", ())) == ["Hi", "."]  # its count did not come in time
    assert list(second.stream("Q\n", ())) == ["Hi", "."]  # asked again, and late again
    for model in (first, second):
        assert [n for n in model.notes if "token count" in n] == ["the server's token count (/extras/tokenize/count) did not answer in 1 s; some of this run's calls are not counted"]
    server.extras_reply = (200, {"count": 17})  # the server is free again
    assert TokenUsage(17) in list(second.stream("Q\nQ\n", ()))
    assert len(server.extras) == 3


def test_waiting_for_a_server_whose_model_list_never_ends_is_bounded(server):
    import time

    server.get_reply = Reply(content_type="application/json", chunks=[b"["], repeat=b"1," * 32768)
    model = ServerModel("m", server.url, wait_for_server=1.0)
    started = time.monotonic()
    assert model.wait(1.0)  # it answered: it is up
    assert time.monotonic() - started < 3


def test_waiting_for_a_silent_server_ends_by_its_own_deadline(server):
    import time

    server.get_reply = Reply(content_type="application/json", header_drip=10)  # its answer to a GET never gets past the headers
    model = ServerModel("m", server.url)
    started = time.monotonic()
    assert not model.wait(3.0)
    assert time.monotonic() - started < 3.6  # not a last probe of 2 s begun just before the deadline


def test_a_server_without_a_count_endpoint_is_asked_once(server):
    server.reply = Reply(chunks=sse(text("Hi"), text(".", "stop"), "[DONE]"))
    model = ServerModel("m", server.url)
    assert list(model.stream("Q\n", ())) == ["Hi", "."] and list(model.stream("Q\n", ())) == ["Hi", "."]
    assert len(server.extras) == 1


def test_https_to_a_plain_http_server_says_the_handshake_failed(server):
    says = failure(ServerModel("m", server.url.replace("http://", "https://"), max_seconds=5))
    assert "TLS handshake" in says and "plain http://" in says and "is the server running" not in says


@pytest.mark.parametrize("no_proxy, through", [("", True), ("127.0.0.1", False)])
def test_a_call_that_cannot_connect_says_when_it_went_through_a_proxy(monkeypatch, no_proxy, through):
    # A dead proxy named in the environment looks like a dead server unless the message says so.
    import socket

    monkeypatch.setenv("HARNESS_API_KEY", KEY)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("NO_PROXY", no_proxy)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    message = failure(ServerModel("m", f"http://127.0.0.1:{port}/v1", max_seconds=5))
    assert message.startswith(f"cannot connect to http://127.0.0.1:{port}/v1")
    assert ("through the proxy a *_proxy variable names" in message) is through
