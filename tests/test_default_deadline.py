"""Every call to a live model has a total time bound, also when nobody sets one (issue 30
item 6): 300 s by default, named in `--help`. A server that drips one byte at a time would
otherwise hold a run for ever, since each read alone is quick.

The test does not wait five minutes: harness's clock (`time.monotonic`, as harness.model
reads it) jumps 1,000 s once the call has begun, so only a bound that is really there ends
the call, and its message names the default.
"""

from __future__ import annotations

import time
import types

import pytest
from typer.testing import CliRunner

import harness.model
from harness.cli import app
from tests.loopback import FakeServer, Reply, sse, text


@pytest.fixture
def dripping():
    server = FakeServer()
    server.serve(Reply(chunks=sse(text("Thought: slow"), text("", "stop")), drip=0.01))
    yield server
    server.close()


@pytest.fixture
def late_clock(monkeypatch):
    """harness.model's clock: real until the first deadline is set, then 1,000 s later."""
    calls = []

    def monotonic() -> float:
        calls.append(1)
        return time.monotonic() + (1000.0 if len(calls) > 1 else 0.0)

    monkeypatch.setattr(harness.model, "time", types.SimpleNamespace(monotonic=monotonic))


def test_run_without_max_seconds_still_bounds_the_call_by_the_default(dripping, late_clock, tmp_path):
    saved = tmp_path / "run.txt"
    args = ["run", "calculator", "--model", "openai:m", "--base-url", dripping.url, "--save", str(saved)]
    result = CliRunner().invoke(app, args, env={"NO_COLOR": "1", "HARNESS_BASE_URL": ""})
    assert result.exit_code == 3, result.output
    assert "time limit of 300 s" in result.output
    assert '# stop_reason: "model_error"' in saved.read_text(encoding="utf-8")


def test_the_default_is_named_where_the_option_is_described():
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert "--max-seconds" in result.output and "default 300" in result.output
