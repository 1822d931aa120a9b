"""An in-memory workspace and the coding tools that work on it (seed 003): files are keys
of a dict, never files on disk, and each tool changes the same dict.

    read_file(path)  write_file(path, content)  patch_file(path, old_str, new_str)  finish(message)

patch_file changes nothing unless old_str occurs exactly once. A path is a relative file
name: an absolute path, a `..`, an empty part or a control character is refused.
"""

from __future__ import annotations

import heapq
import json

from harness.tools import Tool, ToolError

_LISTED = 10  # file names a missing-file observation lists
_NAME_SHOWN = 100  # characters of one name it shows


def _preview(name: str) -> str:
    return repr(name) if len(name) <= _NAME_SHOWN else repr(name[:_NAME_SHOWN]) + f"… ({len(name)} characters)"


def check_path(path: object) -> str:
    """The path, if it is a relative file name; else a ToolError saying why not (scenarios check theirs too)."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty string")
    if path.startswith(("/", "\\")) or (path[1:2] == ":" and path[:1].isascii() and path[:1].isalpha()):  # C:
        raise ToolError(f"{path!r} is absolute; use a path relative to the workspace")
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        raise ToolError(f"{path!r} has a '..' segment; paths must stay inside the workspace")
    if any(part in ("", ".") for part in parts):
        raise ToolError(f"{path!r} is not a file name: every part between slashes must be a name (no '.', no trailing '/')")
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise ToolError(f"{path!r} holds a control character (NUL, newline, ...); file names cannot")
    return path


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ToolError(f"{name} must be a string")
    return value


class Workspace:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)  # path -> text; the caller's dict is never changed

    def _existing(self, path: object) -> str:
        """The path of a file there is; else a ToolError saying how many files there are, and
        the first few names: bounded, however many there are."""
        path = check_path(path)
        if path in self.files:
            return path
        names = heapq.nsmallest(_LISTED, self.files)  # the first few in order, without sorting them all
        more = len(self.files) - len(names)
        listed = ", ".join(_preview(name) for name in names) + (f", and {more} more" if more else "")
        listing = f"{len(self.files)} file{'s' * (len(self.files) != 1)}: {listed}" if self.files else "the workspace has no files"
        raise ToolError(f"no file named {_preview(path)} ({listing})")

    def read_file(self, path: str) -> str:
        return self.files[self._existing(path)]

    def write_file(self, path: str, content: str) -> str:
        path, content = check_path(path), _text("content", content)
        verb = "Overwrote" if path in self.files else "Created"
        self.files[path] = content
        return f"{verb} {path} ({len(content)} characters)"

    def patch_file(self, path: str, old_str: str, new_str: str) -> str:
        path = self._existing(path)
        old_str, new_str = _text("old_str", old_str), _text("new_str", new_str)
        if not old_str:
            raise ToolError("old_str must not be empty")
        count = self.files[path].count(old_str)
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            raise ToolError(f"old_str {where} in {path}; nothing was changed. Give an old_str that occurs exactly once")
        self.files[path] = self.files[path].replace(old_str, new_str)
        return f"Patched {path}: replaced 1 occurrence"

    def tools(self) -> list[Tool]:
        return [
            Tool("read_file", "Read a file of the workspace", ("path",), self.read_file, "exploration"),
            Tool("write_file", "Create a file, or overwrite it", ("path", "content"), self.write_file, "exploitation"),
            Tool("patch_file", "Replace old_str, which must occur exactly once, with new_str", ("path", "old_str", "new_str"), self.patch_file, "exploitation"),
            Tool("finish", "End the task with a message", ("message",), finish, "neutral", ends_run=True),
        ]


def finish(message: str) -> str:
    """The message, or a message that is not a string as JSON text (never Python's repr)."""
    return message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)


TOOL_NAMES = ("read_file", "write_file", "patch_file", "finish")
