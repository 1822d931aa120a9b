"""The local model's process can only talk to harness through its protocol.

llama.cpp runs in a child process (harness.backends.worker) that answers on a channel of
its own. These tests put a stand-in `llama_cpp` on the child's path (no real model
needed): one whose "native code" prints to fd 1, which must not reach the channel, and
ones that break the protocol (not JSON, not an object, a missing or ill-shaped value),
which must end the run as model_error through the command: exit 3, one line, run saved.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import load_record

FAKE = '''
"""A stand-in for llama-cpp-python, set by the environment variable FAKE_LLAMA."""
import os
import sys

MODE = os.environ.get("FAKE_LLAMA", "")
ANSWER = "Thought: I know it.\\nFinal Answer: 10541 square metres\\n"


def channel(raw: bytes) -> None:
    """Bytes straight into the worker's own channel, as a stray write of native code would."""
    out = sys.modules["__main__"].CHANNEL
    out.flush()
    os.write(out.fileno(), raw)


class Llama:
    def __init__(self, model_path, **options):
        os.write(1, b"llama.cpp: loading model ...\\n")  # native code's own chatter, on fd 1
        print("a library's print, on sys.stdout")

    def n_ctx(self):
        return 4096

    def tokenize(self, text, add_bos, special):
        return ["a"] if MODE == "tokens-not-numbers" else list(range(len(text) // 4 + 1))

    def reset(self):
        pass

    def eval(self, batch):
        pass

    def create_completion(self, tokens, stop=None, stream=True, **sampling):
        self.eval(tokens)
        os.write(1, b"\\x00garbage from native code, no newline")
        if MODE == "not-json":
            channel(b"Segmentation fault handler: dumping state\\n")
        elif MODE == "not-an-object":
            channel(b"[1, 2]\\n")
        elif MODE == "usage-ill-shaped":
            channel(b'{"usage": "many"}\\n')
        elif MODE == "no-field":
            channel(b"{}\\n")
        for piece in ([42] if MODE == "text-a-number" else [ANSWER[:10], ANSWER[10:]]):
            yield {"choices": [{"text": piece}]}
'''


@pytest.fixture
def fake_llama(tmp_path, monkeypatch):
    """A model file, and the stand-in `llama_cpp` on this process's path and the child's."""
    (tmp_path / "fake" / "llama_cpp").mkdir(parents=True)
    (tmp_path / "fake" / "llama_cpp" / "__init__.py").write_text(textwrap.dedent(FAKE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "fake"), os.environ.get("PYTHONPATH", "")]))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return model


def run(model: Path, saved: Path, mode: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "run", "live-area", "--model", f"local:{model}", "--save", str(saved)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "FAKE_LLAMA": mode})


def test_what_native_code_prints_on_fd_1_never_reaches_harness(fake_llama, tmp_path):
    done = run(fake_llama, tmp_path / "run.txt", "")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    record = load_record((tmp_path / "run.txt").read_text(encoding="utf-8"), "run.txt")
    assert record.stop_reason == "final_answer"
    assert "10541 square metres" in record.transcript.text
    assert "garbage" not in record.transcript.text and "llama.cpp: loading" not in done.stdout


@pytest.mark.parametrize("mode", ["not-json", "not-an-object", "usage-ill-shaped", "no-field", "text-a-number", "tokens-not-numbers"])
def test_a_process_that_breaks_the_protocol_ends_the_run_as_model_error(fake_llama, tmp_path, mode):
    saved = tmp_path / "run.txt"
    done = run(fake_llama, saved, mode)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    said = done.stderr.strip().splitlines()
    assert said[0].startswith("error: model_error: the local model's process broke its protocol"), done.stderr
    assert said[1:] == [f"wrote {saved}"], done.stderr
    record = load_record(saved.read_text(encoding="utf-8"), str(saved))
    assert record.stop_reason == "model_error" and "broke its protocol" in record.detail
