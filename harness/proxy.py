"""The proxy: an OpenAI-compatible endpoint between an existing agent and its model server.

    proxy = Proxy(Path("cassettes/t1"), "once", upstream="http://127.0.0.1:8080/v1")
    server = serve(proxy)                       # on 127.0.0.1, a free port: proxy.url
    server.shutdown(); proxy.close()            # the runs saved as transcripts (harness.cassette)

The modes are VCR's (`harness proxy --help`). A request that was not recorded fails closed:
HTTP 400 with a diff of the agent's buffer against the nearest recording. Recording forwards
each call unstreamed through the backend (ServerModel.post), bounded; an upstream failure is
HTTP 502 and a run saved as model_error. The agent's key is forwarded, and scrubbed from all kept.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness import captured, cassette
from harness.backends import wire
from harness.backends.server import ServerModel
from harness.backends.urls import server_url
from harness.diff import transcript_diff
from harness.entry import Entry, is_secret_key
from harness.errors import HarnessError
from harness.model import DEFAULTS, Bounds, Budget, ModelError
from harness.traffic import Call, body, chat_text, group, transcript
from harness.transcript import dumps

MODES = ("once", "new_episodes", "all", "none")
MAX_REQUEST = 16 * 2**20  # bytes of one request's body
PARAMS = (  # what a request may set that decides the answer: saved, and matched on replay
    "model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "stop", "seed", "n",
    "presence_penalty", "frequency_penalty", "repeat_penalty", "logit_bias", "tool_choice", "parallel_tool_calls",
    "response_format", "suffix", "echo", "best_of", "logprobs", "top_logprobs", "grammar",
)  # fmt: skip
# The settings the proxy itself reads, and what each must be when it is not null.
TYPES = {"n": int, "max_tokens": int, "max_completion_tokens": int, "seed": int, "stream": bool, "stream_options": dict}
SAID = {int: "a whole number", bool: "true or false", dict: "an object"}
KEY_HEADERS = ("Authorization", "api-key", "x-api-key")  # OpenAI's, Azure's and others' ways to send a key
PIECE = 32  # characters of text per streamed event


class Refused(HarnessError):
    def __init__(self, status: int, where: str, message: str) -> None:
        super().__init__(where, message)
        self.status = status  # the HTTP answer


class Proxy:
    """The cassette, the upstream and what this session saw; thread-safe."""

    def __init__(self, folder: Path, mode: str, upstream: str | None = None, bounds: Bounds = DEFAULTS) -> None:
        if mode not in MODES:
            raise HarnessError("--mode", f"must be one of {', '.join(MODES)}, not {mode!r}")
        self.folder, self.mode, self.bounds = folder, mode, bounds
        self.old = cassette.load(folder) if mode != "all" and folder.is_dir() else []
        self.recording = mode in ("all", "new_episodes") or (mode == "once" and not self.old)
        self.answers = {call.key(): call for run in self.old for call in run}
        url = server_url(upstream) if self.recording else ""  # --base-url, else $HARNESS_BASE_URL
        if self.recording and not url:
            raise HarnessError("--base-url", f"mode {mode} records {'new calls' if self.old else 'a new cassette'}: name the upstream server")
        self.held = cassette.claim(folder) if self.recording else None  # no other proxy records here meanwhile
        # Each call goes through the backend, with the agent's key (KEY_HEADERS), within `bounds`.
        self.upstream = ServerModel("", url, key="", timeout=bounds.max_seconds, **bounds._asdict()) if url else None
        self.calls: list[Call] = []  # this session's, in the order they ended (a new one is none of `answers`)
        self.mismatches: list[str] = []
        self.lock = threading.Lock()
        self.url = ""

    def handle(self, endpoint: str, request: dict[str, Any], keys: dict[str, str]) -> Call:
        """The answer to one request (an upstream failure: a Call with `error`); `keys`: its KEY_HEADERS."""
        sent = [*keys.values(), *(v.removeprefix("Bearer ").strip() for v in keys.values()), str(request.get("api_key") or "")]
        entry = Entry([*(self.upstream.entry.secrets if self.upstream else ()), *filter(is_secret_key, sent)])
        call = _call(endpoint, request, entry)
        recorded = self.answers.get(call.key())
        if recorded is None and not self.recording:
            raise Refused(400, "harness proxy", self._mismatch(call))
        answer = recorded or self._forward(request, call, entry, keys)
        with self.lock:
            self.calls.append(answer)
        return answer

    def _forward(self, request: dict[str, Any], call: Call, entry: Entry, keys: dict[str, str]) -> Call:
        body = {k: v for k, v in request.items() if k not in ("stream", "stream_options")} | {"stream": False}
        if not 0 < (body.get("max_tokens") or 0) <= self.bounds.max_tokens:
            body["max_tokens"] = self.bounds.max_tokens
        upstream = self.upstream.another()  # this call's: the agent's key scrubbed from what it says
        upstream.entry = entry
        try:
            answer = upstream.post(body, keys, "chat/completions" if call.endpoint == "chat" else "completions")
            return _answered(call, answer, entry, self.bounds)
        except ModelError as e:
            return replace(call, error=entry.detail(str(e), 400))

    def _mismatch(self, call: Call) -> str:
        """Why a request cannot be replayed: a diff of its buffer against the nearest recording."""
        same = [(run, k) for run in self.old for k, c in enumerate(run) if c.endpoint == call.endpoint]
        said = f"this {call.endpoint} request was not recorded in {self.folder} (mode {self.mode})"
        if not same:
            said += "; the cassette holds no such call"
        else:
            run, k = max(same, key=lambda at: (len(os.path.commonprefix([at[0][at[1]].prompt, call.prompt])), -same.index(at)))
            if run[k].prompt == call.prompt:
                old, new = run[k].params, call.params
                changed = sorted(p for p in {**old, **new} if old.get(p) != new.get(p))
                said += "; the prompt is the same, the settings differ: " + ", ".join(f"{p} {json.dumps(old.get(p))} -> {json.dumps(new.get(p))}" for p in changed)
            else:
                said += "\n" + transcript_diff(_buffer(run[:k], run[k]), _buffer(run[:k], call), "the agent's buffer", ("recorded", "sent"))
        with self.lock:
            self.mismatches.append(said)
        print(f"harness proxy: {said}", file=sys.stderr, flush=True)
        return said

    def close(self, save: bool = True) -> list[Path]:
        """Save the runs that hold a new call: added (`new_episodes`) or in the cassette's place,
        unless a call failed and there is a cassette to keep."""
        if self.upstream is not None:
            self.upstream.close()
        with self.lock:
            runs = [run for run in group(self.calls) if any(self.answers.get(call.key()) is not call for call in run)]
        try:
            if not save or not runs:
                return []
            if any(call.error for run in runs for call in run) and any(self.folder.glob("run-*.txt")):
                print(f"harness proxy: a call failed, so {self.folder} was kept as it was", file=sys.stderr)
                return []
            return cassette.save(runs, self.folder, replace=self.mode != "new_episodes")
        finally:
            if self.held is not None:
                cassette.release(self.folder, self.held)


def _buffer(before: list[Call], call: Call) -> str:
    """The buffer up to `call`'s prompt, authored as its run's transcript is."""
    if before and not call.prompt.startswith(before[-1].prompt):
        before = []  # it does not go on from the recorded run: all of it is the agent's first prompt
    return dumps(transcript([*before, replace(call, error="-")])[0])


def _call(endpoint: str, request: dict[str, Any], entry: Entry) -> Call:
    """A request as a Call without its answer, scrubbed; malformed input is a HarnessError (HTTP 400), named."""
    for name, kind in TYPES.items():
        if request.get(name) is not None and type(request[name]) is not kind:  # `true` is no number here
            raise HarnessError(name, f"must be {SAID[kind]}, not {wire.kind(request[name])}")
    if request.get("n", 1) not in (1, None):
        raise HarnessError("n", "harness proxy records one answer per call: n must be 1")
    if endpoint == "chat":
        prompt = chat_text(request.get("messages"), request.get("tools"))
    else:
        prompt = request.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise HarnessError("prompt", "must be one text (a list of several is not recorded)")
    return Call(entry.scrub(prompt), "", endpoint, _scrubbed(entry, {k: request[k] for k in PARAMS if k in request}))


def _scrubbed(entry: Entry, value: Any) -> Any:
    """JSON from outside as it may be kept: encodable, secrets scrubbed."""
    return json.loads(entry.scrub(json.dumps(value, ensure_ascii=False)))


def _answered(call: Call, data: dict[str, Any], entry: Entry, bounds: Bounds) -> Call:
    """The call with the upstream's answer, every field read checked."""
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    answer = choice.get("message" if call.endpoint == "chat" else "text") if isinstance(choice, dict) else None
    if call.endpoint == "chat" and isinstance(answer, dict):
        try:
            text, calls = body(answer, "choices[0].message"), tuple(_scrubbed(entry, answer.get("tool_calls") or []))
        except HarnessError as e:
            raise ModelError(f"the upstream's {e.where} {e.message}") from None
    elif call.endpoint != "chat" and isinstance(answer, str):
        text, calls = answer, ()
    else:
        raise ModelError(f"the upstream's answer holds no choices[0].{'message' if call.endpoint == 'chat' else 'text'}: {entry.detail(json.dumps(data))}")
    Budget(bounds).spend(len(text))
    used, reason = wire.usage(data.get("usage"), {}), choice.get("finish_reason")
    tokens = None if used is None else {"prompt_tokens": used.prompt_tokens, "completion_tokens": used.completion_tokens}
    return replace(call, completion=entry.scrub(text), tool_calls=calls, finish_reason=reason if isinstance(reason, str) else "stop", tokens=tokens)


# --- what the agent is answered ---------------------------------------------------------------


def reply(call: Call, event: str = "", **choice: Any) -> dict[str, Any]:
    """The call's answer as the server's JSON; with `event`, one event of its stream holding `choice`."""
    chat = call.endpoint == "chat"
    head = {"id": "harness-proxy", "created": 0, "model": call.params.get("model", "")}
    if event:
        return head | {"object": "chat.completion.chunk" if chat else "text_completion", "choices": [{"index": 0, "finish_reason": None, **choice}]}
    prompt, completion = ((call.tokens or {}).get(k) or 0 for k in ("prompt_tokens", "completion_tokens"))
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if chat:
        message = {"role": "assistant", "content": cassette.content(call, "the answer")} | ({"tool_calls": list(call.tool_calls)} if call.tool_calls else {})
        return head | {"object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": call.finish_reason}], "usage": usage}
    choice = {"index": 0, "text": call.completion, "finish_reason": call.finish_reason, "logprobs": None}
    return head | {"object": "text_completion", "choices": [choice], "usage": usage}


def events(call: Call, usage: bool) -> Iterator[dict[str, Any] | str]:
    """The same answer as a stream's events, its text in pieces; then [DONE]."""
    if call.endpoint == "chat":
        text = cassette.content(call, "the answer") or ""
        yield reply(call, "chunk", delta={"role": "assistant", "content": ""})
        yield from (reply(call, "chunk", delta={"content": text[i : i + PIECE]}) for i in range(0, len(text), PIECE))
        if call.tool_calls:
            yield reply(call, "chunk", delta={"tool_calls": [{"index": i, **c} for i, c in enumerate(call.tool_calls)]})
        yield reply(call, "chunk", delta={}, finish_reason=call.finish_reason)
    else:
        text = call.completion
        yield from (reply(call, "chunk", text=text[i : i + PIECE], logprobs=None) for i in range(0, len(text), PIECE))
        yield reply(call, "chunk", text="", finish_reason=call.finish_reason, logprobs=None)
    if usage:
        yield reply(call, "chunk") | {"choices": [], "usage": reply(call)["usage"]}
    yield "[DONE]"


# --- HTTP -------------------------------------------------------------------------------------

ROUTES = {"/completions": "completions", "/chat/completions": "chat", "/models": "models"}  # each under /v1 too


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # seconds a client may take to send its request
    server: ProxyServer

    def handle(self) -> None:
        captured.ours()  # what this thread prints (a replay's diff) is the command's own output
        super().handle()

    def _route(self) -> str | None:
        return ROUTES.get(self.path.split("?")[0].rstrip("/").removeprefix("/v1"))

    def do_GET(self) -> None:
        if self._route() != "models":
            return self._json(404, _error(f"harness proxy serves no {self.path[:100]!r}"))
        proxy = self.server.proxy
        names = sorted({str(c.params.get("model", "")) for c in [*proxy.answers.values(), *proxy.calls]} - {""})
        self._json(200, {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "harness-proxy"} for n in names]})

    def do_POST(self) -> None:
        endpoint = self._route()
        try:
            if endpoint not in ("completions", "chat"):
                raise Refused(404, "harness proxy", f"serves no {self.path[:100]!r}: POST /v1/completions or /v1/chat/completions")
            request = self._body()
            keys = {name: self.headers[name] for name in KEY_HEADERS if name in self.headers}
            call = self.server.proxy.handle(endpoint, request, keys)
        except HarnessError as e:  # Refused, or a malformed field of the request
            return self._json(e.status if isinstance(e, Refused) else 400, _error(str(e), "harness_proxy"))
        if call.error:
            return self._json(502, _error(call.error, "upstream_error"))
        if request.get("stream") is True:
            return self._stream(events(call, (request.get("stream_options") or {}).get("include_usage") is True))
        self._json(200, reply(call))

    def _body(self) -> dict[str, Any]:
        length = self.headers.get("Content-Length", "")
        if not (length.isascii() and length.isdigit()):  # "²".isdigit() is true, int("²") fails
            self.close_connection = True
            raise Refused(411, "Content-Length", "a request must say its length (chunked bodies are not read)")
        if int(length) > MAX_REQUEST:
            self.close_connection = True  # its body is never read
            raise Refused(413, "harness proxy", f"the request's body is {int(length):,} bytes; at most {MAX_REQUEST:,} are read")
        try:
            request = json.loads(self.rfile.read(int(length)))
        except (ValueError, RecursionError):
            raise Refused(400, "harness proxy", "the request's body is not JSON") from None
        if not isinstance(request, dict):
            raise Refused(400, "harness proxy", f"the request's body is {wire.kind(request)}, not a JSON object")
        return request

    def _json(self, status: int, data: dict[str, Any]) -> None:
        raw = json.dumps(data, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _stream(self, items: Iterator[dict[str, Any] | str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for item in items:  # an agent that goes away mid-stream: its call is recorded all the same
            data = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the proxy speaks only of what it refuses


def _error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind}}


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # agents at once: a burst of connections waits to be accepted, not dropped and retried
    proxy: Proxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that broke off is one line on stderr, never a traceback; the proxy goes on."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):  # the agent left: nothing to say
            print(f"harness proxy: a request failed ({type(error).__name__}: {error})", file=sys.stderr, flush=True)


def serve(proxy: Proxy, port: int = 0) -> ProxyServer:
    """The proxy listening on 127.0.0.1 (`port` 0: a free one), served from a thread."""
    try:
        server = ProxyServer(("127.0.0.1", port), Handler)
    except OSError as e:
        raise HarnessError("--port", f"cannot listen on 127.0.0.1:{port} ({e.strerror})") from None
    server.proxy, proxy.url = proxy, f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, name="harness-proxy", daemon=True).start()
    return server
