"""The files a user names: reading an input, and writing an output without ever losing a
file they had.

harness reads only a regular file (or a link to one), so a FIFO or a device never hangs it.
It replaces only a regular file that begins with harness's own header for that output,
checked before a run and again right before the rename of a temporary file beside it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

_PEEK = 4096  # bytes read to recognise a header
_NOT_REGULAR = "is not a regular file (a FIFO, a device or a socket); harness reads only regular files"


def read_input(path: Path, error: type[HarnessError] = HarnessError, shown: str | None = None) -> str:
    """A file the user gave as input, as text ("\\r" kept as it is); any problem is one
    `error` naming the file (as `shown`, if the user gave it so)."""
    where = shown or str(path)
    if why := not_a_file(path, "cannot read the file"):  # looked at before it is opened
        raise error(where, why)
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped for a FIFO after the first look
                raise error(where, _NOT_REGULAR)
            data = f.read()
    except OSError as e:
        raise error(where, f"cannot read the file ({e.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if data.startswith(_UTF16):
            raise error(where, "the file is UTF-16 text (as Windows PowerShell's `>` writes it); save it as UTF-8") from None
        raise error(where, f"the file is not UTF-8 text (byte {e.start})") from None


_UTF16 = (b"\xff\xfe", b"\xfe\xff")  # the byte-order marks of UTF-16, little- and big-endian


def load_toml(text: str) -> dict[str, Any]:
    """TOML text as a dict (a scenario, a template's frames); a ValueError says what is wrong."""
    import tomli  # (here: a run of a saved file reads no TOML)

    try:
        return tomli.loads(text)
    except RecursionError:  # tomli reads nested arrays and tables by recursion
        raise ValueError("arrays or tables nested too deeply") from None


def not_a_file(path: Path, unreadable: str = "cannot be read") -> str:
    """Why `path` names no regular file ("" if it does); a link to one is one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        try:
            return f"is a link to {os.readlink(path)!r}, which does not exist"
        except OSError:  # not a link: nothing is there
            return "no such file"
    except OSError as e:
        return f"{unreadable} ({e.strerror})"
    return "" if stat.S_ISREG(mode) else "is a folder, not a file" if stat.S_ISDIR(mode) else _NOT_REGULAR


HEADER_LINE = rb"# harness transcript v[0-9]{1,9}\r?(\n|\Z)"  # any version's (compiled by re when first matched)


def is_transcript(path: Path) -> bool:
    """Does the file begin with any version's header line (even with a byte-order mark, a
    "\r\n", or in UTF-16: loading it then says why it cannot be read, never passes it by)?"""
    try:
        with open(path, "rb") as f:
            first = f.read(64)
    except OSError:
        return False
    if first.startswith(_UTF16):  # a transcript re-encoded (PowerShell's `>`): found, so that loading it says so
        first = first[2:].decode("utf-16-le" if first[0] == 0xFF else "utf-16-be", "ignore").encode()
    return re.match(HEADER_LINE, first.removeprefix(b"\xef\xbb\xbf")) is not None


def check_target(path: Path, header: str, option: str) -> None:
    """Refuse, naming the option: a missing folder, or something that is not ours to replace."""
    where = f"{option} {path}"
    if not path.parent.is_dir():
        raise HarnessError(where, "its folder does not exist; give a file path in an existing folder")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise HarnessError(where, f"cannot look at the file ({e.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise HarnessError(where, "is a folder; give a file path")
    if not stat.S_ISREG(info.st_mode):  # a link, a FIFO, a device: never opened, never replaced
        raise HarnessError(where, f"is {'a link' if stat.S_ISLNK(info.st_mode) else 'not a regular file'}; not overwriting it")
    if not info.st_mode & stat.S_IWUSR:  # write-protected (chmod a-w), read from its mode: root's access() would allow it
        raise HarnessError(where, "is write-protected; not overwriting it")
    try:
        with open(path, "rb") as f:
            start = f.read(_PEEK)
    except OSError as e:
        raise HarnessError(where, f"cannot read the file ({e.strerror})") from None
    if not start.startswith(header.encode("utf-8")):
        raise HarnessError(where, "the file exists and harness did not write it; not overwriting it")


def write_file(path: Path, text: str, header: str, option: str) -> None:
    """Write all or nothing; re-check the target right before the rename."""
    import tempfile  # here, not at the top: every run reads its inputs through this module

    if not text.startswith(header):
        raise ValueError(f"refusing to write {option} output that does not begin with its header")
    tmp = None
    try:
        # A short name of its own, not the target's plus a suffix: it fits wherever the target's fits.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".harness-", suffix=".tmp")
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)  # a file of ours that is replaced keeps its mode
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # as an ordinary new file would be, not mkstemp's 0600
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        check_target(path, header, option)
        os.replace(tmp, path)
    except OSError as e:
        raise HarnessError(f"{option} {path}", f"cannot write ({e.strerror})") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def resolved(path: Path) -> Path:
    """path.resolve(), whose symlink loop is an OSError (ELOOP) as on later Pythons, not
    Python 3.11's RuntimeError: every caller that handles a bad path handles a loop too."""
    try:
        return path.resolve()
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None


def same_file(path: Path) -> Path:
    """The key two names of one file share (`a.txt`, `../r/a.txt`, a symlink to it)."""
    try:
        return resolved(path)
    except OSError:  # a symlink loop: its own name, then
        return path.absolute()


class Fields:
    """A table a user's file holds (a scenario, a saved file's metadata), each field read with
    its check: a problem is one `error` naming the file and the field (`where` + the key)."""

    def __init__(self, data: dict[str, Any], where: str, error: type[HarnessError] = HarnessError) -> None:
        self.data, self.where, self.error = data, where, error

    def fail(self, key: str, message: str) -> HarnessError:
        return self.error(f"{self.where}{key}", message)

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if value is None and key not in self.data:
            raise self.fail(key, "is required")
        if not isinstance(value, str):  # (null too: it is there, but says nothing)
            raise self.fail(key, "must be a string")
        return value

    def optional(self, key: str) -> str | None:
        return None if self.data.get(key) is None else self.text(key)

    def choice(self, key: str, known: tuple[str, ...], default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str) or value not in known:
            said = f", not {value[:80]!r}" if isinstance(value, str) else ""
            raise self.fail(key, f"must be one of {', '.join(known)}{said}")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "must be a list of strings")
        return tuple(value)

    def count(self, key: str, default: int, least: int = 0) -> int:
        value = self.data.get(key, default)
        if type(value) is not int or value < least:
            raise self.fail(key, f"must be a whole number, {least} or more")
        return value

    def flag(self, key: str, default: bool = True) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def table(self, key: str, must: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, must)
        return value
