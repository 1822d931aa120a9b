"""The pytest plugin: saved transcripts as tests, and a snapshot fixture for runs.

harness registers this module as a pytest plugin (entry point `pytest11`), so it loads
in every pytest session of the environment. It imports nothing heavy when it loads: the
loop, the replay and syrupy are imported only when a transcript is collected or the
fixture is used.

Saved transcripts as tests. Name folders in the ini file:

    [pytest]
    harness_transcripts = transcripts

Every file under those folders that begins with the line `# harness transcript v1` is
one test, named after the file (the folders must lie where pytest looks: under the
rootdir, within `testpaths` if you set it, or named on the command line). It replays
the file (as `harness replay FILE --check` does) and fails if a byte differs, with a
readable diff (harness.diff): the records with their author column and the first
differing step. Other files are neither collected nor ever written.

    pytest                      replay them all (with pytest-xdist: pytest -n auto)
    pytest --harness-update     rewrite the saved files whose replay changed, and list them

A snapshot fixture for Python code, built on syrupy (imported when the fixture is used):

    def test_my_agent(transcript_snapshot):
        assert run_scenario(load_scenario(path)).saved == transcript_snapshot

The snapshot is one `.txt` file in the save format under `__snapshots__/`, written
byte for byte; `pytest --snapshot-update` writes it. Pass the saved text, or any object
with a `.saved` attribute holding it (a run record). A mismatch shows the same diff
(pytest cuts long assertion messages: -vv shows all of it).

What this module leaves out: making transcripts (harness.record) and comparing them
(harness.diff).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

_REWROTE = "harness_rewrote"  # the user property an item leaves when it rewrote its file


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "harness_transcripts",
        "folders of saved harness transcripts to replay as tests (relative to the ini file)",
        type="paths",
        default=[],
    )
    parser.getgroup("harness").addoption(
        "--harness-update",
        action="store_true",
        help="rewrite the saved harness transcripts whose replay changed, and list them",
    )


def pytest_configure(config: pytest.Config) -> None:
    for folder in config.getini("harness_transcripts"):
        if not folder.is_dir():  # a typo would otherwise collect nothing, silently
            raise pytest.UsageError(f"harness_transcripts: {folder} is not a folder")
    config.pluginmanager.register(_Rewrites(config), "harness-rewrites")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> TranscriptFile | None:
    folders = parent.config.getini("harness_transcripts")
    if any(file_path.is_relative_to(folder) for folder in folders) and _is_transcript(file_path):
        return TranscriptFile.from_parent(parent, path=file_path)
    return None


def _is_transcript(path: Path) -> bool:
    """Does the file begin with the save format's header line?"""
    from harness.transcript import HEADER

    header = HEADER.encode()
    try:
        with open(path, "rb") as f:
            first = f.read(len(header) + 1)
    except OSError:
        return False
    return first in (header, header + b"\n")


class TranscriptFile(pytest.File):
    def collect(self):
        yield TranscriptItem.from_parent(self, name=self.path.stem)


class Mismatch(Exception):
    """The replay differs from the saved file; the message is the readable diff."""


class TranscriptItem(pytest.Item):
    """One saved transcript, replayed and compared byte for byte."""

    @property
    def source(self) -> str:
        """The file as the user names it: relative to the rootdir."""
        return self.nodeid.split("::")[0]

    def runtest(self) -> None:
        from harness.diff import transcript_diff
        from harness.errors import HarnessError
        from harness.record import replay

        try:
            with open(self.path, encoding="utf-8", newline="") as f:
                text = f.read()
        except UnicodeDecodeError as error:
            raise HarnessError(self.source, f"not UTF-8 (byte {error.start})") from None
        result = replay(text, self.source, base=self.path.parent)  # its own template and tools live beside it
        if result.matches:
            return
        if self.config.getoption("harness_update"):
            _rewrite(self.path, result.fresh, self.source)
            self.user_properties.append((_REWROTE, self.source))
            return
        diff = transcript_diff(result.saved, result.fresh, self.source).rstrip("\n")
        raise Mismatch(f"{diff}\n(if the new replay is right: pytest --harness-update rewrites {self.source})")

    def repr_failure(self, excinfo, style=None):
        from harness.errors import HarnessError

        if isinstance(excinfo.value, Mismatch | HarnessError):
            return str(excinfo.value)  # the diff, or one line naming the file: no traceback
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"replay {self.source}"


def _rewrite(path: Path, text: str, source: str) -> None:
    """Replace a saved transcript whole, or not at all; never a file that is not one
    (harness.files holds that rule for every file harness writes)."""
    from harness.files import write_file
    from harness.transcript import HEADER

    write_file(path, text, HEADER + "\n", f"--harness-update {source}:")


class _Rewrites:
    """Lists the files --harness-update rewrote; under xdist the reports carry them to the controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rewritten: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":  # each phase's report carries the item's properties: count one
            self.rewritten += [value for key, value in report.user_properties if key == _REWROTE]

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.config.getoption("harness_update"):
            return
        if not self.rewritten:
            terminalreporter.write_line("harness: no saved transcript changed")
            return
        terminalreporter.section("harness --harness-update")
        for source in sorted(self.rewritten):
            terminalreporter.write_line(f"rewrote {source}")


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
    """The syrupy extension, defined on first use so that loading the plugin never imports syrupy."""
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
