"""A prompt of several hundred tokens through llama.cpp: the local model and a server.

llama.cpp's native build enables AMX matrix code on CPUs that advertise it, and that code
crashes (a segmentation fault) on the first batch of more than one token: a one-token
prompt passes, a real prompt kills the process. `.ci/run` and the README build llama.cpp
for any x86-64 CPU with AVX2 (CMAKE_ARGS="-DGGML_NATIVE=OFF"). These tests run the command
as a user does, in its own process: a crash shows as a model_error or an exit by a signal.

`bash .ci/run` installs the local extra, starts the server and sets HARNESS_TEST_SERVER;
elsewhere these tests skip, and with CI set they fail instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import Author, load_record

# About 60 tokens a sentence, ten of them: a prompt of several hundred tokens in all.
CONTEXT = " ".join(
    f"Warehouse {n} holds {n * 37} crates of tinned tomatoes, {n * 11} crates of olive oil and "
    f"{n * 5} pallets of flour, and it ships to {n + 2} shops every week by lorry."
    for n in range(1, 11)
)


def need(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"this test must run in CI: {reason}")
    pytest.skip(f"{reason} (bash .ci/run runs it)")


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "long.toml"
    path.write_text(
        'title = "A long prompt"\nprompt = "chatml"\n'
        f'question = "{CONTEXT} How many crates of olive oil does warehouse 4 hold?"\n'
        "max_steps = 1\ncompletions = []\n\n[tools.calculator]\n",
        encoding="utf-8",
    )
    return path


def run(scenario: Path, *model: str) -> tuple[subprocess.CompletedProcess, Path]:
    saved = scenario.with_suffix(".txt")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", str(scenario), *model, "--max-tokens", "24", "--save", str(saved), "-f", "tagged"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done, saved


def check(done: subprocess.CompletedProcess, saved: Path) -> None:
    assert done.returncode >= 0, f"harness died of signal {-done.returncode}: {done.stderr[-2000:]}"
    assert done.returncode == 0, done.stderr[-2000:]
    record = load_record(saved.read_text(encoding="utf-8"), str(saved))
    assert record.stop_reason != "model_error", record.detail
    tokens = record.calls[0].tokens
    assert tokens is not None and tokens["prompt_tokens"] >= 300, tokens  # the long prompt was evaluated
    assert record.transcript.texts_by(Author.MODEL)[0].strip(), "the model wrote nothing"


def test_a_long_prompt_runs_through_the_local_model(scenario):
    try:
        import llama_cpp  # noqa: F401

        from harness.backends.local import smollm2_path

        smollm2_path()
    except Exception as e:  # not installed, or the model file is missing
        need(f"the local model is not available: {e}")
    check(*run(scenario, "--model", "local"))


def test_a_long_prompt_runs_through_the_server(scenario):
    url = os.environ.get("HARNESS_TEST_SERVER")
    if not url:
        need("HARNESS_TEST_SERVER is not set")
    check(*run(scenario, "--model", "openai:smollm2", "--base-url", url))
