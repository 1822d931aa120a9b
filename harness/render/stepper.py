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
q quits and gives the terminal back as it was. Keys that arrive together all count.

Each move, or a resize of the window, redraws the whole screen: home, clear, then exactly
one screen of lines (the terminal's own size, whatever COLUMNS and LINES say), none wider
than the terminal, so no row of an earlier frame is left. Text from the buffer is shown
through harness.escape.for_terminal (rows, notes, facts): it cannot move the cursor or
retitle the terminal. termios is imported only when stepping (POSIX).
"""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.control import Control
from rich.text import Text

from harness.errors import HarnessError
from harness.escape import for_terminal
from harness.render.frames import Frame
from harness.render.keys import KeyReader
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
        out.append(for_terminal(value) + "\n")
    return out


def header(frames: list[Frame], k: int) -> Text:
    out = Text(f"Step {k} of {len(frames) - 1}", style="bold")
    out.append("    ")
    out.append_text(legend())
    return out


def frame_view(frames: list[Frame], k: int) -> Text:
    return Text("\n").join([header(frames, k), Text(), buffer_view(frames, k), facts_view(frames[k])])


def step_through(console: Console, frames: list[Frame]) -> None:
    """Full screen, keys as they come, until q. The terminal is restored however it ends."""
    try:
        import termios
        import tty
    except ImportError:
        raise HarnessError("harness step", "reads keys only on a POSIX terminal; use --frame K to print one frame") from None
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    k, last, reader = 0, len(frames) - 1, KeyReader(fd)
    try:
        tty.setcbreak(fd)  # keys arrive at once and unechoed
        with console.screen(hide_cursor=True) as screen:
            drawn = None
            while True:
                size = os.get_terminal_size(sys.stdout.fileno())  # the terminal's own, not COLUMNS/LINES
                if drawn != (k, size):  # a key moved, or the window was resized
                    console.size = size
                    console.control(Control.home(), Control.clear())
                    screen.update(Text("\n").join(screen_lines(console, frames, k)))
                    drawn = (k, size)
                keys = reader.read(timeout=0.2)
                if keys is None:  # the terminal is gone
                    return
                for key in keys:  # every key of a burst counts
                    if key in KEYS["quit"]:
                        return
                    k = _moved(key, k, last)
    except KeyboardInterrupt:
        return
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _moved(key: str, k: int, last: int) -> int:
    if key in KEYS["next"]:
        return min(k + 1, last)
    if key in KEYS["back"]:
        return max(k - 1, 0)
    if key in KEYS["first"]:
        return 0
    if key in KEYS["last"]:
        return last
    return k


def screen_lines(console: Console, frames: list[Frame], k: int) -> list[Text]:
    """Exactly one screen: frame k as --frame prints it, its buffer cut to the end (where
    the newest part is), the facts to at most a third of the screen, and the keys last."""
    width, height = console.size
    buffer = buffer_view(frames, k).wrap(console, width)  # ends with the blank line before the facts
    facts = facts_view(frames[k]).wrap(console, width)[:-1]  # without the empty line after the last "\n"
    most = max(1, height // 3)
    if len(facts) > most:
        facts = [*facts[: most - 1], Text("…", style="dim")]
    room = max(0, height - 3 - len(facts))  # rows left for the buffer, besides header, blank and keys
    lines = [header(frames, k), Text(), *buffer[max(0, len(buffer) - room) :], *facts]
    lines += [Text()] * (height - 1 - len(lines)) + [Text(HELP, style="dim")]
    for line in lines:
        line.truncate(width)
    return lines[:height]
