"""A real Ctrl-C (SIGINT) in the middle of a streaming run: canceled, and the file is saved."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.record import replay
from harness.transcript import loads

ROOT = Path(__file__).parent.parent


def test_ctrl_c_while_the_model_streams_keeps_the_shown_text_and_saves_the_file(tmp_path):
    saved = tmp_path / "t.txt"
    command = [sys.executable, "-m", "harness", "run", "nimbus", "--delay", "0.2", "--save", str(saved)]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)  # imports, then a few 8-character pieces of step 1 at 0.2 s each
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "stopped: canceled" in out
    transcript, meta = loads(saved.read_text(encoding="utf-8"))
    assert meta["stop_reason"] == "canceled"
    partial = transcript.spans[-1]
    assert partial.author == "model" and partial.text and "Thought: Failing uploads".startswith(partial.text[:24])
    assert partial.text in out.replace("model     │ ", "")  # what was kept is what the user saw
    assert replay(saved.read_text(encoding="utf-8"), "t.txt").matches
    again = subprocess.run([sys.executable, "-m", "harness", "replay", str(saved), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr  # the recording's Ctrl-C is no Ctrl-C now


def test_a_ctrl_c_that_a_tool_s_library_turns_into_its_own_error_cancels_the_run():
    # it was the tool's observation, and the model went on to its answer as if no key was pressed
    from harness import Agent, ScriptedModel
    from harness.events import StopReason

    def fetch(url):
        """Fetch a page."""
        try:
            raise KeyboardInterrupt  # (as a Ctrl-C lands in a library's read)
        except KeyboardInterrupt:
            raise RuntimeError("connection aborted") from None

    agent = Agent(prompt="Tools: $tools\nQuestion: $question\n", tools=[fetch])
    record = agent.run("q", ScriptedModel(["Action: fetch(a)\n", "Final Answer: done\n"]))
    assert record.stop_reason == StopReason.CANCELED and "connection aborted" not in record.transcript.text


def test_a_ctrl_c_that_a_tool_module_s_import_turns_into_its_own_error_is_a_ctrl_c(tmp_path):
    # it was "the module failed to import": in a batch, that one run "not run", the key press lost
    import pytest

    from harness import load_scenario, run_scenario

    (tmp_path / "slow.py").write_text("try:\n    raise KeyboardInterrupt\nexcept KeyboardInterrupt:\n    raise RuntimeError('import cut short') from None\n", encoding="utf-8")
    (tmp_path / "s.toml").write_text('question = "q"\ncompletions = ["Final Answer: 1"]\n[tools.slow]\npython = "slow:slow"\n', encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        run_scenario(load_scenario(tmp_path / "s.toml"))
