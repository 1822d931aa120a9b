"""The model options the commands share: which model, where, the bounds of each call; and
what a live run says on stderr whatever --format prints."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.run_record import RunRecord

MODEL_FAILED = 3  # the exit code of a run that ended in model_error: a live model or server failed


def seconds(value: float | None) -> float | None:
    """A number of seconds: NaN passes every range check (it compares false), so say so."""
    if value is not None and value != value:
        raise typer.BadParameter("nan is not a number of seconds")
    return value


ModelOption = Annotated[
    str | None,
    typer.Option("--model", "-m", help="scripted (default), local[:PATH.gguf], openai:NAME (a completions server) or chat:NAME (a chat endpoint)."),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option("--base-url", help="The server's URL for openai:NAME or chat:NAME (default: $HARNESS_BASE_URL, else http://127.0.0.1:8080/v1)."),
]
MaxTokens = Annotated[int | None, typer.Option("--max-tokens", min=1, help="Tokens the model may write per call (default 512).")]
MaxChars = Annotated[int | None, typer.Option("--max-chars", min=1, help="Characters read from one call before it is stopped (default 100,000).")]
MaxSeconds = Annotated[float | None, typer.Option("--max-seconds", min=0.1, max=86400, callback=seconds, help="Seconds one whole call may take before it is stopped (default 300).")]
Strict = Annotated[bool | None, typer.Option("--strict/--no-strict", help="A strict server (OpenAI's own): no llama.cpp knobs, at most 4 stops (default: strict for api.openai.com).", show_default=False)]
WaitForServer = Annotated[float | None, typer.Option("--wait-for-server", min=0, max=3600, callback=seconds, help="Wait up to SECONDS for the server to answer before the first call (one still starting).")]


class ModelOptions(NamedTuple):
    """--model, --base-url and the bounds of each call, as given (None: not given)."""

    model: str | None = None
    base_url: str | None = None
    max_tokens: int | None = None
    max_chars: int | None = None
    max_seconds: float | None = None
    strict: bool | None = None
    wait_for_server: float | None = None

    @property
    def live(self) -> bool:
        return self.model not in (None, "scripted")

    def open(self, connections: int | None = None) -> Any:
        """The model a run talks to: None for the scenario's own script."""
        bounds = {k: v for k, v in self._asdict().items() if v is not None and k not in ("model", "base_url")}
        if self.live:
            from harness.backends.spec import model_from_spec

            return model_from_spec(self.model, self.base_url, connections=connections, **bounds)
        if self.base_url is not None:
            raise HarnessError("--base-url", "goes with --model openai:NAME or chat:NAME")
        if bounds:
            raise HarnessError("--" + next(iter(bounds)).replace("_", "-"), "goes with a live --model")
        return None


class RunModels:
    """A model of its own for each run of a batch (`with models.one() as model:`), or None
    for their scripts. A server's are all made from the first (`another`: one connection
    pool). An in-process model (llama.cpp) is loaded once per run in flight, here, before any
    run (loading swaps stdout and stderr for /dev/null, which would swallow what other
    threads print); each run takes an idle one, reset, and gives it back."""

    def __init__(self, options: ModelOptions, jobs: int, runs: int) -> None:
        self.first = options.open(connections=jobs)
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        if self.first is not None and not self.first.serves_many:
            self._idle.put(self.first)
            for _ in range(min(jobs, runs) - 1):
                self._idle.put(options.open())

    @contextmanager
    def one(self) -> Iterator[Any]:
        if self.first is None:
            yield None
        elif self.first.serves_many:
            yield self.first.another()
        else:
            model = self._idle.get()
            try:
                model.reset()
                yield model
            finally:
                self._idle.put(model)

    def interrupt(self) -> None:
        """Ctrl-C in a batch: a server's calls in flight end now, and a wait for it stops."""
        if self.first is not None:
            self.first.interrupt()

    def close(self) -> None:
        if self.first is not None:
            self.first.close()


def tell_stderr(record: RunRecord, model: Any) -> None:
    """Whatever --format writes on stdout, why a live run failed, and what was dropped on
    arrival, are said on stderr: a CI log shows them even when stdout is the transcript."""
    from harness.escape import for_terminal

    for note in model.notes if model is not None else ():
        typer.echo(f"note: {for_terminal(note)}", err=True)
    if record.stop_reason == "model_error" and model is not None:
        typer.echo(f"error: model_error: {for_terminal(record.detail)}", err=True)


def exit_if_failed(record: RunRecord, live: Any) -> None:
    """After the output is written: exit 3 if a `live` model (or True) failed (tell_stderr said why)."""
    if record.stop_reason == "model_error" and live not in (None, False):
        raise typer.Exit(MODEL_FAILED)
