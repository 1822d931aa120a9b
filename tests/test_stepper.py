"""The terminal stepper and the cost of resubmission."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.render.frames import costs, frames
from harness.record import open_run

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
    assert "sent   completion = model(buffer): the whole buffer, 532 characters, sent fresh" in out


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
    assert [r.total_sent for r in rows] == [493, 493 + 598, 493 + 598 + 697]
    # What a prefix cache would process is only what code appended since the last call.
    assert [r.cached_new for r in rows[1:]] == [41, 41]


def test_frames_begin_with_the_developer_and_end_with_the_stop_reason():
    fs = frames(open_run("nimbus"))
    assert fs[0].author == "developer" and fs[-1].why.startswith("The loop stopped: final_answer.")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_stepper_in_a_real_terminal(tmp_path):
    session = f"harness-{time.monotonic_ns()}"
    done = tmp_path / "done"
    harness = f"{shlex.quote(sys.executable)} -m harness"  # the harness under test, whatever PATH says
    script = f"s1=$(stty -g); {harness} step nimbus; s2=$(stty -g); [ \"$s1\" = \"$s2\" ] && echo RESTORED > {done}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", str(ROOT), "bash", "--norc", "-c", script + "; sleep 5"], check=True)

    def screen() -> str:
        return subprocess.run(["tmux", "capture-pane", "-t", session, "-p"], capture_output=True, text=True).stdout

    def wait_for(text: str) -> str:
        for _ in range(100):
            if text in (shown := screen()):
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared:\n{shown}")

    try:
        wait_for("Step 0 of 5")
        subprocess.run(["tmux", "send-keys", "-t", session, "Right"], check=True)
        wait_for("Step 1 of 5")
        subprocess.run(["tmux", "send-keys", "-t", session, "Right"], check=True)
        shown = wait_for("Step 2 of 5")
        assert "code      ▶ Observation: 99.8 GB of 100 GB used" in shown
        subprocess.run(["tmux", "send-keys", "-t", session, "End"], check=True)
        wait_for("Step 5 of 5")
        subprocess.run(["tmux", "send-keys", "-t", session, "Left"], check=True)
        wait_for("Step 4 of 5")
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        for _ in range(50):
            if done.exists():
                break
            time.sleep(0.1)
        assert done.read_text().strip() == "RESTORED"  # the terminal settings are as before
        assert "Step 4 of 5" not in screen()  # the stepper's screen is gone
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
