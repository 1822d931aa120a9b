"""Untrusted text at the edges: one escaping function per medium, applied where text
leaves the buffer for it (the buffer keeps the bytes as they are).

    for_terminal("a\\x1b]0;PWNED\\x07b")  ->  "a␛]0;PWNED␇b"      (shown, not obeyed)
    for_html("<img src=x>")             ->  "&lt;img src=x&gt;"
    for_script_json({"a": "</script>"}) ->  '{"a": "\\u003c/script\\u003e"}'
"""

from __future__ import annotations

import json
from typing import Any

import regex


# Terminal: "\n" ends a row and "\t" only moves right (rich expands it), so both stay.
# Every other C0 character and DEL become Unicode control pictures (ESC -> ␛, CR -> ␍),
# C1 characters (0x80-0x9f: 0x9b is a one-byte CSI) and the bidi controls that reorder
# what follows them become visible \x / \u escapes.
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TERMINAL = (
    {c: chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\n\t"}
    | {0x7F: "␡"}
    | {c: f"\\x{c:02x}" for c in range(0x80, 0xA0)}
    | {c: f"\\u{c:04x}" for c in _BIDI}
)

# JSON inside <script>: these may not appear raw (they could end the element, open a
# comment, or end a line in old parsers); in JSON strings they are valid as \u escapes.
# Nor may what a terminal obeys (DEL, C1 such as the one-byte CSI 0x9b, the bidi
# controls): the page is a file someone may `cat`, and the data is the same either way.
_SCRIPT_JSON = {c: f"\\u{c:04x}" for c in (*map(ord, "<>&\u2028\u2029"), 0x7F, *range(0x80, 0xA0), *_BIDI)}


# A lone surrogate is not text: no output can encode it. One comes from a file name that is
# not UTF-8 (Python holds its byte 0xff as "\udcff"), and is shown as that byte: \xff.
_SURROGATE = regex.compile(r"[\ud800-\udfff]")


def _surrogate(match: Any) -> str:
    code = ord(match[0])
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def encodable(text: str) -> str:
    """`text` with each lone surrogate shown as its byte (`\\xff`) or code (`\\ud800`), so
    that any output, a strict UTF-8 JSON reader's too, can take it."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # in C; the pattern is compiled only for a text that needs it
    except UnicodeEncodeError:
        return _SURROGATE.sub(_surrogate, text)
    return text


def for_terminal(text: str) -> str:
    """Text a terminal shows but never obeys: one pass, linear, idempotent."""
    return encodable(text.translate(_TERMINAL))


def one_line(text: str) -> str:
    """Text for one line of a table, a log or an error: shown and never obeyed, and unable to start a
    line of its own (a file may be named "a\\n3 runs: 3 final_answer.toml")."""
    return for_terminal(text).replace("\n", "␊").replace("\t", "␉")


def for_html(text: str) -> str:
    """Text for HTML element content or a quoted attribute value (its control characters
    shown, as a terminal view shows them: the page is a file a terminal may print)."""
    import html  # here: only a page or a report needs it, and a run's start-up does not

    return html.escape(for_terminal(text), quote=True)


def for_script_json(value: Any) -> str:
    """JSON to put inside a <script type="application/json"> element."""
    return json.dumps(value, ensure_ascii=False).translate(_SCRIPT_JSON)


# Markdown: a viewer renders inline HTML, links, images and code spans, so in text that is
# not ours those characters are escaped and "<" "&" ">" become entities, after the
# terminal pass (notes are read with `cat` too). Emphasis is left alone: it cannot act.
_MARKDOWN = {ord(c): "\\" + c for c in "\\`[]!"} | {ord("<"): "&lt;", ord("&"): "&amp;", ord(">"): "&gt;"}


def for_markdown(text: str) -> str:
    """Untrusted text inside a Markdown line: shown as it is, never rendered as markup, and
    kept on its line (a line break shown as ␊: else a final answer's `~~~` or `## Step 9`
    on a line of its own would open a fence or a heading of the notes). A URL stays text
    too: `https\\://` and `www\\.` read the same, but GFM makes no link of them."""
    shown = for_terminal(text).translate(_MARKDOWN).replace("\n", "␊").replace("\r", "␍")
    return shown.replace("://", "\\://").replace("www.", "www\\.") if "://" in shown or "www." in shown else shown


# JSON: json.dumps escapes C0 characters but writes C1 controls (0x9b is a one-byte CSI),
# DEL, the bidi controls and U+2028/2029 as they are. Inside JSON they can only stand in a
# string, where a \u escape means the same character: the data is unchanged, and a
# terminal showing the line obeys nothing.
_JSON = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *_BIDI, 0x2028, 0x2029)}


def for_json(line: str) -> str:
    """A JSON text with every control character that json.dumps leaves raw written as \\u."""
    if line.isascii() and "\x7f" not in line:  # the common case, checked in C: nothing to do
        return line
    return line.translate(_JSON)


# XML 1.0 (a JUnit report) cannot hold most C0 characters at all, not even as &#x1b;: a
# parser refuses the whole file. They are drawn as for a terminal (a JUnit page shows the
# text to a person), and whatever else XML forbids (U+FFFE, U+FFFF) becomes a \u escape.
_NOT_XML = regex.compile(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def for_xml(text: str) -> str:
    """Untrusted text for an XML element or attribute (ElementTree escapes < & > and quotes)."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m[0]):04x}", for_terminal(text))
