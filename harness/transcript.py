"""The transcript: one growing text buffer in which every byte has an author.

The buffer is what the model sees; the spans say who wrote each part of it:

    developer   fixed text the developer wrote (instructions, tool list, the question)
    model       what the model generated and the stop sequence let through
    code        what the harness spliced in (observations, notices, cues)

A transcript only grows. Appending text by the author of the last span extends that
span, so spans are the maximal runs of one author (an empty span is kept only where it
stands between two other authors: an empty completion is still a model call).

Save format v1 (also the snapshot format), one record per line segment of the buffer:

    # harness transcript v1
    # stop_reason: "final_answer"
    developer | Question: Why do my Nimbus uploads fail?
    model     \\ Action: check_quota(nimbus)

The author is padded to 9 characters, then a space, then `|` when the segment ends with
a newline in the buffer or `\\` when it does not, then a space and the segment's text.
Lines starting with `# ` are metadata: a key and one JSON value. Only "\\n" separates
lines; a "\\r" or any other character is kept inside a record's text as it is. Loading
gives back exactly the same spans and bytes.

The metadata a run writes (harness.run_record checks each on loading: a saved file is
untrusted input, and a wrong one is one line naming the file, line and field):

    stop_reason, final_answer, steps   how the run ended (the reasons: harness.events)
    detail     a model_error's reason
    cuts       by step: what was read but never in the buffer (the stop's cut, the prefix rule's, a Ctrl-C's)
    calls      per model call: the tools that `ran`, the `notices` code wrote, what cut
               the reply (`cut_by`), the `hidden` [start, end, lane] parts the user was
               not shown, the model's own `tokens`, the chat `messages` it was sent
    model      the live model, as --model named it
    source     where the run came from (a scenario file relative to this file, a shipped
               name, or an Agent's module:attribute and question), a sha256 of what it
               was built from, and the fields the run changed (--max-steps, ...)
    scenario   the scenario's fields as the run used them, for reading; only a file
               without a source (from `harness agent`) replays from it

A file harness writes ends with a newline: one that does not was cut off, and is refused,
as are CRLF line endings and a byte-order mark (each named). New facts arrive as new keys;
a reader ignores keys it does not know.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, NamedTuple

from harness.errors import TranscriptFormatError

HEADER = "# harness transcript v1"


class Author(StrEnum):
    DEVELOPER = "developer"
    MODEL = "model"
    CODE = "code"


class Span(NamedTuple):
    author: Author
    text: str


class Frames(NamedTuple):
    """The developer's text around code's turn (a chat template's, harness.prompts; empty: none)."""

    before_code: str = ""  # after the model's text, before code's first line
    after_code: str = ""  # after code's last line, before the model is called again
    cue: str = ""  # written after `after_code`: the start of the model's next turn


class Transcript:
    """Append-only spans over one buffer: the pieces appended, and where each author's run begins."""

    def __init__(self, spans: Iterable[Span] = ()) -> None:
        self._pieces: list[str] = []  # the buffer = "".join(_pieces)
        self._length = 0
        self._authors: list[Author] = []  # one per span
        self._starts: list[int] = []  # where each span begins in the buffer
        for span in spans:  # each span as given, an empty one too: opened here, then grown
            self._authors.append(Author(span.author))
            self._starts.append(self._length)
            self.append(span.author, span.text)

    @property
    def text(self) -> str:
        if len(self._pieces) != 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0]

    def __len__(self) -> int:
        return self._length

    def append(self, author: Author, text: str) -> None:
        if type(author) is not Author:  # a plain string: "model" -> Author.MODEL
            author = Author(author)
        if not self._authors or self._authors[-1] is not author:
            self._authors.append(author)
            self._starts.append(self._length)
        if text:
            self._pieces.append(text)
            self._length += len(text)

    @property
    def last_author(self) -> Author | None:
        return self._authors[-1] if self._authors else None

    @property
    def spans(self) -> list[Span]:
        text = self.text
        ends = [*self._starts[1:], len(text)]
        return [Span(a, text[s:e]) for a, s, e in zip(self._authors, self._starts, ends)]

    def texts_by(self, author: Author) -> list[str]:
        """The text of each span by one author, in order (for replay: the model's turns)."""
        return [span.text for span in self.spans if span.author == author]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transcript):
            return NotImplemented
        return (self._authors, self._starts, self.text) == (other._authors, other._starts, other.text)

    def __repr__(self) -> str:
        return f"Transcript(spans={self.spans!r})"


# --- save format v1 ----------------------------------------------------------------

_WIDTH = 9  # len("developer")
_AUTHORS = {f"{a.value:<{_WIDTH}}": a for a in Author}  # "model    " -> Author.MODEL
_KEY = re.compile(r"[a-z_][a-z0-9_]{0,63}")


def split_lines(text: str) -> list[str]:
    """Split after each "\n" only: "a\nb\n" -> ["a\n", "b\n"] (a "\r" stays inside its line)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def records(transcript: Transcript) -> list[str]:
    """One record line (without its newline) per line segment of each span."""
    out: list[str] = []
    for span in transcript.spans:
        head, lines = f"{span.author.value:<{_WIDTH}} ", span.text.split("\n")
        out += [f"{head}| {text}" if text else head + "|" for text in lines[:-1]]  # each ended with a newline: `|`
        if lines[-1] or len(lines) == 1:  # the last did not: `\\` (an empty span still gets its record)
            out.append(f"{head}\\ {lines[-1]}" if lines[-1] else head + "\\")
    return out


def dumps(transcript: Transcript, meta: dict[str, Any] | None = None) -> str:
    """The save format: header, metadata lines, records; always ends with a newline."""
    lines = [HEADER]
    for key, value in (meta or {}).items():  # keys keep their order: it is meaningful (tool order)
        lines.append(f"# {key}: {json.dumps(value, ensure_ascii=False)}")
    lines += records(transcript)
    return "\n".join(lines) + "\n"


def loads(text: str, source: str = "<transcript>") -> tuple[Transcript, dict[str, Any]]:
    """Parse the save format back into the exact same spans and metadata.

    The text is untrusted: every line is checked by position and length, not by a
    pattern over its whole length, so a 10 MB line costs what reading it costs."""
    if text.startswith("\ufeff"):
        raise TranscriptFormatError(f"{source}:1", "the file begins with a byte-order mark (BOM, which some editors add); save it as UTF-8 without one")
    lines = text.split("\n")
    if lines[0] == HEADER + "\r":
        raise TranscriptFormatError(f"{source}:1", "the file has Windows line endings (CRLF, \\r\\n); a transcript has \\n only; if git "
                                   "converted it (core.autocrlf), add `*.txt -text` to .gitattributes and check it out again")
    if lines[0] != HEADER:
        raise TranscriptFormatError(f"{source}:1", f"expected the header line {HEADER!r}")
    if lines[-1] != "":  # harness ends every file with a newline: without one, it was cut off
        where = f"{source}:{len(lines)}"
        raise TranscriptFormatError(where, "the file ends in the middle of a line: it was cut off (no newline at the end)")
    lines.pop()
    transcript, meta = Transcript(), {}
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("#"):
            key, colon, value = line[2:].partition(": ")
            where = f"{source}:{number}"
            if not (line.startswith("# ") and colon and _KEY.fullmatch(key)):
                raise TranscriptFormatError(where, "a metadata line must read '# key: <json>'")
            if key in meta:  # which would count? Neither is taken over the other unsaid
                raise TranscriptFormatError(where, f"metadata {key} is given twice")
            meta[key] = _json(value, where, key)
            continue
        author, sep = _AUTHORS.get(line[:_WIDTH]), line[_WIDTH : _WIDTH + 2]
        if author is None or sep not in (" |", " \\") or (len(line) > _WIDTH + 2 and line[_WIDTH + 2] != " "):
            empty = " (this line is empty: a blank line at the end? print() adds one; write the save format as it is)" if not line else ""
            raise TranscriptFormatError(
                f"{source}:{number}", f"a record must read 'AUTHOR | text' (author developer, model or code, padded to 9){empty}"
            )
        newline = "\n" if sep == " |" else ""
        transcript.append(author, line[_WIDTH + 3 :] + newline)
    return transcript, meta


def _json(value: str, where: str, key: str) -> Any:
    try:
        parsed = json.loads(value)
        (json.dumps(parsed, ensure_ascii=False) if "\\u" in value else value).encode("utf-8")  # a lone surrogate, as it is or escaped, is not text
    except RecursionError:
        raise TranscriptFormatError(where, f"metadata {key!r} is nested too deeply") from None
    except UnicodeEncodeError:
        raise TranscriptFormatError(where, f"metadata {key!r} holds a lone surrogate, which is not text") from None
    except ValueError:
        raise TranscriptFormatError(where, f"metadata {key!r} is not valid JSON") from None
    return parsed
