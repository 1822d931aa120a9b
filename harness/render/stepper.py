"""The terminal stepper: one frame of the run at a time, for a projector.

    Step 2 of 7    authors:  developer   model   code

    developer │ Question: Why do my Nimbus uploads keep failing?
    model     ▶ Thought: Failing uploads often mean the storage quota is full.
                ✂ cut by the stop sequence, never in the buffer: Observation: quota was fine…

    sent   completion = model(buffer): the whole buffer, 532 characters, sent fresh
    added  model, 112 characters
    why    An Action line and no final answer: code runs the tool …

The newest part is marked ▶ (and bold, underlined); parts that hold a notice are marked
⚠; neither needs colour. Keys: Enter, → or space next; ← or backspace back; Home, End;
q quits and gives the terminal back as it was.
"""

from __future__ import annotations

import os
import sys
import termios
import tty

from rich.console import Console
from rich.text import Text

from harness.frames import Frame
from harness.render.live import Rows, legend, note, preview

KEYS = {
    "next": ("\r", "\n", " ", "\x1b[C", "\x1bOC"),
    "back": ("\x1b[D", "\x1bOD", "\x7f", "\x08"),
    "first": ("\x1b[H", "\x1bOH", "\x1b[1~", "\x1b[7~"),
    "last": ("\x1b[F", "\x1bOF", "\x1b[4~", "\x1b[8~"),
    "quit": ("q", "Q", "\x03", "\x1b"),
}
HELP = "→ Enter space: next   ← backspace: back   Home End   q: quit"


def buffer_view(frames: list[Frame], k: int) -> Text:
    """The buffer as it is after frame k, the newest part marked."""
    out, rows = Text(), Rows()
    for frame in frames[: k + 1]:
        newest = frame.index == k
        mark = "▶" if newest else "⚠" if frame.is_notice else "│"
        out.append_text(rows.write(frame.author, frame.added, mark, "bold underline" if newest else ""))
        if newest and frame.cut:
            out.append_text(rows.close())
            out.append_text(note(f"✂ cut, never in the buffer: {preview(frame.cut)}"))
            out.append("\n")
    out.append_text(rows.close())
    return out


def facts_view(frame: Frame) -> Text:
    out = Text()
    for label, value in (
        ("sent", frame.sent),
        ("added", f"{frame.author.value}, {len(frame.added):,} characters"),
        ("why", frame.why),
    ):
        out.append(f"{label:<6} ", style="bold")
        out.append(value + "\n")
    return out


def header(frames: list[Frame], k: int) -> Text:
    out = Text(f"Step {k} of {len(frames) - 1}", style="bold")
    out.append("    ")
    out.append_text(legend())
    return out


def frame_view(frames: list[Frame], k: int) -> Text:
    return Text("\n").join([header(frames, k), Text(), buffer_view(frames, k), facts_view(frames[k])])


def step_through(console: Console, frames: list[Frame]) -> None:
    """Full screen, one key at a time, until q. The terminal is restored however it ends."""
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    k = 0
    try:
        tty.setcbreak(fd)  # keys arrive at once and unechoed
        with console.screen(hide_cursor=True) as screen:
            while True:
                screen.update(_fit(console, frames, k))
                key = os.read(fd, 16).decode(errors="replace")
                if key in KEYS["quit"]:
                    return
                if key in KEYS["next"]:
                    k = min(k + 1, len(frames) - 1)
                elif key in KEYS["back"]:
                    k = max(k - 1, 0)
                elif key in KEYS["first"]:
                    k = 0
                elif key in KEYS["last"]:
                    k = len(frames) - 1
    except KeyboardInterrupt:
        return
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _fit(console: Console, frames: list[Frame], k: int) -> Text:
    """Header, the end of the buffer (where the newest part is), facts and keys: one screen."""
    width, height = console.size
    facts = facts_view(frames[k]).wrap(console, width)
    lines = buffer_view(frames, k).wrap(console, width)
    room = max(1, height - len(facts) - 4)
    body = Text("\n").join(lines[-room:])
    return Text("\n").join([header(frames, k), body, Text("\n").join(facts), Text(HELP, style="dim")])
