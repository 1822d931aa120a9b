"""Shared test set-up: a syrupy extension that stores each snapshot as one text file.

A snapshot of a run is its saved transcript (save format v1), so a snapshot diff in
review reads exactly like `harness run --format tagged`. Bytes are written as they are
(no newline translation), so a "\r" in a transcript survives.
"""

from __future__ import annotations

import os
import signal

import httpcore  # noqa: F401 (see below)
import httpx  # noqa: F401
import pytest
from hypothesis import settings
from syrupy.extensions.single_file import SingleFileSnapshotExtension

# pytester's in-process runs put sys.modules back as they found it. httpx imports httpcore
# only when its first client is made; if that happens inside such a run, httpcore is dropped
# after it and imported again later, while httpx keeps its map of the first httpcore's errors:
# a refused connection then escapes as httpcore.ConnectError. Imported here, never dropped.

# CI runs derandomized so that a red run can be reproduced; locally examples vary.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


class TextSnapshot(SingleFileSnapshotExtension):
    file_extension = "txt"

    def serialize(self, data, **kwargs) -> bytes:
        return str(data).encode("utf-8")


@pytest.fixture
def text_snapshot(snapshot):
    return snapshot.use_extension(TextSnapshot)


def record_with_base_url(pytester, monkeypatch, model: str, url: str, source: str):
    """`pytest --harness-record MODEL` with the base URL from `source`: the option or HARNESS_BASE_URL."""
    if source == "HARNESS_BASE_URL":
        monkeypatch.setenv("HARNESS_BASE_URL", url)
        return pytester.runpytest("--harness-record", model)
    monkeypatch.delenv("HARNESS_BASE_URL", raising=False)
    return pytester.runpytest("--harness-record", model, "--harness-base-url", url)


@pytest.fixture(autouse=True)
def _ctrl_c_as_a_shell_gives_it():
    """Every test starts with Ctrl-C's default handler, as a command typed in a shell has it.
    A child process inherits an ignored SIGINT, so the tests that send one to a `harness`
    process would see it ignored: in CI the test process was left ignoring it by native code
    outside harness (no Python code set it; found by wrapping `signal.signal`)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
