"""Keys from a terminal in cbreak mode: one read may hold several keys, each one character
or one escape sequence (→ is "\\x1b[C"); a read that ends inside a sequence waits briefly
for the rest, so a lone ESC is a key.
"""

from __future__ import annotations

import codecs
import os
import re
import select

# CSI: ESC [ parameters intermediates final; SS3: ESC O and one character; else one character.
_KEY = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1bO.|.", re.DOTALL)
_UNFINISHED = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|O)?\Z")
_WAIT = 0.05  # seconds to wait for the rest of a sequence


def split_keys(text: str) -> list[str]:
    return _KEY.findall(text)


class KeyReader:
    """Keys from a file descriptor, one burst per `read()`; None at the end of input."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode  # a character may span reads

    def read(self, timeout: float | None = None) -> list[str] | None:
        """The keys that have arrived ([] if none within `timeout` seconds)."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return []
        data = os.read(self.fd, 1024)
        if not data:
            return None
        text = self.decode(data)
        while (not text or _UNFINISHED.search(text)) and select.select([self.fd], [], [], _WAIT)[0]:
            if not (data := os.read(self.fd, 1024)):
                break
            text += self.decode(data)
        return split_keys(text)
