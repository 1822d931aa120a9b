"""The terminal stepper and the cost of resubmission."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessError
from harness.render.frames import cost_table, costs, frames
from harness.record import open_run
from harness.render.keys import KeyReader, split_keys
from harness.render.stepper import HELP, Screen, keys_line, step_through

runner = CliRunner()
ROOT = Path(__file__).parent.parent


def screen_lines(console: Console, frames, k: int, sent=None, stop_off: bool = False):
    """The screen of frame k as a fresh stepper draws it."""
    screen = Screen(frames, console, sent, stop_off)
    screen.k = k
    return screen.lines()


def invoke(*args: str):
    return invoke_at(120, *args)


def invoke_at(width: int, *args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1"})


@pytest.mark.parametrize(("name", "frame"), [("nimbus", 0), ("nimbus", 1), ("nimbus", 5), ("paper-river", 3), ("governed-research", 4)])
def test_frame_output_matches_its_snapshot(name, frame, text_snapshot):
    result = invoke("step", name, "--frame", str(frame))
    assert result.exit_code == 0, result.output
    assert result.stdout == text_snapshot


def test_a_frame_names_its_step_marks_the_newest_part_and_shows_the_cut():
    out = invoke("step", "nimbus", "--frame", "1").stdout
    assert out.startswith("Frame 1 of 5")
    assert "model     ▶ Action: check_quota(nimbus)" in out
    assert "✂ cut by the stop sequence, never in the buffer: Observation: quota was fine" in out
    assert "sent   completion = model(buffer): the whole buffer, 599 characters, sent fresh" in out


def test_a_saved_transcript_steps_like_the_scenario(tmp_path):
    saved = tmp_path / "t.txt"
    invoke("run", "nimbus", "--save", str(saved))
    assert invoke("step", str(saved), "--frame", "3").stdout == invoke("step", "nimbus", "--frame", "3").stdout


def test_a_transcript_of_no_text_is_one_line_saying_so_never_frames_0_to_minus_1(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# harness transcript v1\n", encoding="utf-8")
    for args in (["--frame", "0"], []):
        result = invoke("step", str(empty), *args)
        assert (result.exit_code, result.stderr) == (2, f"error: {empty}: this run has nothing to step through: its transcript holds no text\n")


def test_a_txt_that_is_not_a_transcript_is_refused_as_a_transcript_never_read_as_toml(tmp_path):
    wrong = tmp_path / "notes.txt"
    wrong.write_text("hello\nworld = [\n", encoding="utf-8")
    for args in (["step", str(wrong), "--frame", "0"], ["export", str(wrong), "--html", str(tmp_path / "p.html")]):
        result = invoke(*args)
        assert (result.exit_code, result.stderr) == (2, f"error: {wrong}:1: expected the header line '# harness transcript v1'\n")


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


AUTHORED = re.compile(r"(developer|model    |code     )[ ↪▶][│▶⚠✗]( |$)")  # a buffer row: its author, its mark
NOTE = re.compile(r" {12}[✂✗]| {9}↪ {4}\S")  # a note about the buffer, or its continuation (marked ↪)


def buffer_rows(screen: list[str]) -> list[str]:
    """The rows between the heads (and the "above" line) and the blank line before the facts."""
    start = next(i for i, line in enumerate(screen) if line == "" or line.startswith("↑ "))  # the heads end
    body = screen[start + 1 : screen.index("", start + 1)]
    return [line for line in body if not line.startswith(("↑ ", "↓ ")) and line]


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("name", ["nimbus", "governed-research", "paper-river", "calc-fix"])
def test_every_physical_line_of_the_buffer_names_its_author(name, width):
    fs = frames(open_run(name))
    for k in range(len(fs)):
        out = invoke_at(width, "step", name, "--frame", str(k)).stdout.split("\n")
        assert max(map(len, out)) <= width
        rows = buffer_rows(out)
        assert rows and all(AUTHORED.match(line) or NOTE.match(line) for line in rows), (k, rows)
        # Wrapped, not lost: the rows hold every character of the buffer up to this step.
        text = "".join(line[12:] for line in rows if AUTHORED.match(line)).replace(" ⤸", "")
        assert "".join(text.split()) == "".join("".join(f.added for f in fs[: k + 1]).split())


def test_a_cut_note_that_wraps_keeps_its_indent():
    out = invoke_at(80, "step", "nimbus", "--frame", "1").stdout.split("\n")
    at = next(i for i, line in enumerate(out) if "✂ cut by" in line)
    assert out[at].startswith(" " * 12 + "✂ cut by the stop sequence, never in the buffer: ")
    assert out[at + 1].startswith(" " * 9 + "↪    quota was fine")


def test_a_screen_is_the_frame_fitted_to_the_window():
    fs = frames(open_run("nimbus"))
    for k in range(len(fs)):
        lines = [line.plain.rstrip() for line in screen_lines(Console(width=120, height=40), fs, k)]
        frame = invoke("step", "nimbus", "--frame", str(k)).stdout
        assert len(lines) == 40 and lines[-1] == HELP and max(map(len, lines)) <= 120
        assert lines[0] == frame.split("\n")[0].rstrip()
        assert "\n".join(lines[:-1]).split() == frame.split()  # the whole frame: it fits
    # A small window: the end of the buffer (the newest part), the facts and the keys still show.
    plain = [line.plain for line in screen_lines(Console(width=60, height=16), fs, 3)]
    assert len(plain) == 16 and max(map(len, plain)) <= 60
    assert plain[0].startswith("Frame 3 of 5") and plain[-1] == keys_line(60) and plain[-1].startswith("q: quit")
    assert any(line.startswith("↑ ") and line.endswith("lines above (PgUp ↑)") for line in plain[2:6])  # under the wrapped heads
    assert any(line.startswith("model     ▶ ") for line in plain) and any(line.startswith("why ") for line in plain)
    # A final answer of 300 lines (shown in the facts) takes at most a third of the screen.
    record = open_run("nimbus")
    long = frames(replace(record, final_answer="many\n" * 300))
    plain = [line.plain for line in screen_lines(Console(width=120, height=40), long, 5)]
    assert len(plain) == 40 and "…" in plain and any(line.startswith("model     ▶ Final Answer") for line in plain)


def test_the_view_scrolls_to_the_top_and_back_to_the_newest_part():
    fs = frames(open_run("nimbus"))
    screen = Screen(fs, Console(width=80, height=24))
    screen.press("\x1b[F", 24)  # End
    first = [line.plain for line in screen.lines()]
    above = int(first[2].split()[1])
    assert first[2] == f"↑ {above} lines above (PgUp ↑)" and above > 10
    assert any(line.startswith("model     ▶ Final Answer") for line in first)
    for _ in range(10):
        screen.press("\x1b[5~", 24)  # PgUp, more often than needed: it stops at the top
    top = [line.plain for line in screen.lines()]
    assert top[2] == "" and top[3] == "developer │ Answer the question below. You can use these tools:"
    assert top[buffer_end(top)].startswith("↓ ") and "lines below" in top[buffer_end(top)]
    screen.press("\x1b[B", 24)  # ↓: one line
    assert [line.plain for line in screen.lines()][2] == "↑ 1 lines above (PgUp ↑)"
    screen.press("\x1b[A", 24)  # ↑
    assert [line.plain for line in screen.lines()][3] == top[3]
    for _ in range(10):
        screen.press("\x1b[6~", 24)  # PgDn: back to the end
    assert [line.plain for line in screen.lines()] == first
    screen.press("\x1b[5~", 24)
    screen.press("\x1b[D", 24)  # a step follows the newest part again
    assert [line.plain for line in screen.lines()] == [line.plain for line in screen_lines(Console(width=80, height=24), fs, 4)]


def buffer_end(screen: list[str]) -> int:
    return screen.index("", 3) - 1


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
    code = "import sys; sys.modules['termios'] = sys.modules['tty'] = None; from harness.__main__ import main; main()"
    result = subprocess.run([sys.executable, "-c", code, "step", "nimbus", "--frame", "1"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.startswith("Frame 1 of 5"), result.stderr
    monkeypatch.setitem(sys.modules, "termios", None)
    with pytest.raises(HarnessError, match="use --frame K"):
        step_through(Console(), frames(open_run("nimbus")))


@pytest.fixture
def tmux():
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("the terminal test must run in CI: tmux is not installed")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    sessions = []

    def start(width: int, height: int, script: str) -> Tmux:
        session = Tmux(f"harness-{os.getpid()}-{time.monotonic_ns()}")
        sessions.append(session)
        command = ["bash", "--norc", "-c", script + "; sleep 5"]
        session.run("new-session", "-d", "-s", session.name, "-x", str(width), "-y", str(height), "-c", str(ROOT), *command)
        return session

    yield start
    for session in sessions:
        subprocess.run(["tmux", "-L", session.name, "kill-server"], capture_output=True)


class Tmux:
    """One tmux server of its own (a socket per test), so parallel tests never share one."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.name, *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> list[str]:
        shown = self.run("capture-pane", "-t", self.name, "-p")
        return [line.rstrip() for line in shown.split("\n")[:-1]]

    def keys(self, *args: str) -> None:
        self.run("send-keys", "-t", self.name, *args)

    def resize(self, width: int, height: int) -> None:
        self.run("resize-window", "-t", self.name, "-x", str(width), "-y", str(height))

    def expect(self, want: list[str], what: str) -> list[str]:
        """Wait for the whole screen to be `want`, line by line."""
        for _ in range(100):
            if (shown := self.screen()) == want:
                return shown
            time.sleep(0.1)
        assert shown == want, f"the screen is not {what}"


HARNESS = f"{shlex.quote(sys.executable)} -m harness"  # the harness under test, whatever PATH says


def drawn(screen: Screen) -> list[str]:
    return [line.plain.rstrip() for line in screen.lines()]


def test_ctrl_c_ends_the_stepper_as_interrupted_with_the_terminal_as_it_was(tmp_path, tmux):
    done, err = tmp_path / "done", tmp_path / "err"
    term = tmux(100, 30, f"s1=$(stty -g); {HARNESS} step nimbus 2> {err}; echo $? > {done}; [ \"$s1\" = \"$(stty -g)\" ] && echo RESTORED >> {done}")
    for _ in range(100):
        if any("Frame" in line or "frame" in line for line in term.screen()):
            break
        time.sleep(0.1)
    term.keys("C-c")
    for _ in range(100):
        if done.exists() and "RESTORED" in done.read_text():
            break
        time.sleep(0.1)
    assert (done.read_text().split(), err.read_text()) == (["130", "RESTORED"], "interrupted\n")


def test_the_stepper_in_a_real_terminal(tmp_path, tmux):
    """Each step replaces the whole screen (compared line by line), also after a resize and
    under a stale size a shell exported; keys sent in one burst all count, whether tmux
    sends them as keys or as raw escape sequences."""
    done = tmp_path / "done"
    script = f"export LINES=24 COLUMNS=80; s1=$(stty -g); {HARNESS} step nimbus; s2=$(stty -g); [ \"$s1\" = \"$s2\" ] && echo RESTORED > {done}"
    term = tmux(120, 40, script)
    fs = frames(open_run("nimbus"))

    def expect(k: int, width: int = 120, height: int = 40) -> None:
        want = [line.plain.rstrip() for line in screen_lines(Console(width=width, height=height), fs, k)]
        term.expect(want, f"step {k} alone")

    expect(0)
    term.keys("Right", "Right", "Right")  # three keys in one write
    expect(3)
    term.keys("-H", "1b", "5b", "43", "1b", "5b", "43")  # two raw CSI sequences in one write
    expect(5)
    term.keys("Left", "Left", "BSpace")
    expect(2)
    assert "code      ▶ Observation: 99.8 GB of 100 GB used" in term.screen()
    term.keys("Home")
    expect(0)
    term.keys("End", "Left")
    expect(4)
    term.resize(100, 30)
    expect(4, 100, 30)
    term.keys("q")
    for _ in range(50):
        if done.exists():
            break
        time.sleep(0.1)
    assert done.read_text().strip() == "RESTORED"  # the terminal settings are as before
    assert not any(line.startswith("Frame ") for line in term.screen())  # the stepper's screen is gone


@pytest.mark.parametrize(("width", "height"), [(80, 24), (120, 40)])
def test_a_small_terminal_wraps_every_row_with_its_author_and_scrolls(tmux, width, height):
    """At 80×24 nimbus is taller than the screen and many of its rows are wider: every row
    of the captured screen names its author, the top says how many lines are above, PgUp
    and ↑ reach the prompt's first line, PgDn and ↓ come back, and a resize mid-step
    redraws the step at the new size."""
    term = tmux(width, height, f"{HARNESS} step nimbus")
    fs = frames(open_run("nimbus"))
    model = Screen(fs, Console(width=width, height=height))

    def press(*keys: str, tmux_keys: tuple[str, ...]) -> list[str]:
        for key in keys:
            model.press(key, height)
        term.keys(*tmux_keys)
        return term.expect(drawn(model), f"{tmux_keys} at {width}×{height}")

    shown = term.expect(drawn(model), "step 0")
    assert shown[0].startswith("Frame 0 of 5") and shown[-1] == keys_line(width) and "q: quit" in shown[-1]
    shown = press("\x1b[C", tmux_keys=("Right",))
    rows = buffer_rows(shown)
    assert all(AUTHORED.match(line) or NOTE.match(line) for line in rows), rows  # no row without its author
    assert "model     ▶ Action: check_quota(nimbus)" in rows
    assert any(line.startswith(" " * 12 + "✂ cut by the stop sequence, never in the buffer: Observation:") for line in rows)
    if width == 80:
        assert any(line.startswith("developer↪│ ") for line in rows)  # a wrapped row keeps its author
        assert shown[2].startswith("↑ ") and shown[2].endswith(" lines above (PgUp ↑)")
    shown = press("\x1b[F", tmux_keys=("End",))
    assert any(line.startswith("model     ▶ Final Answer: Your Nimbus account is full (99.8 GB") for line in shown)
    if width == 80:
        above = int(shown[2].split()[1])
        shown = press(*["\x1b[5~"] * 6, tmux_keys=("PageUp",) * 6)  # PgUp to the top
        assert shown[2] == "" and shown[3] == "developer │ Answer the question below. You can use these tools:"
        assert any(line.startswith("↓ ") and "lines below" in line for line in shown)
        shown = press("\x1b[B", "\x1b[B", tmux_keys=("Down", "Down"))
        assert shown[2] == "↑ 2 lines above (PgUp ↑)"
        shown = press("\x1b[A", tmux_keys=("Up",))
        assert shown[2] == "↑ 1 lines above (PgUp ↑)"
        shown = press(*["\x1b[6~"] * 6, tmux_keys=("PageDown",) * 6)  # and back to the newest part
        assert shown[2] == f"↑ {above} lines above (PgUp ↑)"
    # A resize mid-step: the rows wrap again at the new width, every one with its author.
    other = (120, 40) if width == 80 else (80, 24)
    term.resize(*other)
    model = Screen(fs, Console(width=other[0], height=other[1]))
    model.k = 5
    shown = term.expect(drawn(model), f"step 5 at {other}")
    assert all(AUTHORED.match(line) or NOTE.match(line) for line in buffer_rows(shown))
    term.keys("q")


def test_governed_research_at_80x24_marks_every_row_and_shows_the_newest_part(tmux):
    """Stepping governed-research in a real 80×24 terminal: every row of the buffer on
    screen names its author or is a note whose wrapped rows are marked ↪ (a lane's note,
    `its gate denied this action`, wraps at 80); at step 0 the end of the prompt, the
    question the model is given, is on screen, and each step's newest rows are too."""
    term = tmux(80, 24, f"{HARNESS} step governed-research")
    fs = frames(open_run("governed-research"))
    model = Screen(fs, Console(width=80, height=24))
    shown = term.expect(drawn(model), "step 0")
    assert shown[2].startswith("↑ ") and "developer ▶ Question: Summarise what changed in release 4.2 for the team" in shown
    for k in range(1, len(fs)):
        model.press("\x1b[C", 24)
        term.keys("Right")
        shown = term.expect(drawn(model), f"step {k}")
        rows = buffer_rows(shown)
        assert all(AUTHORED.match(line) or NOTE.match(line) for line in rows), (k, rows)
        assert any(AUTHORED.match(line) and line[10] in "▶✗⚠" and line[9] == " " for line in rows), (k, rows)  # its newest part
        if k in (1, 3):  # a lane's note wraps: its second row is marked
            assert any(line.startswith(" " * 9 + "↪    ") for line in rows), (k, rows)
    term.keys("q")


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
    sent_only = cost_table(rows, [{"prompt_tokens": 120}, {"prompt_tokens": 150}, None]).splitlines()  # llama.cpp's server
    assert sent_only[0].endswith("≈ tokens sent*  tokens sent") and sent_only[-1] == "tokens sent: the model's own count"
    assert sent_only[2].split()[-1] == "150" and "evaluated" not in "\n".join(sent_only)


def test_step_and_export_take_no_stop_and_model_like_run(tmp_path):
    """The other half of the lesson without a saved run: nothing cuts the invented observation."""
    out = invoke("step", "nimbus", "--no-stop", "--frame", "1")
    assert out.exit_code == 0, out.output
    assert "model     ▶ Observation: quota was fine, must be a network issue" in out.stdout
    assert "✂" not in out.stdout.split("\n", 2)[2]  # nothing was cut (the legend line aside)
    assert out.stdout.startswith("Frame 1 of 1")  # the run ended on the wrong answer
    assert invoke("step", "nimbus", "--model", "scripted", "--frame", "2").stdout == invoke("step", "nimbus", "--frame", "2").stdout
    page = tmp_path / "p.html"
    assert invoke("export", "nimbus", "--no-stop", "--html", str(page)).exit_code == 0
    assert "quota was fine, must be a network issue" in page.read_text(encoding="utf-8")
    saved = tmp_path / "t.txt"
    invoke("run", "nimbus", "--save", str(saved))
    refused = invoke("step", str(saved), "--no-stop", "--frame", "0")
    assert refused.exit_code == 2 and "--no-stop: goes with a scenario" in refused.stderr


GOVERNED_DENIED = "model     ✗ Action: post_summary(4.2 summary)"
GOVERNED_WITHHELD = "model     ✗ Final Answer: Posted: 4.2 adds resumable uploads and a faster quota API."
IN_BUFFER = " " * 12 + "✗ in the buffer, not shown to the user: "


def test_denied_and_withheld_text_is_model_text_marked_not_shown_in_the_run_view(tmp_path):
    """One fact, one look: a denied lane is in the buffer (a model row), not shown to the
    user (✗); the stop sequence's cut never was in the buffer (✂, a note)."""
    saved = tmp_path / "g.txt"
    ran = invoke("run", "governed-research", "--save", str(saved)).stdout
    shown = invoke("show", str(saved)).stdout
    for out in (ran, shown):
        lines = out.splitlines()
        assert lines[1] == "✗ in the buffer, not shown to the user  ✂ never in the buffer"  # the legend
        at = lines.index(GOVERNED_DENIED)
        assert lines[at + 1] == IN_BUFFER + "its gate denied this action"
        at = lines.index(GOVERNED_WITHHELD)
        assert lines[at + 1] == IN_BUFFER + "the final answer was withheld"
    assert "✂ cut by the stop sequence, never in the buffer: Observation:" in invoke("run", "nimbus").stdout


def test_the_stepper_marks_denied_and_withheld_text_and_puts_the_notice_mark_on_the_notice():
    one = invoke("step", "governed-research", "--frame", "1").stdout.splitlines()
    assert "model     ▶ Action: search_notes(4.2)" in one
    at = one.index(GOVERNED_DENIED.replace("model     ✗", "model    ▶✗"))  # new, and not shown to the user
    assert one[at + 1] == IN_BUFFER + "its gate denied this action"
    three = invoke("step", "governed-research", "--frame", "3").stdout.splitlines()
    assert GOVERNED_DENIED in three  # an older part keeps its mark
    at = three.index(GOVERNED_WITHHELD.replace("model     ✗", "model    ▶✗"))
    assert three[at + 1] == IN_BUFFER + "the final answer was withheld"
    assert "code      │ Observation 1: 4.2: uploads can resume after a dropped connection; the quota API answers 3x faster." in three
    assert [line[:12] for line in three if "Notice:" in line] == ["code      ⚠ "]
    assert three[1] == "▶ new  ⚠ notice  ✗ in the buffer, not shown to the user  ✂ never in the buffer"


def test_what_the_user_was_not_shown_is_saved_and_checked_when_loaded(tmp_path):
    saved = tmp_path / "g.txt"
    invoke("run", "governed-research", "--save", str(saved))
    text = saved.read_text(encoding="utf-8")
    assert '"hidden": [[89, 123, "action"]]' in text and '"hidden": [[119, 192, "answer"]]' in text
    for bad in ('[[89, 999, "action"]]', '[[89, 123, "shown"]]', '[[89, 123]]', '"x"', '[[100, 90, "action"]]'):
        broken = tmp_path / "broken.txt"
        broken.write_text(text.replace('[[89, 123, "action"]]', bad), encoding="utf-8")
        result = invoke("show", str(broken))
        assert result.exit_code == 2 and "metadata calls" in result.stderr and "hidden" in result.stderr, (bad, result.stderr)


def test_markdown_notes_mark_what_the_user_was_not_shown_and_say_when_the_stop_was_off(tmp_path):
    out = tmp_path / "g.md"
    assert invoke("export", "governed-research", "--markdown", str(out)).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert "✗ marks text that is in the buffer but was not shown to the user" in text  # the legend
    assert "\n> ✗ in the buffer, not shown to the user: its gate denied this action: Action: post\\_summary(4.2 summary)\n" in text.replace("_", "\\_")
    assert "\n> ✗ in the buffer, not shown to the user: the final answer was withheld: Final Answer: Posted" in text
    out = tmp_path / "n.md"
    assert invoke("export", "nimbus", "--no-stop", "--markdown", str(out)).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# harness · Nimbus uploads — run with no stop sequence (--no-stop): nothing cut what the model wrote\n")
    assert "> **The stop sequence was off for this run (--no-stop)" in text and "✂ cut by" not in text


def test_a_shipped_scenario_is_long_enough_for_the_cost_to_show_its_curve():
    rows = costs(open_run("savings").transcript)
    assert len(rows) >= 10
    sent = [r.total_sent for r in rows]
    steps = [b - a for a, b in zip(sent, sent[1:])]
    assert all(b > a for a, b in zip(steps, steps[1:]))  # each call sends more than the one before: a curve
    new = [r.cached_new for r in rows[1:]]
    assert max(new) < 40  # while a prefix cache would only process what code appended
    out = invoke("run", "savings", "--cost").stdout
    assert out.count("\n  12  ") == 1 and "an estimate: characters ÷ 4" in out


def test_the_page_s_cost_table_shows_the_model_s_own_token_counts_when_the_run_recorded_them(tmp_path):
    saved = tmp_path / "counted.txt"
    invoke("run", "nimbus", "--save", str(saved))
    text = saved.read_text(encoding="utf-8")
    counted = '{"ran": ["check_quota"], "notices": [], "cut_by": "stop", "tokens": {"prompt_tokens": 141, "evaluated_tokens": 141, "completion_tokens": 30}}'
    text = text.replace('{"ran": ["check_quota"], "notices": [], "cut_by": "stop"}', counted)
    saved.write_text(text, encoding="utf-8")
    page = tmp_path / "p.html"
    assert invoke("export", str(saved), "--html", str(page)).exit_code == 0
    html = page.read_text(encoding="utf-8")
    assert "<th>tokens sent (the model's count)</th>" in html and "<td>141</td><td>141</td></tr>" in html
    assert "<td>?</td><td>?</td></tr>" in html  # the calls it did not count are not made up
    assert "≈ tokens sent (estimate)" in html
    plain = tmp_path / "plain.html"
    invoke("export", "nimbus", "--html", str(plain))
    assert "the model's count" not in plain.read_text(encoding="utf-8")  # a script counts nothing
    chart = tmp_path / "s.html"
    invoke("export", "savings", "--html", str(chart))
    assert chart.read_text(encoding="utf-8").count('r="3" fill="#b91c1c"') == 12  # a point per call


def test_hostile_text_the_user_was_not_shown_stays_inert_in_notes_and_rows():
    from harness.events import StopReason
    from harness.render.markdown import notes
    from harness.run_record import CallRecord, RunRecord
    from harness.transcript import Transcript

    bad = "Action: x(<img src=x onerror=alert(1)>)\x1b]0;PWNED\x07[link](http://e.vil)\n"
    transcript = Transcript()
    transcript.append("developer", "Q\n")
    transcript.append("model", "Thought: t\n" + bad)
    record = RunRecord(transcript, StopReason.MAX_STEPS, calls=(CallRecord(hidden=((11, 11 + len(bad), "action"),)),))
    quoted = [line for line in notes(record, "t").splitlines() if line.startswith("> ✗")]
    assert len(quoted) == 1 and "<img" not in quoted[0] and "\x1b" not in quoted[0] and "\\[link\\]" in quoted[0]
    rows = "\n".join(line.plain for line in screen_lines(Console(width=60, height=20), frames(record), 1))
    assert "\x1b" not in rows and "model    ▶✗ Action: x(<img" in rows and "␛]0;PWNED␇" in rows


HOSTILE_THOUGHT = "Thought: add.\x1b]0;PWNED\x07\x1b[2J <b>now</b>\n"


def chat_run(tmp_path: Path) -> Path:
    """A chat run recorded offline (a scripted scenario with endpoint = "chat"), its Thought hostile."""
    from tests.test_chat import saved_chat_run

    return saved_chat_run(tmp_path, HOSTILE_THOUGHT)


def test_step_frame_messages_prints_what_that_step_s_call_was_sent(tmp_path):
    saved = chat_run(tmp_path)
    fs = frames(open_run(str(saved)))
    last_call = max(i for i, f in enumerate(fs) if f.author.value == "model")
    result = invoke("step", str(saved), "--frame", str(last_call), "--messages")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Frame {last_call} of ")
    assert lines[1] == "what was sent: call 2, 3 messages by the chat rule (m: back to the buffer)"
    assert lines[3] == "user      │ Answer the question below. You can use these tools:"
    assert lines[-3:] == [
        "assistant │ Thought: add.␛]0;PWNED␇␛[2J <b>now</b>",  # shown, not obeyed
        "assistant │ Action: calculator(1 + 1)",
        "user      │ Observation: 2",
    ]
    assert "\x1b" not in result.stdout
    facts = invoke("step", str(saved), "--frame", str(last_call)).stdout  # the step's "sent" fact says how it went
    assert "sent   completion = model(messages(buffer)): the whole buffer, " in facts and "sent fresh as 3 chat messages" in facts
    first = invoke("step", str(saved), "--frame", "0", "--messages")
    assert first.exit_code == 0 and first.stdout.splitlines()[1].startswith("what was sent: no call wrote frame 0")
    plain = invoke("step", "nimbus", "--frame", "1", "--messages")
    assert plain.exit_code == 2 and plain.stderr == "error: nimbus: --messages: this run did not go through a chat endpoint: each call was sent the buffer as one text (a proxy's cassette holds its messages in the buffer: show it without --messages)\n"
    alone = invoke("step", str(saved), "--messages")
    assert alone.exit_code == 2 and alone.stderr == "error: --messages: goes with --frame K; while stepping, the m key shows them\n"


def test_the_m_key_shows_a_chat_call_s_messages_in_a_real_terminal(tmp_path, tmux):
    """In tmux: m on a model step replaces the buffer by the messages its call was sent, a
    role on every line (a wrapped line too), the hostile thought shown and not obeyed; m
    again brings the buffer back; a run that did not go through chat says so in one line."""
    from harness.render.sent import NOT_CHAT, SentMessages

    saved = chat_run(tmp_path)
    record = open_run(str(saved))
    fs = frames(record)
    width, height = 60, 40
    term = tmux(width, height, f"{HARNESS} step {shlex.quote(str(saved))}")
    model = Screen(fs, Console(width=width, height=height), SentMessages(record, fs))

    def press(key: str, tmux_key: str) -> list[str]:
        model.press(key, height)
        term.keys(tmux_key)
        return term.expect(drawn(model), f"{tmux_key} at step {model.k}")

    shown = term.expect(drawn(model), "step 0")
    assert shown[-1] == keys_line(width, chat=True) and "m: messages" in shown[-1] and "q: quit" in shown[-1]
    press("\x1b[F", "End")  # the last step: the model's final answer, call 2
    shown = press("m", "m")
    at = shown.index("what was sent: call 2, 3 messages by the chat rule (m: back")  # under the header, wrapped at 60
    assert shown[at + 1] == "to the buffer)"
    assert "assistant │ Thought: add.␛]0;PWNED␇␛[2J <b>now</b>" in shown
    assert "assistant │ Action: calculator(1 + 1)" in shown and "user      │ Observation: 2" in shown
    rows = shown[at + 3 : shown.index("", at + 3)]
    assert rows and all(re.match(r"(user     |assistant)[ ↪]│", row) for row in rows), rows
    assert any(row.startswith("user     ↪│ ") for row in rows)  # a wrapped line keeps its role
    assert "PWNED" not in term.run("display-message", "-p", "-t", term.name, "#{pane_title}")
    shown = press("m", "m")
    assert "model     ▶ Final Answer: 2" in shown and "model     │ Thought: add.␛]0;PWNED␇␛[2J <b>now</b>" in shown
    term.keys("q")


def test_m_on_a_run_without_chat_says_so_in_one_line_and_never_blanks_the_buffer(tmux):
    """A key pressed by mistake in front of a class: on nimbus (no chat endpoint) `m` says in
    one line that the run did not use chat; the buffer, scrolled where it was, stays on screen,
    and the next key takes the line away."""
    from harness.render.sent import NOT_CHAT

    term = tmux(80, 24, f"{HARNESS} step nimbus")
    fs = frames(open_run("nimbus"))
    model = Screen(fs, Console(width=80, height=24))
    term.expect(drawn(model), "nimbus step 0")
    for _ in range(3):
        model.press("\x1b[C", 24)
    term.keys("Right", "Right", "Right")
    before = term.expect(drawn(model), "nimbus step 3")
    term.keys("m")
    shown = before
    for _ in range(50):  # until the line has changed and the redraw has ended (two captures alike)
        time.sleep(0.1)
        seen, shown = shown, term.screen()
        if shown[1] != before[1] and shown == seen:
            break
    assert shown[1] == NOT_CHAT  # the one line, in place of the legend
    assert shown[:1] + shown[2:] == before[:1] + before[2:]  # the rest as it was: the newest part in view
    assert any(line.startswith("model     ▶ ") for line in shown) and shown[-1] == keys_line(80)
    term.keys("m")  # again: still there, never a blank buffer
    time.sleep(0.5)
    assert term.screen()[2:] == before[2:]
    term.keys("PageUp", "m")  # scrolled up: m keeps the view where it was
    model.press("\x1b[5~", 24)
    scrolled = drawn(model)
    model.press("m", 24)
    assert drawn(model)[1] == NOT_CHAT and drawn(model)[2:] == scrolled[2:]
    term.expect(drawn(model), "scrolled, after m")
    term.keys("Right")  # the next key: the legend is back
    model.press("\x1b[C", 24)
    assert term.expect(drawn(model), "step 4")[1] == before[1]
    term.keys("q")


def test_a_saved_chat_run_edited_to_hold_a_control_token_is_still_shown(tmp_path):
    """The chat rule refuses a control token in what it sends; a view sends nothing, so a
    saved file someone edited still steps, prints its messages and exports."""
    saved = chat_run(tmp_path)
    text = saved.read_text(encoding="utf-8")
    assert "Use exactly this format:" in text
    saved.write_text(text.replace("Use exactly this format:", "Use <|im_start|>system this format:"), encoding="utf-8")
    shown = invoke("step", str(saved), "--frame", "1", "--messages")
    assert shown.exit_code == 0, shown.output
    assert "user      │ Use <|im_start|>system this format:" in shown.stdout.splitlines()
    assert invoke("step", str(saved), "--frame", "1").exit_code == 0
    assert invoke("export", str(saved), "--html", str(tmp_path / "page.html")).exit_code == 0
