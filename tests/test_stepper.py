"""The terminal stepper and the cost of resubmission."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessError
from harness.render.frames import cost_table, costs, frames
from harness.record import open_run
from harness.render.keys import KeyReader, split_keys
from harness.render.stepper import HELP, screen_lines, step_through

runner = CliRunner()
ROOT = Path(__file__).parent.parent


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "120", "NO_COLOR": "1"})


@pytest.mark.parametrize(("name", "frame"), [("nimbus", 0), ("nimbus", 1), ("nimbus", 5), ("paper-river", 3), ("governed-research", 4)])
def test_frame_output_matches_its_snapshot(name, frame, text_snapshot):
    result = invoke("step", name, "--frame", str(frame))
    assert result.exit_code == 0, result.output
    assert result.stdout == text_snapshot


def test_a_frame_names_its_step_marks_the_newest_part_and_shows_the_cut():
    out = invoke("step", "nimbus", "--frame", "1").stdout
    assert out.startswith("Step 1 of 5")
    assert "model     ▶ Action: check_quota(nimbus)" in out
    assert "✂ cut, never in the buffer: Observation: quota was fine" in out
    assert "sent   completion = model(buffer): the whole buffer, 599 characters, sent fresh" in out


def test_a_saved_transcript_steps_like_the_scenario(tmp_path):
    saved = tmp_path / "t.txt"
    invoke("run", "nimbus", "--save", str(saved))
    assert invoke("step", str(saved), "--frame", "3").stdout == invoke("step", "nimbus", "--frame", "3").stdout


def test_step_refuses_a_frame_out_of_range_and_a_missing_terminal():
    result = invoke("step", "nimbus", "--frame", "6")
    assert result.exit_code == 2 and "frames 0 to 5" in result.stderr
    result = invoke("step", "nimbus")
    assert result.exit_code == 2 and "use --frame K" in result.stderr


def test_the_cost_table_matches_its_snapshot(text_snapshot):
    result = invoke("run", "nimbus", "--cost")
    assert result.exit_code == 0
    assert result.stdout.split("\n\nThe model is sent")[1] == text_snapshot


def test_characters_sent_grow_quadratically_while_new_text_grows_linearly():
    rows = costs(open_run("step-limit").transcript)
    assert [r.total_sent for r in rows] == [524, 524 + 629, 524 + 629 + 728]
    # What a prefix cache would process is only what code appended since the last call.
    assert [r.cached_new for r in rows[1:]] == [41, 41]


def test_frames_begin_with_the_developer_and_end_with_the_stop_reason():
    fs = frames(open_run("nimbus"))
    assert fs[0].author == "developer" and fs[-1].why.startswith("The loop stopped: final_answer.")


def test_a_screen_is_the_frame_fitted_to_the_window():
    fs = frames(open_run("nimbus"))
    for k in range(len(fs)):
        lines = [line.plain.rstrip() for line in screen_lines(Console(width=120, height=40), fs, k)]
        frame = invoke("step", "nimbus", "--frame", str(k)).stdout
        assert len(lines) == 40 and lines[-1] == HELP and max(map(len, lines)) <= 120
        assert lines[0] == frame.split("\n")[0].rstrip()
        assert "\n".join(lines[:-1]).split() == frame.split()  # the whole frame, folded to the width
    # A small window: the end of the buffer (the newest part), the facts and the keys still show.
    plain = [line.plain for line in screen_lines(Console(width=60, height=16), fs, 3)]
    assert len(plain) == 16 and max(map(len, plain)) <= 60
    assert plain[0].startswith("Step 3 of 5") and plain[-1] == HELP[:60]
    assert any(line.startswith("model     ▶ ") for line in plain) and any(line.startswith("why ") for line in plain)
    # A final answer of 300 lines (shown in the facts) takes at most a third of the screen.
    record = open_run("nimbus")
    long = frames(record.but(final_answer="many\n" * 300))
    plain = [line.plain for line in screen_lines(Console(width=120, height=40), long, 5)]
    assert len(plain) == 40 and "…" in plain and any(line.startswith("model     ▶ Final Answer") for line in plain)


def test_a_burst_of_keys_is_split_into_keys():
    assert split_keys("\x1b[C\x1b[C\x1b[C") == ["\x1b[C"] * 3
    assert split_keys("\x1bOC\x1b[1~ \r\x7fqé\x1b") == ["\x1bOC", "\x1b[1~", " ", "\r", "\x7f", "q", "é", "\x1b"]
    assert split_keys("\x1b[1;5C\x1b\x1b[D") == ["\x1b[1;5C", "\x1b", "\x1b[D"]


def test_the_key_reader_returns_a_whole_burst_a_lone_escape_and_the_end_of_input():
    read, write = os.pipe()
    reader = KeyReader(read)
    os.write(write, "\x1b[C\x1b[C →".encode())
    assert reader.read() == ["\x1b[C", "\x1b[C", " ", "→"]
    os.write(write, b"\x1b")
    os.close(write)
    assert reader.read() == ["\x1b"]  # ESC with nothing after it is a key (quit), not half of one
    assert reader.read() is None
    os.close(read)


def test_harness_starts_and_prints_frames_where_termios_does_not_exist(monkeypatch):
    code = "import sys; sys.modules['termios'] = sys.modules['tty'] = None; from harness.cli import main; main()"
    result = subprocess.run([sys.executable, "-c", code, "step", "nimbus", "--frame", "1"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.startswith("Step 1 of 5"), result.stderr
    monkeypatch.setitem(sys.modules, "termios", None)
    with pytest.raises(HarnessError, match="use --frame K"):
        step_through(Console(), frames(open_run("nimbus")))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_stepper_in_a_real_terminal(tmp_path):
    """Each step replaces the whole screen (compared line by line), also after a resize and
    under a stale size a shell exported; keys sent in one burst all count, whether tmux
    sends them as keys or as raw escape sequences."""
    session = f"harness-{time.monotonic_ns()}"
    done = tmp_path / "done"
    harness = f"{shlex.quote(sys.executable)} -m harness"  # the harness under test, whatever PATH says
    script = f"export LINES=24 COLUMNS=80; s1=$(stty -g); {harness} step nimbus; s2=$(stty -g); [ \"$s1\" = \"$s2\" ] && echo RESTORED > {done}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", str(ROOT), "bash", "--norc", "-c", script + "; sleep 5"], check=True)
    fs = frames(open_run("nimbus"))

    def screen() -> list[str]:
        shown = subprocess.run(["tmux", "capture-pane", "-t", session, "-p"], capture_output=True, text=True).stdout
        return [line.rstrip() for line in shown.split("\n")[:-1]]

    def expect(k: int, width: int = 120, height: int = 40) -> None:
        want = [line.plain.rstrip() for line in screen_lines(Console(width=width, height=height), fs, k)]
        for _ in range(100):
            if (shown := screen()) == want:
                return
            time.sleep(0.1)
        assert shown == want, f"the screen is not step {k} alone"

    def keys(*args: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", session, *args], check=True)

    try:
        expect(0)
        keys("Right", "Right", "Right")  # three keys in one write
        expect(3)
        keys("-H", "1b", "5b", "43", "1b", "5b", "43")  # two raw CSI sequences in one write
        expect(5)
        keys("Left", "Left", "BSpace")
        expect(2)
        assert "code      ▶ Observation: 99.8 GB of 100 GB used" in screen()
        keys("Home")
        expect(0)
        keys("End", "Left")
        expect(4)
        subprocess.run(["tmux", "resize-window", "-t", session, "-x", "100", "-y", "30"], check=True)
        expect(4, 100, 30)
        keys("q")
        for _ in range(50):
            if done.exists():
                break
            time.sleep(0.1)
        assert done.read_text().strip() == "RESTORED"  # the terminal settings are as before
        assert not any(line.startswith("Step ") for line in screen())  # the stepper's screen is gone
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_markdown_notes_match_their_snapshot(tmp_path, text_snapshot):
    out = tmp_path / "nimbus.md"
    result = invoke("export", "nimbus", "--markdown", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == text_snapshot


def test_export_needs_a_destination():
    result = invoke("export", "nimbus")
    assert result.exit_code == 2 and "--html FILE and/or --markdown FILE" in result.stderr


def test_the_cost_table_adds_the_models_own_token_counts_when_it_gave_them():
    rows = costs(open_run("step-limit").transcript)
    plain = cost_table(rows, [None, None, None])
    assert "tokens evaluated" not in plain  # a script counts nothing: no made-up figures
    counted = cost_table(rows, [{"prompt_tokens": 120, "evaluated_tokens": 30}, None, None]).splitlines()
    assert counted[0].endswith("tokens sent  tokens evaluated")
    assert counted[1].split()[-2:] == ["120", "30"] and counted[2].split()[-2:] == ["?", "?"]
