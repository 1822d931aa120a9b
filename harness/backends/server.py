"""A model behind any OpenAI-compatible completions server (llama.cpp, vLLM, Ollama, ...).

    model = ServerModel("smollm2", "http://127.0.0.1:8080/v1")
    for chunk in model.stream(buffer, stop=("Observation:",)):   # str chunks, then a TokenUsage
        ...

One call is one POST to `{base_url}/completions` with `stream: true`; the server answers
with server-sent events, one `data: {json}` line per piece of text, and `data: [DONE]`:

    data: {"choices": [{"text": "Thought:", "finish_reason": null}]}
    data: {"choices": [{"text": "", "finish_reason": "stop"}]}
    data: {"choices": [], "usage": {"prompt_tokens": 412, "completion_tokens": 31}}
    data: [DONE]

The prompt is the buffer, byte for byte: this is the *completions* endpoint, not chat, so
no template is added here (a chat template is text in a prompt file). Every sampling
parameter is sent with every request, because servers' defaults differ from each other
and from their own libraries (llama.cpp's server: repeat_penalty 1.1). Every failure is a
ModelError whose one line says what happened and what to do; the API key (read only from
HARNESS_API_KEY or OPENAI_API_KEY) never appears in one, nor in repr().

Left out: the chat endpoint, retries (a failed call ends the run: model_error), n > 1,
logprobs, tokenizing (a server tells us its token counts, if it wants to).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from harness.errors import HarnessError
from harness.model import ModelError, TokenUsage

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"

# Sent as well by default: llama.cpp's own sampling knobs, set to "off" so that the server
# samples exactly as the parameters above say. A strict server that rejects unknown fields
# (OpenAI's own) wants `extra={}`.
LLAMA_CPP_PARAMS: Mapping[str, Any] = {"repeat_penalty": 1.0, "top_k": 0, "min_p": 0.0}

TOO_LONG = "longer than the model's context; give the server a larger one (llama.cpp: --n_ctx) or lower max_steps"


class ServerModel:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        top_p: float = 1.0,
        seed: int | None = 0,
        extra: Mapping[str, Any] = LLAMA_CPP_PARAMS,
        timeout: float = 120.0,  # seconds to wait for the next byte (reading a long prompt takes a while)
        connect_timeout: float = 5.0,
    ) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("HARNESS_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HarnessError("--base-url", f"{self.base_url!r} is not an http:// or https:// URL with a host")
        self.params: dict[str, Any] = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "top_p": top_p,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            **({"seed": seed} if seed is not None else {}),
            **extra,
        }
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self._key = os.environ.get("HARNESS_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout, connect=connect_timeout))

    def __repr__(self) -> str:
        return f"ServerModel({self.model!r}, {self.where!r})"

    @property
    def where(self) -> str:
        """The base URL as messages show it: without a user:password part."""
        parts = urlsplit(self.base_url)
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))

    def request(self, prompt: str, stop: Sequence[str]) -> dict[str, Any]:
        """The JSON body of one call: everything the server is told, nothing hidden."""
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, **self.params, "stream": True}
        body["stream_options"] = {"include_usage": True}  # servers that do not know it ignore it
        if stop:
            body["stop"] = list(stop)
        return body

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        return self._stream(self.request(prompt, stop), len(prompt))

    def close(self) -> None:
        self._client.close()

    def _stream(self, body: dict[str, Any], prompt_chars: int) -> Iterator[str | TokenUsage]:
        url = f"{self.base_url}/completions"
        text_chars, finished, usage = 0, False, None
        try:
            # `with` is the try/finally: closing this generator early (the loop does, once the
            # client-side stop scanner cuts) closes the response and with it the connection,
            # so the server stops generating.
            with self._client.stream("POST", url, json=body) as response:
                if response.status_code != 200:
                    raise self._status_error(response)
                kind = _short(response.headers.get("content-type", ""), 60) or "no content type"
                if not kind.startswith("text/event-stream"):
                    what = "does it serve /completions with stream: true?"
                    raise ModelError(f"{self.where} answered with {kind}, not a stream of events: {what}")
                for data in _events(response.iter_lines()):
                    if data == "[DONE]":
                        break
                    event = _parse(data)
                    if "error" in event:
                        raise ModelError(self._scrub(f"the server reported an error mid-stream: {_short(event['error'])}"))
                    if event.get("usage"):
                        usage = _usage(event["usage"])
                    for choice in event.get("choices") or ():
                        if text := choice.get("text") or "":
                            text_chars += len(text)
                            yield text
                        finished = finished or choice.get("finish_reason") is not None
        except (httpx.ConnectError, httpx.ConnectTimeout):
            where = "set --base-url or HARNESS_BASE_URL"
            raise ModelError(f"cannot connect to {self.where}: is the server running? ({where})") from None
        except httpx.TimeoutException:
            what = "the server is stuck or too slow for this prompt"
            raise ModelError(f"{self.where} sent nothing for {self.timeout:g} s: {what}") from None
        except httpx.TransportError as e:
            what = f"({type(e).__name__}): did the server stop?"
            raise ModelError(f"the connection to {self.where} broke mid-stream {what}") from None
        if not finished and text_chars == 0:  # llama.cpp's answer to a prompt longer than its context
            raise ModelError(
                f"the server closed the stream without text or a finish reason: the prompt ({prompt_chars} characters) "
                f"is probably {TOO_LONG}"
            )
        if not finished:
            raise ModelError(f"the stream ended after {text_chars} characters without a finish reason: did the server stop?")
        if usage is not None:
            yield usage

    def _status_error(self, response: httpx.Response) -> ModelError:
        status = response.status_code
        detail = _short(_error_text(response.read()))
        hint = {
            401: "check HARNESS_API_KEY",
            403: "check HARNESS_API_KEY",
            404: "check the base URL (it ends in /v1) and the model name",
        }.get(status, "the server refused the request" if status < 500 else "the server failed")
        if "context" in detail.lower():
            hint = f"the prompt is probably {TOO_LONG}"
        return ModelError(self._scrub(f"{self.where} answered HTTP {status}: {detail or '(no message)'}; {hint}"))

    def _scrub(self, message: str) -> str:
        """A server may echo the key in its message; it never reaches ours."""
        return message.replace(self._key, "***") if self._key else message


def _events(lines: Iterator[str]) -> Iterator[str]:
    """The `data:` payloads of a server-sent event stream (comments and `event:` lines skipped)."""
    for line in lines:
        if line.startswith("data:"):
            yield line[5:].strip()


def _parse(data: str) -> dict[str, Any]:
    try:
        event = json.loads(data)
    except json.JSONDecodeError:
        what = "is the base URL an OpenAI-compatible server?"
        raise ModelError(f"the server sent an event that is not JSON: {_short(data)!r}; {what}") from None
    if not isinstance(event, dict):
        raise ModelError(f"the server sent an event that is not a JSON object: {_short(data)!r}")
    return event


def _usage(usage: dict[str, Any]) -> TokenUsage | None:
    prompt = usage.get("prompt_tokens")
    if not isinstance(prompt, int):
        return None
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return TokenUsage(prompt, prompt - cached if isinstance(cached, int) else None, usage.get("completion_tokens"))


def _error_text(body: bytes) -> str:
    """The server's own message: OpenAI's {"error": {"message"}}, FastAPI's {"detail"}, or the text."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data))
        return error.get("message", json.dumps(error)) if isinstance(error, dict) else str(error)
    return text


def _short(value: Any, limit: int = 200) -> str:
    """One line of at most `limit` characters."""
    if isinstance(value, dict):
        value = value.get("message", value)
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
