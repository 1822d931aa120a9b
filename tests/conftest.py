"""Shared test set-up: a syrupy extension that stores each snapshot as one text file.

A snapshot of a run is its saved transcript (save format v1), so a snapshot diff in
review reads exactly like `harness run --format tagged`. Bytes are written as they are
(no newline translation), so a "\r" in a transcript survives.
"""

from __future__ import annotations

import os

import httpx  # noqa: F401 (see below)
import pytest
from hypothesis import settings
from syrupy.extensions.single_file import SingleFileSnapshotExtension

# pytester's in-process runs put sys.modules back as they found it: a library first imported
# inside one (httpx and httpcore, by the plugin's tests) is imported again after it, and then
# httpx no longer recognises the errors of the httpcore its clients were made with (a refused
# connection escapes as httpcore.ConnectError). Imported here, they are never dropped.

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
