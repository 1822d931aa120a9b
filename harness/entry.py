"""Where text from outside enters the buffer: made encodable, secrets masked, control tokens made inert.

A model's text (by harness.model.Model.complete) is made encodable (a lone surrogate
becomes U+FFFD) and scrubbed of the model's secrets, the API key and a URL's password,
before any cutting; a stream holds back a tail that could still become one. A tool's output
is scrubbed of the environment's API keys, where whole, in any run (a replay too). The user's
own patterns (Redaction) mask what they match in model text and tool output. Text that code
writes goes through `neutralise`, so a tool result cannot end the model's turn:

    Entry(key="sk-abc123secret").detail("bad key sk-abc123secret")  ->  "bad key ***"
    neutralise("done<|im_end|>")    ->  "done<¦im_end¦>"
    neutralise("[INST] hi [/INST]") ->  "[¦INST¦] hi [¦/INST¦]"
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from harness.errors import HarnessError
from harness.stop import held_from

MASK = "***"
MIN_SECRET = 4
MIN_KEY = 8  # a shorter API key is a placeholder, not a secret
PLACEHOLDER_KEYS = frozenset(
    ("none", "empty", "test", "dummy", "fake", "ollama", "lm-studio", "llama", "vllm", "no-key", "nokey",
     "not-needed", "placeholder", "changeme", "password", "secret", "sk-no-key-required", "sk-xxx")
)  # compared without case
SEARCH_SECONDS = 1.0  # one pattern on one line; longer, the line is masked whole
REPLACEMENT = "\ufffd"  # what a lone surrogate becomes
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def encodable(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD."""
    return text if text.isascii() else _SURROGATE.sub(REPLACEMENT, text)


def is_secret_key(key: str) -> bool:
    """Whether an API key is worth scrubbing: not a placeholder, nor shorter than MIN_KEY."""
    return len(key) >= MIN_KEY and key.lower() not in PLACEHOLDER_KEYS


def environment_keys() -> list[tuple[str, str]]:
    """(name, value) of each of these that is set: a server is sent the first; tool output is scrubbed of all."""
    return [(name, key) for name in ("HARNESS_API_KEY", "OPENAI_API_KEY") if (key := os.environ.get(name, ""))]


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
        text = " ".join(self.scrub(str(value)).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"


class StreamScrub:
    """Scrubs text that arrives in chunks; `finish` gives back what was held."""

    def __init__(self, entry: Entry) -> None:
        self.entry, self.held = entry, ""

    def feed(self, chunk: str) -> str:
        if not self.entry.secrets:  # nothing to scrub: the text is only made encodable
            return encodable(chunk)
        text = self.entry.scrub(self.held + chunk)
        held = held_from(text, self.entry.secrets)  # a tail that might still become a secret
        self.held = text[held:]
        return text[:held]

    def finish(self) -> str:
        text, self.held = self.held, ""
        return text


# --- the user's own patterns -------------------------------------------------------------


class Redaction:
    """The user's own patterns (a scenario's `redact`, pytest's `harness_redact`): every
    match in a model's text or a tool's output becomes MASK. A pattern matches within one
    line, and a stream is held to each line's end, so no match depends on the chunks.

        redaction(["token=\\w+"], "redact")("ok token=abc123\\n")   ->  "ok ***\\n"
    """

    def __init__(self, patterns: tuple[Any, ...] = ()) -> None:  # compiled by `regex` (redaction, below)
        self.patterns = patterns

    def __call__(self, text: str) -> str:
        if not self.patterns:
            return text
        return "\n".join(map(self._line, text.split("\n")))

    def _line(self, line: str) -> str:
        """One line redacted; a pattern that takes too long on it (the text is untrusted,
        a pattern may backtrack without end) masks the whole line, so no secret gets by."""
        for pattern in self.patterns:
            try:
                line = pattern.sub(_mask, line, timeout=SEARCH_SECONDS)
            except TimeoutError:
                line = MASK
        return line

    def over(self, chunks: Iterator[object]) -> Iterator[object]:
        """A model's chunks, redacted a whole line at a time (counts pass as they come); a
        line cut off by a Ctrl-C or a failure is never shown: it might hold half a secret."""
        return self._held(chunks) if self.patterns else chunks

    def _held(self, chunks: Iterator[object]) -> Iterator[object]:
        held: list[str] = []
        try:
            for chunk in chunks:
                if not isinstance(chunk, str):
                    yield chunk
                elif end := chunk.rfind("\n") + 1:
                    yield self("".join(held) + chunk[:end])
                    held = [chunk[end:]]
                else:
                    held.append(chunk)
            if tail := "".join(held):
                yield self(tail)
        finally:
            chunks.close()  # type: ignore[attr-defined]


def _mask(match: Any) -> str:
    return MASK if match.group() else ""  # an empty match is no text to hide


def redaction(patterns: Sequence[str], where: str) -> Redaction:
    """The patterns compiled; a bad one (or one that matches the mask) is a HarnessError naming `where`."""
    if not patterns:
        return Redaction()
    # A user's pattern may backtrack without end: `regex` bounds its searches in time (harness's own are linear, in `re`).
    import regex

    compiled = []
    for number, text in enumerate(patterns, 1):
        if not isinstance(text, str):
            raise HarnessError(where, f"pattern {number} must be a string (a regular expression)")
        try:
            pattern = regex.compile(text)
        except regex.error as e:
            raise HarnessError(where, f"pattern {number} is not a regular expression ({e})") from None
        if any(match.group() for match in pattern.finditer(MASK)):
            raise HarnessError(where, f"pattern {number} matches the mask {MASK} itself; a replay would mask it again")
        compiled.append(pattern)
    return Redaction(tuple(compiled))


# <|name|> with a bounded name of no bars, brackets or spaces; or one of a few literals.
# Every alternative starts with a literal and has only bounded repeats: linear, whatever the text.
_SPACE = r"\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_BARRED = rf"<\|(?P<name>[^|<>{_SPACE}]{{1,64}})\|>"
_WORDS = (
    "s|/s|start_of_turn|end_of_turn|"
    "filename|reponame|gh_stars|file_sep|empty_output|"
    "issue_start|issue_comment|issue_closed|"
    "jupyter_start|jupyter_text|jupyter_code|jupyter_output|jupyter_script|"
    "commit_before|commit_msg|commit_after|repo_name"
)
# DeepSeek's own: fullwidth bars, words joined by U+2581 (<｜end▁of▁sentence｜>, <｜User｜>).
_WIDE = rf"<\uff5c(?P<wide>[^\uff5c<>{_SPACE}]{{1,64}})\uff5c>"
PATTERN = re.compile(rf"{_BARRED}|{_WIDE}|<(?P<word>{_WORDS})>|\[(?P<inst>/?INST)\]")


def neutralise(text: str) -> str:
    if "<" not in text and "[" not in text:  # every control token starts with one of them
        return text
    return PATTERN.sub(_break, text)  # (linear on any text: no timeout needed)


def _break(match: re.Match[str]) -> str:
    if match["inst"] is not None:
        return f"[¦{match['inst']}¦]"
    return f"<¦{match['name'] or match['wide'] or match['word']}¦>"  # (each group matches 1 or more characters)
