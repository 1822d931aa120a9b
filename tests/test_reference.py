"""The reference the README points to is complete: each format's module docstring names
every value a user meets (stop reasons, notice codes, scenario fields, metadata keys),
and the command's help says the exit codes and the default server."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from typer.testing import CliRunner

import harness.events
import harness.notices
import harness.scenario
import harness.transcript
from harness import find_scenario, load_scenario, run_scenario
from harness.backends.server import DEFAULT_BASE_URL
from harness.cli import app

ROOT = Path(__file__).parent.parent
runner = CliRunner()


def test_every_stop_reason_is_described_in_harness_events():
    for reason in harness.events.StopReason:
        assert re.search(rf"^    {reason.value}\s", harness.events.__doc__, flags=re.MULTILINE), reason.value


def test_every_notice_code_is_described_in_harness_notices():
    codes = set(re.findall(r'"((?:protocol_violation|gate|prefix)\.\w+)"', Path(harness.notices.__file__).read_text(encoding="utf-8")))
    assert len(codes) >= 14
    for code in codes:
        assert re.search(rf"^    {re.escape(code)}\s", harness.notices.__doc__, flags=re.MULTILINE), code


def test_every_scenario_field_a_file_can_set_is_described_in_harness_scenario():
    internal = {f.name for f in dataclasses.fields(harness.scenario.Scenario) if not f.compare}
    for field in dataclasses.fields(harness.scenario.Scenario):
        if field.name not in internal:
            assert re.search(rf"\b{field.name}\b", harness.scenario.__doc__), field.name


def test_every_metadata_key_a_run_writes_is_described_in_harness_transcript():
    keys = set()
    for name in ("nimbus", "model-error", "calc-fix"):
        saved = run_scenario(load_scenario(find_scenario(name))).saved
        keys |= set(re.findall(r"^# (\w+): ", saved, flags=re.MULTILINE))
    assert {"stop_reason", "detail", "calls", "source", "scenario"} <= keys
    for key in keys:
        assert re.search(rf"\b{key}\b", harness.transcript.__doc__), key


def test_the_readme_s_reference_modules_exist_and_say_something():
    section = ROOT.joinpath("README.md").read_text(encoding="utf-8").split("## Where to look things up", 1)[1].split("\n## ", 1)[0]
    modules = re.findall(r"harness\.\w+", section)
    assert len(modules) >= 6
    for name in modules:
        module = __import__(name, fromlist=["_"])
        assert len((module.__doc__ or "").splitlines()) >= 8, name


def test_harness_help_gives_the_exit_codes():
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for code in ("0 done", "1 a check failed", "2 bad input", "3 a live model failed", "130 interrupted"):
        assert code in text


def test_base_url_s_help_names_the_server_a_model_talks_to_without_one():
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert DEFAULT_BASE_URL in " ".join(result.stdout.split())
