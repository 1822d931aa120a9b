"""A scenario with its own prompt template and Python tools: where they may be, and what a
user sees when one is missing, outside the folder, or fails to import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def one_line(result, *words: str) -> str:
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("error: ") and "Traceback" not in result.output
    assert result.stdout == ""  # nothing drawn before the error: the run never started
    for word in words:
        assert word in line, line
    return line


def scenario(folder: Path, tool: str = "tools:lookup", **extra: str) -> Path:
    (folder / "prompts").mkdir(parents=True, exist_ok=True)
    (folder / "prompts" / "mine.txt").write_text("My own words.\n$tools\nAsk: $question\nAnswer below.\n", encoding="utf-8")
    (folder / "tools.py").write_text('def lookup(key):\n    """Look a key up."""\n    return {"a": "1"}[key]\n', encoding="utf-8")
    lines = ['question = "a?"', 'prompt_file = "prompts/mine.txt"', 'completions = ["Action: lookup(a)\\n", "Action: lookup(b)\\n", "Final Answer: 1\\n"]']
    lines += [f"{k} = {v}" for k, v in extra.items()]
    lines += ["[tools.lookup]", f'python = "{tool}"']
    path = folder / "s.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_template_and_a_tool_beside_the_scenario_are_found_from_anywhere(tmp_path, monkeypatch):
    path = scenario(tmp_path / "agent")
    monkeypatch.chdir(tmp_path)  # relative to the scenario, not to where harness runs
    result = invoke("run", str(path), "-f", "tagged", "--save", str(tmp_path / "agent" / "run.txt"))
    assert result.exit_code == 0, result.output
    assert "developer | My own words." in result.stdout and "developer | - lookup(key): Look a key up." in result.stdout
    assert "code      | Observation: 1" in result.stdout
    assert "code      | Observation: Error: KeyError: 'b'" in result.stdout  # a tool that raises is an observation
    assert invoke("replay", str(tmp_path / "agent" / "run.txt"), "--check").exit_code == 0


@pytest.mark.parametrize("tool", ["../tools:lookup", "/abs/tools:lookup", "tools", "tools:look up"])
def test_a_tool_spec_that_is_not_module_colon_function_is_refused(tmp_path, tool):
    one_line(invoke("run", str(scenario(tmp_path, tool))), "tools.lookup.python")


def test_a_tool_module_that_fails_to_import_names_the_scenario_and_the_module(tmp_path):
    path = scenario(tmp_path)
    (tmp_path / "tools.py").write_text("import nowhere_to_be_found\n", encoding="utf-8")
    one_line(invoke("run", str(path)), str(path), "tools.lookup.python", "'tools' failed to import", "ModuleNotFoundError")


def test_a_missing_module_or_function_is_named(tmp_path):
    one_line(invoke("run", str(scenario(tmp_path, "elsewhere:lookup"))), "no module 'elsewhere'")
    one_line(invoke("run", str(scenario(tmp_path, "tools:missing"))), "has no function 'missing'")


def test_a_python_tool_takes_no_description_params_or_results(tmp_path):
    path = scenario(tmp_path)
    path.write_text(path.read_text(encoding="utf-8") + 'description = "ignored?"\n', encoding="utf-8")
    one_line(invoke("run", str(path)), "tools.lookup.description", "does not go with python")


@pytest.mark.parametrize("prompt", ['"default"', '"react-paper"'])
def test_a_prompt_and_a_prompt_file_together_are_refused_naming_both(tmp_path, prompt):
    one_line(invoke("run", str(scenario(tmp_path, prompt=prompt))), "s.toml: prompt_file", "instead of prompt")


@pytest.mark.parametrize(
    ("code", "kind"),
    [("async def lookup(key):\n    return key\n", "an async function"),
     ("async def lookup(key):\n    yield key\n", "an async generator function")],
)
def test_an_async_python_tool_is_refused_when_the_tool_is_made(tmp_path, code, kind):
    path = scenario(tmp_path)
    (tmp_path / "tools.py").write_text(code, encoding="utf-8")
    one_line(invoke("run", str(path)), "s.toml: tools.lookup.python: lookup is " + kind)


UNREADABLE = {  # a callable whose parameters Python cannot read, or whose docstring raises
    "itemgetter": "import operator\nlookup = operator.itemgetter(0)\n",
    "doc raises": "class Lookup:\n    @property\n    def __doc__(self):\n        raise RuntimeError('no')\n    def __call__(self, key):\n        return key\nlookup = Lookup()\n",
}


@pytest.mark.parametrize("code", UNREADABLE.values(), ids=UNREADABLE)
def test_a_python_tool_harness_cannot_read_is_one_line_alone_and_one_run_not_run_in_a_batch(tmp_path, code):
    path = scenario(tmp_path)
    (tmp_path / "tools.py").write_text(code, encoding="utf-8")
    one_line(invoke("run", str(path)), "s.toml: tools.lookup.python:", "its parameters or docstring cannot be read")
    batch = invoke("run", str(path), "nimbus", "--report", str(tmp_path / "r.json"))
    assert batch.exit_code == 2 and "Traceback" not in batch.output, batch.output
    assert [(r["scenario"], r["stop_reason"]) for r in json.loads((tmp_path / "r.json").read_text())["runs"]] == [("s", None), ("nimbus", "final_answer")]
