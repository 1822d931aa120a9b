"""A model behind an OpenAI-compatible *chat* endpoint: `--model chat:NAME`.

    model = ChatModel("gpt-4o-mini", "https://api.openai.com/v1")      # strict: detected
    for chunk in model.complete(transcript, stop=("Observation:",)):
        ...                                                  # a Sent, str chunks, then a TokenUsage

One call is one POST to `{base_url}/chat/completions`. The loop hands a chat model the
buffer *with its authors* (`send`), and harness.backends.messages splits it into
messages by one rule; the server's chat template frames them. The lesson holds: a chat
API is the same growing text, with role markers the server writes instead of the
template. The stream begins with a Sent (how many messages this call sent), which the
run records per call; everything else — the bounds, the one check of every field, the
scrub of secrets, strict servers, the stops (sent up to the API's limit, and always
enforced by the loop's own scanner) — is the completions backend's, shared.

`stream(prompt, stop)` (plain text, no authors) sends the prompt as one user message. A
saved chat run records `endpoint: "chat"`, so its replay sends the recorded turns through
the same rule (harness.backends.messages.ChatScript), offline.
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

    def _max_tokens_name(self) -> str:
        # OpenAI's chat API has renamed it (its reasoning models refuse max_tokens); other servers know the old name.
        return "max_completion_tokens" if self.strict else "max_tokens"

    def request_messages(self, sent: list[dict[str, str]], stop: Sequence[str]) -> dict[str, Any]:
        """The JSON body of one call: everything the server is told, nothing hidden."""
        body: dict[str, Any] = {"model": self.model, "messages": sent, **self.params, "stream": True}
        return self._finish_body(body, stop)

    def request(self, prompt: str, stop: Sequence[str]) -> dict[str, Any]:
        return self.request_messages(messages([Span(Author.DEVELOPER, prompt)]), stop)

    def check(self, buffer: Transcript) -> None:
        messages(buffer.spans)  # a template with control tokens is refused before the run shows a byte

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[str | TokenUsage | Sent]:
        sent = messages(buffer.spans)
        return with_count(sent, self._stream(self.request_messages(sent, stop), len(buffer)))

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage | Sent]:
        body = self.request(prompt, stop)
        return with_count(body["messages"], self._stream(body, len(prompt)))
