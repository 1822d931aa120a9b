"""Real models behind the one `stream` method, chosen by a spec string:

    model_from_spec("openai:smollm2", "http://127.0.0.1:8080/v1")  # any OpenAI-compatible server
    model_from_spec("local")                                       # llama.cpp in process, SmolLM2
    model_from_spec("local:models/qwen2.5-0.5b-instruct.gguf")      # llama.cpp in process, any GGUF

Each backend is imported only when it is chosen, so `harness --help` does not pay for
httpx or llama.cpp, and the local extra stays optional. `scripted` is not built here: its
completions come from the scenario.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.model import Model

SPECS = "local, local:PATH or openai:NAME"


def model_from_spec(spec: str, base_url: str | None = None) -> Model:
    kind, colon, rest = spec.partition(":")
    if kind == "openai":
        if not rest.strip():
            raise HarnessError("--model", "openai:NAME needs the server's model name after the colon, e.g. openai:smollm2")
        from harness.backends.server import ServerModel

        return ServerModel(rest, base_url)
    if base_url is not None:
        raise HarnessError("--base-url", f"only an openai:NAME model talks to a server, not {spec!r}")
    if kind == "local":
        if colon and not rest:
            raise HarnessError("--model", "local:PATH needs a GGUF file after the colon (or plain `local` for SmolLM2)")
        from harness.backends.local import LocalModel

        return LocalModel(rest or None)
    if spec == "scripted":
        raise HarnessError("--model", "scripted plays a scenario's own completions: run a scenario without --model")
    raise HarnessError("--model", f"unknown model {spec!r} (use {SPECS})")
