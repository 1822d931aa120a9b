"""Real models, chosen by a spec string (each backend imported only when chosen):

    model_from_spec("openai:smollm2", "http://127.0.0.1:8080/v1")  # an OpenAI-compatible completions server
    model_from_spec("chat:gpt-4o-mini", "https://api.openai.com/v1") # a chat endpoint
    model_from_spec("local")                                       # llama.cpp on this machine, SmolLM2
    model_from_spec("local:models/qwen2.5-0.5b-instruct.gguf")      # llama.cpp on this machine, any GGUF

Options are the command line's of the same name.
"""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError
from harness.model import Model

SPECS = "local, local:PATH, openai:NAME or chat:NAME"
SERVERS = ("openai", "chat")


def model_from_spec(spec: str, base_url: str | None = None, **options: Any) -> Model:
    kind, colon, rest = spec.partition(":")
    options = {k: v for k, v in options.items() if v is not None}
    if kind in SERVERS:
        if not rest.strip():
            raise HarnessError("--model", f"{kind}:NAME needs the server's model name after the colon, e.g. {kind}:smollm2")
        from harness.backends.server import ChatModel, ServerModel

        model: Model = (ChatModel if kind == "chat" else ServerModel)(rest, base_url, **options)
    else:
        options.pop("connections", None)  # a server's pool: a local model's calls take turns
        if base_url is not None:
            raise HarnessError("--base-url", f"only an openai:NAME or chat:NAME model talks to a server, not {spec!r}")
        for server_only in ("strict", "wait_for_server"):
            if options.pop(server_only, None) is not None:
                raise HarnessError("--" + server_only.replace("_", "-"), "goes with a server: openai:NAME or chat:NAME")
        if spec == "scripted":
            raise HarnessError("--model", "scripted plays a scenario's own completions: run a scenario without --model")
        if kind != "local":
            raise HarnessError("--model", f"unknown model {spec!r} (use {SPECS})")
        if colon and not rest:
            raise HarnessError("--model", "local:PATH needs a GGUF file after the colon (or plain `local` for SmolLM2)")
        from harness.backends.local import LocalModel

        model = LocalModel(rest or None, **options)
    model.name = spec
    return model
