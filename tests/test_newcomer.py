"""The small things a newcomer meets first: the version, completion, `list`, and the hints
an error gives when a file is not what a command takes."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import harness
from harness.cli import app

runner = CliRunner()
ROOT = Path(__file__).parent.parent


def invoke(*args: str, **env: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "120", "NO_COLOR": "1", **env})


def test_harness_version_prints_the_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"harness {harness.__version__}\n"


def test_the_shell_completes_scenario_names_for_run():
    def complete(line: str) -> list[str]:
        env = {"_HARNESS_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(line.split()) - 1)}
        result = runner.invoke(app, [], prog_name="harness", env=env)
        assert result.exit_code == 0
        return result.stdout.split()

    assert complete("harness run n") == ["nimbus"]
    assert complete("harness run governed-") == ["governed-late", "governed-prefix", "governed-research"]


def test_list_has_a_header_that_names_its_columns():
    lines = invoke("list").stdout.splitlines()
    assert lines[0].split() == ["scenario", "dialect", "what", "it", "shows"]
    assert lines[1].split()[:2] == ["calc-fix", "default"]


def test_show_and_replay_of_a_scenario_say_to_run_it():
    for command in ("show", "replay"):
        result = invoke(command, "transcripts/nimbus.toml")
        assert result.exit_code == 2
        assert result.stderr.strip().endswith("transcripts/nimbus.toml is a scenario: run it with `harness run transcripts/nimbus.toml`")


def test_a_failed_replay_check_ends_its_diff_with_a_newline_and_names_harness_update(tmp_path):
    saved = tmp_path / "n.txt"
    invoke("run", "nimbus", "--save", str(saved))
    text = saved.read_text(encoding="utf-8")
    saved.write_text(text.replace("Observation: 99.8 GB", "Observation: 42 GB"), encoding="utf-8")
    result = invoke("replay", str(saved), "--check")
    assert result.exit_code == 1
    assert result.stdout.endswith("\n") and "first difference in step 1" in result.stdout
    assert "--harness-update" in result.stderr
