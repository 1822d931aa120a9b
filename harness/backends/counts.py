"""Token counts from a completions server that does not stream them.

llama-cpp-python's server ignores `stream_options.include_usage`, but counts on request:
`POST {server}/extras/tokenize/count {"model": ..., "input": PROMPT} -> {"count": 412}`.
A server whose first stream ended without counts is asked there; if it answers, before
every later call (a stream closed early keeps its count); if it cannot count, never again.
A count that does not come in time (the server is busy with another run) is dropped with
a note in its run, and the next call asks again. No count is made up.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx

from harness.backends import wire
from harness.backends.connection import read_bounded
from harness.model import TokenUsage

PATH = "/extras/tokenize/count"


class PromptCounter:
    """What one server counts, found out once: shared by the models of a batch's runs."""

    def __init__(self, client: httpx.Client, base_url: str, model: str, seconds: float = 10.0) -> None:
        root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
        self.url, self.model, self._client = root + PATH, model, client
        self.seconds = seconds  # one count's time, at most (its body: 64 KB at most)
        self.state = "unknown"  # "server": its streams count; "ask": this endpoint does; "none"
        self._finding = threading.Lock()  # held by the one call that finds out

    def after(self, prompt: str, usage: TokenUsage | None, notes: list[str]) -> TokenUsage | None:
        """After a stream, with what counted the call so far. A stream that counted says the
        server counts; one that did not, while nobody knows yet, has the endpoint asked (by
        one call: the others wait); once the endpoint counts, a call not yet counted is now."""
        if self.state == "unknown":
            with self._finding:
                if self.state == "unknown":
                    if usage is not None:
                        self.state = "server"
                        return None
                    return self.count(prompt, notes)
        return self.count(prompt, notes) if usage is None and self.state == "ask" else None

    def count(self, prompt: str, notes: list[str]) -> TokenUsage | None:
        """The prompt's tokens, from the server, or None (see above)."""
        try:
            status, body = read_bounded(self._client, "POST", self.url, self.seconds, 65536, json={"model": self.model, "input": prompt})
            data: Any = json.loads(body) if status == 200 else None
        except (httpx.TimeoutException, httpx.TransportError):  # busy or gone for now: not a "no"
            notes.append(f"the server's token count ({PATH}) did not answer in {self.seconds:g} s; some of this run's calls are not counted")
            return None
        except (httpx.HTTPError, ValueError, RecursionError):
            data = None
        counted = wire.usage({"prompt_tokens": data.get("count")}, notes) if isinstance(data, dict) else None
        self.state = "ask" if counted is not None else "none"
        return counted
