"""How to install more of harness: the one place that writes an install command. The
distribution is `harness-react` (`harness` on the registry is another project)."""

from __future__ import annotations

import json
import shlex
import sys
from importlib import metadata
from urllib.parse import unquote, urlparse

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
