"""A model behind an OpenAI-compatible *chat* endpoint: `--model chat:NAME`.

One call is one POST to `{base_url}/chat/completions`: the buffer, split into messages by
author (harness.backends.messages), which the server's chat template frames. The stream
begins with a Sent (how many messages this call sent); all else (bounds, checks, scrub,
strict servers, stops) is the completions backend's. `stream(prompt, stop)` sends the
prompt as one user message.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from harness.backends.messages import messages, with_count
from harness.backends.server import ServerModel
from harness.model import Sent, TokenUsage
from harness.transcript import Author, Span, Transcript


class ChatModel(ServerModel):
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
        body = self.request(prompt, stop)
        return with_count(body["messages"], self._stream(body, len(prompt)))
