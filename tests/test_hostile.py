"""Untrusted input, class by class (issue: hardening). Saved transcripts are mailed around
and replayed in CI; model text and tool results are written by whoever controls the
model or the tool. Every bad input is one line naming the file or field, exit code 2, no
traceback, no temporary file left behind, and nothing the user had is overwritten.
"""

from __future__ import annotations

import json
import os
import signal
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import TranscriptFormatError
from harness.record import run_scenario
from harness.saved import load_record
from harness.scenario import find_scenario, load_scenario
from harness.transcript import HEADER

runner = CliRunner()
ROOT = Path(__file__).parent.parent
NIMBUS = run_scenario(load_scenario(find_scenario("nimbus"))).saved
SAVED_FILE_COMMANDS = [["show"], ["show", "-f", "events"], ["show", "-f", "json"], ["step", "--frame", "0"], ["replay"]]


def invoke(*args: str, input: str | bytes | None = None):
    return runner.invoke(app, list(args), input=input, env={"COLUMNS": "200", "NO_COLOR": "1"})


def one_line_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0]


def with_meta(key: str, value: str) -> str:
    """The Nimbus transcript with one metadata line replaced (or added)."""
    lines = NIMBUS.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(f"# {key}: "):
            lines[i] = f"# {key}: {value}"
            return "\n".join(lines)
    return "\n".join([lines[0], f"# {key}: {value}", *lines[1:]])


# --- item 3: templates are looked up by name in the prompts folders only ------------------


@pytest.mark.parametrize("prompt", ["/etc/hostname", "../../README", "..", "sub/default", "C:evil"])
def test_a_prompt_name_with_a_path_is_refused_naming_the_field(tmp_path, prompt):
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'question = "q"\nprompt = {json.dumps(prompt)}\n', encoding="utf-8")
    one_line_error(invoke("run", str(scenario)), "prompt", "not a template name")


def test_a_saved_file_cannot_point_replay_at_a_file_outside_the_prompts_folder(tmp_path):
    saved = tmp_path / "t.txt"
    saved.write_text(NIMBUS.replace('"prompt": "default"', '"prompt": "../README"'), encoding="utf-8")
    for command in (["replay"], ["show"]):
        one_line_error(invoke(*command, str(saved)), "metadata scenario: prompt")


@pytest.mark.parametrize("relative", ["/etc/hostname", "../outside.txt", "prompts/../../outside.txt"])
def test_a_prompt_file_must_stay_inside_the_scenario_folder(tmp_path, relative):
    (tmp_path / "outside.txt").write_text("Question: $question\n", encoding="utf-8")
    folder = tmp_path / "agent"
    folder.mkdir()
    scenario = folder / "s.toml"
    scenario.write_text(f'question = "q"\nprompt_file = {json.dumps(relative)}\n', encoding="utf-8")
    one_line_error(invoke("run", str(scenario)), "prompt_file")


# --- item 4: nothing the user has is overwritten --------------------------------------------


@pytest.mark.parametrize("option", [["run", "nimbus", "--save"], ["export", "nimbus", "--html"], ["export", "nimbus", "--markdown"]])
def test_no_output_option_replaces_a_file_that_merely_mentions_harness(tmp_path, option):
    source = tmp_path / "transcript.py"
    text = f'HEADER = "{HEADER}"\n<meta name="generator" content="harness">\n# harness · \n'
    source.write_text(text, encoding="utf-8")
    one_line_error(invoke(*option, str(source)), "not overwriting")
    assert source.read_text(encoding="utf-8") == text
    assert os.listdir(tmp_path) == ["transcript.py"]  # no temporary file left


def test_export_to_one_file_as_html_and_markdown_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "o.html"
    for markdown in (out, tmp_path / "." / "o.html"):
        one_line_error(invoke("export", "nimbus", "--html", str(out), "--markdown", str(markdown)), f"--markdown {markdown}", "--html writes too")
        assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "args",
    [["run", "nimbus", "--save"], ["export", "nimbus", "--html"], ["export", "nimbus", "--markdown"], ["run", "nimbus", "calculator", "--save-dir"],
     ["run", "nimbus", "calculator", "--report"], ["run", "nimbus", "calculator", "--junit"]],
    ids=lambda args: args[-1],
)  # fmt: skip
def test_an_empty_or_dash_output_argument_is_refused_never_taken_for_the_folder_or_a_file(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    one_line_error(invoke(*args, ""), f"'{args[-1]}'", "the argument is empty")
    assert os.listdir(tmp_path) == []  # --save-dir '' once saved every run here
    one_line_error(invoke(*args, "-"), f"'{args[-1]}'", "'-' is not stdout here")
    assert os.listdir(tmp_path) == []  # '-' was a file named '-', where a user meant stdout


def test_the_real_source_file_is_refused():
    before = (ROOT / "harness" / "transcript.py").read_bytes()
    one_line_error(invoke("run", "nimbus", "--save", str(ROOT / "harness" / "transcript.py")), "not overwriting")
    assert (ROOT / "harness" / "transcript.py").read_bytes() == before


def test_a_fifo_is_refused_without_being_opened(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_line_error(invoke("run", "nimbus", "--save", str(fifo)), "not a regular file")  # would hang if opened


def test_a_file_that_appears_during_the_run_is_kept(tmp_path, monkeypatch):
    target = tmp_path / "t.txt"
    import harness.record

    real = harness.record.run_scenario

    def run_then_user_writes(*args, **kwargs):
        record = real(*args, **kwargs)
        target.write_text("my notes\n", encoding="utf-8")  # created while the run went on
        return record

    monkeypatch.setattr(harness.record, "run_scenario", run_then_user_writes)
    one_line_error(invoke("run", "nimbus", "--save", str(target)), "not overwriting")
    assert target.read_text(encoding="utf-8") == "my notes\n"
    assert sorted(os.listdir(tmp_path)) == ["t.txt"]


def test_a_folder_where_no_file_can_be_made_is_one_line():
    one_line_error(invoke("run", "nimbus", "--save", "/proc/harness-cannot-write-here.txt"), "cannot write")


def test_save_still_happens_when_the_reader_of_stdout_goes_away(tmp_path):
    saved, scenario = tmp_path / "t.txt", tmp_path / "long.toml"
    # More than a pipe holds (64 KB), so the writer meets the closed pipe mid-run.
    scenario.write_text(f'question = "{"why " * 100_000}"\ncompletions = ["Final Answer: 1\\n"]\n', encoding="utf-8")
    for fmt in ("rich", "events"):
        saved.unlink(missing_ok=True)
        proc = subprocess.run(
            f"{sys.executable} -m harness run {scenario} -f {fmt} --save {saved} | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}",
            shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        assert proc.stdout.strip() == "0" and "Traceback" not in proc.stderr, proc.stderr
        assert load_record(saved.read_text(encoding="utf-8")).stop_reason == "final_answer"


def test_save_says_where_it_wrote_and_replaces_its_own_file(tmp_path):
    target = tmp_path / "t.txt"
    for _ in range(2):
        result = invoke("run", "nimbus", "--save", str(target))
        assert result.exit_code == 0 and f"wrote {target}" in result.stderr
    assert target.read_text(encoding="utf-8") == NIMBUS


def test_a_write_protected_transcript_is_never_replaced(tmp_path):
    target = tmp_path / "ro.txt"
    assert invoke("run", "calculator", "--save", str(target)).exit_code == 0
    target.chmod(0o444)
    one_line_error(invoke("run", "nimbus", "--save", str(target)), f"--save {target}", "is write-protected; not overwriting it")
    assert load_record(target.read_text(encoding="utf-8")).final_answer != load_record(NIMBUS).final_answer


def test_a_run_that_failed_never_replaces_a_saved_one_alone_or_in_a_batch_and_a_new_file_gets_it(tmp_path):
    from tests.loopback import FakeServer, Reply

    server = FakeServer()
    server.reply = Reply(500, [b'{"error": {"message": "down"}}'])  # a live model that fails on every call
    failing = ["--model", "openai:m", "--base-url", server.url]
    try:
        (tmp_path / "runs").mkdir()
        assert invoke("run", "nimbus", "--save", str(tmp_path / "n.txt")).exit_code == 0
        assert invoke("run", "nimbus", "calculator", "--save-dir", str(tmp_path / "runs")).exit_code == 0
        before = {p.name: p.read_bytes() for p in [tmp_path / "n.txt", *(tmp_path / "runs").iterdir()]}
        alone = invoke("run", "nimbus", "--save", str(tmp_path / "n.txt"), *failing)
        batch = invoke("run", "nimbus", "calculator", "--save-dir", str(tmp_path / "runs"), *failing)
        new = invoke("run", "nimbus", "--save", str(tmp_path / "new.txt"), *failing)
    finally:
        server.close()
    assert (alone.exit_code, batch.exit_code, new.exit_code) == (3, 3, 3)
    assert {p.name: p.read_bytes() for p in [tmp_path / "n.txt", *(tmp_path / "runs").iterdir()]} == before
    assert f"kept {tmp_path / 'n.txt'} as it was: a saved run is never replaced by one that failed" in alone.stderr
    assert batch.stderr.count("as it was: a saved run is never replaced by one that failed") == 2
    assert load_record((tmp_path / "new.txt").read_text(encoding="utf-8")).stop_reason == "model_error"  # nothing was there: saved


# --- items 5, 8, 9: saved files of the wrong shape --------------------------------------------

BAD_META = [
    ("steps", '"abc"', "steps"),
    ("steps", "NaN", "steps"),
    ("steps", "-1", "steps"),
    ("cuts", "[1]", "cuts"),
    ("cuts", '{"x": "y"}', "cuts"),
    ("cuts", '{"99": "y"}', "cuts"),
    ("cuts", '{"\u00b2": "y"}', "cuts"),  # "²".isdigit() is true
    ("final_answer", "42", "final_answer"),
    ("stop_reason", '"exploded"', "stop_reason"),
    ("scenario", "[1]", "scenario"),
    ("scenario", '{"question": 1}', "question"),
    ("scenario", '{"question": "q", "title": 7}', "title"),
    ("calls", '[{"ran": [1]}]', "calls"),
    ("calls", "7", "calls"),
    ("final_answer", '"\\ud800"', "surrogate"),
    ("steps", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
]


@pytest.mark.parametrize(("key", "value", "named"), BAD_META)
@pytest.mark.parametrize("command", SAVED_FILE_COMMANDS, ids=" ".join)
def test_metadata_of_the_wrong_shape_is_one_line_naming_it(tmp_path, key, value, named, command):
    saved = tmp_path / "t.txt"
    saved.write_text(with_meta(key, value), encoding="utf-8")
    one_line_error(invoke(*command, str(saved)), str(saved), named)


def test_export_of_a_bad_file_writes_nothing(tmp_path):
    saved = tmp_path / "t.txt"
    saved.write_text(with_meta("steps", '"abc"'), encoding="utf-8")
    one_line_error(invoke("export", str(saved), "--html", str(tmp_path / "p.html")), "steps")
    assert sorted(os.listdir(tmp_path)) == ["t.txt"]


@pytest.mark.parametrize("command", SAVED_FILE_COMMANDS, ids=" ".join)
def test_a_file_cut_off_mid_record_is_refused_not_shown_as_whole(tmp_path, command):
    saved = tmp_path / "t.txt"
    saved.write_text(NIMBUS[:-20], encoding="utf-8")  # no newline at the end: truncated
    one_line_error(invoke(*command, str(saved)), "cut off")


@pytest.mark.parametrize("command", [["show"], ["step", "--frame", "0"], ["export", "--markdown", "out.md"], ["replay"]], ids=" ".join)
def test_invalid_utf8_a_bom_and_a_folder_are_named_for_what_they_are(tmp_path, command):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(NIMBUS.encode("utf-8").replace(b"Nimbus", b"Nim\xffbus", 1))
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + NIMBUS.encode("utf-8"))

    def run(target: Path):
        args = [command[0], str(target), *command[1:]]
        if command[0] == "export":
            args[-1] = str(tmp_path / "out.md")
        return invoke(*args)

    one_line_error(run(bad), "not UTF-8")
    one_line_error(run(bom), "byte-order mark")
    if command[0] != "replay":
        one_line_error(run(tmp_path), "folder")
        return
    # `harness replay DIR` replays every transcript in it: each broken one is named on a line of its own.
    many = run(tmp_path)
    assert many.exit_code == 2 and "Traceback" not in many.output
    errors = [line for line in many.stderr.splitlines() if line.startswith("error: ")]
    assert [e.split(": ")[1] for e in errors] == [str(bad), f"{bom}:1"]
    assert "not UTF-8" in errors[0] and "byte-order mark" in errors[1]


def test_a_bom_or_a_folder_as_a_scenario_is_named(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_bytes(b"\xef\xbb\xbf" + b'question = "q"\n')
    one_line_error(invoke("run", str(scenario)), "byte-order mark")
    one_line_error(invoke("run", str(tmp_path)), "folder")


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    body=st.text(),
    meta=st.dictionaries(
        st.sampled_from(["stop_reason", "final_answer", "steps", "cuts", "calls", "scenario", "detail", "other"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
            max_leaves=10,
        ),
    ),
)
def test_any_text_with_any_metadata_loads_or_raises_the_format_error(body, meta):
    text = HEADER + "\n" + "".join(f"# {k}: {json.dumps(v)}\n" for k, v in meta.items()) + body
    try:
        load_record(text, "fuzz.txt")
    except TranscriptFormatError:
        pass


# --- item 6: the coding agent on a pipe always answers with one JSON line ---------------------

json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
turn = st.fixed_dictionaries(
    {"thought": st.text(max_size=30)},
    optional={"action": st.fixed_dictionaries({"tool": st.sampled_from(["read_file", "write_file", "patch_file", "finish", "nope"]), "args": json_value})},
)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    request=st.one_of(
        json_value,
        st.fixed_dictionaries(
            {"op": st.just("run_agent")},
            optional={
                "task": json_value,
                "max_steps": st.integers(-2, 4) | json_value,
                "workspace": st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=3) | json_value,
                "model_turns": st.lists(turn | json_value, max_size=4),
            },
        ),
    )
)
def test_any_request_gets_one_json_line_and_exit_0_or_2(request):
    result = invoke("agent", input=json.dumps(request).encode("utf-8"))  # json.dumps spells surrogates as \ud800
    assert result.exit_code in (0, 2), result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    answer = json.loads(lines[0])
    assert ("error" in answer) == (result.exit_code == 2)


def test_a_lone_surrogate_with_transcript_is_a_json_error_and_leaves_no_file(tmp_path):
    request = '{"op": "run_agent", "task": "\\ud800", "model_turns": []}'
    result = invoke("agent", "--transcript", str(tmp_path / "t.txt"), input=request.encode())
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "invalid_json"
    assert os.listdir(tmp_path) == []


# --- item 7: exits that mean what they say ---------------------------------------------------


@pytest.mark.parametrize("delay", ["inf", "nan", "-nan", "NaN", "-1", "-inf"])
@pytest.mark.parametrize("option", ["--delay", "--max-seconds", "--wait-for-server"])
def test_seconds_that_are_not_a_number_of_seconds_are_a_bad_argument(option, delay):
    one_line_error(invoke("run", "nimbus", option, delay), option)


DEEP = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"


def test_a_scenario_nested_too_deeply_is_one_line_and_the_others_of_a_batch_still_run(tmp_path):
    (tmp_path / "deep.toml").write_text(DEEP, encoding="utf-8")
    one_line_error(invoke("run", str(tmp_path / "deep.toml")), "deep.toml", "nested too deeply")
    (tmp_path / "fine.toml").write_text('question = "q"\ncompletions = ["Final Answer: 1"]\n', encoding="utf-8")
    batch = invoke("run", str(tmp_path))
    assert batch.exit_code == 2 and "Traceback" not in batch.output
    assert "nested too deeply" in batch.output and "final_answer" in batch.output


def test_a_templates_frames_nested_too_deeply_are_one_line_naming_the_template(tmp_path):
    (tmp_path / "deep.txt").write_text("+++\n" + DEEP + "+++\n$question $tools", encoding="utf-8")
    (tmp_path / "s.toml").write_text('prompt_file = "deep.txt"\nquestion = "q"\n', encoding="utf-8")
    one_line_error(invoke("run", str(tmp_path / "s.toml")), "deep.txt", "nested too deeply")


def test_a_template_that_never_uses_the_question_is_one_line_naming_it(tmp_path):
    # the model would answer a question it never saw: a teacher's demo that shows nothing
    (tmp_path / "mine.txt").write_text("Answer well. Tools: $tools\n", encoding="utf-8")
    (tmp_path / "s.toml").write_text('prompt_file = "mine.txt"\nquestion = "q"\ncompletions = ["Final Answer: 1"]\n', encoding="utf-8")
    one_line_error(invoke("run", str(tmp_path / "s.toml")), "mine.txt", "never uses $question")
    one_line_error(invoke("run", str(tmp_path / "s.toml"), "--save", str(tmp_path / "s.txt")), "never uses $question")
    assert not (tmp_path / "s.txt").exists()


def test_piping_into_head_exits_0_without_a_traceback():
    proc = subprocess.run(
        f"{sys.executable} -m harness run step-limit -f events | head -c 10 >/dev/null; echo ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout.strip() == "0", proc.stderr
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr


@pytest.mark.parametrize("after", [0.1, 0.3, 0.65])
def test_ctrl_c_while_harness_runs_is_130_without_a_traceback(after):
    # From harness's first line on: the marker line says the interpreter has started (before
    # it, SIGINT still kills the process, whatever harness does), however busy the machine.
    code = "import sys; print('started', file=sys.stderr, flush=True); import harness.__main__ as m; m.main()"
    proc = subprocess.Popen([sys.executable, "-c", code, "run", "nimbus", "--delay", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stderr.readline() == "started\n"
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Error" not in err, err


# --- item 11: the coding agent's file names and the argument limit --------------------------


@pytest.mark.parametrize("path", [".", "dir/", "a//b", "./x", "a\x00b", "a\nb", "a\rb"])
def test_a_file_name_that_is_not_a_name_is_refused_with_an_observation(path):
    request = {"op": "run_agent", "model_turns": [{"thought": "w", "action": {"tool": "write_file", "args": {"path": path, "content": "x"}}}]}
    answer = json.loads(invoke("agent", input=json.dumps(request)).stdout)
    assert answer["workspace"] == {}


def test_an_action_line_over_the_limit_says_so_in_its_notice(tmp_path):
    saved = tmp_path / "t.txt"
    big = {"op": "run_agent", "max_steps": 1, "model_turns": [{"thought": "w", "action": {"tool": "write_file", "args": {"path": "a", "content": "x" * 200_000}}}]}
    invoke("agent", "--transcript", str(saved), input=json.dumps(big))
    text = saved.read_text(encoding="utf-8")
    assert "is longer than 100,000 characters, the limit for one Action line" in text
    assert "does not read" not in text


# --- items 1 and 2, the remaining media: the stop line and Markdown notes -------------------

HOSTILE_ANSWER = "\x1b]0;PWNED\x07<img src=x onerror=alert(1)> [link](javascript:alert(1))"


def test_a_hostile_final_answer_is_shown_escaped_on_the_stop_line_and_in_notes(tmp_path):
    saved = tmp_path / "t.txt"
    saved.write_text(with_meta("final_answer", json.dumps(HOSTILE_ANSWER)), encoding="utf-8")
    shown = invoke("show", str(saved))
    assert shown.exit_code == 0 and "\x1b" not in shown.stdout and "final answer: ␛]0;PWNED␇" in shown.stdout
    notes = tmp_path / "n.md"
    assert invoke("export", str(saved), "--markdown", str(notes)).exit_code == 0
    text = notes.read_text(encoding="utf-8")
    assert "<img" not in text and "[link](javascript" not in text and "\x1b" not in text
    assert "\\[link\\](javascript" in text  # shown as text, not a link
    assert "&lt;img src=x onerror=alert(1)&gt;" in text


def test_a_reply_of_many_bad_lines_gets_a_bounded_number_of_notices():
    from harness.loop import NOTICES_PER_REPLY
    from harness.record import run_scenario as run_it
    from harness.scenario import Scenario, ToolSpec

    flood = "Thought: go\n" + "Action: calculator(1)\n" * 5_000
    record = run_it(Scenario(question="q", completions=(flood,), tools=(ToolSpec("calculator"),), max_steps=1))
    notices = [line for line in record.transcript.text.split("\n") if line.startswith("Notice: ")]
    assert len(notices) == NOTICES_PER_REPLY + 1
    assert record.calls[0].notices[-1] == "protocol_violation.more_rejections" and "4,989 more" in notices[-1]
    assert record.calls[0].ran == ("calculator",)  # the first action still ran


# --- review: the remaining edges of each class -------------------------------------------

EVIL = "Thought: \x1b]0;PWNED\x07\x1b[2J \x9b31m \u202egnp.exe <img src=x onerror=alert(1)>\\n"


def evil_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "evil.toml"
    path.write_text(f"question = \"q\"\ncompletions = [{json.dumps(EVIL + 'Action: calculator(1)' + chr(10) + 'Observation: <img src=x onerror=alert(2)> ' + chr(0x9b))}]\n[tools.calculator]\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["json", "events"])
def test_json_and_events_write_no_raw_control_character_yet_keep_the_data(tmp_path, fmt):
    result = invoke("run", str(evil_scenario(tmp_path)), "-f", fmt)
    assert result.exit_code == 0
    assert not any(0x7F <= ord(c) <= 0x9F or c in "\u202e\u2028\u2029" for c in result.stdout)
    assert "\x1b" not in result.stdout
    data = [json.loads(line) for line in result.stdout.splitlines()] if fmt == "events" else [json.loads(result.stdout)]
    assert "\x9b31m \u202egnp.exe" in json.dumps(data, ensure_ascii=False)  # the same characters, escaped


def test_markdown_notes_show_control_characters_and_keep_cut_html_inert(tmp_path):
    notes = tmp_path / "n.md"
    assert invoke("export", str(evil_scenario(tmp_path)), "--markdown", str(notes)).exit_code == 0
    text = notes.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\x9b" not in text and "␛]0;PWNED␇" in text
    assert "<img" not in text.split("```")[-1]  # outside the code blocks, HTML is text


def test_a_url_in_model_text_is_no_link_in_the_notes(tmp_path):
    # GitHub's Markdown makes a link of a bare http:// or www. in text: notes handed out to
    # a class must not turn a model's (or a hostile tool's) URL into something to click.
    path = tmp_path / "m.toml"
    path.write_text('question = "q"\ncompletions = ["Final Answer: visit https://evil.example/y or www.evil.example now\\n"]\n', encoding="utf-8")
    notes = tmp_path / "n.md"
    assert invoke("export", str(path), "--markdown", str(notes)).exit_code == 0
    outside = notes.read_text(encoding="utf-8").split("```")[-1]  # past the last code block: the facts
    assert "visit https\\://evil.example/y or www\\.evil.example now" in outside
    assert "https://evil" not in outside and "www.evil" not in outside


def test_a_python_tool_cannot_be_reached_through_a_link_out_of_the_folder(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mod.py").write_text("def f(x):\n    'x'\n    return 'outside'\n", encoding="utf-8")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "lib").symlink_to(tmp_path / "other")
    scenario = agent / "s.toml"
    scenario.write_text('question = "q"\n[tools.f]\npython = "lib.mod:f"\n', encoding="utf-8")
    one_line_error(invoke("run", str(scenario)), "tools.f.python", "leads out of the scenario's folder")


@pytest.mark.parametrize("name", ["a b(c", "x\\ny", "9lives", ""])
def test_a_tool_name_an_action_line_could_never_call_is_refused(tmp_path, name):
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'question = "q"\n[tools."{name}"]\nresults = {{}}\ndescription = "d"\n', encoding="utf-8")
    one_line_error(invoke("run", str(scenario)), "not a tool name")


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "http://"])
def test_a_base_url_that_is_not_one_is_bad_input_not_a_model_failure(url):
    one_line_error(invoke("run", "nimbus", "--model", "openai:m", "--base-url", url), "--base-url")


# --- round 3, item 1: an input that is not a regular file is refused, unopened ---------------


@pytest.mark.parametrize(
    "command",
    [["show"], ["replay"], ["replay", "--check"], ["step", "--frame", "0"], ["export", "--markdown", "OUT"], ["run"]],
    ids=" ".join,
)
def test_a_fifo_given_as_an_input_is_refused_without_hanging(tmp_path, command):
    fifo = tmp_path / "f.txt"
    os.mkfifo(fifo)
    args = [command[0], str(fifo), *(str(tmp_path / "out.md") if a == "OUT" else a for a in command[1:])]
    try:  # a subprocess: opening the FIFO would block this test for ever
        proc = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=ROOT, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"harness {' '.join(command)} FIFO hung: it opened the FIFO")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {fifo}") and "not a regular file" in lines[0]
    assert not (tmp_path / "out.md").exists()


@pytest.mark.parametrize("command", [["show"], ["replay"], ["step", "--frame", "0"], ["export", "--markdown", "OUT"], ["run"]], ids=" ".join)
@pytest.mark.parametrize("link", ["loop", "broken"])
def test_a_looping_or_broken_link_as_an_input_says_so_in_one_line(tmp_path, command, link):
    given = tmp_path / "in.txt"
    given.symlink_to(given if link == "loop" else tmp_path / "gone\x1b[31m.txt")
    args = [command[0], str(given), *(str(tmp_path / "out.md") if a == "OUT" else a for a in command[1:])]
    result = invoke(*args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    says = "Too many levels of symbolic links" if link == "loop" else "is a link to"
    assert result.stderr.startswith(f"error: {given}") and says in result.stderr and "\x1b" not in result.stderr
    assert not (tmp_path / "out.md").exists()


def test_a_fifo_as_a_scenarios_own_prompt_file_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "prompt.txt")
    scenario = tmp_path / "s.toml"
    scenario.write_text('question = "q"\nprompt_file = "prompt.txt"\ncompletions = ["Final Answer: x"]\n', encoding="utf-8")
    try:
        proc = subprocess.run([sys.executable, "-m", "harness", "run", str(scenario)], capture_output=True, text=True, cwd=ROOT, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("harness run hung on a FIFO prompt file")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"error: {scenario}: prompt_file: 'prompt.txt' is not a regular file (a FIFO"), proc.stderr  # the field named


def test_a_save_dir_that_cannot_be_made_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("mine\n", encoding="utf-8")
    one_line_error(invoke("run", "nimbus", "calculator", "--save-dir", str(blocker / "sub" / "..")), "--save-dir")
    one_line_error(invoke("run", "nimbus", "calculator", "--save-dir", "/proc/1/nope"), "--save-dir /proc/1/nope", "cannot create")
    assert blocker.read_text(encoding="utf-8") == "mine\n"


def test_an_empty_argument_names_no_scenario_and_runs_nothing_under_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text('question = "q"\ncompletions = ["Final Answer: 1\\n"]\n', encoding="utf-8")
    result = invoke("run", "", "nimbus")
    assert result.exit_code == 2 and "'' names no scenario" in result.stderr and "mine" not in result.stdout


@pytest.mark.parametrize(
    "args, named",
    [
        (["run", ""], "SCENARIO: an empty argument names no scenario"),
        (["show", ""], "saved: an empty argument names no transcript"),
        (["replay", ""], "FILE: an empty argument names no transcript"),
        (["step", "", "--frame", "0"], "target: an empty argument names no scenario or transcript"),
        (["export", "", "--html", "page.html"], "target: an empty argument names no scenario or transcript"),
    ],
)
def test_an_empty_argument_is_one_line_never_the_folder_here(tmp_path, monkeypatch, args, named):
    monkeypatch.chdir(tmp_path)  # Path("") is "." : it must not run, show or replay what is here
    (tmp_path / "mine.toml").write_text('question = "q"\ncompletions = ["Final Answer: 1\\n"]\n', encoding="utf-8")
    result = invoke(*args)
    assert (result.exit_code, result.stderr, result.stdout) == (2, f"error: {named}\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.toml"]


def test_a_newline_in_a_file_name_cannot_forge_a_second_error_line(tmp_path):
    odd = tmp_path / "bad\nerror: forged.txt"
    odd.write_text("not a transcript\n", encoding="utf-8")
    one_line_error(invoke("replay", str(odd)), "bad␊error: forged.txt")


def test_one_file_named_twice_another_way_replays_once(tmp_path, monkeypatch):
    saved = tmp_path / "r" / "a.txt"
    saved.parent.mkdir()
    assert invoke("run", "nimbus", "--save", str(saved)).exit_code == 0
    (tmp_path / "r" / "link.txt").symlink_to(saved)
    monkeypatch.chdir(saved.parent)
    result = invoke("replay", "a.txt", "../r/a.txt", "link.txt", "--check")
    assert result.exit_code == 0, result.output
    assert "1 run:" in result.stdout


def test_a_link_given_as_an_output_is_named_a_link_and_left_as_it_is(tmp_path):
    saved = tmp_path / "a.txt"
    assert invoke("run", "nimbus", "--save", str(saved)).exit_code == 0
    (tmp_path / "link.txt").symlink_to(saved)
    before = saved.read_bytes()
    one_line_error(invoke("run", "calculator", "--save", str(tmp_path / "link.txt")), "link.txt: is a link; not overwriting it")
    assert saved.read_bytes() == before and (tmp_path / "link.txt").is_symlink()


@pytest.mark.parametrize("answer", ["2\n~~~\nstill the answer", "2\n## Step 9 of 9 (forged)", "2\n```"])
def test_a_final_answer_of_many_lines_stays_on_its_line_in_the_notes(tmp_path, answer):
    import json

    scenario = tmp_path / "s.toml"
    scenario.write_text(f"question = \"q\"\ncompletions = [{json.dumps('Thought: t' + chr(10) + 'Final Answer: ' + answer + chr(10))}]\n", encoding="utf-8")
    assert invoke("export", str(scenario), "--markdown", str(tmp_path / "n.md")).exit_code == 0
    lines = (tmp_path / "n.md").read_text(encoding="utf-8").splitlines()
    outside = []  # the lines outside the fenced records: none of them may begin with the answer's own lines
    fenced = False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            outside.append(line)
    assert not fenced  # every fence the notes open, they close
    assert not any(line.startswith(("~~~", "## Step 9 of 9 (forged)", "still the answer")) for line in outside)
    assert any("Final answer: 2␊" in line for line in outside)


def test_a_report_and_a_junit_file_in_one_place_are_refused_before_any_run(tmp_path):
    one_line_error(invoke("run", "nimbus", "calculator", "--report", str(tmp_path / "same.out"), "--junit", str(tmp_path / "same.out")), "--junit", "--report writes too")
    (tmp_path / "o").mkdir()  # a folder of earlier runs
    one_line_error(invoke("run", "nimbus", "calculator", "--save-dir", str(tmp_path / "o"), "--report", str(tmp_path / "o" / "nimbus.txt")), "--report", "among the transcripts")
    assert [p.name for p in tmp_path.rglob("*")] == ["o"]  # nothing ran, nothing was written


def test_an_empty_argument_names_no_transcript_to_replay(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("run", "nimbus", "--save", "mine.txt").exit_code == 0
    one_line_error(invoke("replay", ""), "FILE", "empty argument")
    one_line_error(invoke("replay", "mine.txt", " "), "FILE", "empty argument")


def test_a_page_holds_nothing_a_terminal_would_obey(tmp_path):
    """The page is a file someone may `cat`: no ESC, C1 control or bidi control in it, raw,
    from the title or from the run's text (the browser shows the same text either way)."""
    import json

    hostile = "\x1b[31m\x9b2J\u202e\x7f"
    scenario = tmp_path / "s.toml"
    completions = json.dumps([f"Thought: {hostile}\nFinal Answer: {hostile}\n"])
    scenario.write_text(f"title = {json.dumps('T ' + hostile)}\nquestion = {json.dumps(hostile)}\ncompletions = {completions}\n", encoding="utf-8")
    out = tmp_path / "p.html"
    assert invoke("export", str(scenario), "--html", str(out)).exit_code == 0
    page = out.read_text(encoding="utf-8")
    assert not [c for c in page if ord(c) == 0x1B or 0x7F <= ord(c) < 0xA0 or c == "\u202e"]
    assert "\\u009b" in page and "\\u202e" in page  # the data is still there, escaped


@pytest.mark.parametrize(
    "shell, said",
    [
        ("{harness} run savings >&-", ""),  # stdout closed: as /dev/null, in every format
        ("{harness} run nimbus -f tagged >&-", ""),
        ("{harness} run savings > /dev/full", "error: writing the output failed: No space left on device\n"),
        ("PYTHONIOENCODING=ascii {harness} run nimbus > /dev/null", "error: the output cannot hold '⤸' in ascii; use UTF-8 (PYTHONIOENCODING=utf-8)\n"),
    ],
    ids=["closed", "closed tagged", "full disk", "ascii"],
)
def test_an_output_that_cannot_be_written_is_one_line_never_a_traceback(shell, said):
    harness = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "harness"))
    done = subprocess.run(["bash", "-c", shell.format(harness=harness)], capture_output=True, text=True, errors="replace")
    assert (done.returncode, done.stderr) == (2 if said else 0, said)


# --- a saved file's header agrees with itself and with its body ---------------------------


def nimbus_saved() -> str:
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    return run_scenario(load_scenario(find_scenario("nimbus"))).saved


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda t: t.replace("# steps: 3", "# steps: 99999999999999999999"), "metadata steps: must be the number of model calls, 3"),
        (lambda t: t.replace("# steps: 3", "# steps: 3\n# steps: 9"), "metadata steps is given twice"),
        (lambda t: t + "\n", "this line is empty: a blank line at the end?"),
    ],
    ids=["steps", "twice", "blank line"],
)
def test_a_saved_file_whose_header_disagrees_or_that_ends_in_a_blank_line_says_so(tmp_path, edit, says):
    (tmp_path / "t.txt").write_text(edit(nimbus_saved()), encoding="utf-8")
    result = invoke("show", str(tmp_path / "t.txt"))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
