"""Issue 31, items 9 and 11: `--format json` says what the save format says (a model
error's detail, the calls, the source, the model), and `harness replay DIR --update`
accepts a folder's new replays in one command, never replacing a file whose replay failed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from harness.saved import load_record
from tests.test_batch import scenario

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_json_of_a_model_error_run_holds_its_detail_calls_source_and_model(tmp_path):
    path = scenario(tmp_path, "broken", more='model_error = { step = 2, message = "HTTP 503: loading" }')
    result = invoke("run", str(path), "--format", "json", "--save", str(tmp_path / "broken.txt"))
    assert result.exit_code == 0, result.output  # a scripted failure is the scenario's own demo
    data = json.loads(result.stdout)
    assert (data["stop_reason"], data["detail"], data["model"]) == ("model_error", "HTTP 503: loading", "")
    assert data["calls"] == [{"ran": ["calculator"], "notices": []}]
    assert data["source"]["scenario"].endswith("broken.toml") and len(data["source"]["sha256"]) == 64
    saved = load_record((tmp_path / "broken.txt").read_text(encoding="utf-8"))
    assert data["calls"] == [c.to_meta() for c in saved.calls]  # the save format's own fields, not a copy of them


def test_replay_update_rewrites_the_drifted_file_names_it_and_leaves_the_failed_one(tmp_path):
    out = tmp_path / "out"
    scenario(tmp_path, "drifted", a=300, b=3)
    gone = scenario(tmp_path, "failed")
    assert invoke("run", str(tmp_path / "drifted.toml"), str(gone), "--save-dir", str(out)).exit_code == 0
    drifted, failed = out / "drifted.txt", out / "failed.txt"
    right = drifted.read_text(encoding="utf-8")
    drifted.write_text(right.replace("Observation: 303", "Observation: 304"), encoding="utf-8")
    gone.unlink()  # its replay cannot be built: the file must stay as it is
    before = failed.read_bytes()

    result = invoke("replay", str(out), "--update")
    assert result.exit_code == 2, result.output
    assert drifted.read_text(encoding="utf-8") == right
    assert failed.read_bytes() == before
    replaced = [line for line in result.stderr.splitlines() if line.startswith("replaced")]
    assert replaced == [f"replaced {drifted}"]
    assert any(line.startswith(f"error: {failed}") for line in result.stderr.splitlines())
    assert "call 2's recorded turn was kept" in result.stderr  # it answered "304", which the model never read
    assert invoke("replay", str(drifted), "--check").exit_code == 0


def test_replay_update_of_files_that_replay_the_same_replaces_nothing(tmp_path):
    out = tmp_path / "out"
    scenario(tmp_path, "same")
    assert invoke("run", str(tmp_path / "same.toml"), "--save-dir", str(out)).exit_code == 0
    before = (out / "same.txt").read_bytes()
    result = invoke("replay", str(out / "same.txt"), "--update")
    assert result.exit_code == 0, result.output
    assert "replaced" not in result.stderr and (out / "same.txt").read_bytes() == before


def test_replay_update_goes_alone(tmp_path):
    result = invoke("replay", "x.txt", "--update", "--check")
    assert result.exit_code == 2 and result.stderr.startswith("error: --update")


def test_replay_update_never_replaces_a_file_with_a_replay_that_broke_off(tmp_path):
    """Its recorded turns ran out before the run ended (model_exhausted, where the recording
    ended with a final answer): an incomplete cassette is never written over a whole one."""
    out = tmp_path / "out"
    scenario(tmp_path, "short")
    assert invoke("run", str(tmp_path / "short.toml"), "--save-dir", str(out)).exit_code == 0
    saved = out / "short.txt"
    saved.write_text(saved.read_text(encoding="utf-8").replace("Final Answer: 3", "Final Answer 3"), encoding="utf-8")
    before = saved.read_bytes()
    result = invoke("replay", str(out), "--update")
    assert result.exit_code == 2, result.output
    assert saved.read_bytes() == before and "replaced" not in result.stderr
    assert f"error: {saved}: the replay did not complete (model_exhausted); the file was left as it was" in result.stderr
