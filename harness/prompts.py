"""Prompt templates: the developer's text that starts the buffer, the first stage of a run.

A template (string.Template syntax, harness.scenario) is found by name in the prompts/ that
ship with harness or by a path inside the scenario's own folder, and no other way: a
scenario or a saved transcript can never make harness read any other file.

A template for a chat model may begin with its turn frames, TOML between two `+++` lines:

    +++
    before_code = "<|im_end|>\n<|im_start|>user\n"        # closes the model's turn, opens code's
    after_code = "<|im_end|>\n<|im_start|>assistant\n"    # closes code's turn, opens the model's
    cue = "Thought:"                                      # optional: the model's next turn begins so
    +++
    <|im_start|>system ...

The loop writes these strings around what code writes (observations, notices), tagged
`developer`: they are the developer's text, control tokens and all, while code's own text
never holds one. So an observation arrives as a turn of its own, as chat models expect.
(The react-paper dialect writes its own cue, `Thought 2:`; a template for it needs no `cue`.)
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from typing import NamedTuple

from harness.errors import TemplateError
from harness.files import load_toml, not_a_file, resolved
from harness.transcript import Frames  # (the buffer's: the loop writes them)

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
FRAME_KEYS = ("before_code", "after_code", "cue")
FRAME_MAX = 1_000  # characters of one frame string


class Filled(NamedTuple):
    text: str  # the template's body with its $variables filled in: the start of the buffer
    frames: Frames


@functools.cache  # where harness is installed does not change while it runs (resolving it takes syscalls)
def data_dir(name: str) -> Path:
    """prompts/ or transcripts/, resolved: inside an installed wheel, or at the top of the checkout."""
    here = Path(__file__).resolve().parent
    return here / "_data" / name if (here / "_data" / name).is_dir() else here.parent / name


def check_name(name: str, field: str = "prompt") -> None:
    """A template is named, never given as a path: letters, digits, - _ . only."""
    if not NAME.fullmatch(name) or ".." in name:
        raise TemplateError(field, f"{_quoted(name)} is not a template name (letters, digits, - _ . only; no path)")


def by_name(name: str, field: str = "prompt") -> Path:
    check_name(name, field)
    path = data_dir("prompts") / f"{name}.txt"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in data_dir("prompts").glob("*.txt")))
        raise TemplateError(field, f"no template named {name!r} (known: {known})")
    return path


def by_path(relative: str, folder: Path, field: str = "prompt_file") -> Path:
    """A template file inside `folder` (the scenario's folder), named relative to it."""
    shown = _quoted(relative)
    if len(relative) > PATH_MAX or any(ord(c) < 32 or ord(c) == 127 for c in relative):
        raise TemplateError(field, f"{shown} is not a file name (at most {PATH_MAX} characters, no control characters)")
    if not relative or Path(relative).is_absolute() or relative.startswith(("/", "\\")) or ":" in relative:
        raise TemplateError(field, f"{shown} must be a path relative to the scenario's folder")
    try:
        root = resolved(folder)
        path = resolved(root / relative)
        if not path.is_relative_to(root):
            raise TemplateError(field, f"{shown} leaves the scenario's folder")
        if why := not_a_file(path):  # none, a folder, a FIFO: refused here, unopened, naming the field
            raise TemplateError(field, f"no file {shown} in {folder}" if why == "no such file" else f"{shown} {why}")
    except (OSError, ValueError) as e:  # a name the file system refuses (too long a part, say)
        raise TemplateError(field, f"{shown} cannot be looked up ({getattr(e, 'strerror', None) or e})") from None
    return path


PATH_MAX = 1024  # characters of a prompt_file; a name that long is a mistake or an attack


def _quoted(name: str) -> str:
    """A name from a scenario or a saved file, for a one-line message: repr'd, cut at 60."""
    shown = repr(name)
    return shown if len(shown) <= 60 else shown[:59] + "…"


def fill(text: str, variables: dict[str, str], where: str) -> Filled:
    """A template's text with its $variables filled in; `where` names it in an error."""
    body, frames = split_frames(text, where)
    try:
        filled = Filled(string.Template(body).substitute(variables), frames)
    except KeyError as e:
        supplied = ", ".join(f"${v}" for v in variables)
        raise TemplateError(where, f"uses ${e.args[0]}, which is not supplied (supplied: {supplied})") from None
    except ValueError as e:
        raise TemplateError(where, f"bad placeholder ({e}); write $$ for a dollar sign") from None
    if "question" not in string.Template(body).get_identifiers():
        raise TemplateError(where, "never uses $question, so the model would never see the question")
    return filled


def split_frames(text: str, where: str) -> tuple[str, Frames]:
    """(body, frames): the TOML between a first line `+++` and the next such line, if any."""
    if text.startswith("\ufeff"):  # else the frames would be sent to the model as prompt text
        raise TemplateError(where, "the template begins with a byte-order mark; save it as UTF-8 without one")
    if text.startswith("+++\r\n"):
        raise TemplateError(where, "the template's frames end their lines with CRLF; save it with LF line endings")
    if not text.startswith("+++\n"):
        return text, Frames()
    end = text.find("\n+++\n", 3)
    if end < 0:
        raise TemplateError(where, "the frames begin with a line '+++' but no line '+++' ends them")
    try:
        data = load_toml("\n" + text[4:end])  # (a blank first line: errors name the file's lines)
    except ValueError as e:
        raise TemplateError(where, f"the frames are not TOML ({e})") from None
    for key, value in data.items():
        if key not in FRAME_KEYS:
            raise TemplateError(where, f"frames: unknown key {key!r} (known: {', '.join(FRAME_KEYS)})")
        if not isinstance(value, str) or len(value) > FRAME_MAX:
            raise TemplateError(where, f"frames: {key} must be a string of at most {FRAME_MAX:,} characters")
    return text[end + 5 :], Frames(**data)
