"""Files written and read byte for byte (no newline translation), for tests of saved runs."""

from __future__ import annotations

from pathlib import Path


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def edit(path: Path, old: str, new: str) -> None:
    text = read(path)
    assert old in text, old
    write(path, text.replace(old, new))
