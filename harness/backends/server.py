"""A model behind any OpenAI-compatible server (llama.cpp, vLLM, Ollama, ...): `openai:NAME`
posts the buffer byte for byte to `{base_url}/completions`, `chat:NAME` to `/chat/completions`
as messages by author (harness.backends.messages). Every sampling parameter is sent, as
servers' defaults differ, and llama.cpp's own knobs set to "off", unless the server is strict
(`--strict`, or api.openai.com: it rejects them and takes at most 4 stops; the loop's scanner
enforces them all). Left out: retries (a failed call ends the run), n > 1, logprobs.
"""

from __future__ import annotations

import copy
import json
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.backends import wire
from harness.backends.connection import CALLS, drain, new_client, proxied, read_bounded, read_raw, tls_cause
from harness.backends.messages import messages, with_count
from harness.backends.urls import hidden, server_url, url_secrets
from harness.entry import Entry, environment_keys
from harness.errors import HarnessError
from harness.model import DEFAULTS, Bounds, Budget, Model, ModelError, Sent, TokenUsage
from harness.transcript import Author, Span, Transcript

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"

# Sent as well unless the server is strict: llama.cpp's own sampling knobs, set to "off".
LLAMA_CPP_PARAMS: Mapping[str, Any] = {"repeat_penalty": 1.0, "top_k": 0, "min_p": 0.0}
STRICT_STOPS = 4  # OpenAI's API takes at most 4 stop strings
ERROR_BODY = 65536  # bytes of an error answer read, at most

TOO_LONG = "longer than the model's context; give the server a larger one (llama.cpp: --n_ctx) or lower max_steps"


class ServerModel(Model):
    path = "completions"  # after the base URL
    counts = "unknown"  # how the server counts a prompt, until its first call finds out (PromptCounter.state)
    chat = False  # the events carry choices[].text

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = DEFAULTS.max_tokens,
        max_chars: int = DEFAULTS.max_chars,
        max_seconds: float = DEFAULTS.max_seconds,
        top_p: float = 1.0,
        seed: int | None = 0,
        strict: bool | None = None,  # None: strict for api.openai.com
        wait_for_server: float | None = None,  # the first call first waits up to this long for the server
        extra: Mapping[str, Any] | None = None,  # default: LLAMA_CPP_PARAMS unless strict
        timeout: float = 120.0,  # seconds to wait for the next byte (reading a long prompt takes a while)
        connect_timeout: float = 5.0,
        connections: int | None = None,  # calls at once over this model and its others (default: httpx's)
        key: str | None = None,  # default: HARNESS_API_KEY or OPENAI_API_KEY
        direct: bool = False,  # no proxy: a server harness started on this machine
    ) -> None:
        self.model = model
        self.base_url = server_url(base_url, DEFAULT_BASE_URL)
        self.where = hidden(self.base_url)  # the base URL as messages show it: no user:password
        host = urlsplit(self.base_url).hostname or ""
        self.strict = strict if strict is not None else host == "api.openai.com" or host.endswith(".openai.com")
        self.bounds = Bounds(max_tokens, max_chars, max_seconds)
        self.params: dict[str, Any] = {
            "temperature": temperature,
            # OpenAI's chat API has renamed it (its reasoning models refuse max_tokens).
            "max_completion_tokens" if self.chat and self.strict else "max_tokens": max_tokens,
            "top_p": top_p,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            **({"seed": seed} if seed is not None else {}),
            **(extra if extra is not None else {} if self.strict else LLAMA_CPP_PARAMS),
        }
        self.timeout = timeout
        self._wait = wait_for_server
        self.notes: dict[str, None] = {}  # what was dropped on arrival (a malformed token count), once each
        self._key = _api_key() if key is None else key
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()  # every connection's, of this model and its others
        self._interrupted = threading.Event()  # Ctrl-C in a batch: no more waiting
        self.entry = Entry(url_secrets(self.base_url), key=self._key)
        headers = {"Accept-Encoding": "identity"} | ({"Authorization": f"Bearer {self._key}"} if self._key else {})
        limit = httpx.Timeout(min(timeout, max_seconds), connect=min(connect_timeout, max_seconds))
        pool = httpx.Limits(max_connections=connections, max_keepalive_connections=connections) if connections else None
        self._client = new_client(self.base_url, direct, headers=headers, timeout=limit, **({"limits": pool} if pool else {}))
        self._counter = PromptCounter(self._client, self.base_url, model, max_seconds, self.counts)  # (a chat model never asks it)

    def another(self) -> ServerModel:
        """A model for another run of a batch: its own notes, sharing the client and token counter."""
        twin = copy.copy(self)
        twin.notes = {}
        return twin

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, {self.where!r})"

    def request(self, prompt: str, stop: Sequence[str]) -> dict[str, Any]:
        """The JSON body of one call: everything the server is told, nothing hidden."""
        return self._body({"prompt": prompt}, stop)

    def _body(self, sent: dict[str, Any], stop: Sequence[str]) -> dict[str, Any]:
        body = {"model": self.model, **sent, **self.params, "stream": True}
        body["stream_options"] = {"include_usage": True}  # servers that do not know it ignore it
        if stop:
            body["stop"] = list(stop)[:STRICT_STOPS] if self.strict else list(stop)
        return body

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        """A server that streams no counts is asked for the prompt's (PromptCounter)."""
        self.check_open()
        chunks = self._stream(self.request(prompt, stop), len(prompt))
        counter, usage = self._counter, None
        if counter.state == "ask" and (usage := counter.count(prompt, self.notes)) is not None:
            yield usage  # before the text: a stream closed early keeps it
        try:
            for chunk in chunks:
                if type(chunk) is not str:
                    usage = chunk
                yield chunk
        finally:
            chunks.close()
        if (late := counter.after(prompt, usage, self.notes)) is not None:
            yield late

    def close(self) -> None:
        self._client.close()

    def check_open(self) -> None:
        if self._client.is_closed:  # (shared with its others: one closed, all are)
            raise HarnessError("model", f"{self!r} is closed; make another to call a model again")

    def interrupt(self) -> None:
        """End every call in flight of this model and its others (even one still waiting for its
        first byte), and any wait: a batch's Ctrl-C."""
        self._interrupted.set()
        for sock in list(self._sockets):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed already
                pass

    def wait(self, seconds: float) -> bool:
        """Until the server answers anything (GET /models) or `seconds` pass: whether it did."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                read_bounded(self._client, "GET", f"{self.base_url}/models", min(2.0, max(0.1, deadline - time.monotonic())), 0)  # ends by the deadline
                return True
            except httpx.HTTPError as e:
                if isinstance(tls_cause(e), ssl.SSLCertVerificationError):  # it is up, and refused: waiting would not change that
                    return True
                if time.monotonic() >= deadline or self._interrupted.wait(min(0.25, max(0.0, deadline - time.monotonic()))):
                    return False

    def post(self, body: dict[str, Any], headers: Mapping[str, str], path: str) -> dict[str, Any]:
        """One call unstreamed, its body as given (harness proxy forwards an agent's to `path`):
        the server's JSON answer, bounded and failing as a streamed call does."""
        budget, limit = Budget(self.bounds), 8 * self.bounds.max_chars + 65536
        sent = json.dumps(body).encode()  # ASCII: what was given, even a lone surrogate, as it was given
        with self._posting(path, budget, False, content=sent, headers={"Content-Type": "application/json", **headers}) as response:
            raw = read_raw(response.iter_raw(), limit + 1)
        if len(raw) > limit:
            raise ModelError(f"{self.where}'s answer passed {limit:,} bytes; the call was stopped (raise --max-chars)")
        return wire.parse_event(raw.decode("utf-8", "replace"), self.entry)

    @contextmanager
    def _posting(self, path: str, budget: Budget, streamed: bool, **request: Any) -> Iterator[httpx.Response]:
        """One POST by the call's deadline, its answer checked; closed early, it closes the
        connection, so the server stops generating."""
        try:
            with CALLS.until(budget.deadline, self._sockets), self._client.stream("POST", f"{self.base_url}/{path}", **request) as response:
                if (error := refused(response, self, path, streamed)) is not None:
                    raise error
                yield response
        except httpx.HTTPError as e:
            raise self._failed(e, budget) from None

    def _stream(self, body: dict[str, Any], prompt_chars: int) -> Iterator[str | TokenUsage]:
        self.check_open()  # (a chat model's calls come here directly)
        if self._wait is not None:  # a server still starting: the first call waits for it, once
            self.wait(self._wait)
            self._wait = None
        budget = Budget(self.bounds)  # its deadline ends every read and write of the call
        text_chars, events, finished, had_choices, usage = 0, 0, False, False, None
        with self._posting(self.path, budget, True, json=body) as response:
            max_line = 8 * self.bounds.max_chars + 65536  # room for JSON's escapes around the text
            raw = response.iter_raw()
            for data in wire.data_lines(raw, max_line):
                budget.spend(0)  # the clock, checked with every event
                if data == "[DONE]":
                    drain(raw)
                    break
                events += 1
                text, ended, used, listed = wire.piece(data, self.chat, self.entry)
                if used is not None:
                    usage = wire.usage(used, self.notes)
                if text:
                    text_chars += len(text)
                    yield text
                finished, had_choices = finished or ended, had_choices or listed
        if events == 0 and text_chars == 0:  # llama.cpp's answer to a prompt longer than its context
            raise ModelError(
                f"the server closed the stream without sending an event: the prompt ({prompt_chars} characters) "
                f"is probably {TOO_LONG}"
            )
        if not had_choices:
            raise ModelError(f"the server's {events} events held no choices: does it serve /{self.path} (OpenAI's format)?")
        if not finished:
            raise ModelError(f"the stream ended after {text_chars} characters without a finish reason: did the server stop?")
        if usage is not None:
            yield usage

    def _failed(self, error: httpx.HTTPError, budget: Budget) -> ModelError:
        """What a call that could not reach, or stopped hearing from, the server says."""
        if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)):
            if (tls := tls_cause(error)) is not None:
                why = hidden(str(getattr(tls, "verify_message", None) or tls.reason or tls))[:200]
                if isinstance(tls, ssl.SSLCertVerificationError):
                    return ModelError(f"{self.where} is not trusted: its TLS certificate was refused ({why}; SSL_CERT_FILE names a CA to trust)")
                return ModelError(f"the TLS handshake with {self.where} failed ({why}): does it speak https://, or plain http://?")
            where = "set --base-url or HARNESS_BASE_URL, or --wait-for-server SECONDS while it starts"
            through = " through the proxy a *_proxy variable names (is the proxy up? NO_PROXY=127.0.0.1 skips it)" if proxied(self.base_url) else ""
            return ModelError(f"cannot connect to {self.where}{through}: is the server running? ({where})")
        if isinstance(error, httpx.TimeoutException):
            if budget.left() == 0:  # the call's deadline ended the read or write (connection.Deadlines)
                return budget.late()
            return ModelError(f"{self.where} sent nothing for {self.timeout:g} s: the server is stuck or too slow for this prompt")
        if isinstance(error, httpx.TransportError):
            return ModelError(f"the connection to {self.where} broke mid-stream ({type(error).__name__}): did the server stop?")
        raise error


class ChatModel(ServerModel):
    """`chat:NAME`: the buffer as messages, which the server's template frames; each stream
    begins with a Sent, how many. `stream(prompt, stop)` sends one user message."""

    path = "chat/completions"
    chat = True  # the events carry choices[].delta.content
    endpoint = "chat"

    def request(self, prompt: str, stop: Sequence[str]) -> dict[str, Any]:
        return self._body({"messages": messages([Span(Author.DEVELOPER, prompt)])}, stop)

    def check(self, buffer: Transcript) -> None:
        messages(buffer.spans)  # a template with control tokens is refused before the run shows a byte

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[str | TokenUsage | Sent]:
        sent = messages(buffer.spans)
        return with_count(sent, self._stream(self._body({"messages": sent}, stop), len(buffer)))

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage | Sent]:
        return self.send(Transcript([Span(Author.DEVELOPER, prompt)]), stop)  # the prompt as the developer's one message


class PromptCounter:
    """What one server counts, found out once and shared by a batch's runs. llama-cpp-python's
    streams carry no counts, but `POST /extras/tokenize/count {"model", "input"}` answers
    `{"count": 412}`: asked there after a first stream without counts, then on every call if it
    answered, never if it could not. A count not in time is dropped with a note; none is made up."""

    PATH = "/extras/tokenize/count"

    def __init__(self, client: httpx.Client, base_url: str, model: str, seconds: float = 10.0, state: str = "unknown") -> None:
        self.url, self.model, self._client = base_url.removesuffix("/v1") + self.PATH, model, client
        self.seconds = seconds  # one count's time, at most (its body: 64 KB at most)
        self.state = state  # "unknown", or "server": its streams count; "ask": this endpoint does; "none"
        self._finding = threading.Lock()  # held by the one call that finds out

    def after(self, prompt: str, usage: TokenUsage | None, notes: dict[str, None]) -> TokenUsage | None:
        """After a stream, with what counted it so far (while nobody knows, one call asks, the others wait)."""
        if self.state == "unknown":
            with self._finding:
                if self.state == "unknown":
                    if usage is not None:
                        self.state = "server"
                        return None
                    return self.count(prompt, notes)
        return self.count(prompt, notes) if usage is None and self.state == "ask" else None

    def count(self, prompt: str, notes: dict[str, None]) -> TokenUsage | None:
        try:
            status, body = read_bounded(self._client, "POST", self.url, self.seconds, 65536, json={"model": self.model, "input": prompt})
            data: Any = json.loads(body) if status == 200 else None
        except (httpx.TimeoutException, httpx.TransportError):  # busy or gone for now: not a "no"
            notes[f"the server's token count ({self.PATH}) did not answer in {self.seconds:g} s; some of this run's calls are not counted"] = None
            return None
        except (httpx.HTTPError, ValueError, RecursionError):
            data = None
        counted = wire.usage({"prompt_tokens": data.get("count")}, notes) if isinstance(data, dict) else None
        self.state = "ask" if counted is not None else "none"
        return counted


def refused(response: httpx.Response, model: ServerModel, path: str, streamed: bool) -> ModelError | None:
    """What is wrong with an answer that is not an uncompressed stream of events (or JSON: not
    `streamed`) from `path`, and what to check."""
    status = response.status_code
    if status != 200:
        try:
            body = read_raw(response.iter_raw(), ERROR_BODY)
        except httpx.HTTPError:
            body = b""  # the server left before it said why
        detail = wire.error_text(body, model.entry)
        hint = {
            401: "check HARNESS_API_KEY",
            403: "check HARNESS_API_KEY",
            404: f"check the base URL (it ends in /v1) and the model name; does the server serve /{path}?",
        }.get(status, "the server refused the request" if status < 500 else "the server failed")
        if "context" in detail.lower():
            hint = f"the prompt is probably {TOO_LONG}"
        return ModelError(f"{model.where} answered HTTP {status}: {detail or '(no message)'}; {hint}")
    kind = model.entry.detail(response.headers.get("content-type", ""), 60) or "no content type"
    if streamed and not kind.startswith("text/event-stream"):
        return ModelError(f"{model.where} answered with {kind}, not a stream of events: does it serve /{path} with stream: true?")
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return ModelError(f"{model.where} compressed its answer (Content-Encoding: {model.entry.detail(encoding, 40)}) though harness asked for none")
    return None


def _api_key() -> str:
    name, key = (environment_keys() or [("", "")])[0]
    if not all(33 <= ord(c) < 127 for c in key):  # what an HTTP header can carry, no spaces
        what = "a newline, a space, a control or a non-ASCII character"
        raise HarnessError(name, f"the API key holds {what}; an API key is printable ASCII (check how it was set)")
    return key
