"""Prompt templates: the developer's text that starts the buffer, the first stage of a run.

A template is a text file with `$question` and `$tools` (string.Template syntax; `$$` is a
dollar sign). It is found in one of two ways, and no other:

    prompt = "default"                 by name, in the prompts/ folder that ships with harness
    prompt_file = "prompts/mine.txt"   by path, relative to the scenario's own folder, and
                                       inside it (no absolute path, no `..` that leaves it)

so a scenario or a saved transcript can never make harness read any other file. A
variable nobody supplies is an error, never left as it is.
"""

from __future__ import annotations

import string
from pathlib import Path

import regex

from harness.errors import TemplateError

NAME = regex.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def data_dir(name: str) -> Path:
    """prompts/ or transcripts/: inside an installed wheel, or at the top of the checkout."""
    packaged = Path(__file__).parent / "_data" / name
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / name


def by_name(name: str, field: str = "prompt") -> Path:
    """prompts/NAME.txt; a name with a path in it is refused."""
    if not NAME.fullmatch(name) or ".." in name:
        raise TemplateError(field, f"{_quoted(name)} is not a template name (letters, digits, - _ . only; no path)")
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
        root = folder.resolve()
        path = (root / relative).resolve()
        if not path.is_relative_to(root):
            raise TemplateError(field, f"{shown} leaves the scenario's folder")
        if not path.is_file():
            raise TemplateError(field, f"no file {shown} in {folder}")
    except (OSError, ValueError) as e:  # a name the file system refuses (too long a part, say)
        raise TemplateError(field, f"{shown} cannot be looked up ({getattr(e, 'strerror', None) or e})") from None
    return path


PATH_MAX = 1024  # characters of a prompt_file; a name that long is a mistake or an attack


def _quoted(name: str) -> str:
    """A name from a scenario or a saved file, for a one-line message: repr'd, cut at 60."""
    shown = repr(name)
    return shown if len(shown) <= 60 else shown[:59] + "…"


def render(path: Path, variables: dict[str, str]) -> str:
    """The template at `path` with its $variables filled in."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TemplateError(str(path), f"cannot read the template ({e.strerror})") from None
    except UnicodeDecodeError:
        raise TemplateError(str(path), "the template is not UTF-8 text") from None
    return fill(text, variables, str(path))


def fill(text: str, variables: dict[str, str], where: str) -> str:
    """A template's text with its $variables filled in; `where` names it in an error."""
    try:
        return string.Template(text).substitute(variables)
    except KeyError as e:
        supplied = ", ".join(f"${v}" for v in variables)
        raise TemplateError(where, f"uses ${e.args[0]}, which is not supplied (supplied: {supplied})") from None
    except ValueError as e:
        raise TemplateError(where, f"bad placeholder ({e}); write $$ for a dollar sign") from None
