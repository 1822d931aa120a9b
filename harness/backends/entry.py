"""Where text from outside enters: made encodable, secrets scrubbed, then (for messages) cut.

Every piece of text a server sends — completion text, an error's message, a header quoted
in one — passes through one Entry before it can reach the buffer, a view, an event, an
error or a file. After that, everything downstream can trust it:

    entry = Entry(["sk-abc123secret"])
    entry.detail("bad key sk-abc123secret " + "x" * 500)   ->  "bad key *** xxxx…"   (scrubbed, then cut)
    scrub = entry.stream()                                   completion text, chunk by chunk:
    scrub.feed("Bearer sk-abc") + scrub.feed("123secret!") + scrub.finish()  ->  "Bearer ***!"

Two rules, in this order:

1. Encodable. A lone surrogate (JSON can carry "\\ud800"; UTF-8 cannot) becomes U+FFFD,
   the replacement character, so every view and file can write the text, and a replay
   reads back exactly what was saved. Bytes that are not UTF-8 are decoded the same way.
2. Secrets. The API key and a URL's password (and its `user:password`) become `***`,
   *before* any cutting, so no prefix of a secret survives a message cut at 200
   characters. In a stream a secret may arrive split across chunks, so the stream holds
   back a tail that could still become one, as the stop scanner does. Secrets shorter than
   4 characters are not scrubbed from text (they would erase ordinary words). Nor is an
   API key shorter than 8 characters or a well-known placeholder (`none`, `EMPTY`,
   `ollama`, `lm-studio`, ...: what local servers are given): it guards nothing, and
   scrubbing it would turn a model's "none" into "***".

    Entry(key="none").scrub("none of them")           ->  "none of them"
    Entry(key="sk-abc123secret").scrub("sk-abc123secret")  ->  "***"
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

MASK = "***"
MIN_SECRET = 4
MIN_KEY = 8  # a shorter API key is a placeholder, not a secret
PLACEHOLDER_KEYS = frozenset(
    ("none", "empty", "test", "dummy", "fake", "ollama", "lm-studio", "llama", "vllm", "no-key", "nokey",
     "not-needed", "placeholder", "changeme", "password", "secret", "sk-no-key-required", "sk-xxx")
)  # compared without case
REPLACEMENT = "\ufffd"  # what a lone surrogate becomes
_SURROGATE = regex.compile(r"[\ud800-\udfff]")


def encodable(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (any other text as it is)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def one_line(value: object, limit: int = 200) -> str:
    """One line of at most `limit` characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_secret_key(key: str) -> bool:
    """Whether an API key is worth scrubbing: not a placeholder, nor shorter than MIN_KEY."""
    return len(key) >= MIN_KEY and key.lower() not in PLACEHOLDER_KEYS


class Entry:
    def __init__(self, secrets: Iterable[str] = (), key: str = "") -> None:
        secrets = [*secrets, *([key] if is_secret_key(key) else [])]
        # Longest first, so that "user:password" is replaced whole before "password".
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        text = encodable(text)
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def detail(self, value: object, limit: int = 200) -> str:
        """Text for a message: encodable, scrubbed, then one line of at most `limit` characters."""
        return one_line(self.scrub(str(value)), limit)

    def stream(self) -> StreamScrub:
        return StreamScrub(self)


class StreamScrub:
    """Scrubs text that arrives in chunks; `finish` gives back what was held."""

    def __init__(self, entry: Entry) -> None:
        self.entry, self.held = entry, ""

    def feed(self, chunk: str) -> str:
        text = self.entry.scrub(self.held + chunk)
        keep = self._could_begin_a_secret(text)
        self.held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def finish(self) -> str:
        text, self.held = self.held, ""
        return text

    def _could_begin_a_secret(self, text: str) -> int:
        """The length of the longest tail of `text` that is the start of a secret."""
        best = 0
        for secret in self.entry.secrets:
            for n in range(min(len(secret) - 1, len(text)), best, -1):
                if text.endswith(secret[:n]):
                    best = n
                    break
        return best
