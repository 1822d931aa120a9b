"""What a teacher trips over on day two (issue 31, items 1-5): the cut text whole, one word
for a model call ("call") and another for a view's frame ("frame"), --no-stop and an
Action that a Final Answer pre-empted said in every view, the legend's ⤸ and a new
notice marked new. The stepper in a real terminal (tmux), the page in real Chromium.
(Item 1, `m` on a run without chat, is tests/test_stepper.py's
test_m_on_a_run_without_chat_says_so_in_one_line_and_never_blanks_the_buffer.)"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from harness.cli import app
from harness.record import open_run
from harness.render.frames import frames
STOP_OFF = "The stop sequence is off (--no-stop): nothing cuts what the model writes."
from harness.render.stepper import Screen
from tests.test_html import browser  # noqa: F401  (the fixture)
from tests.test_stepper import HARNESS, drawn, tmux  # noqa: F401  (the fixture)

runner = CliRunner()
CUT_END = "Final Answer: A network issue is blocking your uploads; check your connection."
NEVER_RAN = "Action: check_quota(nimbus) never ran: the Final Answer in the same reply ended the run."


def invoke(*args: str, width: int = 120):
    return runner.invoke(app, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1"})


def flat(lines: list[str]) -> str:
    """A note's wrapped lines as one text: continuation marks and indents dropped."""
    return " ".join(line.strip().lstrip("↪").strip() for line in lines)


# 2. The cut text: whole where there is room, a key where there is not, whole in the notes.


def test_the_cut_text_is_whole_where_it_fits_and_c_expands_it_where_it_does_not(tmux):
    big = tmux(120, 40, f"{HARNESS} step nimbus")
    model = Screen(frames(open_run("nimbus")), Console(width=120, height=40))
    big.expect(drawn(model), "frame 0")
    model.press("\x1b[C", 40)
    big.keys("Right")
    shown = big.expect(drawn(model), "frame 1 at 120×40")
    at = next(i for i, line in enumerate(shown) if "✂ cut by the stop sequence" in line)
    assert CUT_END in flat(shown[at : at + 3]) and "(c: show it whole)" not in "".join(shown)
    big.keys("q")

    small = tmux(60, 18, f"{HARNESS} step nimbus")  # no room for the newest part with all of the cut
    model = Screen(frames(open_run("nimbus")), Console(width=60, height=18))
    small.expect(drawn(model), "frame 0")
    model.press("\x1b[C", 18)
    small.keys("Right")
    shown = small.expect(drawn(model), "frame 1 at 60×18")
    assert "model     ▶ Action: check_quota(nimbus)" in shown  # the newest part is in view
    text = flat(shown)
    assert "✂ cut by the stop sequence" in text and "(c: show it whole)" in text and "check your connection" not in text
    model.press("c", 18)
    small.keys("c")
    shown = small.expect(drawn(model), "frame 1, c: the cut whole")
    end = shown.index("", 5)
    assert "check your connection.⏎ (c: short)" in flat(shown[end - 2 : end])  # its end in view, above the facts
    model.press("c", 18)
    small.keys("c")
    shown = small.expect(drawn(model), "frame 1, c again: short")
    assert "(c: show it whole)" in flat(shown)
    small.keys("q")


def test_export_markdown_shows_the_cut_text_whole(tmp_path):
    out = tmp_path / "n.md"
    assert invoke("export", "nimbus", "--markdown", str(out)).exit_code == 0
    cut = [line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith("> ✂")]
    assert len(cut) == 1 and CUT_END in cut[0] and "…" not in cut[0]


# 3. A call is a model call; a frame is one addition to the buffer, in every view.


def test_a_model_call_is_a_call_and_a_view_s_frame_is_a_frame(tmp_path):
    ran = invoke("run", "nimbus").stdout
    assert "stopped: final_answer after 3 calls" in ran and "── call 3 · the model is sent" in ran
    assert "step" not in ran.lower().replace("check_status", "")  # (nimbus's text holds no "step")
    stepped = invoke("step", "nimbus", "--frame", "3").stdout
    assert stepped.startswith("Frame 3 of 5 ")
    page, notes = tmp_path / "p.html", tmp_path / "n.md"
    assert invoke("export", "nimbus", "--html", str(page), "--markdown", str(notes)).exit_code == 0
    assert "## Frame 5 of 5" in notes.read_text(encoding="utf-8") and "## Step" not in notes.read_text(encoding="utf-8")
    for command in ("step", "export"):
        help_ = invoke(command, "--help", width=200).stdout
        assert "step " not in help_.replace("harness step", "").lower().replace("step through", ""), help_
    # JSON keeps its field names, which programs read: "steps" counts the model calls.
    import json

    assert json.loads(invoke("run", "nimbus", "--format", "json").stdout)["steps"] == 3


def test_the_page_counts_frames_and_opens_a_frame_link(browser, tmp_path):  # noqa: F811
    out = tmp_path / "nimbus.html"
    assert invoke("export", "nimbus", "--html", str(out)).exit_code == 0
    page_ = browser.new_page()
    page_.goto(out.as_uri() + "#frame-3")
    assert page_.locator("#counter").inner_text() == "Frame 3 of 5"
    page_.keyboard.press("ArrowRight")
    page_.wait_for_function("location.hash === '#frame-4'", timeout=10_000)
    page_.emulate_media(media="print")
    assert page_.locator(".print-step h2").first.inner_text() == "Frame 0 of 5"
    assert "Step" not in page_.locator("body").inner_text().replace("the stop sequence", "")
    page_.close()


# 4. --no-stop, and an Action that never ran, said in one line each in every view.


def test_no_stop_and_the_action_that_never_ran_are_said_in_the_run_and_show_views(tmp_path):
    saved = tmp_path / "ns.txt"
    ran = invoke("run", "nimbus", "--no-stop", "--save", str(saved)).stdout.splitlines()
    shown = invoke("show", str(saved)).stdout.splitlines()
    for lines in (ran, shown):
        assert lines[2] == STOP_OFF  # under the legend, before the first row
        at = lines.index("model     │ Final Answer: A network issue is blocking your uploads; check your connection.")
        assert lines[at + 1].strip() == NEVER_RAN
    with_stop = invoke("run", "nimbus").stdout
    assert STOP_OFF not in with_stop and "never ran" not in with_stop


def test_no_stop_and_the_action_that_never_ran_in_the_stepper(tmux):
    term = tmux(100, 30, f"{HARNESS} step nimbus --no-stop")
    fs = frames(open_run(str(_saved_no_stop())))
    model = Screen(fs, Console(width=100, height=30), stop_off=True)
    shown = term.expect(drawn(model), "frame 0")
    assert STOP_OFF in shown[:4]
    model.press("\x1b[C", 30)
    term.keys("Right")
    shown = term.expect(drawn(model), "frame 1")
    assert STOP_OFF in shown[:4] and NEVER_RAN in flat([line for line in shown if "never ran" in line or line.startswith(" " * 9 + "↪")])
    term.keys("q")


def _saved_no_stop() -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "ns.txt"
    assert invoke("run", "nimbus", "--no-stop", "--save", str(path)).exit_code == 0
    return path


def test_no_stop_and_the_action_that_never_ran_in_the_notes_and_the_page(browser, tmp_path):  # noqa: F811
    page, notes = tmp_path / "p.html", tmp_path / "n.md"
    assert invoke("export", "nimbus", "--no-stop", "--html", str(page), "--markdown", str(notes)).exit_code == 0
    text = notes.read_text(encoding="utf-8")
    assert "> **The stop sequence was off for this run (--no-stop)" in text and f"> {NEVER_RAN}" in text
    page_ = browser.new_page()
    page_.goto(page.as_uri() + "#frame-1")
    assert page_.locator(".banner").inner_text().startswith("The stop sequence was off for this run (--no-stop)")
    assert page_.locator("#buffer .row.never-ran").inner_text().strip() == NEVER_RAN
    page_.goto(page.as_uri() + "#frame-0")
    page_.reload()
    assert page_.locator("#buffer .row.never-ran").count() == 0  # said at the frame it is about
    page_.close()


# 5. ⤸ in the legend; a new notice marked new; the legend wraps below 80 columns.


def test_the_legend_names_the_shared_line_mark_and_wraps_on_a_narrow_terminal(tmux):
    term = tmux(60, 24, f"{HARNESS} step nimbus")
    model = Screen(frames(open_run("nimbus")), Console(width=60, height=24))
    shown = term.expect(drawn(model), "frame 0 at 60 columns")
    heads = " ".join(shown[:4])
    assert "⤸ shared line" in heads and "✂ never in the buffer" in heads  # wrapped, not cut off
    assert all(len(line) <= 60 for line in shown)
    term.keys("q")


def test_a_new_notice_row_is_marked_new_in_the_stepper_and_on_the_page(tmux, browser, tmp_path):  # noqa: F811
    term = tmux(100, 40, f"{HARNESS} step governed-research")
    fs = frames(open_run("governed-research"))
    model = Screen(fs, Console(width=100, height=40))
    term.expect(drawn(model), "frame 0")
    notice = next(i for i, f in enumerate(fs) if f.is_notice)
    for _ in range(notice):
        model.press("\x1b[C", 40)
    term.keys(*["Right"] * notice)
    shown = term.expect(drawn(model), f"frame {notice}")
    assert any(line.startswith("code     ▶⚠ Notice: ") for line in shown)
    model.press("\x1b[C", 40)
    term.keys("Right")
    shown = term.expect(drawn(model), f"frame {notice + 1}")
    assert any(line.startswith("code      ⚠ Notice: ") for line in shown)  # no longer new
    term.keys("q")
    out = tmp_path / "g.html"
    assert invoke("export", "governed-research", "--html", str(out)).exit_code == 0
    page_ = browser.new_page()
    page_.goto(out.as_uri() + f"#frame-{notice}")
    assert page_.locator("#buffer .row.notice .mark").first.inner_text() == "▶⚠"
    assert "⤸ a line the next author goes on with" in page_.locator(".legend").last.inner_text()
    page_.close()


def test_a_python_tool_s_defaults_reach_the_prompt_the_command_sends(tmp_path):
    """Issue 31 item 15, through `harness run`: the model is told which arguments are optional."""
    (tmp_path / "fees.py").write_text("def late_fee(days, daily=0.25):\n    return str(days * daily)\n", encoding="utf-8")
    scenario = tmp_path / "fees.toml"
    scenario.write_text(
        'question = "What is the fee for 4 days late?"\n'
        'completions = ["Action: late_fee(4)\\n", "Final Answer: 1.0\\n"]\n\n'
        '[tools.late_fee]\npython = "fees:late_fee"\n',
        encoding="utf-8",
    )
    result = invoke("run", str(scenario), "--format", "tagged")
    assert result.exit_code == 0, result.output
    assert "late_fee(days, daily=0.25)" in result.output
    assert "code      | Observation: 1.0" in result.output
