"""The command line, driven through typer's CliRunner: whole outputs and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.scenario import shipped_scenarios
from harness.transcript import HEADER

runner = CliRunner()
RECORD_OR_META = ("developer |", "developer \\", "model     |", "model     \\", "code      |", "code      \\", "# ")


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_tagged_output_is_only_save_format_lines_and_the_fake_observation_is_cut():
    result = invoke("run", "transcripts/nimbus.toml", "--format", "tagged")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == HEADER
    assert all(line.startswith(RECORD_OR_META) for line in lines[1:])
    records = [line for line in lines if not line.startswith("# ")]
    assert not any("quota was fine" in line for line in records)
    assert "code      | Observation: 99.8 GB of 100 GB used" in lines


def test_no_stop_lets_the_fake_observation_in_tagged_as_the_models():
    result = invoke("run", "nimbus", "--format", "tagged", "--no-stop")
    assert result.exit_code == 0
    assert "model     | Observation: quota was fine, must be a network issue" in result.stdout.splitlines()
    assert '# final_answer: "A network issue is blocking your uploads; check your connection."' in result.stdout


def test_rich_output_has_legend_cut_text_steps_and_stop_reason():
    result = invoke("run", "nimbus")
    assert result.exit_code == 0
    assert result.stdout.startswith("authors:  developer   model   code")
    assert "model     │ Action: check_quota(nimbus)\n" in result.stdout
    assert "✂ cut by the stop sequence, never in the buffer: Observation: quota was fine" in result.stdout
    assert "── call 2 · the model is sent the whole buffer: 751 characters" in result.stdout
    assert "stopped: final_answer after 3 calls" in result.stdout


def test_live_draws_the_same_view_and_refuses_other_formats():
    assert invoke("run", "nimbus", "--live", "--delay", "0").stdout == invoke("run", "nimbus").stdout
    assert "--live" in bad("run", "nimbus", "--live", "--format", "tagged")


def test_events_format_is_json_lines_in_order():
    import json

    events = [json.loads(line) for line in invoke("run", "calculator", "--format", "events").stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "appended" and kinds[-1] == "stopped"
    assert kinds.index("round_started") < kinds.index("text_delta") < kinds.index("completion_ended") < kinds.index("tool_result")
    rounds = [e["prompt_chars"] for e in events if e["event"] == "round_started"]
    usage = [e for e in events if e["event"] == "usage"]
    assert [u["prompt_chars"] for u in usage] == rounds  # the whole buffer, every call
    assert usage[-1]["total_prompt_chars"] == sum(rounds)


def test_json_output_carries_spans_and_stop_reason():
    import json

    data = json.loads(invoke("run", "calculator", "--format", "json").stdout)
    assert (data["stop_reason"], data["final_answer"], data["steps"]) == ("final_answer", "The train covers 303 km.", 2)
    assert "".join(s["text"] for s in data["spans"]) == data["buffer"]


@pytest.mark.parametrize("path", shipped_scenarios(), ids=lambda p: p.stem)
def test_save_then_replay_check_passes_for_every_shipped_scenario(path, tmp_path):
    saved = tmp_path / "t.txt"
    first = invoke("run", str(path), "--save", str(saved), "--format", "tagged")
    assert first.exit_code == 0  # so that `run --save t.txt && replay t.txt --check` works for each
    assert saved.read_text(encoding="utf-8") == first.stdout
    check = invoke("replay", str(saved), "--check")
    assert check.exit_code == 0, check.output
    assert check.stdout.startswith("ok: replaying")


def test_an_edited_observation_fails_the_check_with_a_diff(tmp_path):
    saved = tmp_path / "t.txt"
    assert invoke("run", "nimbus", "--save", str(saved), "-f", "tagged").exit_code == 0
    text = saved.read_text(encoding="utf-8")
    saved.write_text(text.replace("code      | Observation: 99.8 GB", "code      | Observation: 12.0 GB"), encoding="utf-8")
    check = invoke("replay", str(saved), "--check")
    assert check.exit_code == 1
    assert "-code      | Observation: 12.0 GB of 100 GB used" in check.stdout
    assert "+code      | Observation: 99.8 GB of 100 GB used" in check.stdout


def test_show_prints_a_saved_transcript(tmp_path):
    saved = tmp_path / "t.txt"
    invoke("run", "paper-river", "--save", str(saved))
    shown = invoke("show", str(saved))
    assert shown.exit_code == 0
    assert "code      │ Thought 1: ⤸\nmodel     │  I need to find" in shown.stdout  # one buffer line, two authors
    assert "stopped: final_answer after 3 calls" in shown.stdout
    assert invoke("show", str(saved), "-f", "tagged").stdout == saved.read_text(encoding="utf-8")


def test_list_names_every_shipped_scenario():
    result = invoke("list")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == [p.stem for p in shipped_scenarios()]  # after the header


def test_max_steps_overrides_the_scenario():
    result = invoke("run", "nimbus", "--max-steps", "1", "-f", "tagged")
    assert '# stop_reason: "max_steps"' in result.stdout and "# steps: 1" in result.stdout


# --- bad input: one line on stderr, exit 2, nothing overwritten ----------------------


def bad(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


def test_missing_scenario_file(tmp_path):
    assert "nowhere.toml: no such file" in bad("run", str(tmp_path / "nowhere.toml"))


def test_malformed_toml(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('question = "unclosed\n', encoding="utf-8")
    message = bad("run", str(path))
    assert "broken.toml: malformed TOML" in message and "line 1" in message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('question = "q"\ndialect = "klingon"\n', "dialect: unknown dialect 'klingon'"),
        ('question = "q"\nmax_step = 3\n', "max_step: unknown field"),
        ('question = "q"\nmax_steps = -1\n', "max_steps: must be a whole number"),
        ("completions = []\n", "question: is required"),
        ('question = "q"\ncompletions = [1]\n', "completions: must be a list of strings"),
        ('question = "q"\nprompt = "nope"\n', "prompt: no template named 'nope'"),
        ('question = "q"\n[tools.search]\ndescription = "x"\n', "tools.search.results: is required"),
        ('question = "q"\n[tools.search]\nresults = { a = "b" }\n', "tools.search.description: is required"),
        ('question = "q"\n[tools.calculator]\ntrait = "bold"\n', "tools.calculator.trait: must be one of"),
        ('question = "q"\n[tools.calculator]\ndescription = 5\n', "tools.calculator.description: must be a string"),
        ('question = "q"\n[tools.calculator]\ndescription = "d"\n', "tools.calculator.description: does not go with the built-in"),
        ('question = "q"\n[tools.calculator]\nparams = "x"\n', "tools.calculator.params: must be a list of parameter names"),
        ('question = "q"\n[tools.s]\ndescription = "d"\nresults = {}\nparams = [1]\n', "tools.s.params: must be a list of"),
        ('question = "q"\n[tools.s]\ndescription = "d"\nresults = {}\ndefault = 0\n', "tools.s.default: must be a string"),
        ('question = "q"\n[tools.s]\ndescription = "d"\nresults = {a = 1}\n', "tools.s.results: must be a table of strings"),
        ('question = "q"\n[tools.s]\ndescription = "d"\nresults = ["a"]\n', "tools.s.results: must be a table of strings"),
        ('question = "q"\n[tools.s]\ndescription = "d"\nresults = {}\nexample = 3\n', "tools.s.example: must be one line"),
        ('question = "q"\n[tools.s]\npython = "m:f"\ntrait = 1\n', "tools.s.trait: must be one of"),
        ('question = "q"\nworkspace = {"../x" = "a"}\n', "workspace: '../x' has a '..' segment"),
        ('question = "q"\nworkspace = {"/etc/x" = "a"}\n', "workspace: '/etc/x' is absolute"),
        ('question = "q"\nworkspace = {"" = "a"}\n', "workspace: path must be a non-empty string"),
        ('question = "q"\nworkspace = {"a/" = "a"}\n', "workspace: 'a/' is not a file name"),
    ],
)
def test_bad_scenario_fields_are_named(tmp_path, body, field):
    path = tmp_path / "s.toml"
    path.write_text(body, encoding="utf-8")
    assert f"s.toml: {field}" in bad("run", str(path))


def test_negative_max_steps():
    assert "--max-steps" in bad("run", "nimbus", "--max-steps", "-1")


def test_a_saved_file_with_a_bad_record(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(f"{HEADER}\nrobot     | hello\n", encoding="utf-8")
    assert "t.txt:2: a record must read" in bad("show", str(path))
    assert "t.txt:2: a record must read" in bad("replay", str(path), "--check")


def test_save_refuses_to_overwrite_a_file_that_is_not_a_transcript(tmp_path):
    precious = tmp_path / "notes.txt"
    precious.write_text("my notes\n", encoding="utf-8")
    assert "not overwriting" in bad("run", "nimbus", "--save", str(precious))
    assert precious.read_text(encoding="utf-8") == "my notes\n"
    assert "existing folder" in bad("run", "nimbus", "--save", str(tmp_path / "no" / "t.txt"))


def test_no_arguments_prints_help():
    result = invoke()
    assert result.exit_code == 0 and "Usage: harness" in result.stdout


def test_python_dash_m_runs_the_same_command():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "harness", "list"], capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert done.returncode == 0 and "nimbus" in done.stdout
