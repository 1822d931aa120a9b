"""The pytest plugin: saved transcripts as tests, a snapshot fixture for runs, and the
`harness_proxy` fixture for an existing agent's test.

Every transcript under the ini's `harness_transcripts` folders is one test: it replays the
file from the source it names and fails at the first differing byte, with a readable diff
(harness.diff); one that differs only in its source's sha256 passes and is listed.
`--harness-update` and `--harness-record MODEL` rewrite the files instead. The fixture:
`assert record.saved == transcript_snapshot`, one `.txt` file per snapshot (syrupy).
Loaded in every pytest session (entry point `pytest11`), it imports nothing until used.

The `harness_proxy` fixture: an existing agent's test, recorded once and replayed offline.

    def test_my_agent(harness_proxy):                   # harness_proxy: the proxy's base URL
        agent = build_my_agent(base_url=harness_proxy)
        assert agent.run("What is 7 times 6?") == "42"

One cassette per test beside its file (`folder_name`), in `--harness-proxy MODE`. Drift is
an HTTP error the agent raises; if it swallows it, the test fails with the diff after its
end. A test that fails while recording leaves its cassette as it was.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

_REWROTE = "harness_rewrote"  # the user property an item leaves when it rewrote its file
_REHASHED = "harness_rehashed"  # ... when it passed with only its source's hash stale
_STALE = "harness_stale"  # ... when it kept a model turn that followed text the update changed
_FAILED = pytest.StashKey[bool]()  # a test's call failed: the harness_proxy fixture keeps its cassette
RECORD_HINT = "pytest --harness-record MODEL (a live model, or `scripted`: the scenario's own completions) asks the model again"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("harness_transcripts", "folders of saved harness transcripts to replay as tests (relative to the ini file)", type="paths", default=[])
    parser.addini("harness_strict_source", "fail a saved transcript whose replay is the same but whose source was edited", type="bool", default=False)
    parser.addini("harness_redact", "regular expressions, one a line, masked (***) in model text and tool output", type="linelist", default=[])
    group = parser.getgroup("harness")
    group.addoption("--harness-update", action="store_true", help="rewrite the saved harness transcripts whose replay changed, keeping their recorded model turns, and list them")
    group.addoption("--harness-strict-source", action="store_true", help="fail a transcript whose replay is the same but whose source was edited (only source.sha256 differs)")
    group.addoption("--harness-record", metavar="MODEL", help="run each saved transcript's source again on MODEL (openai:NAME, local, or scripted) and rewrite it")
    group.addoption("--harness-base-url", metavar="URL", help="the server's URL for --harness-record openai:NAME")
    group.addoption("--harness-proxy", metavar="MODE", default="once", help="the harness_proxy fixture's mode: once (the default), new_episodes, all or none")
    group.addoption("--harness-proxy-base-url", metavar="URL", help="the server the harness_proxy fixture records from (default: $HARNESS_BASE_URL)")


def pytest_configure(config: pytest.Config) -> None:
    """Bad options are one usage line each, before any test runs."""
    import os

    from harness.backends.urls import check_base_url
    from harness.entry import redaction
    from harness.errors import HarnessError

    if config.getoption("harness_record") and config.getoption("harness_update"):
        raise pytest.UsageError("--harness-record and --harness-update: choose one (record runs the model again)")
    if config.getoption("harness_base_url") and not config.getoption("harness_record"):
        raise pytest.UsageError("--harness-base-url goes with --harness-record openai:NAME")
    url, where = config.getoption("harness_base_url"), "--harness-base-url"
    if not url and str(config.getoption("harness_record")).startswith(("openai:", "chat:")):  # only these talk to a server
        url, where = os.environ.get("HARNESS_BASE_URL"), "HARNESS_BASE_URL"
    try:
        if url:
            check_base_url(url.rstrip("/"), where)
        redaction(config.getini("harness_redact"), "harness_redact")
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from None
    for folder in config.getini("harness_transcripts"):
        if not folder.is_dir():  # a typo would otherwise collect nothing, silently
            raise pytest.UsageError(f"harness_transcripts: {folder} is not a folder")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> TranscriptFile | None:
    from harness.files import is_transcript

    folders = parent.config.getini("harness_transcripts")
    inside = [folder for folder in folders if file_path.is_relative_to(folder)]
    # The snapshot fixture's files are its tests' business, never replays of their own.
    snapshots = any("__snapshots__" in file_path.relative_to(folder).parts for folder in inside)
    if inside and not snapshots and is_transcript(file_path):
        return TranscriptFile.from_parent(parent, path=file_path)
    return None


class TranscriptFile(pytest.File):
    def collect(self):
        yield TranscriptItem.from_parent(self, name=self.path.stem)


class Failed(Exception):
    """A replay that differs from its file (the message: the readable diff), or a recording that did not complete."""


class TranscriptItem(pytest.Item):
    @property
    def source(self) -> str:
        return self.parent.nodeid  # the file as the user names it: relative to the rootdir

    def runtest(self) -> None:
        from harness.files import read_input, write_file
        from harness.record import replay
        from harness.transcript import HEADER

        text = read_input(self.path, shown=self.source)  # as every command reads one: "\r" kept, a FIFO refused, UTF-16 named
        if self.config.getoption("harness_record"):
            return self.record(text)
        result = replay(text, self.source, base=self.path.parent, root=self.config.rootpath, redact=self.config.getini("harness_redact"))
        if result.matches:
            return
        from harness.diff import transcript_diff  # (a replay that differs: a session of passes never imports these)
        from harness.escape import one_line
        from harness.source import only_rehashed, stale_turn
        update = self.config.getoption("harness_update")
        strict = self.config.getoption("harness_strict_source") or self.config.getini("harness_strict_source")
        if not update and not strict and only_rehashed(result.saved, result.fresh):
            self.user_properties.append((_REHASHED, self.source))  # the run is the same: not drift
            return
        if update:
            write_file(self.path, result.fresh, HEADER + "\n", f"--harness-update {self.source}:")  # whole or not at all, and only a transcript
            self.user_properties.append((_REWROTE, self.source))
            if (stale := stale_turn(result.recording.transcript, result.record.transcript)) is not None:  # a kept model turn followed changed text
                warning = (
                    f"warning: {one_line(self.source)}: call {stale.call}'s recorded turn was kept, but it followed {stale.author}'s "
                    f'text that this update changed ("{stale.old}" is now "{stale.new}"), which the model never read; {RECORD_HINT}'
                )
                self.user_properties.append((_STALE, warning))
            return
        diff = transcript_diff(result.saved, result.fresh, self.source).rstrip("\n")
        raise Failed(
            f"{diff}\n(if the new replay is right: pytest --harness-update rewrites {self.source}, keeping the "
            f"recorded model turns; if the model should answer the new text: {RECORD_HINT})"
        )

    def record(self, text: str) -> None:
        """--harness-record: the file rewritten if the new recording differs; one that did
        not complete fails and writes nothing."""
        from harness.files import write_file
        from harness.record import record_again
        from harness.transcript import HEADER

        model = _recording_model(self.config)
        record = record_again(text, self.source, self.path, self.config.rootpath, model, self.config.getini("harness_redact"))
        # Stopped in model_error, canceled or model_exhausted, other than where its own scenario
        # scripts that stop (`model_error`, `interrupt`): the recording did not complete.
        field = {"model_error": "model_error", "canceled": "interrupt", "model_exhausted": None}.get(record.stop_reason.value, "")
        if field != "" and (model is not None or field is None or record.scenario is None or getattr(record.scenario, field) is None):
            if record.stop_reason.value == "canceled":  # Ctrl-C: it stops the session, as pytest's own does
                raise KeyboardInterrupt
            from harness.escape import one_line

            why = one_line(f"{record.stop_reason.value}: {record.detail}" if record.detail else record.stop_reason.value)
            raise Failed(
                f"{self.source}: the recording did not complete ({why}); the file was left as it was "
                "(a cassette is never replaced by a failed recording)"
            )
        if (fresh := record.saved) != text:
            write_file(self.path, fresh, HEADER + "\n", f"--harness-record {self.source}:")
            self.user_properties.append((_REWROTE, self.source))

    def repr_failure(self, excinfo, style=None):
        from harness.errors import HarnessError

        if isinstance(excinfo.value, Failed | HarnessError):
            return str(excinfo.value)  # the diff, or one line naming the file: no traceback
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"replay {self.source}"


@functools.cache
def _recording_model(config: pytest.Config):
    """The model --harness-record names, made once per session (a local model loads once)."""
    if (spec := config.getoption("harness_record")) == "scripted":
        return None
    from harness.backends.spec import model_from_spec

    return model_from_spec(spec, config.getoption("harness_base_url"))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """Lists the files rewritten and those that passed with a stale source hash, from the
    properties of the tests' reports (under xdist, the reports carry them to the controller)."""
    listed: dict[str, list[str]] = {_REWROTE: [], _REHASHED: [], _STALE: []}
    for report in (report for reports in terminalreporter.stats.values() for report in reports):
        if getattr(report, "when", None) == "call":  # each phase's report carries the item's properties: count one
            for key, value in report.user_properties:
                listed.get(key, []).append(value)
    rewritten, rehashed, stale = (sorted(listed[key]) for key in (_REWROTE, _REHASHED, _STALE))
    if rehashed:
        count = len(rehashed)
        terminalreporter.section("harness: edited sources, the same runs")
        terminalreporter.write_line(
            f"{count} saved transcript{'s' if count != 1 else ''} replayed the same from an edited source "
            "(only source.sha256 differs; --harness-update records the new hash, --harness-strict-source fails on it):"
        )
        for source in rehashed:
            terminalreporter.write_line(f"  {source}")
    mode = "--harness-record" if config.getoption("harness_record") else "--harness-update"
    if not config.getoption("harness_update") and mode == "--harness-update":
        return
    if not rewritten:
        terminalreporter.write_line("harness: no saved transcript changed")
        return
    terminalreporter.section(f"harness {mode}")
    for source in rewritten:
        terminalreporter.write_line(f"rewrote {source}")
    for warning in stale:
        terminalreporter.write_line(warning, yellow=True)


# --- the harness_proxy fixture ---------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_FAILED] = True
    return report


def folder_name(nodeid: str) -> str:
    """A test's cassette folder: its file's name and test id (parameters too), readable, then
    a hash of them, so that no two tests share one, not even on a file system that ignores case."""
    import hashlib

    path, _, test = nodeid.partition("::")
    name = f"{path.rpartition('/')[2]}::{test}"
    shown = "".join(c if c.isascii() and (c.isalnum() or c in "._-[]") else "_" for c in name)
    return f"{shown[:80]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}"


@pytest.fixture
def harness_proxy(request: pytest.FixtureRequest) -> Iterator[str]:
    """The base URL of a proxy that records this test's calls or replays them."""
    from harness.errors import HarnessError
    from harness.proxy import Proxy, serve  # (only a test that uses it loads the proxy)

    folder = request.path.parent / "cassettes" / folder_name(request.node.nodeid)
    before = folder.with_name("".join(c if c.isalnum() or c in "_.-" else "_" for c in request.node.name)[:100])
    if not folder.exists() and before.is_dir():  # named as harness 0.x named it, before parameters had their own
        pytest.fail(f"harness_proxy: {before} is this test's cassette under its old name; rename it to {folder.name}", pytrace=False)
    try:
        proxy = Proxy(folder, request.config.getoption("harness_proxy"), request.config.getoption("harness_proxy_base_url"))
    except HarnessError as e:  # the options named as pytest names them, and said once (not as an error within an error)
        where = {"--base-url": "--harness-proxy-base-url (or HARNESS_BASE_URL)", "--mode": "--harness-proxy"}.get(e.where, e.where)
        raise pytest.fail.Exception(f"harness_proxy: {where}: {e.message}", pytrace=False) from None
    server = serve(proxy)
    try:
        yield proxy.url
    finally:
        server.shutdown()
        server.server_close()
        failed = request.node.stash.get(_FAILED, False)
        proxy.close(save=not failed)
    if proxy.mismatches and not failed:
        pytest.fail("\n".join(proxy.mismatches), pytrace=False)


# --- the snapshot fixture ---------------------------------------------------------------


@pytest.fixture
def transcript_snapshot(request: pytest.FixtureRequest):
    """syrupy's `snapshot`, storing a run's saved transcript as one .txt file, with the readable diff."""
    try:
        import syrupy  # noqa: F401
    except ImportError:
        pytest.fail("transcript_snapshot needs syrupy: pip install syrupy", pytrace=False)
    return request.getfixturevalue("snapshot").use_extension(_extension_class())


@functools.cache
def _extension_class():
    """The syrupy extension, defined on first use: loading the plugin never imports syrupy."""
    from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

    from harness.diff import transcript_diff

    class TranscriptSnapshotExtension(SingleFileSnapshotExtension):
        file_extension = "txt"
        _write_mode = WriteMode.TEXT

        def serialize(self, data, **kwargs) -> str:
            text = data if isinstance(data, str) else getattr(data, "saved", None)
            if not isinstance(text, str):
                raise TypeError(f"transcript_snapshot takes the saved text or a run with .saved, not {type(data).__name__}")
            return text

        def diff_lines(self, serialized_data, snapshot_data):
            yield from transcript_diff(str(snapshot_data), str(serialized_data), "snapshot", ("snapshot", "new")).splitlines()

        # syrupy's text mode translates newlines ("\r" comes back as "\n"); a transcript keeps every byte.
        def read_snapshot_data_from_location(self, *, snapshot_location: str, **kwargs) -> str | None:
            try:
                with open(snapshot_location, encoding="utf-8", newline="") as f:
                    return f.read()
            except FileNotFoundError:
                return None

        @classmethod
        def write_snapshot_collection(cls, *, snapshot_collection, **kwargs) -> None:
            with open(snapshot_collection.location, "w", encoding="utf-8", newline="") as f:
                f.write(next(iter(snapshot_collection)).data)

    # syrupy finds an extension again (under xdist, on the controller) by module and name.
    TranscriptSnapshotExtension.__module__ = __name__
    TranscriptSnapshotExtension.__qualname__ = "TranscriptSnapshotExtension"
    return TranscriptSnapshotExtension


def __getattr__(name: str):
    """`from harness.pytest_plugin import TranscriptSnapshotExtension` imports syrupy then, not before."""
    if name == "TranscriptSnapshotExtension":
        return _extension_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
