"""Untrusted text at the edges: one escaping function per medium, applied where text
leaves the buffer for it (the buffer keeps the bytes as they are).

    for_terminal("a\\x1b]0;PWNED\\x07b")  ->  "a␛]0;PWNED␇b"      (shown, not obeyed)
    for_html("<img src=x>")             ->  "&lt;img src=x&gt;"
    for_script_json({"a": "</script>"}) ->  '{"a": "\\u003c/script\\u003e"}'
"""

from __future__ import annotations

import json
import re
from typing import Any


# Terminal: "\n" and "\t" stay; other C0 characters and DEL become control pictures (ESC -> ␛),
# C1 characters (0x9b is a one-byte CSI) and the bidi controls visible \x / \u escapes.
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TERMINAL = (
    {c: chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\n\t"}
    | {0x7F: "␡"}
    | {c: f"\\x{c:02x}" for c in range(0x80, 0xA0)}
    | {c: f"\\u{c:04x}" for c in _BIDI}
)

# JSON: json.dumps writes C1 controls, DEL, the bidi controls and U+2028/2029 raw; as \u
# escapes they mean the same, and a terminal showing the line obeys nothing.
_JSON = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *_BIDI, 0x2028, 0x2029)}
# JSON inside <script>: also what could end the element (the page is a file someone may `cat`).
_SCRIPT_JSON = _JSON | {ord(c): f"\\u{ord(c):04x}" for c in "<>&"}


# A lone surrogate (a file name that is not UTF-8: byte 0xff is "\udcff") is shown as its byte.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _surrogate(match: Any) -> str:
    code = ord(match[0])
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def encodable(text: str) -> str:
    """`text` with each lone surrogate shown as its byte (`\\xff`) or code (`\\ud800`)."""
    return _SURROGATE.sub(_surrogate, text)


def for_terminal(text: str) -> str:
    """Text a terminal shows but never obeys: one pass, linear, idempotent."""
    if text.isprintable():  # no control, format or surrogate character: nothing to show otherwise
        return text
    return encodable(text.translate(_TERMINAL))


def one_line(text: str) -> str:
    """Text for one line of a table, a log or an error: shown, never obeyed, never a line of its own."""
    return for_terminal(text).replace("\n", "␊").replace("\t", "␉")


def for_html(text: str) -> str:
    """Text for HTML content or a quoted attribute, its control characters shown (a terminal may print the page)."""
    import html

    return html.escape(for_terminal(text), quote=True)


def for_script_json(value: Any) -> str:
    """JSON to put inside a <script type="application/json"> element."""
    return json.dumps(value, ensure_ascii=False).translate(_SCRIPT_JSON)


# Markdown: what makes inline HTML, links, images and code spans is escaped (emphasis cannot act).
_MARKDOWN = {ord(c): "\\" + c for c in "\\`[]!"} | {ord("<"): "&lt;", ord("&"): "&amp;", ord(">"): "&gt;"}


def for_markdown(text: str) -> str:
    """Untrusted text inside a Markdown line: never markup, never a line of its own (a
    fence or a heading), and no link (`https\\://` reads the same, GFM links none)."""
    shown = for_terminal(text).translate(_MARKDOWN).replace("\n", "␊").replace("\r", "␍")
    return shown.replace("://", "\\://").replace("www.", "www\\.") if "://" in shown or "www." in shown else shown


def for_json(line: str) -> str:
    """A JSON text with every control character that json.dumps leaves raw written as \\u."""
    return line.translate(_JSON)


# XML 1.0 (a JUnit report) cannot hold most C0 characters at all: they are drawn as for a
# terminal, and whatever else XML forbids (U+FFFE, U+FFFF) becomes a \u escape.
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def for_xml(text: str) -> str:
    """Untrusted text for an XML element or attribute (ElementTree escapes < & > and quotes)."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m[0]):04x}", for_terminal(text))
