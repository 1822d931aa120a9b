"""The buffer fitted to a width, for the stepper: every physical line keeps its author and
its row's mark, a continuation marked ↪. A frame's lines are made once per width.

    model     ▶ Thought: Failing uploads often mean the storage quota is full. I
    model    ↪▶ should check it first.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from harness.escape import for_terminal
from harness.render.frames import KINDS, Frame, parts
from harness.render.live import MARKS, NOTE_STYLE, STYLES, WIDTH, cut_note, never_ran
from harness.transcript import split_lines

PREFIX = WIDTH + 3  # "model     │ "


def row_lines(name: str, style: str, text: str, console: Console, width: int, mark: str = "│", joined: bool = False, new: str = " ") -> list[Text]:
    """One row (a line of an author or a chat role, without its newline) as physical lines.
    `joined`: the next author goes on with the line (⤸); `new`: what the first has before its mark."""
    body = Text(for_terminal(text), style=style)
    if joined:
        body.append(" ⤸", style="dim")
    out = []
    for i, piece in enumerate(body.wrap(console, max(1, width - PREFIX), overflow="fold")):
        head = f"{name:<{WIDTH}}{new}{mark} " if i == 0 else f"{name:<{WIDTH}}↪{mark} "
        out.append(Text(head, style=f"bold {style}".strip()).append_text(piece))
    return out


def note_lines(message: str, console: Console, width: int) -> list[Text]:
    """A line about the buffer that is not part of it, under the author column; its
    continuations marked ↪ as a wrapped row's are."""
    out, text = [], Text(for_terminal(message), style=NOTE_STYLE)
    for i, piece in enumerate(text.wrap(console, max(1, width - PREFIX - 2), overflow="fold")):
        head = " " * PREFIX if i == 0 else " " * WIDTH + "↪" + " " * (PREFIX + 1 - WIDTH)
        out.append(Text(head).append_text(piece))
    return out


def frame_lines(frame: Frame, newest: bool, console: Console, width: int, cut_limit: int | None = None, cut_hint: str = "") -> list[Text]:
    """The rows of one frame; the newest is marked ▶ (bold, underlined) and says what was
    cut (whole, or its first `cut_limit` characters and `cut_hint`), not shown, or never ran."""
    extra = "bold underline" if newest else ""
    out: list[Text] = []
    pieces = [(piece, kind) for text, kind in parts(frame) for piece in split_lines(text)]
    for i, (piece, kind) in enumerate(pieces):
        ended = piece.endswith("\n")
        joined = not ended and i == len(pieces) - 1 and not newest  # the next frame goes on with this line
        mark = MARKS.get(kind) or ("▶" if newest else "│")  # what its text is (⚠ ✗), else ▶ for the newest part
        new = "▶" if newest and kind in MARKS else " "  # a new ⚠ or ✗ row is marked new too: `code     ▶⚠ Notice: …`
        out += row_lines(frame.author.value, f"{STYLES[frame.author]} {extra}".strip(), piece.rstrip("\n"), console, width, mark, joined, new)
        last_of_kind = i == len(pieces) - 1 or pieces[i + 1][1] != kind
        if newest and kind in ("denied", "withheld") and last_of_kind:
            out += note_lines(f"{MARKS[kind]} {KINDS[kind]}", console, width)
    if newest and frame.cut:
        out += note_lines(cut_note(frame.cut, frame.cut_by, cut_limit) + cut_hint, console, width)
    if newest and frame.unran:
        out += note_lines(never_ran(frame.unran), console, width)
    return out


class BufferLines:
    """The physical lines of the buffer at one width, each frame's made once."""

    def __init__(self, frames: list[Frame], console: Console, width: int) -> None:
        self.frames, self.console, self.width = frames, console, width
        self.lines: list[Text] = []  # frames 0 .. len(ends)-1, each as an older frame
        self.ends: list[int] = []  # where each frame's lines end in `lines`

    def upto(self, k: int, cut_limit: int | None = None, cut_hint: str = "") -> tuple[list[Text], int, list[Text]]:
        """(the made lines, where frame k begins in them, frame k's own lines as the newest)."""
        while len(self.ends) < k:
            self.lines += frame_lines(self.frames[len(self.ends)], False, self.console, self.width)
            self.ends.append(len(self.lines))
        before = self.ends[k - 1] if k else 0
        return self.lines, before, frame_lines(self.frames[k], True, self.console, self.width, cut_limit, cut_hint)

