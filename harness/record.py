"""Assembling a run from its source, running it, and replaying a saved transcript.

Replay rebuilds the Setup from the source a file names (harness.source) as it is *now* and
runs it on the recording played back (the model's turns and what only the recording knows),
so an edit shows at the first differing byte. A file without a source replays from the
scenario copy it stores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from harness import prompts
from harness import source as sources
from harness.dialects import get_dialect
from harness.entry import redaction
from harness.errors import HarnessError, TemplateError, TranscriptFormatError
from harness.files import read_input
from harness.loop import UNLIMITED, Emit, Setup, nobody, run
from harness.model import LONG_CHUNK, EndingModel, Model, ScriptedModel, TokenUsage
from harness.run_record import RunRecord
from harness.saved import load_record
from harness.scenario import Scenario, find_scenario, load_scenario
from harness.tools import Registry
from harness.transcript import HEADER, Author, Span, Transcript
from harness.user_code import import_object
from harness.workspace import Workspace


def build(scenario: Scenario, root: Path, live: Model | None = None, peek: int = 0, named: sources.Source | None = None) -> Setup:
    """The run a scenario describes, its source named relative to `root`, or as `named` (a
    replay: as its file names it, with the source's hash now)."""
    dialect = get_dialect(scenario.dialect, f"{scenario.source}: dialect")
    workspace = None if scenario.workspace is None else Workspace(scenario.workspace)
    tools = Registry(scenario.build_tools(workspace))
    template = scenario.template()
    text = read_input(template, TemplateError)  # only a regular file
    filled = prompts.fill(text, {"question": scenario.question, "tools": tools.render(dialect.signature)}, str(template))
    buffer = Transcript([Span(Author.DEVELOPER, filled.text)])
    modules = (sources.module_bytes(tool.fn) for tool, spec in zip(tools, scenario.tools) if spec.python)
    sha = sources.fingerprint([scenario.loaded or sources.canonical(scenario.to_meta()), text, *modules])
    # A replay is named as its file names it (`named`); a run comes from its file only if it changed no
    # more than a run may (--max-steps, ...): a scenario changed in Python is saved as its stored copy.
    if named is None and scenario.file is not None and set(overrides := scenario.overrides) <= set(sources.RUN_CHANGES):
        named = sources.for_scenario(scenario.file, sha, overrides, prompts.data_dir("transcripts"), root)
    source = None if named is None else replace(named, sha256=sha)
    return Setup(
        buffer, dialect, tools, scenario.limits, scenario.use_stop,
        peek=UNLIMITED if live is None else peek,
        send_stop=live is None or peek == 0,
        frames=filled.frames, question=scenario.question,
        scenario=scenario, source=source, workspace=workspace,
        redaction=redaction(scenario.redact, f"{scenario.source}: redact"),
    )  # fmt: skip


def scripted(scenario: Scenario) -> Model:
    """The scenario's own model: its completions, failing or interrupted where it says so."""
    model = ScriptedModel(scenario.completions, scenario.chunk_size)
    return script(model, scenario.model_error, scenario.interrupt, scenario.endpoint)


def recorded(saved: RunRecord, chunk_size: int = 8) -> Model:
    """A saved run's recording played back: its turns (each with what was cut put back) and
    token counts, failing or interrupted where the live run was, through its endpoint."""
    turns = [text + call.cut for text, call in zip(saved.transcript.texts_by(Author.MODEL), saved.calls)]
    tokens = [None if c.tokens is None else TokenUsage(c.tokens.get("prompt_tokens"), c.tokens.get("evaluated_tokens"), c.tokens.get("completion_tokens")) for c in saved.calls]  # type: ignore[arg-type]
    facts = saved.facts()
    model = script(ScriptedModel(tuple(turns), chunk_size, tokens), facts.get("model_error"), facts.get("interrupt"), saved.endpoint)
    model.name = saved.model
    return model


def script(model: Model, model_error: tuple | None, interrupt: tuple | None, endpoint: str) -> Model:
    """A scripted model failing or interrupted where told, sent messages through a chat endpoint."""
    if model_error is not None:
        model = EndingModel(model, model_error[0], error=model_error[1])
    if interrupt is not None:
        model = EndingModel(model, interrupt[0], at=interrupt[1])
    if endpoint == "chat":
        from harness.backends.messages import ChatScript  # (only a chat run needs it: a script sent messages)

        model = ChatScript(model)
    return model


def run_scenario(
    scenario: Scenario,
    emit: Emit = nobody,
    model: Model | None = None,
    peek: int = 0,
    root: Path | None = None,
    wrap: Callable[[Model], Model] | None = None,
) -> RunRecord:
    """Run a scenario on its script, or on a live `model` (`peek`: read that far past a stop,
    only to record what it prevented); `wrap` wraps whichever model runs (a batch's)."""
    if not isinstance(scenario, Scenario):
        raise HarnessError("run_scenario", f"takes a Scenario (load_scenario(path) reads one), not {type(scenario).__name__}")
    root = (root or Path.cwd()).absolute()  # now: a tool's os.chdir cannot move it
    setup = build(scenario, root, model, peek)
    model = scripted(scenario) if model is None else model
    return run(setup, wrap(model) if wrap else model, emit)


class Replay:
    """A saved run played again: the file as it was (`saved`; read, `recording`) and the run again (`record`)."""

    def __init__(self, saved: str, record: RunRecord, recording: RunRecord) -> None:
        self.saved, self.record, self.recording = saved, record, recording

    @property
    def fresh(self) -> str:
        """What --check compares with the file: the run again, with the file's model name and
        token counts (a live replay's own are not drift)."""
        calls, recorded = self.record.calls, self.recording.calls
        kept = tuple(c if c.tokens is r.tokens else replace(c, tokens=r.tokens) for c, r in zip(calls, recorded)) + calls[len(recorded) :]
        return replace(self.record, model=self.recording.model, calls=kept).saved

    @property
    def matches(self) -> bool:
        return self.saved == self.fresh


def scenario_of(record: RunRecord, source: str) -> Scenario:
    """The scenario copy a saved run without a source line stores (`harness agent`'s)."""
    if record.scenario is None:
        raise TranscriptFormatError(
            source, "names no source and stores no scenario: this file cannot be replayed here (an Agent names its source with "
            "Agent(..., source='module:attribute'); a run harness proxy recorded replays through harness proxy FOLDER --mode none, with its agent)"
        )
    # A file alone brings no code and reads no other file: those come only through the scenario it names.
    python = [spec for spec in record.scenario.tools if spec.python is not None]
    if python or record.scenario.prompt_file is not None:
        what = f"a Python tool ({python[0].name} = {python[0].python[:80]!r})" if python else f"a prompt_file ({record.scenario.prompt_file[:80]!r})"
        raise TranscriptFormatError(
            f"{source}: metadata scenario",
            f"its stored copy names {what}: a saved file runs code and reads files only "
            "through the scenario file it names as its source (save it again with harness run)",
        )
    return record.scenario


def rebuilt(record: RunRecord, where: str, folder: Path, root: Path, keep_facts: bool = True) -> Scenario:
    """The scenario the file names as it is now, with the run's overrides (a past live run's
    Ctrl-C and model error only if `keep_facts`), its own patterns to redact joining the run's."""
    path = sources.resolve(record.source, where, folder, root, prompts.data_dir("transcripts"))
    now = load_scenario(path, sources.shown(path, root))
    facts = () if keep_facts else ("interrupt", "model_error")
    overrides = {k: v for k, v in record.source.overrides.items() if k not in facts}
    if not overrides:
        return now
    changed = Scenario.from_dict(now.to_meta() | overrides, f"{where}: metadata source.overrides", now.base, TranscriptFormatError)
    changed = changed.but(completions=now.completions, source=now.source, file=now.file, loaded=now.loaded)
    return with_patterns(changed, now.redact)


def setup_again(saved: RunRecord, where: str, folder: Path, root: Path, live: Model | None, keep_facts: bool = True, redact: Sequence[str] = ()) -> Setup:
    """The Setup a saved run's source gives now: its scenario (or the copy it stores) or its
    Agent; `redact`: patterns added to a scenario's own (pytest's `harness_redact`). A replay
    (`keep_facts`) is named as the file names it, with the source's hash now."""
    if saved.source is not None and saved.source.agent is not None:
        from harness.agent import Agent  # (only an Agent's run loads it: a scenario's replay never does)
        agent = import_object(saved.source.agent, root, f"{where}: metadata source.agent")
        if not isinstance(agent, Agent):
            raise HarnessError(f"{where}: metadata source.agent", f"{saved.source.agent!r} is a {type(agent).__name__}, not an Agent")
        setup = agent.setup(saved.source.question)
        setup.redaction = redaction(redact, "harness_redact")  # (an Agent's file does not record them)
        if keep_facts:
            setup.source = replace(saved.source, sha256=setup.source.sha256 if setup.source else "")
        return setup
    scenario = scenario_of(saved, where) if saved.source is None else rebuilt(saved, where, folder, root, keep_facts)
    kept = saved.scenario.redact if keep_facts and saved.scenario is not None else ()  # a replay masks what its run masked (pytest's too)
    return build(with_patterns(scenario, (*kept, *redact)), root, live, named=saved.source if keep_facts else None)


def with_patterns(scenario: Scenario, redact: Sequence[str]) -> Scenario:
    """The scenario with more patterns to redact (a run's, as --max-steps is a run's limit)."""
    more = tuple(dict.fromkeys(p for p in redact if p not in scenario.redact))  # each once, in order
    return scenario.but(redact=scenario.redact + more) if more else scenario


def replay(
    text: str,
    source: str,
    emit: Emit = nobody,
    model: Model | None = None,
    base: Path | None = None,
    root: Path | None = None,
    redact: Sequence[str] = (),
) -> Replay:
    """Run a saved transcript again (with `model`: live); its source is found relative to
    `base` (the file's folder) or `root` (the working folder), as it says."""
    folder, root = (base or Path(source).parent).absolute(), (root or Path.cwd()).absolute()
    saved = load_record(text, source, folder)
    setup = setup_again(saved, source, folder, root, model, redact=redact)
    # The reader decides the same for any chunking (tests/test_reading.py): nobody watching, each turn comes whole.
    chunk_size = LONG_CHUNK if emit is nobody else setup.scenario.chunk_size if setup.scenario is not None else 8
    return Replay(text, run(setup, model or recorded(saved, chunk_size), emit), saved)


def record_again(text: str, source: str, path: Path, root: Path, model: Model | None, redact: Sequence[str] = ()) -> RunRecord:
    """The file's source run now on `model` (None: its own script), placed at `path`,
    keeping only the run's options (--max-steps, --no-stop, patterns)."""
    saved = load_record(text, source)
    if saved.source is None:
        raise TranscriptFormatError(source, "names no source, so it cannot be recorded again (save it again with harness run)")
    if saved.source.agent is not None and model is None:
        raise HarnessError(f"{source}: metadata source.agent", "an Agent has no script of its own: record it with a live model")
    setup = setup_again(saved, source, path.parent, root, model, keep_facts=False, redact=redact)
    if saved.source.origin == "root":  # named as the file named it
        setup.source = replace(setup.source, scenario=saved.source.scenario, origin="root")
    record = run(setup, model or scripted(setup.scenario))
    return record if saved.source.origin == "root" else record.placed(path)


def open_run(target: str) -> RunRecord:
    """A saved transcript, or a scenario (path or shipped name) run now on its script."""
    path = Path(target)
    if path.is_file():
        text = read_input(path)  # as every input file: only a regular file is read
        if text.removeprefix("\ufeff").startswith(HEADER) or path.suffix == ".txt":  # a transcript (a .txt says why not)
            return load_record(text, target, path.parent)
    return run_scenario(load_scenario(find_scenario(target)))
