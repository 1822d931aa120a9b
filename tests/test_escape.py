"""Hostile text at the terminal: control characters are shown, never obeyed.

Unit tests of harness.escape.for_terminal, and the real thing: `harness show` and
`harness step` of a saved transcript whose model text sets the terminal title (OSC) and
draws a forged `code` row (CSI), run in tmux.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from harness.escape import for_terminal
from harness.render.live import Rows, note, preview
from harness.transcript import Author

ROOT = Path(__file__).parent.parent
C0 = [chr(c) for c in range(0x20) if chr(c) not in "\n\t"]
C1 = [chr(c) for c in range(0x80, 0xA0)]
BIDI = [chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
FORGED = "code      │ Result: 42 (verified by code)"


def controls(text: str) -> list[str]:
    """Characters a terminal would obey rather than show (newline and tab aside)."""
    return [c for c in text if c not in "\n\t" and (unicodedata.category(c) == "Cc" or c in BIDI)]


def test_every_control_character_is_shown_as_a_visible_stand_in():
    assert for_terminal("\x1b]0;PWNED\x07") == "␛]0;PWNED␇"
    assert for_terminal("a\rb\x00\x7f") == "a␍b␀␡"
    assert for_terminal("\x9b2J") == "\\x9b2J"  # a one-byte CSI
    assert for_terminal("abc\u202edcba") == "abc\\u202edcba"  # right-to-left override
    shown = for_terminal("".join(C0 + ["\x7f"] + C1 + BIDI))
    assert controls(shown) == [] and len(shown) > len(C0) + 1 + len(C1) + len(BIDI)


def test_a_lone_surrogate_from_a_file_name_that_is_not_utf8_is_shown_as_its_byte():
    assert for_terminal("bn/x\udcffy.toml") == "bn/x\\xffy.toml"  # how Python holds the byte 0xff of a name
    assert for_terminal("a\ud800b") == "a\\ud800b"
    assert for_terminal(for_terminal("x\udcff")) == "x\\xff"
    for_terminal("é\udcff").encode("utf-8")  # every output can hold it


def test_newlines_tabs_and_ordinary_text_pass_unchanged_and_escaping_twice_changes_nothing():
    text = "Thought: ünïcode → 日本語 ✂ ␛ \\x1b\tcolumn\nnext line\n"
    assert for_terminal(text) == text
    hostile = "".join(C0 + C1 + BIDI)
    assert for_terminal(for_terminal(hostile)) == for_terminal(hostile)


def test_a_megabyte_line_of_escapes_is_escaped_in_one_pass():
    line = "\x1b[2K\r" * 250_000  # 1 MB on one line; linear time, so this simply completes
    assert for_terminal(line) == "␛[2K␍" * 250_000


def test_rows_notes_and_previews_show_control_characters():
    rows = Rows()
    row = rows.write(Author.MODEL, "Thought: \x1b]0;PWNED\x07\n\x1b[2K\r" + FORGED + "\n").plain
    assert controls(row) == [] and "␛]0;PWNED␇" in row
    assert [line for line in row.split("\n") if line.startswith("code")] == []  # every row is the model's
    assert controls(note("✂ \x1b[31m\u202e").plain) == []
    assert controls(preview("Observation: \x1b]0;x\x07\r\x9b")) == []


HOSTILE = (
    "# harness transcript v1\n"
    '# stop_reason: "final_answer"\n'
    '# calls: [{"ran": ["calc"], "notices": [], "hidden": [[77, 126, "action"]]}, {"ran": [], "notices": []}]\n'
    "developer | Question: what is it?\n"
    "model     | Thought: \x1b]0;PWNED\x07let me see\n"
    f"model     | \x1b[2K\r{FORGED}\n"
    f"model     | \x1b[2K\x1b[G{FORGED}\n"
    "model     | Action: calc(1)\n"
    "code      | Observation: 1\n"
    "model     | Final Answer: 2\n"
)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("command", ["show", "step"])
def test_hostile_model_text_neither_retitles_the_terminal_nor_forges_a_row(tmp_path, command):
    saved = tmp_path / "hostile.txt"
    saved.write_text(HOSTILE, encoding="utf-8")
    session = f"harness-escape-{time.monotonic_ns()}"
    run = f"{shlex.quote(sys.executable)} -m harness {command} {shlex.quote(str(saved))}; sleep 30"
    tmux = ["tmux", "-L", session]  # a server of its own: parallel tests never share one
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", str(ROOT), "bash", "--norc", "-c", run], check=True)

    def wait_for(text: str) -> str:
        for _ in range(100):
            shown = subprocess.run([*tmux, "capture-pane", "-t", session, "-p"], capture_output=True, text=True).stdout
            if text in shown:
                break
            time.sleep(0.1)
        return shown

    try:
        if command == "step":
            wait_for("Frame 0 of")
            subprocess.run([*tmux, "send-keys", "-t", session, "End"], check=True)
        shown = wait_for("Final Answer: 2")
        title = subprocess.run([*tmux, "display", "-p", "-t", session, "#{pane_title}"], capture_output=True, text=True).stdout
        assert "PWNED" not in title
        assert "model     │ Thought: ␛]0;PWNED␇let me see" in shown  # the escape, visible
        assert f"␛[2K␍{FORGED}" in shown and f"model     ✗ ␛[2K␛[G{FORGED}" in shown  # a hidden row too
        assert not [line for line in shown.split("\n") if line.startswith("code      │ Result")]
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


CONTROLS = "".join(chr(c) for c in [*range(0, 9), *range(11, 32), 0x7F, *range(0x80, 0xA0), 0x202E])


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_every_frame_of_a_saved_file_printed_to_a_pipe_shows_control_characters_and_obeys_none(tmp_path, endpoint):
    """`harness step FILE --frame K` (and --messages) on a pipe: every control character of
    the file's text, its title, question, notices and final answer is drawn, not written."""
    held = json.dumps(CONTROLS)[1:-1]
    (tmp_path / "f.toml").write_text(
        f'title = "t {held}"\nquestion = "Q {held}"\nendpoint = "{endpoint}"\n'
        f'completions = ["Thought: {held}\\nAction: calculator(1+1)\\nObservation: {held}\\n", "Action: nope{held}(1)\\n", "Final Answer: {held}\\n"]\n'
        "[tools.calculator]\n",
        encoding="utf-8",
    )
    harness = [sys.executable, "-m", "harness"]
    saved = subprocess.run([*harness, "run", "f.toml", "--save", "f.txt", "-f", "tagged"], cwd=tmp_path, capture_output=True)
    assert saved.returncode == 0 and "\x1b" in (tmp_path / "f.txt").read_text(encoding="utf-8")
    views = [[]] + ([["--messages"]] if endpoint == "chat" else [])
    for k in range(6):
        for extra in views:
            out = subprocess.run([*harness, "step", "f.txt", "--frame", str(k), *extra], cwd=tmp_path, capture_output=True)
            assert out.returncode == 0, out.stderr
            text = out.stdout.decode("utf-8")
            assert controls(text.replace("\n", "")) == [], (k, extra)
            assert "\x1b" not in text and ("␛" in text or extra)  # (step 0 sent no messages)
