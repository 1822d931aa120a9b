"""Every shipped scenario: its whole transcript is a snapshot, and its replay is exact."""

from __future__ import annotations

import pytest

from harness.record import replay, run_scenario
from harness.scenario import find_scenario, load_scenario, shipped_scenarios
from harness.transcript import Author, loads

SCENARIOS = shipped_scenarios()


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_transcript_matches_its_snapshot(path, text_snapshot):
    saved = run_scenario(load_scenario(path)).saved
    assert saved == text_snapshot


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_replaying_a_saved_scenario_gives_the_same_bytes(path):
    saved = run_scenario(load_scenario(path)).saved
    assert replay(saved, path.name).matches


def test_nimbus_without_the_stop_sequence_matches_its_snapshot(text_snapshot):
    path = next(p for p in SCENARIOS if p.stem == "nimbus")
    saved = run_scenario(load_scenario(path).but(use_stop=False)).saved
    assert saved == text_snapshot


def test_every_stop_reason_is_shown_by_a_shipped_scenario():
    reasons = {loads(run_scenario(load_scenario(p)).saved)[1]["stop_reason"] for p in SCENARIOS}
    assert reasons >= {
        "final_answer", "max_steps", "unknown_tool_limit", "format_error_limit",
        "model_exhausted", "canceled", "model_error",
    }  # fmt: skip


def test_nimbus_fake_observation_is_cut_and_only_code_writes_observations():
    path = next(p for p in SCENARIOS if p.stem == "nimbus")
    saved = run_scenario(load_scenario(path)).saved
    transcript, meta = loads(saved)
    assert "quota was fine" not in transcript.text
    assert meta["cuts"]["1"].startswith("Observation: quota was fine")
    for span in transcript.spans:
        if span.author is not Author.CODE:
            assert "Observation:" not in span.text.replace("Observation: the tool's result", "")


def test_every_notice_code_is_shown_by_a_shipped_scenario():
    import json

    from harness.render.json import event_line

    seen = set()
    for path in SCENARIOS:
        run_scenario(load_scenario(path), lambda e: seen.add(json.loads(event_line(e)).get("code")))
    assert seen >= {
        "protocol_violation.no_action", "protocol_violation.tool_call_invalid", "protocol_violation.unknown_tool",
        "protocol_violation.too_many_actions", "protocol_violation.action_after_answer",
        "gate.incompatible_action", "gate.answer_withheld", "prefix.rejected",
    }  # fmt: skip


@pytest.mark.parametrize("name", ["nimbus", "governed-research"])
def test_event_sequence_matches_its_snapshot(name, text_snapshot):
    from harness.render.json import event_line

    lines: list[str] = []
    run_scenario(load_scenario(next(p for p in SCENARIOS if p.stem == name)), lambda e: lines.append(event_line(e)))
    assert "\n".join(lines) + "\n" == text_snapshot


@pytest.mark.parametrize("name", ["./nimbus", "x/../nimbus", "../transcripts/nimbus"])
def test_a_path_is_never_taken_for_a_shipped_scenarios_name(name, tmp_path, monkeypatch):
    from harness.errors import ScenarioError
    from harness.scenario import find_scenario

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError, match="no such file, and no shipped scenario has that name"):
        find_scenario(name)
    assert find_scenario("nimbus").name == "nimbus.toml"


def test_a_scenario_s_tools_can_be_built_and_called_through_the_public_api(tmp_path):
    """What tests/eval/langchain_run.py needs: the tools a run would have, to call elsewhere."""
    from harness import ToolError, find_scenario, load_scenario

    (tmp_path / "desk.toml").write_text(
        'question = "q"\n[tools.calculator]\n[tools.stock]\npython = "desk_tools:stock"\n[tools.price]\npython = "desk_tools:price"\n',
        encoding="utf-8",
    )
    (tmp_path / "desk_tools.py").write_text(
        'SEEN = []\ndef stock(item):\n    "Stock."\n    SEEN.append(item)\n    return str(len(SEEN))\n'
        'def price(item):\n    "Price."\n    return str(len(SEEN))\n',
        encoding="utf-8",
    )
    calculator, stock, price = load_scenario(tmp_path / "desk.toml").build_tools()
    assert calculator.call(("2 + 3",), {}) == "5"
    assert (stock.call(("lamp",), {}), price.call(("lamp",), {})) == ("1", "1")  # one module, shared by its tools
    with pytest.raises(ToolError):
        calculator.call(("os.system('x')",), {})
    quota = load_scenario(find_scenario("nimbus")).build_tools()[0]
    assert quota.call(("nimbus",), {}) == "99.8 GB of 100 GB used"


def test_a_scenario_changed_in_python_saves_a_run_that_loads_and_replays():
    """scenario.but(question=...) is no longer the file it was loaded from: its run is saved
    with its scenario copy, not a source line the loader would refuse (only what a run
    changes, such as --max-steps, may be an override of its file)."""
    nimbus = load_scenario(find_scenario("nimbus"))
    asked = run_scenario(nimbus.but(question="Why do my uploads stop at 99%?"))
    assert "# source:" not in asked.saved and replay(asked.saved, "asked.txt").matches
    limited = run_scenario(nimbus.but(max_steps=2))
    assert '"overrides": {"max_steps": 2}' in limited.saved and replay(limited.saved, "limited.txt").matches


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("interrupt", {"step": 2, "at": 40}, (2, 40)),
        ("interrupt", [2, 40], (2, 40)),  # as a saved file's metadata holds it
        ("model_error", {"step": 1, "message": ""}, (1, "")),
        ("interrupt", {"step": 2}, "interrupt: must be a table with exactly step and at"),
        ("model_error", 5, "model_error: must be a table with exactly step and message"),
        ("interrupt", {"step": 0, "at": 1}, "interrupt.step: must be a whole number, 1 or more"),
        ("interrupt", {"step": True, "at": 1}, "interrupt.step: must be a whole number, 1 or more"),
        ("interrupt", {"step": 2, "at": -1}, "interrupt.at: must be a whole number, 0 or more"),
        ("interrupt", [2, "x"], "interrupt.at: must be a whole number, 0 or more"),
        ("model_error", {"step": "2", "message": ""}, "model_error.step: must be a whole number, 1 or more"),
        ("model_error", {"step": 2, "message": None}, "model_error.message: must be a string"),
    ],
)
def test_a_scripted_interrupt_or_model_error_is_a_pair_each_part_checked(field, value, said):
    from harness.errors import ScenarioError
    from harness.scenario import Scenario

    if isinstance(said, tuple):
        assert getattr(Scenario.from_dict({"question": "q", field: value}, "s.toml"), field) == said
        return
    with pytest.raises(ScenarioError) as error:
        Scenario.from_dict({"question": "q", field: value}, "s.toml")
    assert str(error.value) == f"s.toml: {said}"
